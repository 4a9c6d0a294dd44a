#!/bin/bash
# device-bench-bundle.sh - what bench/apply_bench.py needs on the 16-core GPU
# machine and that machine lacks (nothing can be installed there): the lab
# (our binaries, OpenSSH's sshd/ssh-keygen/ssh and their libraries, PyYAML:
# scripts/device-soak-bundle.sh's contents, vcsim left out: the bench spec
# has no vCenter) and Debian's ansible-core with the pure-Python packages it
# imports (jinja2, markupsafe, packaging, resolvelib).  On 2 cores the
# simulated hosts' sshd sessions and simulator take the CPU the bench means
# to measure; there each of 64 or 256 hosts gets a share of 16 cores.
# Output: .device/bench.tar.xz (git-ignored; `carry` .device).
#
#   scripts/device-bench-bundle.sh && run carry=[".device"] command="scripts/device-bench.sh 64 256"
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
command -v ansible-playbook >/dev/null || { echo "ansible-core is needed here: apt-get install ansible-core" >&2; exit 1; }
out=.device/bench
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/py"
cmake --build build -j2 --target gpuclusterctl gpuclusterctl-online >/dev/null
cp build/src/cli/gpuclusterctl build/src/cli/gpuclusterctl-online "$out/bin/"
cp /usr/sbin/sshd /usr/bin/ssh-keygen /usr/bin/ssh "$out/bin/"
# the bench's light lab SSH server (GC_BENCH_SERVERS=go): a static Go program
(cd tests/sim/labsshd && env CGO_ENABLED=0 GO111MODULE=off GOPATH=/usr/share/gocode GOPROXY=off GOFLAGS= \
	go build -o "$root/$out/labsshd" .)
scripts/bundle-libs.sh "$out/lib" "$out"/bin/*
mv "$out/labsshd" "$out/bin/" # after bundle-libs: no libraries of its own
dp=/usr/lib/python3/dist-packages
for m in yaml jinja2 markupsafe packaging resolvelib ansible; do cp -r "$dp/$m" "$out/py/"; done
# and their metadata: ansible-core asks importlib.metadata for jinja2's version
for m in PyYAML Jinja2 MarkupSafe packaging resolvelib ansible_core; do
	cp -r "$dp/$m"-*.*-info "$out/py/"
done
# compiled speed-ups of Debian's Python 3.11: each has a pure-Python fallback
find "$out/py" -name '*.so' -delete
find "$out/py" -name __pycache__ -prune -exec rm -rf {} +
cp /usr/bin/ansible-playbook "$out/bin/ansible-playbook.py"
ansible-playbook --version | sed -n 1p >"$out/ansible.txt"
/usr/bin/ldd --version 2>&1 | sed -n 1p >"$out/glibc.txt"
git rev-parse --short HEAD >"$out/commit.txt"
tar -C .device -cJf .device/bench.tar.xz bench
# GC_BENCH_LAB_BASE=COMMIT: that commit's lab (scripts/, tests/sim/) with
# this bench script, for device-bench.sh's GC_BENCH_LAB_BASE=1
rm -rf .device/basetree
if [ -n "${GC_BENCH_LAB_BASE:-}" ]; then
	mkdir -p .device/basetree/bench
	git archive "$GC_BENCH_LAB_BASE" scripts tests/sim | tar -x -C .device/basetree
	cp bench/apply_bench.py .device/basetree/bench/
	git rev-parse --short "$GC_BENCH_LAB_BASE" >.device/basetree/commit.txt
fi
rm -rf "$out"
ls -l .device/bench.tar.xz
