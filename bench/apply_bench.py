#!/usr/bin/python3
"""Apply benchmark: gpuclusterctl vs Ansible on the same simulated hosts.

    bench/apply_bench.py [--hosts 64] [--rtt-ms 50] [--reboot-seconds 2]
                         [--forks 5,50] [--runs 5] [--kex LIST]
                         [--bin build/src/cli/gpuclusterctl]

1. Writes a spec of N ESXi hosts like examples/roce-passthrough.yaml (one
   V100 passed through, one ConnectX-5 with 4 VFs, NTP; rolling.max_unavailable
   N, so the planner puts every host in one wave) and starts a lab for it
   (scripts/lab.sh start --spec) with `rtt_ms` paid once by every exec (one
   SSH round trip: docs/lab.md) and a simulated reboot of --reboot-seconds,
   which gpuclusterctl polls every 100 ms (GC_REBOOT_POLL_MS, a test hook:
   --bin must be a build with the tests, as build/ is); a rebooting
   host's connections are reset before the SSH banner, as a real host that
   is down takes none (tests/sim/downgate.c, docs/lab.md).  The lab sshd
   offers the key exchanges of an ESXi host whose SSH runs in its FIPS
   140-2 mode (--kex, default FIPS_KEX: NIST ECDH and Diffie-Hellman, no
   curve25519; '' for OpenSSH's defaults): OpenSSH computes curve25519
   with code of its own, 2.4 ms of the lab sshd's CPU a connection more
   than P-256 from OpenSSL on the project's 2-core machine, CPU that a real
   host spends on its own cores.  gpuclusterctl and Ansible's ssh then
   negotiate ecdh-sha2-nistp256, as with such a host.
2. gpuclusterctl, --runs times on a reset lab (median and min-max of
   each figure): a live `plan --json`, then `apply`, timed, with its CPU
   (user + system, from wait4) and the lab's (the lab sshd and the
   simulator server, each moved into a cgroup of its own, so that every
   process under them counts: LabCPU): the simulated hosts must cost less
   than the tool for the figure to measure the tool.  The lab's files are
   on a tmpfs (/dev/shm) where there is one (--lab-parent).
3. The latency floor, from each host's command log: (its execs, less the
   reboot polls) x RTT + its reboots x the simulated reboot time; hosts are
   independent and in one wave, so the floor is the slowest host's.  No
   executor that sends those execs one after another can be faster.
   Ratio = apply wall / floor.
4. Execs per host (every exec is one line of the host's command log) and
   connections per host (the lab sshd's log: the connections sshd took,
   not the reboot polls reset before it saw them).  Where the wall goes over
   the floor: each host's execs are stamped to the millisecond as they
   reach it, so the time from one to the next splits the wall into
   stretches (start to observation, observation to change, ..., the last
   exec to apply's exit) that add up to it, each set against what the floor
   allows it; shown for the host that finished last and for the median host.
5. Ansible (Debian's ansible-core, `raw` module, default linear strategy)
   drives the same changing commands against the same hosts, reset to
   factory state, for each --forks; the reboot is a `raw` reboot followed by
   a pause and a retried `raw` (the hosts run no Python for
   wait_for_connection).  Wall and CPU (ansible-playbook and its children).

Prints a Markdown table for docs/benchmarks.md.
"""
import argparse
import calendar
import contextlib
import glob
import json
import os
import re
import resource
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


def read_text(path, missing=None):
    """A file's text (undecodable bytes replaced), closed again; missing
    when it does not exist and missing is not None."""
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        if missing is None:
            raise
        return missing


def read_lines(path):
    """A file's lines, kept ends; [] when it does not exist."""
    return read_text(path, "").splitlines(keepends=True)


def addr_of(i):
    """127.0.0.11... then 127.0.1.11...: 200 hosts per /24, all on loopback."""
    return "127.0.%d.%d" % (i // 200, 11 + i % 200)


def spec_text(n):
    out = ["apiVersion: gpuclusterctl/v1", "kind: Cluster", "metadata: {name: applybench}",
           "credentials:", "  - {name: esxi-root, username: root, password_env: GC_ESXI_PASSWORD}",
           "rolling: {max_unavailable: %d}" % n, "hosts:"]
    for i in range(n):
        out += ["  - name: esx%02d" % (i + 1), "    address: %s" % addr_of(i),
                "    credentials: esxi-root", '    version: "8.0.2"', "    ntp: [ntp1.lab.example]",
                '    gpus: [{pci: "0000:3b:00.0", model: V100-32GB, mode: passthrough}]',
                '    nics: [{pci: "0000:5e:00.0", model: ConnectX-5, device: vmnic4, mode: sriov, vfs: 4}]']
    return "\n".join(out) + "\n"


def sh(argv, env, **kw):
    return subprocess.run(argv, env=env, capture_output=True, text=True, **kw)


def set_controls(lab, hosts, rtt, reboot):
    user = read_text(os.path.join(lab, "user")).strip()
    for h in hosts:
        p = os.path.join(lab, "hosts", h, "control.json")
        with open(p, "w") as f:
            json.dump({"rtt_ms": rtt, "reboot_seconds": reboot}, f)
        shutil.chown(p, user=user)


POLLS = ("vmware -v", "esxcli system stats uptime get")
# A reboot poll that carries the read-back behind its guard (include/gc/
# esxi.h gc_esxi_script_guarded): the read-back when the guard let it run,
# which the host's commands.log shows (its first section's marker, same
# token), else a poll.
GUARDED = re.compile(r"^echo @@gc:([A-Za-z0-9]+):up; ")


def readback_tokens(lab, h):
    """The tokens of the guarded polls whose read-back ran on host h."""
    p = os.path.join(lab, "hosts", h, "commands.log")
    if not os.path.exists(p):
        return set()
    return set(re.findall(r"echo @@gc:([A-Za-z0-9]+):1; ", read_text(p, "")))


def is_poll(cmd, ran):
    """A reboot poll, not one of the execs the floor counts (ran:
    readback_tokens)."""
    m = GUARDED.match(cmd)
    return cmd in POLLS or (m is not None and m.group(1) not in ran)


# Where a host's wall goes: its execs' arrivals at the simulated host (each
# line of execs.log is stamped to the millisecond as the session starts,
# before the round trip's sleep), so the time from one exec's arrival to the
# next is that exec's round trip, what gpuclusterctl does in between, and
# the next session's start.  Each stretch is named after the exec that
# opens it; what the latency floor allows it:
STRETCHES = (
    ("start", "apply starts -> its observation reaches the host (start, spec, connection)", 0),
    ("observe", "observation -> first change (its round trip; every host observed; the plan)", 1),
    ("change", "changes -> reboot (their round trips)", 1),
    ("reboot", "reboot -> the poll that finds the host back (its round trip, the reboot, the poll's wait, a new connection)", 1),
    ("poll", "that poll -> verification (the poll's round trip, outside the floor)", 0),
    ("verify", "verification -> apply exits (its round trip, the end)", 1),
)


def stamp_time(stamp):
    """Seconds since the epoch of simlab.log_command's 2026-12-05T12:00:00.123Z."""
    return calendar.timegm(time.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S")) + int(stamp[20:23]) / 1000.0


def stretches(lab, hosts, since, t0, t1, rtt, reboot_s):
    """{host: {stretch: (seconds, what the latency floor allows it)}} of one
    apply, from its hosts' exec logs.  A host's stretches add up to the
    apply's wall, their allowances to the host's floor."""
    allow = {k: n for k, _, n in STRETCHES}
    out = {}
    for h in hosts:
        lines = []
        with contextlib.suppress(FileNotFoundError), \
                open(os.path.join(lab, "hosts", h, "execs.log"), errors="replace") as f:
            lines = f.read().splitlines()[since[h]:]
        arrivals, after_reboot, ran = [], False, readback_tokens(lab, h)
        for i, line in enumerate(lines):
            stamp, _, cmd = line.partition(" ")
            if i == 0:
                kind = "observe"
            elif "system shutdown reboot" in cmd:
                kind, after_reboot = "reboot", True
            elif is_poll(cmd, ran):
                kind = "poll"
            else:
                kind = "verify" if after_reboot else "change"
            arrivals.append((stamp_time(stamp), kind))
        # "_last": when its last exec arrived (not a stretch: the report's
        # last host is the one whose last exec arrived last)
        got = {"start": [(arrivals[0][0] if arrivals else t1) - t0, 0.0],
               "_last": arrivals[-1][0] if arrivals else t0}
        for i, (t, kind) in enumerate(arrivals):
            nxt = arrivals[i + 1][0] if i + 1 < len(arrivals) else t1
            took = got.setdefault(kind, [0.0, 0.0])
            took[0] += nxt - t
            took[1] += allow[kind] * rtt + (reboot_s if kind == "reboot" else 0.0)
        out[h] = got
    return out


def log_lengths(lab, hosts):
    out = {}
    for h in hosts:
        p = os.path.join(lab, "hosts", h, "execs.log")
        out[h] = len(read_lines(p))
    return out


def execs_since(lab, hosts, since):
    """{host: (execs, polls, reboots)} from each host's exec log (one line an exec)."""
    out = {}
    for h in hosts:
        p = os.path.join(lab, "hosts", h, "execs.log")
        lines = read_text(p, "").splitlines()[since[h]:]
        cmds, ran = [l.partition(" ")[2] for l in lines], readback_tokens(lab, h)
        out[h] = (len(cmds), sum(1 for c in cmds if is_poll(c, ran)),
                  sum(1 for c in cmds if "system shutdown reboot" in c))
    return out


def proc_cpu(pid, reaped=True):
    """CPU seconds of a process and (reaped) of the children it reaped
    (/proc/PID/stat)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rpartition(")")[2].split()
    except (OSError, ValueError):
        return 0.0
    # after the command name: state is field 3, utime 14 .. cstime 17 (proc(5))
    return sum(int(x) for x in fields[11:15 if reaped else 13]) / os.sysconf("SC_CLK_TCK")


def parents():
    """{pid: parent pid} of every process (/proc)."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as f:
                fields = f.read().rpartition(")")[2].split()
        except OSError:
            continue
        if len(fields) > 1:
            out[int(name)] = int(fields[1])
    return out


def live_children(pid):
    """The pids whose parent is pid."""
    return [p for p, pp in parents().items() if pp == pid]


def live_descendants(pid):
    """Every process under pid: the simulator server's forkers and their
    workers, which run sessions one after another and live as long as their
    forker (what each reaped is in its cutime)."""
    kids = {}
    for p, pp in parents().items():
        kids.setdefault(pp, []).append(p)
    out, todo = [], list(kids.get(pid, []))
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def sshd_pid_files(lab):
    """The pid files of the lab sshd's listeners: sshd.pid, sshd.2.pid ..."""
    return ["sshd.pid"] + sorted(os.path.basename(p) for p in glob.glob(os.path.join(lab, "sshd.[0-9]*.pid")))


def lab_cpu(lab, which=("simd/pid", "sshd.pid")):
    """The simulated side: the simulator server (its master, the forkers it
    keeps and their workers, with what each reaped) and the lab sshd (every
    listener on the lab's port: sshd.pid, sshd.2.pid ...)."""
    total = 0.0
    files = []
    for f in which:
        files.append(f)
        if f == "sshd.pid":
            files += sshd_pid_files(lab)[1:]
    for f in files:
        try:
            pid = int(read_text(os.path.join(lab, f)).split()[0])
        except (OSError, ValueError, IndexError):
            continue
        total += proc_cpu(pid)
        if f.startswith("simd/"):
            total += sum(proc_cpu(k) for k in live_descendants(pid))
    return total


def lab_pids(lab, which):
    """The live processes of one side of the lab: "sshd" (every listener on
    the lab's port and the connection and session processes under them) or
    "sim" (the simulator server's master, forkers and workers)."""
    files = sshd_pid_files(lab) if which == "sshd" else ["simd/pid"]
    out = []
    for f in files:
        try:
            pid = int(read_text(os.path.join(lab, f)).split()[0])
        except (OSError, ValueError, IndexError):
            continue
        out += [pid] + live_descendants(pid)
    return out


def cgroup_base():
    """(directory under which this process may make cgroups, "v2" | "v1"):
    its own cgroup in the cgroup2 hierarchy, else in cgroup v1's cpuacct
    one; (None, None) where neither is mounted."""
    mounts = {}
    with open("/proc/mounts") as f:
        for line in f:
            dev, where, fstype, opts = line.split()[:4]
            if fstype == "cgroup2":
                mounts.setdefault("v2", where)
            elif fstype == "cgroup" and "cpuacct" in opts.split(","):
                mounts.setdefault("v1", where)
    with open("/proc/self/cgroup") as f:
        own = [l.rstrip("\n").split(":", 2) for l in f]
    for kind in ("v2", "v1"):
        if kind not in mounts:
            continue
        for _, ctrls, path in own:
            if (kind == "v2" and ctrls == "") or (kind == "v1" and "cpuacct" in ctrls.split(",")):
                return os.path.join(mounts[kind], path.lstrip("/")), kind
    return None, None


class LabCPU:
    """The simulated hosts' CPU, side by side: the lab sshd's and the
    simulator server's, each moved into a cgroup of its own once the lab
    is up, so that every process they start counts (cpu.stat's usage_usec
    in cgroup v2, cpuacct.usage in v1), however it ends and whoever reaps
    it.  The figures read before from /proc (each listener's own and reaped
    children's times) missed much of the lab sshd's: on the project's
    2-core machine, 0.67 s of the lab sshd's CPU in a 64-host apply where
    `perf record -a` sampled 1.15 s in processes named sshd.  Where no cgroup
    can be made (not root, none mounted) it falls back to /proc's figures,
    and says that they are a lower bound."""

    def __init__(self, lab):
        self.lab, self.groups = lab, {}
        base, self.kind = cgroup_base()
        if base is None:
            return
        try:
            for side in ("sshd", "sim"):
                path = os.path.join(base, "gc-applybench-%d-%s" % (os.getpid(), side))
                os.makedirs(path, exist_ok=True)
                self.groups[side] = path
                self.adopt(side)
            self.read()  # a kernel whose cgroup2 has no cpu.stat usage_usec: /proc
        except (OSError, KeyError, ValueError):
            self.close()
            self.groups, self.kind = {}, None

    def adopt(self, side):
        """Move the side's processes into its cgroup (again after a restart)."""
        for pid in lab_pids(self.lab, side):
            with contextlib.suppress(ProcessLookupError):
                with open(os.path.join(self.groups[side], "cgroup.procs"), "w") as f:
                    f.write("%d\n" % pid)

    def exact(self):
        return bool(self.groups)

    def read(self):
        """{"sshd": CPU seconds, "sim": CPU seconds} so far."""
        if not self.groups:
            return {"sshd": lab_cpu(self.lab, ("sshd.pid",)), "sim": lab_cpu(self.lab, ("simd/pid",))}
        out = {}
        for side, path in self.groups.items():
            if self.kind == "v2":
                with open(os.path.join(path, "cpu.stat")) as f:
                    usec = dict(l.split() for l in f)["usage_usec"]
                out[side] = int(usec) / 1e6
            else:
                with open(os.path.join(path, "cpuacct.usage")) as f:
                    out[side] = int(f.read()) / 1e9
        return out

    def close(self):
        """Remove the cgroups once the lab has stopped (a group that still
        holds a process stays)."""
        for path in self.groups.values():
            with contextlib.suppress(OSError):
                os.rmdir(path)


def queues(lab):
    """{("sshd"|"simd", pid): own CPU} of every process that takes the lab's
    connections or sessions one at a time: each sshd listener (it accepts
    and forks every connection in turn) and each simulator forker (it
    accepts and forks every session in turn).  The busiest one's CPU during
    an apply is time that a burst of sessions waits for in a queue however
    many cores the machine has."""
    out = {}
    for f in sshd_pid_files(lab):
        try:
            pid = int(read_text(os.path.join(lab, f)).split()[0])
        except (OSError, ValueError, IndexError):
            continue
        out[("sshd", pid)] = proc_cpu(pid, reaped=False)
    try:
        master = int(read_text(os.path.join(lab, "simd", "pid")).split()[0])
    except (OSError, ValueError, IndexError):
        return out
    # the master forks the forkers and waits; a server of one process (before
    # the forkers) is its own forker
    for pid in live_children(master) or [master]:
        out[("simd", pid)] = proc_cpu(pid, reaped=False)
    return out


def busiest(before, after, kind):
    """(the busiest queue's CPU seconds, how many queues) of one kind."""
    d = [after[k] - before.get(k, 0.0) for k in after if k[0] == kind]
    return (max(d) if d else 0.0, len(d))


def close_ansible_masters():
    """Ansible keeps its SSH connections open (ControlPersist): close them, so
    the lab sshd reaps their sessions and counts their CPU."""
    subprocess.run(["pkill", "-f", r"^ssh: .*\.ansible/cp/"], capture_output=True)
    time.sleep(1.0)


def timed(argv, env, times=None):
    """(returncode, stdout, stderr, wall s); its CPU: ChildCPU around the call.
    times, a list, gets the start and end by the wall clock (the lab's logs'
    clock) appended."""
    t0 = time.time()
    p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = p.communicate()
    t1 = time.time()
    if times is not None:
        times += [t0, t1]
    # communicate() reaped it, so RUSAGE_CHILDREN now counts it and what it reaped
    return p.returncode, out, err, t1 - t0


class ChildCPU:
    def __enter__(self):
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.t0 = r.ru_utime + r.ru_stime
        return self

    def __exit__(self, *a):
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.cpu = r.ru_utime + r.ru_stime - self.t0


def connections_per_host(lab, since):
    counts = {}
    for line in read_lines(os.path.join(lab, "sshd.log"))[since:]:
        m = re.search(r"Connection from \S+ port \d+ on (127\.\d+\.\d+\.\d+) port", line)
        if m:
            counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    return counts


def ansible_run(lab, hosts, addrs, port, forks, env, reboot, labcpu, tty=True):
    inv = os.path.join(lab, "ansible-inventory.ini")
    user = read_text(os.path.join(lab, "user")).strip()
    with open(inv, "w") as f:
        f.write("[esxi]\n")
        for h, a in zip(hosts, addrs):
            f.write("%s ansible_host=%s ansible_port=%d ansible_user=%s\n" % (h, a, port, user))
        f.write("[esxi:vars]\nansible_ssh_private_key_file=%s\n" % os.path.join(lab, "client", "id_ed25519"))
        f.write("ansible_ssh_common_args='-o UserKnownHostsFile=%s -o StrictHostKeyChecking=yes'\n"
                % os.path.join(lab, "client", "known_hosts"))
        if not tty:
            # Ansible's raw asks for a terminal (ssh -tt), which labsshd
            # does not make, and ssh -tt fails without one: its ssh
            # plugin's documented use_tty option leaves -tt out
            f.write("ansible_ssh_use_tty=false\n")
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
    sim0 = sum(labcpu.read().values())
    with ChildCPU() as c:
        rc, out, err, wall = timed(["ansible-playbook", "-i", inv, "-f", str(forks), play],
                                   dict(env, ANSIBLE_HOST_KEY_CHECKING="True"))
    if rc != 0:
        sys.exit("ansible-playbook failed:\n" + out[-3000:] + err[-2000:])
    close_ansible_masters()
    return wall, c.cpu, sum(labcpu.read().values()) - sim0


def one_apply(args, lab, labspec, hosts, addrs, env, i, labcpu):
    """One gpuclusterctl apply on the reset lab: a live plan, then the apply
    timed, with the figures of it that the report needs."""
    state = os.path.join(lab, "state-%d" % i)
    r = sh([args.bin, "plan", "--json", "--state-dir", state, labspec], env)
    if r.returncode != 2:
        sys.exit("plan: exit %d\n%s" % (r.returncode, r.stderr))
    since = len(read_lines(os.path.join(lab, "sshd.log")))
    logs0 = log_lengths(lab, hosts)
    cmds0 = {h: len(read_lines(os.path.join(lab, "hosts", h, "commands.log"))) for h in hosts}
    cpu0, q0 = labcpu.read(), queues(lab)
    times = []
    with ChildCPU() as c:
        rc, out, err, wall = timed([args.bin, "apply", "--yes", "-v", "--parallelism",
                                    str(args.hosts), "--state-dir", state, labspec], env, times)
    q1 = queues(lab)
    time.sleep(1.0)  # the lab sshd reaps the sessions of the connections just closed
    cpu1 = labcpu.read()
    sshd_cpu = cpu1["sshd"] - cpu0["sshd"]
    sim_cpu = sshd_cpu + cpu1["sim"] - cpu0["sim"]
    if rc != 0:
        sys.exit("apply: exit %d\n%s\n%s" % (rc, out[-3000:], err[-3000:]))
    conns = connections_per_host(lab, since)
    ex = execs_since(lab, hosts, logs0)
    rtt = args.rtt_ms / 1000.0
    floors = {h: (n - polls) * rtt + reboots * args.reboot_seconds
              for h, (n, polls, reboots) in ex.items()}
    took = stretches(lab, hosts, logs0, times[0], times[1], rtt, args.reboot_seconds)
    phases = re.search(r"observe ([0-9.]+) s, apply ([0-9.]+) s, cluster lease ([0-9.]+) s", err)
    return {"wall": wall, "cpu": c.cpu, "sim_cpu": sim_cpu, "sshd_cpu": sshd_cpu, "ex": ex,
            "floors": floors, "floor": max(floors.values()), "stretches": took, "conns": [conns.get(a, 0) for a in addrs],
            "observe": float(phases.group(1)), "apply": float(phases.group(2)),
            "lease": float(phases.group(3)),
            "queue_sshd": busiest(q0, q1, "sshd"), "queue_simd": busiest(q0, q1, "simd"),
            "err": err, "t0": times[0],
            # the lab's logs of this run, for --keep-slow
            "sshd_log": read_lines(os.path.join(lab, "sshd.log"))[since:],
            "execs_logs": {h: read_lines(os.path.join(lab, "hosts", h, "execs.log"))[logs0[h]:]
                           for h in hosts},
            "cmds_logs": {h: read_lines(os.path.join(lab, "hosts", h, "commands.log"))[cmds0[h]:]
                          for h in hosts},
            "counters": [l for l in err.splitlines() if "changing commands" in l],
            "said": [l for l in err.splitlines()
                     if re.search(r"warning|retry|timed out|reset|error|come back \((?:[3-9]|\d\d+) s\)",
                                  l, re.I)]}


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def spread(xs, fmt="%.2f"):
    """median (min-max) of xs; the value alone for one run."""
    if len(xs) == 1:
        return fmt % xs[0]
    return (fmt + " (" + fmt + "-" + fmt + ")") % (median(xs), min(xs), max(xs))


def report_stretches(runs):
    """Where the wall went over the floor: for the host whose last exec
    reached it last (it holds the apply's end), and for every host."""
    crit, every = {}, {}
    for r in runs:
        st = r["stretches"]
        last = max(st, key=lambda h: st[h]["_last"])
        for kind, _, _ in STRETCHES:
            if kind in st[last]:
                took, allow = st[last][kind]
                crit.setdefault(kind, []).append(took - allow)
            over = [st[h][kind][0] - st[h][kind][1] for h in st if kind in st[h]]
            if over:
                every.setdefault(kind, []).append(median(over))
    print("\nwhere the wall goes over the floor, from each exec's arrival at its host"
          " (execs.log, to the ms): s over what the floor allows each stretch;"
          " the last host is the one whose last exec arrived last\n")
    print("| stretch | last host | every host, median |")
    print("|---|---:|---:|")
    for kind, what, _ in STRETCHES:
        if kind in crit:
            print("| %s | %s | %s |" % (what, spread(crit[kind]), spread(every.get(kind, [0.0]))))
    print("| **all** (wall - floor) | %s | |\n" % spread([r["wall"] - r["floor"] for r in runs]))
    first = [min(v["start"][0] for v in r["stretches"].values()) for r in runs]
    last = [max(v["start"][0] for v in r["stretches"].values()) for r in runs]
    print("the observations reached their hosts from %s s to %s s after apply started; no change"
          " goes out before the last is in and the plan is made" % (spread(first), spread(last)))


def server_name(args):
    return ("OpenSSH's sshd" if args.ssh_server == "openssh"
            else "labsshd (golang.org/x/crypto/ssh, one process)")


def report(args, runs, rows, labcpu=None):
    walls = [r["wall"] for r in runs]
    wall = median(walls)
    print("%d simulated hosts, %d ms per exec (round trip), %.1f s simulated reboot, "
          "the lab's SSH server %s, its key exchanges %s; gpuclusterctl %d run%s: median (min-max)\n"
          % (args.hosts, args.rtt_ms, args.reboot_seconds, server_name(args),
             "FIPS 140-2 (no curve25519)" if args.kex == FIPS_KEX else (args.kex or "OpenSSH's defaults"),
             len(runs), "" if len(runs) == 1 else "s"))
    print("| run | wall s | / gpuclusterctl | controller CPU s | simulated hosts' CPU s |")
    print("|---|---:|---:|---:|---:|")
    print("| gpuclusterctl apply --parallelism %d | %s | 1.00 | %s | %s |"
          % (args.hosts, spread(walls, "%.2f"), spread([r["cpu"] for r in runs]),
             spread([r["sim_cpu"] for r in runs])))
    for name, w, cpu, scpu in rows:
        print("| %s | %.1f | %.2f | %.2f | %.2f |" % (name, w, w / wall, cpu, scpu))
    last = runs[-1]
    slow = max(last["floors"], key=last["floors"].get)
    n, polls, reboots = last["ex"][slow]
    print("\nlatency floor %s s (last run: slowest host %s, %d execs less %d reboot polls x %d ms "
          "+ %d reboots x %.1f s); wall / floor = %s, apply phase / floor = %s"
          % (spread([r["floor"] for r in runs]), slow, n, polls, args.rtt_ms, reboots,
             args.reboot_seconds, spread([r["wall"] / r["floor"] for r in runs]),
             spread([r["apply"] / r["floor"] for r in runs])))
    per = sorted(n - p for r in runs for n, p, _ in r["ex"].values())
    print("execs per host besides reboot polls, all runs: min %d, median %d, max %d; reboot polls max %d"
          % (per[0], per[len(per) // 2], per[-1],
             max(p for r in runs for _, p, _ in r["ex"].values())))
    print("simulated hosts' CPU during gpuclusterctl's apply: %s s, of which the lab's SSH server "
          "(%s) %s s and the simulator server %s s (%s)"
          % (spread([r["sim_cpu"] for r in runs]),
             "every connection's and exec's sshd processes" if args.ssh_server == "openssh"
             else "labsshd, one process", spread([r["sshd_cpu"] for r in runs]),
             spread([r["sim_cpu"] - r["sshd_cpu"] for r in runs]),
             "each side in a cgroup of its own, cgroup %s" % labcpu.kind
             if labcpu is not None and labcpu.exact() else
             "from /proc, a lower bound: no cgroup could be made"))
    print("wall %s s = observe %s s + cluster lease (of its own) %s s + apply phase %s s"
          " + the rest (start, connections, plan) %s s"
          % (spread(walls), spread([r["observe"] for r in runs]), spread([r["lease"] for r in runs]),
             spread([r["apply"] for r in runs]),
             spread([r["wall"] - r["observe"] - r["lease"] - r["apply"] for r in runs])))
    if args.ssh_server == "openssh":
        print("the lab's queues during the apply (each accepts and forks in turn): the busiest of %d "
              "sshd listeners %s s of its own CPU, the busiest of %d simulator forkers %s s"
              % (last["queue_sshd"][1], spread([r["queue_sshd"][0] for r in runs]),
                 last["queue_simd"][1], spread([r["queue_simd"][0] for r in runs])))
    else:  # labsshd's own CPU is all of its CPU: no queue of its own to show
        print("the lab's queues during the apply (each accepts and forks in turn): the busiest of %d "
              "simulator forkers %s s of its own CPU"
              % (last["queue_simd"][1], spread([r["queue_simd"][0] for r in runs])))
    report_stretches(runs)
    print("connections per host during apply, all runs: min %d, max %d"
          % (min(min(r["conns"]) for r in runs), max(max(r["conns"]) for r in runs)))
    if last["counters"]:
        print("last run: " + last["counters"][0])
    # a run far slower than the others: what apply -v said of trouble in it
    for i, r in enumerate(runs):
        if r["wall"] > 1.5 * wall:
            print("run %d took %.2f s (median %.2f s); its warnings, retries and errors (%d lines):"
                  % (i + 1, r["wall"], wall, len(r["said"])))
            for line in r["said"][:40]:
                print("  " + line)
            if args.keep_slow:
                path = os.path.join(args.keep_slow, "apply-%d-hosts-run-%d.err" % (args.hosts, i + 1))
                with open(path, "w", encoding="utf-8") as f:
                    f.write("# apply started at %.6f (Unix time)\n" % r["t0"])
                    f.write(r["err"])
                with open(path[:-4] + ".lab", "w", encoding="utf-8") as f:
                    f.write("## the lab SSH server's log\n" + "".join(r["sshd_log"]))
                    for h in sorted(r["execs_logs"]):
                        f.write("## %s execs.log\n" % h + "".join(r["execs_logs"][h]))
                        f.write("## %s commands.log\n" % h + "".join(r["cmds_logs"][h]))
                print("  its whole apply -v output: %s; the lab's logs of it: %s" % (path, path[:-4] + ".lab"))


# The key exchanges of OpenSSH that FIPS 140-2 approves (curve25519 is not
# among them); the VMware vSphere 8 ESXi STIG (V-258732) requires the ESXi
# SSH daemon to use FIPS 140-2 validated cryptography.
FIPS_KEX = ("ecdh-sha2-nistp256,ecdh-sha2-nistp384,ecdh-sha2-nistp521,"
            "diffie-hellman-group-exchange-sha256,diffie-hellman-group16-sha512,"
            "diffie-hellman-group14-sha256")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", type=int, default=64)
    ap.add_argument("--rtt-ms", type=int, default=50)
    ap.add_argument("--reboot-seconds", type=float, default=2.0)
    ap.add_argument("--forks", default="5,50", help="Ansible's forks, comma-separated; '' for none")
    ap.add_argument("--runs", type=int, default=5, help="gpuclusterctl applies, each on a reset lab")
    ap.add_argument("--port", type=int, default=2330)
    ap.add_argument("--kex", default=FIPS_KEX,
                    help="the lab sshd's KexAlgorithms; '' for OpenSSH's defaults")
    ap.add_argument("--ssh-server", choices=("openssh", "go"), default="openssh",
                    help="the lab's SSH server: OpenSSH's sshd (default), or tests/sim/labsshd, "
                         "one process that costs the shared cores far less (GC_LAB_SSH_SERVER)")
    ap.add_argument("--lab-parent", default="/dev/shm" if os.path.isdir("/dev/shm") else "",
                    help="where the lab directory is made (default /dev/shm, a tmpfs; '' for $TMPDIR)")
    ap.add_argument("--keep-slow", default="",
                    help="a directory where the apply -v output of a run 1.5 times the median's wall is kept")
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "src", "cli", "gpuclusterctl"))
    args = ap.parse_args()
    if args.hosts > 1000:
        sys.exit("at most 1000 hosts (five /24s of loopback addresses)")
    # the lab's files (each simulated host's state, logs and lock) on a
    # tmpfs where there is one: every state the simulator writes is a new
    # file renamed over the old, and on the project's machine ext4's inode
    # allocation for those took a tenth of the simulator's CPU
    lab = tempfile.mkdtemp(prefix="gc-applybench-", dir=args.lab_parent or None)
    labcpu = None
    os.chmod(lab, 0o755)
    # a simulated reboot takes --reboot-seconds, not a real host's minutes:
    # poll every 100 ms (the default 2 s would add up to 2 s to a floor of
    # a few seconds; against a real reboot it is nothing)
    env = dict(os.environ, GC_LAB_DIR=lab, GC_REBOOT_POLL_MS="100", GC_LAB_KEX=args.kex,
               GC_LAB_SSH_SERVER=args.ssh_server)
    spec = os.path.join(lab, "bench-src.yaml")
    with open(spec, "w") as f:
        f.write(spec_text(args.hosts))
    try:
        r = sh([os.path.join(ROOT, "scripts", "lab.sh"), "start", "--spec", spec, "--port", str(args.port)], env)
        if r.returncode != 0:
            sys.exit(r.stderr)
        labspec = os.path.join(lab, "bench-src.yaml")
        labcpu = LabCPU(lab)
        hosts = ["esx%02d" % (i + 1) for i in range(args.hosts)]
        addrs = [addr_of(i) for i in range(args.hosts)]
        runs = []
        for i in range(args.runs):
            if i > 0:  # factory state again, and a state directory of its own
                sh([os.path.join(ROOT, "scripts", "lab.sh"), "reset"], env)
                labcpu.adopt("sshd")
                labcpu.adopt("sim")
            set_controls(lab, hosts, args.rtt_ms, args.reboot_seconds)
            runs.append(one_apply(args, lab, labspec, hosts, addrs, env, i, labcpu))
        rows = []
        if args.ssh_server == "go":
            print("Ansible with labsshd: ansible_ssh_use_tty=false (raw's ssh -tt wants a terminal, "
                  "which labsshd does not make)\n")
        if shutil.which("ansible-playbook"):
            for forks in (int(f) for f in args.forks.split(",") if f.strip()):
                sh([os.path.join(ROOT, "scripts", "lab.sh"), "reset"], env)
                labcpu.adopt("sshd")
                labcpu.adopt("sim")
                set_controls(lab, hosts, args.rtt_ms, args.reboot_seconds)
                w, cpu, scpu = ansible_run(lab, hosts, addrs, args.port, forks, env,
                                           args.reboot_seconds, labcpu,
                                           tty=args.ssh_server == "openssh")
                rows.append(("Ansible raw, linear, forks %d" % forks, w, cpu, scpu))
        report(args, runs, rows, labcpu)
    finally:
        sh([os.path.join(ROOT, "scripts", "lab.sh"), "stop"], env)
        if labcpu is not None:
            labcpu.close()
        shutil.rmtree(lab, ignore_errors=True)


if __name__ == "__main__":
    main()
