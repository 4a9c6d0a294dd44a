#!/usr/bin/python3
"""Planning benchmark: load and plan time and peak memory for N-host specs.

For each size it generates a spec (bench/gen_spec.py), then times
`gpuclusterctl check` (load + every check), `gpuclusterctl plan --offline`
(the text plan) and `gpuclusterctl plan --offline --json` (load + graph +
plan + render, output to /dev/null) over several runs, and reports the
median wall time, the median CPU time (user + sys) and the peak RSS of the
child (wait4 rusage); --json / text is the ratio of the two plans' medians.
On a shared machine the CPU times move less than the wall times.  Prints a Markdown table for
docs/benchmarks.md, then the start-up table: the shared objects each
program maps (`ldd`) and the median wall of `check` on a one-host spec,
for the front binary and for gpuclusterctl-online beside it (src/cli/front.c).

    bench/plan_bench.py [--bin build/src/cli/gpuclusterctl] [--sizes 100,1000,10000] [--runs 5]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def run_once(argv):
    t0 = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, os.environ,
                         file_actions=[(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)])
    _, status, ru = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss, code


def measure(argv, runs, ok_codes, cpu_too=False):
    """Median wall (and, with cpu_too, median user+sys CPU) and the largest peak RSS."""
    walls, cpus, rss = [], [], 0
    for _ in range(runs):
        wall, cpu, maxrss, code = run_once(argv)
        if code not in ok_codes:
            sys.exit(f"bench: {' '.join(argv)} exited {code}")
        walls.append(wall)
        cpus.append(cpu)
        rss = max(rss, maxrss)
    if cpu_too:
        return statistics.median(walls), statistics.median(cpus), rss
    return statistics.median(walls), rss


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(HERE, "..", "build", "src", "cli", "gpuclusterctl"))
    ap.add_argument("--sizes", default="100,1000,10000")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    binary = os.path.abspath(args.bin)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in [int(s) for s in args.sizes.split(",")]:
            spec = os.path.join(tmp, f"spec-{n}.yaml")
            with open(spec, "w") as f:
                subprocess.run([sys.executable, os.path.join(HERE, "gen_spec.py"), str(n)],
                               stdout=f, check=True)
            size_mb = os.path.getsize(spec) / 1e6
            runs = args.runs if n < 10000 else max(3, args.runs // 2)
            load, _ = measure([binary, "check", spec], runs, {0})
            text, text_cpu, text_rss = measure([binary, "plan", "--offline", spec], runs, {2}, True)
            plan, plan_cpu, plan_rss = measure([binary, "plan", "--offline", "--json", spec], runs,
                                               {2}, True)
            rows.append((n, size_mb, load, text, text_cpu, text_rss, plan, plan_cpu, plan_rss))
    print("| hosts | spec MB | check (load) ms | plan (text) ms | plan --json ms | --json / text "
          "| CPU text ms | CPU --json ms | CPU --json / text | peak RSS text MiB | peak RSS --json MiB |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n, size_mb, load, text, text_cpu, text_rss, plan, plan_cpu, rss in rows:
        print(f"| {n:,} | {size_mb:.1f} | {load * 1e3:.1f} | {text * 1e3:.1f} | {plan * 1e3:.1f} | "
              f"{plan / text:.2f} | {text_cpu * 1e3:.1f} | {plan_cpu * 1e3:.1f} | "
              f"{plan_cpu / text_cpu:.2f} | {text_rss / 1024:.1f} | {rss / 1024:.1f} |")
    if len(rows) >= 2:
        for r1, r2 in zip(rows, rows[1:]):
            print(f"\nscaling {r1[0]:,} → {r2[0]:,} hosts: plan --json time × {r2[6] / r1[6]:.2f}")
    startup(binary, max(20, args.runs))
    return 0


NET_LIBS = ("libssh2", "libcurl", "libgnutls", "libvirt", "libkrb5", "libibverbs")


def startup(front, runs):
    """What an offline command costs before it does anything."""
    online = os.path.join(os.path.dirname(front), "gpuclusterctl-online")
    with tempfile.TemporaryDirectory() as tmp:
        spec = os.path.join(tmp, "spec-1.yaml")
        with open(spec, "w") as f:
            subprocess.run([sys.executable, os.path.join(HERE, "gen_spec.py"), "1"],
                           stdout=f, check=True)
        print("\n| program | shared objects mapped | network ones | check, 1 host (median of %d) |" % runs)
        print("|---|---:|---:|---:|")
        for name, path in (("gpuclusterctl (front)", front), ("gpuclusterctl-online", online)):
            if not os.path.exists(path):
                continue
            libs = [l.split()[0] for l in subprocess.run(["ldd", path], capture_output=True,
                                                          text=True, check=True).stdout.splitlines()]
            net = [l for l in libs if l.startswith(NET_LIBS)]
            wall, _ = measure([path, "check", spec], runs, {0})
            print(f"| {name} | {len(libs)} | {len(net)} | {wall * 1e3:.1f} ms |")


if __name__ == "__main__":
    sys.exit(main())
