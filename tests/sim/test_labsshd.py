#!/usr/bin/python3
"""test_labsshd - the apply bench's light SSH server answers as OpenSSH's sshd.

tests/sim/labsshd (scripts/lab.sh with GC_LAB_SSH_SERVER=go) stands in for
the lab's OpenSSH sshd in bench/apply_bench.py --ssh-server go only.  Two
labs are started side by side, one with each server, and driven alike:

- every case of tests/sim/test_simd.py (a command, a failing one, odd
  bytes, a state change, an injected failure, a dropped connection, a
  session killed by a signal, a switch's exec) with OpenSSH's ssh(1): exit
  status, stdout, stderr, the host's state and its command log identical;
- a client key the lab does not know, and a user it does not serve, are
  refused by both;
- a host that is rebooting resets a new connection before the banner;
- GC_LAB_SSH_SERVER other than openssh or go is refused, nothing started;
- a whole gpuclusterctl apply of the bench's spec (password login, the
  reboot that drops its session, the polls, the read-back): the same
  commands reach every host in the same order, 4 execs and 2 connections a
  host, and the hosts end in the same state.

Needs root (as CI), openssh-server, Go and golang-golang-x-crypto-dev, and a
built gpuclusterctl ($GPUCLUSTERCTL, else build/src/cli/).  Ports: 24000 + pid % 90 and 100 more.
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
sys.path.insert(0, os.path.join(ROOT, "tests", "sim"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import test_simd  # noqa: E402
import apply_bench  # noqa: E402

LAB_SH = os.path.join(ROOT, "scripts", "lab.sh")
GPUCLUSTERCTL = (os.environ.get("GPUCLUSTERCTL")
                 or os.path.join(ROOT, "build", "src", "cli", "gpuclusterctl"))


def same_run(command):
    """A command as any run sends it: the random tokens (the batches'
    markers, the cluster lease's), the lease's pid and times made alike."""
    command = re.sub(r"@@gc:[A-Za-z0-9]+", "@@gc:T", command)
    command = re.sub(r"\b[0-9a-f]{16}\b", "T", command)
    return re.sub(r"\b(pid|since|expires)=[0-9]+", r"\1=N", command)


class Lab:
    def __init__(self, tmp, server, port):
        self.server = server
        self.dir = os.path.join(tmp, server)
        self.port = port
        self.env = dict(os.environ, GC_LAB_DIR=self.dir, GC_LAB_SSH_SERVER=server,
                        GC_SIMD_FORKERS="2", GC_REBOOT_POLL_MS="100")

    def lab(self, *argv):
        return subprocess.run([LAB_SH] + list(argv), env=self.env, check=True,
                              capture_output=True, text=True).stdout

    def start(self, *argv):
        out = self.lab("start", "--port", str(self.port), *argv)
        self.labenv = {}
        for line in self.lab("env").splitlines():
            name, _, value = line[len("export "):].partition("=")
            self.labenv[name] = value.strip("'")
        return out

    def ssh(self, address, command, key=None, user=None):
        e = self.labenv
        return subprocess.run(
            ["ssh", "-p", e["GC_LAB_PORT"], "-i", key or e["GC_LAB_KEY"],
             "-o", "UserKnownHostsFile=" + e["GC_LAB_KNOWN_HOSTS"],
             "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes",
             "-o", "IdentitiesOnly=yes", "-o", "LogLevel=ERROR",
             "%s@%s" % (user or e["GC_LAB_USER"], address), command],
            capture_output=True, timeout=30)

    def host_dir(self, address):
        return test_simd.host_dir(self.dir, address)

    def commands(self, address):
        path = os.path.join(self.host_dir(address), "commands.log")
        with open(path, encoding="utf-8") as f:
            return [line.rstrip("\n").split(" ", 1)[1] for line in f]

    def state(self, address):
        """The host's simulated state, less its clock readings (when the
        host booted, until when it is down), which differ between labs."""
        try:
            with open(os.path.join(self.host_dir(address), "state.json"), "rb") as f:
                st = json.load(f)
        except FileNotFoundError:
            return None
        for k in ("boot_time", "down_until"):
            st.pop(k, None)
        return st


class LabSSHD(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="gc-labsshd-")
        os.chmod(cls.tmp, 0o755)
        port = 24000 + os.getpid() % 90
        cls.labs = [Lab(cls.tmp, "openssh", port), Lab(cls.tmp, "go", port + 100)]

    @classmethod
    def tearDownClass(cls):
        for lab in cls.labs:
            subprocess.run([LAB_SH, "stop"], env=lab.env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_the_cases_of_test_simd_answer_alike(self):
        seen = {}
        for lab in self.labs:
            out = lab.start("--hosts", "2", "--switches", "1")
            if lab.server == "go":
                self.assertIn("lab: started labsshd (pid ", out)
                with open(os.path.join(lab.dir, "sshd_config"), encoding="utf-8") as f:
                    self.assertIn("(served by: go)", f.readline())
            lab.lab("reset")
            cases = {}
            for name, address, command, control in test_simd.CASES:
                if control:
                    with open(os.path.join(lab.host_dir(address), "control.json"), "w",
                              encoding="utf-8") as f:
                        json.dump(control, f)
                r = lab.ssh(address, command)
                cases[name] = (r.returncode, r.stdout, r.stderr, lab.state(address))
            logs = {a: lab.commands(a) for a in ("127.0.0.11", "127.0.0.12", "127.0.0.100")}
            # a key the lab does not know, and a user it does not serve
            other = os.path.join(self.tmp, "other-key-" + lab.server)
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", other], check=True)
            cases["unknown key"] = lab.ssh("127.0.0.11", "vmware -v", key=other).returncode
            cases["other user"] = lab.ssh("127.0.0.11", "vmware -v", user="root").returncode
            seen[lab.server] = (cases, logs)
            lab.lab("stop")
        (ocases, ologs), (gcases, glogs) = seen["openssh"], seen["go"]
        for name in ocases:
            self.assertEqual(gcases[name], ocases[name], name)
        self.assertEqual(glogs, ologs)
        test_simd.check_what_cases_show(self, gcases)
        self.assertEqual((gcases["unknown key"], gcases["other user"]), (255, 255))

    def test_an_unknown_server_is_refused_before_anything_starts(self):
        lab = Lab(self.tmp, "bogus", self.labs[1].port)
        r = subprocess.run([LAB_SH, "start", "--hosts", "1", "--port", str(lab.port)],
                           env=lab.env, capture_output=True, text=True)
        self.assertEqual(r.returncode, 1)
        self.assertIn("GC_LAB_SSH_SERVER must be openssh or go, not 'bogus'", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(lab.dir, "sshd.pid")))
        self.assertFalse(os.path.exists(os.path.join(lab.dir, "simd")))
        ss = subprocess.run(["ss", "-Hltn", "sport = :%d" % lab.port], capture_output=True,
                            text=True).stdout
        self.assertEqual(ss, "")

    @staticmethod
    def log_count(lab, text):
        with open(os.path.join(lab.dir, "sshd.log"), errors="replace") as f:
            return sum(1 for line in f if text in line)

    def test_a_rebooting_host_resets_new_connections(self):
        lab = self.labs[1]
        lab.start("--hosts", "2")
        lab.lab("reset")
        with open(os.path.join(lab.host_dir("127.0.0.12"), "control.json"), "w") as f:
            json.dump({"reboot_seconds": 3}, f)
        lab.ssh("127.0.0.12", "reboot")
        self.assertTrue(os.path.exists(os.path.join(lab.dir, "down", "127.0.0.12")))
        seen, ran = self.log_count(lab, "on 127.0.0.12 port"), len(lab.commands("127.0.0.12"))
        r = lab.ssh("127.0.0.12", "hostname")
        self.assertEqual(r.returncode, 255)
        # reset before the SSH layer: not logged as a connection, no session
        self.assertEqual(self.log_count(lab, "on 127.0.0.12 port"), seen)
        self.assertEqual(len(lab.commands("127.0.0.12")), ran)
        self.assertEqual(lab.ssh("127.0.0.11", "hostname").stdout, b"esxi-1\n")
        time.sleep(3.2)
        self.assertEqual(lab.ssh("127.0.0.12", "hostname").stdout, b"esxi-2\n")
        lab.lab("stop")

    def test_an_apply_sends_the_same_commands_through_either(self):
        hosts = ["esx01", "esx02"]
        addrs = [apply_bench.addr_of(i) for i in range(2)]
        seen = {}
        for lab in self.labs:
            os.makedirs(lab.dir, exist_ok=True)
            src = os.path.join(lab.dir, "bench-src.yaml")
            with open(src, "w", encoding="utf-8") as f:
                f.write(apply_bench.spec_text(2))
            lab.start("--spec", src)
            apply_bench.set_controls(lab.dir, hosts, 0, 1.0)
            since = self.log_count(lab, "")
            r = subprocess.run([GPUCLUSTERCTL, "apply", "--yes", "--parallelism", "2",
                                "--state-dir", os.path.join(lab.dir, "state"),
                                os.path.join(lab.dir, "bench-src.yaml")],
                               env=lab.env, capture_output=True, text=True, timeout=120)
            self.assertEqual(r.returncode, 0, r.stderr[-2000:])
            conns = apply_bench.connections_per_host(lab.dir, since)
            execs = apply_bench.execs_since(lab.dir, hosts, {h: 0 for h in hosts})
            cmds = {a: [same_run(c) for c in lab.commands(a)] for a in addrs}
            seen[lab.server] = (cmds, [conns.get(a) for a in addrs],
                                {h: execs[h][0] - execs[h][1] for h in hosts},
                                [lab.state(a) for a in addrs])
            lab.lab("stop")
        self.assertEqual(seen["go"][0], seen["openssh"][0])
        self.assertEqual(seen["go"][1], [2, 2])
        self.assertEqual(seen["openssh"][1], [2, 2])
        self.assertEqual(seen["go"][2], {"esx01": 4, "esx02": 4})
        self.assertEqual(seen["go"][3], seen["openssh"][3])
        self.assertFalse(seen["go"][3][0]["maintenance"])


if __name__ == "__main__":
    unittest.main()
