#!/usr/bin/python3
"""test_simd - the lab's simulator server changes nothing a client can see.

A real lab (scripts/lab.sh: OpenSSH sshd, tests/sim/simc.c as its
ForceCommand, tests/sim/simd.py as the lab user) is driven with OpenSSH's
ssh(1), every case twice: through the server, then with the server stopped
(simc falls back to one Python per exec, the lab's former way).  Exit
status, stdout, stderr and the command log must be identical, faults
included: a failing command, a dropped connection (drop_after), a host down
after its reboot, a simulator killed by a signal (kill_once), a command of
odd bytes.  And the server path must really be the server's: while a slow
command runs, it runs in a worker of one of simd's forkers, not a fresh
dispatch; sessions one after another reuse the workers, and a second pass
of every case through them answers as the first; a forker killed is
replaced, and none outlives the server.
Needs root (as CI) and openssh-server.  Port: 23900 + pid % 90.
"""

import json
import os
import signal
import shutil
import subprocess
import tempfile
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LAB_SH = os.path.join(ROOT, "scripts", "lab.sh")

CASES = [
    ("version", "127.0.0.11", "vmware -v", None),
    ("hostname", "127.0.0.12", "hostname", None),
    ("unknown", "127.0.0.11", "esxcli bogus namespace", None),
    ("odd bytes", "127.0.0.11", "echo 'a\tb' \"$HOME\" \\\\ \u00e9", None),
    ("state change", "127.0.0.12", "esxcli system maintenanceMode set -e true", None),
    ("fail_once", "127.0.0.11", "vmware -v",
     {"fail_once": {"match": "vmware -v", "message": "Error: injected",
                    "exit": 3}}),
    ("drop_after", "127.0.0.11", "vmware -v", {"drop_after": 0}),
    ("kill_once", "127.0.0.11", "vmware -v",
     {"kill_once": {"match": "vmware -v", "signal": 9}}),
    ("switch exec", "127.0.0.100", "show version", None),
]


def host_dir(lab, address):
    """The directory of the simulated host at address in lab's inventory."""
    with open(os.path.join(lab, "inventory"), encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if parts and parts[0] == address:
                return os.path.join(lab, "hosts", parts[2])
    raise AssertionError("no host at " + address)


def check_what_cases_show(test, seen):
    """What CASES are meant to show, so that "alike" is not "alike broken":
    seen[name] = (exit status, stdout, stderr, state)."""
    test.assertEqual(seen["version"][0], 0)
    test.assertIn(b"VMware ESXi", seen["version"][1])
    test.assertEqual(seen["hostname"][1], b"esxi-2\n")
    test.assertEqual(seen["fail_once"][:3], (3, b"", b"Error: injected\n"))
    test.assertEqual(seen["drop_after"][:2], (255, b""))
    test.assertEqual(seen["kill_once"][:2], (255, b""))
    test.assertTrue(seen["state change"][3]["maintenance"])


class SimServer(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="gc-simd-")
        os.chmod(cls.tmp, 0o755)
        cls.lab = os.path.join(cls.tmp, "lab")
        cls.port = 23900 + os.getpid() % 90
        cls.env = dict(os.environ, GC_LAB_DIR=cls.lab, GC_SIMD_FORKERS="2")
        subprocess.run([LAB_SH, "start", "--hosts", "2", "--switches", "1",
                        "--port", str(cls.port)], env=cls.env, check=True,
                       stdout=subprocess.DEVNULL)
        out = subprocess.run([LAB_SH, "env"], env=cls.env, check=True,
                             capture_output=True, text=True).stdout
        cls.labenv = {}
        for line in out.splitlines():
            name, _, value = line[len("export "):].partition("=")
            cls.labenv[name] = value.strip("'")

    @classmethod
    def tearDownClass(cls):
        subprocess.run([LAB_SH, "stop"], env=cls.env, stdout=subprocess.DEVNULL)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def ssh(self, address, command, timeout=30):
        e = self.labenv
        return subprocess.run(
            ["ssh", "-p", e["GC_LAB_PORT"], "-i", e["GC_LAB_KEY"],
             "-o", "UserKnownHostsFile=" + e["GC_LAB_KNOWN_HOSTS"],
             "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes",
             "-o", "LogLevel=ERROR", "%s@%s" % (e["GC_LAB_USER"], address), command],
            capture_output=True, timeout=timeout)

    def host_dir(self, address):
        return host_dir(self.lab, address)

    def simd_pid(self):
        try:
            with open(os.path.join(self.lab, "simd", "pid"), encoding="utf-8") as f:
                pid = int(f.read())
        except FileNotFoundError:
            return None
        return pid if os.path.exists("/proc/%d" % pid) else None

    @staticmethod
    def children(pid):
        out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)],
                             capture_output=True, text=True).stdout.split()
        return [int(k) for k in out]

    def stop_simd(self):
        pid = self.simd_pid()
        if pid:
            os.kill(pid, signal.SIGTERM)
            for _ in range(100):
                if not os.path.exists("/proc/%d" % pid):
                    break
                time.sleep(0.02)

    def reset(self):
        subprocess.run([LAB_SH, "reset"], env=self.env, check=True, stdout=subprocess.DEVNULL)

    def run_cases(self):
        seen = {}
        for name, address, command, control in CASES:
            if control:
                with open(os.path.join(self.host_dir(address), "control.json"), "w",
                          encoding="utf-8") as f:
                    json.dump(control, f)
            r = self.ssh(address, command)
            try:
                with open(os.path.join(self.host_dir(address), "state.json"), "rb") as f:
                    state = json.load(f)
            except FileNotFoundError:
                state = None
            seen[name] = (r.returncode, r.stdout, r.stderr, state)
        logs = {}
        for address in ("127.0.0.11", "127.0.0.12", "127.0.0.100"):
            path = os.path.join(self.host_dir(address), "commands.log")
            with open(path, encoding="utf-8") as f:
                # "<timestamp> <command>": the commands, in order
                logs[address] = [line.split(" ", 1)[1] for line in f]
        return seen, logs

    def test_server_and_fallback_answer_alike(self):
        self.assertIsNotNone(self.simd_pid(), "lab.sh start runs the simulator server")
        self.reset()
        served, served_logs = self.run_cases()
        # again, now that the forkers have workers that ran sessions before:
        # nothing a session left behind reaches the next
        self.reset()
        again, again_logs = self.run_cases()
        self.assertEqual(again, served)
        self.assertEqual(again_logs, served_logs)
        self.stop_simd()
        self.assertIsNone(self.simd_pid())
        left = subprocess.run(["pgrep", "-f", "simd.py " + os.path.join(self.lab, "simd")],
                              capture_output=True, text=True).stdout
        self.assertEqual(left, "", "the forkers end with the server")
        self.reset()
        fallback, fallback_logs = self.run_cases()
        for name, _, _, _ in CASES:
            self.assertEqual(served[name], fallback[name], name)
        self.assertEqual(served_logs, fallback_logs)
        check_what_cases_show(self, served)
        # lab.sh start brings the server back
        subprocess.run([LAB_SH, "start", "--hosts", "2", "--switches", "1",
                        "--port", str(self.port)], env=self.env, check=True,
                       stdout=subprocess.DEVNULL)
        self.assertIsNotNone(self.simd_pid())

    def test_a_forker_that_dies_is_replaced(self):
        pid = self.simd_pid()
        self.assertIsNotNone(pid)
        forkers = self.children(pid)
        self.assertEqual(len(forkers), 2)
        os.kill(forkers[0], signal.SIGKILL)
        now = forkers
        for _ in range(100):
            time.sleep(0.05)
            now = self.children(pid)
            if len(now) == 2 and forkers[0] not in now:
                break
        self.assertEqual(len(now), 2, "the master starts another forker")
        self.assertNotIn(forkers[0], now)
        self.assertIn(forkers[1], now, "the other forker goes on")
        for _ in range(4):
            r = self.ssh("127.0.0.11", "vmware -v")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn(b"VMware ESXi", r.stdout)
        self.assertEqual(subprocess.run(["pgrep", "-f", "tests/sim/dispatch"],
                                        capture_output=True).stdout, b"",
                         "served by the server, not the fallback")

    def workers(self):
        """{worker pid: what its stdout is}: the forkers' children."""
        pid = self.simd_pid()
        out = {}
        for f in self.children(pid):
            for w in self.children(f):
                try:
                    out[w] = os.readlink("/proc/%d/fd/1" % w)
                except OSError:
                    pass
        return out

    def test_a_session_runs_in_a_worker_of_a_forker(self):
        pid = self.simd_pid()
        self.assertIsNotNone(pid)
        with open(os.path.join(self.host_dir("127.0.0.11"), "control.json"), "w",
                  encoding="utf-8") as f:
            json.dump({"latency_ms": 1500}, f)
        e = self.labenv
        p = subprocess.Popen(
            ["ssh", "-p", e["GC_LAB_PORT"], "-i", e["GC_LAB_KEY"],
             "-o", "UserKnownHostsFile=" + e["GC_LAB_KNOWN_HOSTS"], "-o", "BatchMode=yes",
             "%s@127.0.0.11" % e["GC_LAB_USER"], "vmware -v"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        log = os.path.join(self.lab, "simd.log")
        busy = []
        for _ in range(50):
            time.sleep(0.05)
            # a worker between sessions writes to the server's log; the one
            # in this session, to its sshd
            busy = [w for w, out in self.workers().items() if out != log]
            if busy:
                break
        out, _ = p.communicate(timeout=30)
        os.unlink(os.path.join(self.host_dir("127.0.0.11"), "control.json"))
        self.assertEqual(p.returncode, 0)
        self.assertIn(b"VMware ESXi", out)
        self.assertEqual(len(self.children(pid)), 2, "the forkers the server was asked for")
        self.assertEqual(len(busy), 1, "one worker runs the session while the command runs")
        dispatches = subprocess.run(["pgrep", "-f", "tests/sim/dispatch"],
                                    capture_output=True).stdout
        self.assertEqual(dispatches, b"", "no fresh Python dispatcher")

    def test_sessions_one_after_another_reuse_the_workers(self):
        self.assertIsNotNone(self.simd_pid())
        seen = set()
        for i in range(8):
            r = self.ssh("127.0.0.1%d" % (1 + i % 2), "hostname")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout, b"esxi-%d\n" % (1 + i % 2))
            seen |= set(self.workers())
        # one session at a time needs one worker in each forker at most:
        # none was forked for a session of its own
        self.assertLessEqual(len(seen), 2, "workers seen over 8 sessions: %s" % sorted(seen))
        log = os.path.join(self.lab, "simd.log")
        self.assertEqual(set(self.workers().values()) - {log}, set(),
                         "idle workers write to the server's log, not a session's pipe")

    def test_a_dropped_session_keeps_its_worker(self):
        # drop_session() (every simulated reboot, the drop faults) kills the
        # session's sshd and ends the session, not the worker that ran it
        self.assertIsNotNone(self.simd_pid())
        control = os.path.join(self.host_dir("127.0.0.11"), "control.json")
        seen = set()
        try:
            for _ in range(6):
                with open(control, "w", encoding="utf-8") as f:
                    json.dump({"drop_after": 0}, f)
                r = self.ssh("127.0.0.11", "vmware -v")
                self.assertEqual((r.returncode, r.stdout), (255, b""), r.stderr)
                time.sleep(0.2)  # a worker that ended with it would be gone by now
                now = set(self.workers())
                self.assertTrue(now, "the worker of the dropped session lives on")
                seen |= now
        finally:
            if os.path.exists(control):  # a fault taken is gone from it
                os.unlink(control)
        r = self.ssh("127.0.0.11", "vmware -v")
        self.assertEqual(r.returncode, 0, r.stderr)
        seen |= set(self.workers())
        self.assertLessEqual(len(seen), 2, "workers seen over 7 sessions, 6 dropped: %s"
                             % sorted(seen))


class WorkerRetires(unittest.TestCase):
    """GC_SIMD_WORKER_SESSIONS: a worker ends after that many sessions and
    the next session gets a new one (one forker, so the count is exact)."""

    def test_a_worker_ends_after_its_sessions(self):
        tmp = tempfile.mkdtemp(prefix="gc-simd-retire-")
        os.chmod(tmp, 0o755)
        lab = os.path.join(tmp, "lab")
        env = dict(os.environ, GC_LAB_DIR=lab, GC_SIMD_FORKERS="1",
                   GC_SIMD_WORKER_SESSIONS="3")
        port = 23990 + os.getpid() % 9
        try:
            subprocess.run([LAB_SH, "start", "--hosts", "1", "--port", str(port)], env=env,
                           check=True, stdout=subprocess.DEVNULL)
            out = subprocess.run([LAB_SH, "env"], env=env, check=True, capture_output=True,
                                 text=True).stdout
            e = {}
            for line in out.splitlines():
                name, _, value = line[len("export "):].partition("=")
                e[name] = value.strip("'")
            with open(os.path.join(lab, "simd", "pid"), encoding="utf-8") as f:
                master = int(f.read())
            (forker,) = SimServer.children(master)
            seen = []
            for _ in range(7):
                r = subprocess.run(
                    ["ssh", "-p", e["GC_LAB_PORT"], "-i", e["GC_LAB_KEY"],
                     "-o", "UserKnownHostsFile=" + e["GC_LAB_KNOWN_HOSTS"], "-o", "BatchMode=yes",
                     "-o", "LogLevel=ERROR", "%s@127.0.0.11" % e["GC_LAB_USER"], "hostname"],
                    capture_output=True, timeout=30)
                self.assertEqual((r.returncode, r.stdout), (0, b"esxi-1\n"), r.stderr)
                for w in SimServer.children(forker):
                    if w not in seen:
                        seen.append(w)
            # sessions 1-3 in the first worker, 4-6 in a second, 7 in a third
            self.assertEqual(len(seen), 3, seen)
        finally:
            subprocess.run([LAB_SH, "stop"], env=env, stdout=subprocess.DEVNULL)
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
