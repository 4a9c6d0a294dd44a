"""End-to-end: the short fault soak (issue 18, item 4) that CI runs;
scripts/soak.py is the long one (its figures: docs/fuzzing.md "Fault soak").

SIGKILLs at random points of `gpuclusterctl apply`, chained (a re-run is
killed again while its episode has kills left), then re-runs until one
exits 0; and one apply in which an SSH target and the vCenter drop their
connections at random points.  After every episode the soak reads the lab
from outside the tool (the simulators' state files and command logs, vcsim
through tests/sim/vcsim_edit.py) and records a violation when: a plan shows
changes, a host is left in maintenance mode, a VM is missing, doubled or
differs from the clean run's, a host rebooted more than once more than the
clean run, a VIB went out twice, or a host's state differs from the clean
run's.  kvm-pair's libvirt targets are soaked through this machine's real
libvirtd, read back with virsh: the same domains, networks and volumes as
the clean run, and a plan without changes.  The seed is fixed; GC_SOAK_SEED
replays another.
"""
import argparse
import os
import sys
import unittest

from labtest import ROOT

sys.path.insert(0, os.path.join(ROOT, "scripts"))
import soak  # noqa: E402  (scripts/soak.py)


class ShortSoak(unittest.TestCase):
    port = 2356  # its vcsim on 9016 (8978 + 38), clear of the unit tests' 8980-8997

    def args(self, only, kills, per_episode, drops):
        offset = int(os.environ.get("GC_IT_PORT_OFFSET", "0"))
        return argparse.Namespace(only=only, kills=kills, per_episode=per_episode, drops=drops,
                                  guests=False, budget=None, kill_window="clean",
                                  reobserve=soak.REOBSERVE_S, drops_per_episode=2,
                                  seed=int(os.environ.get("GC_SOAK_SEED", "18")),
                                  reboot_seconds=0.5, port=self.port + offset,
                                  vcsim_port=9016 + offset)

    def soak(self, name, args):
        ex = soak.example(name, args, soak.random.Random("%d/%s" % (args.seed, name)))
        try:
            ex.soak()
        finally:
            ex.lab.stop()
        print("\n" + soak.table([ex]), file=sys.stderr)
        self.assertEqual(ex.violations, [])
        return ex

    def test_guest_drop_names_what_the_cut_session_ran(self):
        # the guest soak's drops print what our driver's session was running
        # when it was cut: the innermost commands, not the sudo and sh around
        ps = ("  1     0 /sbin/init\n"
              "  700   1 sshd: gclab@notty\n"
              "  701 700 sudo -n sh -c export DEBIAN_FRONTEND=noninteractive; apt-get install x\n"
              "  702 701 sh -c export DEBIAN_FRONTEND=noninteractive; apt-get install x\n"
              "  703 702 apt-get -q -y   install x\n"
              "  704 703 /usr/bin/dpkg --status-fd 35 --unpack /var/cache/apt/archives/x.deb\n"
              "  800   1 sshd: gclab@notty\n"
              "  900   1 sshd: gclab@notty\n"
              "  901 900 sudo -n sh -c nvidia-smi -q -x\n"
              "  902 901 /bin/bash /usr/bin/nvidia-smi -q -x\n")
        self.assertEqual(soak.session_work(ps, ["700"]),
                         "/usr/bin/dpkg --status-fd 35 --unpack /var/cache/apt/archives/x.deb")
        self.assertEqual(soak.session_work(ps, ["800"]), "idle")
        self.assertEqual(soak.session_work(ps, ["700", "900"]),
                         "/usr/bin/dpkg --status-fd 35 --unpack /var/cache/apt/archives/x.deb; "
                         "/bin/bash /usr/bin/nvidia-smi -q -x")

    def test_violation_keeps_evidence(self):
        # a violation's evidence outlives the lab: the violation, the run's
        # whole stderr, the journal, each guest's answer or why there is none,
        # and its console; kept once per episode
        import tempfile

        class FakeLab:
            guests = {"worker-01": "127.0.0.51", "worker-02": "127.0.0.52"}

            def __init__(self, d):
                self.dir = d

            def guest_ssh(self, vm, command, timeout=120):
                if vm == "worker-02":
                    raise soak.subprocess.TimeoutExpired(["ssh", vm], timeout)
                return "asked: " + command

        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "lab", "state"))
            os.makedirs(os.path.join(d, "lab", "guests", "worker-01"))
            with open(os.path.join(d, "lab", "state", "c.journal"), "w") as f:
                f.write('{"run":"1"}\n')
            with open(os.path.join(d, "lab", "guests", "worker-01", "console.log"), "w") as f:
                f.write("A stop job is running\n")
            args = self.args("esxi,guest", 1, 1, 0)
            args.evidence = os.path.join(d, "kept")
            ex = soak.Example("roce-pair", args, soak.random.Random(1), lab=FakeLab(os.path.join(d, "lab")))
            ex.episode = "kill episode 2"
            ex.violation("a re-run exited 1: tail", "whole stderr\ntail")
            ex.violation("a second one")
            kept = os.path.join(d, "kept", "roce-pair-kill-episode-2")
            with open(os.path.join(kept, "violation.txt")) as f:
                self.assertEqual(f.read(), "roce-pair kill episode 2 (seed %d): a re-run exited 1: tail\n"
                                 % args.seed)
            with open(os.path.join(kept, "stderr.txt")) as f:
                self.assertEqual(f.read(), "whole stderr\ntail")
            with open(os.path.join(kept, "state", "c.journal")) as f:
                self.assertEqual(f.read(), '{"run":"1"}\n')
            with open(os.path.join(kept, "guests", "worker-01", "now.txt")) as f:
                self.assertEqual(f.read(), "asked: " + soak.GUEST_EVIDENCE)
            with open(os.path.join(kept, "guests", "worker-01", "console.log")) as f:
                self.assertEqual(f.read(), "A stop job is running\n")
            with open(os.path.join(kept, "guests", "worker-02", "now.txt")) as f:
                self.assertEqual(f.read(), "not read: Command '['ssh', 'worker-02']' timed out "
                                 "after 150 seconds\n")
            self.assertFalse(os.path.exists(os.path.join(kept, "guests", "worker-02", "console.log")))
            self.assertEqual(len(ex.violations), 2)
            self.assertEqual(os.listdir(os.path.join(d, "kept")), ["roce-pair-kill-episode-2"])

    def test_vgpu_example_converges_after_kills(self):
        # two reboots a host (the ECC change needs the driver the first
        # reboot loads) and a VIB: the costliest example to get wrong
        # (its hosts only: the vCenter's part is the other test's)
        ex = self.soak("vgpu-pvrdma", self.args("esxi", kills=3, per_episode=3, drops=0))
        self.assertEqual(ex.fig["kills"], 3)
        self.assertGreater(ex.fig["runs"], 3)   # every kill had a re-run after it
        self.assertEqual(set(ex.needed.values()), {0, 2})

    def test_roce_pair_converges_after_kills_and_drops(self):
        # hosts, the switch and two passthrough VMs on vCenter
        ex = self.soak("roce-pair", self.args("esxi,switch,vcenter", kills=3, per_episode=3, drops=1))
        self.assertEqual(ex.fig["kills"], 3)
        self.assertEqual(ex.fig["dropped_ssh"], 1)

    def test_kvm_pair_converges_after_kills(self):
        # the libvirt targets through a real libvirtd: each kill may land in
        # the middle of a define that libvirtd finishes after the run is gone
        # (what the long soak found: the re-run then met "already exists")
        ex = self.soak("kvm-pair", self.args("libvirt", kills=3, per_episode=3, drops=0))
        self.assertEqual(ex.fig["kills"], 3)
        self.assertGreater(ex.fig["runs"], 3)
        self.assertEqual(ex.ref["domains"], ["soak-kvm-worker-01", "soak-kvm-worker-02"])
        self.assertEqual(ex.ref["networks"], ["soak-kvm01-rdma", "soak-kvm02-rdma"])


if __name__ == "__main__":
    unittest.main()
