#!/bin/sh
# run.sh FUZZER CORPUS SCRATCH [libFuzzer options...] - one fuzzer run over
# a corpus that stays as checked in: new inputs go to SCRATCH/new (emptied
# first), a crashing input to SCRATCH/crash-<sha1>.  Seed 1 unless the
# options give another; inputs slower than 10 s and leaks are failures.
# The ctests fuzz_<NAME> run it with -runs=N; scripts/fuzz.sh with a time.
set -eu
[ $# -ge 3 ] || { echo "usage: $0 FUZZER CORPUS SCRATCH [options...]" >&2; exit 64; }
bin=$1 corpus=$2 scratch=$3
shift 3
rm -rf "$scratch/new"
mkdir -p "$scratch/new"
exec "$bin" -seed=1 -timeout=10 -print_final_stats=1 -artifact_prefix="$scratch/" "$@" \
	"$scratch/new" "$corpus"
