#!/usr/bin/python3
"""vCenter observation benchmark: the inventory in pages, memory bounded by a page.

For each size it starts a private vcsim (tests/sim/vcsim.sh --paging, its
own lab dir in a temporary directory, loopback TLS) with `--vms N/2` (the
default model has two resource pools, so N VMs, 13 devices each, on 4
hosts), then runs bench/vcenter_observe.c (`vcenter_observe_bench`: one
connection, --runs observations) twice, each in a process of its own:
paged, as gc_vcenter_observe() asks (maxObjects 500), and unpaged
(--max-objects 0, one reply), then stops vcsim.  It prints each run's JSON
and a Markdown table for docs/benchmarks.md: wall, round trips, bytes, our
CPU, our peak RSS, the peak above the RSS after connecting, and what the
inventory records hold.  It fails when a paged observation does not take
one RetrievePropertiesEx plus one ContinueRetrievePropertiesEx per further
page of 500; an unpaged one that fails (a reply over the HTTPS layer's
64 MiB cap) is reported, not fatal.

    bench/vcenter_bench.py [--build-dir build] [--sizes 1000,10000,40000] [--runs 3] [--port 8968]

The build dir is configured and the target built when the program is
missing.  Timings are the simulator's XML encoding (and paging.go's cutting
of its reply into pages) plus our TLS read and libxml2 parse on this
machine; a real vCenter's will differ.  Run it under `nice -n 19` on a
shared machine.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
VCSIM = os.path.join(ROOT, "tests", "sim", "vcsim.sh")


def machine():
    model = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return f"nproc {os.cpu_count()}, CPU '{model}', load average {os.getloadavg()[0]:.2f}"


def build(build_dir):
    prog = os.path.join(build_dir, "bench", "vcenter_observe_bench")
    if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
        subprocess.run(["cmake", "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release"],
                       check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", build_dir, "--target", "vcenter_observe_bench"],
                   check=True, stdout=subprocess.DEVNULL)
    return prog


def vcsim(env, *args):
    return subprocess.run([VCSIM, *args], env=env, check=True, capture_output=True, text=True)


def observe(prog, lab, runs, max_objects):
    p = subprocess.run([prog, "--url", lab["GC_VCSIM_URL"],
                        "--ca-file", lab["GC_VCSIM_CA_FILE"],
                        "--username", lab["GC_VCSIM_USERNAME"],
                        "--password-file", lab["GC_VCSIM_PASSWORD_FILE"],
                        "--runs", str(runs)] +
                       ([] if max_objects is None else ["--max-objects", str(max_objects)]),
                       capture_output=True, text=True)
    if p.returncode != 0:
        return {"error": p.stderr.strip()}
    return json.loads(p.stdout)


def measure(prog, vms, runs, port, tmp):
    env = dict(os.environ, GC_VCSIM_DIR=os.path.join(tmp, f"vcsim-{vms}"),
               GC_VCSIM_START_S="1800")
    t0 = time.perf_counter()
    vcsim(env, "start", "--port", str(port), "--vms", str(vms // 2), "--paging")
    start_s = time.perf_counter() - t0
    try:
        lab = dict(line.split("=", 1) for line in vcsim(env, "env").stdout.split())
        paged = observe(prog, lab, runs, None)
        unpaged = observe(prog, lab, runs, 0)
    finally:
        vcsim(env, "stop")
    if "error" in paged:
        sys.exit(f"vcenter_bench: {vms} VMs paged: {paged['error']}")
    paged["vcsim_start_s"] = round(start_s, 1)
    if paged["vms"] != vms:
        sys.exit(f"vcenter_bench: asked for {vms} VMs, observed {paged['vms']}")
    # 4 hosts, 1 datacenter, 2 compute resources, 1 datastore, 3 networks, 1 switch
    pages = -(-(vms + 12) // paged["max_objects"])
    if (paged["round_trips"] != pages or paged["retrieve_properties_ex"] != 1 or
            paged["continue_retrieve_properties_ex"] != pages - 1):
        sys.exit(f"vcenter_bench: {vms} VMs took {paged['round_trips']} round trips, "
                 f"not {pages}")
    return paged, unpaged


def mb(kb):
    return kb / 1024


def row(r, mode):
    if "error" in r:
        return f"| {mode} | fails: {r['error']} |||||||||"
    above = r["rss_peak_kb"] - r["rss_connected_kb"]
    return (f"| {r['vms']:,} | {mode} | {r['round_trips']} | {r['bytes_received'] / 1e6:.1f} | "
            f"{r['ms_median']:,.0f} ({r['ms_min']:,.0f}–{r['ms_max']:,.0f}) | "
            f"{r['cpu_ms_median']:,.0f} | {mb(r['rss_peak_kb']):.0f} | {mb(above):.0f} | "
            f"{r['inventory_bytes'] / 1e6:.1f} ({r['inventory_bytes'] / r['vms']:,.0f}) | "
            f"{mb(above) - r['inventory_bytes'] / 2**20:.0f} |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--sizes", default="1000,10000,40000", help="VMs, even numbers")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--port", type=int, default=8968)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if any(n < 2 or n % 2 for n in sizes):
        sys.exit("vcenter_bench: sizes are even numbers of VMs (two resource pools)")
    prog = build(os.path.abspath(args.build_dir))
    rows = []
    print(f"machine: {machine()} at start", flush=True)
    with tempfile.TemporaryDirectory(prefix="gc-vcenter-bench-") as tmp:
        for n in sizes:
            paged, unpaged = measure(prog, n, args.runs, args.port, tmp)
            print(json.dumps(paged), flush=True)
            print(json.dumps(unpaged), flush=True)
            rows.append((paged, unpaged))
    print(f"machine: {machine()} at end\n")
    print("| VMs | pages | round trips | MB received | wall ms, median (min–max) | "
          "our CPU ms | peak RSS MB | peak above connected MB | inventory MB (bytes/VM) | "
          "peak above connected, less the inventory, MB |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for paged, unpaged in rows:
        print(row(paged, f"{paged['max_objects']} objects"))
        print(row(unpaged, "one reply") if "error" not in unpaged else
              f"| {paged['vms']:,} | one reply | fails: {unpaged['error']} ||||||||")
    return 0


if __name__ == "__main__":
    sys.exit(main())
