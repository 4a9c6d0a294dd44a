"""labtest - shared fixture of the end-to-end tests: a private lab per test
class (its own GC_LAB_DIR and port, started with `scripts/lab.sh start
--spec`), the real gpuclusterctl binary, and readers for what the simulated
hosts received and hold.

Everything a test asserts comes from outside the tool: the exit status, what
it printed, the simulator's command log and state files.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("GC_BIN", os.path.join(ROOT, "build", "src", "cli", "gpuclusterctl"))
LAB = os.path.join(ROOT, "scripts", "lab.sh")
OBSERVE_MARK = "@@gc:"


LEASE_OPTION = "/UserVars/GpuclusterctlLease"

# The ESXi driver's execs that carry several commands (src/drivers/esxi/
# batch.c): a batch of changes, `echo @@gc:<token>:c0 && CMD0 && echo
# @@gc:<token>:c1 && CMD1 ... && echo @@gc:<token>:end` (before a reboot its
# last command reads the uptime).
CHANGE_BATCH = re.compile(r"^echo @@gc:[A-Za-z0-9]+:c0 && ")


def observation(line):
    """True for commands that change no configuration: observation batches,
    reboot polls, and the cluster lease's bookkeeping."""
    return (OBSERVE_MARK in line or line in ("vmware -v", "esxcli system stats uptime get",
                                             "esxcli --formatter=xml network sriovnic list")
            or LEASE_OPTION in line or "advanced add -o GpuclusterctlLease " in line)


def time_line(text):
    """A wall-time line on stderr and, where GC_IT_TIMES names a file (ctest
    sets it: tests/integration/CMakeLists.txt), appended to it as well:
    ctest shows a passing test's output only with -V, so scripts/test.sh
    prints that file after the lab tests."""
    sys.stderr.write("    (%s)\n" % text)
    path = os.environ.get("GC_IT_TIMES")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(text + "\n")


class LabCase(unittest.TestCase):
    spec = "examples/roce-passthrough.yaml"
    guests = 0  # real guest VMs to boot (scripts/lab.sh --guests); most tests need none
    port = 2310
    reboot_seconds = 0.3

    def run(self, result=None):
        # Each test's wall time after its verdict, and the class's lab
        # start-up once: where the suite's minutes go, in every CI log.
        t0 = time.monotonic()
        try:
            return super().run(result)
        finally:
            time_line("%s.%s: %.1f s" % (type(self).__name__, self._testMethodName,
                                         time.monotonic() - t0))

    @classmethod
    def setUpClass(cls):
        t0 = time.monotonic()
        try:
            cls._start_lab()
        finally:
            time_line("%s lab start: %.1f s" % (cls.__name__, time.monotonic() - t0))

    @classmethod
    def _start_lab(cls):
        # GC_IT_PORT_OFFSET moves every lab port (two suites at once on one machine)
        cls.port = cls.port + int(os.environ.get("GC_IT_PORT_OFFSET", "0"))
        cls.lab = tempfile.mkdtemp(prefix="gc-it-")
        os.chmod(cls.lab, 0o755)
        cls.env = dict(os.environ, GC_LAB_DIR=cls.lab, GC_REBOOT_POLL_MS="100")
        # each class's vCenter (vcsim) on its own port too: 8970 + (port - 2310)
        cls.vcsim_port = 8970 + cls.port - 2310
        cls.run_lab("start", "--spec", os.path.join(ROOT, cls.spec), "--port", str(cls.port),
                    "--guests", str(cls.guests),
                    "--vcsim-port", str(cls.vcsim_port))
        cls.specfile = os.path.join(cls.lab, os.path.basename(cls.spec))
        with open(os.path.join(cls.lab, "inventory"), encoding="utf-8") as f:
            inventory = f.readlines()
        cls.hosts = [l.split()[2] for l in inventory if " esxi " in l]
        cls.switches = [l.split()[2] for l in inventory if " onyx " in l]

    @classmethod
    def tearDownClass(cls):
        cls.run_lab("stop")
        shutil.rmtree(cls.lab, ignore_errors=True)

    @classmethod
    def run_lab(cls, *args):
        r = subprocess.run([LAB, *args], env=cls.env, capture_output=True, text=True)
        if r.returncode != 0:
            raise AssertionError("lab.sh %s failed: %s%s" % (" ".join(args), r.stdout, r.stderr))
        return r.stdout

    def setUp(self):
        self.run_lab("reset")
        for h in self.hosts:
            self.control(h, {"reboot_seconds": self.reboot_seconds})
        self.state_dir = os.path.join(self.lab, "state-%s" % self._testMethodName)
        shutil.rmtree(self.state_dir, ignore_errors=True)

    # ---------------------------------------------------------------- running the tool

    def gc(self, *args, spec=None, timeout=300, env=None, check=None, yes=True):
        argv = [BIN, *args]
        if args and args[0] in ("apply", "plan", "validate"):
            argv += ["--state-dir", self.state_dir]
        if args and args[0] == "apply" and yes:
            argv.append("--yes")   # no terminal on stdin: apply asks nobody
        argv.append(spec or self.specfile)
        r = subprocess.run(argv, env=env or self.env, capture_output=True, text=True,
                           timeout=timeout)
        if check is not None:
            self.assertEqual(r.returncode, check,
                             "exit %d\n--- stdout\n%s\n--- stderr\n%s" % (r.returncode, r.stdout, r.stderr))
        return r

    def apply(self, *args, check=0, **kw):
        return self.gc("apply", "--only", "esxi,switch", *args, check=check, **kw)

    # ---------------------------------------------------------------- reading the lab

    def host_dir(self, name):
        return os.path.join(self.lab, "hosts", name)

    def state(self, name):
        with open(os.path.join(self.host_dir(name), "state.json"), encoding="utf-8") as f:
            return json.load(f)

    def control(self, name, control):
        path = os.path.join(self.host_dir(name), "control.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(control, f)
        with open(os.path.join(self.lab, "user"), encoding="utf-8") as f:
            shutil.chown(path, user=f.read().strip())

    def _read_log(self, name, leaf):
        path = os.path.join(self.host_dir(name), leaf)
        if not os.path.exists(path):
            return []
        out = []
        with open(path, encoding="utf-8") as f:
            for line in f:
                ts, _, cmd = line.rstrip("\n").partition(" ")
                out.append((ts, cmd))
        return out

    def log(self, name):
        """[(timestamp, command)] the host received, in order (a batch of
        changes command by command, as each ran: tests/sim/esxi_sim.py)."""
        return self._read_log(name, "commands.log")

    def execs(self, name):
        """[(timestamp, exec)] the host received, in order: one entry per
        round trip, a batch of commands as one (ESXi hosts)."""
        return self._read_log(name, "execs.log")

    def vcsim_log(self, name):
        """The lines of one of the lab vcsim's call logs (tests/sim/vcsim:
        host-calls.log, dvs-calls.log), in order; [] before the first call."""
        path = os.path.join(self.lab, "vcsim", name)
        if not os.path.exists(path):
            return []
        with open(path, encoding="utf-8") as f:
            return f.read().splitlines()

    def vc(self, *args):
        """tests/sim/vcsim_edit.py against the lab's vCenter, as an operator
        would; its stdout (the command must succeed)."""
        d = os.path.join(self.lab, "vcsim")
        with open(os.path.join(d, "port"), encoding="utf-8") as f:
            port = int(f.read())
        r = subprocess.run([os.path.join(ROOT, "tests", "sim", "vcsim_edit.py"), "--url",
                            "https://127.0.0.1:%d/sdk" % port, "--ca", os.path.join(d, "ca.crt"),
                            "--user", "gcadmin", "--password-file", os.path.join(d, "password"),
                            *args], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return r.stdout

    def vm_show(self, vm):
        """A VM as vCenter holds it (vcsim_edit.py show)."""
        return json.loads(self.vc("show", vm))

    def changes(self, name):
        """The changing commands a host received, in order."""
        return [c for _, c in self.log(name) if not observation(c)]

    def remote(self, name, command):
        """Run a command on a simulated host by hand, as an operator would."""
        with open(os.path.join(self.lab, "inventory"), encoding="utf-8") as f:
            addr = [l.split()[0] for l in f if len(l.split()) > 2 and l.split()[2] == name][0]
        with open(os.path.join(self.lab, "user"), encoding="utf-8") as f:
            user = f.read().strip()
        r = subprocess.run(["ssh", "-p", str(self.port), "-i", os.path.join(self.lab, "client", "id_ed25519"),
                            "-o", "UserKnownHostsFile=" + os.path.join(self.lab, "client", "known_hosts"),
                            "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes",
                            "%s@%s" % (user, addr), command],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout


def parse_ts(ts):
    """2026-11-21T12:04:20.608Z -> seconds."""
    m = re.match(r"(\d+)-(\d+)-(\d+)T(\d+):(\d+):(\d+)\.(\d+)Z", ts)
    y, mo, d, h, mi, s, ms = (int(x) for x in m.groups())
    return time.mktime((y, mo, d, h, mi, s, 0, 0, 0)) + ms / 1000.0
