#!/bin/bash
# device-validate.sh - `gpuclusterctl validate` against a real GPU guest: the
# GPU machine (a VM with a passthrough GPU, exactly our users' guest) is the
# one guest of a small spec, reached over SSH on loopback (docs/benchmarks.md,
# "validate on a real GPU").
#
# Here:   scripts/device-validate-bundle.sh
# There:  run carry=[".device"] command="scripts/device-validate.sh"
#
# Nothing can be installed on the GPU machine, so the bundle brings our
# binaries, OpenSSH's sshd and their libraries (glibc excepted: the machine's
# own is used and must be 2.36 or newer).  sshd listens on 127.0.0.1:2222,
# root logs in with a key made here; the spec's thresholds are the ones a
# Hopper GPU in a PCIe Gen5 x16 slot should meet.  Config read-back is
# skipped (there is no ESXi host or vCenter; their checks are the lab's) and
# so are RDMA pairs (one node, no RDMA NIC).
set -u
OUT=${OUT:-$PWD/.device-out}
mkdir -p "$OUT"
exec > >(tee "$OUT/log.txt") 2>&1
echo "== $(date -u +%FT%TZ) $(uname -r) $(nproc) cpus; $(. /etc/os-release 2>/dev/null; echo "$PRETTY_NAME")"
ldd --version 2>&1 | sed -n 1p
nvidia-smi --query-gpu=name,memory.total,driver_version,pci.bus_id --format=csv,noheader

B=/tmp/gcv
rm -rf "$B"
mkdir -p "$B"
tar -C "$B" -xJf .device/bundle.tar.xz || { echo "no bundle"; exit 1; }
G=$B/bundle/bin
export LD_LIBRARY_PATH=$B/bundle/lib
have=$(ldd --version 2>&1 | sed -n '1s/.* \([0-9]*\.[0-9]*\)$/\1/p')
echo "glibc here $have; the bundle was built against: $(cat "$B/bundle/glibc.txt")"

echo "== sshd on 127.0.0.1:2222"
mkdir -p /run/sshd /root/.ssh
chmod 700 /root/.ssh
id sshd >/dev/null 2>&1 || useradd -r -d /run/sshd -s /usr/sbin/nologin sshd 2>/dev/null ||
	echo "sshd:x:74:74::/run/sshd:/usr/sbin/nologin" >>/etc/passwd
"$G/ssh-keygen" -q -t ed25519 -N '' -f "$B/hostkey"
"$G/ssh-keygen" -q -t ed25519 -N '' -f "$B/clientkey"
cat "$B/clientkey.pub" >>/root/.ssh/authorized_keys
cat >"$B/sshd_config" <<EOF
Port 2222
ListenAddress 127.0.0.1
HostKey $B/hostkey
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile $B/sshd.pid
EOF
"$G/sshd" -f "$B/sshd_config" -E "$B/sshd.log" || { echo "sshd failed"; cat "$B/sshd.log"; exit 1; }
echo "[127.0.0.1]:2222 $(cut -d' ' -f1-2 "$B/hostkey.pub")" >"$B/known_hosts"
sleep 1

name=$(nvidia-smi --query-gpu=name --format=csv,noheader | sed -n 1p)
# d2d: what the model's HBM copies at (bytes copied, half the memory traffic),
# with room: H100 80GB HBM3 ~1.49 TB/s, H200 ~2.08 TB/s (docs/benchmarks.md)
case "$name" in
*H200*) model=H200 d2d=1800 ;; *H100*) model=H100 d2d=1300 ;;
*A100*80GB*) model=A100-80GB d2d=700 ;; *) model=H100 d2d=500 ;;
esac
ngpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
branch=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | sed -n '1s/\..*//p')
{
	cat <<EOF
apiVersion: gpuclusterctl/v1
kind: Cluster
metadata: {name: device-gpu, description: "the GPU machine as the one guest"}
credentials:
  - {name: esxi-root, username: root, password_env: GC_ESXI_PASSWORD}
  - {name: gpu-root, username: root, key_file: $B/clientkey}
  - {name: vc-admin, username: administrator@vsphere.local, password_env: GC_VC_PASSWORD}
vcenter: {url: "https://127.0.0.1:8989/sdk", datacenter: DC0, cluster: gpu, datastore: LocalDS_0, credentials: vc-admin}
hosts:
  - name: esx-gpu
    address: 127.0.0.1
    credentials: esxi-root
    gpus:
EOF
	for i in $(seq 1 "$ngpu"); do printf '      - {pci: "0000:%02x:00.0", model: %s, mode: passthrough}\n' $((0x3a + i)) "$model"; done
	cat <<EOF
vms:
  - name: gpu-guest
    host: esx-gpu
    cpus: $(nproc)
    memory_gb: 64
    gpus:
EOF
	for i in $(seq 1 "$ngpu"); do printf '      - host_pci: "0000:%02x:00.0"\n' $((0x3a + i)); done
	cat <<EOF
    guest:
      address: 127.0.0.1
      credentials: gpu-root
      ssh: {port: 2222, known_hosts: $B/known_hosts}
      os: ubuntu
      nvidia_driver: "$branch"
validation: {min_h2d_gbps: 40, min_d2h_gbps: 40, min_d2d_gbps: $d2d}
EOF
} >"$B/gpu.yaml"
cat "$B/gpu.yaml"
"$G/gpuclusterctl" check "$B/gpu.yaml" || exit 1

echo "== validate (text)"
t0=$(date +%s.%N)
"$G/gpuclusterctl" validate --skip config,pairs --probe "$G/gpuclusterctl-probe-portable" \
	--state-dir "$B/state" --junit "$OUT/validate-junit.xml" "$B/gpu.yaml"
echo "exit=$? wall=$(echo "$(date +%s.%N) - $t0" | bc 2>/dev/null || python3 -c "import time;print(time.time()-$t0)") s (first run: the probe is uploaded)"
echo "== validate again (--json; the probe is there now)"
t0=$(date +%s.%N)
"$G/gpuclusterctl" validate --json --skip config,pairs --probe "$G/gpuclusterctl-probe-portable" \
	--state-dir "$B/state" "$B/gpu.yaml" >"$OUT/validate.json"
echo "exit=$? wall=$(python3 -c "import time;print(round(time.time()-$t0, 2))") s"
python3 -m json.tool "$OUT/validate.json" | head -120
echo "== the probe as uploaded, by hand, for the record"
ls -la /root/.cache/gpuclusterctl/
echo "== sshd log (tail)"
tail -5 "$B/sshd.log"
kill "$(cat "$B/sshd.pid")" 2>/dev/null
