#!/usr/bin/python3
"""rdma_pair_bench - validate's RDMA pair test beside perftest on the same pair.

Runs on a lab whose guests are applied (scripts/lab.sh start --spec ...,
then gpuclusterctl apply): for each round, the probe's RDMA write test
(gpuclusterctl-probe --rdma-server / --rdma-peer, exactly what `validate`
runs) and then perftest's ib_write_bw and ib_write_lat, between the same two
guests over the same RDMA device and GID, with the same message size and
count.  Prints one line per run and the medians; docs/benchmarks.md has the
figures.

    GC_LAB_DIR=.lab bench/rdma_pair_bench.py [--rounds 3] [--msg-kib 1024] [--iters 100]
        [--probe build/src/probe/gpuclusterctl-probe-portable] SERVER_ADDR CLIENT_ADDR PEER_RDMA_ADDR

SERVER_ADDR/CLIENT_ADDR are the guests' SSH addresses (127.0.0.51 ...),
PEER_RDMA_ADDR the server's address on the RDMA network (198.18.0.51).

What is compared: bandwidth, both in Gb/s (10^9 bits per second, perftest
with --report_gbits).  Latency is printed for both but measures different
things: the probe's is the median completion round trip of one signaled
64-byte RDMA write (post to completion); ib_write_lat's t_typical is half of
a ping-pong of two writes.  Neither is turned into the other.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import threading
import time


def ssh_argv(lab, addr):
    port = int(open(os.path.join(lab, "port")).read()) + 10000
    return ["ssh", "-p", str(port), "-i", os.path.join(lab, "guest_key"),
            "-o", "UserKnownHostsFile=" + os.path.join(lab, "known_hosts"),
            "-o", "BatchMode=yes", "-o", "LogLevel=ERROR", "gclab@" + addr]


def run(lab, addr, cmd, timeout=600):
    r = subprocess.run(ssh_argv(lab, addr) + [cmd], capture_output=True, text=True,
                       timeout=timeout)
    return r.returncode, r.stdout, r.stderr


def pair(lab, server, client, scmd, ccmd):
    """Start the server side, give it a moment, run the client; both outputs."""
    out = {}

    def srv():
        out["server"] = run(lab, server, scmd)
    t = threading.Thread(target=srv)
    t.start()
    time.sleep(1.5)
    out["client"] = run(lab, client, ccmd)
    t.join()
    return out["server"], out["client"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--msg-kib", type=int, default=1024)
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--dev", default="mlx5_0")
    ap.add_argument("--gid-index", type=int, default=1)
    ap.add_argument("--probe", default="build/src/probe/gpuclusterctl-probe-portable")
    ap.add_argument("server")
    ap.add_argument("client")
    ap.add_argument("peer")
    a = ap.parse_args()
    lab = os.environ.get("GC_LAB_DIR", ".lab")

    # the probe, where validate puts it (any name; this one is the bench's)
    for addr in (a.server, a.client):
        with open(a.probe, "rb") as f:
            subprocess.run(ssh_argv(lab, addr) + [
                "mkdir -p ~/.cache/gpuclusterctl && cat > ~/.cache/gpuclusterctl/bench-probe "
                "&& chmod 755 ~/.cache/gpuclusterctl/bench-probe"], stdin=f, check=True)
    size = a.msg_kib * 1024
    common = "--json --no-cuda --no-bw --rdma-dev %s --rdma-gid-index %d --rdma-msg-kib %d " \
             "--rdma-iters %d" % (a.dev, a.gid_index, a.msg_kib, a.iters)
    pf = "-d %s -x %d" % (a.dev, a.gid_index)
    res = {"probe_gbps": [], "perftest_gbps": [], "probe_lat_us": [], "perftest_lat_us": []}
    for rnd in range(a.rounds):
        _, (rc, out, err) = pair(lab, a.server, a.client,
                                 "sudo -n ~/.cache/gpuclusterctl/bench-probe %s --rdma-server" % common,
                                 "sudo -n ~/.cache/gpuclusterctl/bench-probe %s --rdma-peer %s"
                                 % (common, a.peer))
        t = json.loads(out)["rdma_test"]
        if t["status"] != "ok":
            raise SystemExit("probe: %s" % t["reason"])
        res["probe_gbps"].append(t["bw_gbs"] * 8)
        res["probe_lat_us"].append(t["lat_us"])
        _, (rc, out, err) = pair(lab, a.server, a.client,
                                 "ib_write_bw %s -s %d -n %d --report_gbits -F" % (pf, size, a.iters),
                                 "ib_write_bw %s -s %d -n %d --report_gbits -F %s"
                                 % (pf, size, a.iters, a.peer))
        # " #bytes #iterations BW peak[Gb/sec] BW average[Gb/sec] MsgRate[Mpps]"
        m = re.search(r"^\s*%d\s+%d\s+\S+\s+(\S+)" % (size, a.iters), out, re.M)
        if not m:
            raise SystemExit("ib_write_bw printed no result:\n" + out + err)
        res["perftest_gbps"].append(float(m.group(1)))
        _, (rc, out, err) = pair(lab, a.server, a.client,
                                 "ib_write_lat %s -s 64 -n 1000 -F" % pf,
                                 "ib_write_lat %s -s 64 -n 1000 -F %s" % (pf, a.peer))
        # " #bytes #iterations t_min[usec] t_max[usec] t_typical[usec] ..."
        m = re.search(r"^\s*64\s+1000\s+\S+\s+\S+\s+(\S+)", out, re.M)
        if not m:
            raise SystemExit("ib_write_lat printed no result:\n" + out + err)
        res["perftest_lat_us"].append(float(m.group(1)))
        print("round %d: probe %.4f Gb/s, ib_write_bw %.4f Gb/s; probe %.1f us round trip, "
              "ib_write_lat %.1f us typical" % (rnd + 1, res["probe_gbps"][-1],
                                                res["perftest_gbps"][-1], res["probe_lat_us"][-1],
                                                res["perftest_lat_us"][-1]))
    med = {k: statistics.median(v) for k, v in res.items()}
    print("median of %d: probe %.4f Gb/s, ib_write_bw %.4f Gb/s (ratio %.3f); probe %.1f us, "
          "ib_write_lat %.1f us; %d KiB x %d writes" % (
              a.rounds, med["probe_gbps"], med["perftest_gbps"],
              med["probe_gbps"] / med["perftest_gbps"], med["probe_lat_us"],
              med["perftest_lat_us"], a.msg_kib, a.iters))


if __name__ == "__main__":
    main()
