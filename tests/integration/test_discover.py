"""test_discover - `gpuclusterctl discover` against the lab (issue 17, item 1).

The lab stands in for examples/roce-pair.yaml with its second host on ESXi
7.0.3 and a third host on ESXi 6.7.0 (an A100 and a ConnectX-6 port, no
VM), the Onyx switch and vcsim.  discover is given only the connection
sections of that spec.  What it prints must be exactly the hardware the
simulators hold, pass `check` as it is, and, merged with the example's
VMs and switch, plan no host change on a lab the example was applied to.
Every command the targets received during discover is a read.

Whether the simulated 6.7 host refuses the 7.0-only namespaces (`hardware
pci pcipassthru`, `system ntp`) is asked of the host itself (an operator's
ssh), and the expected output follows from its answer: the test holds
either way.
"""
import json
import os
import shutil
import subprocess
import re
import tempfile
import unittest

import yaml

from labtest import BIN, ROOT, LabCase, OBSERVE_MARK

# The read-only batch of the ESXi driver (src/drivers/esxi/observe.c), in order.
ESXI_READS = [
    "vmware -v",
    "esxcli --formatter=xml system maintenanceMode get",
    "esxcli --formatter=xml graphics host get",
    "esxcli --formatter=xml software vib list",
    "esxcli --formatter=xml hardware pci pcipassthru list",
    "esxcli --formatter=xml system module parameters list -m nmlx5_core",
    "esxcli --formatter=xml network firewall ruleset list",
    "esxcli --formatter=xml system settings advanced list -o /Net/PVRDMAVmknic",
    "esxcli --formatter=xml system ntp get",
    "nvidia-smi -q -d ECC",
    "esxcli --formatter=xml software vib list --rebooting-image",
    "esxcli --formatter=xml hardware pci list",
    "sh -c MFT_SNIPPET mft TOKEN",  # Mellanox MFT: a fixed snippet (include/gc/esxi.h)
]
SWITCH_READS = ["enable", "no cli session paging enable", "show version", "show running-config",
                "exit"]


def batch_commands(line):
    """The commands of one observation batch, markers and `|| echo` left out."""
    out = []
    # the MFT section is one quoted snippet with "; " of its own
    line = re.sub(r"sh -c '[^']*' mft [A-Za-z0-9]+", "sh -c MFT_SNIPPET mft TOKEN", line)
    for part in line.split("; "):
        part = part.split(" || echo " + OBSERVE_MARK)[0]
        if not part.startswith("echo " + OBSERVE_MARK):
            out.append(part)
    return out


def schema_validator():
    import jsonschema
    with open(os.path.join(ROOT, "specs", "discover-v1.schema.json"), encoding="utf-8") as f:
        return jsonschema.Draft202012Validator(json.load(f))


class DiscoverCase(LabCase):
    """Helpers of both lab classes below (no tests of its own)."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        with open(cls.specfile, encoding="utf-8") as f:
            cls.lab_spec = yaml.safe_load(f)

    # ---------------------------------------------------------------- helpers

    def write_spec(self, name, doc):
        path = os.path.join(self.lab, name)
        with open(path, "w", encoding="utf-8") as f:
            yaml.safe_dump(doc, f, sort_keys=False)
        return path

    def connection_spec(self):
        """Only what discover needs: the lab spec's connection sections."""
        s = self.lab_spec
        doc = {k: s[k] for k in ("apiVersion", "kind", "metadata", "credentials", "ssh", "vcenter")}
        doc["hosts"] = [{k: h[k] for k in ("name", "address", "credentials")} for h in s["hosts"]]
        doc["switches"] = [{k: w[k] for k in ("name", "address", "credentials")}
                           for w in s.get("switches") or []]
        return self.write_spec("connection.yaml", doc)

    def run_gc(self, *argv, check):
        r = subprocess.run([BIN, *argv], env=self.env, capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, check, "exit %d\n--- stdout\n%s\n--- stderr\n%s"
                         % (r.returncode, r.stdout, r.stderr))
        return r

    def log_len(self):
        return {t: len(self.log(t)) for t in self.hosts + self.switches}

    def assert_only_reads(self, before):
        """Since `before`: one observation batch per host, exactly the
        driver's reads, and the switch's read-only session."""
        for h in self.hosts:
            new = [c for _, c in self.log(h)[before[h]:]]
            self.assertEqual(len(new), 1, "%s got %r" % (h, new))
            self.assertEqual(batch_commands(new[0]), ESXI_READS)
        for s in self.switches:
            new = [c for _, c in self.log(s)[before[s]:]]
            self.assertEqual(new, SWITCH_READS)



class Discover(DiscoverCase):
    port = 2352  # vcsim on 9012, clear of the unit tests' fixed vcsim ports (8980-8997)

    @classmethod
    def setUpClass(cls):
        with open(os.path.join(ROOT, "examples", "roce-pair.yaml"), encoding="utf-8") as f:
            spec = yaml.safe_load(f)
        spec["hosts"][1]["version"] = "7.0.3"
        spec["hosts"].append({
            "name": "esx03", "address": "127.0.0.13", "credentials": "esxi-root", "version": "6.7.0",
            "gpus": [{"pci": "0000:af:00.0", "model": "A100-40GB", "mode": "passthrough"}],
            "nics": [{"pci": "0000:d8:00.0", "model": "ConnectX-6", "device": "vmnic6"}]})
        cls.tmp = tempfile.mkdtemp(prefix="gc-it-discover-")
        os.chmod(cls.tmp, 0o755)
        cls.spec = os.path.join(cls.tmp, "roce-pair-3.yaml")
        with open(cls.spec, "w", encoding="utf-8") as f:
            yaml.safe_dump(spec, f, sort_keys=False)
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def configure_by_hand(self):
        """The example applied to esx01, esx02 and the switch; esx03's GPU
        put into passthrough as an operator would (state of the simulator)."""
        self.gc("apply", "--only", "esxi,switch", "--target", "esx01", "--target", "esx02",
                "--target", "sn2700", check=0)
        self.set_gpu_passthru("esx03", "0000:af:00.0")

    def set_gpu_passthru(self, host, pci):
        """Passthrough configured and active, as after an operator's reboot."""
        st = self.state(host)
        for d in st["pci"]:
            if d["addr"] == pci:
                d["passthru"] = d["passthru_active"] = True
        with open(os.path.join(self.host_dir(host), "state.json"), "w", encoding="utf-8") as f:
            json.dump(st, f)

    def six_seven_refuses(self):
        """Does the simulated 6.7 host lack `system ntp`?  Asked over ssh."""
        out = self.remote("esx03", "esxcli system ntp get || echo REFUSED")
        return "REFUSED" in out

    # ---------------------------------------------------------------- tests

    def test_discover_round_trip(self):
        self.configure_by_hand()
        conn = self.connection_spec()
        before = self.log_len()
        out = os.path.join(self.lab, "found.yaml")
        r = self.run_gc("discover", "--out", out, conn, check=0)
        self.assertEqual(r.stdout, "")
        self.assertEqual(r.stderr, "")
        self.assert_only_reads(before)
        with open(out, encoding="utf-8") as f:
            text = f.read()
        found = yaml.safe_load(text)
        # the credentials are the input's references; the secret is nowhere
        with open(os.path.join(self.lab, "client", "password"), encoding="utf-8") as f:
            self.assertNotIn(f.read().strip(), text)
        self.assertEqual(found["credentials"], self.lab_spec["credentials"])
        refuses = self.six_seven_refuses()
        sriov = {"pci": "0000:5e:00.0", "model": "ConnectX-5", "device": "vmnic4",
                 "mode": "sriov", "vfs": 4}
        v100 = {"pci": "0000:3b:00.0", "model": "V100-32GB", "mode": "passthrough"}
        esx03 = {"name": "esx03", "address": "127.0.0.13", "credentials": "esxi-root",
                 "version": "6.7.0",
                 "gpus": [{"pci": "0000:af:00.0", "model": "A100-40GB", "mode": "passthrough"}],
                 "nics": [{"pci": "0000:d8:00.0", "model": "ConnectX-6", "device": "vmnic6"}]}
        self.assertEqual(found["hosts"], [
            {"name": "esx01", "address": "127.0.0.11", "credentials": "esxi-root",
             "version": "8.0.2", "ntp": ["ntp1.lab.example"], "gpus": [v100], "nics": [sriov]},
            {"name": "esx02", "address": "127.0.0.12", "credentials": "esxi-root",
             "version": "7.0.3", "ntp": ["ntp1.lab.example"], "gpus": [v100], "nics": [sriov]},
            esx03])
        self.assertEqual(found["switches"], [{"name": "sn2700", "address": "127.0.0.100",
                                              "credentials": "switch-admin",
                                              "version": "3.9.0300"}])
        self.assertEqual(found["vcenter"], {k: v for k, v in self.lab_spec["vcenter"].items()}
                         | {"max_tasks": 8, "max_tasks_per_host": 2, "shutdown_timeout_s": 300})
        self.assertIn('  - {pci: "0000:3b:00.0", model: V100-32GB, mode: passthrough}\n', text)
        self.assertIn("#   ubuntu-22.04-template (template) on esx01: poweredOff, 2 CPUs, "
                      "4096 MB, efi; VirtualVmxnet3 network 'VM Network'\n", text)
        ntp_note = ("#   host 'esx03': NTP not read (no `esxcli system ntp` on this release): "
                    "add ntp: if you manage it\n")
        self.assertEqual(ntp_note in text, refuses)
        # as it is, the output is a spec
        r = self.run_gc("check", out, check=0)
        self.assertEqual(r.stdout, "%s: ok (3 hosts, 0 VMs, 1 switches)\n" % out)
        # merged with the example's VMs and switch: no host changes
        merged = dict(found)
        for k in ("switches", "vms", "rolling", "validation"):
            merged[k] = self.lab_spec[k]
        merged_path = self.write_spec("merged.yaml", merged)
        self.run_gc("check", merged_path, check=0)
        r = self.gc("plan", "--only", "esxi", spec=merged_path, check=0)
        self.assertEqual(r.stdout, "No changes. The cluster matches the spec.\n")

    def test_json_against_schema(self):
        """Also ESXi 6.7's answer to a 7.0-only namespace, injected once
        whatever the simulator's 6.7 does: passthrough is then read from
        `hardware pci list`'s Configured Owner."""
        self.set_gpu_passthru("esx03", "0000:af:00.0")
        self.control("esx03", {"reboot_seconds": self.reboot_seconds, "fail_once": {
            "match": "esxcli --formatter=xml hardware pci pcipassthru list",
            "message": "Error: Unknown command or namespace hardware pci pcipassthru list"}})
        conn = self.connection_spec()
        r = self.run_gc("discover", "--json", conn, check=0)
        doc = json.loads(r.stdout)
        errors = sorted(schema_validator().iter_errors(doc), key=str)
        self.assertEqual(errors, [])
        esx03 = doc["hosts"][2]
        self.assertEqual((esx03["version"], esx03["read"], esx03["error"]), ("6.7.0", True, None))
        gpu = [g for g in esx03["gpus"]]
        self.assertEqual(gpu, [{"pci": "0000:af:00.0", "vendor_id": "0x10de", "device_id": "0x20f1",
                                "device_name": "GA100 [A100 PCIe 40GB]", "model": "A100-40GB",
                                "memory_gb": 40, "mode": "passthrough",
                                "passthru_configured": True, "passthru_active": True}])
        refuses = self.six_seven_refuses()
        self.assertEqual(esx03["unavailable"], ["hardware pci pcipassthru list"] +
                         (["system ntp get"] if refuses else []))
        self.assertEqual(esx03["ntp"], None if refuses else [])
        self.assertEqual([(n["pci"], n["vmnic"], n["model"], n["max_vfs"], n["mode"])
                          for n in esx03["nics"]],
                         [("0000:d8:00.0", "vmnic6", "ConnectX-6", 127, "none")])
        self.assertEqual(doc["switches"][0]["release"], "3.9.0300")
        self.assertEqual(doc["vcenter"]["datacenters"], ["DC0"])
        self.assertEqual(doc["vcenter"]["clusters"], ["gpu"])

    def test_hostile_device_name_stays_a_comment(self):
        """A device name with a newline and YAML in it is shown escaped in a
        comment; the document is unchanged and still a spec."""
        st = self.state("esx03")
        st["pci"].append({"addr": "0000:d9:00.0", "vendor": "NVIDIA Corporation",
                          "vendor_id": "0x10de", "device": "X\nvms: [{name: pwned}]\u2028hosts: []",
                          "device_id": "0x9999", "class": "0x0302", "class_name": "3D controller",
                          "module": "None", "vmkname": "", "capable": True, "gpu": True,
                          "passthru": False, "passthru_active": False})
        with open(os.path.join(self.host_dir("esx03"), "state.json"), "w", encoding="utf-8") as f:
            json.dump(st, f)
        conn = self.connection_spec()
        r = self.run_gc("discover", conn, check=0)
        self.assertIn("#   host 'esx03': GPU 0000:d9:00.0 (model not in the table, "
                      "X\\u000avms: [{name: pwned}]\\u2028hosts: []) is neither passthrough nor vGPU: add it with "
                      "the mode you want and memory_gb\n", r.stdout)
        found = yaml.safe_load(r.stdout)
        self.assertNotIn("vms", found)
        self.assertEqual(len(found["hosts"]), 3)

    def test_exit_codes(self):
        # usage: 64
        r = self.run_gc("discover", check=64)
        self.assertEqual(r.stderr, "gpuclusterctl discover: missing SPEC\n"
                         "Try 'gpuclusterctl discover --help' for more information.\n")
        self.run_gc("discover", "--no-such-option", "x.yaml", check=64)
        # an unreachable host: 1, named with the reason; the others still printed
        s = self.lab_spec
        doc = {k: s[k] for k in ("apiVersion", "kind", "metadata", "credentials", "ssh")}
        doc["ssh"] = dict(doc["ssh"], connect_timeout_s=2)
        doc["hosts"] = [{"name": "esx01", "address": "127.0.0.11", "credentials": "esxi-root"},
                        {"name": "gone", "address": "127.0.0.250", "credentials": "esxi-root",
                         "ssh": {"port": 9}}]
        path = self.write_spec("unreachable.yaml", doc)
        r = self.run_gc("discover", path, check=1)
        self.assertEqual(r.stderr, "gpuclusterctl: error: host 'gone': ssh %s@127.0.0.250:9: "
                         "cannot connect: Connection refused\n" % s["credentials"][0]["username"])
        found = yaml.safe_load(r.stdout)
        self.assertEqual([h["name"] for h in found["hosts"]], ["esx01", "gone"])
        self.assertEqual(found["hosts"][0]["version"], "8.0.2")
        self.assertIn("#   host 'gone' was not read: ssh", r.stdout)
        # an unknown host key is refused, as for every command
        empty = os.path.join(self.lab, "empty_known_hosts")
        open(empty, "w").close()
        r = self.run_gc("discover", "--known-hosts", empty, path, check=1)
        self.assertIn("gpuclusterctl: error: host 'esx01': ", r.stderr)
        self.assertIn("SHA256:", r.stderr)
        # a spec that names no target: 1
        doc = {k: s[k] for k in ("apiVersion", "kind", "metadata", "credentials")}
        r = self.run_gc("discover", self.write_spec("empty.yaml", doc), check=1)
        self.assertIn("names no host, switch or vCenter to discover", r.stderr)


if __name__ == "__main__":
    unittest.main()


class DiscoverVcenter(DiscoverCase):
    """The vCenter half: examples/vgpu-pvrdma.yaml's VMs and distributed
    switch made by apply in vcsim, then read back by discover."""
    spec = "examples/vgpu-pvrdma.yaml"
    port = 2353

    def test_dvswitch_vgpu_types_and_vms(self):
        self.gc("apply", "--only", "vcenter", check=0)
        conn = self.connection_spec()
        before = self.log_len()
        r = self.run_gc("discover", conn, check=0)
        self.assert_only_reads(before)
        # vCenter as apply left it: nothing for the spec's own plan to change
        p = self.gc("plan", "--only", "vcenter", check=0)
        self.assertEqual(p.stdout, "No changes. The cluster matches the spec.\n")
        found = yaml.safe_load(r.stdout)
        self.assertEqual(found["distributed_switches"], [{
            "name": "dvs-rdma", "mtu": 9000,
            "uplinks": [{"host": "esx0%d" % i, "nic": "vmnic5"} for i in (1, 2, 3, 4)],
            "port_groups": [{"name": "pvrdma-pg", "vlan": 100}]}])
        self.assertIn("#   port group 'dvs-rdma-DVUplinks-", r.stdout)
        self.assertIn("# vGPU types 'esx01' offers: grid_t4-1q grid_t4-2q grid_t4-4q grid_t4-8q "
                      "grid_t4-16q grid_t4-4c grid_t4-8c grid_t4-16c\n", r.stdout)
        self.assertIn("#   worker-01 on esx01: poweredOn, 8 CPUs, 65536 MB, efi; VirtualVmxnet3 "
                      "network 'VM Network'; VirtualPCIPassthrough grid_t4-16c; "
                      "VirtualVmxnet3Vrdma network 'pvrdma-pg'\n", r.stdout)
        # the T4s are in neither mode on hosts nobody configured: comments, not gpus
        self.assertEqual([h.get("gpus") for h in found["hosts"]], [None] * 5)
        self.assertIn("#   host 'esx01': GPU 0000:3b:00.0 (T4, TU104GL [Tesla T4]) is neither "
                      "passthrough nor vGPU: add it with the mode you want\n", r.stdout)
        path = os.path.join(self.lab, "found.yaml")
        with open(path, "w", encoding="utf-8") as f:
            f.write(r.stdout)
        self.run_gc("check", path, check=0)
        r = self.run_gc("discover", "--json", conn, check=0)
        doc = json.loads(r.stdout)
        self.assertEqual(sorted(schema_validator().iter_errors(doc), key=str), [])
        vms = {v["name"]: v for v in doc["vcenter"]["vms"]}
        self.assertEqual([(d["type"], d["vgpu"], d["network"]) for d in vms["worker-01"]["devices"]],
                         [("VirtualVmxnet3", None, "VM Network"),
                          ("VirtualPCIPassthrough", "grid_t4-16c", None),
                          ("VirtualVmxnet3Vrdma", None, "pvrdma-pg")])
