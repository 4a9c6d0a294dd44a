"""test_lab_spec - the lab's view of a spec whose targets are DNS names or
non-loopback addresses: each gets a loopback address of its own, the same in
every subcommand, and `rewrite` says so (issue 17: the lab accepted such a
spec and then printed 24 retry lines)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TOOL = os.path.join(HERE, "lab_spec.py")
SPEC = os.path.join(ROOT, "tests", "data", "spec", "guestlab.yaml")
RUNFILE = "NVIDIA-Linux-x86_64-535.183.01-grid.run"
OFED = "MLNX_OFED_LINUX-23.10-1.1.9.0-debian12.1-x86_64.tgz"


def run(*args):
    return subprocess.run([sys.executable, "-B", TOOL] + list(args), capture_output=True,
                          text=True, timeout=60)


class DnsNames(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="gc-labspec-")
        self.addCleanup(shutil.rmtree, self.dir, True)
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



class LabSpecGuests(unittest.TestCase):
    """lab_spec.py's guest side, without VMs: what `guests` gives the lab and
    what `rewrite` changes in a spec (only how guests are reached)."""

    def setUp(self):
        sys.path.insert(0, HERE)
        import lab_spec
        self.ls = lab_spec
        with open(SPEC, encoding="utf-8") as f:
            self.spec = yaml.safe_load(f)
        self.lab = tempfile.mkdtemp(prefix="gc-labspec-")
        with open(os.path.join(self.lab, "port"), "w", encoding="utf-8") as f:
            f.write("2222\n")
        with open(os.path.join(self.lab, "user"), "w", encoding="utf-8") as f:
            f.write("gclab\n")

    def tearDown(self):
        shutil.rmtree(self.lab, ignore_errors=True)

    def test_guests(self):
        g = self.ls.guests(self.spec)
        self.assertEqual([(x["name"], x["address"], x["index"], x["rdma_interface"], x["rdma_device"]) for x in g],
                         [("gpu-01", "127.0.0.51", 1, "ens224", "mlx5_0"),
                          ("gpu-02", "127.0.0.52", 2, "ens224", "mlx5_0")])
        self.assertEqual([x["name"] for x in self.ls.guests(self.spec, 1)], ["gpu-01"])
        gpu = g[0]["gpus"][0]
        self.assertEqual((gpu["product"], gpu["memory_mib"], gpu["mode"]),
                         ("Tesla V100-PCIE-32GB", 32768, "Pass-Through"))
        vm = dict(self.spec["vms"][0], gpus=[{"vgpu": "grid_t4-16c"}])
        v = self.ls.guest_gpus(self.spec, vm, 1)[0]
        self.assertEqual((v["product"], v["memory_mib"], v["mode"], v["licence_product"]),
                         ("GRID T4-16C", 16384, "VGPU", "NVIDIA Virtual Compute Server"))
        bad = dict(self.spec)
        bad["vms"] = [dict(self.spec["vms"][0], name="../x")]
        with self.assertRaisesRegex(ValueError, "not a plain name"):
            self.ls.guests(bad)

    def test_rewrite_only_reach(self):
        g = self.spec["vms"][1]["guest"]
        g["driver"] = {"source": "runfile", "runfile": "/srv/NVIDIA-Linux-x86_64-535.183.01-grid.run"}
        g["license"] = {"token_file": "/etc/tok", "feature_type": 4}
        g["ssh"] = {"connect_timeout_s": 7}
        g["rdma_stack"] = {"source": "ofed", "installer": "/srv/MLNX_OFED_LINUX-5.8-1.1.2.1-ubuntu22.04-x86_64.tgz"}
        # a credential shared with a host: the guests get a copy
        g["credentials"] = "esxi-root"
        out = self.ls.rewrite(self.spec, self.lab)
        g0, g1 = out["vms"][0]["guest"], out["vms"][1]["guest"]
        for x in (g0, g1):
            self.assertEqual(x["ssh"]["port"], 12222)
            self.assertEqual(x["ssh"]["known_hosts"], os.path.join(self.lab, "known_hosts"))
            self.assertEqual(x["os"], "debian")
        self.assertEqual(g1["ssh"]["connect_timeout_s"], 7)
        self.assertEqual(g1["credentials"], "esxi-root-lab")
        creds = {c["name"]: c for c in out["credentials"]}
        self.assertEqual(creds["esxi-root-lab"], {"name": "esxi-root-lab", "username": "gclab",
                                                  "key_file": os.path.join(self.lab, "guest_key")})
        self.assertEqual(creds["guest-user"]["username"], "gclab")
        self.assertEqual(creds["esxi-root"]["username"], "gclab")  # the host's lab user, by rewrite()
        self.assertIn("password_file", creds["esxi-root"])
        self.assertEqual(g1["driver"], {"source": "runfile",
                                        "runfile": os.path.join(self.lab, RUNFILE)})
        self.assertEqual(g1["license"], {"token_file": os.path.join(self.lab, "client_configuration_token.tok"),
                                         "feature_type": 4})
        self.assertEqual(g1["rdma_stack"], {"source": "ofed", "installer": os.path.join(self.lab, OFED)})
        # desired state untouched
        self.assertEqual(g0["rdma_interface"], {"name": "ens224", "address": "198.18.0.51/24", "mtu": 4200})
        self.assertEqual(g0["roce_qos"]["tos"], 106)
        self.assertEqual(g0["address"], "127.0.0.51")

    def test_a_runfile_of_another_version_gets_a_stand_in_of_that_version(self):
        g = self.spec["vms"][0]["guest"]
        g["driver"] = {"source": "runfile",
                       "runfile": "/opt/nvidia/NVIDIA-Linux-x86_64-525.105.17-grid.run"}
        self.spec["vms"][1]["guest"]["driver"] = {"source": "runfile",
                                                  "runfile": "/srv/grid-driver.run"}
        self.assertEqual(self.ls.runfile_versions(self.spec), ["525.105.17"])
        out = self.ls.rewrite(self.spec, self.lab)
        self.assertEqual([vm["guest"]["driver"]["runfile"] for vm in out["vms"]],
                         [os.path.join(self.lab, "NVIDIA-Linux-x86_64-525.105.17-grid.run"),
                          os.path.join(self.lab, RUNFILE)])
        # the CLI the lab calls: one version a line
        r = subprocess.run([sys.executable, "-B", TOOL, "runfiles",
                            os.path.join(ROOT, "examples", "vgpu-pvrdma.yaml")],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual((r.returncode, r.stdout), (0, "525.105.17\n"))


if __name__ == "__main__":
    unittest.main()
