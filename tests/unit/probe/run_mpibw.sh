#!/bin/sh
# run_mpibw.sh PROBE - the probe's --mpi-bw test for real: two ranks on this
# machine under Open MPI's mpirun (ctest probe_mpibw).  Exit 77 (skipped)
# when mpirun is not installed (apt-get install openmpi-bin); checks the
# exit code and that the one result line has the documented form
# (docs/probe.md) with data=ok; then that without libmpi the probe exits 1
# naming the dlopen error.
probe=$1
if ! command -v mpirun >/dev/null 2>&1; then
	echo "mpirun not installed: skipped"
	exit 77
fi
root=
[ "$(id -u)" = 0 ] && root=--allow-run-as-root
# Under ASan (GC_SANITIZE=ON) LeakSanitizer reports what Open MPI 4.1 leaves
# allocated at MPI_Finalize (ompi_op_base_op_select and components it has
# already unloaded, so no frame names our code); leak checking is off for
# this test only, the rest of ASan/UBSan stays on.  No effect on other builds.
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
export ASAN_OPTIONS
out=$(timeout 120 mpirun $root --oversubscribe -np 2 "$probe" --mpi-bw --mpi-iters 20 2>&1)
rc=$?
printf '%s\n' "$out"
[ $rc = 0 ] || { echo "FAIL: mpirun exited $rc"; exit 1; }
num='[0-9]+\.[0-9]{3}'
re="^GCPROBE-MPIBW ranks=2 pairs=1 pair_min_gbs=$num pair_max_gbs=$num allreduce_gbs=$num bytes=4194304 allreduce_bytes=67108864 iters=20 data=ok\$"
n=$(printf '%s\n' "$out" | grep -cE "$re")
[ "$n" = 1 ] || { echo "FAIL: expected exactly one line matching $re"; exit 1; }
out=$(GC_PROBE_LIBMPI=/nonexistent/libmpi.so.40 "$probe" --mpi-bw 2>&1)
rc=$?
printf '%s\n' "$out"
[ $rc = 1 ] || { echo "FAIL: without libmpi the probe exited $rc, not 1"; exit 1; }
printf '%s\n' "$out" | grep -q "/nonexistent/libmpi.so.40: cannot open shared object file" ||
	{ echo "FAIL: the dlopen error is not named"; exit 1; }
echo PASS
