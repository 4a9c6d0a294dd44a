#!/usr/bin/python3
"""vCenter observation benchmark: one property-collector round trip for N VMs.

For each size it starts a private vcsim (tests/sim/vcsim.sh, its own lab dir
in a temporary directory, loopback TLS) with `--vms N/2` (the default model
has two resource pools, so N VMs, 13 devices each, on 4 hosts), runs
bench/vcenter_observe.c (`vcenter_observe_bench`: one connection, --runs
observations through gc_vcenter_observe()), stops vcsim and prints a Markdown
table for docs/benchmarks.md plus each run's JSON.  It fails when an
observation takes more than one round trip.

    bench/vcenter_bench.py [--build-dir build] [--sizes 100,1000,4000] [--runs 20] [--port 8968]

The build dir is configured and the target built when the program is
missing.  Timings are the simulator's XML encoding plus our TLS read and
libxml2 parse on this machine; a real vCenter's will differ.
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


def measure(prog, vms, runs, port, tmp):
    env = dict(os.environ, GC_VCSIM_DIR=os.path.join(tmp, f"vcsim-{vms}"))
    t0 = time.perf_counter()
    vcsim(env, "start", "--port", str(port), "--vms", str(vms // 2))
    start_s = time.perf_counter() - t0
    try:
        lab = dict(line.split("=", 1) for line in vcsim(env, "env").stdout.split())
        out = subprocess.run([prog, "--url", lab["GC_VCSIM_URL"],
                              "--ca-file", lab["GC_VCSIM_CA_FILE"],
                              "--username", lab["GC_VCSIM_USERNAME"],
                              "--password-file", lab["GC_VCSIM_PASSWORD_FILE"],
                              "--runs", str(runs)],
                             check=True, capture_output=True, text=True).stdout
    finally:
        vcsim(env, "stop")
    r = json.loads(out)
    r["vcsim_start_s"] = round(start_s, 1)
    if r["vms"] != vms:
        sys.exit(f"vcenter_bench: asked for {vms} VMs, observed {r['vms']}")
    if r["round_trips"] != 1 or r["retrieve_properties_ex"] != 1:
        sys.exit(f"vcenter_bench: {vms} VMs took {r['round_trips']} round trips")
    return r


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--sizes", default="100,1000,4000", help="VMs, even numbers")
    ap.add_argument("--runs", type=int, default=20)
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
            r = measure(prog, n, args.runs, args.port, tmp)
            print(json.dumps(r), flush=True)
            rows.append(r)
    print(f"machine: {machine()} at end\n")
    print(f"| VMs | hosts | devices per VM | round trips | HTTPS requests | reply MB | "
          f"min ms | median ms | max ms | our CPU ms (median) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['vms']:,} | {r['hosts']} | {r['devices_per_vm']:.0f} | {r['round_trips']} | "
              f"{r['https_requests']} | {r['bytes_received'] / 1e6:.2f} | {r['ms_min']:.0f} | "
              f"{r['ms_median']:.0f} | {r['ms_max']:.0f} | {r['cpu_ms_median']:.0f} |")
    for a, b in zip(rows, rows[1:]):
        print(f"\n{a['vms']:,} → {b['vms']:,} VMs: median time × "
              f"{b['ms_median'] / a['ms_median']:.1f}, reply × "
              f"{b['bytes_received'] / a['bytes_received']:.1f}; round trips 1 → 1")
    return 0


if __name__ == "__main__":
    sys.exit(main())
