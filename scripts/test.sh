#!/usr/bin/env bash
# test.sh - set up a fresh Debian 12 machine and run the whole test suite:
#   1. install packages (scripts/setup.sh)
#   2. build with -Werror and run every test (ctest)
#   3. build again with AddressSanitizer + UndefinedBehaviorSanitizer and run
#      every test again (fuzz corpora replay there too); the two real-VM
#      tests run once each: the lab's own in step 2, the guest driver's here
#   4. build the libFuzzer targets with clang under ASan+UBSan and run each
#      for GC_FUZZ_RUNS inputs (default 20000) from seed 1 over its corpus
#      (the ctests labelled fuzz-run): a crash, a sanitizer report, a leak
#      or a broken invariant within them fails the pass (about a minute)
# Exit status 0 only when every pass is green.
#   GC_TEST_FAST=1 scripts/test.sh   # skip the sanitizer and fuzz passes (local iteration)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
jobs=$(nproc 2>/dev/null || echo 2)

# run_pass DIR "CTEST ARGS" CMAKE ARGS...
run_pass() {
	local dir=$1 ctest_args=$2; shift 2
	echo "== configure $dir ($*)"
	cmake -S . -B "$dir" -DGC_WERROR=ON "$@" >/dev/null
	echo "== build $dir"
	cmake --build "$dir" -j"$jobs"
	echo "== test $dir"
	# shellcheck disable=SC2086 # ctest_args is a word list
	(cd "$dir" && ctest --output-on-failure -j"$jobs" --timeout 2400 $ctest_args)
}

# fuzz_pass DIR: the fuzzers alone (no tests, no CLI), and their fuzz-run ctests.
fuzz_pass() {
	local dir=$1
	echo "== configure $dir (clang, libFuzzer, ASan+UBSan)"
	cmake -S . -B "$dir" -DCMAKE_C_COMPILER=clang -DGC_WERROR=ON -DGC_SANITIZE=ON -DGC_FUZZ=ON \
		-DGC_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	echo "== build $dir (the fuzzers)"
	cmake --build "$dir" -j"$jobs" --target fuzzers
	echo "== fuzz $dir"
	(cd "$dir" && ctest --output-on-failure -j"$jobs" -L fuzz-run)
}

# The guest image (debootstrap, cached outside the tree) is built once, up
# front, so no test waits on it under a timeout of its own.
tests/sim/guestlab/image.sh build

# The real-VM tests run once each (they are most of the time): the lab's
# own (label guestlab, no C code of ours) and the KVM ones (label vm-once: a
# lab VM standing in for a KVM host, a VM the libvirt driver boots) in the
# first pass, the guest driver's (integration_test_guest) under the
# sanitizers in the second; everything else runs in both.  GC_TEST_FAST=1
# runs them all in the first.
if [ "${GC_TEST_FAST:-0}" = 1 ]; then
	run_pass build-test "" -DCMAKE_BUILD_TYPE=RelWithDebInfo
else
	run_pass build-test "-E ^integration_test_guest$" -DCMAKE_BUILD_TYPE=RelWithDebInfo
	export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
	export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
	run_pass build-asan "-LE guestlab|vm-once" -DCMAKE_BUILD_TYPE=Debug -DGC_SANITIZE=ON
	fuzz_pass build-fuzz
fi
echo "== all tests passed"
