"""test_guest - the guest stage against real Linux guests.

The lab boots two real Debian 12 VMs (QEMU/TCG, tests/sim/guestlab) for
examples/roce-pair.yaml, with soft-RoCE between them.  `apply` configures
hosts, switch, VMs and guests; everything a test asserts about a guest is
read back over plain `ssh` with the lab's own key (never through our
driver): packages, modules loaded and persisted, the licence file and
state, the RDMA interface's address and MTU, the RDMA device on it with its
RoCE v2 GID, trust/PFC/ToS, the boot unit; again after a reboot.

The tests run in name order on one lab: the first applies everything, the
later ones start from that converged state.
"""
import json
import os
import shutil
import signal
import subprocess
import time
import unittest
import xml.etree.ElementTree as ET

import yaml

from labtest import BIN, ROOT, LabCase, observation

GUESTS = ["worker-01", "worker-02"]
ADDR = {"worker-01": "198.18.0.51/24", "worker-02": "198.18.0.52/24"}


class GuestLab(LabCase):
    spec = "examples/roce-pair.yaml"
    guests = 2
    port = 2340  # its vcsim on 9000, clear of the unit tests' fixed vcsim ports (8980-8997)

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        with open(cls.specfile, encoding="utf-8") as f:
            cls.doc = yaml.safe_load(f)
        cls.gport = cls.port + 10000
        cls.gaddr = {v["name"]: v["guest"]["address"] for v in cls.doc["vms"]}

    @classmethod
    def tearDownClass(cls):
        lab = cls.lab
        super().tearDownClass()
        left = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as f:
                    cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if "qemu-system" in cmd and lab in cmd:
                left.append(int(pid))
                os.kill(int(pid), 9)
        assert not left, "lab.sh stop left QEMU running: %s" % left

    def setUp(self):
        # One cluster for the whole class: the first test applies it and the
        # later ones (validate's among them) start from that converged state,
        # so the lab's simulated hosts, switch and vCenter are not reset.
        for h in self.hosts:
            self.control(h, {"reboot_seconds": self.reboot_seconds})
        self.state_dir = os.path.join(self.lab, "state-%s" % self._testMethodName)
        shutil.rmtree(self.state_dir, ignore_errors=True)

    # ---------------------------------------------------------------- an independent client

    def ssh(self, vm, command, check=True, timeout=300):
        # The limit is a guard against a hung guest, not a measure: on a slow
        # 2-core machine with the fuzz pass beside it, a TCG guest's
        # `apt-get purge` once took over 60 s (CI at 958a039).
        #
        # One OpenSSH connection per guest carries the read-backs (ssh's own
        # multiplexing): a fresh connection costs the TCG guest's sshd a
        # second of emulated CPU or more, and the checks make hundreds.  A
        # reboot or a killed QEMU closes it (user-mode networking's socket
        # is QEMU's); the keep-alives catch any other loss within seconds.
        r = subprocess.run(["ssh", "-p", str(self.gport), "-i", os.path.join(self.lab, "guest_key"),
                            "-o", "UserKnownHostsFile=" + os.path.join(self.lab, "known_hosts"),
                            "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes",
                            "-o", "ConnectTimeout=5", "-o", "LogLevel=ERROR",
                            "-o", "ControlMaster=auto", "-o", "ControlPersist=120",
                            "-o", "ControlPath=" + os.path.join(self.lab, "cm-%C"),
                            "-o", "ServerAliveInterval=2", "-o", "ServerAliveCountMax=3",
                            "gclab@" + self.gaddr[vm], command],
                           capture_output=True, text=True, timeout=timeout)
        if check:
            self.assertEqual(r.returncode, 0, "%s: %s\n%s%s" % (vm, command, r.stdout, r.stderr))
        return r.stdout

    def wait_ssh(self, vm, timeout=300):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                r = subprocess.run(["ssh", "-p", str(self.gport), "-i",
                                    os.path.join(self.lab, "guest_key"), "-o",
                                    "UserKnownHostsFile=" + os.path.join(self.lab, "known_hosts"),
                                    "-o", "BatchMode=yes", "-o", "ConnectTimeout=5",
                                    "-o", "LogLevel=ERROR", "gclab@" + self.gaddr[vm], "true"],
                                   capture_output=True, timeout=20)
                if r.returncode == 0:
                    return
            except subprocess.TimeoutExpired:
                pass
            time.sleep(2)
        self.fail("%s did not answer SSH within %d s" % (vm, timeout))

    def wait_reboot_sent(self, vm, before, p, timeout=600):
        """Until vm stops answering with boot id `before` (its reboot went
        out), or the apply p ends.  Fresh connections, not the shared one: a
        reboot closes that, and so does a guest on its way down."""
        deadline = time.time() + timeout
        while time.time() < deadline and p.poll() is None:
            r = subprocess.run(["ssh", "-p", str(self.gport), "-i",
                                os.path.join(self.lab, "guest_key"), "-o",
                                "UserKnownHostsFile=" + os.path.join(self.lab, "known_hosts"),
                                "-o", "BatchMode=yes", "-o", "ConnectTimeout=3",
                                "-o", "LogLevel=ERROR", "gclab@" + self.gaddr[vm],
                                "cat /proc/sys/kernel/random/boot_id"],
                               capture_output=True, text=True, timeout=20)
            if r.returncode != 0 or r.stdout.strip() != before:
                return
            time.sleep(0.5)

    def boot_id(self, vm):
        return self.ssh(vm, "cat /proc/sys/kernel/random/boot_id").strip()

    def guest_apply(self, *args, check=0, spec=None, timeout=900):
        return self.gc("apply", "--only", "guest", "-v", *args, check=check, spec=spec,
                       timeout=timeout)

    def variant(self, edit, name):
        with open(self.specfile, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
        edit(doc)
        path = os.path.join(self.lab, name)
        with open(path, "w", encoding="utf-8") as f:
            yaml.safe_dump(doc, f, sort_keys=False)
        return path

    # ---------------------------------------------------------------- what a guest holds

    def assert_guest_converged(self, vm):
        pk = self.ssh(vm, "dpkg-query -W -f='${Package} ${db:Status-Abbrev}\\n' rdma-core "
                          "ibverbs-utils perftest infiniband-diags nvidia-driver "
                          "nvidia-container-toolkit chrony")
        self.assertEqual(sorted(l.split()[0] for l in pk.splitlines() if l.split()[1] == "ii"),
                         ["chrony", "ibverbs-utils", "infiniband-diags", "nvidia-container-toolkit",
                          "nvidia-driver", "perftest", "rdma-core"])
        mods = {l.split()[0] for l in self.ssh(vm, "cat /proc/modules").splitlines()}
        self.assertIn("nvidia_peermem", mods)
        self.assertIn("nvidia", mods)
        self.assertIn("nvidia_peermem\n", self.ssh(vm, "cat /etc/modules-load.d/gpuclusterctl.conf"))
        gridd = self.ssh(vm, "cat /etc/nvidia/gridd.conf")
        for line in ("ServerAddress=license.lab.example", "ServerPort=7070", "FeatureType=4"):
            self.assertIn(line + "\n", gridd)
        self.assertIn("<license_status>Licensed", self.ssh(vm, "nvidia-smi -q -x"))
        link = json.loads(self.ssh(vm, "ip -j addr show dev ens224"))[0]
        self.assertEqual(link["mtu"], 9000)
        self.assertIn(ADDR[vm], ["%s/%d" % (a["local"], a["prefixlen"]) for a in link["addr_info"]
                                 if a["family"] == "inet"])
        self.assertIn("Address=%s\n" % ADDR[vm],
                      self.ssh(vm, "cat /etc/systemd/network/60-gpuclusterctl-ens224.network"))
        rdma = json.loads(self.ssh(vm, "rdma -j link show"))
        self.assertEqual([(l["ifname"], l["netdev"], l["state"]) for l in rdma],
                         [("mlx5_0", "ens224", "ACTIVE")])
        gids = self.ssh(vm, "grep -H . /sys/class/infiniband/mlx5_0/ports/1/gid_attrs/types/* "
                            "2>/dev/null || true")
        self.assertIn("RoCE v2", gids)
        self.assertIn("mlx5_0", self.ssh(vm, "ibv_devices"))
        qos = self.ssh(vm, "sudo -n mlnx_qos -i ens224")
        self.assertIn("Priority trust state: dscp", qos)
        self.assertRegex(qos, r"enabled\s+0\s+0\s+0\s+1\s+0\s+0\s+0\s+0")
        self.assertEqual(self.ssh(vm, "cat /sys/kernel/config/rdma_cm/mlx5_0/ports/1/"
                                      "default_roce_tos").strip(), "106")
        self.assertEqual(self.ssh(vm, "systemctl is-enabled gpuclusterctl-roce-qos.service").strip(),
                         "enabled")
        self.assertIn("server ntp1.lab.example iburst\n",
                      self.ssh(vm, "cat /etc/chrony/conf.d/gpuclusterctl.conf"))

    # ---------------------------------------------------------------- the tests, in order

    def test_1_full_apply_configures_both_guests(self):
        before = {vm: self.boot_id(vm) for vm in GUESTS}
        r = self.gc("apply", "-v", check=0, timeout=1500)
        out = r.stdout + r.stderr
        for vm in GUESTS:
            self.assert_guest_converged(vm)
            # the driver install cost exactly one reboot, proven by the boot id
            self.assertNotEqual(self.boot_id(vm), before[vm])
            # two package transactions, as apt's own history has them: the
            # driver, the RDMA stack and chrony in one (the steps before the
            # reboot go out as one batch), the toolkit after the reboot
            ours = [l for l in self.ssh(vm, "cat /var/log/apt/history.log").splitlines()
                    if l.startswith("Commandline: ") and "Timeout=300 install " in l]
            self.assertEqual(len(ours), 2, ours)
            self.assertTrue(ours[0].endswith(" chrony") and " rdma-core " in ours[0], ours[0])
            self.assertTrue(ours[1].endswith(" nvidia-container-toolkit"), ours[1])
        self.assertIn("guest worker-01", out)

    def test_2_reapply_sends_nothing(self):
        r = self.guest_apply()
        self.assertIn("No changes", r.stdout)
        # one connection per guest, every command an observation
        self.assertIn("gpuclusterctl: 0 changing commands; SSH: 2 connections, 2 commands",
                      r.stderr)

    # ---------------------------------------------------------------- validate

    def validate(self, *args, check=0, timeout=600):
        """`validate --json` (CUDA skipped: the lab's GPUs are stand-ins without
        CUDA); small RDMA transfers, soft-RoCE under TCG is slow; a local ACK
        timeout of 1 s, as a TCG guest's ACKs come late (docs/lab.md)."""
        r = self.gc("validate", "--json", "--skip", "cuda", "--rdma-msg-kib", "256",
                    "--rdma-iters", "50", "--rdma-qp-timeout", "18", *args, check=check,
                    timeout=timeout)
        return json.loads(r.stdout)

    @staticmethod
    def checks(rep, kind, target):
        t = [t for t in rep["targets"] if t["kind"] == kind and t["name"] == target]
        return {c["name"]: c for c in t[0]["checks"]} if t else {}

    @staticmethod
    def failed(rep):
        return sorted((t["kind"], t["name"], c["name"], c["expected"], c["found"])
                      for t in rep["targets"] for c in t["checks"] if c["status"] == "fail")

    def switch_cli(self, *lines):
        with open(os.path.join(self.lab, "inventory"), encoding="utf-8") as f:
            inv = [l.split() for l in f if " onyx " in l][0]
        with open(os.path.join(self.lab, "user"), encoding="utf-8") as f:
            user = f.read().strip()
        r = subprocess.run(["ssh", "-tt", "-p", str(self.port), "-i",
                            os.path.join(self.lab, "client", "id_ed25519"),
                            "-o", "UserKnownHostsFile=" + os.path.join(self.lab, "client",
                                                                       "known_hosts"),
                            "-o", "BatchMode=yes", "%s@%s" % (user, inv[0])],
                           input="\n".join(lines) + "\n", capture_output=True, text=True,
                           timeout=30)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_2a_validate_passes_and_only_reads(self):
        logs = {h: len(self.log(h)) for h in ("esx01", "esx02", "sn2700")}
        calls = {}
        for vm in GUESTS:
            self.ssh(vm, "sudo -n touch /run/gc-test-stamp")
            calls[vm] = int(self.ssh(vm, "sudo -n wc -l < /var/log/gc-lab/calls.log"))
        mods = {vm: self.ssh(vm, "cut -d' ' -f1 /proc/modules | sort") for vm in GUESTS}
        vms = {vm: self.vm_show(vm) for vm in GUESTS}  # as vCenter holds them
        junit = os.path.join(self.lab, "validate.xml")
        rep = self.validate("--junit", junit)
        self.assertEqual(self.failed(rep), [])
        self.assertTrue(rep["summary"]["ok"])
        for vm in GUESTS:
            c = self.checks(rep, "guest", vm)
            # the probe really ran in the guest: what only it reads
            self.assertEqual((c["rdma.roce_v2_gid"]["status"], c["rdma.mtu"]["found"],
                              c["rdma.tos"]["found"], c["rdma.trust"]["found"]),
                             ("pass", "4096", "106", "dscp"))
            self.assertEqual(c["gpu.license"]["status"], "pass")
            self.assertEqual(c["cuda"]["status"], "skip")
            ran = self.ssh(vm, "sudo -n journalctl -q --no-pager _COMM=sudo | "
                               "grep -c 'gpuclusterctl-probe-[^ ]* --json' || true")
            self.assertGreaterEqual(int(ran), 1)
            self.assertEqual(self.ssh(vm, "ls ~/.cache/gpuclusterctl/").count("gpuclusterctl-probe-"), 1)
        pair = self.checks(rep, "pair", "worker-01<->worker-02")
        self.assertEqual(pair["rdma.write"]["found"], "ok: data verified")
        self.assertRegex(pair["rdma.write_bandwidth"]["found"], r"^\d+\.\d{3} Gb/s$")
        self.assertGreater(float(pair["rdma.write_bandwidth"]["found"].split()[0]), 0.0)
        self.assertRegex(pair["rdma.write_latency"]["found"], r"^\d+\.\d{2} us$")
        # nothing changed: hosts and switch got only reads, the guests' files,
        # modules and hardware settings are as they were
        for h in ("esx01", "esx02"):
            self.assertEqual([c for _, c in self.log(h)[logs[h]:] if not observation(c)], [])
        self.assertEqual({vm: self.vm_show(vm) for vm in GUESTS}, vms)
        self.assertEqual([c for _, c in self.log("sn2700")[logs["sn2700"]:]
                          if not (c.startswith("show ") or c in ("enable", "terminal length 999",
                                                                  "no cli session paging enable",
                                                                  "exit"))], [])
        for vm in GUESTS:
            self.assertEqual(self.ssh(vm, "sudo -n find /etc /usr /lib/modules /var/lib/dpkg "
                                          "/usr/local -xdev -newer /run/gc-test-stamp "
                                          "-not -type d"), "")
            self.assertEqual(self.ssh(vm, "cut -d' ' -f1 /proc/modules | sort"), mods[vm])
            new = self.ssh(vm, "sudo -n tail -n +%d /var/log/gc-lab/calls.log" % (calls[vm] + 1))
            for bad in ("--trust", "--pfc", "--dscp2prio", "runtime configure"):
                self.assertNotIn(bad, new)
        # JUnit for CI systems: valid against Jenkins' schema, a testsuite per target
        r = subprocess.run(["xmllint", "--noout", "--schema",
                            os.path.join(ROOT, "tests", "data", "validate", "junit-10.xsd"), junit],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(junit, encoding="utf-8") as f:
            x = f.read()
        for suite in ("esxi/esx01", "switch/sn2700", "vm/worker-01", "guest/worker-02",
                      "pair/worker-01&lt;-&gt;worker-02"):
            self.assertIn('<testsuite name="%s"' % suite, x)

    def test_2b_validate_names_drift_made_by_hand_on_a_host(self):
        self.remote("esx01", "esxcli system ntp set -s other.lab.example")
        rep = self.validate("--skip", "node,pairs", check=1)
        self.assertEqual(self.failed(rep), [
            ("esxi", "esx01", "config esx01/esxi.ntp servers", "ntp1.lab.example",
             "other.lab.example")])
        self.assertIn("'gpuclusterctl plan' shows the change",
                      self.checks(rep, "esxi", "esx01")["config esx01/esxi.ntp servers"]["hint"])
        self.assertEqual(self.checks(rep, "pair", "pairs")["rdma.write"]["status"], "skip")
        self.gc("apply", "--only", "esxi", check=0, timeout=900)
        self.assertEqual(self.failed(self.validate("--skip", "node,pairs")), [])

    def test_2b_validate_names_drift_made_by_hand_on_the_switch(self):
        self.switch_cli("enable", "configure terminal", "interface ethernet 1/7 qos trust L2",
                        "exit", "exit")
        rep = self.validate("--skip", "node,pairs", check=1)
        self.assertEqual(self.failed(rep), [
            ("switch", "sn2700", "config sn2700/switch.qos_trust ports", "1/1-1/32",
             "1/1-1/6,1/8-1/32"),
            ("switch", "sn2700", "config sn2700/switch.qos_trust trust", "L3", "L2"),
        ])
        self.gc("apply", "--only", "switch", check=0, timeout=900)
        self.assertEqual(self.failed(self.validate("--skip", "node,pairs")), [])

    def test_2b_validate_names_drift_made_by_hand_on_a_vm(self):
        mmio = self.vm_show("worker-02")["extra_config"]["pciPassthru.64bitMMIOSizeGB"]
        self.vc("worker-02", "set-extra", "pciPassthru.64bitMMIOSizeGB", "16")
        rep = self.validate("--skip", "node,pairs", check=1)
        self.assertEqual(self.failed(rep), [
            ("vm", "worker-02", "config vm/worker-02/extra_config pciPassthru.64bitMMIOSizeGB",
             mmio, "16"),
        ])
        self.gc("apply", "--only", "vcenter", check=0, timeout=900)
        self.assertEqual(self.failed(self.validate("--skip", "node,pairs")), [])

    def test_2c_validate_catches_an_unlicensed_guest(self):
        vm = "worker-02"
        self.ssh(vm, "sudo -n mkdir -p /etc/gc-lab/faults && sudo -n touch "
                     "/etc/gc-lab/faults/licence-never && sudo -n systemctl restart nvidia-gridd")
        try:
            rep = self.validate("--target", vm, "--skip", "pairs", check=1)
            self.assertEqual(self.failed(rep), [
                ("guest", vm, "config guest/worker-02/license status", "licensed",
                 "Unlicensed (Unrestricted)"),
                ("guest", vm, "gpu.license", "Licensed", "Unlicensed (Unrestricted)")])
            self.assertIn("nvidia-gridd has no licence", self.checks(rep, "guest", vm)
                          ["gpu.license"]["hint"])
        finally:
            self.ssh(vm, "sudo -n rm -f /etc/gc-lab/faults/licence-never && "
                         "sudo -n systemctl restart nvidia-gridd")
        deadline = time.time() + 60
        while "Licensed" not in self.ssh(vm, "nvidia-smi -q") and time.time() < deadline:
            time.sleep(1)

    def test_2d_validate_catches_the_tos_off_on_one_guest(self):
        vm = "worker-01"
        tos = "/sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos"
        self.ssh(vm, "echo 0 | sudo -n tee %s >/dev/null" % tos)
        try:
            rep = self.validate("--target", vm, "--skip", "pairs", check=1)
            self.assertEqual(self.failed(rep), [
                ("guest", vm, "config guest/worker-01/roce_qos tos", "106", "0"),
                ("guest", vm, "rdma.tos", "106", "0")])
        finally:
            self.ssh(vm, "echo 106 | sudo -n tee %s >/dev/null" % tos)

    def test_2e_an_rdma_interface_down_fails_its_pair_and_nothing_else(self):
        vm = "worker-02"
        self.ssh(vm, "sudo -n ip link set ens224 down")
        try:
            rep = self.validate("--rdma-timeout", "20", check=1)
            failed = self.failed(rep)
            self.assertIn(("pair", "worker-01<->worker-02", "rdma.write", "ok"),
                          [f[:4] for f in failed])
            # every failure is on worker-02 or its pair; worker-01 passes whole
            self.assertEqual([f for f in failed if f[1] not in (vm, "worker-01<->worker-02")], [])
            self.assertTrue(all(c["status"] != "fail"
                                for c in self.checks(rep, "guest", "worker-01").values()))
            self.assertIn(("guest", vm, "rdma.device"), [f[:3] for f in failed])
        finally:
            self.ssh(vm, "sudo -n ip link set ens224 up")
        deadline = time.time() + 60
        while "ACTIVE" not in self.ssh(vm, "cat /sys/class/infiniband/mlx5_0/ports/1/state") \
                and time.time() < deadline:
            time.sleep(1)

    def test_2f_mpirun_runs_open_mpi_across_the_guests(self):
        before = self.ssh("worker-02", "sudo -n journalctl -q --no-pager _COMM=sshd | "
                                       "grep -c 'Accepted publickey for gclab from 198.18.0.51' "
                                       "|| true")
        rep = self.validate("--mpirun", "--skip", "pairs")
        self.assertEqual(self.failed(rep), [])
        m = self.checks(rep, "mpi", "mpirun")
        self.assertRegex(m["mpi.run"]["found"], r"^exit 0 in [0-9.]+ s, 2 ranks$")
        self.assertEqual((m["mpi.ranks"]["found"], m["mpi.data"]["found"]), ("2", "verified"))
        self.assertRegex(m["mpi.pair_bandwidth"]["found"],
                         r"^\d+\.\d{3}-\d+\.\d{3} Gb/s over 1 pairs of 2 ranks$")
        self.assertGreater(float(m["mpi.pair_bandwidth"]["found"].split("-")[0]), 0)
        # Open MPI really started the second rank on worker-02 from worker-01,
        # over the RDMA network
        after = self.ssh("worker-02", "sudo -n journalctl -q --no-pager _COMM=sshd | "
                                      "grep -c 'Accepted publickey for gclab from 198.18.0.51' "
                                      "|| true")
        self.assertGreater(int(after), int(before))

    def test_2fa_a_job_past_mpi_timeout_is_stopped_on_every_node(self):
        marker = "/tmp/gc-test-rank-started"
        vms = ("worker-01", "worker-02")
        for vm in vms:
            self.ssh(vm, "rm -f %s" % marker)
        # each rank also leaves a process in a session of its own, which
        # mpirun's stop does not reach: the sweep by the run's tag must
        rank = ("touch %s && { setsid sleep 301 </dev/null >/dev/null 2>&1 & } "
                "&& exec sleep 300" % marker)
        rep = self.validate("--mpirun=" + rank, "--mpi-timeout", "40", "--skip", "pairs",
                            check=1)
        (failed,) = self.failed(rep)
        self.assertEqual(failed[:4], ("mpi", "mpirun", "mpi.run", "exit 0 and a result"))
        self.assertIn(failed[4], ("timed out after 40 s, stopped",
                                  "timed out after 40 s, stopped (SIGKILL)"))
        hint = self.checks(rep, "mpi", "mpirun")["mpi.run"]["hint"]
        self.assertIn("was stopped on every node", hint)
        if failed[4].endswith("stopped"):
            # mpirun stopped its ranks; only the detached processes were left
            self.assertIn("killed by its GC_MPI_RUN_TAG, worker-01: 1 killed, "
                          "worker-02: 1 killed)", hint)
        else:
            self.assertRegex(hint, r"worker-01: [12] killed, worker-02: [12] killed\)")
        # a rank really ran on each guest, and none is left: the guests' own
        # process tables, read over our own SSH, not through the tool
        for vm in vms:
            self.assertEqual(self.ssh(vm, "test -e %s && echo started" % marker).strip(),
                             "started", vm)
            self.assertEqual(self.ssh(vm, "pgrep -a -x sleep | grep -c ' 30[01]$' || true")
                             .strip(), "0", vm)
            self.assertEqual(self.ssh(vm, "pgrep -c -x 'mpirun|orted' || true").strip(), "0", vm)

    def job_stopped_while_it_runs(self, stop):
        """validate --mpirun with a rank that sleeps 300 s on each guest;
        stop(p) once both ranks run.  Returns (exit status, stdout, stderr)."""
        marker = "/tmp/gc-test-rank-started"
        vms = ("worker-01", "worker-02")
        for vm in vms:
            self.ssh(vm, "rm -f %s" % marker)
        argv = [BIN, "validate", "--json", "--skip", "cuda,pairs",
                "--mpirun=touch %s && exec sleep 300" % marker, "--mpi-timeout", "900",
                "--state-dir", self.state_dir, self.specfile]
        p = subprocess.Popen(argv, env=self.env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 300
            while not all(self.ssh(vm, "test -e %s && echo started || true" % marker)
                          .strip() == "started" for vm in vms):
                self.assertIsNone(p.poll(), "validate ended before its ranks started")
                self.assertLess(time.monotonic(), deadline, "the ranks never started")
                time.sleep(2)
            stop(p)
            out, err = p.communicate(timeout=300)
        finally:
            if p.poll() is None:
                p.kill()
                p.communicate()
        return p.returncode, out, err

    def assert_no_job_left(self):
        """No rank, mpirun, orted or timeout(1) of job_stopped_while_it_runs
        on either guest: their process tables, over our own SSH."""
        for vm in ("worker-01", "worker-02"):
            self.assertEqual(self.ssh(vm, "pgrep -a -x sleep | grep -c ' 300$' || true").strip(),
                             "0", vm)
            self.assertEqual(self.ssh(vm, "pgrep -c -x 'mpirun|orted|timeout' || true").strip(),
                             "0", vm)

    def test_2fb_ctrl_c_stops_the_job_on_every_node(self):
        # Ctrl-C once a rank runs on each guest, as a user would press it
        rc, out, err = self.job_stopped_while_it_runs(lambda p: p.send_signal(signal.SIGINT))
        self.assertEqual(rc, 130, err)
        self.assertIn("gpuclusterctl: interrupted: stopping the MPI job on every node "
                      "(again to exit at once)\n", err)
        self.assertTrue(err.endswith("gpuclusterctl: error: interrupted: the MPI job was "
                                     "stopped (see mpi.run)\n"), err)
        run = self.checks(json.loads(out), "mpi", "mpirun")["mpi.run"]
        self.assertEqual(run["status"], "fail")
        self.assertRegex(run["found"], r"^interrupted after \d+ s, stopped$")
        # mpirun stops its ranks itself; the sweep by the run's tag would
        # name any it had to kill
        self.assertRegex(run["hint"], r"stopped on every node \(SIGTERM to mpirun; "
                         r"(no process of it left on any node|what it left behind was killed "
                         r"by its GC_MPI_RUN_TAG, worker-0[12]: \d killed.*)\)$")
        self.assert_no_job_left()

    def test_2fd_sighup_stops_the_job_as_ctrl_c_does(self):
        # the operator's SSH session to the machine running validate is gone
        rc, out, err = self.job_stopped_while_it_runs(lambda p: p.send_signal(signal.SIGHUP))
        self.assertEqual(rc, 130, err)
        self.assertIn("gpuclusterctl: interrupted: stopping the MPI job on every node "
                      "(again to exit at once)\n", err)
        run = self.checks(json.loads(out), "mpi", "mpirun")["mpi.run"]
        self.assertEqual(run["status"], "fail")
        self.assertRegex(run["found"], r"^interrupted after \d+ s, stopped$")
        self.assertIn("the run was interrupted (SIGINT, SIGTERM or SIGHUP)", run["hint"])
        self.assert_no_job_left()

    def test_2fc_a_lost_launcher_connection_stops_the_job_on_every_node(self):
        def cut(_p):
            # the launcher's end of the tool's connection goes, as when its
            # sshd dies or a firewall resets it: the sshd session above
            # mpirun on worker-01 is killed
            killed = self.ssh("worker-01", (
                "p=$(pgrep -o -x mpirun) || exit 1; "
                "while p=$(awk '/^PPid:/ {print $2}' /proc/$p/status) && [ \"$p\" -gt 1 ]; do "
                "case $(tr '\\0' ' ' </proc/$p/cmdline) in "
                "'sshd: '*@notty*) sudo -n kill -KILL $p && echo killed; exit ;; esac; done"))
            self.assertEqual(killed.strip(), "killed")

        rc, out, err = self.job_stopped_while_it_runs(cut)
        self.assertEqual(rc, 1, err)
        run = self.checks(json.loads(out), "mpi", "mpirun")["mpi.run"]
        self.assertEqual(run["status"], "fail")
        self.assertRegex(run["found"], r"^connection lost after \d+ s$")
        # a new connection to the launcher swept it like the other node:
        # no "not swept" in the hint
        self.assertRegex(run["hint"],
                         r"^the run lost its connection to the launcher worker-01 \(ssh .+\) "
                         r"and was stopped on every node \(its stdin ended with the connection: "
                         r"SIGTERM to mpirun; (no process of it left on any node|what it left "
                         r"behind was killed by its GC_MPI_RUN_TAG, worker-0[12]: \d killed.*)\): "
                         r"look at the network to the launcher and its sshd's log$")
        self.assert_no_job_left()

    def test_2g_nccl_falling_back_to_sockets_is_a_failure(self):
        vm = "worker-02"
        nccl = "--mpirun=/usr/lib/gc-lab/nccl-tests/all_reduce_perf"
        rep = self.validate(nccl, "--skip", "pairs")
        self.assertEqual(self.checks(rep, "mpi", "mpirun")["nccl.transport"]["found"],
                         "IB [0]mlx5_0:1/RoCE [RO]")
        # the RDMA device goes on one guest; TCP still works, NCCL carries on over it
        self.ssh(vm, "sudo -n rdma link delete mlx5_0")
        try:
            rep = self.validate(nccl, "--skip", "pairs", check=1)
            t = self.checks(rep, "mpi", "mpirun")["nccl.transport"]
            self.assertEqual((t["status"], t["expected"]), ("fail", "IB (RDMA)"))
            self.assertIn("fell back to TCP sockets", t["hint"])
            self.assertEqual(self.checks(rep, "mpi", "mpirun")["mpi.run"]["status"], "pass")
        finally:
            # the device back, and its RoCE ToS with it: our boot unit re-applies the QoS
            self.ssh(vm, "sudo -n systemctl restart gc-lab-rxe && "
                         "sudo -n systemctl restart gpuclusterctl-roce-qos.service")
        self.assertEqual(self.failed(self.validate("--target", vm, "--skip", "pairs")), [])

    def test_2h_emitted_mpijob_and_sbatch(self):
        job = os.path.join(self.lab, "mpijob.yaml")
        sb = os.path.join(self.lab, "job.sbatch")
        self.validate("--skip", "config,pairs", "--emit-mpijob", job, "--image",
                      "registry.lab.example/nccl-tests:2.13", "--emit-slurm", sb)
        with open(job, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
        self.assertEqual((doc["apiVersion"], doc["kind"]), ("kubeflow.org/v2beta1", "MPIJob"))
        env = {e["name"]: e["value"] for c in
               doc["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"]
               for e in c.get("env", [])}
        self.assertEqual((env["NCCL_IB_HCA"], env["NCCL_IB_TC"], env["NCCL_SOCKET_IFNAME"]),
                         ("=mlx5_0", "106", "=ens224"))
        with open(sb, encoding="utf-8") as f:
            text = f.read()
        self.assertIn("#SBATCH --nodes=2\n", text)
        self.assertIn("export NCCL_IB_HCA='=mlx5_0'\n", text)

    def test_2i_a_guest_slower_than_its_read_timeout_is_unknown(self):
        # nvidia-smi (the observation's `-q -x`) takes 4 s on worker-01; its
        # `ssh: {read_timeout_s: 2}` cuts each read short: tried again on a
        # new connection, then that guest is unknown and the other planned
        vm = "worker-01"

        def edit(d):
            d["vms"][0]["guest"]["ssh"]["read_timeout_s"] = 2
        spec = self.variant(edit, "read-timeout.yaml")
        self.ssh(vm, "printf '#!/bin/sh\\nsleep 4\\nexec /usr/bin/nvidia-smi \"$@\"\\n' | "
                     "sudo -n tee /usr/local/sbin/nvidia-smi >/dev/null && "
                     "sudo -n chmod 755 /usr/local/sbin/nvidia-smi")
        try:
            r = self.gc("plan", "--only", "guest", spec=spec, check=1)
        finally:
            self.ssh(vm, "sudo -n rm -f /usr/local/sbin/nvidia-smi")
        timed_out = ("guest '%s': ssh gclab@%s:%d: command: timed out after 2.000 s"
                     % (vm, self.gaddr[vm], self.gport))
        self.assertEqual(r.stderr.count("%s: retrying after: %s\n" % (vm, timed_out)), 3, r.stderr)
        self.assertTrue(r.stderr.endswith("gpuclusterctl: error: guest '%s' failed: %s\n"
                                          % (vm, timed_out)), r.stderr)
        self.assertIn("  guest %s: unknown: %s\n" % (vm, timed_out), r.stdout)
        self.assertNotIn("worker-02", r.stderr)

    def test_3_drift_by_hand_is_planned_and_restored(self):
        vm = "worker-01"
        self.ssh(vm, "sudo -n rmmod nvidia_peermem && sudo -n ip link set ens224 mtu 1500 && "
                     "sudo -n sed -i 's/^FeatureType=4$/FeatureType=2/' /etc/nvidia/gridd.conf && "
                     "sudo -n mlnx_qos -i ens224 --pfc 0,0,0,0,0,0,0,0 >/dev/null")
        r = self.gc("plan", "--only", "guest", check=2)
        plan = r.stdout
        self.assertIn("~ guest/worker-01/peermem\n        loaded: false → true\n", plan)
        self.assertIn("~ guest/worker-01/rdma_interface\n        mtu: 1500 → 9000\n", plan)
        self.assertIn("~ guest/worker-01/license\n        feature_type: 2 → 4\n", plan)
        self.assertIn("~ guest/worker-01/roce_qos\n        pfc_priority: -1 → 3\n", plan)
        self.assertNotIn("worker-02", plan.replace("guest worker-02", ""))
        # validate names the same drift from the guest's side, with what it breaks
        rep = self.validate("--target", vm, "--skip", "pairs", check=1)
        f = {c[2]: c[3:] for c in self.failed(rep)}
        self.assertEqual(f["net.mtu"], ("9000", "1500"))
        self.assertEqual(f["rdma.mtu"], ("4096", "1024"))
        self.assertEqual(f["rdma.peermem"], ("loaded", "not loaded"))
        self.assertEqual(f["config guest/worker-01/peermem loaded"], ("true", "false"))
        self.assertEqual(f["config guest/worker-01/license feature_type"], ("4", "2"))
        self.assertEqual(f["rdma.pfc"][0], "3")
        self.assertEqual({c[1] for c in self.failed(rep)}, {vm})
        self.guest_apply()
        self.assert_guest_converged(vm)
        self.gc("plan", "--only", "guest", check=0)

    def test_4_everything_holds_after_a_reboot(self):
        vm = "worker-02"
        before = self.boot_id(vm)
        self.ssh(vm, "sudo -n systemctl reboot", check=False)
        time.sleep(5)
        self.wait_ssh(vm)
        self.assertNotEqual(self.boot_id(vm), before)
        # the NIC's QoS was lost with the reboot: the boot unit put it back
        deadline = time.time() + 120
        while "Licensed" not in self.ssh(vm, "nvidia-smi -q") and time.time() < deadline:
            time.sleep(2)
        self.assert_guest_converged(vm)
        self.gc("plan", "--only", "guest", check=0)

    def test_5_sudo_that_wants_a_password_fails_that_guest_clearly(self):
        def edit(d):
            d["credentials"].append({"name": "pw-user", "username": "gcpw",
                                     "key_file": os.path.join(self.lab, "guest_key")})
            d["vms"][0]["guest"]["credentials"] = "pw-user"
        r = self.gc("plan", "--only", "guest", spec=self.variant(edit, "sudo-pw.yaml"), check=1)
        self.assertIn("guest 'worker-01': sudo wants a password for 'gcpw': give it NOPASSWD for "
                      "root commands (a sudoers drop-in) or connect as root", r.stderr)
        self.assertNotIn("worker-02", r.stderr)

    def test_6_a_package_that_does_not_exist_fails_that_guest_only(self):
        def edit(d):
            d["vms"][0]["guest"]["driver"] = {"package": "nvidia-driver-999-missing"}
        self.ssh("worker-02", "sudo -n ip link set ens224 mtu 1500")
        r = self.guest_apply(spec=self.variant(edit, "missing-pkg.yaml"), check=1)
        self.assertIn("guest 'worker-01': NVIDIA driver install failed: E: Unable to locate package "
                      "nvidia-driver-999-missing", r.stderr)
        # the other guest went on and converged
        self.assertEqual(json.loads(self.ssh("worker-02", "ip -j link show dev ens224"))[0]["mtu"],
                         9000)

    def test_7_licence_that_never_comes_fails_within_its_timeout(self):
        vm = "worker-01"
        self.ssh(vm, "sudo -n mkdir -p /etc/gc-lab/faults && sudo -n touch "
                     "/etc/gc-lab/faults/licence-never && sudo -n sed -i "
                     "'s/^FeatureType=4$/FeatureType=2/' /etc/nvidia/gridd.conf")

        def edit(d):
            d["vms"][0]["guest"]["license"]["timeout_s"] = 6
        try:
            r = self.guest_apply(spec=self.variant(edit, "licence-timeout.yaml"), check=1)
            self.assertRegex(r.stderr, r"guest 'worker-01': the licence did not come within 6 s "
                                       r"\(nvidia-smi: 'Unlicensed \(Unrestricted\)'\)")
            self.assertNotIn("guest 'worker-02'", r.stderr)
            # Ctrl-C in the same wait (its 300 s default): the error is the
            # interruption, not a timeout that never came
            p = subprocess.Popen([BIN, "apply", "--only", "guest", "-v", "--yes", "--state-dir",
                                  self.state_dir, self.specfile], env=self.env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            err = []
            for line in p.stderr:
                err.append(line)
                if "worker-01: waiting for the licence (" in line:
                    p.send_signal(signal.SIGINT)
                    break
            out, rest = p.communicate(timeout=120)
            err = "".join(err) + rest
            self.assertEqual(p.returncode, 130, err)
            self.assertRegex(err, r"worker-01: .* FAILED: guest 'worker-01': interrupted \d+ s into "
                                  r"the wait for the licence \(nvidia-smi: 'Unlicensed "
                                  r"\(Unrestricted\)'\)\n")
            self.assertNotIn("did not come within", err)
        finally:
            self.ssh(vm, "sudo -n rm -f /etc/gc-lab/faults/licence-never")
        self.guest_apply()
        self.assert_guest_converged(vm)

    def test_8_connection_dropped_mid_install_is_retried_safely(self):
        vm = "worker-02"
        self.ssh(vm, "sudo -n DEBIAN_FRONTEND=noninteractive apt-get -q -y purge chrony >/dev/null")
        p = subprocess.Popen([BIN, "apply", "--only", "guest", "--yes", "-v",
                              "--state-dir", self.state_dir, self.specfile],
                             env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # when apt-get installs chrony, kill the sshd session it runs under
        killed = self.ssh(vm, r"""
for i in $(seq 600); do a=$(pgrep -f '^apt-get .*install.* chrony' | head -1); [ -n "$a" ] && break; sleep 0.1; done
p=$a
while [ -n "$p" ] && [ "$p" -gt 1 ]; do
    case "$(tr '\0' ' ' </proc/$p/cmdline)" in "sshd: gclab@notty"*) sudo -n kill -9 $p; echo killed; exit 0;; esac
    p=$(awk '{print $4}' /proc/$p/stat)
done
echo "not found (apt-get: $a)"
""", timeout=300).strip()
        out, err = p.communicate(timeout=900)
        self.assertEqual(killed, "killed")
        self.assertEqual(p.returncode, 0, out + err)
        self.assertIn("worker-02: retrying after: guest 'worker-02'", err)
        st = self.ssh(vm, "dpkg-query -W -f='${db:Status-Abbrev}' chrony; sudo -n dpkg --audit")
        self.assertEqual(st, "ii ")
        self.assert_guest_converged(vm)

    def test_8a_a_rerun_while_a_killed_runs_reboot_is_under_way_waits_for_the_guest(self):
        # found by scripts/soak.py --guests (docs/fuzzing.md): a run killed
        # once a guest's reboot went out, re-run at once.  The guest is down
        # or booting (a TCG boot takes ~40 s); observing it with the
        # transport's ~20 s of retries failed it.  It is waited for like a
        # reboot, and its new boot pays the reboot: none is sent twice.
        vm = "worker-02"
        self.ssh(vm, "sudo -n rmmod nvidia_peermem nvidia")  # owes a reboot (as test_9)
        before = self.boot_id(vm)
        p = subprocess.Popen([BIN, "apply", "--only", "guest", "--yes", "-v",
                              "--state-dir", self.state_dir, self.specfile],
                             env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.wait_reboot_sent(vm, before, p)
        self.assertIsNone(p.poll(), "the apply ended before the reboot went out")
        p.kill()
        p.wait()
        r = self.guest_apply(check=0)
        self.assertIn("%s: warning: an earlier apply rebooted it and never saw it back: waiting "
                      "up to 1200 s for it (" % vm, r.stderr)
        self.assertIn("%s: answers again, from a boot after the reboot an earlier apply sent" % vm,
                      r.stderr)
        self.assertNotEqual(self.boot_id(vm), before)
        # the journal: one reboot of worker-02 sent (by the killed run), then seen through
        with open(os.path.join(self.state_dir, "%s.journal" % self.doc["metadata"]["name"]),
                  encoding="utf-8") as f:
            recs = [json.loads(l) for l in f if l.strip()]
        mine = [(x["kind"], x["state"]) for x in recs if x["target"] == vm]
        self.assertEqual(mine.count(("reboot", "start")), 1, mine)
        self.assertIn(("reboot_seen", "done"), mine)
        self.assert_guest_converged(vm)

    def test_9_guest_that_does_not_come_back_fails_alone(self):
        vm = "worker-01"
        # the driver's modules unloaded by hand: the installed driver is not
        # the one running, so the guest owes the reboot a driver install
        # ends with (the same reboot, without a reinstall's minutes of TCG)
        self.ssh(vm, "sudo -n rmmod nvidia_peermem nvidia")
        plan = self.gc("plan", "--only", "guest", check=2).stdout
        self.assertIn("the installed NVIDIA driver is not loaded", plan)
        before = self.boot_id(vm)
        p = subprocess.Popen([BIN, "apply", "--only", "guest", "--yes", "-v",
                              "--reboot-timeout", "40", "--state-dir", self.state_dir,
                              self.specfile],
                             env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # the reboot goes out: then the VM is switched off for good
        self.wait_reboot_sent(vm, before, p)
        with open(os.path.join(self.lab, "guests", vm, "qemu.pid"), encoding="utf-8") as f:
            os.kill(int(f.read().strip()), 9)
        out, err = p.communicate(timeout=900)
        self.assertEqual(p.returncode, 1, out + err)
        self.assertIn("worker-01: wait for worker-01 FAILED: guest 'worker-01' did not come back "
                      "within 40 s after its reboot (guest 'worker-01': ssh gclab@127.0.0.51:%d: "
                      "cannot connect: Connection refused)" % self.gport, err)
        self.assertRegex(out, r"worker-01 +guest +\d+ done, 1 failed, \d+ skipped")
        self.assert_guest_converged("worker-02")  # untouched by worker-01's failure
        out = self.run_lab("guest-reset", vm)
        self.assertIn("lab: guest %s answers SSH" % vm, out)

    # ---------------------------------------------------------------- the lab itself
    # The lab's own checks, on worker-01 as test_9's guest-reset left it (a
    # fresh disk) and driven by plain ssh only: the guest is what the spec
    # says, nothing of the stack is preinstalled, and the stand-ins that
    # tests 1-9 do not run through the driver (the MLNX_OFED archive and the
    # .run installer) behave as the real ones, in the formats of
    # ../shared/REAL-FORMATS.md.  They used to boot a lab of their own
    # (tests/sim/test_guestlab.py): two more guests, each install again.

    def test_9a_lab_a_reset_guest_is_a_fresh_disk_of_the_spec(self):
        vm = "worker-01"
        self.assertRegex(self.run_lab("status"), r"lab: guest %s running \(pid \d+, ssh %s:%d\)"
                         % (vm, self.gaddr[vm].replace(".", r"\."), self.gport))
        self.assertEqual(self.ssh(vm, "hostname").strip(), vm)
        self.assertIn("VERSION_CODENAME=bookworm\n", self.ssh(vm, "cat /etc/os-release"))
        self.assertIn('"product": "Tesla V100-PCIE-32GB"', self.ssh(vm, "cat /etc/gc-lab/gpu.json"))
        # nothing of what the driver installs is there; the only APT source is the lab's
        # (a fresh disk's dpkg may know a package as "un": known, not installed)
        pk = self.ssh(vm, "dpkg-query -W -f='${Package} ${db:Status-Abbrev}\\n' rdma-core "
                          "nvidia-driver chrony 2>/dev/null || true")
        self.assertEqual([l for l in pk.splitlines() if l.split()[1:2] != ["un"]], [])
        self.assertEqual(self.ssh(vm, "cat /etc/apt/sources.list.d/*.list").strip(),
                         "deb [trusted=yes] file:/srv/gc-lab-repo ./")
        self.assertEqual(self.ssh(vm, "nvidia-smi >/dev/null 2>&1; echo $?").strip(), "127")
        with open(os.path.join(self.lab, "known_hosts"), encoding="utf-8") as f:
            self.assertIn("[%s]:%d ssh-ed25519 " % (self.gaddr[vm], self.gport), f.read())

    def scp(self, vm, path):
        subprocess.run(["scp", "-q", "-o", "BatchMode=yes", "-o",
                        "UserKnownHostsFile=" + os.path.join(self.lab, "known_hosts"),
                        "-i", os.path.join(self.lab, "guest_key"), "-P", str(self.gport),
                        path, "gclab@%s:/tmp/" % self.gaddr[vm]], check=True, timeout=300)

    def test_9b_lab_ofed_archive_and_run_installer(self):
        vm = "worker-01"
        ofed = "MLNX_OFED_LINUX-23.10-1.1.9.0-debian12.1-x86_64.tgz"
        run = "NVIDIA-Linux-x86_64-535.183.01-grid.run"
        # the MLNX_OFED archive, unpacked and run the way the guest driver runs it
        self.scp(vm, os.path.join(self.lab, ofed))
        self.assertEqual(self.ssh(vm, "ofed_info -s >/dev/null 2>&1; echo $?").strip(), "127")
        out = self.ssh(vm, "cd /tmp && rm -rf ofed && mkdir ofed && tar -xzf %s -C ofed && "
                           "cd ofed/* && sudo -n ./mlnxofedinstall --force --without-fw-update"
                       % ofed, timeout=900)
        self.assertIn("Installation passed successfully", out)
        self.assertEqual(self.ssh(vm, "ofed_info -s"), "MLNX_OFED_LINUX-23.10-1.1.9.0:\n")
        self.assertRegex(self.ssh(vm, "ibv_devices"), r"\n\s+mlx5_0\s+[0-9a-f]{16}\n")
        self.assertEqual(self.ssh(vm, "dpkg-query -W -f='${db:Status-Abbrev}' perftest"), "ii ")
        # the .run installer: NVIDIA's option errors, then a silent install
        self.scp(vm, os.path.join(self.lab, run))
        r = subprocess.run(["ssh", "-p", str(self.gport), "-i", os.path.join(self.lab, "guest_key"),
                            "-o", "UserKnownHostsFile=" + os.path.join(self.lab, "known_hosts"),
                            "-o", "BatchMode=yes", "gclab@" + self.gaddr[vm],
                            "sudo -n sh /tmp/%s --no-such-flag" % run],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 1)
        self.assertIn("Unrecognized option: '--no-such-flag'", r.stderr)
        self.ssh(vm, "sudo -n sh /tmp/%s --silent --no-questions" % run, timeout=600)
        # installed, not loaded: nvidia-smi says what the real one says
        self.assertEqual(self.ssh(vm, "nvidia-smi; echo rc=$?"),
                         "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
                         "driver. Make sure that the latest NVIDIA driver is installed and running."
                         "\n\nrc=9\n")
        self.ssh(vm, "sudo -n modprobe nvidia_peermem")
        mods = self.ssh(vm, "lsmod")
        self.assertRegex(mods, r"\nnvidia_peermem\s")
        self.assertRegex(mods, r"\nnvidia\s+\d+\s+1 nvidia_peermem")
        x = ET.fromstring(self.ssh(vm, "nvidia-smi -q -x").split("\n", 2)[2])
        self.assertEqual(x.tag, "nvidia_smi_log")
        self.assertEqual((x.findtext("driver_version"), x.findtext("attached_gpus")),
                         ("535.183.01", "1"))
        gpu = x.find("gpu")
        self.assertEqual((gpu.findtext("product_name"),
                          gpu.findtext("gpu_virtualization_mode/virtualization_mode"),
                          gpu.findtext("fb_memory_usage/total")),
                         ("Tesla V100-PCIE-32GB", "Pass-Through", "32768 MiB"))
        self.assertEqual(self.ssh(vm, "nvidia-smi --query-gpu=name,memory.total,driver_version "
                                      "--format=csv,noheader"),
                         "Tesla V100-PCIE-32GB, 32768 MiB, 535.183.01\n")
        self.assertIn("nvidia-smi -q -x", self.ssh(vm, "cat /var/log/gc-lab/calls.log"))


if __name__ == "__main__":
    unittest.main()
