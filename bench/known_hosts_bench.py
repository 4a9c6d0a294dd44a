#!/usr/bin/python3
"""known_hosts benchmark: the controller's CPU per SSH connection against the
size of the known_hosts file.

    bench/known_hosts_bench.py [--bin build/src/cli/gpuclusterctl ...]
                               [--lines 0,1000,5000] [--runs 10] [--port 2331]

Starts a lab of 2 ESXi hosts (bench/apply_bench.py's spec, no injected
latency) and, for each --lines N, puts N lines of other hosts' keys in front
of the lab's own known_hosts (names 10.x.y.z and [10.x.y.z]:22, as a cluster
of N/2 hosts recorded by their two key types would), first plain, then
hashed by `ssh-keygen -H` (OpenSSH's HashKnownHosts, Debian's default for
~/.ssh/known_hosts).  Each run is a live `gpuclusterctl plan` (one
connection and one observation per host); the figure is the median over
--runs of the process's CPU (user + system, wait4) divided by its 2
connections, and the largest peak RSS of the runs.  --bin may be given
more than once (a build before and after a change); their runs alternate.
Prints a Markdown table for docs/benchmarks.md ("known_hosts").
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import apply_bench  # noqa: E402


def pad(own, n, hashed, work):
    keys = [line.split(" ", 1)[1] for line in own.splitlines() if line.strip()]
    out = []
    for i in range(n):
        host = "10.%d.%d.%d" % (i // 62500, (i // 250) % 250, i % 250 + 1)
        out.append("%s %s" % (host if i % 2 == 0 else "[%s]:22" % host, keys[i % len(keys)]))
    path = os.path.join(work, "kh-%d-%s" % (n, "hashed" if hashed else "plain"))
    with open(path, "w") as f:
        f.write("\n".join(out + own.splitlines()) + "\n")
    if hashed:
        subprocess.run(["ssh-keygen", "-q", "-H", "-f", path], check=True, capture_output=True)
    return path


def run_plan(binary, spec, env):
    """A live plan: (CPU seconds, peak RSS MiB) of the process (wait4)."""
    p = subprocess.Popen([binary, "plan", spec], env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    err = p.stderr.read()
    _pid, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode not in (0, 2):
        sys.exit("%s plan failed (%d): %s" % (binary, p.returncode, err.decode(errors="replace")))
    return ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", action="append")
    ap.add_argument("--lines", default="0,1000,5000")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--port", type=int, default=2331)
    args = ap.parse_args()
    bins = args.bin or [os.path.join(ROOT, "build", "src", "cli", "gpuclusterctl")]
    lab = tempfile.mkdtemp(prefix="gc-khbench-")
    os.chmod(lab, 0o755)
    env = dict(os.environ, GC_LAB_DIR=lab)
    spec = os.path.join(lab, "bench-src.yaml")
    with open(spec, "w") as f:
        f.write(apply_bench.spec_text(2))
    try:
        r = apply_bench.sh([os.path.join(ROOT, "scripts", "lab.sh"), "start", "--spec", spec,
                            "--port", str(args.port)], env)
        if r.returncode != 0:
            sys.exit(r.stderr)
        kh = os.path.join(lab, "client", "known_hosts")
        own = open(kh).read()
        rows = []
        for n in (int(x) for x in args.lines.split(",")):
            for hashed in ((False, True) if n else (False,)):
                path = pad(own, n, hashed, lab)
                cpu = {b: [] for b in bins}
                rss = {b: [] for b in bins}
                for _ in range(args.runs):
                    for b in bins:
                        shutil.copy(path, kh)
                        c, r = run_plan(b, spec, env)
                        cpu[b].append(c / 2)
                        rss[b].append(r)
                rows.append((n, "hashed" if hashed else "plain",
                             [statistics.median(cpu[b]) for b in bins],
                             [max(rss[b]) for b in bins]))
        with open(kh, "w") as f:
            f.write(own)
        head = " | ".join("ms per connection, %s" % os.path.relpath(b, ROOT) for b in bins)
        head += " | " + " | ".join("peak RSS MiB, %s" % os.path.relpath(b, ROOT) for b in bins)
        print("| other lines | form | %s |" % head)
        print("|---:|---|%s" % ("---:|" * 2 * len(bins)))
        for n, form, meds, peaks in rows:
            print("| %s | %s | %s | %s |" % ("{:,}".format(n), form,
                                             " | ".join("%.1f" % (m * 1000) for m in meds),
                                             " | ".join("%.1f" % p for p in peaks)))
    finally:
        apply_bench.sh([os.path.join(ROOT, "scripts", "lab.sh"), "stop"], env)
        shutil.rmtree(lab, ignore_errors=True)


if __name__ == "__main__":
    main()
