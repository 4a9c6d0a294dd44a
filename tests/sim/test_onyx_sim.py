"""Tests of the simulated Onyx switch (tests/sim/onyx_sim.py), run standalone
with --state in a temporary directory, one session per subprocess."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SIM = os.path.join(HERE, "onyx_sim.py")

RECIPE = [
    "traffic pool roce type lossless",
    "traffic pool roce memory percent 50.00",
    "traffic pool roce map switch-priority 3",
    "interface ethernet 1/1-1/32 qos trust L3",
    "interface ethernet 1/1-1/32 traffic-class 3 congestion-control ecn "
    "minimum-absolute 150 maximum-absolute 1500",
    "interface ethernet 1/1-1/32 traffic-class 6 dcb ets strict",
    "dcb priority-flow-control enable force",
    "dcb priority-flow-control priority 3 enable",
    "interface ethernet 1/1-1/32 dcb priority-flow-control mode on force",
    "lldp",
]

P = "sn2700 [standalone: master]"


class Sim(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.state = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def facts(self, **kw):
        with open(os.path.join(self.state, "switch.json"), "w") as f:
            json.dump(kw, f)

    def control(self, **kw):
        with open(os.path.join(self.state, "control.json"), "w") as f:
            json.dump(kw, f)

    def session(self, lines, env=None):
        proc = subprocess.run([sys.executable, SIM, "--state", self.state, "--hostname", "sn2700"],
                              input="".join(l + "\n" for l in lines), capture_output=True,
                              text=True, timeout=30, env=dict(os.environ, **(env or {})))
        self.assertEqual(proc.stderr, "")
        return proc.stdout

    def config(self, lines, write=True):
        return self.session(["enable", "no cli session paging enable", "configure terminal"]
                            + lines + (["configuration write"] if write else []) + ["exit", "exit"])

    def running(self):
        out = self.session(["enable", "show running-config", "exit"])
        start = out.index("##")
        return out[start:out.rindex("\n%s # " % P)]

    def test_prompts_and_modes(self):
        out = self.session(["enable", "configure terminal", "interface ethernet 1/1",
                            "exit", "traffic pool roce", "exit", "exit", "exit"])
        self.assertTrue(out.startswith("\nMellanox Switch\n\n%s > " % P))
        for prompt in ("%s # " % P, "%s (config) # " % P,
                       "%s (config interface ethernet 1/1) # " % P,
                       "%s (config pool roce) # " % P):
            self.assertIn(prompt, out)

    def test_mlag_prompt(self):
        self.facts(mlag_domain="dom1", banner=False)
        out = self.session(["exit"])
        self.assertEqual(out, "sn2700 [dom1: master] > ")

    def test_errors(self):
        out = self.session(["enable", "configure terminal", "xyz",
                            "interface ethernet 1/1 qos trust",
                            "interface ethernet 1/1 traffic-class 9 dcb ets strict",
                            "interface ethernet 1/1 qos trust L4",
                            "interface ethernet 1/33 qos trust L3", "exit", "exit"])
        self.assertIn('(config) # % Unrecognized command "xyz".\nType "?" for help.\n', out)
        self.assertIn("(config) # % Incomplete command\n", out)
        self.assertIn('% Unrecognized command "9".', out)
        self.assertIn('% Unrecognized command "L4".', out)
        self.assertIn("% Interface 1/33 does not exist", out)

    def test_configure_only_in_enable_mode(self):
        out = self.session(["configure terminal", "exit"])
        self.assertIn('> % Unrecognized command "configure".', out)

    def test_recipe_running_config_layout(self):
        self.config(RECIPE + ["interface ethernet 1/7 qos trust L2"])
        text = self.running()
        lines = text.split("\n")
        self.assertEqual(lines[0:2], ["##", '## Running database "initial"'])
        self.assertEqual(lines[4], "## Product release: 3.9.0300")
        self.assertIn("##\n## Running-config temporary prefix mode setting\n##\n"
                      "no cli default prefix-modes enable\n", text)
        self.assertIn("##\n## Interface Ethernet buffer configuration\n##\n"
                      "   traffic pool roce type lossless\n"
                      "   traffic pool roce memory percent 50.00\n"
                      "   traffic pool roce map switch-priority 3\n", text)
        self.assertIn("##\n## QoS switch configuration\n##\n"
                      "   interface ethernet 1/1-1/6 qos trust L3\n"
                      "   interface ethernet 1/7 qos trust L2\n"
                      "   interface ethernet 1/8-1/32 qos trust L3\n"
                      "   interface ethernet 1/1-1/32 traffic-class 3 congestion-control ecn "
                      "minimum-absolute 150 maximum-absolute 1500\n"
                      "   interface ethernet 1/1-1/32 traffic-class 6 dcb ets strict\n", text)
        self.assertIn("##\n## DCBX PFC configuration\n##\n"
                      "   dcb priority-flow-control enable force\n"
                      "   dcb priority-flow-control priority 3 enable\n"
                      "   interface ethernet 1/1-1/32 dcb priority-flow-control mode on force\n",
                      text)
        self.assertIn("##\n## LLDP configuration\n##\n   lldp\n", text)
        self.assertTrue(text.endswith("##\n## Persistent prefix mode setting\n##\n"
                                      "cli default prefix-modes enable"))

    def test_submode_forms(self):
        self.config(["interface ethernet 1/2", "qos trust L3", "exit", "traffic pool roce",
                     "type lossless", "memory percent 40", "exit"])
        text = self.running()
        self.assertIn("   interface ethernet 1/2 qos trust L3\n", text)
        self.assertIn("   traffic pool roce memory percent 40.00\n", text)

    def test_no_forms(self):
        self.config(RECIPE)
        self.config(["interface ethernet 1/5-1/32 no qos trust",
                     "interface ethernet 1/1-1/32 no traffic-class 3 congestion-control",
                     "interface ethernet 1/1-1/32 no traffic-class 6 dcb ets",
                     "interface ethernet 1/1-1/32 no dcb priority-flow-control mode force",
                     "no dcb priority-flow-control priority 3 enable",
                     "no dcb priority-flow-control enable", "no lldp",
                     "no traffic pool roce map switch-priority 3"])
        text = self.running()
        self.assertIn("   interface ethernet 1/1-1/4 qos trust L3\n", text)
        for gone in ("congestion-control", "ets", "priority-flow-control", "lldp", "map"):
            self.assertNotIn(gone, text)

    def test_write_and_reload(self):
        self.config(["lldp"], write=False)
        self.session(["enable", "reload"])
        self.assertNotIn("   lldp", self.running())
        self.config(["lldp"], write=True)
        self.session(["enable", "reload"])
        self.assertIn("   lldp", self.running())

    def test_command_log(self):
        self.facts(enable_password="s3cret")
        self.session(["enable", "s3cret", "configure terminal", "lldp", "exit", "exit"])
        with open(os.path.join(self.state, "commands.log")) as f:
            cmds = [l.rstrip("\n").split(" ", 1)[1] for l in f]
        self.assertEqual(cmds, ["enable", "********", "configure terminal", "lldp", "exit",
                                "exit"])

    def test_enable_password(self):
        self.facts(enable_password="s3cret")
        out = self.session(["enable", "wrong", "enable", "s3cret", "exit"])
        self.assertIn("> password: % Authentication failed\n" + P + " > password: " + P + " # ", out)

    def test_fail_once(self):
        self.control(fail_once={"match": "lldp", "message": "% Bad luck"})
        out = self.config(["lldp", "lldp"])
        self.assertEqual(out.count("% Bad luck"), 1)
        self.assertIn("   lldp", self.running())

    def test_drop_after(self):
        self.control(drop_after=2)
        out = self.session(["enable", "configure terminal", "lldp", "exit"])
        self.assertTrue(out.endswith("%s (config) # " % P))
        self.assertNotIn("   lldp", self.running())

    def test_show_version(self):
        out = self.session(["show version", "show version | json-print", "exit"])
        self.assertIn("> Product name:      Onyx\nProduct release:   3.9.0300\n", out)
        start = out.index("{")
        data = json.loads(out[start:out.index("}") + 1])
        self.assertEqual(data["Product model"], "SN2700")

    def test_oneshot_gate(self):
        out = self.config(["roce lossless"])
        self.assertNotIn("%", out)
        out = self.session(["enable", "show roce", "exit"])
        self.assertIn("RoCE mode      : lossless\n", out)
        self.facts(release="3.6.8130")
        out = self.session(["enable", "show roce", "configure terminal", "roce", "exit", "exit"])
        self.assertEqual(out.count('% Unrecognized command "roce".'), 2)

    def test_show_pfc_and_pool(self):
        self.config(RECIPE)
        out = self.session(["show dcb priority-flow-control | include ^(PFC|Priority|Eth1/1 )",
                            "show dcb priority-flow-control | json-print",
                            "show traffic pool roce | json-print", "exit"])
        self.assertIn("PFC: enabled\nPriority Enabled List: 3\n"
                      "Priority Disabled List: 0 1 2 4 5 6 7\n"
                      "Eth1/1           on               Enabled\n", out)
        self.assertIn('"Eth1/1": [\n', out)
        self.assertIn('"Memory [%]": "50.00"', out)

    def test_latency(self):
        import time
        self.control(latency_ms=50)
        t = time.monotonic()
        self.session(["show version", "exit"])
        self.assertGreaterEqual(time.monotonic() - t, 0.1)


    def test_slow_delays_only_its_commands(self):
        import time
        self.control(slow={"match": "configuration write", "ms": 400})
        t = time.monotonic()
        self.session(["show version", "exit"])
        self.assertLess(time.monotonic() - t, 0.4)
        t = time.monotonic()
        self.session(["enable", "configure terminal", "configuration write", "exit", "exit"])
        self.assertGreaterEqual(time.monotonic() - t, 0.4)


if __name__ == "__main__":
    unittest.main()
