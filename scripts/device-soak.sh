#!/bin/bash
# device-soak.sh - the full fault soak (scripts/soak.py, issue 18 item 4) on
# the 16-core GPU machine, one soak process per example in parallel, each on
# its own lab ports (docs/fuzzing.md, "Fault soak").
#
# Here:   scripts/device-soak-bundle.sh
# There:  run carry=[".device"] command="scripts/device-soak.sh SEED KILLS DROPS EXAMPLE..."
#
# The bundle brings sshd, ssh-keygen, vcsim and our binaries with their
# libraries and PyYAML; the machine's own python3 (/usr/bin/python3), cc
# and openssl are used.  Logs: $OUT/soak-EXAMPLE.log.
set -u
OUT=${OUT:-$PWD/.device-out}
mkdir -p "$OUT"
seed=$1 kills=$2 drops=$3
shift 3
echo "== $(date -u +%FT%TZ) $(uname -r) $(nproc) cpus; $(. /etc/os-release 2>/dev/null; echo "$PRETTY_NAME")" | tee "$OUT/env.txt"
B=/tmp/gcsoak
if [ ! -x "$B/soak/bin/sshd" ]; then
	rm -rf "$B"
	mkdir -p "$B"
	tar -C "$B" -xJf .device/soak.tar.xz || { echo "no bundle"; exit 1; }
fi
cat "$B/soak/commit.txt" "$B/soak/glibc.txt" | tee -a "$OUT/env.txt"
export LD_LIBRARY_PATH=$B/soak/lib PYTHONPATH=$B/soak/py PATH=$B/soak/bin:$PATH
export GC_SSHD=$B/soak/bin/sshd GC_BIN=$B/soak/bin/gpuclusterctl
mkdir -p /run/sshd
id sshd >/dev/null 2>&1 || useradd -r -d /run/sshd -s /usr/sbin/nologin sshd
# the lab's vcsim, prebuilt: newer than its sources, so vcsim.sh builds nothing
export GC_VCSIM_BIN=$B/vcsimbin
mkdir -p "$GC_VCSIM_BIN"
cp -f "$B/soak/bin/vcsim" "$GC_VCSIM_BIN/vcsim"
touch "$GC_VCSIM_BIN/vcsim"
i=0
pids=()
for ex in "$@"; do
	/usr/bin/python3 scripts/soak.py --seed "$seed" --kills "$kills" --drops "$drops" \
		--examples "$ex" --port $((2600 + 20 * i)) --vcsim-port $((9300 + 10 * i)) \
		>"$OUT/soak-$ex.log" 2>&1 &
	pids+=($!)
	i=$((i + 1))
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
for ex in "$@"; do echo "== $ex"; tail -n 12 "$OUT/soak-$ex.log"; done
exit $rc
