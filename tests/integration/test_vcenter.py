"""End-to-end: the VM part of the example specs, applied by the real
gpuclusterctl binary to the lab's vCenter (vcsim, built from Debian's govmomi
package, TLS from the lab's test CA) together with the simulated ESXi hosts
and switch the VMs' devices depend on.  Issue 4's acceptance lines.

Every VM is read back with tests/sim/vcsim_edit.py, a SOAP client of its own
(python's standard library, not our C code), so the tool never grades
itself.  What vcsim cannot model is listed in docs/vcenter.md; the tests
assert what it does keep: devices with their backings, extraConfig,
firmware, the reservation lock, power state, host, CPUs and memory.
"""
import glob
import json
import os
import shutil
import signal
import subprocess
import threading
import time
import unittest

from labtest import BIN, ROOT, LabCase

EDIT = os.path.join(ROOT, "tests", "sim", "vcsim_edit.py")

V100_32GB = {"vendor_id": 4318, "device_id": "1db6"}


class VcenterLab(LabCase):
    only = "esxi,switch,vcenter"

    def apply(self, *args, check=0, **kw):
        return self.gc("apply", "--only", self.only, *args, check=check, **kw)

    def plan(self, *args, check=0, **kw):
        return self.gc("plan", "--only", self.only, *args, check=check, **kw)

    def assert_powered_back_on(self, r, vm):
        """apply -v's r says the failure's recovery powered vm back on, and
        nothing was left; vCenter shows it on."""
        self.assertIn("vcenter: powered %s back on after the failure\n" % vm, r.stderr)
        self.assertIn("\n  vcenter               powered back on after the failure: %s\n" % vm,
                      r.stdout)
        self.assertNotIn("LEFT", r.stdout)
        self.assertEqual(self.show(vm)["power"], "poweredOn")

    def apply_in_background(self, errname, ready, *args, spec=None):
        """An apply (stdout piped, stderr to a file in the lab), returned once
        ready(its stderr so far) is true, or after 60 s: (process, stderr path)."""
        errpath = os.path.join(self.lab, errname)
        with open(errpath, "w") as errf:
            p = subprocess.Popen([BIN, "apply", "--yes", "--only", self.only, "--state-dir",
                                  self.state_dir, *args, spec or self.specfile], env=self.env,
                                 stdout=subprocess.PIPE, stderr=errf, text=True)
        for _ in range(1200):
            with open(errpath, encoding="utf-8") as f:
                if ready(f.read()):
                    break
            time.sleep(0.05)
        return p, errpath

    def interrupted_twice(self, p):
        """SIGINT, then SIGTERM (another kind: no pending first one absorbs
        it) to an apply in the background: it exits 130.  Its stdout."""
        p.send_signal(signal.SIGINT)
        p.send_signal(signal.SIGTERM)
        out, _ = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 130, out)
        return out

    def vc(self, *args, check=True):
        """vcsim_edit.py against the lab's vCenter, as an operator would."""
        d = os.path.join(self.lab, "vcsim")
        argv = [EDIT, "--url", "https://127.0.0.1:%d/sdk" % self.vcsim_port,
                "--ca", os.path.join(d, "ca.crt"), "--user", "gcadmin",
                "--password-file", os.path.join(d, "password"), *args]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        if check:
            self.assertEqual(r.returncode, 0, "vcsim_edit %s: %s%s" % (args, r.stdout, r.stderr))
        return r

    def show(self, vm):
        return json.loads(self.vc("show", vm).stdout)

    def faults(self, faults):
        path = os.path.join(self.lab, "vcsim", "faults.json")
        if faults is None:
            if os.path.exists(path):
                os.unlink(path)
            return
        with open(path, "w", encoding="utf-8") as f:
            json.dump(faults, f)

    def setUp(self):
        super().setUp()
        self.faults(None)

    def devices(self, vm, dtype):
        return [d for d in vm["devices"] if d["type"] == dtype]

    def assert_common(self, vm, name, host, cpus, memory_gb, firmware):
        self.assertEqual(vm["name"], name)
        self.assertEqual(vm["host"], host, name)
        self.assertEqual(vm["power"], "poweredOn", name)
        self.assertEqual(vm["firmware"], firmware, name)
        self.assertEqual(vm["cpus"], cpus, name)
        self.assertEqual(vm["memory_mb"], memory_gb * 1024, name)

    def reapply_changes_nothing(self, spec=None):
        r = self.gc("apply", "--only", self.only, "--json", spec=spec, check=0)
        rep = json.loads(r.stdout)
        self.assertEqual(rep["changing_commands"], 0, r.stdout)
        self.assertEqual(rep["done"], 0, r.stdout)
        r = self.plan(spec=spec, check=0)
        self.assertIn("No changes.", r.stdout)

    def spec_variant(self, edit):
        import yaml
        with open(self.specfile, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
        edit(doc)
        path = os.path.join(self.lab, "variant-%s.yaml" % self._testMethodName)
        with open(path, "w", encoding="utf-8") as f:
            yaml.safe_dump(doc, f)
        return path

    def vcenter_steps(self, plan_out):
        """The vCenter target's step lines of a text plan, in order."""
        lines = plan_out.splitlines()
        start = lines.index("  vcenter vcenter")
        steps = []
        for l in lines[start + 1:]:
            if not l.startswith("    "):
                break
            if l[4] in "+~->":
                steps.append(l[4:])
        return steps


class ApplyVmsRoce(VcenterLab):
    spec = "examples/roce-passthrough.yaml"
    port = 2315

    def assert_worker(self, i):
        name, host = "worker-%02d" % i, "esx%02d" % i
        vm = self.show(name)
        self.assert_common(vm, name, host, 16, 128, "efi")
        self.assertTrue(vm["reservation_locked"], name)
        self.assertEqual(vm["extra_config"].get("pciPassthru.use64bitMMIO"), "TRUE", name)
        self.assertEqual(vm["extra_config"].get("pciPassthru.64bitMMIOSizeGB"), "64", name)
        self.assertEqual(vm["extra_config"].get("pciPassthru.allowP2P"), "TRUE", name)
        gpus = self.devices(vm, "VirtualPCIPassthrough")
        self.assertEqual(len(gpus), 1, name)
        b = gpus[0]["backing"]
        self.assertEqual(b["type"], "VirtualPCIPassthroughDeviceBackingInfo", name)
        self.assertEqual(b["id"], "0000:3b:00.0", name)
        self.assertEqual(b["vendorId"], V100_32GB["vendor_id"], name)
        self.assertEqual(b["deviceId"], V100_32GB["device_id"], name)
        self.assertTrue(b["systemId"], name)
        vfs = self.devices(vm, "VirtualSriovEthernetCard")
        self.assertEqual(len(vfs), 1, name)
        self.assertEqual(vfs[0]["sriov_pf"], "0000:5e:00.0", name)
        self.assertEqual(vfs[0]["network"], "rdma-net", name)
        nics = self.devices(vm, "VirtualVmxnet3")
        self.assertEqual([n["network"] for n in nics], ["VM Network"], name)

    def test_a_memory_change_on_four_workers_powers_off_one_at_a_time(self):
        self.apply()

        def edit(d):
            for vm in d["vms"][:4]:
                vm["memory_gb"] = 64
        spec = self.spec_variant(edit)
        r = self.plan(spec=spec, check=2)
        for i in (2, 3, 4):
            self.assertIn("after worker-%02d is back on (rolling.max_unavailable_vms: 1)" % (i - 1), r.stdout)
        seen = json.loads(self.vc("events", "VmPoweredOffEvent", "VmPoweredOnEvent").stdout)
        before = max([ev["key"] for ev in seen] or [0])
        self.apply(spec=spec)
        for i in range(1, 5):
            vm = self.show("worker-%02d" % i)
            self.assertEqual(vm["memory_mb"], 64 * 1024)
            self.assertEqual(vm["power"], "poweredOn")
        # vCenter's own record, not ours: its events of power changes, in the
        # order it logged them (keys grow by one per event), after the ones the
        # first apply left.  A VM is down from its VmPoweredOffEvent to its
        # VmPoweredOnEvent; at no point may two workers be down at once.
        down, most, offs = set(), 0, []
        for ev in json.loads(self.vc("events", "VmPoweredOffEvent", "VmPoweredOnEvent").stdout):
            if ev["key"] <= before:
                continue
            if ev["type"] == "VmPoweredOffEvent":
                down.add(ev["vm"])
                offs.append(ev["vm"])
            else:
                down.discard(ev["vm"])
            most = max(most, len(down))
        self.assertEqual(offs, ["worker-01", "worker-02", "worker-03", "worker-04"])
        self.assertEqual(most, 1)
        self.assertEqual(down, set())

    def test_two_hosts_in_maintenance_together_power_their_vms_off_one_at_a_time(self):
        # issue 12: rolling.max_unavailable: 2 puts esx01 and esx02 in
        # maintenance mode in one wave; their passthrough VMs cannot move and
        # count against rolling.max_unavailable_vms (1): worker-02 goes down
        # only once worker-01 is back
        self.apply()
        for host in ("esx01", "esx02"):
            self.remote(host, "esxcli hardware pci pcipassthru set -d 0000:3b:00.0 -e false")
        r = self.plan(check=2)
        self.assertIn("Wave 1 of 1 (maintenance: esx01, esx02)", r.stdout)
        self.assertIn("why: esx02 enters maintenance mode and VM worker-02 cannot be live-migrated "
                      "(passthrough GPU 0000:3b:00.0); after worker-01 is back on "
                      "(rolling.max_unavailable_vms: 1)", r.stdout)
        self.assertNotIn("Warning:", r.stdout)
        seen = json.loads(self.vc("events", "VmPoweredOffEvent", "VmPoweredOnEvent").stdout)
        before = max([ev["key"] for ev in seen] or [0])
        self.apply()
        # vCenter's own record of the power changes, in the order it logged them
        events = [(ev["type"], ev["vm"]) for ev in json.loads(
            self.vc("events", "VmPoweredOffEvent", "VmPoweredOnEvent").stdout) if ev["key"] > before]
        self.assertEqual(events, [("VmPoweredOffEvent", "worker-01"), ("VmPoweredOnEvent", "worker-01"),
                                  ("VmPoweredOffEvent", "worker-02"), ("VmPoweredOnEvent", "worker-02")])
        for i in (1, 2):
            self.assert_worker(i)
        for host in ("esx01", "esx02"):
            self.assertFalse(self.state(host)["maintenance"])
        self.reapply_changes_nothing()

    def test_vm_part_converges_then_reapply_changes_nothing(self):
        r = self.apply("-v")
        self.assertIn("1 property-collector round trip", r.stdout + r.stderr)
        for i in range(1, 9):
            self.assert_worker(i)
        self.reapply_changes_nothing()

    POLLS = ("vmware -v", "esxcli system stats uptime get")
    LEASE_OPTION = "/UserVars/GpuclusterctlLease"

    def host_lease(self, h):
        return self.state(h)["advanced"].get(self.LEASE_OPTION)

    def test_each_hosts_lease_heads_its_first_changing_exec(self):
        # With a vCenter its compare-and-set lease goes first, alone; each
        # host's lease then heads the chain of the host's first changing
        # exec (GC_ESXI_LEASE_CAS_SCRIPT), not an exec of its own: the
        # observation, the lease with the changes, the reboot, the
        # read-back with the exit, and the lease's clear at the end (the
        # VMs still had work): 5 execs a host besides the polls, 6 for a
        # host of a later maintenance window, which sets its NTP first.
        r = self.apply("-v")
        self.assertIn("gpuclusterctl: cluster lease taken on 9 targets (0 in their observation, "
                      "8 in their first step), cleared on 9 (0 with their last step)\n", r.stderr)
        trips = {}
        for i in range(1, 9):
            h = "esx%02d" % i
            execs = [c for _, c in self.execs(h) if c not in self.POLLS]
            self.assertRegex(execs[1], r"^echo @@gc:(\w+):c0 && sh -c 'r=\$\(esxcli --formatter=xml system "
                             r"settings advanced list -o /UserVars/GpuclusterctlLease .*@@lease:\$1:held:.*' "
                             r"lease \w+ ([0-9a-f]{16}) 'cluster=roce-lab;holder=\S+;pid=\d+;lock=\2;"
                             r"since=\d+;expires=\d+' && echo @@gc:\1:c1 && esxcli ", h)
            # the lease in the observation (read), the first step and the
            # clear at the end, nowhere else
            self.assertEqual([k for k, c in enumerate(execs) if self.LEASE_OPTION in c],
                             [0, 1, len(execs) - 1], h)
            self.assertIn("@@lease:cleared", execs[-1], h)
            first_window = "maintenanceMode set -e true" in execs[1]
            self.assertEqual(len(execs), 5 if first_window else 6, h)
            self.assertEqual(self.host_lease(h), "none", h)
            trips[h] = len(execs)
        self.assertEqual(sorted(trips.values()), [5, 5, 6, 6, 6, 6, 6, 6], trips)
        self.assertIn("gpuclusterctl: round trips per ESXi host: 5 to 6 over 8 hosts", r.stderr)
        self.assertNotIn("gpuclusterctl.lease", json.dumps(json.loads(self.vc("custom-fields").stdout)))
        self.reapply_changes_nothing()

    def test_an_approval_that_takes_time_writes_every_lease_before_the_first_wave(self):
        # an operator who reads the plan for 3 s before typing yes: no host
        # waits unleased for its first step meanwhile; each host's lease is
        # written by the compare-and-set in an exec of its own once the
        # plan is approved, and no changing exec carries it
        import pty
        master, slave = pty.openpty()
        timer = threading.Timer(3.0, lambda: os.write(master, b"yes\n"))
        timer.start()
        try:
            r = subprocess.run([BIN, "apply", "-v", "--only", self.only, "--state-dir", self.state_dir,
                                self.specfile], env=self.env, stdin=slave, capture_output=True, text=True,
                               timeout=300)
        finally:
            timer.join()
            os.close(slave)
            os.close(master)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("Enter a value: ", r.stdout)
        self.assertIn("gpuclusterctl: cluster lease taken on 9 targets (0 in their observation), "
                      "cleared on 9 (0 with their last step)\n", r.stderr)
        for i in range(1, 9):
            h = "esx%02d" % i
            execs = [c for _, c in self.execs(h) if c not in self.POLLS]
            self.assertRegex(execs[1], r"^sh -c 'r=\$\(esxcli --formatter=xml system settings advanced list "
                             r"-o /UserVars/GpuclusterctlLease .*@@lease:\$1:held:.*' lease \w+ [0-9a-f]{16} "
                             r"'cluster=roce-lab;holder=\S+;pid=\d+;lock=[0-9a-f]{16};since=\d+;expires=\d+'$", h)
            self.assertEqual([k for k, c in enumerate(execs) if self.LEASE_OPTION in c],
                             [0, 1, len(execs) - 1], h)
            self.assertEqual(self.host_lease(h), "none", h)
        self.reapply_changes_nothing()

    def race_a_lease_onto_esx02(self, *args):
        """An apply held after its lease check (GC_TEST_LEASE_BARRIER) while
        another apply, whose spec lacks the vCenter, takes esx02; then let
        go.  (returncode, stdout, stderr, their lease)."""
        barrier = os.path.join(self.lab, "go")
        for p in (barrier, barrier + ".ready"):
            if os.path.exists(p):
                os.unlink(p)
        p = subprocess.Popen([BIN, "apply", "--yes", "-v", "--only", self.only, "--state-dir",
                              self.state_dir, *args, self.specfile],
                             env=dict(self.env, GC_TEST_LEASE_BARRIER=barrier),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            for _ in range(6000):
                if os.path.exists(barrier + ".ready") or p.poll() is not None:
                    break
                time.sleep(0.02)
            self.assertTrue(os.path.exists(barrier + ".ready"), "the apply never reached the barrier")
            now = int(time.time())
            theirs = ("cluster=roce-lab;holder=ops@elsewhere;pid=4242;lock=0123456789abcdef;"
                      "since=%d;expires=%d" % (now, now + 3600))
            self.remote("esx02", "esxcli system settings advanced add -o GpuclusterctlLease -t string "
                                 "-s none -d 'gpuclusterctl cluster lease' && esxcli system settings "
                                 "advanced set -o %s -s '%s'" % (self.LEASE_OPTION, theirs))
        finally:
            open(barrier, "w").close()
        out, err = p.communicate(timeout=300)
        return p.returncode, out, err, theirs

    def test_a_lease_taken_after_the_check_is_never_overwritten(self):
        # --parallelism 1: the first wave's hosts do not all start at once,
        # so every host's lease is written before the first wave, each by
        # the same compare-and-set: esx02's, taken by another apply since
        # the check, is named and kept, and nothing changes anywhere (a
        # plain write would have overwritten it)
        rc, out, err, theirs = self.race_a_lease_onto_esx02("--parallelism", "1")
        self.assertEqual(rc, 1, out + err)
        self.assertRegex(err, r"gpuclusterctl: error: cluster 'roce-lab' is locked on esxi 'esx02' by "
                         r"ops@elsewhere pid 4242 since \S+Z \(until \S+Z\): another apply holds it, "
                         r"maybe from another copy of the spec; nothing was changed\. If that apply is "
                         r"dead: gpuclusterctl unlock --force SPEC\n")
        self.assertIn("(0 in their observation)", err)
        self.assertEqual(self.host_lease("esx02"), theirs)
        for i in range(1, 9):
            h = "esx%02d" % i
            self.assertEqual(self.changes(h), [], h)
            if h != "esx02":
                self.assertIn(self.host_lease(h), (None, "none"), h)
        self.assertEqual(json.loads(self.vc("inventory").stdout)["VirtualMachine"].count("worker-01"), 0)
        self.assertNotIn("gpuclusterctl.lease", json.dumps(json.loads(self.vc("custom-fields").stdout)))

    def test_a_lease_taken_after_the_check_stops_that_hosts_first_step(self):
        # Another apply, whose spec lacks the vCenter, takes esx02 after
        # this one read the leases and before its first step
        # (GC_TEST_LEASE_BARRIER holds this one there): the compare-and-set
        # at the head of esx02's first exec stops that exec before its
        # first change, naming the holder; esx02 keeps that lease and
        # nothing changed on it; the rollout stops, no host is left in
        # maintenance mode, and every lease of ours is cleared.
        rc, out, err, theirs = self.race_a_lease_onto_esx02()
        self.assertEqual(rc, 1, out + err)
        self.assertRegex(err, r"esx02: .*cluster 'roce-lab' is locked on esxi 'esx02' by ops@elsewhere pid "
                         r"4242 since \S+Z \(until \S+Z\): another apply took it after this one read "
                         r"it, maybe from another copy of the spec; nothing was changed on it, and the "
                         r"rollout stops\. If that apply is dead: gpuclusterctl unlock --force SPEC")
        # esx02: the observation, the other apply's write, then the first
        # step's exec, which stopped at the lease; nothing after it
        execs = [c for _, c in self.execs("esx02") if c not in self.POLLS]
        self.assertEqual(len(execs), 3, execs)
        self.assertTrue(execs[1].startswith("esxcli system settings advanced add -o GpuclusterctlLease "))
        self.assertRegex(execs[2], r"^echo @@gc:\w+:c0 && sh -c ")
        self.assertEqual(self.changes("esx02"), [])
        self.assertEqual(self.host_lease("esx02"), theirs)
        for i in range(1, 9):
            h = "esx%02d" % i
            self.assertFalse(self.state(h)["maintenance"], h)
            if h != "esx02":
                self.assertIn(self.host_lease(h), (None, "none"), h)
        self.assertNotIn("gpuclusterctl.lease", json.dumps(json.loads(self.vc("custom-fields").stdout)))
        self.assertEqual(json.loads(self.vc("inventory").stdout)["VirtualMachine"].count("worker-02"), 0)
        # once that apply is done with esx02, the next apply converges
        self.remote("esx02", "esxcli system settings advanced set -o %s -s none" % self.LEASE_OPTION)
        self.apply()
        for i in range(1, 9):
            self.assert_worker(i)
        self.reapply_changes_nothing()

    def test_vm_drift_by_hand_shows_in_plan_exactly_and_apply_restores_it(self):
        self.apply()
        self.vc("worker-03", "set-extra", "pciPassthru.64bitMMIOSizeGB", "32")
        r = self.plan(check=2)
        self.assertIn("~ vm/worker-03/extra_config", r.stdout)
        self.assertIn("pciPassthru.64bitMMIOSizeGB: 32 → 64", r.stdout)
        self.assertIn("Plan: 0 to add, 1 to change, 0 to destroy", r.stdout)
        self.apply()
        self.assertEqual(self.show("worker-03")["extra_config"]["pciPassthru.64bitMMIOSizeGB"], "64")
        self.reapply_changes_nothing()

    def test_failing_task_fails_that_vm_only_with_vcenters_message(self):
        self.faults({"ReconfigVM_Task": {"worker-03": {
            "fault": "InvalidDeviceSpec", "message": "Invalid configuration for device '0'."}}})
        # the other VMs go on within the wave; --continue-on-error: the next waves too
        r = self.apply("--continue-on-error", check=1)
        out = r.stdout + r.stderr
        self.assertIn("VM 'worker-03'", out)
        self.assertIn("Invalid configuration for device '0'. (InvalidDeviceSpec)", out)
        for i in (1, 2, 4, 5, 6, 7, 8):
            self.assert_worker(i)
        self.assertEqual(self.devices(self.show("worker-03"), "VirtualPCIPassthrough"), [])
        self.faults(None)
        self.apply()
        self.assert_worker(3)

    def test_a_lost_reply_is_retried_and_nothing_is_added_twice(self):
        # worker-03's GPU is added but vCenter's reply never arrives;
        # worker-05's VF is lost on the way (the connection closes first)
        self.faults({"ReconfigVM_Task": {
            "worker-03": {"drop": "after", "times": 1,
                          "match": "VirtualPCIPassthroughDeviceBackingInfo"},
            "worker-05": {"drop": "before", "times": 1, "match": "VirtualSriovEthernetCard"}}})
        r = self.apply()
        retries = [l for l in r.stderr.splitlines() if l.startswith("vcenter: retrying after: ")]
        self.assertEqual(len(retries), 2, r.stderr)
        for l in retries:
            self.assertRegex(l, r"VM 'worker-0[35]': vCenter \(https://127\.0\.0\.1:\d+\): ")
        for i in range(1, 9):
            self.assert_worker(i)  # one GPU and one VF each: nothing twice, nothing lost
        self.reapply_changes_nothing()

    def test_a_lost_reply_whose_task_still_runs_is_waited_for(self):
        # the reply is lost and the task runs on for 3 s (a real vCenter's
        # ReconfigVM_Task takes seconds): observing again at once would not
        # see the GPU yet and add a second one
        self.faults({"ReconfigVM_Task": {"worker-03": {
            "drop": "after", "times": 1, "task_ms": 3000,
            "match": "VirtualPCIPassthroughDeviceBackingInfo"}}})
        r = self.apply("-v")
        time.sleep(3.5)  # whatever was sent twice has landed by now
        for i in range(1, 9):
            self.assert_worker(i)  # worker-03: one GPU
        self.assertIn("vcenter: worker-03: no reply; waiting until its tasks end", r.stderr)
        retries = [l for l in r.stderr.splitlines() if l.startswith("vcenter: retrying after: ")]
        self.assertEqual(len(retries), 1, r.stderr)
        self.reapply_changes_nothing()

    def test_host_maintenance_powers_its_passthrough_vm_off_then_on(self):
        self.apply()
        # an operator turns passthrough off on esx02: the host needs a
        # maintenance window, and worker-02 (passthrough GPU) cannot move
        self.remote("esx02", "esxcli hardware pci pcipassthru set -d 0000:3b:00.0 -e false")
        r = self.plan(check=2)
        self.assertIn("> power off worker-02 (guest shutdown)", r.stdout)
        self.assertIn("> power on worker-02", r.stdout)
        r = self.apply("-v")
        lines = r.stderr.splitlines()  # progress goes to stderr
        order = [i for i, l in enumerate(lines) for want in (
            "vcenter: power off worker-02 done", "esx02: enter maintenance mode on esx02 done",
            "esx02: exit maintenance mode on esx02 done", "vcenter: power on worker-02 done")
            if l == want]
        self.assertEqual(len(order), 4, r.stderr)
        self.assertEqual(order, sorted(order), r.stderr)
        self.assert_worker(2)
        self.assertFalse(self.state("esx02")["maintenance"])
        self.reapply_changes_nothing()

    def esx02_needs_its_window(self, fail_passthrough=None):
        """A converged cluster, then passthrough turned off by hand on esx02:
        its next window powers worker-02 (a passthrough VM: no vMotion) off;
        with fail_passthrough, the host refuses the change with that message."""
        self.apply()
        self.remote("esx02", "esxcli hardware pci pcipassthru set -d 0000:3b:00.0 -e false")
        if fail_passthrough is not None:
            self.control("esx02", {"reboot_seconds": self.reboot_seconds, "fail_once": {
                "match": "esxcli hardware pci pcipassthru set", "message": fail_passthrough}})

    def test_a_lost_lease_read_on_the_vcenter_is_retried(self):
        # the first read of the vCenter's cluster lease (before any write)
        # loses its connection twice (libcurl sends a read again once by
        # itself): read again on a new one, as a host's would be, where it
        # failed the run
        self.esx02_needs_its_window()
        self.faults({"RetrievePropertiesEx": {"*": {"drop": "before", "times": 2,
                                                    "match": "CustomFieldsManager"}}})
        r = self.apply("-v")
        self.assertRegex(r.stderr, r"\nvcenter: retrying after: [^\n]*vCenter \(https://127\.0\.0\.1:"
                                   r"\d+\)")
        self.assertIn("Apply complete", r.stdout)
        self.faults(None)
        self.assert_worker(2)
        self.reapply_changes_nothing()

    def shutdown_never_comes(self, errname):
        """esx02's window, whose power-off of worker-02 asks a guest that
        never acts on it (a real vCenter answers ShutdownGuest at once; the
        guest may take minutes): an apply -v, returned once it waits for it."""
        self.esx02_needs_its_window()
        self.faults({"ShutdownGuest": {"worker-02": {"ignore": True}}})
        return self.apply_in_background(
            errname, lambda err: "vcenter: shutting down the guest of worker-02" in err, "-v")

    def worker02_done(self):
        """The next apply converges worker-02 and esx02, the one after
        changes nothing."""
        self.apply()
        self.assert_worker(2)
        self.assertFalse(self.state("esx02")["maintenance"])
        self.reapply_changes_nothing()

    def test_a_failed_window_powers_its_vm_back_on(self):
        # esx02's passthrough change fails in its window, after worker-02
        # was powered off for it: the host leaves maintenance mode, and
        # worker-02 is powered back on, as it was found (said in the
        # summary, then in --json); the re-run then does the whole window
        from test_apply import schema_valid
        msg = "Error: Unable to configure passthrough: device busy"
        self.esx02_needs_its_window(fail_passthrough=msg)
        r = self.apply("-v", check=1)
        self.assertIn("\n  esx02                 left maintenance mode after the failure\n", r.stdout)
        self.assert_powered_back_on(r, "worker-02")
        self.assertFalse(self.state("esx02")["maintenance"])
        self.esx02_needs_its_window(fail_passthrough=msg)
        rep = schema_valid(self, "apply-v1", self.apply("--json", check=1).stdout)
        t = {t["name"]: t for t in rep["targets"]}
        self.assertEqual((t["vcenter"]["vms_powered_back_on"], t["vcenter"]["vms_left_powered_off"]),
                         (["worker-02"], []))
        self.assertEqual((t["esx02"]["exited_maintenance_early"], t["esx02"]["left_in_maintenance"]),
                         (True, False))
        self.assertEqual(self.show("worker-02")["power"], "poweredOn")
        self.apply()
        self.assert_worker(2)
        self.assertFalse(self.state("esx02")["maintenance"])
        self.reapply_changes_nothing()

    def test_a_vm_whose_host_stays_in_maintenance_stays_off_by_name(self):
        # esx02 does not answer within --reboot-timeout after its reboot: it
        # stays in maintenance mode, and worker-02, on it, cannot be powered
        # back on
        self.esx02_needs_its_window()
        self.control("esx02", {"reboot_seconds": 8})
        r = self.apply("--reboot-timeout", "2", check=1)
        self.assertIn("\n!!! VM 'worker-02' is LEFT POWERED OFF: its host 'esx02' is left in "
                      "maintenance mode; re-run apply once it is back\n", r.stdout)
        self.assertIn("\n!!! host 'esx02' is LEFT IN MAINTENANCE MODE: ", r.stdout)
        self.assertEqual(self.show("worker-02")["power"], "poweredOff")
        while self.state("esx02")["down_until"] > time.time():  # back at last
            time.sleep(0.2)
        self.apply()
        self.assert_worker(2)
        self.reapply_changes_nothing()

    def test_a_second_ctrl_c_names_the_vm_it_left_off(self):
        # Ctrl-C twice while esx02's change exec is held open in its window:
        # the run stops at once, without the recovery, and says what it
        # leaves: the host in maintenance mode, and worker-02, powered off
        # for the window, still off; the next apply finishes both.  With
        # --json the same lines go to standard error, and standard output
        # stays empty (it holds a report or nothing)
        for extra in ([], ["--json"]):
            self.esx02_needs_its_window()
            self.control("esx02", {"reboot_seconds": self.reboot_seconds, "slow": {
                "match": "esxcli hardware pci pcipassthru set", "ms": 5000}})
            p, errpath = self.apply_in_background(
                "twice-vm.err", lambda err: self.state("esx02")["maintenance"], *extra)
            p.send_signal(signal.SIGINT)
            for _ in range(600):
                with open(errpath, encoding="utf-8") as f:
                    if extra or "interrupted: finishing the steps in flight" in f.read():
                        break
                time.sleep(0.05)
            # --json prints no line to wait for: a second signal of another
            # kind, which no pending first one can absorb
            p.send_signal(signal.SIGTERM if extra else signal.SIGINT)
            out, _ = p.communicate(timeout=60)
            with open(errpath, encoding="utf-8") as f:
                err = f.read()
            self.assertEqual(p.returncode, 130, err)
            said = err if extra else out
            if extra:
                self.assertEqual(out, "")
            else:
                self.assertIn("gpuclusterctl: interrupted: finishing the steps in flight, then "
                              "taking hosts out of maintenance mode (Ctrl-C again stops at once)\n",
                              err)
            self.assertRegex(said, r"\n?!!! host 'esx02' is LEFT IN MAINTENANCE MODE: interrupted "
                                   r"twice during '[^']+'; re-run apply to finish \(the journal "
                                   r"remembers\)\n!!! VM 'worker-02' is LEFT POWERED OFF: "
                                   r"interrupted twice; re-run apply to power it on\n\nSummary "
                                   r"\(interrupted twice")
            self.assertEqual(said.count("LEFT POWERED OFF"), 1, said)
            self.assertEqual(self.show("worker-02")["power"], "poweredOff")
            self.assertTrue(self.state("esx02")["maintenance"])
            time.sleep(5)  # the abandoned exec ends on the host's side
            self.control("esx02", {"reboot_seconds": self.reboot_seconds})
            self.worker02_done()

    def test_ctrl_c_in_a_guest_shutdown_forces_nothing_off(self):
        # worker-02's guest never acts on its shutdown request: Ctrl-C during
        # that wait ends it without powering the VM off, and nothing after it
        # starts (esx02 never enters maintenance mode)
        p, errpath = self.shutdown_never_comes("shutdown-ctrl-c.err")
        time.sleep(1.5)  # a poll of its power state or two
        p.send_signal(signal.SIGINT)
        out, _ = p.communicate(timeout=60)
        with open(errpath, encoding="utf-8") as f:
            err = f.read()
        self.assertEqual(p.returncode, 130, err)
        self.assertRegex(out, r"\n  vcenter +vcenter +0 done, 1 failed, 1 skipped: VM 'worker-02': "
                              r"interrupted \d+ s into its guest shutdown: not powered off \(the "
                              r"guest may still shut down\)\n")
        self.assertNotIn("powering it off", err)
        self.assertNotIn("esx02: enter maintenance mode", err)
        self.assertEqual(self.show("worker-02")["power"], "poweredOn")
        self.assertFalse(self.state("esx02")["maintenance"])
        # once the guest answers again, the next apply does the rest
        self.faults(None)
        self.worker02_done()

    def test_a_second_signal_during_a_guest_shutdown_says_the_vm_may_be_off(self):
        # both signals while worker-02's guest is asked to shut down (and
        # never does): whether its power-off ended "interrupted" first or
        # not, the guest may still go down, and the run says so
        p, _ = self.shutdown_never_comes("shutdown-twice.err")
        out = self.interrupted_twice(p)
        self.assertIn("!!! VM 'worker-02' may be LEFT POWERED OFF: interrupted twice during its "
                      "power-off; re-run apply to power it on\n", out)
        self.assertNotIn("LEFT IN MAINTENANCE", out)  # esx02 never entered it
        self.assertEqual(self.show("worker-02")["power"], "poweredOn")  # the guest did not go
        self.faults(None)
        self.worker02_done()

    def test_untrusted_certificate_is_refused_and_nothing_changes(self):
        # the lab's CA is not in the system store: without ca_file, no trust
        spec = self.spec_variant(lambda d: d["vcenter"].pop("ca_file"))
        r = self.gc("apply", "--only", self.only, spec=spec, check=1)
        self.assertIn("vCenter (https://127.0.0.1:%d)" % self.vcsim_port, r.stdout + r.stderr)
        self.assertIn("certificate", r.stdout + r.stderr)
        self.assertNotEqual(self.vc("show", "worker-01", check=False).returncode, 0)

    def test_a_bios_template_for_efi_vms_is_refused_before_anything_is_cloned(self):
        # issue 14, item 5: the workers need EFI (passthrough GPUs); a clone
        # of a BIOS template brings an OS that does not boot with EFI
        self.vc("ubuntu-22.04-template", "template-firmware", "bios")
        self.assertEqual(self.show("ubuntu-22.04-template")["firmware"], "bios")
        r = self.plan(check=1)
        self.assertIn("gpuclusterctl: error: vcenter 'vcenter' failed: VMs 'worker-01', "
                      "'worker-02', 'worker-03' and 5 more need efi firmware, but their template "
                      "'ubuntu-22.04-template' has bios: the OS a clone brings from it would not "
                      "boot after the change; clone from a template installed with efi firmware\n",
                      r.stderr)
        self.apply(check=1)
        self.assertEqual(json.loads(self.vc("inventory").stdout)["VirtualMachine"], [])

    def test_insecure_true_connects_and_warns(self):
        def edit(d):
            d["vcenter"].pop("ca_file")
            d["vcenter"]["insecure"] = True
        spec = self.spec_variant(edit)
        r = self.gc("plan", "--only", "vcenter", spec=spec, check=2)
        self.assertRegex(r.stderr, r"variant-test_insecure_true_connects_and_warns\.yaml:\d+:\d+: "
                         r"warning: TLS certificate checks for vCenter are off \(insecure: true\)")
        self.assertIn("+ vm/worker-01", r.stdout)

    def test_wrong_password_names_the_vcenter(self):
        bad = os.path.join(self.lab, "wrong-password")
        with open(bad, "w", encoding="utf-8") as f:
            f.write("not-the-password\n")

        def edit(d):
            for c in d["credentials"]:
                if c["name"] == d["vcenter"]["credentials"]:
                    c.pop("password_env", None)
                    c["password_file"] = bad
        r = self.gc("plan", "--only", "vcenter", spec=self.spec_variant(edit), check=1)
        self.assertIn("vCenter (https://127.0.0.1:%d): login as 'gcadmin' refused" % self.vcsim_port,
                      r.stderr)


class ApplyVmsVgpu(VcenterLab):
    spec = "examples/vgpu-pvrdma.yaml"
    port = 2316

    def test_vm_part_converges_then_reapply_changes_nothing(self):
        self.apply()
        master = self.show("k8s-master")
        # no GPU: its firmware is the template's (efi in the lab), not changed
        self.assert_common(master, "k8s-master", "esx05", 4, 16, "efi")
        self.assertEqual(self.devices(master, "VirtualPCIPassthrough"), [])
        for i in range(1, 5):
            name, host = "worker-%02d" % i, "esx%02d" % i
            vm = self.show(name)
            self.assert_common(vm, name, host, 8, 64, "efi")
            self.assertTrue(vm["reservation_locked"], name)
            vgpu = self.devices(vm, "VirtualPCIPassthrough")
            self.assertEqual(len(vgpu), 1, name)
            self.assertEqual(vgpu[0]["backing"]["type"], "VirtualPCIPassthroughVmiopBackingInfo")
            self.assertEqual(vgpu[0]["backing"]["vgpu"], "grid_t4-16c", name)
            rdma = self.devices(vm, "VirtualVmxnet3Vrdma")
            self.assertEqual(len(rdma), 1, name)
            self.assertEqual(rdma[0]["deviceProtocol"], "rocev2", name)
            self.assertEqual(rdma[0]["portgroup"], "pvrdma-pg", name)
        self.reapply_changes_nothing()

    def half_t4s(self):
        """The example with grid_t4-8c workers: every T4 has 8 GB to spare,
        so a worker can be live-migrated to another worker's host."""
        def edit(d):
            for vm in d["vms"]:
                for g in vm.get("gpus", []):
                    if g.get("vgpu") == "grid_t4-16c":
                        g["vgpu"] = "grid_t4-8c"
        return self.spec_variant(edit)

    def esx01_needs_its_window(self):
        """half_t4s() converged, then esx01's default graphics type changed by
        hand: its next window moves worker-01 to esx02 by vMotion.  The spec."""
        spec = self.half_t4s()
        self.apply(spec=spec)
        self.remote("esx01", "esxcli graphics host set --default-type Shared")
        return spec

    def worker01_goes_home(self, spec):
        """The next apply leaves worker-01 on esx01, and the one after changes
        nothing."""
        self.apply(spec=spec)
        vm = self.show("worker-01")
        self.assertEqual((vm["host"], vm["power"]), ("esx01", "poweredOn"))
        self.reapply_changes_nothing(spec=spec)

    def test_host_maintenance_migrates_its_vgpu_vm_away_and_back(self):
        # issue 12: the plan names the destination (another host on
        # dvs-rdma with room for the vGPU, outside the wave) and apply
        # honours it; vCenter shows the VM there while esx01 is down
        spec = self.half_t4s()
        self.apply(spec=spec)
        # the default graphics type changed by hand on esx01: a maintenance
        # window; worker-01 (vGPU + PVRDMA) may be live-migrated
        # (rolling.allow_vmotion) instead of powered off
        self.remote("esx01", "esxcli graphics host set --default-type Shared")
        r = self.plan(spec=spec, check=2)
        self.assertEqual(self.vcenter_steps(r.stdout),
                         ["> migrate worker-01 off esx01 to esx02 (vMotion)",
                          "> migrate worker-01 back to esx01"], r.stdout)
        self.assertIn("esx01 enters maintenance mode; VM worker-01 can be live-migrated "
                      "(rolling.allow_vmotion) to esx02: on its switches, with room for its vGPUs", r.stdout)
        self.control("esx01", {"reboot_seconds": 4})  # time to see worker-01 on esx02
        # where it starts, read before the apply: the watcher's first look
        # (a vcsim_edit.py process) can come after the first move on a busy
        # machine (CI saw ['esx02', 'esx01'])
        seen, done = [self.show("worker-01")["host"]], threading.Event()
        self.assertEqual(seen, ["esx01"])

        def watch():
            while not done.is_set():
                r = self.vc("show", "worker-01", check=False)
                if r.returncode == 0:
                    h = json.loads(r.stdout)["host"]
                    if not seen or seen[-1] != h:
                        seen.append(h)
                time.sleep(0.2)
        t = threading.Thread(target=watch)
        t.start()
        try:
            r = self.apply("-v", spec=spec)
        finally:
            done.set()
            t.join()
        # where the apply left it: the watcher may have slept through the
        # last move, at the very end of the apply
        h = self.show("worker-01")["host"]
        if not seen or seen[-1] != h:
            seen.append(h)
        out = r.stderr  # progress goes to stderr
        first = out.index("vcenter: migrate worker-01 off esx01 to esx02")
        self.assertLess(first, out.index("esx01: enter maintenance mode on esx01 done"))
        self.assertEqual(seen, ["esx01", "esx02", "esx01"])
        vm = self.show("worker-01")
        self.assertEqual((vm["host"], vm["power"]), ("esx01", "poweredOn"))
        self.reapply_changes_nothing(spec=spec)

    def test_a_failed_window_moves_its_vmotioned_vm_back(self):
        # esx01's window moves worker-01 to esx02 by vMotion, then esx01
        # refuses its change: it leaves maintenance mode, and worker-01 goes
        # back to it, as it was found (the summary, then --json, say so)
        from test_apply import schema_valid
        spec = self.esx01_needs_its_window()
        msg = "Error: Unable to set the default graphics type: device busy"
        for leg in ("text", "json"):
            if leg == "json":
                self.remote("esx01", "esxcli graphics host set --default-type Shared")
            self.control("esx01", {"reboot_seconds": self.reboot_seconds, "fail_once": {
                "match": "esxcli graphics host set", "message": msg}})
            if leg == "text":
                r = self.apply("-v", spec=spec, check=1)
                self.assertIn("vcenter: migrate worker-01 off esx01 to esx02", r.stderr)
                self.assertIn("vcenter: moved worker-01 back to esx01 after the failure\n", r.stderr)
                self.assertIn("\n  esx01                 left maintenance mode after the failure\n",
                              r.stdout)
                self.assertIn("\n  vcenter               moved back to their hosts after the "
                              "failure: worker-01\n", r.stdout)
                self.assertNotIn("LEFT", r.stdout)
            else:
                rep = schema_valid(self, "apply-v1", self.apply("--json", spec=spec, check=1).stdout)
                t = {t["name"]: t for t in rep["targets"]}
                self.assertEqual((t["vcenter"]["vms_moved_back"],
                                  t["vcenter"]["vms_left_moved_away"],
                                  t["vcenter"]["vms_powered_back_on"]), (["worker-01"], [], []))
            vm = self.show("worker-01")
            self.assertEqual((vm["host"], vm["power"]), ("esx01", "poweredOn"), leg)
            self.assertFalse(self.state("esx01")["maintenance"], leg)
        self.worker01_goes_home(spec)

    def test_a_vmotioned_vm_whose_host_stays_in_maintenance_runs_where_it_was_moved(self):
        # esx01 does not answer within --reboot-timeout after its reboot: it
        # stays in maintenance mode, and worker-01 keeps running on esx02,
        # said in the summary (not loudly: it runs); the next apply, once
        # esx01 is back, moves it home
        spec = self.esx01_needs_its_window()
        self.control("esx01", {"reboot_seconds": 8})
        r = self.apply("--reboot-timeout", "2", spec=spec, check=1)
        self.assertIn("\n  vcenter               worker-01 runs where vMotion moved it: its host "
                      "'esx01' is left in maintenance mode; re-run apply once it is back\n", r.stdout)
        self.assertIn("\n!!! host 'esx01' is LEFT IN MAINTENANCE MODE: ", r.stdout)
        self.assertNotIn("moved back", r.stdout)
        vm = self.show("worker-01")
        self.assertEqual((vm["host"], vm["power"]), ("esx02", "poweredOn"))
        while self.state("esx01")["down_until"] > time.time():  # back at last
            time.sleep(0.2)
        self.worker01_goes_home(spec)

    def test_a_second_ctrl_c_says_where_the_vmotioned_vm_runs(self):
        # Ctrl-C twice while esx01's change exec is held open in its window,
        # worker-01 moved to esx02 for it: the run stops at once and says
        # where worker-01 runs (not loudly: it runs); the next apply moves
        # it home
        spec = self.esx01_needs_its_window()
        self.control("esx01", {"reboot_seconds": self.reboot_seconds,
                               "slow": {"match": "esxcli graphics host set", "ms": 5000}})
        p, _ = self.apply_in_background(
            "twice-vmotion.err", lambda err: self.state("esx01")["maintenance"], spec=spec)
        out = self.interrupted_twice(p)
        self.assertRegex(out, r"\n?!!! host 'esx01' is LEFT IN MAINTENANCE MODE: interrupted twice "
                              r"during '[^']+'; re-run apply to finish \(the journal remembers\)\n"
                              r"VM 'worker-01' runs where vMotion moved it: interrupted twice; "
                              r"re-run apply to move it back\n\nSummary \(interrupted twice")
        self.assertEqual(self.show("worker-01")["host"], "esx02")
        time.sleep(5)  # the abandoned exec ends on the host's side
        self.control("esx01", {"reboot_seconds": self.reboot_seconds})
        self.worker01_goes_home(spec)

    def test_a_second_ctrl_c_during_the_vmotion_says_the_vm_may_run_where_it_was_moved(self):
        # Ctrl-C twice while worker-01's vMotion to esx02 is under way (the
        # call's connection lost, the task running 6 s in vCenter): the run
        # cannot know where worker-01 ends up and says it may run there
        # (not loudly: it runs either way); esx01 never entered maintenance
        spec = self.esx01_needs_its_window()
        self.faults({"RelocateVM_Task": {"worker-01": {"drop": "after", "task_ms": 6000}}})
        # -v prints a step when it ends: the journal, written before a step's
        # command goes out, says when the vMotion started
        journals = glob.glob(os.path.join(self.state_dir, "*.journal"))
        self.assertEqual(len(journals), 1, journals)
        since = os.path.getsize(journals[0])

        def vmotion_started(_err):
            with open(journals[0], encoding="utf-8") as f:
                f.seek(since)
                recs = [json.loads(line) for line in f if line.strip()]
            return any(r.get("state") == "start" and "worker-01" in r.get("action", "") and
                       r.get("kind") == "migrate" for r in recs)
        p, _ = self.apply_in_background("twice-in-vmotion.err", vmotion_started, spec=spec)
        self.assertTrue(vmotion_started(""), "the vMotion started within 60 s")
        time.sleep(1.0)  # the call sent, its connection dropped: the task runs
        out = self.interrupted_twice(p)
        self.assertIn("\nVM 'worker-01' may run where vMotion moved it: interrupted twice; "
                      "re-run apply to move it back\n", out)
        self.assertNotIn("LEFT IN MAINTENANCE", out)
        self.assertFalse(self.state("esx01")["maintenance"])
        time.sleep(6)  # vCenter carries the move out: worker-01 on esx02
        self.assertEqual(self.show("worker-01")["host"], "esx02")
        self.faults(None)
        self.worker01_goes_home(spec)

    def test_with_no_room_elsewhere_a_vgpu_vm_is_powered_off_and_the_plan_says_why(self):
        # the example as it is: every T4 carries a 16 GB vGPU, and esx05 has
        # no GPU, so no host can take worker-01 while esx01 is down
        self.apply()
        self.remote("esx01", "esxcli graphics host set --default-type Shared")
        r = self.plan(check=2)
        self.assertEqual(self.vcenter_steps(r.stdout),
                         ["> power off worker-01 (guest shutdown)", "> power on worker-01"], r.stdout)
        self.assertIn("esx01 enters maintenance mode and no host can take VM worker-01 by vMotion "
                      "(esx02 has no room for grid_t4-16c; esx03 has no room for grid_t4-16c; esx04 has no room "
                      "for grid_t4-16c; esx05 is not on dvs-rdma)", r.stdout)

    def test_vgpu_vmotion_is_turned_on_in_vcenter_before_a_migration(self):
        # issue 14, item 11: rolling.allow_vmotion and vGPU VMs: vCenter's
        # vgpu.hotmigrate.enabled (a boolean, off in the lab as in vCenter)
        key = "vgpu.hotmigrate.enabled"
        spec = self.half_t4s()
        self.apply(spec=spec)
        self.assertEqual(json.loads(self.vc("option", key).stdout),
                         {"key": key, "value": "true", "type": "boolean"})
        # an operator turns it off, and esx01 needs maintenance: the setting
        # comes back before worker-01 is migrated off esx01
        self.vc("set-option", key, "false", "boolean")
        self.remote("esx01", "esxcli graphics host set --default-type Shared")
        r = self.plan(spec=spec, check=2)
        self.assertIn("    ~ vcenter/setting/vgpu.hotmigrate.enabled\n"
                      "        value: false → true\n", r.stdout)
        r = self.apply("-v", spec=spec)
        out = r.stderr
        self.assertLess(out.index("vcenter: advanced setting vgpu.hotmigrate.enabled = true"),
                        out.index("vcenter: migrate worker-01"))
        self.assertEqual(json.loads(self.vc("option", key).stdout)["value"], "true")
        self.reapply_changes_nothing(spec=spec)

    def test_a_vgpu_added_by_hand_is_removed_with_the_vm_off(self):
        self.apply()
        self.vc("worker-02", "add-vgpu", "grid_t4-8c")
        key = [d["key"] for d in self.devices(self.show("worker-02"), "VirtualPCIPassthrough")
               if d["backing"]["vgpu"] == "grid_t4-8c"][0]
        r = self.plan(check=2)
        gone = "- vm/worker-02/device.vgpu/key-%d  [VM off]" % key
        self.assertEqual(self.vcenter_steps(r.stdout),
                         ["> power off worker-02 (guest shutdown)", gone, "> power on worker-02"],
                         r.stdout)
        self.assertIn("profile: grid_t4-8c → (removed)", r.stdout)
        self.assertIn("Plan: 0 to add, 0 to change, 1 to destroy", r.stdout)
        self.extra_vgpu_removed()

    def extra_vgpu_removed(self):
        """The next apply leaves worker-02 on with its one grid_t4-16c vGPU;
        the one after changes nothing."""
        self.apply()
        vm = self.show("worker-02")
        self.assertEqual([d["backing"]["vgpu"] for d in self.devices(vm, "VirtualPCIPassthrough")],
                         ["grid_t4-16c"])
        self.assertEqual(vm["power"], "poweredOn")
        self.reapply_changes_nothing()

    def test_a_refused_change_of_a_vm_off_for_it_powers_it_back_on(self):
        # the vGPU added by hand is to be removed with worker-02 off, and
        # vCenter refuses that reconfiguration: worker-02 is powered back on
        # as it was found (its extra vGPU still there); once vCenter accepts,
        # the next apply does it
        self.apply()
        self.vc("worker-02", "add-vgpu", "grid_t4-8c")
        self.faults({"ReconfigVM_Task": {"worker-02": {
            "fault": "InvalidDeviceSpec", "message": "Invalid configuration for device '1'."}}})
        r = self.apply("-v", check=1)
        self.assertIn("Invalid configuration for device '1'. (InvalidDeviceSpec)", r.stdout)
        self.assert_powered_back_on(r, "worker-02")
        vm = self.show("worker-02")
        self.assertEqual(sorted(d["backing"]["vgpu"] for d in
                                self.devices(vm, "VirtualPCIPassthrough")),
                         ["grid_t4-16c", "grid_t4-8c"])
        self.faults(None)
        self.extra_vgpu_removed()

    def test_an_uplink_moved_by_hand_is_moved_back(self):
        self.apply()
        self.vc("dvs-uplink", "dvs-rdma", "esx02", "vmnic7")
        r = self.plan(check=2)
        self.assertEqual(self.vcenter_steps(r.stdout), ["~ dvs/dvs-rdma"], r.stdout)
        self.assertIn("uplink.esx02: vmnic7 → vmnic5", r.stdout)
        self.assertIn("Plan: 0 to add, 1 to change, 0 to destroy", r.stdout)
        self.apply()
        members = {m["host"]: m["pnics"] for m in
                   json.loads(self.vc("dvs", "dvs-rdma").stdout)["config_hosts"]}
        self.assertEqual(members, {"esx%02d" % i: ["vmnic5"] for i in range(1, 5)})
        self.reapply_changes_nothing()

    def dvs_members(self, name):
        """{host: [pnic, ...]} of a switch's config.host, as vCenter lists them."""
        return {m["host"]: m["pnics"] for m in json.loads(self.vc("dvs", name).stdout)["config_hosts"]}

    def dvs_calls(self):
        """The CreateDVS_Task and ReconfigureDvs_Task bodies vcsim received, in order."""
        return self.vcsim_log("dvs-calls.log")

    def test_a_host_with_two_uplinks_gets_both_and_then_nothing_changes(self):
        # esx01 gives the switch a second pNIC, listed after its first
        def edit(d):
            d["distributed_switches"][0]["uplinks"].append({"host": "esx01", "nic": "vmnic4"})
        spec = self.spec_variant(edit)
        r = self.plan(spec=spec, check=2)
        self.assertIn("        uplink.esx01: (none) → vmnic4,vmnic5\n", r.stdout)
        self.assertIn("        uplink.esx02: (none) → vmnic5\n", r.stdout)
        calls = len(self.dvs_calls())
        self.apply(spec=spec)
        want = {"esx01": ["vmnic4", "vmnic5"], "esx02": ["vmnic5"], "esx03": ["vmnic5"],
                "esx04": ["vmnic5"]}
        self.assertEqual(self.dvs_members("dvs-rdma"), want)
        # one member entry a host, both pNICs in esx01's one backing
        sent = [c for c in self.dvs_calls()[calls:] if c.startswith("<ReconfigureDvs_Task")]
        self.assertEqual(len(sent), 1, sent)
        esx01 = json.loads(self.vc("host", "esx01").stdout)["moref"]
        self.assertEqual(sent[0].count("<host><operation>add</operation>"), 4, sent[0])
        self.assertIn('<host><operation>add</operation><host type="HostSystem">%s</host>'
                      '<backing xsi:type="DistributedVirtualSwitchHostMemberPnicBacking">'
                      '<pnicSpec><pnicDevice>vmnic4</pnicDevice></pnicSpec>'
                      '<pnicSpec><pnicDevice>vmnic5</pnicDevice></pnicSpec></backing></host>'
                      % esx01, sent[0])
        self.reapply_changes_nothing(spec=spec)

        # an operator leaves esx01 one uplink: the plan shows the list, and
        # the edit sends both
        self.vc("dvs-uplink", "dvs-rdma", "esx01", "vmnic5")
        self.assertEqual(self.dvs_members("dvs-rdma")["esx01"], ["vmnic5"])
        r = self.plan(spec=spec, check=2)
        self.assertEqual(self.vcenter_steps(r.stdout), ["~ dvs/dvs-rdma"], r.stdout)
        self.assertIn("    ~ dvs/dvs-rdma\n        uplink.esx01: vmnic5 → vmnic4,vmnic5\n", r.stdout)
        self.assertIn("Plan: 0 to add, 1 to change, 0 to destroy", r.stdout)
        dvs = json.loads(self.vc("dvs", "dvs-rdma").stdout)
        calls = len(self.dvs_calls())
        self.apply(spec=spec)
        self.assertEqual(self.dvs_calls()[calls:], [
            '<ReconfigureDvs_Task xmlns="urn:vim25">'
            '<_this type="VmwareDistributedVirtualSwitch">%s</_this>'
            '<spec xsi:type="VMwareDVSConfigSpec"><configVersion>%s</configVersion>'
            '<host><operation>edit</operation><host type="HostSystem">%s</host>'
            '<backing xsi:type="DistributedVirtualSwitchHostMemberPnicBacking">'
            '<pnicSpec><pnicDevice>vmnic4</pnicDevice></pnicSpec>'
            '<pnicSpec><pnicDevice>vmnic5</pnicDevice></pnicSpec></backing></host>'
            '</spec></ReconfigureDvs_Task>' % (dvs["moref"], dvs["config_version"], esx01)])
        self.assertEqual(self.dvs_members("dvs-rdma"), want)
        self.reapply_changes_nothing(spec=spec)


class ApplyPvrdmaVmknic(VcenterLab):
    """Issue 14, item 12: the PVRDMA vmknic created through vCenter on the
    distributed port group (HostNetworkSystem.AddVirtualNic), then tagged
    on the host.  Read back with vcsim_edit.py and the ESXi hosts' logs."""
    spec = "examples/vgpu-pvrdma.yaml"
    port = 2350  # each class its own port (ctest runs two suites at once); vcsim 9010
    only = "esxi,vcenter"

    def variant(self, names=None):
        names = names or {}

        def edit(doc):
            for i, h in enumerate(doc["hosts"][:4], 1):
                nic = h["nics"][0]
                nic["vmknic"] = {"name": names.get(h["name"], "vmk1"), "portgroup": "pvrdma-pg",
                                 "address": "192.168.10.%d/24" % (20 + i)}
        return self.spec_variant(edit)

    def vnic(self, host, device):
        found = [v for v in json.loads(self.vc("vnics", host).stdout) if v["device"] == device]
        return found[0] if found else None

    def test_vmknic_is_created_on_its_port_group_before_the_tag_then_nothing_changes(self):
        spec = self.variant()
        r = self.gc("plan", "--only", self.only, spec=spec, check=2)
        steps = self.vcenter_steps(r.stdout)
        for i in range(1, 5):
            self.assertIn("+ dvs/dvs-rdma/vmknic/esx%02d/vmk1" % i, steps, r.stdout)
        # each host's tag waits for its adapter
        plan = json.loads(self.gc("plan", "--only", self.only, "--json", spec=spec, check=2).stdout)
        acts = {a["resource"]: a for w in plan["waves"] for t in w["targets"] for a in t["actions"]
                if a["resource"]}
        for i in range(1, 5):
            tag = acts["esx%02d/esxi.advanced/Net.PVRDMAVmknic" % i]
            vmk = acts["dvs/dvs-rdma/vmknic/esx%02d/vmk1" % i]
            self.assertEqual((vmk["op"], vmk["changes"]), ("create", [
                {"key": "host", "old": None, "new": "esx%02d" % i},
                {"key": "dvswitch", "old": None, "new": "dvs-rdma"},
                {"key": "portgroup", "old": None, "new": "pvrdma-pg"},
                {"key": "device", "old": None, "new": "vmk1"},
                {"key": "address", "old": None, "new": "192.168.10.%d/24" % (20 + i)}]))
            self.assertIn(vmk["seq"], tag["after"])
        r = self.gc("apply", "--only", self.only, "-v", spec=spec, check=0)
        out = r.stderr
        for i in range(1, 5):
            host = "esx%02d" % i
            self.assertEqual(self.vnic(host, "vmk1"),
                             {"device": "vmk1", "dhcp": "false", "ip": "192.168.10.%d" % (20 + i),
                              "mask": "255.255.255.0", "switch": "dvs-rdma",
                              "portgroup": "pvrdma-pg"}, host)
            # vmk0 (management) is untouched
            self.assertEqual(self.vnic(host, "vmk0")["portgroup"], "Management Network")
            tag = "esxcli system settings advanced set -o /Net/PVRDMAVmknic -s 'vmk1'"
            self.assertIn(tag, self.changes(host), host)
            # started before the host's tag (the "done" line may print after
            # the tag starts: the executor releases dependents first)
            self.assertLess(out.index("vcenter: + dvs/dvs-rdma/vmknic/%s/vmk1 ..." % host),
                            out.index("%s: ~ %s/esxi.advanced/Net.PVRDMAVmknic ..." % (host, host)),
                            out)
        self.reapply_changes_nothing(spec=spec)

    def test_an_address_changed_by_hand_is_updated_in_place(self):
        spec = self.variant()
        self.gc("apply", "--only", self.only, spec=spec, check=0)
        self.vc("set-vnic-ip", "esx02", "vmk1", "192.168.99.9", "255.255.0.0")
        r = self.gc("plan", "--only", self.only, spec=spec, check=2)
        self.assertEqual(self.vcenter_steps(r.stdout), ["~ dvs/dvs-rdma/vmknic/esx02/vmk1"], r.stdout)
        self.assertIn("address: 192.168.99.9/16 → 192.168.10.22/24", r.stdout)
        self.gc("apply", "--only", self.only, spec=spec, check=0)
        v = self.vnic("esx02", "vmk1")
        self.assertEqual((v["ip"], v["mask"], v["portgroup"]), ("192.168.10.22", "255.255.255.0", "pvrdma-pg"))
        self.assertIsNone(self.vnic("esx02", "vmk2"))
        self.reapply_changes_nothing(spec=spec)

    def test_another_name_from_vcenter_fails_and_tags_nothing(self):
        # vCenter gives the lowest free vmkN (vmk1); the spec says vmk3
        spec = self.variant({"esx03": "vmk3"})
        r = self.gc("apply", "--only", self.only, spec=spec, check=1)
        self.assertIn("vCenter created vmk1 on host 'esx03', not vmk3 as the spec says; "
                      "/Net/PVRDMAVmknic is left alone: set vmknic: {name: vmk1, ...} in the spec "
                      "and apply again", r.stderr)
        self.assertNotIn("PVRDMAVmknic", "\n".join(self.changes("esx03")))
        # the next run creates no second adapter: it names the one there
        r = self.gc("apply", "--only", self.only, spec=spec, check=1)
        self.assertIn("host 'esx03' already has vmk1 on port group 'pvrdma-pg', not vmk3: name it "
                      "in the spec (vmknic: {name: vmk1, ...}) or remove it", r.stderr)
        self.assertEqual([v["device"] for v in json.loads(self.vc("vnics", "esx03").stdout)],
                         ["vmk0", "vmk1"])


class ApplyVmsMultiGpu(VcenterLab):
    """One VM with a static passthrough GPU and a dynamic DirectPath one
    (vendor:device, ESXi picks a free GPU of that id at power-on)."""
    spec = "examples/multi-gpu-vm.yaml"
    port = 2317
    only = "esxi,vcenter"

    LEASE = "gpuclusterctl.lease.DC0"  # the spec names no cluster: its datacenter holds it

    def custom_fields(self):
        return json.loads(self.vc("custom-fields").stdout)

    def apply_bg(self, spec, state, env):
        return subprocess.Popen([BIN, "apply", "--yes", "--only", self.only, "--state-dir", state,
                                 spec], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def wait_for(self, what, cond, procs, timeout=120):
        """cond() within timeout, while every one of procs still runs (an
        apply that ended early fails the test at once, with its output)."""
        for _ in range(int(timeout / 0.02)):
            if cond():
                return
            for p in procs:
                if p.poll() is not None:
                    out, err = p.communicate()
                    self.fail("waiting for %s, apply pid %d ended with %d:\n%s%s" %
                              (what, p.pid, p.returncode, out, err))
            time.sleep(0.02)
        self.fail("timed out waiting for " + what)

    def test_two_applies_racing_for_the_cluster_lease_only_one_goes_on(self):
        # Both read the leases, find none and wait before writing them
        # (GC_TEST_LEASE_BARRIER): without a compare-and-set both would go
        # on and clone the VM twice.  vCenter's AddCustomFieldDef is one:
        # the second to make the definition gets DuplicateName, and is
        # refused before it writes anything (its ESXi lease included).
        # The barrier, not a pause: with both paused 6 s, a busy machine
        # once slowed the second apply's observation past the whole of the
        # first one, which had then cleared its lease (CI, 2026-12-02).
        # Here both have read before either writes, and the second writes
        # once the first one's holder is on the datacenter.
        other = os.path.join(self.lab, "copy")
        os.makedirs(other, exist_ok=True)
        copy = os.path.join(other, os.path.basename(self.specfile))
        shutil.copy(self.specfile, copy)
        go_a, go_b = os.path.join(self.lab, "go-a"), os.path.join(self.lab, "go-b")
        for p in (go_a, go_b, go_a + ".ready", go_b + ".ready"):
            if os.path.exists(p):
                os.unlink(p)
        a = self.apply_bg(self.specfile, self.state_dir, dict(self.env, GC_TEST_LEASE_BARRIER=go_a))
        b = self.apply_bg(copy, os.path.join(other, "state"), dict(self.env, GC_TEST_LEASE_BARRIER=go_b))
        try:
            self.wait_for("both applies to read the leases",
                          lambda: os.path.exists(go_a + ".ready") and os.path.exists(go_b + ".ready"),
                          (a, b))
            open(go_a, "w").close()

            def a_holds():
                cf = self.custom_fields()
                keys = [f["key"] for f in cf["fields"] if f["name"] == self.LEASE]
                return bool(keys) and ";pid=%d;" % a.pid in (cf["values"].get("DC0", {}).get(keys[0]) or "")
            self.wait_for("the first apply's holder on the datacenter", a_holds, (a, b))
        finally:
            open(go_a, "w").close()
            open(go_b, "w").close()
        ra = a.communicate(timeout=300) + (a.returncode,)
        rb = b.communicate(timeout=300) + (b.returncode,)
        lost = rb
        lost_pid = b.pid
        self.assertEqual([ra[2], rb[2]], [0, 1], "a: %s\nb: %s" % (ra, rb))
        # the refusal names the holder it met: the first apply
        self.assertRegex(lost[1], r"gpuclusterctl: error: Datacenter 'DC0' was locked on vCenter 'vcenter' "
                         r"by another apply at the same moment \(cluster=multi-gpu;holder=\S+@\S+;pid=%d;" % a.pid +
                         r"lock=[0-9a-f]+;since=\d+;expires=\d+\); nothing was changed\. If that apply is dead: "
                         r"gpuclusterctl unlock --force SPEC\n")
        self.assertNotIn("Summary", lost[0])
        # the loser wrote no lease anywhere: esx01 never saw its pid
        self.assertEqual([c for _, c in self.log("esx01") if ";pid=%d;" % lost_pid in c], [])
        self.assertTrue([c for _, c in self.log("esx01") if "GpuclusterctlLease" in c and " -s " in c])
        inv = json.loads(self.vc("inventory").stdout)
        self.assertEqual(inv["VirtualMachine"].count("trainer"), 1, inv)
        # the winner cleared its lease at the end: no definition is left
        self.assertNotIn(self.LEASE, [f["name"] for f in self.custom_fields()["fields"]])
        self.reapply_changes_nothing()

    def test_a_half_taken_vcenter_lease_refuses_until_unlock_force(self):
        # an apply died between AddCustomFieldDef and SetField: a definition
        # with no holder on the datacenter
        self.vc("add-custom-field", self.LEASE, "Datacenter")
        r = self.gc("apply", "--only", self.only, check=1)
        self.assertRegex(r.stderr, r"gpuclusterctl: error: cluster 'multi-gpu' is locked on vcenter 'vcenter' "
                         r"by an apply still taking it pid \? ")
        self.assertEqual(json.loads(self.vc("inventory").stdout)["VirtualMachine"], [])
        r = subprocess.run([BIN, "unlock", "--force", "--only", "vcenter", "--state-dir",
                            self.state_dir, self.specfile], env=self.env, capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "Cleared the cluster lease on 1 target.\n")
        self.assertIn("vcenter: cleared the cluster lease: holder=an apply still taking it\n", r.stderr)
        self.assertNotIn(self.LEASE, [f["name"] for f in self.custom_fields()["fields"]])
        # and the lease is held on the datacenter while an apply runs
        env = dict(self.env, GC_TEST_LEASE_PAUSE_MS="0")
        p = self.apply_bg(self.specfile, self.state_dir, env)
        held = None
        for _ in range(1200):
            cf = self.custom_fields()
            keys = [f["key"] for f in cf["fields"] if f["name"] == self.LEASE and f["moType"] == "Datacenter"]
            if keys and cf["values"].get("DC0", {}).get(keys[0]):
                held = cf["values"]["DC0"][keys[0]]
                break
            if p.poll() is not None:
                break
            time.sleep(0.05)
        out, err = p.communicate(timeout=300)
        self.assertEqual(p.returncode, 0, err)
        self.assertRegex(held or "", r"^cluster=multi-gpu;holder=\S+@\S+;pid=%d;lock=" % p.pid)
        self.assertNotIn(self.LEASE, [f["name"] for f in self.custom_fields()["fields"]])

    def test_static_and_dynamic_passthrough_converge(self):
        self.apply()
        vm = self.show("trainer")
        self.assert_common(vm, "trainer", "esx01", 32, 192, "efi")
        self.assertTrue(vm["reservation_locked"])
        self.assertEqual(vm["extra_config"].get("pciPassthru.64bitMMIOSizeGB"), "64")
        backings = sorted((d["backing"]["type"], d["backing"].get("id"),
                           d["backing"].get("allowedDevice"))
                          for d in self.devices(vm, "VirtualPCIPassthrough"))
        self.assertEqual(backings, [
            ("VirtualPCIPassthroughDeviceBackingInfo", "0000:3b:00.0", None),
            # allowedDevice ids are decimal ints (0x10de, 0x1db4); vcsim_edit
            # leaves every deviceId a string, as a static backing's is hex
            ("VirtualPCIPassthroughDynamicBackingInfo", None,
             {"vendorId": 4318, "deviceId": "7604"}),
        ])
        self.reapply_changes_nothing()

    def gpus(self):
        return sorted((d["backing"]["type"], d["backing"].get("id"))
                      for d in self.devices(self.show("trainer"), "VirtualPCIPassthrough"))

    def test_a_gpu_added_by_hand_is_drift_and_apply_removes_it(self):
        self.apply()
        before = self.gpus()
        self.vc("trainer", "add-pci", "0000:d8:00.0")
        r = self.plan(check=2)
        self.assertEqual(self.vcenter_steps(r.stdout), [
            "> power off trainer (guest shutdown)",
            "- vm/trainer/device.pci/0000:d8:00.0  [VM off]",
            "> power on trainer"], r.stdout)
        self.assertIn("host_pci: 0000:d8:00.0 → (removed)", r.stdout)
        self.assertIn("Plan: 0 to add, 0 to change, 1 to destroy", r.stdout)
        self.apply()
        self.assertEqual(self.gpus(), before)
        self.assertEqual(self.show("trainer")["power"], "poweredOn")
        self.reapply_changes_nothing()

    def test_a_removal_whose_reply_is_lost_is_done_once(self):
        self.apply()
        self.vc("trainer", "add-pci", "0000:d8:00.0")
        self.faults({"ReconfigVM_Task": {"trainer": {
            "drop": "after", "times": 1, "match": "<operation>remove</operation>"}}})
        r = self.apply("-v")
        self.assertIn("vcenter: retrying after: VM 'trainer': ", r.stderr)
        self.assertIn("vcenter: vm/trainer/device.pci/0000:d8:00.0: already gone", r.stderr)
        self.assertEqual(self.gpus(), [
            ("VirtualPCIPassthroughDeviceBackingInfo", "0000:3b:00.0"),
            ("VirtualPCIPassthroughDynamicBackingInfo", None)])
        self.reapply_changes_nothing()

    def test_a_gpu_the_spec_stops_naming_is_removed(self):
        self.apply()
        dyn = [d["key"] for d in self.devices(self.show("trainer"), "VirtualPCIPassthrough")
               if d["backing"]["type"] == "VirtualPCIPassthroughDynamicBackingInfo"][0]

        def one_gpu(d):
            d["vms"][0]["gpus"] = d["vms"][0]["gpus"][:1]
        spec = self.spec_variant(one_gpu)
        r = self.plan(spec=spec, check=2)
        # one 16 GB GPU left: the MMIO window shrinks to the next power of two, 32 GB
        self.assertEqual(self.vcenter_steps(r.stdout), [
            "> power off trainer (guest shutdown)",
            "~ vm/trainer/extra_config  [VM off]",
            "- vm/trainer/device.pci/key-%d  [VM off]" % dyn,
            "> power on trainer"], r.stdout)
        self.assertIn("pciPassthru.64bitMMIOSizeGB: 64 → 32", r.stdout)
        self.assertIn("pci_id: 10de:1db4 → (removed)", r.stdout)
        self.assertIn("Plan: 0 to add, 1 to change, 1 to destroy", r.stdout)
        self.apply(spec=spec)
        self.assertEqual(self.gpus(), [("VirtualPCIPassthroughDeviceBackingInfo", "0000:3b:00.0")])
        vm = self.show("trainer")
        self.assertEqual(vm["extra_config"]["pciPassthru.64bitMMIOSizeGB"], "32")
        self.assertEqual(vm["power"], "poweredOn")
        self.reapply_changes_nothing(spec=spec)

if __name__ == "__main__":
    unittest.main()
