#!/bin/bash
# device-probe-softroce.sh - second device run: the RDMA half of the probe on
# soft-RoCE (rdma_rxe), if the guest kernel has it, plus a copy-bandwidth
# size sweep (probe vs PyTorch) to show the 256 MiB figure is steady state.
#
#   OUT=/tmp/o scripts/device-probe-softroce.sh     (carry build-rdma-carry/)
#
# build-rdma-carry/ holds Debian 12's libibverbs.so.1 + librxe provider +
# libnl, and iproute2's `rdma` (the GPU image has no rdma-core).  The probe
# is pointed at that libibverbs with GC_PROBE_LIBIBVERBS.
set -u
OUT=${OUT:-$PWD/.device-out}
mkdir -p "$OUT"
exec > >(tee "$OUT/log2.txt") 2>&1
C=$PWD/build-rdma-carry
B=build-probe-dev
cmake -S . -B $B -DGC_PROBE_ONLY=ON -DGC_WERROR=ON -DCMAKE_BUILD_TYPE=Release >/dev/null &&
  cmake --build $B -j8 2>&1 | tail -1 || exit 1
P=$PWD/$B/src/probe/gpuclusterctl-probe

echo "== bandwidth sweep (probe, then PyTorch/CuPy reference, same method)"
for mib in 32 1024; do
  $P --json --no-rdma --bw-mib $mib > "$OUT/sweep-probe-$mib.json"
  python3 scripts/device-probe-ref.py --mib $mib > "$OUT/sweep-ref-$mib.json"
  python3 scripts/device-probe-compare.py "$OUT/sweep-probe-$mib.json" -- "$OUT/sweep-ref-$mib.json" | sed "s/^/[$mib MiB] /"
done

echo "== soft-RoCE"
uname -r; ls /sys/module | grep -E "rdma|ib_" | tr '\n' ' '; echo
ls /lib/modules/$(uname -r) >/dev/null 2>&1 && modprobe rdma_rxe 2>&1
export LD_LIBRARY_PATH=$C/lib
mkdir -p /usr/lib/x86_64-linux-gnu/libibverbs /etc/libibverbs.d
cp $C/lib/librxe-rdmav34.so /usr/lib/x86_64-linux-gnu/libibverbs/ && echo "driver rxe" > /etc/libibverbs.d/rxe.driver
IF=$(ls /sys/class/net | grep -v '^lo$' | head -1)
for nd in $IF lo; do
  [ -n "$nd" ] || continue
  $C/bin/rdma link add rxe0 type rxe netdev $nd 2>&1 && { echo "rxe0 on $nd"; break; }
done
$C/bin/rdma link 2>&1
if [ ! -e /sys/class/infiniband/rxe0 ]; then
  echo "NO SOFT-ROCE: the guest kernel has no rdma_rxe; RDMA data path not run"
  exit 0
fi
sleep 2
export GC_PROBE_LIBIBVERBS=$C/lib/libibverbs.so.1
$P --no-bw; echo "probe exit=$?"
$P --no-cuda --json > "$OUT/rdma-probe.json"
GIDX=$(python3 -c "import json;d=json.load(open('$OUT/rdma-probe.json'));print(d['rdma']['devices'][0]['ports'][0]['roce_v2_gid_index'])")
echo "roce v2 gid index: $GIDX"
$P --no-cuda --rdma-server --rdma-timeout 30 --rdma-iters 500 > /tmp/rdma-server.txt 2>&1 &
SRV=$!
sleep 1
$P --no-cuda --rdma-peer 127.0.0.1 --rdma-timeout 30 --rdma-iters 500 --json > "$OUT/rdma-client.json"; echo "client exit=$?"
wait $SRV; echo "server exit=$?"
tail -4 /tmp/rdma-server.txt
python3 -c "import json;print(json.load(open('$OUT/rdma-client.json'))['rdma_test'])"
# sysfs of a real RDMA device, as a test fixture
T=/tmp/sysfs-rxe; rm -rf $T
for f in fw_ver node_guid ports/1/state ports/1/link_layer ports/1/lid $(cd /sys/class/infiniband/rxe0 && ls ports/1/gids/* ports/1/gid_attrs/types/* ports/1/gid_attrs/ndevs/* 2>/dev/null | head -60); do
  mkdir -p $T/sys/class/infiniband/rxe0/$(dirname $f); cat /sys/class/infiniband/rxe0/$f > $T/sys/class/infiniband/rxe0/$f 2>/dev/null || rm -f $T/sys/class/infiniband/rxe0/$f
done
tar -C $T -cf "$OUT/sysfs-rxe.tar" sys; echo "captured $(tar -tf $OUT/sysfs-rxe.tar | wc -l) sysfs entries"
$C/bin/rdma link delete rxe0
