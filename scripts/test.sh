#!/usr/bin/env bash
# test.sh - set up a fresh Debian 12 machine and run the whole test suite:
#   1. install packages (scripts/setup.sh)
#   2. build with -Werror and run every test (ctest)
#   3. build again with AddressSanitizer + UndefinedBehaviorSanitizer and run
#      every test again (fuzz corpora replay there too)
# Exit status 0 only when both passes are green.
#   GC_TEST_FAST=1 scripts/test.sh   # skip the sanitizer pass (local iteration)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
jobs=$(nproc 2>/dev/null || echo 2)

run_pass() {
	local dir=$1; shift
	echo "== configure $dir ($*)"
	cmake -S . -B "$dir" -DGC_WERROR=ON "$@" >/dev/null
	echo "== build $dir"
	cmake --build "$dir" -j"$jobs"
	echo "== test $dir"
	(cd "$dir" && ctest --output-on-failure -j"$jobs" --timeout 600)
}

run_pass build-test -DCMAKE_BUILD_TYPE=RelWithDebInfo
if [ "${GC_TEST_FAST:-0}" != 1 ]; then
	export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
	export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
	run_pass build-asan -DCMAKE_BUILD_TYPE=Debug -DGC_SANITIZE=ON
fi
echo "== all tests passed"
