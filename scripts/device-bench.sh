#!/bin/bash
# device-bench.sh - bench/apply_bench.py on the 16-core GPU machine, one run
# per host count given (docs/benchmarks.md, "Apply").
#
# Here:   scripts/device-bench-bundle.sh
# There:  run carry=[".device"] command="scripts/device-bench.sh 64 256"
#         (GC_BENCH_FORKS='' leaves Ansible out; GC_BENCH_FORKS=5 runs forks 5 only;
#         GC_BENCH_KEX='' offers OpenSSH's own key exchanges, not the bench's FIPS list;
#         GC_BENCH_BASE=1 also runs the gpuclusterctl and gpuclusterctl-online in
#         .device/base/, an earlier commit's build, before each count, on the same
#         instance: bench-N-base.txt;
#         GC_BENCH_RUNS=N: N gpuclusterctl applies a count, not 5;
#         GC_BENCH_SERVERS="go openssh" runs each count with each lab SSH
#         server in turn (bench/apply_bench.py --ssh-server; the default is
#         openssh alone; go's output is bench-N-go.txt);
#         GC_BENCH_LAB_BASE=1 also runs, first, this build and this bench
#         against an earlier commit's lab (.device/basetree: its scripts/ and
#         tests/sim/, from scripts/device-bench-bundle.sh run with
#         GC_BENCH_LAB_BASE=COMMIT), the lab user's shell put back to /bin/sh
#         first: bench-N-labbase.txt)
#
# Uses the machine's /usr/bin/python3 and the bundle's sshd, ssh,
# ansible-core and Python packages.  Output: $OUT/bench-N.txt.
set -u
OUT=${OUT:-$PWD/.device-out}
mkdir -p "$OUT"
echo "== $(date -u +%FT%TZ) $(uname -r) $(nproc) cpus; $(. /etc/os-release 2>/dev/null; echo "$PRETTY_NAME"); $(/usr/bin/python3 -V)" | tee "$OUT/env.txt"
B=/tmp/gcbench
rm -rf "$B"
mkdir -p "$B"
tar -C "$B" -xJf .device/bench.tar.xz || { echo "no bundle"; exit 1; }
cat "$B/bench/commit.txt" "$B/bench/glibc.txt" "$B/bench/ansible.txt" | tee -a "$OUT/env.txt"
# The instance's speed, which differs between machines of one kind as much
# as a change does (docs/benchmarks.md, "Apply"): its CPU, a Python loop
# (the simulator's kind of work) and 1,000 fork-and-execs (the sshd's kind).
{
	lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1
	/usr/bin/python3 -c 'import time
t = time.perf_counter()
s = 0
for i in range(10 ** 7):
    s += i
print("python: 10^7 additions in %.2f s" % (time.perf_counter() - t))'
	TIMEFORMAT='1,000 fork+exec of /bin/true: %R s (user %U s, system %S s)'
	time for _ in $(seq 1000); do /bin/true; done
} 2>&1 | tee -a "$OUT/env.txt"
mkdir -p "$B/path"
printf '#!/bin/sh\nexec /usr/bin/python3 %s "$@"\n' "$B/bench/bin/ansible-playbook.py" >"$B/path/ansible-playbook"
chmod +x "$B/path/ansible-playbook"
export LD_LIBRARY_PATH=$B/bench/lib PYTHONPATH=$B/bench/py PATH=$B/path:$B/bench/bin:$PATH
export GC_SSHD=$B/bench/bin/sshd GC_LABSSHD_BIN=$B/bench/bin/labsshd
mkdir -p /run/sshd
id sshd >/dev/null 2>&1 || useradd -r -d /run/sshd -s /usr/sbin/nologin sshd
ansible-playbook --version 2>&1 | sed -n 1,2p | tee -a "$OUT/env.txt"
rc=0
[ -n "${GC_BENCH_BASE:-}" ] && cat .device/base/commit.txt | sed 's/^/base: /' | tee -a "$OUT/env.txt"
[ -n "${GC_BENCH_LAB_BASE:-}" ] && sed 's/^/lab base: /' .device/basetree/commit.txt | tee -a "$OUT/env.txt"
here=$PWD
for n in "$@"; do
	for side in ${GC_BENCH_LAB_BASE:+labbase} ${GC_BENCH_BASE:+base} ${GC_BENCH_SERVERS:-this}; do
		bin=$B/bench/bin/gpuclusterctl tag=${GC_BENCH_TAG:+-$GC_BENCH_TAG} tree=$here server=()
		case $side in
		openssh) side=this server=(--ssh-server openssh) ;;
		go) server=(--ssh-server go) tag=$tag-go ;;
		esac
		[ "$side" = base ] && bin=$here/.device/base/gpuclusterctl tag=-base
		if [ "$side" = labbase ]; then
			tree=$here/.device/basetree tag=-labbase
			# the earlier lab ran its sessions through /bin/sh
			id gclab >/dev/null 2>&1 && usermod -s /bin/sh gclab
		fi
		echo "== $n hosts ($side)"
		(cd "$tree" && /usr/bin/python3 bench/apply_bench.py --hosts "$n" --bin "$bin" "${server[@]}" --keep-slow "$OUT" \
			${GC_BENCH_FORKS+--forks "$GC_BENCH_FORKS"} ${GC_BENCH_RUNS:+--runs "$GC_BENCH_RUNS"} ${GC_BENCH_KEX+--kex "$GC_BENCH_KEX"}) 2>&1 |
			tee "$OUT/bench-$n$tag.txt" || rc=1
	done
done
exit $rc
