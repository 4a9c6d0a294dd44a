#!/usr/bin/python3
"""Tests of bench/apply_bench.py's reading of the lab's logs: the stretches
of one apply, from each host's execs.log, add up to the wall and their
allowances to the latency floor (docs/benchmarks.md, "Apply")."""
import contextlib
import io
import os
import shutil
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import apply_bench as ab  # noqa: E402

T0 = 1796472000.0  # 2026-12-05T12:00:00Z


def stamp(t):
    whole = int(t)
    return "%s.%03dZ" % (time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)),
                         int(round((t - whole) * 1000)))


class Stretches(unittest.TestCase):
    def setUp(self):
        self.lab = tempfile.mkdtemp(prefix="gc-bench-test-")
        self.addCleanup(shutil.rmtree, self.lab)

    def log(self, host, lines):
        d = os.path.join(self.lab, "hosts", host)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "execs.log"), "w") as f:
            for t, cmd in lines:
                f.write("%s %s\n" % (stamp(T0 + t), cmd))

    def test_one_host_adds_up(self):
        # an earlier apply's line, skipped by `since`
        self.log("esx01", [(-9.0, "old"),
                           (0.120, "batch observe"),
                           (0.400, "esxcli system maintenanceMode set -e true; x"),
                           (0.470, "esxcli system shutdown reboot -r gc"),
                           (2.600, "esxcli system stats uptime get"),
                           (2.700, "verify; esxcli system maintenanceMode set -e false")])
        got = ab.stretches(self.lab, ["esx01"], {"esx01": 1}, T0, T0 + 2.800, 0.05, 2.0)["esx01"]
        want = {"start": (0.120, 0.0), "observe": (0.280, 0.05), "change": (0.070, 0.05),
                "reboot": (2.130, 2.05), "poll": (0.100, 0.0), "verify": (0.100, 0.05)}
        self.assertAlmostEqual(got.pop("_last"), T0 + 2.700, places=6)
        self.assertEqual(sorted(got), sorted(want))
        for k, (took, allow) in want.items():
            self.assertAlmostEqual(got[k][0], took, places=6, msg=k)
            self.assertAlmostEqual(got[k][1], allow, places=6, msg=k)
        self.assertAlmostEqual(sum(v[0] for v in got.values()), 2.800, places=6)
        self.assertAlmostEqual(sum(v[1] for v in got.values()), 4 * 0.05 + 2.0, places=6)

    def test_a_guarded_poll_is_the_read_back_only_where_its_read_back_ran(self):
        # the poll that finds the host back carries the read-back behind its
        # guard: a1's guard found the host not yet rebooted (a poll), b2's
        # let the read-back run, as the host's commands.log shows
        guard = "; sh -c 'u=$(esxcli system stats uptime get) ...' up 123 || exit 0; echo @@gc:%s:1; vmware -v"
        self.log("esx01", [(0.120, "batch observe"),
                           (0.400, "esxcli system maintenanceMode set -e true; x"),
                           (0.470, "esxcli system shutdown reboot -r gc"),
                           (0.600, "echo @@gc:a1:up" + guard % "a1"),
                           (2.600, "echo @@gc:b2:up" + guard % "b2")])
        with open(os.path.join(self.lab, "hosts", "esx01", "commands.log"), "w") as f:
            f.write("%s esxcli system stats uptime get\n" % stamp(T0 + 0.6))
            f.write("%s esxcli system stats uptime get\n" % stamp(T0 + 2.6))
            f.write("%s echo @@gc:b2:1; vmware -v || echo @@gc:b2:failed; echo @@gc:b2:end\n"
                    % stamp(T0 + 2.6))
        got = ab.stretches(self.lab, ["esx01"], {"esx01": 0}, T0, T0 + 2.700, 0.05, 2.0)["esx01"]
        self.assertEqual({k: round(v[0], 3) for k, v in got.items() if k != "_last"},
                         {"start": 0.12, "observe": 0.28, "change": 0.07, "reboot": 0.13,
                          "poll": 2.0, "verify": 0.1})
        self.assertEqual(ab.execs_since(self.lab, ["esx01"], {"esx01": 0}), {"esx01": (5, 1, 1)})

    def test_report_names_the_host_that_finished_last(self):
        self.log("esx01", [(0.1, "obs"), (0.2, "chg"), (0.3, "esxcli system shutdown reboot"),
                           (2.4, "vmware -v"), (2.5, "verify")])
        self.log("esx02", [(0.12, "obs"), (0.3, "chg"), (0.5, "esxcli system shutdown reboot"),
                           (2.7, "vmware -v"), (2.8, "verify")])
        st = ab.stretches(self.lab, ["esx01", "esx02"], {"esx01": 0, "esx02": 0}, T0, T0 + 3.0,
                          0.05, 2.0)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            ab.report_stretches([{"stretches": st, "wall": 3.0, "floor": 2.2}])
        rows = [l for l in out.getvalue().splitlines() if l.startswith("| ") and "---" not in l]
        # esx02's read-back arrived last: its stretches less their allowances;
        # the median of two hosts is their mean
        self.assertEqual(rows[1:], [
            "| apply starts -> its observation reaches the host (start, spec, connection) | 0.12 | 0.11 |",
            "| observation -> first change (its round trip; every host observed; the plan) | 0.13 | 0.09 |",
            "| changes -> reboot (their round trips) | 0.15 | 0.10 |",
            "| reboot -> the poll that finds the host back (its round trip, the reboot, the poll's wait,"
            " a new connection) | 0.15 | 0.10 |",
            "| that poll -> verification (the poll's round trip, outside the floor) | 0.10 | 0.10 |",
            "| verification -> apply exits (its round trip, the end) | 0.15 | 0.30 |",
            "| **all** (wall - floor) | 0.80 | |"])
        # a host whose last exec is not a read-back (no reboot) still counts
        st["esx03"] = {"start": [0.1, 0.0], "observe": [2.85, 0.05], "_last": T0 + 2.95}
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            ab.report_stretches([{"stretches": st, "wall": 3.0, "floor": 2.2}])
        self.assertIn("| observation -> first change (its round trip; every host observed; the plan)"
                      " | 2.80 |", out.getvalue())
        self.assertIn("the observations reached their hosts from 0.10 s to 0.12 s after apply started",
                      out.getvalue())


# A stand-in for one side of the lab (the simulator server's master): it
# waits for a line on stdin, then starts a process that it never reaps, as
# a daemon's double fork leaves one, which spends BURN seconds of CPU and
# writes its own CPU time to the file named by argv[1] when done.
SIDE = r"""
import os, sys, time
sys.stdin.readline()
if os.fork() == 0:
    if os.fork() == 0:
        t = time.process_time()
        while time.process_time() - t < %(burn)s:
            pass
        with open(sys.argv[1] + ".tmp", "w") as f:
            f.write(str(time.process_time()))
        os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    os._exit(0)
os.wait()
sys.stdin.readline()
"""
BURN = 0.3


class LabCPUTest(unittest.TestCase):
    """LabCPU counts what a side of the lab starts whoever reaps it: the
    /proc figures it replaced (a process's own and reaped children's
    times) did not."""

    def test_a_process_the_side_never_reaps_counts(self):
        if os.geteuid() != 0 or ab.cgroup_base()[0] is None:
            self.skipTest("needs root and a cgroup filesystem (as CI has)")
        import subprocess
        lab = tempfile.mkdtemp(prefix="gc-bench-cg-")
        self.addCleanup(shutil.rmtree, lab)
        os.makedirs(os.path.join(lab, "simd"))
        done = os.path.join(lab, "burned")
        side = subprocess.Popen([sys.executable, "-c", SIDE % {"burn": BURN}, done],
                                stdin=subprocess.PIPE, text=True)
        self.addCleanup(side.wait)
        self.addCleanup(side.stdin.close)
        with open(os.path.join(lab, "simd", "pid"), "w") as f:
            f.write("%d\n" % side.pid)
        cpu = ab.LabCPU(lab)
        self.addCleanup(cpu.close)
        if not cpu.exact():
            self.skipTest("no cgroup could be made here")
        before, proc_before = cpu.read()["sim"], ab.lab_cpu(lab, ("simd/pid",))
        side.stdin.write("go\n")
        side.stdin.flush()
        for _ in range(200):
            if os.path.exists(done):
                break
            time.sleep(0.05)
        burned = float(open(done).read())
        time.sleep(0.1)  # the burner has exited
        got = cpu.read()["sim"] - before
        self.assertGreaterEqual(burned, BURN)
        self.assertGreaterEqual(got, burned * 0.95)
        self.assertLess(got, burned + 0.25)  # the burner, its parents, nothing else
        # what /proc's figures saw of it: nothing (reparented, never reaped by the side)
        self.assertLess(ab.lab_cpu(lab, ("simd/pid",)) - proc_before, 0.05)
        self.assertEqual(cpu.read()["sshd"], 0.0)  # the other side: no process in it
        side.stdin.write("end\n")
        side.stdin.flush()
        side.wait(timeout=10)
        cpu.close()  # its processes gone: the groups go
        self.assertFalse(any(os.path.isdir(p) for p in cpu.groups.values()))


if __name__ == "__main__":
    unittest.main()
