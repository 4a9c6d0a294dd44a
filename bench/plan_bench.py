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

With --phases it prints the "Planning" table of docs/benchmarks.md instead:
`GC_PLAN_TIMING=1 gpuclusterctl plan --offline SPEC` run --runs times per
size, the median of each phase it reports (load, graph, plan, render), of
the whole process's wall time and CPU time (user + sys) and the largest
peak RSS.  --bin may be given
more than once (a build before and after a change): the builds' runs
alternate, so a machine that gets busier does not favour one of them.

    bench/plan_bench.py --phases --bin BEFORE/src/cli/gpuclusterctl --bin AFTER/src/cli/gpuclusterctl --sizes 1000,10000 --runs 3

--guests (with --phases): every VM also has a guest stage (gen_spec.py --guests).
"""
import re
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def run_once(argv, env=None, stderr=None):
    t0 = time.perf_counter()
    actions = [(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)]
    if stderr is not None:
        actions.append((os.POSIX_SPAWN_OPEN, 2, stderr, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))
    pid = os.posix_spawn(argv[0], argv, env if env is not None else os.environ,
                         file_actions=actions)
    _, status, ru = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss, code


TIMING = re.compile(r"timing: load ([0-9.]+) s, graph ([0-9.]+) s \(observe included\), "
                    r"plan ([0-9.]+) s, render ([0-9.]+) s; ([0-9]+) resources, ([0-9]+) actions")


def ms(seconds):
    return f"{seconds * 1e3:,.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def phases(binaries, sizes, runs, guests=False):
    """The Planning table: GC_PLAN_TIMING's phases, medians over runs, builds alternating;
    guests: every VM with a guest stage (gen_spec.py --guests)."""
    env = dict(os.environ, GC_PLAN_TIMING="1")
    print("| hosts | build | spec MB | resources | actions | load | graph | plan | render (text) "
          "| total | CPU | peak RSS |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            spec = os.path.join(tmp, f"spec-{n}.yaml")
            with open(spec, "w") as f:
                subprocess.run([sys.executable, os.path.join(HERE, "gen_spec.py")] +
                               (["--guests"] if guests else []) + [str(n)], stdout=f, check=True)
            got = {b: [] for b in binaries}
            for _ in range(runs):
                for b in binaries:
                    err = os.path.join(tmp, "stderr")
                    wall, cpu, rss, code = run_once([b, "plan", "--offline", spec], env, err)
                    if code != 2:
                        sys.exit(f"bench: {b} plan --offline {spec} exited {code}")
                    m = TIMING.search(open(err).read())
                    if m is None:
                        sys.exit(f"bench: {b} printed no GC_PLAN_TIMING line")
                    got[b].append([float(v) for v in m.groups()[:4]] + [wall, cpu, rss,
                                  int(m.group(5)), int(m.group(6))])
            for i, b in enumerate(binaries):
                rows = got[b]
                med = [statistics.median(r[j] for r in rows) for j in range(6)]
                name = os.path.basename(os.path.dirname(os.path.dirname(os.path.dirname(b)))) \
                    if len(binaries) > 1 else ""
                print(f"| {n:,} | {name} | {os.path.getsize(spec) / 1e6:.1f} | {rows[0][7]:,} | "
                      f"{rows[0][8]:,} | " + " | ".join(ms(v) for v in med) +
                      f" | {max(r[6] for r in rows) / 1024:.0f} MiB |")


class Wall(float):
    """A median wall time that keeps its runs' minimum and maximum."""
    def __new__(cls, walls):
        w = super().__new__(cls, statistics.median(walls))
        w.lo, w.hi = min(walls), max(walls)
        return w

    def ms(self):
        """ms, median (min-max)"""
        return f"{self * 1e3:.1f} ({self.lo * 1e3:.1f}-{self.hi * 1e3:.1f})"


def measure(argv, runs, ok_codes, cpu_too=False):
    """Median wall (a Wall: with min and max; and, with cpu_too, median
    user+sys CPU) and the largest peak RSS."""
    walls, cpus, rss = [], [], 0
    for _ in range(runs):
        wall, cpu, maxrss, code = run_once(argv)
        if code not in ok_codes:
            sys.exit(f"bench: {' '.join(argv)} exited {code}")
        walls.append(wall)
        cpus.append(cpu)
        rss = max(rss, maxrss)
    if cpu_too:
        return Wall(walls), statistics.median(cpus), rss
    return Wall(walls), rss


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", action="append")
    ap.add_argument("--phases", action="store_true",
                    help="the Planning table: GC_PLAN_TIMING's phases, --bin may repeat")
    ap.add_argument("--guests", action="store_true",
                    help="with --phases: every VM has a guest stage (gen_spec.py --guests)")
    ap.add_argument("--sizes", default="100,1000,10000")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    bins = [os.path.abspath(b) for b in (args.bin or [os.path.join(HERE, "..", "build", "src", "cli",
                                                                    "gpuclusterctl")])]
    if args.phases:
        phases(bins, [int(s) for s in args.sizes.split(",")], args.runs, args.guests)
        return 0
    if len(bins) > 1:
        sys.exit("bench: more than one --bin needs --phases")
    binary = bins[0]
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
            rows.append((n, size_mb, runs, load, text, text_cpu, text_rss, plan, plan_cpu, plan_rss))
    print("| hosts | spec MB | runs | check (load) ms | plan (text) ms | plan --json ms | --json / text "
          "| CPU text ms | CPU --json ms | CPU --json / text | peak RSS text MiB | peak RSS --json MiB |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n, size_mb, nruns, load, text, text_cpu, text_rss, plan, plan_cpu, rss in rows:
        print(f"| {n:,} | {size_mb:.1f} | {nruns} | {load.ms()} | {text.ms()} | {plan.ms()} | "
              f"{plan / text:.2f} | {text_cpu * 1e3:.1f} | {plan_cpu * 1e3:.1f} | "
              f"{plan_cpu / text_cpu:.2f} | {text_rss / 1024:.1f} | {rss / 1024:.1f} |")
    print("\n(wall: median (min-max) of the runs)")
    if len(rows) >= 2:
        for r1, r2 in zip(rows, rows[1:]):
            print(f"\nscaling {r1[0]:,} → {r2[0]:,} hosts, by the medians: plan (text) time × "
                  f"{r2[4] / r1[4]:.2f}, plan --json time × {r2[7] / r1[7]:.2f}")
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
