"""End-to-end: `gpuclusterctl apply` of examples/roce-passthrough.yaml (the ESXi
hosts and the switch) against the lab, a real sshd with 8 simulated ESXi
hosts and a simulated Onyx switch.  Issue 3's acceptance lines, one test each.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from labtest import CHANGE_BATCH, OBSERVE_MARK, ROOT, LabCase, observation, parse_ts

# nmlx5_core's whole parameter string: SR-IOV VFs, and lossless RoCE at the
# host's end of the switch's recipe (DSCP trust, PFC on priority 3 both
# ways, ECN), in the one `set` the host's one reboot makes current
NMLX5_PARAMS = "max_vfs=4 trust_state=2 pfctx=0x08 pfcrx=0x08 ecn=1"
NMLX5_SET = "esxcli system module parameters set -m nmlx5_core -p '%s'" % NMLX5_PARAMS

ROCE_SEQUENCE = [
    "esxcli system ntp set -e true -s ntp1.lab.example",
    "esxcli system maintenanceMode set -e true",
    "esxcli hardware pci pcipassthru set -d 0000:3b:00.0 -e true",
    NMLX5_SET,
    "esxcli system shutdown reboot -r gpuclusterctl",
    "esxcli system maintenanceMode set -e false",
]

SWITCH_CONFIG = [
    "interface ethernet 1/1-1/32 traffic-class 3 congestion-control ecn minimum-absolute 150 maximum-absolute 1500",
    "traffic pool roce type lossless",
    "traffic pool roce memory percent 50.00",
    "traffic pool roce map switch-priority 3",
    "interface ethernet 1/1-1/32 traffic-class 6 dcb ets strict",
    "interface ethernet 1/1-1/32 qos trust L3",
    "dcb priority-flow-control enable force",
    "dcb priority-flow-control priority 3 enable",
    "interface ethernet 1/1-1/32 dcb priority-flow-control mode on force",
    "lldp",
]
# a vGPU host of examples/vgpu-pvrdma.yaml: the VIB, then ECC with the
# nvidia-smi that VIB brings, after its reboot
VGPU_SEQUENCE = [
    "esxcli system settings advanced set -o /Net/PVRDMAVmknic -s 'vmk1'",
    "esxcli network firewall ruleset set -r pvrdma -e true",
    "esxcli system maintenanceMode set -e true",
    "esxcli software vib install -d "
    "/vmfs/volumes/datastore1/NVD-AIE-800_525.105.14-1OEM.800.1.0.20613240_21506612.zip",
    "esxcli graphics host set --default-type SharedPassthru --shared-passthru-assignment-policy Performance",
    "esxcli system shutdown reboot -r gpuclusterctl",
    "nvidia-smi -i 0000:3b:00.0 -e 0",
    "esxcli system shutdown reboot -r gpuclusterctl",
    "esxcli system maintenanceMode set -e false",
]

LEASE = "/UserVars/GpuclusterctlLease"


def text_of(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def exec_kind(line):
    """What one exec to a simulated ESXi host was, for exact sequences."""
    if CHANGE_BATCH.match(line):
        return "batch of %d" % line.count(" && echo @@gc:")
    if OBSERVE_MARK in line:
        return "observe"
    if "@@lease:cleared" in line:
        return "lease clear"  # the compare-and-clear snippet
    if LEASE in line or "advanced add -o GpuclusterctlLease " in line:
        return "lease read" if "advanced list" in line else "lease write"
    return line

SESSION_LINES = {"enable", "no cli session paging enable", "configure terminal", "exit",
                 "configuration write"}


def schema_valid(test, name, text):
    """The output parsed, after checking it against specs/NAME.schema.json."""
    import jsonschema
    with open(os.path.join(ROOT, "specs", name + ".schema.json"), encoding="utf-8") as f:
        validator = jsonschema.Draft202012Validator(json.load(f))
    doc = json.loads(text)
    errors = ["%s: %s" % (list(e.absolute_path), e.message) for e in validator.iter_errors(doc)]
    test.assertEqual(errors, [], text[:2000])
    return doc


class ApplyRoce(LabCase):
    spec = "examples/roce-passthrough.yaml"
    port = 2311

    def assert_host_converged(self, h, boots=1):
        st = self.state(h)
        self.assertFalse(st["maintenance"], h)
        gpu = [d for d in st["pci"] if d["addr"] == "0000:3b:00.0"][0]
        self.assertTrue(gpu["passthru"] and gpu["passthru_active"], h)
        self.assertEqual(st["modules"]["nmlx5_core"], NMLX5_PARAMS, h)
        self.assertEqual(st["modules_active"]["nmlx5_core"], NMLX5_PARAMS, h)
        self.assertEqual(st["ntp"], {"enabled": True, "servers": ["ntp1.lab.example"], "loglevel": "warning"})
        self.assertEqual(st["boot_count"], boots, h)

    def switch_config_commands(self):
        return [c for _, c in self.log("sn2700")
                if not c.startswith("show ") and c not in SESSION_LINES]

    def test_converges_in_order_then_reapply_changes_nothing(self):
        r = self.apply("-v")
        self.assertIn("Apply complete: 70 actions done, 0 failed, 0 skipped.", r.stdout)
        # each host: exactly the reference sequence, one maintenance window, one reboot
        for h in self.hosts:
            self.assertEqual(self.changes(h), ROCE_SEQUENCE, h)
            self.assert_host_converged(h)
        # rolling.max_unavailable is 2: never more than 2 hosts in maintenance at once
        windows = []
        for h in self.hosts:
            ts = {c: parse_ts(t) for t, c in self.log(h) if "maintenanceMode set" in c}
            windows.append((ts["esxcli system maintenanceMode set -e true"],
                            ts["esxcli system maintenanceMode set -e false"]))
        for start, _ in windows:
            overlapping = sum(1 for s, e in windows if s <= start < e)
            self.assertLessEqual(overlapping, 2)
        # the switch: the lossless RoCE recipe, in one session, saved
        self.assertEqual(self.switch_config_commands(), SWITCH_CONFIG)
        sw = self.state("sn2700") if os.path.exists(os.path.join(self.host_dir("sn2700"), "state.json")) else None
        self.assertIsNone(sw)  # the switch keeps running.json/startup.json instead
        # one connection per target (9), no more commands than one batch per host
        self.assertIn("SSH: ", r.stderr)
        # each host's round trips, read from its own log: the observation,
        # which takes the lease too (a first apply: it expects changes), its
        # changes in one exec (batch.c) that ends reading the uptime the
        # reboot is proven with, the reboot, the polls, the read-back, whose
        # batch lists the VFs, then leaves maintenance mode and clears the
        # lease (NTP needs no maintenance window: a host of a later wave sets
        # it in the first, alone, and sends the rest of its changes in its
        # own).  4 execs besides the polls, 5 with the NTP alone
        polls = ("vmware -v", "esxcli system stats uptime get")
        trips, first_wave = {}, []
        for h in self.hosts:
            execs = [c for _, c in self.execs(h) if c not in polls]
            kinds = [exec_kind(c) for c in execs]
            if kinds[1] == "batch of 5":
                first_wave.append(h)
                changes = ["batch of 5"]
            else:
                changes = [ROCE_SEQUENCE[0], "batch of 4"]
            self.assertEqual(kinds, ["observe"] + changes + [ROCE_SEQUENCE[4], "observe"], h)
            self.assertRegex(execs[0], r"; sh -c 'r=\$\(esxcli --formatter=xml system settings advanced "
                             r"list -o " + re.escape(LEASE) + r" .*@@lease:\$1:took; exit 0' lease "
                             r"(\w+) [0-9a-f]{16} 'cluster=roce-lab;holder=\S+;pid=\d+;lock=[0-9a-f]{16};"
                             r"since=\d+;expires=\d+' \|\| echo @@gc:\1:failed; echo @@gc:\1:end$")
            self.assertNotIn("maintenanceMode set", execs[0], h)
            self.assertIn("network sriovnic list || echo @@gc:", execs[len(changes) + 2], h)
            self.assertRegex(execs[len(changes) + 2], r"network sriovnic list \|\| echo @@gc:(\w+):failed; "
                             r"echo @@gc:\1:\d+; esxcli system maintenanceMode set -e false && "
                             r"echo @@gc:\1:\d+ && sh -c 'r=\$\(esxcli --formatter=xml system settings advanced list .*"
                             r"@@lease:cleared.*' lease [0-9a-f]{16} \|\| echo @@gc:\1:failed; "
                             r"echo @@gc:\1:end$", h)
            self.assertEqual(self.lease(h), "none", h)
            self.assertTrue(execs[len(changes)].endswith(
                " && esxcli system stats uptime get && echo @@gc:%s:end"
                % CHANGE_BATCH.match(execs[len(changes)]).group(0).split(":")[1]), h)
            trips[h] = len(execs)
        self.assertEqual(len(first_wave), 2, first_wave)  # rolling.max_unavailable
        # and the tool counted the same (apply -v)
        self.assertIn("gpuclusterctl: round trips per ESXi host: %d to %d over %d hosts, besides "
                      % (min(trips.values()), max(trips.values()), len(self.hosts)), r.stderr)
        self.assertIn("gpuclusterctl: cluster lease taken on 8 targets (8 in their observation), "
                      "cleared on 8 (8 with their last step)\n", r.stderr)

        before = {h: len(self.log(h)) for h in self.hosts + self.switches}
        r2 = self.apply("-v")
        self.assertIn("No changes on the selected targets", r2.stdout)
        self.assertIn("gpuclusterctl: 0 changing commands; SSH: 9 connections, 8 commands, 1 shells",
                      r2.stderr)
        for h in self.hosts:
            new = [c for _, c in self.log(h)[before[h]:]]
            self.assertEqual(len(new), 1, h)           # one observation batch
            self.assertTrue(observation(new[0]), new)  # and nothing else
        self.assertEqual([c for _, c in self.log("sn2700")[before["sn2700"]:]
                          if not c.startswith("show ") and c not in SESSION_LINES], [])
        # --json of the converged run: status ok, no changing command, valid against its schema
        rep = schema_valid(self, "apply-v1", self.apply("--json").stdout)
        self.assertEqual((rep["status"], rep["changing_commands"], [t["name"] for t in rep["targets"]]),
                         ("ok", 0, self.hosts + self.switches))
        # validate reads the converged hosts and switch back: every check passes, exit 0
        r3 = self.gc("validate", "--skip", "node,pairs", "--target", "esx0*", "--target", "sn2700",
                     check=0)
        self.assertRegex(r3.stdout, r"\n\d+ checks: \d+ passed, 0 failed, 0 skipped in ")
        rep = schema_valid(self, "validate-v1", self.gc(
            "validate", "--json", "--skip", "node,pairs", "--target", "esx0*", "--target", "sn2700",
            check=0).stdout)
        self.assertEqual((rep["summary"]["result"], rep["summary"]["fail"]), ("ok", 0))
        self.assertEqual(sorted(t["name"] for t in rep["targets"]), sorted(self.hosts + self.switches))

    def test_drift_by_hand_shows_in_plan_exactly_and_apply_restores_it(self):
        self.apply()
        r = self.gc("plan", "--only", "esxi,switch", check=0)
        self.assertEqual(r.stdout, "No changes. The cluster matches the spec.\n")
        # an operator changes NTP on esx03 and port 1/7's trust mode on the switch
        self.remote("esx03", "esxcli system ntp set -s other.lab.example")
        self.switch_cli("enable", "configure terminal", "interface ethernet 1/7 qos trust L2",
                        "exit", "exit")
        r = self.gc("plan", "--only", "esxi,switch", check=2)
        self.assertEqual(r.stdout,
                         "Wave 1 of 1\n\n"
                         "  esxi esx03\n"
                         "    ~ esx03/esxi.ntp\n"
                         "        servers: other.lab.example → ntp1.lab.example\n\n"
                         "  switch sn2700\n"
                         "    ~ sn2700/switch.qos_trust\n"
                         "        ports: 1/1-1/6,1/8-1/32 → 1/1-1/32\n"
                         "        trust: L2 → L3\n\n"
                         "Plan: 0 to add, 2 to change, 0 to destroy, 0 synthesized steps "
                         "(0 hosts need maintenance, 0 reboots).\n")
        before = len(self.log("esx03"))
        self.apply()
        self.assertEqual([c for _, c in self.log("esx03")[before:] if not observation(c)],
                         ["esxcli system ntp set -e true -s ntp1.lab.example"])
        self.assertIn("interface ethernet 1/7 qos trust L3", self.switch_config_commands())
        self.gc("plan", "--only", "esxi,switch", check=0)

    def test_unsaved_switch_configuration_is_reported_and_saved(self):
        self.apply()
        sw = self.host_dir("sn2700")
        running = json.load(open(os.path.join(sw, "running.json")))
        self.assertEqual(json.load(open(os.path.join(sw, "startup.json"))), running)
        # an earlier apply sent its commands and died before `configuration write`
        os.unlink(os.path.join(sw, "startup.json"))
        with open(os.path.join(self.state_dir, "roce-lab.journal"), "a") as j:
            j.write(json.dumps({"run": "killed", "ts": 0, "target": "sn2700",
                                "action": "~ sn2700/switch.pool", "kind": "save_owed",
                                "state": "start"}) + "\n")
        r = self.gc("plan", "--only", "esxi,switch", check=0)
        self.assertIn("sn2700: warning: the configuration may be unsaved: an earlier apply "
                      "stopped before 'configuration write'; apply saves it", r.stderr)
        before = len(self.log("sn2700"))
        r = self.apply()
        self.assertIn("sn2700: warning: saved the configuration an earlier apply left unsaved",
                      r.stderr)
        sent = [c for _, c in self.log("sn2700")[before:] if not c.startswith("show ")]
        self.assertEqual(sent.count("configuration write"), 1)
        self.assertEqual(json.load(open(os.path.join(sw, "startup.json"))), running)
        r = self.apply()
        self.assertNotIn("unsaved", r.stderr)

    def switch_cli(self, *lines):
        inv = [l.split() for l in open(os.path.join(self.lab, "inventory")) if " onyx " in l][0]
        r = subprocess.run(["ssh", "-tt", "-p", str(self.port), "-i", os.path.join(self.lab, "client", "id_ed25519"),
                            "-o", "UserKnownHostsFile=" + os.path.join(self.lab, "client", "known_hosts"),
                            "-o", "BatchMode=yes",
                            "%s@%s" % (open(os.path.join(self.lab, "user")).read().strip(), inv[0])],
                           input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_unreachable_host_is_retried_three_times_then_reported(self):
        # nothing listens on port+50: connection refused, a transport fault
        spec = os.path.join(self.lab, "unreachable.yaml")
        with open(self.specfile) as f:
            text = f.read()
        with open(spec, "w") as f:
            f.write(text.replace("port: %d" % self.port, "port: %d" % (self.port + 50)))
        r = self.gc("plan", "--only", "esxi", spec=spec, check=1)
        for h in self.hosts:
            self.assertEqual(r.stderr.count("%s: retrying after: host '%s': ssh " % (h, h)), 3, r.stderr)
        self.assertIn("gpuclusterctl: error: esxi 'esx01' failed: host 'esx01': ssh gclab@127.0.0.11:%d: "
                      "cannot connect: Connection refused\n" % (self.port + 50), r.stderr)
        # nothing could be observed: the plan is all unknown
        self.assertTrue(r.stdout.startswith("Unknown: not observed, nothing planned for them\n\n"
                                            "  esxi esx01: unknown: host 'esx01': ssh gclab@127.0.0.11:%d: "
                                            "cannot connect: Connection refused\n" % (self.port + 50)), r.stdout)
        self.assertTrue(r.stdout.endswith(" 8 targets unknown.\n"), r.stdout)

    def spec_with_esx03_ssh(self, name, ssh):
        """The lab's spec with esx03 given its own `ssh:` map (flow YAML)."""
        spec = os.path.join(self.lab, name)
        with open(self.specfile) as f:
            text = f.read()
        self.assertIn("- name: esx03\n  address: 127.0.0.13\n", text)
        with open(spec, "w") as f:
            f.write(text.replace("- name: esx03\n  address: 127.0.0.13\n",
                                 "- name: esx03\n  address: 127.0.0.13\n  ssh: %s\n" % ssh))
        return spec

    def test_plan_with_one_unreachable_host_plans_the_others(self):
        spec = self.spec_with_esx03_ssh("one-unreachable.yaml", "{port: %d}" % (self.port + 50))
        r = self.gc("plan", "--only", "esxi,switch", spec=spec, check=1)
        refused = "host 'esx03': ssh gclab@127.0.0.13:%d: cannot connect: Connection refused" % (self.port + 50)
        self.assertIn("Wave 2 of 4 (maintenance: esx04, esx05)\n", r.stdout)
        self.assertIn("Wave 4 of 4 (maintenance: esx08)\n", r.stdout)
        self.assertNotIn("esxi esx03\n", r.stdout)
        self.assertIn("\nUnknown: not observed, nothing planned for them\n\n"
                      "  esxi esx03: unknown: " + refused + "\n\n"
                      "Plan: 0 to add, 27 to change, 0 to destroy, 35 synthesized steps "
                      "(7 hosts need maintenance, 7 reboots). 1 target unknown.\n", r.stdout)
        self.assertTrue(r.stderr.endswith("gpuclusterctl: error: esxi 'esx03' failed: " + refused + "\n"),
                        r.stderr)
        for h in self.hosts:
            self.assertEqual(self.changes(h), [], h)
        # --json carries the same
        r = self.gc("plan", "--only", "esxi,switch", "--json", spec=spec, check=1)
        plan = json.loads(r.stdout)
        self.assertEqual(plan["unknown"], [{"kind": "esxi", "target": "esx03", "error": refused}])

    def test_a_read_slower_than_the_hosts_read_timeout_fails_that_host_alone(self):
        # esx03 answers every command a second late, so its observation
        # batch (some thirty commands) runs for half a minute; its own
        # `ssh: {read_timeout_s: 3}` cuts each try short at 3 s.  A read
        # past its timeout is a transport fault: tried on a new connection,
        # then the host is unknown and the others are planned as usual.
        spec = self.spec_with_esx03_ssh("read-timeout.yaml", "{read_timeout_s: 3}")
        self.control("esx03", {"latency_ms": 1000})
        before = len(self.execs("esx03"))
        r = self.gc("plan", "--only", "esxi", spec=spec, check=1)
        timed_out = "host 'esx03': ssh gclab@127.0.0.13:%d: command: timed out after 3.000 s" % self.port
        self.assertEqual(r.stderr.count("esx03: retrying after: " + timed_out + "\n"), 3, r.stderr)
        self.assertTrue(r.stderr.endswith("gpuclusterctl: error: esxi 'esx03' failed: " + timed_out + "\n"),
                        r.stderr)
        self.assertIn("\nUnknown: not observed, nothing planned for them\n\n"
                      "  esxi esx03: unknown: " + timed_out + "\n", r.stdout)
        self.assertIn("Wave 4 of 4 (maintenance: esx08)\n", r.stdout)
        # four observations sent, each cut short; the spec's other hosts keep
        # the default read timeout and answered in time
        kinds = [exec_kind(c) for _, c in self.execs("esx03")[before:]]
        self.assertEqual(kinds, ["observe"] * 4, kinds)
        for h in self.hosts:
            self.assertEqual(self.changes(h), [], h)

    def spec_with_switch_ssh(self, name, ssh):
        """The lab's spec with the switch given its own `ssh:` map."""
        spec = os.path.join(self.lab, name)
        with open(self.specfile) as f:
            text = f.read()
        head = "- name: sn2700\n  address: 127.0.0.100\n"
        self.assertEqual(text.count(head), 1)
        with open(spec, "w") as f:
            f.write(text.replace(head, head + "  ssh: %s\n" % ssh))
        return spec

    def test_a_switch_slower_than_its_read_timeout_is_unknown(self):
        # every line the switch gets waits 3 s; its `ssh: {read_timeout_s:
        # 2}` cuts the session's first read (the prompt after `enable`)
        # short: retried on a new connection, then the switch is unknown
        spec = self.spec_with_switch_ssh("switch-read-timeout.yaml", "{read_timeout_s: 2}")
        self.control("sn2700", {"latency_ms": 3000})
        r = self.gc("plan", "--only", "switch", spec=spec, check=1)
        timed_out = "switch 'sn2700': no prompt after 'enable' within 2000 ms"
        self.assertEqual(r.stderr.count("sn2700: retrying after: " + timed_out + "\n"), 3, r.stderr)
        self.assertTrue(r.stderr.endswith("gpuclusterctl: error: switch 'sn2700' failed: " + timed_out + "\n"),
                        r.stderr)
        self.assertEqual(r.stdout, "Unknown: not observed, nothing planned for them\n\n"
                         "  switch sn2700: unknown: " + timed_out + "\n\n"
                         "Plan: 0 to add, 0 to change, 0 to destroy, 0 synthesized steps "
                         "(0 hosts need maintenance, 0 reboots). 1 target unknown.\n")
        self.assertEqual([c for _, c in self.log("sn2700")], ["enable"] * 4)

    def test_a_switch_change_waits_the_command_timeout_not_the_read_timeout(self):
        # `configuration write` takes 2.5 s, longer than the switch's 2 s read
        # timeout: a change waits ssh.command_timeout_s (300 s), so the
        # apply saves the recipe, and the reads around it still answer in time
        spec = self.spec_with_switch_ssh("switch-slow-write.yaml", "{read_timeout_s: 2}")
        self.control("sn2700", {"slow": {"match": "configuration write", "ms": 2500}})
        r = self.gc("apply", "--only", "switch", spec=spec, check=0)
        self.assertNotIn("retrying after", r.stderr)
        self.assertEqual(self.switch_config_commands(), SWITCH_CONFIG)
        # one `configure terminal` ... `configuration write` per action, each
        # sent once: none was cut short and tried again
        lines = [c for _, c in self.log("sn2700")]
        writes = lines.count("configuration write")
        self.assertEqual(writes, lines.count("configure terminal"))
        self.assertIn("Apply complete: %d actions done, 0 failed, 0 skipped." % writes, r.stdout)
        # saved (what a reload brings back is what runs), and nothing left to do
        sw = self.host_dir("sn2700")
        with open(os.path.join(sw, "startup.json")) as a, open(os.path.join(sw, "running.json")) as b:
            self.assertEqual(json.load(a), json.load(b))
        self.gc("plan", "--only", "switch", spec=spec, check=0)

    def test_dropped_connection_while_taking_the_lease_is_retried(self):
        # a first apply takes the lease in its observation (the take
        # snippet: read, then written where the host holds none).  The
        # simulator counts each command of the observation batch (the
        # snippet's esxcli too): the 31st command esx03 runs is the lease's
        # `advanced add` (the observation found no option: never leased),
        # and the connection drops instead.  The observation is made again
        # on a new connection and takes the lease then; nothing else ever
        # writes it.
        self.control("esx03", {"reboot_seconds": self.reboot_seconds, "drop_after": 30})
        r = self.apply()
        self.assertIn("esx03: retrying after: ", r.stderr)
        self.assertNotIn("Apply FAILED", r.stdout)
        execs = [c for _, c in self.execs("esx03")]
        takes = [c for c in execs if OBSERVE_MARK in c and "@@lease:$1:took" in c]
        self.assertEqual(execs[:2], takes[:2])  # cut short, then made again
        self.assertEqual(len(takes), 2, takes)
        self.assertEqual([c for c in execs if LEASE in c and OBSERVE_MARK not in c], [])
        for h in self.hosts:
            self.assert_host_converged(h)
            self.assertEqual(self.lease(h), "none", h)

    def test_dropped_connection_is_retried_and_converges(self):
        # esx03 drops the connection in the middle of its batch of changes
        # (after its observation batch, which reads its lease, the lease
        # write, NTP and entering maintenance mode: the 37th command,
        # `pcipassthru set`, counting the batch's marker echoes): the
        # executor reconnects, re-observes and sends only what is still
        # needed.
        self.control("esx03", {"reboot_seconds": self.reboot_seconds, "drop_after": 36})
        # a dropped session may leave the TCP connection open and silent (the
        # simulator cannot kill sshd's root-owned monitor): a short command
        # timeout makes that a quick GC_ETIMEOUT, retried like a clean drop
        spec = os.path.join(self.lab, "short-timeout.yaml")
        open(spec, "w").write(open(self.specfile).read().replace("command_timeout_s: 300",
                                                                   "command_timeout_s: 15"))
        r = self.apply(spec=spec)
        self.assertIn("retrying after:", r.stderr)
        for h in self.hosts:
            self.assert_host_converged(h)
        seq = self.changes("esx03")
        collapsed = [c for i, c in enumerate(seq) if i == 0 or c != seq[i - 1]]
        self.assertEqual(collapsed, ROCE_SEQUENCE)
        self.assertLessEqual(len(seq) - len(collapsed), 1)

    def test_failing_command_fails_that_host_only_and_leaves_maintenance(self):
        msg = "Error: Unable to set module parameters: nmlx5_core is busy"
        self.control("esx02", {"reboot_seconds": self.reboot_seconds,
                               "fail_once": {"match": "esxcli system module parameters set", "message": msg}})
        r = self.apply("--continue-on-error", check=1)
        self.assertIn("esx02        esxi     3 done, 1 failed, 4 skipped: host 'esx02': command "
                      "'%s' failed: %s" % (NMLX5_SET, msg),
                      r.stdout)
        self.assertNotIn("LEFT IN MAINTENANCE", r.stdout)
        self.assertNotIn("Rollout halted", r.stdout)
        self.assertIn("esx02                 a change still waits for a reboot: re-run apply", r.stdout)
        for h in self.hosts:
            if h != "esx02":
                self.assert_host_converged(h)
        st = self.state("esx02")
        self.assertFalse(st["maintenance"])          # taken out again after the failure
        self.assertEqual(self.changes("esx02")[-1], "esxcli system maintenanceMode set -e false")
        self.assertEqual(st["boot_count"], 0)
        # --json says the same of each host (the run's journal as it is
        # now: esx02 still owes its reboot, and is not taken out again)
        self.control("esx02", {"reboot_seconds": self.reboot_seconds,
                               "fail_once": {"match": "esxcli system shutdown reboot",
                                             "message": "Error: Unable to reboot: a task is in progress"}})
        rep = schema_valid(self, "apply-v1", self.apply("--json", "--continue-on-error", check=1).stdout)
        hosts = {t["name"]: t for t in rep["targets"] if t["kind"] == "esxi"}
        self.assertEqual({h: (t["exited_maintenance_early"], t["reboot_owed"], t["left_in_maintenance"])
                          for h, t in hosts.items()},
                         dict({h: (False, False, False) for h in self.hosts},
                              esx02=(True, True, False)))
        self.assertFalse(self.state("esx02")["maintenance"])
        self.assertEqual(self.state("esx02")["boot_count"], 0)
        # the re-run finishes the job: the journal knows the passthrough
        # change awaits a reboot, and that the refused one never started (no
        # wait for a host about to go down: it is observed once)
        r = self.apply("-v")
        self.assertNotIn("esx02: waiting for it to come back from an earlier apply's reboot",
                         r.stderr)
        self.assert_host_converged("esx02")

    def test_a_host_that_stays_up_never_leaves_maintenance_on_a_poll(self):
        # esx03 answers its first reboot command and does not go down.  Each
        # poll carries the read-back and the exit behind the guard its own
        # shell runs, which finds it up since before the reboot: nothing
        # after the uptime read runs, the host stays in maintenance mode,
        # and after the grace the reboot goes out again; the poll that
        # finds it back from that one reads it back and takes it out
        self.control("esx03", {"reboot_seconds": self.reboot_seconds,
                               "fail_once": {"match": "esxcli system shutdown reboot", "message": "",
                                             "exit": 0, "stream": "stdout"}})
        r = self.apply("-v", "--target", "esx03")
        self.assertIn("esx03: the host did not go down: sending the reboot again", r.stderr)
        self.assertIn("Apply complete: 8 actions done, 0 failed, 0 skipped.\n", r.stdout)
        self.assert_host_converged("esx03")
        st = self.state("esx03")
        self.assertEqual((st["boot_count"], st["maintenance"]), (1, False))
        # one exit of maintenance mode, after the second reboot command
        self.assertEqual(self.changes("esx03"), ROCE_SEQUENCE[:4] + [ROCE_SEQUENCE[4]] * 2 +
                         [ROCE_SEQUENCE[5]])
        execs = [c for _, c in self.execs("esx03")]
        reboots = [k for k, c in enumerate(execs) if "system shutdown reboot" in c]
        self.assertEqual(len(reboots), 2)
        guarded = execs[reboots[0] + 1:reboots[1] - 1]
        # between the two: guarded polls only (at least the 2 s grace of
        # them at 100 ms), each carrying the exit, none of which ran; then
        # the uptime the reboot sent again is proven with
        self.assertEqual(execs[reboots[1] - 1], "esxcli system stats uptime get")
        self.assertGreaterEqual(len(guarded), 5)
        for c in guarded:
            self.assertRegex(c, r"^echo @@gc:(\w+):up; sh -c 'u=\$\(esxcli system stats uptime get\) "
                             r"\|\| exit 2; echo \"\$u\"; \[ \"\$u\" -lt \"\$1\" \]' up \d+ \|\| exit 0; "
                             r"echo @@gc:\1:1; .* esxcli system maintenanceMode set -e false .*"
                             r"echo @@gc:\1:end$")
        # after the second: one exec, the guarded poll that read it back
        self.assertEqual(len(execs), reboots[1] + 2)
        self.assertTrue(execs[-1].startswith("echo @@gc:"), execs[-1])
        self.assertIn(":up; sh -c ", execs[-1])
        ran = [c for _, c in self.log("esx03")[len(ROCE_SEQUENCE) - 2:]]
        self.assertEqual(ran.count("esxcli system maintenanceMode set -e false"), 1)
        # the verify and the exit, journalled with the wait, are shown
        # starting when the host is back, not for the length of the reboot
        steps = [l for l in r.stderr.splitlines() if l.startswith("esx03: ") and
                 (l.endswith(" ...") or l.endswith(" done"))]
        self.assertEqual(steps[steps.index("esx03: wait for esx03 ..."):],
                         ["esx03: wait for esx03 ...", "esx03: wait for esx03 done",
                          "esx03: verify esx03 ...", "esx03: verify esx03 done",
                          "esx03: exit maintenance mode on esx03 ...",
                          "esx03: exit maintenance mode on esx03 done"])

    def test_a_drop_inside_the_poll_that_carries_the_read_back_is_a_poll_unanswered(self):
        # esx03's connection drops as the read-back that the poll finding it
        # back carries reaches its exit, before the exit runs: that poll got
        # no answer, so the wait polls again, and the next poll's guard still
        # finds the host rebooted and carries the read-back and the exit
        self.control("esx03", {"reboot_seconds": self.reboot_seconds,
                               "drop_once": {"match": "esxcli system maintenanceMode set -e false"}})
        r = self.apply("-v", "--target", "esx03")
        self.assertNotIn("retrying after:", r.stderr)
        self.assertIn("Apply complete: 8 actions done, 0 failed, 0 skipped.\n", r.stdout)
        self.assertIn("gpuclusterctl: round trips per ESXi host: 4 to 4 over 1 hosts, besides 1 polls "
                      "while they rebooted\n", r.stderr)
        self.assert_host_converged("esx03")
        st = self.state("esx03")
        self.assertEqual((st["boot_count"], st["maintenance"]), (1, False))
        with open(os.path.join(self.host_dir("esx03"), "control.json"), encoding="utf-8") as f:
            self.assertNotIn("drop_once", json.load(f))  # it landed
        execs = [c for _, c in self.execs("esx03")]
        k = [i for i, c in enumerate(execs) if "system shutdown reboot" in c][0]
        # after the reboot: two guarded polls, each carrying the exit, and nothing else
        self.assertEqual(len(execs), k + 3, execs[k + 1:])
        for c in execs[k + 1:]:
            self.assertRegex(c, r"^echo @@gc:\w+:up; sh -c .* esxcli system maintenanceMode set -e false ")

    def test_a_failed_wave_halts_the_rollout_and_its_host_leaves_maintenance(self):
        # esx01's passthrough never becomes current: its read-back after the
        # reboot fails (on its own timeout, with progress), the host leaves
        # maintenance like after any failure, and no later wave starts
        self.control("esx01", {"reboot_seconds": self.reboot_seconds, "passthru_stuck": True})
        r = self.apply("-v", "--verify-timeout", "1", check=1)
        why = ("host 'esx01': after the reboot still pending: passthrough of 0000:3b:00.0 "
               "configured on, running off (verify timeout 1 s)")
        self.assertIn("  esx01        esxi     6 done, 1 failed, 1 skipped: " + why + "\n"
                      "  esx01                 left maintenance mode after the failure\n", r.stdout)
        self.assertRegex(r.stderr, r"esx01: verifying \(\d+ s of 1 s\): passthrough of 0000:3b:00.0")
        self.assertIn("\nRollout halted: 1 failed target, rolling.max_failures is 0.\n"
                      "Not started: waves 2-4 of 4, 42 actions on esx03, esx04, esx05, esx06, esx07, esx08.\n"
                      "Fix the failure and re-run apply (--continue-on-error starts the next waves anyway).\n",
                      r.stdout)
        self.assertIn("gpuclusterctl: warning: rollout halted: 1 failed target, rolling.max_failures is 0; "
                      "waves 2-4 not started\n", r.stderr)
        self.assertNotIn("LEFT IN MAINTENANCE", r.stdout)
        self.assertNotIn("interrupted", r.stdout)
        # esx01: its whole window, the exit in its read-back's exec, which
        # the recovery after the failure finds done
        self.assertEqual(self.changes("esx01"), ROCE_SEQUENCE)
        self.assertFalse(self.state("esx01")["maintenance"])
        self.assert_host_converged("esx02")
        # wave 1 also held the other hosts' NTP change; nothing else reached them
        for h in self.hosts[2:]:
            self.assertEqual(self.changes(h), ROCE_SEQUENCE[:1], h)
            self.assertFalse(self.state(h)["maintenance"], h)

    def test_a_refused_exit_in_the_read_back_fails_the_host_and_is_recovered(self):
        # esx02's read-back matches the spec, but the exit of maintenance
        # mode in the same exec is refused once: the host fails with the
        # device's words (the read-back itself done), and the recovery
        # after the wave takes it out with the exit alone
        msg = "Error: maintenance mode exit is blocked"
        self.control("esx02", {"reboot_seconds": self.reboot_seconds,
                               "fail_once": {"match": "esxcli system maintenanceMode set -e false",
                                             "message": msg}})
        r = self.apply(check=1)
        self.assertIn("  esx02        esxi     7 done, 1 failed, 0 skipped: host 'esx02': command "
                      "'esxcli system maintenanceMode set -e false' failed: %s\n"
                      "  esx02                 left maintenance mode after the failure\n" % msg,
                      r.stdout)
        self.assertEqual(self.changes("esx02"), ROCE_SEQUENCE + [ROCE_SEQUENCE[-1]])
        execs = [exec_kind(c) for _, c in self.execs("esx02")]
        self.assertEqual(execs[-3:], ["observe", "esxcli system maintenanceMode set -e false",
                                      "lease clear"])
        self.assertFalse(self.state("esx02")["maintenance"])
        self.assert_host_converged("esx01")

    def test_max_failures_lets_the_rollout_go_on(self):
        self.control("esx01", {"reboot_seconds": self.reboot_seconds, "passthru_stuck": True})
        spec = os.path.join(self.lab, "max-failures.yaml")
        with open(self.specfile) as f:
            text = f.read()
        self.assertIn("rolling:\n  max_unavailable: 2\n", text)
        with open(spec, "w") as f:
            f.write(text.replace("rolling:\n", "rolling:\n  max_failures: 1\n"))
        r = self.apply("--verify-timeout", "1", spec=spec, check=1)
        self.assertNotIn("Rollout halted", r.stdout)
        self.assertIn("  esx01                 left maintenance mode after the failure\n", r.stdout)
        self.assertEqual(self.changes("esx01"), ROCE_SEQUENCE)
        for h in self.hosts[1:]:
            self.assert_host_converged(h)

    def test_lossless_roce_reaches_the_hosts_uplinks(self):
        # issue 14, item 13: the switch's DSCP trust, PFC on priority 3 and ECN
        # at the host's end, in nmlx5_core's one parameter string.  esx01
        # holds an operator's DRSS=4 and a decimal pfctx=8 (kept; the same
        # mask); esx02's driver release has no ecn (nothing to set there);
        # esx03's has no trust_state (refused before anything changes).
        self.remote("esx01", "esxcli system module parameters set -m nmlx5_core -p 'DRSS=4 pfctx=8'")
        self.control("esx02", {"reboot_seconds": self.reboot_seconds, "nmlx5_without": ["ecn"]})
        self.control("esx03", {"reboot_seconds": self.reboot_seconds,
                               "nmlx5_without": ["ecn", "trust_state"]})
        r = self.apply("-v", "--target", "esx01", "--target", "esx02")
        esx01 = "max_vfs=4 trust_state=2 pfctx=0x08 pfcrx=0x08 ecn=1 DRSS=4"
        esx02 = "max_vfs=4 trust_state=2 pfctx=0x08 pfcrx=0x08"
        for h, params in (("esx01", esx01), ("esx02", esx02)):
            seq = [c for c in self.changes(h) if "DRSS=4 pfctx=8" not in c]
            self.assertEqual(seq, [c if c != NMLX5_SET else
                                   "esxcli system module parameters set -m nmlx5_core -p '%s'" % params
                                   for c in ROCE_SEQUENCE], h)
            st = self.state(h)
            self.assertEqual((st["modules"]["nmlx5_core"], st["modules_active"]["nmlx5_core"],
                              st["boot_count"]), (params, params, 1), h)
        # converged: a second apply sends nothing that changes anything
        r = self.apply("-v", "--target", "esx01", "--target", "esx02")
        self.assertIn("No changes on the selected targets", r.stdout)
        self.assertIn("gpuclusterctl: 0 changing commands;", r.stderr)
        # an operator puts esx01 back to PCP trust: exactly that drift, one reboot
        self.remote("esx01", "esxcli system module parameters set -m nmlx5_core -p "
                             "'max_vfs=4 trust_state=1 pfctx=0x08 pfcrx=0x08 ecn=1 DRSS=4'")
        r = self.gc("plan", "--only", "esxi", "--target", "esx01", check=2)
        self.assertIn("    ~ esx01/esxi.module_param/nmlx5_core  [maintenance, reboot]\n"
                      "        trust_state: 1 → 2\n", r.stdout)
        self.assertIn("(1 hosts need maintenance, 1 reboots).", r.stdout)
        # esx03: the host fails at observation, naming the parameter; nothing sent
        r = self.gc("plan", "--only", "esxi", "--target", "esx03", check=1)
        self.assertIn("host 'esx03': its nmlx5_core driver has no parameter 'trust_state', "
                      "which lossless RoCE needs (install a newer NVIDIA nmlx5 driver)", r.stderr)
        self.assertEqual(self.changes("esx03"), [])

    def test_vfs_missing_after_the_reboot_fail_with_the_firmware_hint(self):
        # issue 14, item 14: the adapter's firmware has SR-IOV off (no MFT on
        # the lab's hosts to read it): after the reboot that loads max_vfs,
        # `esxcli network sriovnic list` lacks the NIC and the host fails
        self.control("esx03", {"reboot_seconds": self.reboot_seconds,
                               "sriov_firmware": {"0000:5e:00.0": {"SRIOV_EN": 0, "NUM_OF_VFS": 0}}})
        r = self.apply("--target", "esx03", check=1)
        self.assertIn("host 'esx03': NIC 0000:5e:00.0 (vmnic4) has no SR-IOV VFs after the reboot "
                      "(not in `esxcli network sriovnic list`): its firmware needs SRIOV_EN=1 and "
                      "NUM_OF_VFS>=4; set them with Mellanox MFT on the host "
                      "(/opt/mellanox/bin/mlxconfig -d DEVICE set SRIOV_EN=1 NUM_OF_VFS=4) and "
                      "apply again", r.stdout)
        # the read-back after the reboot listed the VFs, in its own batch
        cmds = [c for _, c in self.log("esx03")]
        reboot = cmds.index("esxcli system shutdown reboot -r gpuclusterctl")
        self.assertTrue(any("; esxcli --formatter=xml network sriovnic list || " in c
                            for c in cmds[reboot:]), cmds[reboot:])
        st = self.state("esx03")
        self.assertEqual(st["modules_active"]["nmlx5_core"], NMLX5_PARAMS)
        self.assertFalse(st["maintenance"])  # taken out again after the failure
        # firmware with VFs (as after mlxconfig and a reboot): the same check passes
        self.control("esx03", {"reboot_seconds": self.reboot_seconds})
        self.remote("esx03", "esxcli system module parameters set -m nmlx5_core -p max_vfs=2,2")
        self.apply("--target", "esx03")
        self.assert_host_converged("esx03", boots=2)

    def test_target_touches_only_the_named_hosts(self):
        r = self.gc("plan", "--only", "esxi,switch", "--target", "esx03", check=2)
        self.assertTrue(r.stdout.startswith("Wave 1 of 1 (maintenance: esx03)\n\n  esxi esx03\n"), r.stdout)
        self.assertNotIn("esx04", r.stdout)
        self.assertNotIn("sn2700", r.stdout)
        r = self.apply("--target", "esx03")
        self.assertIn("Apply complete: 8 actions done, 0 failed, 0 skipped.\n"
                      "(--only/--target: 146 resources on other targets were left out.)\n", r.stdout)
        self.assert_host_converged("esx03")
        self.assertEqual(self.changes("esx03"), ROCE_SEQUENCE)
        for h in self.hosts + self.switches:
            if h != "esx03":
                self.assertEqual(self.log(h), [], h)   # not even observed
        # a glob, repeated: esx07 and esx08 by one pattern, the switch by another
        r = self.apply("--target", "esx0[78]", "--target", "sn*")
        for h in ("esx07", "esx08"):
            self.assert_host_converged(h)
        self.assertEqual(self.switch_config_commands(), SWITCH_CONFIG)
        for h in ("esx01", "esx02", "esx04", "esx05", "esx06"):
            self.assertEqual(self.log(h), [], h)
        r = self.gc("plan", "--target", "esx3*", check=64)
        self.assertEqual(r.stderr, "gpuclusterctl: error: --target 'esx3*' matches no host, switch, "
                                   "vCenter or VM of the spec\n")

    def apply_on_tty(self, answer):
        """apply with a terminal on stdin (a pty) that answers `answer`."""
        import pty
        master, slave = pty.openpty()
        os.write(master, (answer + "\n").encode())
        try:
            r = subprocess.run([self.gc_bin(), "apply", "--only", "esxi,switch", "--target", "esx01",
                                "--state-dir", self.state_dir, self.specfile], env=self.env,
                               stdin=slave, capture_output=True, text=True, timeout=300)
        finally:
            os.close(slave)
            os.close(master)
        return r

    def test_apply_asks_on_a_terminal_and_only_yes_applies(self):
        question = ("Do you want to perform these actions?\n"
                    "  Only 'yes' will be accepted to approve.\n\n"
                    "  Enter a value: ")
        r = self.apply_on_tty("no")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("(1 hosts need maintenance, 1 reboots).\n\n" + question + "\nApply cancelled.\n",
                      r.stdout)
        self.assertEqual(self.changes("esx01"), [])     # observed, nothing changed
        r = self.apply_on_tty("yes")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(question + "\nSummary:\n  esx01        esxi     8 done", r.stdout)
        self.assertEqual(self.changes("esx01"), ROCE_SEQUENCE)
        # without a terminal and without --yes: refused before anything is touched
        r = self.gc("apply", "--only", "esxi", yes=False, check=64)
        self.assertIn("standard input is not a terminal, so nobody can approve the plan: pass --yes",
                      r.stderr)

    def test_ctrl_c_at_the_question_cancels_at_once(self):
        # nobody answers; Ctrl-C (SIGINT: the pty is not the child's
        # controlling terminal, so the test sends it) ends the wait at once
        import pty
        master, slave = pty.openpty()
        outpath = os.path.join(self.lab, "question.out")
        try:
            with open(outpath, "w") as outf:
                p = subprocess.Popen([self.gc_bin(), "apply", "--only", "esxi,switch", "--target", "esx01",
                                      "--state-dir", self.state_dir, self.specfile], env=self.env,
                                     stdin=slave, stdout=outf, stderr=subprocess.PIPE, text=True)
                for _ in range(600):
                    if text_of(outpath).endswith("  Enter a value: "):
                        break
                    time.sleep(0.05)
                p.send_signal(signal.SIGINT)
                _, err = p.communicate(timeout=10)
        finally:
            os.close(slave)
            os.close(master)
        self.assertEqual(p.returncode, 130, err)
        self.assertTrue(text_of(outpath).endswith("  Enter a value: \nApply cancelled.\n"))
        self.assertNotIn("finishing the steps in flight", err)
        self.assertEqual(self.changes("esx01"), [])
        self.assertIn(self.lease("esx01"), (None, "none"))  # nor a lease left behind

    def test_saved_plan_is_applied_exactly_or_refused_after_drift(self):
        planfile = os.path.join(self.lab, "roce.plan")
        r = self.gc("plan", "--only", "esxi,switch", "-out", planfile, check=2)   # Terraform's spelling
        self.assertIn("\nSaved the plan to %s: 'gpuclusterctl apply %s' carries out exactly this plan, "
                      "or refuses if a target changed.\n" % (planfile, planfile), r.stdout)
        with open(planfile) as f:
            saved = json.load(f)
        self.assertEqual(saved["spec"], os.path.realpath(self.specfile))
        self.assertEqual(saved["only"], ["esxi", "switch"])
        self.assertEqual(sorted(saved["fingerprints"]), sorted(self.hosts + self.switches))
        self.assertEqual(saved["plan"]["summary"]["reboots"], 8)
        # drift by hand on esx05 after the review: the plan no longer says what apply would do
        self.remote("esx05", "esxcli system ntp set -s ntp9.lab.example")
        before = {h: self.changes(h) for h in self.hosts}
        r = self.gc("apply", yes=False, spec=planfile, check=1)
        self.assertIn("gpuclusterctl: error: esxi 'esx05' changed since the plan was saved: nothing was "
                      "changed; run plan --out again and review it\n", r.stderr)
        for h in self.hosts:
            self.assertEqual(self.changes(h), before[h], h)
        self.assertEqual(self.switch_config_commands(), [])
        # a fresh plan, applied as saved (no question asked), converges; the same file again is stale
        self.gc("plan", "--only", "esxi,switch", "--out", planfile, check=2)
        r = self.gc("apply", yes=False, spec=planfile, check=0)
        self.assertIn("Apply complete: 70 actions done, 0 failed, 0 skipped.", r.stdout)
        for h in self.hosts:
            self.assert_host_converged(h)
        r = self.gc("apply", yes=False, spec=planfile, check=1)
        self.assertIn(" changed since the plan was saved: nothing was changed", r.stderr)
        # the spec edited after the plan was saved: refused too
        self.gc("plan", "--only", "esxi,switch", "--out", planfile, check=0)
        with open(self.specfile) as f:
            text = f.read()
        self.addCleanup(lambda: open(self.specfile, "w").write(text))
        with open(self.specfile, "a") as f:
            f.write("# edited\n")
        r = self.gc("apply", yes=False, spec=planfile, check=1)
        self.assertEqual(r.stderr, "gpuclusterctl: error: the spec '%s' changed since the plan was saved: "
                                   "nothing was changed; run plan --out again and review it\n"
                         % os.path.realpath(self.specfile))
        r = self.gc("apply", "--target", "esx01", yes=False, spec=planfile, check=64)
        self.assertIn("a saved plan carries its own --only and --target", r.stderr)

    def test_a_host_message_cannot_drive_the_terminal(self):
        # a device's error with a window title, a screen clear, a backspace
        # and an 8-bit CSI: quoted as escapes, never sent to the terminal
        msg = "Error: \x1b]0;owned\x07\x1b[2Jnmlx5_core\x08 is busy \u009b1A"
        self.control("esx02", {"reboot_seconds": self.reboot_seconds,
                               "fail_once": {"match": "esxcli system module parameters set", "message": msg}})
        r = self.apply(check=1)
        shown = "Error: \\u001b]0;owned\\u0007\\u001b[2Jnmlx5_core\\u0008 is busy \\u009b1A"
        self.assertIn("esx02        esxi     3 done, 1 failed, 4 skipped: host 'esx02': command "
                      "'%s' failed: %s" % (NMLX5_SET, shown),
                      r.stdout)
        self.assertIn("FAILED: host 'esx02': command '%s' failed: %s" % (NMLX5_SET, shown),
                      r.stderr)
        for out in (r.stdout, r.stderr):
            self.assertFalse(set(out) & {"\x1b", "\x07", "\x08", "\u009b"}, out)

    def test_unknown_changed_and_trusted_host_keys(self):
        empty = os.path.join(self.lab, "empty_known_hosts")
        open(empty, "w").close()
        r = self.apply("--known-hosts", empty, check=1)
        self.assertIn("SHA256:", r.stderr + r.stdout)
        self.assertIn("trust_new_host_keys", r.stderr + r.stdout)
        for h in self.hosts:
            self.assertEqual(self.log(h), [], h)     # nothing ran anywhere
        self.assertEqual(self.log("sn2700"), [])
        self.assertEqual(os.path.getsize(empty), 0)

        # a changed key is refused even with the opt-in
        bad = os.path.join(self.lab, "changed_known_hosts")
        other = os.path.join(self.lab, "otherkey")
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", other], check=True)
        key = open(other + ".pub").read().split()[:2]
        with open(bad, "w") as f:
            for l in open(os.path.join(self.lab, "inventory")):
                if l.strip() and not l.startswith("#"):
                    f.write("[%s]:%d %s %s\n" % (l.split()[0], self.port, key[0], key[1]))
        r = self.apply("--known-hosts", bad, "--trust-new-host-keys", check=1)
        self.assertIn("CHANGED", (r.stderr + r.stdout).upper())
        for h in self.hosts:
            self.assertEqual(self.log(h), [], h)

        # opting in trusts new keys, records them and proceeds
        self.apply("--known-hosts", empty, "--trust-new-host-keys")
        lines = [l for l in open(empty) if l.strip()]
        self.assertEqual(len(lines), len(self.hosts) + len(self.switches))
        for h in self.hosts:
            self.assert_host_converged(h)

    def test_secrets_never_leak(self):
        secret = open(os.path.join(self.lab, "client", "password")).read().strip()
        self.assertGreater(len(secret), 8)
        # the lab spec uses the password file; run it through password_env too
        env = dict(self.env, GC_TEST_SECRET=secret)
        spec = os.path.join(self.lab, "env-spec.yaml")
        text = open(self.specfile).read().replace(
            "password_file: " + os.path.join(self.lab, "client", "password"), "password_env: GC_TEST_SECRET")
        open(spec, "w").write(text)
        seen = []

        def watch_argv():
            for pid in os.listdir("/proc"):
                if pid.isdigit():
                    try:
                        seen.append(open("/proc/%s/cmdline" % pid, "rb").read())
                    except OSError:
                        pass

        p = subprocess.Popen([self.gc_bin(), "apply", "--yes", "--only", "esxi,switch", "-v", "--state-dir",
                              self.state_dir, spec], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        while p.poll() is None:
            watch_argv()
            time.sleep(0.05)
        out, err = p.communicate()
        self.assertEqual(p.returncode, 0, err)
        self.assertNotIn(secret, out + err)
        self.assertFalse(any(secret.encode() in a for a in seen))
        for root, _, files in os.walk(self.state_dir):
            for f in files:
                self.assertNotIn(secret, open(os.path.join(root, f), errors="replace").read())
        for h in self.hosts + self.switches:
            for _, c in self.log(h):
                self.assertNotIn(secret, c)
        self.assertNotIn(secret, open(os.path.join(self.lab, "sshd.log"), errors="replace").read())

    def slow_apply_bg(self, latency_ms=150):
        for h in self.hosts:
            self.control(h, {"reboot_seconds": self.reboot_seconds, "latency_ms": latency_ms})
        return subprocess.Popen([self.gc_bin(), "apply", "--yes", "--only", "esxi,switch", "--state-dir",
                                 self.state_dir, self.specfile], env=self.env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def test_second_apply_is_refused_naming_the_holder(self):
        first = self.slow_apply_bg()
        lock = os.path.join(self.state_dir, "roce-lab.lock")
        # wait (generously: CI machines are loaded) until the first holds the lock
        deadline = time.time() + 120
        while time.time() < deadline:
            if os.path.exists(lock) and ("pid %d " % first.pid) in open(lock).read():
                break
            time.sleep(0.05)
        self.assertIsNone(first.poll(), "the first apply ended before the second could start")
        r = self.apply(check=1)
        self.assertIn("gpuclusterctl: error: cluster 'roce-lab' is locked by another apply "
                      "(pid %d on " % first.pid, r.stderr)
        out, err = first.communicate(timeout=300)
        self.assertEqual(first.returncode, 0, err)
        for h in self.hosts:
            self.assert_host_converged(h)

    def lease(self, h):
        return self.state(h)["advanced"].get("/UserVars/GpuclusterctlLease")

    def apply_copy(self, copy, state, *args):
        """apply from another copy of the spec, with a state directory of its own."""
        return subprocess.run([self.gc_bin(), "apply", "--yes", "--only", "esxi,switch", "--state-dir",
                               state, *args, copy], env=self.env, capture_output=True, text=True,
                              timeout=300)

    def wait_for_lease(self, p):
        for _ in range(2400):
            if p.poll() is not None or all((self.lease(h) or "none") != "none" for h in self.hosts):
                break
            time.sleep(0.05)
        self.assertIsNone(p.poll(), "the first apply ended before it held the lease")

    def test_a_copy_of_the_spec_elsewhere_is_refused_by_the_lease_on_the_hosts(self):
        other = os.path.join(self.lab, "copy")
        os.makedirs(other, exist_ok=True)
        copy = os.path.join(other, "roce-passthrough.yaml")
        shutil.copy(self.specfile, copy)
        first = self.slow_apply_bg()
        self.wait_for_lease(first)
        self.assertIn(";pid=%d;" % first.pid, self.lease("esx01"))
        r = self.apply_copy(copy, os.path.join(other, "state"))
        self.assertEqual(r.returncode, 1, r.stderr)
        # the first host in target order still leased (the first wave's
        # hosts clear theirs with their last step once every other target
        # left to change holds it)
        self.assertRegex(r.stderr, r"gpuclusterctl: error: cluster 'roce-lab' is locked on esxi 'esx0\d' by "
                         r"\S+@\S+ pid %d since \S+Z \(until \S+Z\): another apply holds it, maybe from "
                         r"another copy of the spec; nothing was changed\. If that apply is dead: "
                         r"gpuclusterctl unlock --force SPEC\n" % first.pid)
        self.assertNotIn("Summary", r.stdout)
        out, err = first.communicate(timeout=300)
        self.assertEqual(first.returncode, 0, err)
        for h in self.hosts:
            self.assert_host_converged(h)            # each change once: no second apply got in
            self.assertEqual(self.changes(h), ROCE_SEQUENCE, h)
            self.assertEqual(self.lease(h), "none", h)  # cleared at the end

    def test_unlock_force_clears_a_dead_holders_lease(self):
        # an apply from another machine died holding the lease (written by hand
        # here, exactly as that apply would have left it)
        now = int(time.time())
        dead = "cluster=roce-lab;holder=ops@elsewhere;pid=4242;lock=0123456789abcdef;since=%d;expires=%d" % (
            now - 60, now + 3600)
        for h in self.hosts:
            self.remote(h, "esxcli system settings advanced add -o GpuclusterctlLease -t string -s '%s' "
                           "-d 'gpuclusterctl cluster lease'" % dead)
        r = self.apply(check=1)
        self.assertRegex(r.stderr, r"cluster 'roce-lab' is locked on esxi 'esx01' by ops@elsewhere pid 4242 "
                         r"since \S+Z \(until \S+Z\)")
        for h in self.hosts:
            self.assertEqual(self.changes(h), [], h)
        r = self.gc("unlock", yes=False, check=64)
        self.assertIn("pass --force once you know that apply is dead", r.stderr)
        r = subprocess.run([self.gc_bin(), "unlock", "--force", "--only", "esxi", "--state-dir",
                            self.state_dir, self.specfile], env=self.env, capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "Cleared the cluster lease on 8 targets.\n")
        self.assertIn("esx01: cleared the cluster lease: %s\n" % dead, r.stderr)
        self.apply()
        for h in self.hosts:
            self.assert_host_converged(h)
            self.assertEqual(self.changes(h), ROCE_SEQUENCE, h)
            self.assertEqual(self.lease(h), "none", h)

    def test_a_lease_left_after_the_last_change_is_cleared_by_the_converged_rerun(self):
        # found by scripts/soak.py: a run killed after its last change but
        # before it cleared its lease left a converged cluster whose re-run
        # took no lease, so cleared none: every other copy of the spec was
        # refused for 6 h.  Here esx02 fails the clear (the `advanced set`
        # inside its compare-and-clear snippet) twice, in its read-back and
        # at the run's end, as if killed then.
        release = "esxcli system settings advanced set -o %s -s none" % LEASE
        self.control("esx02", {"reboot_seconds": self.reboot_seconds,
                               "fail_once": {"match": release, "times": 2}})
        r = self.apply()
        self.assertIn("esx02: warning: host 'esx02': cannot clear the cluster lease: Error: injected failure\n", r.stderr)
        self.assertRegex(self.lease("esx02"), r"^cluster=roce-lab;holder=\S+;pid=\d+;lock=[0-9a-f]{16};")
        self.assertEqual(self.lease("esx01"), "none")
        before = {h: len(self.log(h)) for h in self.hosts}
        r = self.apply()
        self.assertIn("No changes on the selected targets", r.stdout)
        self.assertIn("esx02: warning: cleared the cluster lease an earlier apply of ours left\n", r.stderr)
        for h in self.hosts:
            self.assertEqual(self.lease(h), "none", h)
            sent = [c for _, c in self.log(h)[before[h]:] if LEASE in c and OBSERVE_MARK not in c]
            # only esx02 is cleared, in one compare-and-clear (its observation
            # read the lease): the journal knows where a lease was left
            self.assertEqual(len(sent), 1 if h == "esx02" else 0, (h, sent))
            if sent:
                self.assertRegex(sent[0], r"^sh -c 'r=\$\(esxcli --formatter=xml system settings advanced list -o "
                                 + re.escape(LEASE) + r" 2>&1\).*@@lease:cleared.*' lease [0-9a-f]{16}$")
        before = len(self.log("esx02"))
        r = self.apply()  # and the journal forgot it: only the observation the third time
        self.assertNotIn("cleared the cluster lease", r.stderr)
        self.assertEqual([c for _, c in self.log("esx02")[before:]
                          if LEASE in c and OBSERVE_MARK not in c], [])

    def test_a_lease_on_one_host_refuses_and_releases_what_the_observation_took(self):
        # a first apply takes the lease in its observation; esx05 holds
        # another apply's: refused before any change, naming it, and the
        # leases it took on the other hosts cleared again (one
        # compare-and-clear each); esx05's left as it was
        now = int(time.time())
        theirs = "cluster=roce-lab;holder=ops@elsewhere;pid=4242;lock=0123456789abcdef;since=%d;expires=%d" % (
            now - 60, now + 3600)
        self.remote("esx05", "esxcli system settings advanced add -o GpuclusterctlLease -t string -s none "
                             "-d 'gpuclusterctl cluster lease' && esxcli system settings advanced set -o %s "
                             "-s '%s'" % (LEASE, theirs))
        before = {h: len(self.execs(h)) for h in self.hosts}
        r = self.apply("-v", check=1)
        self.assertIn("gpuclusterctl: cluster lease taken on 7 targets (7 in their observation), "
                      "cleared on 7 (0 with their last step)\n", r.stderr)
        self.assertRegex(r.stderr, r"gpuclusterctl: error: cluster 'roce-lab' is locked on esxi 'esx05' by "
                         r"ops@elsewhere pid 4242 since \S+Z \(until \S+Z\): another apply holds it, maybe "
                         r"from another copy of the spec; nothing was changed\.")
        for h in self.hosts:
            self.assertEqual(self.changes(h), [], h)
            self.assertEqual(self.lease(h), theirs if h == "esx05" else "none", h)
            kinds = [exec_kind(c) for _, c in self.execs(h)[before[h]:]]
            self.assertEqual(kinds, ["observe"] if h == "esx05" else ["observe", "lease clear"], h)
        # the journal forgot them: the next apply, once esx05 is free, takes
        # every lease in its observation again and converges
        self.remote("esx05", "esxcli system settings advanced set -o %s -s none" % LEASE)
        self.apply()
        for h in self.hosts:
            self.assert_host_converged(h)
            self.assertEqual(self.lease(h), "none", h)

    def test_a_stale_observation_reads_the_lease_again_but_never_one_it_took(self):
        # The lease check trusts an observation's own read of the lease for
        # 30 s (LEASE_SEEN_MS; 300 ms here), and never reads again a lease
        # the observation took, however old (2529792).  esx08 answers each
        # exec in 1.5 s, so the lease check comes 1.5 s after the other
        # hosts' observations
        env = dict(self.env, GC_TEST_LEASE_SEEN_MS="300")
        self.control("esx08", {"reboot_seconds": self.reboot_seconds, "rtt_ms": 1500})
        before = {h: len(self.execs(h)) for h in self.hosts}
        r = self.apply("-v", env=env)
        self.assertIn("gpuclusterctl: cluster lease taken on 8 targets (8 in their observation)", r.stderr)
        for h in self.hosts:
            kinds = [exec_kind(c) for _, c in self.execs(h)[before[h]:]]
            self.assertEqual(kinds[0], "observe", h)
            self.assertNotIn("lease read", kinds, h)
            self.assert_host_converged(h)
        # a converged re-apply changes nothing and takes no lease: the
        # observation's read of it is all
        before = {h: len(self.execs(h)) for h in self.hosts}
        r = self.apply("-v", env=env)
        self.assertIn("No changes on the selected targets", r.stdout)
        for h in self.hosts:
            self.assertEqual([exec_kind(c) for _, c in self.execs(h)[before[h]:]], ["observe"], h)
        # NTP changed by hand everywhere: the journal's last run converged,
        # so the observation only reads the lease; the lease check reads it
        # again where that read is over 300 ms old by then (all but esx08),
        # and each host's lease then heads the exec of its change (its
        # compare-and-set, src/exec/lease.c), which is followed by the clear
        for h in self.hosts:
            self.remote(h, "esxcli system ntp set -s ntp9.lab.example")
        before = {h: len(self.execs(h)) for h in self.hosts}
        r = self.apply("-v", env=env)
        self.assertIn("gpuclusterctl: cluster lease taken on 8 targets (0 in their observation, "
                      "8 in their first step), cleared on 8 (0 with their last step)\n", r.stderr)
        for h in self.hosts:
            execs = [c for _, c in self.execs(h)[before[h]:]]
            kinds = [exec_kind(c) for c in execs]
            self.assertEqual(kinds, ["observe"] + ([] if h == "esx08" else ["lease read"]) +
                             ["batch of 2", "lease clear"], h)
            self.assertRegex(execs[-2], r"^echo @@gc:(\w+):c0 && sh -c '.*@@lease:\$1:held:.*' lease \w+ "
                             r"[0-9a-f]{16} 'cluster=roce-lab;[^']*' && echo @@gc:\1:c1 && " +
                             re.escape(ROCE_SEQUENCE[0]) + r" && echo @@gc:\1:end$", h)
            self.assertEqual(self.lease(h), "none", h)
            self.assertEqual(self.state(h)["ntp"]["servers"], ["ntp1.lab.example"], h)

    def test_hosts_keep_the_lease_to_the_end_while_the_switch_has_work(self):
        # every command on the switch takes 0.8 s, so the first wave's hosts
        # are done long before it: no host may clear its lease with its last
        # step while a target without one still changes (a second apply
        # would get in).  Those are cleared after the switch's last command
        # (its session's `exit` comes when the run disconnects), in one exec
        # each; the later waves start once the switch is done, and their
        # hosts clear the lease with their last step
        self.control("sn2700", {"latency_ms": 800})
        r = self.apply("-v")
        self.assertIn("Apply complete", r.stdout)
        self.assertIn("gpuclusterctl: cluster lease taken on 8 targets (8 in their observation), "
                      "cleared on 8 (6 with their last step)\n", r.stderr)
        switch_done = max(parse_ts(t) for t, c in self.log("sn2700") if c != "exit")
        kept = []
        for h in self.hosts:
            execs = self.execs(h)
            readback = [(parse_ts(t), c) for t, c in execs if "maintenanceMode set -e false" in c][-1]
            if readback[0] < switch_done:
                kept.append(h)
                self.assertEqual(exec_kind(execs[-1][1]), "lease clear", h)
                self.assertGreaterEqual(parse_ts(execs[-1][0]), switch_done, h)
                self.assertEqual(execs[-2][1], readback[1], h)
                self.assertNotIn("@@lease:cleared", readback[1], h)  # the exit alone
                self.assertIn("maintenanceMode set -e false || echo", readback[1], h)
            else:
                self.assertEqual(execs[-1][1], readback[1], h)
                self.assertIn("@@lease:cleared", readback[1], h)
            self.assertEqual(self.lease(h), "none", h)
            self.assert_host_converged(h)
        self.assertEqual(kept, ["esx01", "esx02"])  # the first wave

    def faults_gone_then_converges(self):
        """Every host's faults cleared, the next apply completes and every
        host reads back converged."""
        for h in self.hosts:
            self.control(h, {})
        r = self.apply()
        self.assertIn("Apply complete", r.stdout)
        for h in self.hosts:
            self.assert_host_converged(h)

    def start_apply(self, outname, spec=None, **popen):
        """An apply whose stdout goes to a file and stderr to a pipe, returned
        once it has shown its plan (still running: the test makes sure)."""
        outpath = os.path.join(self.lab, outname)
        outf = open(outpath, "w")
        p = subprocess.Popen([self.gc_bin(), "apply", "--yes", "--only", "esxi,switch", "--state-dir",
                              self.state_dir, spec or self.specfile], env=self.env,
                             stdout=outf, stderr=subprocess.PIPE, text=True, **popen)
        outf.close()
        for _ in range(600):
            if "Plan: " in text_of(outpath):
                break
            time.sleep(0.05)
        return p, outpath

    def stop_with(self, sig, line):
        """apply stopped by sig in the middle of its run, esx01 in its
        window: exit 130, the line that says so, and every step that started
        journalled as ended (done or failed)."""
        for h in self.hosts:
            self.control(h, {"reboot_seconds": self.reboot_seconds, "latency_ms": 100})
        p, outpath = self.start_apply("stopped.out")
        # a host in its window: the line says they are taken out of it
        for _ in range(600):
            if self.state("esx01")["maintenance"]:
                break
            time.sleep(0.05)
        self.assertIsNone(p.poll())
        p.send_signal(sig)
        _, err = p.communicate(timeout=300)
        out = text_of(outpath)
        self.assertEqual(p.returncode, 130, err)
        self.assertIn("gpuclusterctl: %s\n" % line, err)
        self.assertIn("\nApply interrupted: ", out)
        started, ended = set(), set()
        for l in text_of(os.path.join(self.state_dir, "roce-lab.journal")).splitlines():
            rec = json.loads(l)
            if rec["kind"] in ("maintenance", "reboot_owed"):
                continue
            (started if rec["state"] == "start" else ended).add((rec["target"], rec["action"]))
        self.assertNotEqual(started, set())
        self.assertEqual(started - ended, set())
        # no host left out of service, but one whose reboot went out and
        # was not waited for (the signal came between the two), by name
        for h in self.hosts:
            if self.state(h)["maintenance"]:
                self.assertIn("\n!!! host '%s' is LEFT IN MAINTENANCE MODE: interrupted while it "
                              "rebooted; re-run apply to finish (the journal remembers)\n" % h, out)
            else:
                self.assertNotIn("host '%s' is LEFT IN MAINTENANCE" % h, out)

    def test_ctrl_c_finishes_in_flight_steps_then_rerun_converges(self):
        self.stop_with(signal.SIGINT, "interrupted: finishing the steps in flight, then taking "
                                      "hosts out of maintenance mode (Ctrl-C again stops at once)")
        for h in self.hosts:
            self.control(h, {"reboot_seconds": self.reboot_seconds})
        self.apply()
        for h in self.hosts:
            # a reboot in flight at the interrupt may be owed once more
            self.assert_host_converged(h, boots=self.state(h)["boot_count"])
            self.assertIn(self.state(h)["boot_count"], (1, 2), h)

    def test_sigterm_finishes_in_flight_steps_as_ctrl_c_does(self):
        # a service manager or a cancelled CI job stops apply with SIGTERM
        self.stop_with(signal.SIGTERM, "terminated (SIGTERM): finishing the steps in flight, then "
                                       "taking hosts out of maintenance mode (a second signal or "
                                       "Ctrl-C stops at once)")

    def test_sighup_finishes_in_flight_steps_as_ctrl_c_does(self):
        # the operator's SSH session to the machine running apply is gone
        self.stop_with(signal.SIGHUP, "hung up (SIGHUP): finishing the steps in flight, then "
                                      "taking hosts out of maintenance mode (a second signal or "
                                      "Ctrl-C stops at once)")

    def test_a_signal_mid_window_takes_the_hosts_out_of_maintenance(self):
        # wave 1's hosts are in maintenance mode, their change exec held open
        # (the passthrough command takes 4 s), when SIGTERM comes: the exec
        # finishes, no reboot goes out, and both leave maintenance mode at
        # once; their changes wait for the reboot the next apply sends
        for h in self.hosts:
            self.control(h, {"slow": {"match": "esxcli hardware pci pcipassthru set", "ms": 4000}})
        p, outpath = self.start_apply("mid-window.out")
        for _ in range(600):
            if all(self.state(h)["maintenance"] for h in ("esx01", "esx02")):
                break
            time.sleep(0.05)
        self.assertIsNone(p.poll())
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=120)
        out = text_of(outpath)
        self.assertEqual(p.returncode, 130, err)
        self.assertIn("gpuclusterctl: terminated (SIGTERM): finishing the steps in flight, then "
                      "taking hosts out of maintenance mode (a second signal or Ctrl-C stops at "
                      "once)\n", err)
        self.assertNotIn("LEFT IN MAINTENANCE", out)
        for h in ("esx01", "esx02"):
            self.assertIn("\n  %-12s          left maintenance mode after the interruption\n"
                          "  %-12s          a change still waits for a reboot: re-run apply\n"
                          % (h, h), out)
            self.assertEqual(self.changes(h), ROCE_SEQUENCE[:4] + [ROCE_SEQUENCE[-1]], h)
            # the host's own words, through another SSH client
            self.assertEqual(self.remote(h, "esxcli system maintenanceMode get"), "Disabled\n")
            st = self.state(h)
            gpu = [d for d in st["pci"] if d["addr"] == "0000:3b:00.0"][0]
            self.assertEqual((gpu["passthru"], gpu["passthru_active"], st["boot_count"]),
                             (True, False, 0), h)
            self.assertEqual(self.lease(h), "none", h)
        for h in self.hosts[2:]:  # later waves: not started
            self.assertNotIn("esxcli system maintenanceMode set -e true", self.changes(h), h)
        # the next apply gives each its window again, and the one reboot
        self.faults_gone_then_converges()

    def test_the_exit_a_signal_asked_for_is_retried_when_its_connection_drops(self):
        # as above, but esx01's connection drops on its way out of maintenance
        # mode: the exit the signal asked for is retried on a new connection
        # (the steps the signal stopped are not), and the host leaves; so is
        # the clearing of a host's lease
        for h in self.hosts:
            self.control(h, {"slow": {"match": "esxcli hardware pci pcipassthru set", "ms": 4000}})
        self.control("esx01", {"slow": {"match": "esxcli hardware pci pcipassthru set", "ms": 4000},
                               "drop_once": {"match": "esxcli system maintenanceMode set -e false"}})
        # a dropped session may leave its TCP connection open and silent (as in
        # test_dropped_connection_is_retried_and_converges): a quick timeout
        spec = os.path.join(self.lab, "short-timeout.yaml")
        with open(self.specfile) as f:
            text = f.read()
        with open(spec, "w") as f:
            f.write(text.replace("command_timeout_s: 300", "command_timeout_s: 15"))
        p, outpath = self.start_apply("mid-window-drop.out", spec=spec)
        for _ in range(600):
            if all(self.state(h)["maintenance"] for h in ("esx01", "esx02")):
                break
            time.sleep(0.05)
        self.assertIsNone(p.poll())
        # and esx02's drops as the run clears its lease, at the end (the
        # observation read the lease before)
        self.control("esx02", {"slow": {"match": "esxcli hardware pci pcipassthru set", "ms": 4000},
                               "drop_once": {"match": "esxcli --formatter=xml system settings "
                                                      "advanced list -o /UserVars/"}})
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=120)
        out = text_of(outpath)
        self.assertEqual(p.returncode, 130, err)
        self.assertIn("esx01: retrying after: ", err)
        self.assertIn("esx02: retrying after: ", err)
        self.assertNotIn("warning", err)
        self.assertNotIn("LEFT IN MAINTENANCE", out)
        for h in ("esx01", "esx02"):
            self.assertIn("\n  %-12s          left maintenance mode after the interruption\n" % h, out)
            # the host logs the dropped exit as received, then its retry
            exits = [ROCE_SEQUENCE[-1]] * (2 if h == "esx01" else 1)
            self.assertEqual(self.changes(h), ROCE_SEQUENCE[:4] + exits, h)
            self.assertEqual(self.remote(h, "esxcli system maintenanceMode get"), "Disabled\n")
            self.assertEqual(self.lease(h), "none", h)
            with open(os.path.join(self.host_dir(h), "control.json"), encoding="utf-8") as f:
                self.assertNotIn("drop_once", json.load(f))  # the drop happened
        self.faults_gone_then_converges()

    def test_under_nohup_sighup_changes_nothing_and_the_apply_completes(self):
        # `nohup gpuclusterctl apply ...`: SIGHUP ignored by whoever started
        # it stays ignored; the session's end does not stop the rollout
        def nohup():
            signal.signal(signal.SIGHUP, signal.SIG_IGN)
        p, outpath = self.start_apply("nohup.out", preexec_fn=nohup)
        self.assertIsNone(p.poll())  # still applying: the signal comes mid-run
        p.send_signal(signal.SIGHUP)
        _, err = p.communicate(timeout=300)
        self.assertEqual(p.returncode, 0, err)
        self.assertNotIn("hung up", err)
        self.assertIn("Apply complete: 70 actions done, 0 failed, 0 skipped.", text_of(outpath))
        for h in self.hosts:
            self.assert_host_converged(h)

    def test_second_ctrl_c_prints_hosts_in_maintenance_then_the_summary(self):
        # wave 1's hosts are down in their reboot (30 s) when Ctrl-C comes twice
        for h in self.hosts:
            self.control(h, {"reboot_seconds": 30})
        outpath = os.path.join(self.lab, "ctrl-c-twice.out")
        errpath = os.path.join(self.lab, "ctrl-c-twice.err")
        with open(outpath, "w") as outf, open(errpath, "w") as errf:
            p = subprocess.Popen([self.gc_bin(), "apply", "--yes", "--only", "esxi,switch", "--state-dir",
                                  self.state_dir, self.specfile], env=self.env, stdout=outf, stderr=errf)
            # both hosts past their reboot command: their WAIT_HOST has begun (the
            # progress line), not merely the reboot logged by the simulator
            for _ in range(1200):
                with open(errpath) as f:
                    e = f.read()
                if all("%s: wait for %s ..." % (h, h) in e for h in ("esx01", "esx02")):
                    break
                time.sleep(0.05)
            p.send_signal(signal.SIGINT)
            for _ in range(600):
                with open(errpath) as f:
                    if "interrupted: finishing the steps in flight" in f.read():
                        break
                time.sleep(0.05)
            p.send_signal(signal.SIGINT)
            self.assertEqual(p.wait(timeout=60), 130)
        with open(outpath) as f:
            out = f.read()
        with open(errpath) as f:
            err = f.read()
        summary = out[out.index("Plan: "):]
        self.assertIn("\n!!! host 'esx01' is LEFT IN MAINTENANCE MODE: interrupted twice during "
                      "'wait for esx01'; re-run apply to finish (the journal remembers)\n"
                      "!!! host 'esx02' is LEFT IN MAINTENANCE MODE: interrupted twice during "
                      "'wait for esx02'; re-run apply to finish (the journal remembers)\n"
                      "\nSummary (interrupted twice: the steps in flight were abandoned):\n"
                      "  esx01        esxi     5 done, 0 failed, 0 skipped, 2 not reached; "
                      "abandoned: wait for esx01\n"
                      "  esx02        esxi     5 done, 0 failed, 0 skipped, 2 not reached; "
                      "abandoned: wait for esx02\n"
                      "  esx03        esxi     1 done, 0 failed, 0 skipped, 7 not reached\n", summary)
        self.assertLess(summary.index("LEFT IN MAINTENANCE"), summary.index("Summary"))
        # the total is what the targets did: the hosts' 16 above, and how far
        # the switch got before the second Ctrl-C, which depends on the
        # machine's load (with a host's changes in one exec, the hosts reach
        # their reboot sooner: the switch may have done anything from none
        # of its six steps to all of them).  Steps it had not started at the
        # first Ctrl-C are skipped; a step in flight at the second is
        # abandoned, and those after it are never reached (as the hosts'
        # verify and exit after their abandoned wait)
        lines = re.findall(r"^  \S+ +\S+ +(\d+) done, 0 failed, (\d+) skipped(?:, (\d+) not "
                           r"reached)?(; abandoned: .+)?$", summary, re.M)
        done = sum(int(l[0]) for l in lines)
        skipped = sum(int(l[1]) for l in lines)
        unreached = sum(int(l[2] or 0) for l in lines)
        abandoned = sum(1 for l in lines if l[3])
        sw = re.search(r"^  sn2700 +switch +(\d+) done, 0 failed, (\d+) skipped(?:, (\d+) not "
                       r"reached)?(; abandoned: .+)?$", summary, re.M)
        self.assertIsNotNone(sw, summary)
        sdone, sskipped, sleft = int(sw.group(1)), int(sw.group(2)), int(sw.group(3) or 0)
        self.assertEqual(done - sdone, 16, summary)
        self.assertEqual(sdone + sskipped + sleft + (1 if sw.group(4) else 0), 6, summary)
        # every step of the plan is accounted for: done, skipped, abandoned or not reached
        planned = sum(int(n) for n in re.search(r"Plan: (\d+) to add, (\d+) to change, (\d+) to "
                                                r"destroy, (\d+) synthesized", out).groups())
        self.assertEqual(done + skipped + unreached + abandoned, planned, summary)
        self.assertTrue(out.endswith("\nApply interrupted: %d actions done, 0 failed, %d skipped, "
                                     "%d not reached.\n" % (done, skipped, unreached)), out[-300:])
        self.assertTrue(err.endswith("gpuclusterctl: error: interrupted twice: stopped with steps in flight\n"), err)
        for h in ("esx01", "esx02"):
            self.assertTrue(self.state(h)["maintenance"], h)
        for h in self.hosts[2:]:
            self.assertEqual(self.changes(h), ROCE_SEQUENCE[:1], h)

    def test_kills_during_reboots_cost_no_extra_reboot(self):
        # SIGKILL right after a host's reboot went out, three times; each
        # re-run comes after the host is back.  Its boot time, later than the
        # journalled reboot, proves the reboot happened: none is sent twice.
        for h in self.hosts:
            self.control(h, {"reboot_seconds": 1.0})
        reboot = "esxcli system shutdown reboot -r gpuclusterctl"

        def reboots():
            return sum(self.changes(h).count(reboot) for h in self.hosts)

        for kill in range(3):
            before = reboots()
            p = subprocess.Popen([self.gc_bin(), "apply", "--yes", "--only", "esxi,switch", "--state-dir",
                                  self.state_dir, self.specfile], env=self.env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(2400):
                if reboots() > before or p.poll() is not None:
                    break
                time.sleep(0.025)
            self.assertIsNone(p.poll(), "kill %d: the apply ended before a reboot" % kill)
            p.send_signal(signal.SIGKILL)
            p.wait()
            for _ in range(400):   # the operator re-runs once the hosts answer again
                if all(self.state(h)["down_until"] < time.time() for h in self.hosts):
                    break
                time.sleep(0.05)
        r = self.apply("-v")
        self.assertIn("booted ", r.stderr)
        self.assertIn(" s after the reboot an earlier apply sent: not rebooting again", r.stderr)
        for h in self.hosts:
            self.assert_host_converged(h, boots=1)
            self.assertEqual(self.changes(h).count(reboot), 1, h)

    def test_a_rerun_while_a_killed_runs_reboot_is_under_way_waits_for_the_host(self):
        # found by scripts/soak.py --guests: the re-run comes at once, while
        # the host the killed run rebooted is still down.  Observing it with
        # the transport's few retries (~2 s here) failed it; it is waited for
        # like a reboot (bounded by --reboot-timeout), and the boot after the
        # journalled reboot pays it: none is sent twice.
        for h in self.hosts:
            self.control(h, {"reboot_seconds": 6.0})
        reboot = "esxcli system shutdown reboot -r gpuclusterctl"
        p = subprocess.Popen([self.gc_bin(), "apply", "--yes", "--only", "esxi,switch", "--state-dir",
                              self.state_dir, self.specfile], env=self.env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        first = None
        for _ in range(2400):   # a host rebooted (its state saved: down for 6 s)
            first = next((h for h in self.hosts if self.state(h)["down_until"] > time.time()),
                         None)
            if first is not None or p.poll() is not None:
                break
            time.sleep(0.025)
        self.assertIsNone(p.poll(), "the apply ended before a reboot")
        p.send_signal(signal.SIGKILL)
        p.wait()
        self.assertGreater(self.state(first)["down_until"], time.time() + 2, first)
        r = self.apply("-v")
        self.assertIn("%s: warning: an earlier apply rebooted it and never saw it back: waiting "
                      "up to 1200 s for it (" % first, r.stderr)
        self.assertIn("%s: answers again, from a boot after the reboot an earlier apply sent"
                      % first, r.stderr)
        for h in self.hosts:
            self.assert_host_converged(h, boots=1)
            self.assertEqual(self.changes(h).count(reboot), 1, h)
        # seen through: the next run neither waits nor asks its boot again
        r = self.apply("-v")
        self.assertNotIn("earlier apply", r.stderr)

    def gc_bin(self):
        from labtest import BIN
        return BIN


BUNDLE = "/vmfs/volumes/datastore1/NVD-AIE-800_525.105.14-1OEM.800.1.0.20613240_21506612.zip"
SOURCES = "esxcli --formatter=xml software sources vib list -d '%s'" % BUNDLE


class ApplyVgpuBundle(LabCase):
    """Issue 14, item 2: a vGPU manager given as a bundle without `vib_name`.
    `software vib list` shows the VIB's own name, not the file's: the batch
    lists what the bundle holds on the host and compares those names, so
    the hosts converge and a re-apply sends nothing."""
    port = 2313

    @classmethod
    def setUpClass(cls):
        with open(os.path.join(ROOT, "examples", "vgpu-pvrdma.yaml"), encoding="utf-8") as f:
            text = f.read()
        assert "  vib_name: NVD-AIE_ESXi_8.0.0_Driver\n" in text
        cls.tmp = tempfile.mkdtemp(prefix="gc-it-bundle-")
        cls.spec = os.path.join(cls.tmp, "vgpu-bundle.yaml")
        with open(cls.spec, "w", encoding="utf-8") as f:
            f.write(text.replace("  vib_name: NVD-AIE_ESXi_8.0.0_Driver\n", ""))
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def gpu_hosts(self):
        return [h for h in self.hosts if any(d.get("gpu") for d in self.state(h)["pci"])]

    def test_bundle_not_on_the_host_plan_says_the_name_is_learned(self):
        h = self.gpu_hosts()[0]
        self.control(h, {"reboot_seconds": self.reboot_seconds, "missing_files": [BUNDLE]})
        r = self.gc("plan", "--only", "esxi", "--target", h, check=2)
        self.assertIn("    + %s/esxi.vib/%s  [maintenance, reboot]\n"
                      "        name: (none) → (learned from the bundle on the host)\n"
                      "        version: (none) → (learned from the bundle on the host)\n"
                      "        source: (none) → %s\n" % (h, os.path.basename(BUNDLE), BUNDLE), r.stdout)
        batch = [c for _, c in self.log(h) if observation(c)][-1]
        self.assertIn("; echo @@gc:", batch)
        self.assertIn("; " + SOURCES + " || echo @@gc:", batch)

    def test_converges_then_reapply_changes_nothing(self):
        r = self.gc("plan", "--only", "esxi", check=2)
        for h in self.gpu_hosts():
            self.assertIn("    + %s/esxi.vib/%s  [maintenance, reboot]\n"
                          "        name: (none) → NVD-AIE_ESXi_8.0.0_Driver\n"
                          "        version: (none) → 525.105.14-1OEM.800.1.0.20613240\n"
                          % (h, os.path.basename(BUNDLE)), r.stdout)
        r = self.gc("apply", "--only", "esxi", "-v", check=0)
        for h in self.gpu_hosts():
            self.assertEqual(self.changes(h), VGPU_SEQUENCE, h)
            st = self.state(h)
            self.assertEqual([(v["name"], v["version"]) for v in st["vibs"] if v["vendor"] == "NVIDIA"],
                             [("NVD-AIE_ESXi_8.0.0_Driver", "525.105.14-1OEM.800.1.0.20613240")], h)
            self.assertFalse(st["maintenance"], h)
            # every batch of this host listed the bundle, the verify's included
            batches = [c for _, c in self.log(h) if OBSERVE_MARK in c]
            self.assertGreaterEqual(len(batches), 3, h)
            self.assertTrue(all(("; " + SOURCES + " || echo @@gc:") in c for c in batches), h)
        before = {h: len(self.log(h)) for h in self.hosts}
        r2 = self.gc("apply", "--only", "esxi", "-v", check=0)
        self.assertIn("No changes on the selected targets", r2.stdout)
        self.assertIn("gpuclusterctl: 0 changing commands;", r2.stderr)
        for h in self.hosts:
            new = [c for _, c in self.log(h)[before[h]:]]
            self.assertEqual([c for c in new if not observation(c)], [], h)
        self.gc("plan", "--only", "esxi", check=0)


MFT_SPEC = """apiVersion: gpuclusterctl/v1
kind: Cluster
metadata:
  name: mft-lab
credentials:
  - {name: esxi-root, username: root, password_env: GC_ESXI_PASSWORD}
hosts:
  - name: esx01
    address: 127.0.0.11
    credentials: esxi-root
    version: "8.0.2"
    nics:
      - {pci: "0000:5e:00.0", model: ConnectX-5, device: vmnic4, mode: sriov, vfs: 4}
  - name: esx02
    address: 127.0.0.12
    credentials: esxi-root
    version: "8.0.2"
    nics:
      - {pci: "0000:5e:00.0", model: ConnectX-5, device: vmnic4, mode: sriov, vfs: 4}
"""
FIRMWARE_OFF = {"0000:5e:00.0": {"SRIOV_EN": 0, "NUM_OF_VFS": 0}}


class ApplyMftFirmware(LabCase):
    """Issue 14, item 14: an SR-IOV PF's firmware.  With Mellanox MFT on the
    host (the lab's stand-in) the batch reads SRIOV_EN/NUM_OF_VFS and apply
    sets them with mlxconfig inside the host's one maintenance window and
    reboot; without MFT the VFs are checked after the reboot.  Two hosts, no
    vCenter, no switch."""
    port = 2358

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="gc-it-mft-")
        cls.spec = os.path.join(cls.tmp, "mft.yaml")
        with open(cls.spec, "w", encoding="utf-8") as f:
            f.write(MFT_SPEC)
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_firmware_and_module_params_with_one_reboot(self):
        self.control("esx01", {"reboot_seconds": self.reboot_seconds, "mft": True,
                               "sriov_firmware": FIRMWARE_OFF})
        r = self.gc("plan", "--only", "esxi", "--target", "esx01", check=2)
        # (--target scopes the graph: the "why" keeps each resource's detail)
        self.assertIn("        why: SR-IOV virtual functions (nmlx5_core max_vfs), SR-IOV in the "
                      "adapter firmware of 0000:5e:00.0 need maintenance mode\n"
                      "    ~ esx01/esxi.nic_firmware/0000:5e:00.0  [maintenance, reboot]\n"
                      "        sriov_en: false → true\n"
                      "        num_of_vfs: 0 → 4\n"
                      "    ~ esx01/esxi.module_param/nmlx5_core  [maintenance, reboot]\n", r.stdout)
        self.assertIn("(1 hosts need maintenance, 1 reboots).", r.stdout)
        self.gc("apply", "--only", "esxi", "--target", "esx01", check=0)
        self.assertEqual(self.changes("esx01"), [
            "esxcli system maintenanceMode set -e true",
            "/opt/mellanox/bin/mlxconfig -y -d mt4119_pciconf0 set SRIOV_EN=1 NUM_OF_VFS=4",
            "esxcli system module parameters set -m nmlx5_core -p 'max_vfs=4'",
            "esxcli system shutdown reboot -r gpuclusterctl",
            "esxcli system maintenanceMode set -e false"])
        st = self.state("esx01")
        self.assertEqual(st["boot_count"], 1)
        self.assertEqual(st["mft_fw"]["0000:5e:00.0"]["active"], {"SRIOV_EN": 1, "NUM_OF_VFS": 4})
        # the VFs are there (the verify read the same list after the reboot)
        cmds = [c for _, c in self.log("esx01")]
        reboot = cmds.index("esxcli system shutdown reboot -r gpuclusterctl")
        self.assertTrue(any("; esxcli --formatter=xml network sriovnic list || " in c
                            for c in cmds[reboot:]), cmds[reboot:])
        rows = self.remote("esx01", "esxcli network sriovnic list").splitlines()[2:]
        self.assertEqual([row.split()[:2] for row in rows], [["vmnic4", "0000:5e:00.0"]])
        # converged: a re-apply changes nothing
        before = self.changes("esx01")
        r = self.gc("apply", "-v", "--only", "esxi", "--target", "esx01", check=0)
        self.assertIn("No changes on the selected targets", r.stdout)
        self.assertIn("gpuclusterctl: 0 changing commands;", r.stderr)
        self.assertEqual(self.changes("esx01"), before)
        # more VFs in the firmware than the spec's count is no change
        self.remote("esx01", "/opt/mellanox/bin/mlxconfig -y -d mt4119_pciconf0 set NUM_OF_VFS=16")
        self.gc("plan", "--only", "esxi", "--target", "esx01", check=0)

    def test_without_mft_the_vfs_are_checked_after_the_reboot(self):
        self.control("esx02", {"reboot_seconds": self.reboot_seconds,
                               "sriov_firmware": FIRMWARE_OFF})
        r = self.gc("plan", "-v", "--only", "esxi", "--target", "esx02", check=2)
        self.assertIn("esx02: MFT not installed on esx02: the VFs are checked after the reboot\n",
                      r.stderr)
        self.assertNotIn("nic_firmware", r.stdout)
        r = self.gc("apply", "--only", "esxi", "--target", "esx02", check=1)
        self.assertIn("host 'esx02': NIC 0000:5e:00.0 (vmnic4) has no SR-IOV VFs after the reboot "
                      "(not in `esxcli network sriovnic list`): its firmware needs SRIOV_EN=1 and "
                      "NUM_OF_VFS>=4; set them with Mellanox MFT on the host "
                      "(/opt/mellanox/bin/mlxconfig -d DEVICE set SRIOV_EN=1 NUM_OF_VFS=4) and "
                      "apply again", r.stdout)
        self.assertFalse(any("mlxconfig" in c for c in self.changes("esx02")))
        self.assertEqual(self.state("esx02")["boot_count"], 1)


if __name__ == "__main__":
    unittest.main()
