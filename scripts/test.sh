#!/usr/bin/env bash
# test.sh - set up a fresh Debian 12 machine and run the whole test suite:
#   1. install packages (scripts/setup.sh) and build the guest image
#   2. build with -Werror, optimised (RelWithDebInfo, what users run), and
#      run the tests that need no lab (unit, sim, fuzz replay; not those
#      labelled lab or integration, which start sshd, vcsim or VMs)
#   3. build again with -Werror under AddressSanitizer + UndefinedBehaviorSanitizer
#      and run every test, each once: the unit tests again, and all the lab
#      tests (sshd + simulators, vcsim, libvirtd, the real guest VMs)
#   4. build the libFuzzer targets with clang under ASan+UBSan and run each
#      for GC_FUZZ_RUNS inputs (default 20000) from seed 1 over its corpus
#      (the ctests labelled fuzz-run): a crash, a sanitizer report, a leak
#      or a broken invariant within them fails the pass (about a minute)
# Exit status 0 only when every pass is green.  Each pass prints its time.
#   GC_TEST_FAST=1 scripts/test.sh   # one optimised build, every test, no sanitizers or fuzzing
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

# The lab tests (labels integration and lab) are most of
# the time: they run once, in the sanitizer pass, where a leak or an
# overflow in the binary they drive is caught too.  CMake's COST property
# starts the longest first (tests/integration/CMakeLists.txt).
t0=$SECONDS
if [ "${GC_TEST_FAST:-0}" = 1 ]; then
	run_pass build-test "" -DCMAKE_BUILD_TYPE=RelWithDebInfo
else
	run_pass build-test "-LE integration|lab" -DCMAKE_BUILD_TYPE=RelWithDebInfo
	echo "== optimised pass: $((SECONDS - t0)) s"
	export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
	export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
	# -O1: what the sanitizers' own documentation advises, and the lab tests
	# run the binary thousands of times
	run_pass build-asan "" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-g -O1" -DGC_SANITIZE=ON
	echo "== sanitizer pass: $((SECONDS - t0)) s"
	fuzz_pass build-fuzz
fi
echo "== all passes: $((SECONDS - t0)) s"
echo "== all tests passed"
