#!/usr/bin/env bash
# fuzz.sh - one fuzzing campaign: a libFuzzer target for a fixed time over
# its checked-in corpus, then the figures.
#
#   scripts/fuzz.sh TARGET SECONDS     # e.g. scripts/fuzz.sh spec 600
#   scripts/fuzz.sh --list             # the targets (fuzz/corpus/*)
#
# Builds build-fuzz/fuzz/fuzz_TARGET first when needed (clang, libFuzzer,
# ASan+UBSan: the configuration of scripts/test.sh's fuzz pass).  The corpus
# stays as checked in: what the campaign finds goes to a scratch directory,
# $GC_FUZZ_OUT (default build-fuzz/campaign/TARGET):
#   new/          every input libFuzzer kept during the run
#   interesting/  those of them that add coverage over the checked-in corpus
#                 (libFuzzer's -merge=1): the candidates to review and commit
#   crash-*, leak-*, timeout-*, oom-*   inputs that failed (add each to the
#                 corpus with its fix)
#   fuzz.log      libFuzzer's output
# and the last line printed is the campaign's figures:
#   TARGET seconds=S execs=N cov=C ft=F new=K interesting=I crashes=X
# (cov and ft from libFuzzer's final "DONE" line: covered edges and
# features).  Exit status 0 when nothing failed, 1 when an input did.
#
# GC_FUZZ_BIN=FILE runs that binary instead of building (a machine without
# the build tools: scripts/fuzz-bundle.sh).  Extra libFuzzer options go in
# GC_FUZZ_OPTS (e.g. "-rss_limit_mb=4096").
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

usage() {
	echo "usage: scripts/fuzz.sh TARGET SECONDS | --list" >&2
	exit 64
}
[ $# -ge 1 ] || usage
if [ "$1" = --list ]; then
	ls fuzz/corpus
	exit 0
fi
[ $# -eq 2 ] || usage
target=$1 seconds=$2
case $seconds in '' | *[!0-9]*) usage ;; esac
[ -d "fuzz/corpus/$target" ] || { echo "fuzz: no target '$target' (scripts/fuzz.sh --list)" >&2; exit 64; }

bin=${GC_FUZZ_BIN:-}
if [ -z "$bin" ]; then
	build="build-fuzz"
	if [ ! -f "$build/CMakeCache.txt" ]; then
		echo "== configure $build (clang, libFuzzer, ASan+UBSan)" >&2
		cmake -S . -B "$build" -DCMAKE_C_COMPILER=clang -DGC_WERROR=ON -DGC_SANITIZE=ON \
			-DGC_FUZZ=ON -DGC_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	fi
	cmake --build "$build" -j"$(nproc 2>/dev/null || echo 2)" --target "fuzz_$target" >&2
	bin=$build/fuzz/fuzz_$target
fi
out=${GC_FUZZ_OUT:-build-fuzz/campaign/$target}
rm -rf "$out"
mkdir -p "$out"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# the run: new inputs to $out/new, failures to $out/ (fuzz/run.sh)
rc=0
# shellcheck disable=SC2086 # GC_FUZZ_OPTS is a word list
fuzz/run.sh "$bin" "fuzz/corpus/$target" "$out" -max_total_time="$seconds" \
	${GC_FUZZ_OPTS:-} >"$out/fuzz.log" 2>&1 || rc=$?
done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$out/fuzz.log" | tail -1 || true)
[ -n "$done_line" ] || done_line=$(grep -E '^#[0-9]+[[:space:]]' "$out/fuzz.log" | tail -1 || true)
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/fuzz.log" | tail -1)
cov=$(echo "$done_line" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
ft=$(echo "$done_line" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')

# what the run kept that the checked-in corpus does not cover
mkdir -p "$out/merge" "$out/interesting"
cp "fuzz/corpus/$target"/* "$out/merge/"
"$bin" -merge=1 "$out/merge" "$out/new" >"$out/merge.log" 2>&1 || true
for f in "$out/merge"/*; do
	[ -e "fuzz/corpus/$target/$(basename "$f")" ] || mv "$f" "$out/interesting/"
done
rm -rf "$out/merge"

crashes=$(find "$out" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
	-o -name 'oom-*' \) | wc -l)
[ "$rc" = 0 ] || [ "$crashes" -gt 0 ] || crashes="? (libFuzzer exit status $rc: see $out/fuzz.log)"
echo "$target seconds=$seconds execs=${execs:-?} cov=${cov:-?} ft=${ft:-?}" \
	"new=$(find "$out/new" -type f | wc -l)" \
	"interesting=$(find "$out/interesting" -type f | wc -l) crashes=$crashes"
[ "$rc" = 0 ]
