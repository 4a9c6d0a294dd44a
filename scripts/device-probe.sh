#!/bin/bash
# device-probe.sh - build and run the node probe on a GPU machine, with a
# PyTorch/CuPy reference for copy bandwidth (docs/benchmarks.md).
#
#   OUT=/tmp/probe-out scripts/device-probe.sh     (OUT defaults to ./.device-out)
#
# Builds with -DGC_PROBE_ONLY=ON (C compiler, CMake, libc only), runs the
# probe as a table and as JSON, runs an expectation check, an ASan+UBSan
# build without the bandwidth test, then interleaves probe and reference
# bandwidth runs (same sizes, same method) and prints the ratios.
set -u
OUT=${OUT:-$PWD/.device-out}
MIB=${MIB:-256} REPS=${REPS:-20} TRIALS=${TRIALS:-5}
mkdir -p "$OUT"
exec > >(tee "$OUT/log.txt") 2>&1
echo "== $(date -u +%FT%TZ) $(uname -r) $(nproc) cpus"
nvidia-smi --query-gpu=name,memory.total,driver_version,pci.bus_id --format=csv
nvidia-smi -q > "$OUT/nvidia-smi-q.txt" 2>&1
grep -E "Driver Version|Product Name|Virtualization Mode|Bus Id|ECC|License" "$OUT/nvidia-smi-q.txt" | head -20

echo "== build (probe only, -Werror)"
B=build-probe-dev
cmake -S . -B $B -DGC_PROBE_ONLY=ON -DGC_WERROR=ON -DCMAKE_BUILD_TYPE=Release >/dev/null &&
  cmake --build $B -j8 2>&1 | tail -3 || { echo "BUILD FAILED"; exit 1; }
P=$B/src/probe/gpuclusterctl-probe
ldd $P

echo "== probe (table)"
$P --bw-mib $MIB --bw-reps $REPS --bw-trials $TRIALS; echo "exit=$?"
echo "== probe --json"
$P --json --bw-mib $MIB --bw-reps $REPS --bw-trials $TRIALS > "$OUT/probe1.json"; echo "exit=$?"
python3 -m json.tool "$OUT/probe1.json" > /dev/null && echo "json: valid"
echo "== expectations (rdma.device fails on purpose: no RDMA here)"
$P --no-bw --expect-set gpu.count=1 --expect-set gpu.virtualization=Pass-Through \
   --expect-set gpu.memory_mib_min=70000 --expect-set cuda.vector_add=yes \
   --expect-set rdma.device=any --expect-set rdma.peermem=no > "$OUT/expect.txt"
echo "exit=$? (1 = an expectation failed)"; sed -n '/^Expectations/,$p' "$OUT/expect.txt"

echo "== reference and probe, interleaved"
python3 scripts/device-probe-ref.py --mib $MIB --reps $REPS --trials $TRIALS > "$OUT/ref1.json"
$P --json --no-rdma --bw-mib $MIB --bw-reps $REPS --bw-trials $TRIALS > "$OUT/probe2.json"
python3 scripts/device-probe-ref.py --mib $MIB --reps $REPS --trials $TRIALS > "$OUT/ref2.json"
cat "$OUT/ref1.json"
python3 scripts/device-probe-compare.py "$OUT/probe1.json" "$OUT/probe2.json" -- \
  "$OUT/ref1.json" "$OUT/ref2.json"

echo "== ASan+UBSan build, no bandwidth"
A=build-probe-asan-dev
cmake -S . -B $A -DGC_PROBE_ONLY=ON -DGC_WERROR=ON -DGC_SANITIZE=ON >/dev/null &&
  cmake --build $A -j8 2>&1 | tail -1
ASAN_OPTIONS=protect_shadow_gap=0:detect_leaks=0 $A/src/probe/gpuclusterctl-probe --no-bw \
  > "$OUT/asan.txt" 2>&1; echo "asan exit=$?"; tail -5 "$OUT/asan.txt"
echo "== done $(date -u +%FT%TZ)"
