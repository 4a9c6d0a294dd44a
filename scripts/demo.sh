#!/usr/bin/env bash
# demo.sh - the README's first command, on a fresh Debian 12 machine as root:
#   1. install the packages (scripts/setup.sh) and build gpuclusterctl;
#   2. start the local lab standing in for examples/roce-passthrough.yaml:
#      a real OpenSSH sshd on loopback with 8 simulated ESXi hosts and a
#      simulated Onyx SN2700 switch, and vcsim (govmomi's vCenter simulator,
#      built from Debian's package) with the spec's datacenter, cluster,
#      hosts, networks and template, all in factory state (scripts/lab.sh);
#   3. show the live plan, apply it (hosts rolling two at a time, the switch
#      in parallel, then the 8 worker VMs cloned and given their GPU, SR-IOV
#      VF, VMX options, EFI and reservation through vCenter), apply again to
#      show that nothing is left to do, and read one VM back from vCenter.
# The guest part of the example needs the guest driver, which is not in this
# build yet: --only esxi,switch,vcenter says so explicitly.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target gpuclusterctl >/dev/null
bin=$root/build/src/cli/gpuclusterctl

export GC_LAB_DIR=$root/.lab
scripts/lab.sh start --spec examples/roce-passthrough.yaml
scripts/lab.sh reset >/dev/null # factory state, so the demo always shows the whole apply
spec=$GC_LAB_DIR/roce-passthrough.yaml
state=$GC_LAB_DIR/state
rm -rf "$state"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

# The guests (packages, licence, peermem, RoCE QoS) have no driver yet: --only
# names the three target kinds that have one.
only=esxi,switch,vcenter

step "gpuclusterctl plan --only $only $spec   (live: observes the lab)"
rc=0; "$bin" plan --only $only --state-dir "$state" "$spec" || rc=$?
[ "$rc" = 2 ] || { echo "demo: expected exit 2 (changes) from plan, got $rc" >&2; exit 1; }

step "gpuclusterctl apply --yes --only $only $spec"
"$bin" apply --yes --only $only --state-dir "$state" -v "$spec"

step "gpuclusterctl apply --yes --only $only $spec   (again: converged)"
"$bin" apply --yes --only $only --state-dir "$state" -v "$spec"

step "what esx01 received (tests/sim log, observation batches left out)"
grep -v -e '@@gc:' "$GC_LAB_DIR/hosts/esx01/commands.log" | cut -d' ' -f2- || true

step "worker-01 as the lab's vCenter holds it (tests/sim/vcsim_edit.py, a SOAP client of its own)"
vc=$GC_LAB_DIR/vcsim
tests/sim/vcsim_edit.py --url "https://127.0.0.1:$(cat "$vc/port")/sdk" --ca "$vc/ca.crt" --user gcadmin \
	--password-file "$vc/password" show worker-01 | python3 -c '
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

echo
echo "demo: done. The lab keeps running: scripts/lab.sh status | stop"
