#!/bin/bash
# fuzz-bundle.sh - the fuzzers, their corpora and the campaign scripts in
# one archive, for a machine with many cores and no build tools (the
# 16-core device machine: docs/fuzzing.md, "Campaign figures").  Shared
# libraries come from this Debian 12 machine, glibc's own excepted (the
# other machine's glibc must be 2.36 or newer).  Debug info is stripped:
# symbolize a report with the unstripped binaries in build-fuzz/fuzz/.
#
#   scripts/fuzz-bundle.sh [DEST]       # DEST/bundle.tar.xz, default .device/fuzz
#   there: tar -C /tmp -xJf DEST/bundle.tar.xz && /tmp/fuzz-bundle/scripts/fuzz-campaign.sh 540 $OUT/c
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
dest=${1:-.device/fuzz}
stage=$(mktemp -d)
b=$stage/fuzz-bundle
mkdir -p "$b/bin" "$b/lib" "$b/scripts" "$b/fuzz"
cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DGC_WERROR=ON -DGC_SANITIZE=ON -DGC_FUZZ=ON \
	-DGC_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-fuzz -j"$(nproc 2>/dev/null || echo 2)" --target fuzzers >/dev/null
for d in fuzz/corpus/*/; do
	cp "build-fuzz/fuzz/fuzz_$(basename "$d")" "$b/bin/"
done
strip --strip-debug "$b"/bin/*
cp scripts/fuzz.sh scripts/fuzz-campaign.sh "$b/scripts/"
cp fuzz/run.sh "$b/fuzz/"
cp -r fuzz/corpus "$b/fuzz/"
scripts/bundle-libs.sh "$b/lib" "$b"/bin/*
ldd --version 2>&1 | sed -n 1p >"$b/glibc.txt"
git describe --always --dirty >"$b/commit.txt"
mkdir -p "$dest"
tar -C "$stage" -cJf "$dest/bundle.tar.xz" fuzz-bundle
rm -rf "$stage"
ls -l "$dest/bundle.tar.xz"
