#!/usr/bin/env bash
# demo.sh - the README's first command, on a fresh Debian 12 machine as root:
#   1. install the packages (scripts/setup.sh) and build gpuclusterctl;
#   2. start the local lab standing in for examples/roce-passthrough.yaml:
#      a real OpenSSH sshd on loopback with 8 simulated ESXi hosts and a
#      simulated Onyx SN2700 switch, in factory state (scripts/lab.sh);
#   3. show the live plan, apply it (hosts rolling two at a time, the switch
#      in parallel), and apply again to show that nothing is left to do.
# The VM and guest parts of the example need the vCenter and guest drivers,
# which are not in this build yet: --only esxi,switch says so explicitly.
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

step "gpuclusterctl plan --only esxi,switch $spec   (live: observes the lab)"
rc=0; "$bin" plan --only esxi,switch --state-dir "$state" "$spec" || rc=$?
[ "$rc" = 2 ] || { echo "demo: expected exit 2 (changes) from plan, got $rc" >&2; exit 1; }

step "gpuclusterctl apply --only esxi,switch $spec"
"$bin" apply --only esxi,switch --state-dir "$state" -v "$spec"

step "gpuclusterctl apply --only esxi,switch $spec   (again: converged)"
"$bin" apply --only esxi,switch --state-dir "$state" -v "$spec"

step "what esx01 received (tests/sim log, observation batches left out)"
grep -v -e '@@gc:' "$GC_LAB_DIR/hosts/esx01/commands.log" | cut -d' ' -f2- || true

echo
echo "demo: done. The lab keeps running: scripts/lab.sh status | stop"
