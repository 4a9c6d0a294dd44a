#!/usr/bin/env bash
# test.sh - set up a fresh Debian 12 machine and run the whole test suite:
#   1. install packages (scripts/setup.sh) and build the guest image
#   2. build with -Werror under AddressSanitizer + UndefinedBehaviorSanitizer
#      and run every test, each once: the unit tests, and all the lab tests
#      (sshd + simulators, vcsim, libvirtd, the real guest VMs)
#   3. beside 2's tests, at nice 19: build with -Werror, optimised
#      (RelWithDebInfo, what users run), and run the tests that need no lab
#      (unit, sim, fuzz replay; not those labelled lab or integration, which
#      start sshd, vcsim or VMs)
#   4. then, as 3: build the libFuzzer targets with clang under ASan+UBSan and run each
#      for GC_FUZZ_RUNS inputs (default 20000) from seed 1 over its corpus
#      (the ctests labelled fuzz-run): a crash, a sanitizer report, a leak
#      or a broken invariant within them fails the pass (about a minute)
# Exit status 0 only when every pass is green.  Each pass prints its time.
#   GC_TEST_FAST=1 scripts/test.sh   # one optimised build, every test, no sanitizers or fuzzing
#   scripts/test.sh --full-examples   # the long lab run, alone: examples/roce-passthrough.yaml
#                                     # and vgpu-pvrdma.yaml applied whole, 8 and 5 real guests
#                                     # (label full-examples; about 50 minutes on 2 cores, so
#                                     # the runs above leave it out)
set -euo pipefail
cd "$(dirname "$0")/.."

case "${1:-}" in
"" | --beside | --full-examples) ;;
*) echo "usage: scripts/test.sh [--full-examples]" >&2; exit 2 ;;
esac
[ "${1:-}" = --beside ] || scripts/setup.sh
jobs=$(nproc 2>/dev/null || echo 2)

# build_dir DIR CMAKE ARGS... / test_dir DIR "CTEST ARGS"
build_dir() {
	local dir=$1; shift
	echo "== configure $dir ($*)"
	cmake -S . -B "$dir" -DGC_WERROR=ON "$@" >/dev/null
	echo "== build $dir"
	cmake --build "$dir" -j"$jobs"
}
test_dir() {
	local dir=$1 ctest_args=$2 rc=0
	echo "== test $dir"
	rm -f "$dir/lab-test-times.txt"
	# shellcheck disable=SC2086 # ctest_args is a word list
	(cd "$dir" && ctest --output-on-failure -j"$jobs" --timeout 2400 $ctest_args) || rc=$?
	# ctest shows a passing test's output only with -V: each lab test's
	# wall time and its lab's start (tests/integration/labtest.py), in the
	# order they ended
	if [ -s "$dir/lab-test-times.txt" ]; then
		echo "== lab test times ($dir)"
		sed 's/^/    /' "$dir/lab-test-times.txt"
	fi
	return $rc
}

# run_pass DIR "CTEST ARGS" CMAKE ARGS...
run_pass() {
	local dir=$1 ctest_args=$2; shift 2
	build_dir "$dir" "$@"
	test_dir "$dir" "$ctest_args"
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
	# This build has no tests, as one built to install: its binaries must
	# carry none of the lab tests' hooks (gc_test_hook, util.h).
	echo "== build $dir (the CLI, as built without tests: no test hooks in it)"
	cmake --build "$dir" -j"$jobs" --target gpuclusterctl gpuclusterctl-online
	if grep -a -o -E 'GC_(TEST_[A-Z_]*|REBOOT_POLL_MS|GUEST_SHUTDOWN_TIMEOUT_MS)' \
		"$dir/src/cli/gpuclusterctl" "$dir/src/cli/gpuclusterctl-online"; then
		echo "== FAILED: a build without tests has test hooks (above)"
		return 1
	fi
}

# The optimised pass and the fuzz pass, run beside the sanitizer pass's lab
# tests (below) as `scripts/test.sh --beside` in a session of their own whose
# autogroup nice is 19: Linux's scheduler (autogroup, on in Debian's kernels)
# shares the CPU between sessions first, and every lab daemon (each QEMU
# guest, sshd, the simulator server) is a session of its own, so a plain
# nice on processes of this session would not put them behind the guests.
if [ "${1:-}" = --beside ]; then
	echo 19 >/proc/self/autogroup 2>/dev/null || true
	renice -n 19 -p $$ >/dev/null
	t1=$SECONDS
	run_pass build-test "-LE integration|lab" -DCMAKE_BUILD_TYPE=RelWithDebInfo
	echo "== optimised pass (beside the sanitizer pass, nice 19): $((SECONDS - t1)) s"
	t1=$SECONDS
	fuzz_pass build-fuzz
	echo "== fuzz pass (beside the sanitizer pass, nice 19): $((SECONDS - t1)) s"
	exit 0
fi

# The guest image (debootstrap, cached outside the tree) is built once, up
# front, so no test waits on it under a timeout of its own.
tests/sim/guestlab/image.sh build

if [ "${1:-}" = --full-examples ]; then
	t0=$SECONDS
	run_pass build-test "-L full-examples" -DCMAKE_BUILD_TYPE=RelWithDebInfo
	echo "== full examples: $((SECONDS - t0)) s"
	exit 0
fi

# The lab tests (labels integration and lab) are most of the time: they run
# once, in the sanitizer pass, where a leak or an overflow in the binary they
# drive is caught too.  CMake's COST property starts the longest first
# (tests/integration/CMakeLists.txt).  Their critical path is the real guest
# VMs (QEMU/TCG), which leave the cores idle now and then: the optimised pass
# and the fuzz pass run beside them at the lowest CPU priority (nice 19), so
# they take only what the lab tests leave; neither starts a server or opens
# a fixed port (the tests that do are labelled lab).  Their output comes
# after the sanitizer pass's, each pass with its own time.
t0=$SECONDS
if [ "${GC_TEST_FAST:-0}" = 1 ]; then
	run_pass build-test "-LE full-examples" -DCMAKE_BUILD_TYPE=RelWithDebInfo
else
	export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
	export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
	# -O1: what the sanitizers' own documentation advises, and the lab tests
	# run the binary thousands of times
	build_dir build-asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-g -O1" -DGC_SANITIZE=ON
	echo "== sanitizer build: $((SECONDS - t0)) s"
	others_log=$PWD/build-asan/others-passes.log
	setsid -w scripts/test.sh --beside >"$others_log" 2>&1 &
	others=$!
	asan_rc=0
	test_dir build-asan "-LE full-examples" || asan_rc=$?
	echo "== sanitizer pass: $((SECONDS - t0)) s"
	others_rc=0
	wait "$others" || others_rc=$?
	echo "== the optimised and fuzz passes, run beside it (done at $((SECONDS - t0)) s):"
	cat "$others_log"
	[ "$asan_rc" = 0 ] || echo "== FAILED: the sanitizer pass (exit $asan_rc)"
	[ "$others_rc" = 0 ] || echo "== FAILED: the optimised or the fuzz pass (exit $others_rc)"
	[ "$asan_rc" = 0 ] && [ "$others_rc" = 0 ] || exit 1
fi
echo "== all passes: $((SECONDS - t0)) s"
echo "== all tests passed"
