#!/usr/bin/env bash
# demo.sh - the README's first command, on a fresh Debian 12 machine as root:
#   1. install the packages (scripts/setup.sh) and build gpuclusterctl;
#   2. start the local lab standing in for examples/roce-pair.yaml: a real
#      OpenSSH sshd on loopback with 2 simulated ESXi hosts and a simulated
#      Onyx SN2700 switch, vcsim (govmomi's vCenter simulator, built from
#      Debian's package) with the spec's datacenter, cluster, hosts, networks
#      and template, and 2 real Debian 12 guest VMs (QEMU, soft-RoCE between
#      them), all in factory state (scripts/lab.sh; the guest image is built
#      once and cached, ~2 minutes);
#   3. show the live plan and apply all of it: hosts rolling through
#      maintenance mode, the switch in parallel, the 2 worker VMs cloned with
#      their GPU, SR-IOV VF, VMX options, EFI and reservation, then inside
#      each guest the NVIDIA driver (and the reboot it needs), the licence,
#      the RDMA stack, the RDMA interface, peer memory, RoCE QoS and NTP;
#      apply again to show that nothing is left to do; read one VM back from
#      vCenter and one guest back over plain ssh.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target gpuclusterctl >/dev/null
bin=$root/build/src/cli/gpuclusterctl

export GC_LAB_DIR=$root/.lab
scripts/lab.sh start --spec examples/roce-pair.yaml
scripts/lab.sh reset >/dev/null # factory state, so the demo always shows the whole apply
scripts/lab.sh guest-reset >/dev/null
spec=$GC_LAB_DIR/roce-pair.yaml
state=$GC_LAB_DIR/state
rm -rf "$state"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "gpuclusterctl plan $spec   (live: observes the lab)"
rc=0; "$bin" plan --state-dir "$state" "$spec" || rc=$?
[ "$rc" = 2 ] || { echo "demo: expected exit 2 (changes) from plan, got $rc" >&2; exit 1; }

step "gpuclusterctl apply --yes $spec"
"$bin" apply --yes --state-dir "$state" -v "$spec"

step "gpuclusterctl apply --yes $spec   (again: converged)"
"$bin" apply --yes --state-dir "$state" -v "$spec"

step "what esx01 received, one line a round trip (tests/sim execs.log; the observation batch abbreviated)"
sed -E -e 's/^[^ ]+ //' -e 's/^echo @@gc:[0-9a-f]+:1; .*/(the observation batch: one exec of read-only esxcli commands)/' \
	-e 's/echo @@gc:[0-9a-f]+:(c[0-9]+|end)( \&\& )?//g' "$GC_LAB_DIR/hosts/esx01/execs.log"

step "worker-01 as the lab's vCenter holds it (tests/sim/vcsim_edit.py, a SOAP client of its own)"
vc=$GC_LAB_DIR/vcsim
tests/sim/vcsim_edit.py --url "https://127.0.0.1:$(cat "$vc/port")/sdk" --ca "$vc/ca.crt" --user gcadmin \
	--password-file "$vc/password" show worker-01 | /usr/bin/python3 -c '
import json, sys
vm = json.load(sys.stdin)
print("  %s on %s: %s, %s firmware, %d vCPU, %d GB, memory reservation locked: %s" % (
    vm["name"], vm["host"], vm["power"], vm["firmware"], vm["cpus"], vm["memory_mb"] // 1024,
    vm["reservation_locked"]))
for k, v in sorted(vm["extra_config"].items()):
    if k.startswith("pciPassthru"):
        print("  extraConfig %s = %s" % (k, v))
for d in vm["devices"]:
    b = d.get("backing") or {}
    if d["type"] == "VirtualPCIPassthrough":
        print("  %s: %s %s (vendor %s, device %s)" % (d["type"], b.get("type"), b.get("id"), b.get("vendorId"), b.get("deviceId")))
    elif d["type"] in ("VirtualVmxnet3", "VirtualSriovEthernetCard", "VirtualVmxnet3Vrdma"):
        print("  %s on %s%s" % (d["type"], d.get("network"), " (PF %s)" % d["sriov_pf"] if d.get("sriov_pf") else ""))
'

step "worker-01's guest read back over plain ssh (the lab's key, not gpuclusterctl)"
port=$(( $(cat "$GC_LAB_DIR/port") + 10000 ))
ssh -p "$port" -i "$GC_LAB_DIR/guest_key" -o UserKnownHostsFile="$GC_LAB_DIR/known_hosts" \
	-o BatchMode=yes -o LogLevel=ERROR gclab@127.0.0.51 '
echo "  $(. /etc/os-release; echo "$PRETTY_NAME"), kernel $(uname -r)"
echo "  packages: $(dpkg-query -W -f="\${Package} \${Version}, " rdma-core perftest nvidia-driver chrony)"
echo "  modules: $(grep -oE "^(nvidia_peermem|nvidia|rdma_rxe) " /proc/modules | tr -d " " | tr "\n" " ")(persisted: $(grep -v "^#" /etc/modules-load.d/gpuclusterctl.conf))"
echo "  licence: $(nvidia-smi -q | sed -n "s/^ *License Status *: //p")"
echo "  ens224: $(ip -br addr show dev ens224 | tr -s " ") mtu $(cat /sys/class/net/ens224/mtu)"
echo "  RDMA: $(rdma link show | head -1); GID 1: $(cat /sys/class/infiniband/mlx5_0/ports/1/gids/1) $(cat /sys/class/infiniband/mlx5_0/ports/1/gid_attrs/types/1)"
echo "  QoS: $(sudo -n mlnx_qos -i ens224 | grep "trust state"); PFC $(sudo -n mlnx_qos -i ens224 | sed -n "s/^\tenabled *//p"); ToS $(cat /sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos); boot unit $(systemctl is-enabled gpuclusterctl-roce-qos.service)"
'

step "gpuclusterctl validate --mpirun $spec   (read-only: read-back, the probe in each guest, RDMA between them, Open MPI across them)"
# --skip cuda: the lab's GPUs are stand-ins without CUDA (docs/validate.md);
# small RDMA transfers: soft-RoCE under TCG moves ~0.1-0.5 Gb/s; and a 1 s
# local ACK timeout: a TCG guest's ACKs come late (docs/lab.md)
"$bin" validate --skip cuda --rdma-msg-kib 256 --rdma-iters 100 --rdma-qp-timeout 18 --mpirun \
	--junit "$GC_LAB_DIR/validate-junit.xml" --state-dir "$state" "$spec" |
	grep -v '^  PASS  config ' # the per-resource read-back lines: --json has them all
[ "${PIPESTATUS[0]}" = 0 ] || { echo "demo: validate failed" >&2; exit 1; }

echo
echo "demo: done. The lab keeps running: scripts/lab.sh status | stop"
