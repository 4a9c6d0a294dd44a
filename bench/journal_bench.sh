#!/bin/bash
# journal_bench.sh - bench/journal_bench.c against this tree's journal and a
# given revision's, on this machine's disk and on a slow one (each fsync
# 5 ms longer, strace's fault injection), fsyncs counted by strace.
#
#   bench/journal_bench.sh BEFORE_REV [WRITERS] [RECORDS] [RUNS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
before=$1 writers=${2:-64} records=${3:-20} runs=${4:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
build() { # OUT JOURNAL_C
	cc -O2 -I"$root/include" -o "$1" "$root/bench/journal_bench.c" "$2" "$root"/src/util/*.c \
		$(pkg-config --cflags --libs json-c) -lpthread
}
git -C "$root" show "$before:src/exec/journal.c" >"$work/journal-before.c"
build "$work/before" "$work/journal-before.c"
build "$work/after" "$root/src/exec/journal.c"
for disk in "this disk" "fsync +5 ms"; do
	for b in before after; do
		for r in $(seq "$runs"); do
			rm -rf "$work/state"
			if [ "$disk" = "this disk" ]; then
				strace -f -qq -c -e trace=fsync -o "$work/st" "$work/$b" "$writers" "$records" "$work/state"
			else
				strace -f -qq -c -e trace=fsync -e inject=fsync:delay_exit=5000 -o "$work/st" \
					"$work/$b" "$writers" "$records" "$work/state"
			fi | sed "s/^/$disk, $b ($([ "$b" = before ] && echo "$before" || echo this tree)): /"
			awk '$NF == "fsync" {print "  fsyncs: " $4}' "$work/st"
		done
	done
done
