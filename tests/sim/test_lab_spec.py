"""test_lab_spec - the lab's view of a spec whose targets are DNS names or
non-loopback addresses: each gets a loopback address of its own, the same in
every subcommand, and `rewrite` says so (issue 17: the lab accepted such a
spec and then printed 24 retry lines)."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TOOL = os.path.join(HERE, "lab_spec.py")


def run(*args):
    return subprocess.run([sys.executable, "-B", TOOL] + list(args), capture_output=True,
                          text=True, timeout=60)


class DnsNames(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="gc-labspec-")
        with open(os.path.join(ROOT, "examples", "roce-passthrough.yaml"), encoding="utf-8") as f:
            spec = yaml.safe_load(f)
        spec["hosts"][0]["address"] = "esx01.lab.example"
        spec["hosts"][2]["address"] = "esx01.lab.example"  # the same name: the same address
        spec["switches"][0]["address"] = "10.20.0.5"
        spec["vms"][1]["guest"]["address"] = "worker-02.lab.example"
        self.spec = os.path.join(self.dir, "dns.yaml")
        with open(self.spec, "w", encoding="utf-8") as f:
            yaml.safe_dump(spec, f, sort_keys=False)

    def test_inventory_and_guests_agree(self):
        p = run("inventory", self.spec)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertEqual(lines[0], "127.0.100.1 esxi esx01 version=8.0.2")
        self.assertEqual(lines[1], "127.0.0.12 esxi esx02 version=8.0.2")
        self.assertEqual(lines[2], "127.0.100.1 esxi esx03 version=8.0.2")
        self.assertEqual(lines[-1], "127.0.100.2 onyx sn2700")
        p = run("guests", self.spec, "2")
        guests = [json.loads(l) for l in p.stdout.splitlines()]
        self.assertEqual([g["address"] for g in guests], ["127.0.0.51", "127.0.100.3"])

    def test_rewrite_says_and_writes_loopback(self):
        lab = os.path.join(self.dir, "lab")
        os.makedirs(os.path.join(lab, "client"))
        for name, text in (("port", "2999"), ("user", "gclab")):
            with open(os.path.join(lab, name), "w", encoding="utf-8") as f:
                f.write(text)
        out = os.path.join(self.dir, "out.yaml")
        p = run("rewrite", self.spec, lab, out)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr.splitlines(), [
            "lab: esx01.lab.example is reached at 127.0.100.1 (the lab listens on loopback only)",
            "lab: 10.20.0.5 is reached at 127.0.100.2 (the lab listens on loopback only)",
            "lab: worker-02.lab.example is reached at 127.0.100.3 (the lab listens on loopback only)",
        ])
        with open(out, encoding="utf-8") as f:
            written = yaml.safe_load(f)
        self.assertEqual(written["hosts"][0]["address"], "127.0.100.1")
        self.assertEqual(written["switches"][0]["address"], "127.0.100.2")
        self.assertEqual(written["vms"][1]["guest"]["address"], "127.0.100.3")
        with open(out, encoding="utf-8") as f:
            text = f.read()
        for name in ("esx01.lab.example", "worker-02.lab.example", "10.20.0.5"):
            self.assertNotIn(name, text)


if __name__ == "__main__":
    unittest.main()
