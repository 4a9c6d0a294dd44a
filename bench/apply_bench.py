#!/usr/bin/python3
"""Apply benchmark: gpuclusterctl vs Ansible on the same simulated hosts.

    bench/apply_bench.py [--hosts 64] [--latency-ms 50] [--bin build/src/cli/gpuclusterctl]

1. Writes a spec of N ESXi hosts like examples/roce-passthrough.yaml (one
   V100 passed through, one ConnectX-5 with 4 VFs, NTP; rolling.max_unavailable
   N, so the planner puts every host in one wave) and starts a lab for it
   (scripts/lab.sh start --spec) with `latency_ms` added to every remote
   command and a 2 s simulated reboot.
2. gpuclusterctl: a live `plan --json` (for the waves), then `apply`, timed.
   The critical-path time is computed from the journal: for each wave, the
   slowest host's sum of action durations (a host's actions are sequential,
   hosts are independent, waves are barriers): no executor can be faster.
   Ratio = apply wall time / critical-path time.
3. Connections per host, from the lab sshd's log ("Connection from ... on
   127.0.0.N").
4. Ansible (Debian's ansible-core, `raw` module, default linear strategy)
   drives the same command sequence against the same hosts, reset to factory
   state, with forks 5 and forks N; the reboot is a `raw` reboot followed
   by a pause and a retried `raw` (the hosts run no Python for wait_for_connection).

Prints a Markdown table for docs/benchmarks.md.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEQUENCE = [
    "esxcli system ntp set -e true -s ntp1.lab.example",
    "esxcli system maintenanceMode set -e true",
    "esxcli hardware pci pcipassthru set -d 0000:3b:00.0 -e true",
    "esxcli system module parameters set -m nmlx5_core -p 'max_vfs=4'",
    "esxcli system shutdown reboot -r gpuclusterctl",
    "esxcli system maintenanceMode set -e false",
]


def spec_text(n):
    out = ["apiVersion: gpuclusterctl/v1", "kind: Cluster", "metadata: {name: applybench}",
           "credentials:", "  - {name: esxi-root, username: root, password_env: GC_ESXI_PASSWORD}",
           "rolling: {max_unavailable: %d}" % n, "hosts:"]
    for i in range(n):
        out += ["  - name: esx%02d" % (i + 1), "    address: 127.0.0.%d" % (11 + i),
                "    credentials: esxi-root", '    version: "8.0.2"', "    ntp: [ntp1.lab.example]",
                '    gpus: [{pci: "0000:3b:00.0", model: V100-32GB, mode: passthrough}]',
                '    nics: [{pci: "0000:5e:00.0", model: ConnectX-5, device: vmnic4, mode: sriov, vfs: 4}]']
    return "\n".join(out) + "\n"


def sh(argv, env, **kw):
    return subprocess.run(argv, env=env, capture_output=True, text=True, **kw)


def set_controls(lab, hosts, latency, reboot):
    user = open(os.path.join(lab, "user")).read().strip()
    for h in hosts:
        p = os.path.join(lab, "hosts", h, "control.json")
        with open(p, "w") as f:
            json.dump({"latency_ms": latency, "reboot_seconds": reboot}, f)
        shutil.chown(p, user=user)


def connections_per_host(lab, since):
    counts = {}
    for line in open(os.path.join(lab, "sshd.log"), errors="replace").readlines()[since:]:
        m = re.search(r"Connection from \S+ port \d+ on (127\.0\.0\.\d+) port", line)
        if m:
            counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    return counts


def critical_path(plan, journal_path):
    """Sum over waves of the slowest target's summed action durations."""
    per_target = {}
    for rec in (json.loads(l) for l in open(journal_path)):
        if rec["kind"] in ("maintenance", "reboot_owed"):
            continue
        per_target.setdefault(rec["target"], []).append(rec)
    durations = {}
    for t, recs in per_target.items():
        starts = {}
        out = []
        for r in recs:
            if r["state"] == "start":
                starts[r["action"]] = r["ts"]
            elif r["state"] == "done":
                out.append(r["ts"] - starts.pop(r["action"]))
        durations[t] = out
    waves = {}
    for w in plan["waves"]:
        for t in w["targets"]:
            waves.setdefault(t["name"], []).extend([w["index"]] * len(t["actions"]))
    total = 0.0
    for w in sorted({x for ws in waves.values() for x in ws}):
        slowest = 0.0
        for t, ws in waves.items():
            d = durations.get(t, [])
            slowest = max(slowest, sum(d[i] for i, x in enumerate(ws) if x == w and i < len(d)))
        total += slowest
    return total


def ansible_run(lab, hosts, addrs, port, forks, env, reboot):
    inv = os.path.join(lab, "ansible-inventory.ini")
    user = open(os.path.join(lab, "user")).read().strip()
    with open(inv, "w") as f:
        f.write("[esxi]\n")
        for h, a in zip(hosts, addrs):
            f.write("%s ansible_host=%s ansible_port=%d ansible_user=%s\n" % (h, a, port, user))
        f.write("[esxi:vars]\nansible_ssh_private_key_file=%s\n" % os.path.join(lab, "client", "id_ed25519"))
        f.write("ansible_ssh_common_args='-o UserKnownHostsFile=%s -o StrictHostKeyChecking=yes'\n"
                % os.path.join(lab, "client", "known_hosts"))
    play = os.path.join(lab, "ansible-play.yml")
    tasks = ["    - raw: \"%s\"" % c for c in SEQUENCE[:4]]
    # the hosts run no Python (wait_for_connection needs it): pause for the
    # reboot, then retry a raw command until the host answers
    tasks += ["    - raw: \"%s\"\n      ignore_unreachable: true\n      ignore_errors: true" % SEQUENCE[4],
              "    - pause: {seconds: %d}" % (int(reboot) + 1),
              "    - raw: \"vmware -v\"\n      register: up\n      until: up is succeeded\n"
              "      retries: 120\n      delay: 1",
              "    - raw: \"%s\"" % SEQUENCE[5]]
    with open(play, "w") as f:
        f.write("- hosts: esxi\n  gather_facts: false\n  tasks:\n" + "\n".join(tasks) + "\n")
    t0 = time.time()
    r = sh(["ansible-playbook", "-i", inv, "-f", str(forks), play], dict(env, ANSIBLE_HOST_KEY_CHECKING="True"))
    wall = time.time() - t0
    if r.returncode != 0:
        sys.exit("ansible-playbook failed:\n" + r.stdout[-3000:] + r.stderr[-2000:])
    return wall


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", type=int, default=64)
    ap.add_argument("--latency-ms", type=int, default=50)
    ap.add_argument("--reboot-seconds", type=float, default=2.0)
    ap.add_argument("--port", type=int, default=2330)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "src", "cli", "gpuclusterctl"))
    args = ap.parse_args()
    lab = tempfile.mkdtemp(prefix="gc-applybench-")
    os.chmod(lab, 0o755)
    env = dict(os.environ, GC_LAB_DIR=lab)
    spec = os.path.join(lab, "bench-src.yaml")
    open(spec, "w").write(spec_text(args.hosts))
    try:
        r = sh([os.path.join(ROOT, "scripts", "lab.sh"), "start", "--spec", spec, "--port", str(args.port)], env)
        if r.returncode != 0:
            sys.exit(r.stderr)
        labspec = os.path.join(lab, "bench-src.yaml")
        hosts = ["esx%02d" % (i + 1) for i in range(args.hosts)]
        addrs = ["127.0.0.%d" % (11 + i) for i in range(args.hosts)]
        set_controls(lab, hosts, args.latency_ms, args.reboot_seconds)
        state = os.path.join(lab, "state")
        r = sh([args.bin, "plan", "--json", "--state-dir", state, labspec], env)
        if r.returncode != 2:
            sys.exit("plan: exit %d\n%s" % (r.returncode, r.stderr))
        plan = json.loads(r.stdout)
        since = len(open(os.path.join(lab, "sshd.log"), errors="replace").readlines())
        t0 = time.time()
        r = sh([args.bin, "apply", "--yes", "-v", "--parallelism", str(args.hosts), "--state-dir", state,
                labspec], env)
        wall = time.time() - t0
        if r.returncode != 0:
            sys.exit("apply: exit %d\n%s\n%s" % (r.returncode, r.stdout[-3000:], r.stderr[-3000:]))
        conns = connections_per_host(lab, since)
        cp = critical_path(plan, os.path.join(state, "applybench.journal"))
        counters = [l for l in r.stderr.splitlines() if "changing commands" in l]
        rows = [("gpuclusterctl apply --parallelism %d" % args.hosts, wall)]
        phases = re.search(r"observe ([0-9.]+) s, apply ([0-9.]+) s", r.stderr)
        observe_s, apply_s = float(phases.group(1)), float(phases.group(2))
        if shutil.which("ansible-playbook"):
            for forks in (5, args.hosts):
                sh([os.path.join(ROOT, "scripts", "lab.sh"), "reset"], env)
                set_controls(lab, hosts, args.latency_ms, args.reboot_seconds)
                rows.append(("Ansible raw, linear, forks %d" % forks,
                             ansible_run(lab, hosts, addrs, args.port, forks, env, args.reboot_seconds)))
        print("%d simulated hosts, %d ms added per remote command, %.1f s simulated reboot\n"
              % (args.hosts, args.latency_ms, args.reboot_seconds))
        print("| run | wall s | / gpuclusterctl |")
        print("|---|---:|---:|")
        for name, w in rows:
            print("| %s | %.1f | %.2f |" % (name, w, w / wall))
        print("\nwall %.1f s = observe %.2f s (one batch per host) + apply phase %.2f s + start/plan"
              % (wall, observe_s, apply_s))
        print("critical-path time of the plan (journal durations, waves as barriers): %.2f s; "
              "apply phase / critical path = %.2f" % (cp, apply_s / cp))
        print("connections per host during apply: min %d, max %d (1 + reconnects after the reboot)"
              % (min(conns.get(a, 0) for a in addrs), max(conns.get(a, 0) for a in addrs)))
        if counters:
            print(counters[0])
    finally:
        sh([os.path.join(ROOT, "scripts", "lab.sh"), "stop"], env)
        shutil.rmtree(lab, ignore_errors=True)


if __name__ == "__main__":
    main()
