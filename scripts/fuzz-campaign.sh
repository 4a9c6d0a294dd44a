#!/usr/bin/env bash
# fuzz-campaign.sh - every fuzz target at once, one process each, for the
# same time (scripts/fuzz.sh per target), then one table of figures.
#
#   scripts/fuzz-campaign.sh SECONDS [OUTDIR]
#
# OUTDIR (default build-fuzz/campaign) gets a directory per target (as
# scripts/fuzz.sh leaves it) and summary.txt, one line per target:
#   TARGET seconds=S execs=N cov=C ft=F new=K interesting=I crashes=X
# Needs as many free cores as there are targets (fuzz/corpus/*) to give each
# a core.  Inside a bundle made by scripts/fuzz-bundle.sh (bin/fuzz_* beside
# scripts/) it runs those binaries; in a checkout it builds build-fuzz first.
# Exit status 1 when any target failed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
[ $# -ge 1 ] || { echo "usage: scripts/fuzz-campaign.sh SECONDS [OUTDIR]" >&2; exit 64; }
seconds=$1
out=${2:-build-fuzz/campaign}
case $out in /*) ;; *) out=$root/$out ;; esac
mkdir -p "$out"
targets=$(ls fuzz/corpus)
if [ -d bin ]; then
	export LD_LIBRARY_PATH=$root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
else
	cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DGC_WERROR=ON -DGC_SANITIZE=ON \
		-DGC_FUZZ=ON -DGC_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build build-fuzz -j"$(nproc 2>/dev/null || echo 2)" --target fuzzers >/dev/null
fi
echo "== $(date -u +%FT%TZ) $(nproc) cores, $(echo "$targets" | wc -w) targets, ${seconds} s each"
pids=()
for t in $targets; do
	bin=$root/build-fuzz/fuzz/fuzz_$t
	[ -d bin ] && bin=$root/bin/fuzz_$t
	GC_FUZZ_BIN=$bin GC_FUZZ_OUT=$out/$t scripts/fuzz.sh "$t" "$seconds" >"$out/$t.line" 2>&1 &
	pids+=($!)
done
rc=0
for p in "${pids[@]}"; do
	wait "$p" || rc=1
done
for t in $targets; do
	tail -1 "$out/$t.line"
	rm -f "$out/$t.line"
done | tee "$out/summary.txt"
echo "== $(date -u +%FT%TZ) done"
exit $rc
