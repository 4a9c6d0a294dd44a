#!/usr/bin/python3
"""test_vcsim_inventory BUILDDIR - the lab's vCenter as the vCenter driver
meets it: vcsim started with each example spec's inventory
(tests/sim/lab_spec.py vcsim-inventory), read back over SOAP with
tests/sim/vcsim_edit.py (python's standard library, not our C code).

Ports 8986 (roce-passthrough), 8987 (vgpu-pvrdma) and 8988 (the default
model with -host-gpus, then scripts/lab.sh --spec as root) only; each vcsim
has its own lab dir under BUILDDIR.

Asserts exactly: the inventory (datacenter, cluster, hosts, datastore,
networks, template), each host's PCI devices, passthrough/SR-IOV state and
vGPU types, QueryConfigTarget's pciPassthrough/sriov/vGPU entries, a clone
placed on its host with its config, extraConfig replace/remove, the four
device kinds of the examples as vcsim_edit.py shows them, a distributed
switch keeping maxMtu and its members' pnics, and injected faults.
"""
import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
SIM = os.path.join(ROOT, "tests", "sim")
sys.path.insert(0, SIM)
import vcsim_edit as ve  # noqa: E402

BUILD = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(ROOT, "build", "test-vcsim-inventory"))

T4_TYPES = ["grid_t4-1q", "grid_t4-2q", "grid_t4-4q", "grid_t4-8q", "grid_t4-16q",
            "grid_t4-4c", "grid_t4-8c", "grid_t4-16c"]

V100_32GB = {"bus": "59", "classId": "770", "deviceId": "7606",
             "deviceName": "GV100GL [Tesla V100 PCIe 32GB]", "function": "0", "id": "0000:3b:00.0",
             "slot": "0", "subDeviceId": "0", "subVendorId": "4318", "vendorId": "4318",
             "vendorName": "NVIDIA Corporation"}
CX5_ROCE = {"bus": "94", "classId": "512", "deviceId": "4119",
            "deviceName": "MT27800 Family [ConnectX-5]", "function": "0", "id": "0000:5e:00.0",
            "slot": "0", "subDeviceId": "0", "subVendorId": "5555", "vendorId": "5555",
            "vendorName": "Mellanox Technologies"}
T4 = {"bus": "59", "classId": "770", "deviceId": "7864", "deviceName": "TU104GL [Tesla T4]",
      "function": "0", "id": "0000:3b:00.0", "slot": "0", "subDeviceId": "0",
      "subVendorId": "4318", "vendorId": "4318", "vendorName": "NVIDIA Corporation"}
CX5_PVRDMA = dict(CX5_ROCE, bus="216", id="0000:d8:00.0")

TEMPLATE_DEVICES = ["VirtualIDEController", "VirtualIDEController", "VirtualPS2Controller",
                    "VirtualPCIController", "VirtualSIOController", "VirtualKeyboard",
                    "VirtualPointingDevice", "VirtualMachineVideoCard", "VirtualMachineVMCIDevice",
                    "ParaVirtualSCSIController", "VirtualDisk", "VirtualVmxnet3"]


class Vcsim:
    """One vcsim of tests/sim/vcsim.sh in its own lab dir."""

    def __init__(self, name, port, *start_args):
        self.dir = os.path.join(BUILD, name)
        self.port = port
        self.env = dict(os.environ, GC_VCSIM_DIR=self.dir)
        self.sh("stop")
        os.makedirs(self.dir, exist_ok=True)
        self.faults(None)
        self.sh("start", "--port", str(port), *start_args)
        self.url = "https://127.0.0.1:%d/sdk" % port
        self.ca = os.path.join(self.dir, "ca.crt")
        self.pwfile = os.path.join(self.dir, "password")
        self.c = ve.Client(self.url, self.ca)
        with open(self.pwfile, encoding="utf-8") as f:
            self.c.login("gcadmin", f.read().strip())

    def sh(self, *args):
        r = subprocess.run([os.path.join(SIM, "vcsim.sh"), *args], env=self.env,
                           capture_output=True, text=True, timeout=600)
        if r.returncode != 0 and args[0] != "stop":
            raise AssertionError("vcsim.sh %s: %s%s" % (args, r.stdout, r.stderr))

    def stop(self):
        self.c.logout()
        self.c.close()
        self.sh("stop")

    def edit(self, *words):
        """vcsim_edit.py as a test or an operator runs it."""
        return subprocess.run([sys.executable, os.path.join(SIM, "vcsim_edit.py"), "--url", self.url,
                               "--ca", self.ca, "--user", "gcadmin", "--password-file", self.pwfile,
                               *words], capture_output=True, text=True, timeout=60)

    def show(self, *words):
        r = self.edit(*words)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)

    def faults(self, rules):
        path = os.path.join(self.dir, "faults.json")
        if rules is None:
            if os.path.exists(path):
                os.unlink(path)
            return
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            json.dump(rules, f)
        os.replace(path + ".tmp", path)

    def ref(self, kind, name):
        return self.c.find(kind, name)

    def clone(self, name, host, config="", power_on=False):
        folder = [r for r, v in self.c.all("Folder") if v["name"].text == "vm"][0]
        pool = [r for r, v in self.c.all("ResourcePool")][0]
        spec = ('<folder type="Folder">%s</folder><name>%s</name><spec><location>'
                '<pool type="ResourcePool">%s</pool><host type="HostSystem">%s</host></location>'
                '<template>false</template><config>%s</config><powerOn>%s</powerOn></spec>'
                % (folder, name, pool, self.ref("HostSystem", host), config,
                   "true" if power_on else "false"))
        return self.c.task("CloneVM_Task", "VirtualMachine", self.ref("VirtualMachine", "ubuntu-22.04-template"),
                           spec)


def inventory(spec):
    out = subprocess.run([sys.executable, os.path.join(SIM, "lab_spec.py"), "vcsim-inventory",
                          os.path.join(ROOT, "examples", spec)], capture_output=True, text=True, check=True)
    path = os.path.join(BUILD, spec.replace(".yaml", "-inventory.json"))
    os.makedirs(BUILD, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(out.stdout)
    return path


def sim_devices(host):
    """The spec's devices of a host: the ones after the virtual chipset."""
    return [d for d in host["pci_devices"] if not d["id"].startswith("0000:00:")
            and d["id"] not in ("0000:03:00.0", "0000:0b:00.0", "0000:13:00.0")]


class LabSpec(unittest.TestCase):
    """scripts/lab.sh start --spec runs vcsim too (on 8988, after DefaultModel)."""

    @classmethod
    def setUpClass(cls):
        if os.getuid() != 0 or not os.path.exists("/usr/sbin/sshd"):
            raise unittest.SkipTest("scripts/lab.sh needs root and openssh-server")
        cls.lab = os.path.join(BUILD, "lab")
        os.makedirs(BUILD, exist_ok=True)
        os.chmod(BUILD, 0o755)
        cls.env = dict(os.environ, GC_LAB_DIR=cls.lab)
        cls.env.pop("GC_LAB_VCSIM_PORT", None)
        cls.sshport = str(24000 + os.getpid() % 900)
        cls.lab_sh("stop")

    @classmethod
    def tearDownClass(cls):
        cls.lab_sh("stop")

    @classmethod
    def lab_sh(cls, *args):
        r = subprocess.run([os.path.join(ROOT, "scripts", "lab.sh"), *args], env=cls.env,
                           capture_output=True, text=True, timeout=600)
        return r.returncode, r.stdout, r.stderr

    def test_spec_lab_runs_vcsim_and_points_the_spec_at_it(self):
        import yaml
        rc, out, err = self.lab_sh("start", "--guests", "0", "--spec", os.path.join(ROOT, "examples", "vgpu-pvrdma.yaml"),
                                   "--port", self.sshport, "--vcsim-port", "8988")
        self.assertEqual(rc, 0, err)
        self.assertIn("lab: started vcsim (pid ", out)
        self.assertIn(") on https://127.0.0.1:8988/sdk: datacenter DC0, cluster gpu, 5 hosts, 1 templates\n", out)
        d = os.path.join(self.lab, "vcsim")
        with open(os.path.join(self.lab, "vgpu-pvrdma.yaml"), encoding="utf-8") as f:
            spec = yaml.safe_load(f)
        self.assertEqual(spec["vcenter"], {"url": "https://127.0.0.1:8988/sdk", "datacenter": "DC0",
                                           "cluster": "gpu", "credentials": "vc-admin",
                                           "ca_file": os.path.join(d, "ca.crt")})
        self.assertEqual([c for c in spec["credentials"] if c["name"] == "vc-admin"],
                         [{"name": "vc-admin", "username": "gcadmin",
                           "password_file": os.path.join(d, "password")}])
        rc, env, _ = self.lab_sh("env")
        self.assertIn("export GC_LAB_VCSIM_URL=https://127.0.0.1:8988/sdk\n", env)
        rc, out, err = self.lab_sh("status")
        self.assertEqual(rc, 0, out + err)
        self.assertRegex(out, r"lab: vcsim running \(pid \d+, https://127.0.0.1:8988/sdk\): datacenter DC0")
        # a second start keeps it; reset restarts it with a fresh inventory
        rc, out, _ = self.lab_sh("start", "--guests", "0", "--spec", os.path.join(ROOT, "examples", "vgpu-pvrdma.yaml"))
        self.assertIn("lab: vcsim already running (pid ", out)
        v = ve.Client("https://127.0.0.1:8988/sdk", os.path.join(d, "ca.crt"))
        with open(os.path.join(d, "password"), encoding="utf-8") as f:
            v.login("gcadmin", f.read().strip())
        t = v.find("VirtualMachine", "ubuntu-22.04-template")
        v.reconfigure(t, "<annotation>by hand</annotation>")
        self.assertEqual(v.props("VirtualMachine", t, ["config.annotation"])["config.annotation"].text, "by hand")
        with open(os.path.join(d, "faults.json"), "w", encoding="utf-8") as f:
            f.write("{}")
        v.close()
        rc, out, _ = self.lab_sh("reset")
        self.assertIn("lab: reset vcsim (fresh inventory, no faults)\n", out)
        self.assertFalse(os.path.exists(os.path.join(d, "faults.json")))
        v = ve.Client("https://127.0.0.1:8988/sdk", os.path.join(d, "ca.crt"))
        with open(os.path.join(d, "password"), encoding="utf-8") as f:
            v.login("gcadmin", f.read().strip())
        t = v.find("VirtualMachine", "ubuntu-22.04-template")
        self.assertIsNone(v.props("VirtualMachine", t, ["config.annotation"]).get("config.annotation"))
        v.close()
        rc, out, _ = self.lab_sh("stop")
        self.assertIn("lab: stopped vcsim (pid ", out)
        rc, out, _ = self.lab_sh("status")
        self.assertEqual(rc, 3)
        self.assertIn("lab: vcsim not running", out)


class RocePassthrough(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.v = Vcsim("roce", 8986, "--inventory", inventory("roce-passthrough.yaml"))
        cls.inv0 = cls.v.show("inventory")  # before any test adds to it

    @classmethod
    def tearDownClass(cls):
        cls.v.stop()

    def setUp(self):
        self.v.faults(None)

    def test_inventory_is_the_specs(self):
        self.assertEqual(self.inv0, {
            "ClusterComputeResource": ["gpu"], "Datacenter": ["DC0"], "Datastore": ["LocalDS_0"],
            "DistributedVirtualPortgroup": [], "DistributedVirtualSwitch": [],
            "HostSystem": ["esx0%d" % i for i in range(1, 9)],
            "Network": ["VM Network", "rdma-net"],
            "Template": ["ubuntu-22.04-template"], "VirtualMachine": []})

    def test_template(self):
        t = self.v.show("show", "ubuntu-22.04-template")
        # EFI: the spec's VMs cloned from it pass GPUs through (lab_spec.py)
        self.assertEqual((t["template"], t["firmware"], t["cpus"], t["memory_mb"], t["host"], t["power"]),
                         (True, "efi", 2, 4096, "esx01", "poweredOff"))
        self.assertEqual([d["type"] for d in t["devices"]], TEMPLATE_DEVICES)
        self.assertEqual(t["devices"][-1]["network"], "VM Network")
        self.assertEqual(t["extra_config_entries"], [["govcsim", "TRUE"]])

    def test_vgpu_hotmigrate_setting(self):
        # a vCenter 6.7 U1 or later: vgpu.hotmigrate.enabled exists, off, a boolean
        self.assertEqual(self.v.show("option", "vgpu.hotmigrate.enabled"),
                         {"key": "vgpu.hotmigrate.enabled", "value": "false", "type": "boolean"})

    def test_hosts_have_the_specs_hardware(self):
        for i in range(1, 9):
            h = self.v.show("host", "esx0%d" % i)
            self.assertEqual((h["cluster"], h["version"], h["build"]), ("gpu", "8.0.2", "22380479"))
            self.assertEqual(sim_devices(h), [V100_32GB, CX5_ROCE])
            self.assertEqual(h["passthru"], [
                {"type": "HostPciPassthruInfo", "id": "0000:3b:00.0", "dependentDevice": "",
                 "passthruEnabled": "true", "passthruCapable": "true", "passthruActive": "true"},
                {"type": "HostSriovInfo", "id": "0000:5e:00.0", "dependentDevice": "",
                 "passthruEnabled": "false", "passthruCapable": "true", "passthruActive": "false",
                 "sriovEnabled": "true", "sriovCapable": "true", "sriovActive": "true",
                 "numVirtualFunctionRequested": "4", "numVirtualFunction": "4",
                 "maxVirtualFunctionSupported": "127"}])
            self.assertEqual(h["vgpu_types"], [])
            self.assertEqual(h["pnics"][-1], {"device": "vmnic4", "pci": "0000:5e:00.0", "driver": "nmlx5_core"})
            self.assertEqual(h["datastores"], ["LocalDS_0"])
            self.assertEqual(h["networks"], ["VM Network", "rdma-net"])

    def test_query_config_target_lists_the_gpu_and_the_pf(self):
        h = self.v.show("host", "esx03")
        t = self.v.show("config-target", "esx03")
        self.assertEqual(t["pciPassthrough"], [{"_type": "VirtualMachinePciPassthroughInfo",
                                                "name": "0000:3b:00.0", "pciDevice": V100_32GB,
                                                "systemId": h["system_uuid"]}])
        self.assertEqual(t["sriov"], [{"name": "0000:5e:00.0", "pciDevice": CX5_ROCE,
                                       "systemId": h["system_uuid"], "virtualFunction": "false",
                                       "pnic": "vmnic4"}])
        self.assertEqual(t["sharedGpuPassthroughTypes"], [])
        self.assertEqual(t["network"], ["VM Network", "rdma-net"])
        self.assertEqual(t["datastore"], ["LocalDS_0"])
        self.assertNotEqual(h["system_uuid"], self.v.show("host", "esx04")["system_uuid"])

    def test_clone_lands_on_its_host_with_its_config_and_devices(self):
        self.v.clone("worker-02", "esx02", "<numCPUs>16</numCPUs><memoryMB>131072</memoryMB>"
                     '<extraConfig><key>pciPassthru.use64bitMMIO</key><value xsi:type="xsd:string">TRUE</value></extraConfig>'
                     "<firmware>efi</firmware><memoryReservationLockedToMax>true</memoryReservationLockedToMax>",
                     power_on=False)
        vm = self.v.show("show", "worker-02")
        self.assertEqual((vm["host"], vm["power"], vm["cpus"], vm["memory_mb"], vm["firmware"],
                          vm["reservation_locked"], vm["template"]),
                         ("esx02", "poweredOff", 16, 131072, "efi", True, False))
        self.assertEqual(vm["extra_config_entries"], [["govcsim", "TRUE"], ["pciPassthru.use64bitMMIO", "TRUE"]])
        self.assertIn(vm["moref"], [e for e in self.vm_list("esx02")])
        self.assertNotIn(vm["moref"], self.vm_list("esx01"))

        system_id = self.v.show("host", "esx02")["system_uuid"]
        self.v.c.reconfigure(vm["moref"], (
            '<deviceChange><operation>add</operation><device xsi:type="VirtualPCIPassthrough"><key>-100</key>'
            '<backing xsi:type="VirtualPCIPassthroughDeviceBackingInfo"><deviceName>GV100GL [Tesla V100 PCIe 32GB]</deviceName>'
            '<useAutoDetect>false</useAutoDetect><id>0000:3b:00.0</id><deviceId>1db6</deviceId>'
            '<systemId>%s</systemId><vendorId>4318</vendorId></backing></device></deviceChange>'
            '<deviceChange><operation>add</operation><device xsi:type="VirtualSriovEthernetCard"><key>-101</key>'
            '<backing xsi:type="VirtualEthernetCardNetworkBackingInfo"><deviceName>rdma-net</deviceName>'
            '<useAutoDetect>false</useAutoDetect></backing><allowGuestOSMtuChange>true</allowGuestOSMtuChange>'
            '<sriovBacking><physicalFunctionBacking><deviceName></deviceName><useAutoDetect>false</useAutoDetect>'
            '<id>0000:5e:00.0</id></physicalFunctionBacking></sriovBacking></device></deviceChange>') % system_id)
        vm = self.v.show("show", "worker-02")
        gpu = [d for d in vm["devices"] if d["type"] == "VirtualPCIPassthrough"]
        self.assertEqual(len(gpu), 1)
        b = gpu[0]["backing"]
        self.assertEqual((b["type"], b["id"], b["deviceId"], b["vendorId"], b["systemId"]),
                         ("VirtualPCIPassthroughDeviceBackingInfo", "0000:3b:00.0", "1db6", 4318, system_id))
        vf = [d for d in vm["devices"] if d["type"] == "VirtualSriovEthernetCard"]
        self.assertEqual([(d["sriov_pf"], d["network"]) for d in vf], [("0000:5e:00.0", "rdma-net")])

    def vm_list(self, host):
        p = self.v.c.props("HostSystem", self.v.ref("HostSystem", host), ["vm"])
        return [e.text for e in ve.kids(p, "vm")]

    def test_extra_config_replaces_and_removes_as_vcenter_does(self):
        self.v.clone("worker-05", "esx05", power_on=True)
        vm = self.v.ref("VirtualMachine", "worker-05")
        self.v.c.reconfigure(vm, "".join(
            '<extraConfig><key>%s</key><value xsi:type="xsd:string">%s</value></extraConfig>' % kv
            for kv in (("a", "1"), ("b", "2"), ("c", "3"))))
        self.v.c.reconfigure(vm, "".join(
            '<extraConfig><key>%s</key><value xsi:type="xsd:string">%s</value></extraConfig>' % kv
            for kv in (("b", "20"), ("a", ""), ("d", "4"), ("d", "40"))))
        self.assertEqual(self.v.show("show", "worker-05")["extra_config_entries"],
                         [["govcsim", "TRUE"], ["b", "20"], ["c", "3"], ["d", "40"]])
        r = self.v.edit("worker-05", "set-extra", "c", "")
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        r = self.v.edit("worker-05", "set-extra", "b", "21")
        self.assertEqual(self.v.show("show", "worker-05")["extra_config"],
                         {"govcsim": "TRUE", "b": "21", "d": "40"})

    def test_by_hand_edits(self):
        self.v.clone("worker-06", "esx06", power_on=True)
        for words in (("power", "off"), ("firmware", "efi"), ("reservation-lock", "true"), ("cpus", "8"),
                      ("remove-device", "VirtualVmxnet3")):
            r = self.v.edit("worker-06", *words)
            self.assertEqual((r.returncode, r.stderr), (0, ""), words)
        vm = self.v.show("show", "worker-06")
        self.assertEqual((vm["power"], vm["firmware"], vm["reservation_locked"], vm["cpus"]),
                         ("poweredOff", "efi", True, 8))
        self.assertEqual([d for d in vm["devices"] if d["type"] == "VirtualVmxnet3"], [])
        r = self.v.edit("worker-06", "remove-device", "VirtualVmxnet3")
        self.assertEqual((r.returncode, r.stderr),
                         (1, "vcsim_edit: NotFound: VM 'worker-06' has no device labelled or typed 'VirtualVmxnet3'\n"))
        r = self.v.edit("show", "no-such-vm")
        self.assertEqual((r.returncode, r.stderr), (1, "vcsim_edit: NotFound: no VirtualMachine named 'no-such-vm'\n"))

    def test_injected_fault_fails_the_task_with_its_message_and_changes_nothing(self):
        self.v.clone("worker-03", "esx03", "<firmware>efi</firmware>")
        self.v.faults({"ReconfigVM_Task": {"worker-03": {
            "fault": "InvalidDeviceSpec", "message": "Invalid configuration for device '0'."}}})
        r = self.v.edit("worker-03", "firmware", "bios")
        self.assertEqual((r.returncode, r.stderr),
                         (1, "vcsim_edit: InvalidDeviceSpec: Invalid configuration for device '0'.\n"))
        self.assertEqual(self.v.show("show", "worker-03")["firmware"], "efi")
        # other VMs and other methods go through
        self.v.clone("worker-04", "esx04")
        self.assertEqual(self.v.edit("worker-04", "firmware", "efi").returncode, 0)
        self.assertEqual(self.v.edit("worker-03", "power", "on").returncode, 0)
        # the task as a client polls it
        vm = self.v.ref("VirtualMachine", "worker-03")
        t = self.v.c.call("ReconfigVM_Task", "VirtualMachine", vm, "<spec><numCPUs>4</numCPUs></spec>")[0].text
        info = ve.to_py(self.v.c.props("Task", t, ["info"])["info"])
        self.assertEqual((info["state"], info["entityName"], info["error"]["fault"]["_type"],
                          info["error"]["localizedMessage"]),
                         ("error", "worker-03", "InvalidDeviceSpec", "Invalid configuration for device '0'."))
        # "times": the first N calls only; a non-task method gets a SOAP fault
        self.v.faults({"PowerOffVM_Task": {"*": {"fault": "InvalidState", "message": "busy", "times": 1}},
                       "CurrentTime": {"*": {"fault": "NotSupported", "message": "no clock"}}})
        r = self.v.edit("worker-03", "power", "off")
        self.assertEqual((r.returncode, r.stderr), (1, "vcsim_edit: InvalidState: busy\n"))
        self.assertEqual(self.v.show("show", "worker-03")["power"], "poweredOn")
        self.assertEqual(self.v.edit("worker-03", "power", "off").returncode, 0)
        with self.assertRaises(ve.Fault) as e:
            self.v.c.call("CurrentTime", "ServiceInstance", "ServiceInstance")
        self.assertEqual((e.exception.kind, e.exception.message), ("NotSupported", "no clock"))
        self.v.faults(None)
        self.assertEqual(self.v.edit("worker-03", "firmware", "bios").returncode, 0)
        self.assertEqual(self.v.show("show", "worker-03")["firmware"], "bios")

    def test_unauthenticated_call_is_refused_not_injected(self):
        self.v.faults({"ReconfigVM_Task": {"*": {"fault": "InvalidDeviceSpec", "message": "x"}}})
        c = ve.Client(self.v.url, self.v.ca)
        with self.assertRaises(ve.Fault) as e:
            c.call("ReconfigVM_Task", "VirtualMachine", self.v.ref("VirtualMachine", "ubuntu-22.04-template"),
                   "<spec><numCPUs>4</numCPUs></spec>")
        c.close()
        self.assertEqual(e.exception.kind, "NotAuthenticated")


class VgpuPvrdma(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.v = Vcsim("vgpu", 8987, "--inventory", inventory("vgpu-pvrdma.yaml"))
        cls.inv0 = cls.v.show("inventory")

    @classmethod
    def tearDownClass(cls):
        cls.v.stop()

    def test_inventory_is_the_specs(self):
        self.assertEqual(self.inv0, {
            "ClusterComputeResource": ["gpu"], "Datacenter": ["DC0"], "Datastore": ["datastore1"],
            "DistributedVirtualPortgroup": [], "DistributedVirtualSwitch": [],
            "HostSystem": ["esx0%d" % i for i in range(1, 6)], "Network": ["VM Network"],
            "Template": ["ubuntu-22.04-template"], "VirtualMachine": []})

    def test_a_clone_gets_its_templates_firmware(self):
        # vCenter copies the source's firmware; vcsim 0.24 starts a clone
        # from bios (fidelity.go gives it the template's: efi here)
        self.v.clone("plain-01", "esx05")
        self.assertEqual(self.v.show("show", "plain-01")["firmware"], "efi")

    def test_vgpu_hosts_offer_the_t4_types_and_pass_nothing_through(self):
        for i in range(1, 5):
            h = self.v.show("host", "esx0%d" % i)
            self.assertEqual(sim_devices(h), [T4, CX5_PVRDMA])
            self.assertEqual(h["vgpu_types"], T4_TYPES)
            self.assertEqual([(p["type"], p["id"], p["passthruEnabled"], p["passthruActive"]) for p in h["passthru"]],
                             [("HostPciPassthruInfo", "0000:3b:00.0", "false", "false"),
                              ("HostPciPassthruInfo", "0000:d8:00.0", "false", "false")])
            self.assertEqual(h["pnics"][-1], {"device": "vmnic5", "pci": "0000:d8:00.0", "driver": "nmlx5_core"})
            t = self.v.show("config-target", "esx0%d" % i)
            self.assertEqual((t["pciPassthrough"], t["sriov"]), ([], []))
            self.assertEqual(t["sharedGpuPassthroughTypes"], [{"name": p, "vgpu": p} for p in T4_TYPES])
        h = self.v.show("host", "esx05")
        self.assertEqual((sim_devices(h), h["passthru"], h["vgpu_types"]), ([], [], []))
        self.assertEqual(self.v.show("config-target", "esx05")["sharedGpuPassthroughTypes"], [])

    def test_distributed_switch_keeps_mtu_and_pnics(self):
        c = self.v.c
        netf = [r for r, v in c.all("Folder") if v["name"].text == "network"][0]

        def member(op, host, nic):
            return ('<host><operation>%s</operation><host type="HostSystem">%s</host>'
                    '<backing xsi:type="DistributedVirtualSwitchHostMemberPnicBacking"><pnicSpec>'
                    '<pnicDevice>%s</pnicDevice></pnicSpec></backing></host>' % (op, c.find("HostSystem", host), nic))
        r = c.call("CreateDVS_Task", "Folder", netf,
                   '<spec><configSpec xsi:type="VMwareDVSConfigSpec"><name>dvs-rdma</name>%s'
                   '<maxMtu>9000</maxMtu></configSpec></spec>'
                   % "".join(member("add", "esx0%d" % i, "vmnic5") for i in range(1, 5)))
        c.wait(r[0].text)
        d = self.v.show("dvs", "dvs-rdma")
        self.assertEqual((d["type"], d["max_mtu"], d["config_version"]), ("VmwareDistributedVirtualSwitch", "9000", "1"))
        self.assertEqual(d["host_members"], ["esx01", "esx02", "esx03", "esx04"])
        self.assertEqual(d["config_hosts"], [{"host": "esx0%d" % i, "pnics": ["vmnic5"]} for i in range(1, 5)])
        task = c.props("Task", r[0].text, ["info.result"])["info.result"]
        self.assertEqual((task.get("type"), task.text), ("VmwareDistributedVirtualSwitch", d["moref"]))

        c.task("AddDVPortgroup_Task", "VmwareDistributedVirtualSwitch", d["moref"],
               '<spec><name>pvrdma-pg</name><numPorts>8</numPorts><defaultPortConfig xsi:type="VMwareDVSPortSetting">'
               '<vlan xsi:type="VmwareDistributedVirtualSwitchVlanIdSpec"><inherited>false</inherited>'
               '<vlanId>100</vlanId></vlan></defaultPortConfig><type>earlyBinding</type></spec>')
        c.task("ReconfigureDvs_Task", "VmwareDistributedVirtualSwitch", d["moref"],
               '<spec xsi:type="VMwareDVSConfigSpec"><configVersion>1</configVersion>%s%s</spec>'
               % (member("edit", "esx01", "vmnic4"), member("remove", "esx04", "vmnic5")))
        d = self.v.show("dvs", "dvs-rdma")
        self.assertEqual((d["max_mtu"], d["config_version"]), ("9000", "2"))
        self.assertEqual(d["host_members"], ["esx01", "esx02", "esx03"])
        self.assertEqual(d["config_hosts"], [{"host": "esx01", "pnics": ["vmnic4"]},
                                             {"host": "esx02", "pnics": ["vmnic5"]},
                                             {"host": "esx03", "pnics": ["vmnic5"]}])
        self.assertEqual([(p["name"], p["vlan"]) for p in d["portgroups"]][1:], [("pvrdma-pg", "100")])
        c.task("ReconfigureDvs_Task", "VmwareDistributedVirtualSwitch", d["moref"],
               '<spec xsi:type="VMwareDVSConfigSpec"><configVersion>2</configVersion><maxMtu>4000</maxMtu></spec>')
        d = self.v.show("dvs", "dvs-rdma")
        self.assertEqual((d["max_mtu"], d["config_version"]), ("4000", "3"))
        self.assertIn("pvrdma-pg", self.v.show("host", "esx02")["networks"])

        # a worker with its vGPU and a PVRDMA adapter on the port group
        pg = [p for p in d["portgroups"] if p["name"] == "pvrdma-pg"][0]["key"]
        uuid = ve.to_py(c.props("VmwareDistributedVirtualSwitch", d["moref"], ["uuid"])["uuid"])
        self.v.clone("worker-02", "esx02", "<numCPUs>8</numCPUs><memoryMB>65536</memoryMB><firmware>efi</firmware>")
        c.reconfigure(c.find("VirtualMachine", "worker-02"), (
            '<deviceChange><operation>add</operation><device xsi:type="VirtualPCIPassthrough"><key>-100</key>'
            '<backing xsi:type="VirtualPCIPassthroughVmiopBackingInfo"><vgpu>grid_t4-16c</vgpu></backing>'
            '</device></deviceChange>'
            '<deviceChange><operation>add</operation><device xsi:type="VirtualVmxnet3Vrdma"><key>-101</key>'
            '<backing xsi:type="VirtualEthernetCardDistributedVirtualPortBackingInfo"><port>'
            '<switchUuid>%s</switchUuid><portgroupKey>%s</portgroupKey></port></backing>'
            '<deviceProtocol>rocev2</deviceProtocol></device></deviceChange>') % (uuid, pg))
        vm = self.v.show("show", "worker-02")
        self.assertEqual((vm["host"], vm["cpus"], vm["memory_mb"], vm["firmware"]), ("esx02", 8, 65536, "efi"))
        vgpu = [dv for dv in vm["devices"] if dv["type"] == "VirtualPCIPassthrough"]
        self.assertEqual([(x["backing"]["type"], x["backing"]["vgpu"]) for x in vgpu],
                         [("VirtualPCIPassthroughVmiopBackingInfo", "grid_t4-16c")])
        rdma = [dv for dv in vm["devices"] if dv["type"] == "VirtualVmxnet3Vrdma"]
        self.assertEqual([(x["deviceProtocol"], x["portgroup"]) for x in rdma], [("rocev2", "pvrdma-pg")])
        # only the VM's host must be in the switch (esx05 is not, as in the spec) ...
        self.assertEqual(self.v.show("dvs", "dvs-rdma")["host_members"], ["esx01", "esx02", "esx03"])
        # ... and a VM on a host outside it cannot use the port group
        self.v.clone("k8s-master", "esx05")
        with self.assertRaises(ve.Fault) as e:
            c.reconfigure(c.find("VirtualMachine", "k8s-master"), (
                '<deviceChange><operation>add</operation><device xsi:type="VirtualVmxnet3Vrdma"><key>-101</key>'
                '<backing xsi:type="VirtualEthernetCardDistributedVirtualPortBackingInfo"><port>'
                '<switchUuid>%s</switchUuid><portgroupKey>%s</portgroupKey></port></backing>'
                '<deviceProtocol>rocev2</deviceProtocol></device></deviceChange>') % (uuid, pg))
        self.assertEqual(e.exception.kind, "InvalidArgument")

        # the PVRDMA vmknic (vnic.go): AddVirtualNic on a distributed port of a member host
        def add_vnic(host, portgroup="", key=pg, ip="192.168.10.22"):
            ns = ve.to_py(c.props("HostSystem", c.find("HostSystem", host),
                                  ["configManager.networkSystem"])["configManager.networkSystem"])
            r = c.call("AddVirtualNic", "HostNetworkSystem", ns,
                       '<portgroup>%s</portgroup><nic><ip><dhcp>false</dhcp><ipAddress>%s</ipAddress>'
                       '<subnetMask>255.255.255.0</subnetMask></ip><distributedVirtualPort>'
                       '<switchUuid>%s</switchUuid><portgroupKey>%s</portgroupKey>'
                       '</distributedVirtualPort></nic>' % (portgroup, ip, uuid, key))
            return r[0].text
        self.assertEqual(add_vnic("esx02"), "vmk1")
        self.assertEqual(add_vnic("esx02", ip="192.168.10.32"), "vmk2")  # the lowest free vmkN
        self.assertEqual(self.v.show("vnics", "esx02")[1:], [
            {"device": "vmk1", "dhcp": "false", "ip": "192.168.10.22", "mask": "255.255.255.0",
             "switch": "dvs-rdma", "portgroup": "pvrdma-pg"},
            {"device": "vmk2", "dhcp": "false", "ip": "192.168.10.32", "mask": "255.255.255.0",
             "switch": "dvs-rdma", "portgroup": "pvrdma-pg"}])
        self.assertEqual([v["device"] for v in self.v.show("vnics", "esx03")], ["vmk0"])
        for host, portgroup, key, kind in (("esx05", "", pg, "InvalidArgument"),       # not a member
                                           ("esx02", "", "dvportgroup-999", "InvalidArgument"),
                                           ("esx02", "VM Network", pg, "NotSupported")):
            with self.assertRaises(ve.Fault) as e:
                add_vnic(host, portgroup, key)
            self.assertEqual(e.exception.kind, kind, (host, portgroup, key))
        r = self.v.edit("set-vnic-ip", "esx02", "vmk1", "10.0.0.5", "255.255.0.0")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual([(v["ip"], v["mask"]) for v in self.v.show("vnics", "esx02")[1:]],
                         [("10.0.0.5", "255.255.0.0"), ("192.168.10.32", "255.255.255.0")])
        r = self.v.edit("set-vnic-ip", "esx02", "vmk9", "10.0.0.5", "255.255.0.0")
        self.assertEqual((r.returncode, r.stderr.split(":")[1].strip()), (1, "NotFound"))


class DefaultModel(unittest.TestCase):
    """Without -inventory: vcsim's default model, -host-gpus as before."""

    @classmethod
    def setUpClass(cls):
        cls.v = Vcsim("default", 8988, "--host-gpus", os.path.join(HERE, "host-gpus.json"))

    @classmethod
    def tearDownClass(cls):
        cls.v.stop()

    def test_default_model_and_host_gpus(self):
        inv = self.v.show("inventory")
        self.assertEqual(inv["HostSystem"], ["DC0_C0_H0", "DC0_C0_H1", "DC0_C0_H2", "DC0_H0"])
        self.assertEqual(len(inv["VirtualMachine"]), 4)
        t = self.v.show("config-target", "DC0_C0_H0")
        self.assertEqual([(p["name"], p["pciDevice"]["id"]) for p in t["pciPassthrough"]],
                         [("0000:3b:00.0", "0000:3b:00.0")])
        t = self.v.show("config-target", "DC0_H0")
        self.assertEqual(([p["vgpu"] for p in t["sharedGpuPassthroughTypes"]], t["pciPassthrough"]),
                         (["grid_t4-1q", "grid_t4-16c", "grid_t4-8c"], []))


if __name__ == "__main__":
    unittest.main(verbosity=2)
