#!/usr/bin/python3
"""test_esxi_sim - exact outputs of the simulated ESXi shell.

Runs tests/sim/dispatch the way the lab sshd does (SSH_CONNECTION names the
dialled address, SSH_ORIGINAL_COMMAND the command) against a private lab
directory, without sshd: the transport is covered by tests/unit/net.
Expected texts follow shared/REAL-FORMATS.md section A; docs/lab.md lists
what is verified there and what the simulator assumes.
"""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
DISPATCH = os.path.join(HERE, "dispatch")
NVD_AIE = "/vmfs/volumes/ds1/NVD-AIE-800_525.105.14-1OEM.800.1.0.20613240_21517574.zip"
NVD_AIE_ID = "NVIDIA_bootbank_NVD-AIE_ESXi_8.0.0_Driver_525.105.14-1OEM.800.1.0.20613240"
XML_HEAD = ('<?xml version="1.0" encoding="utf-8"?>\n'
            '<output xmlns="http://www.vmware.com/Products/ESX/5.0/esxcli">\n<root>\n')
XML_TAIL = "</root>\n</output>\n"


def esxi_sim_script():
    sys.path.insert(0, HERE)
    import esxi_sim
    return esxi_sim.MFT_SCRIPT


class Lab:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="gc-simtest-")
        os.makedirs(os.path.join(self.dir, "hosts", "esxi-1"))
        os.makedirs(os.path.join(self.dir, "hosts", "esxi-7"))
        os.makedirs(os.path.join(self.dir, "hosts", "esxi-67"))
        os.makedirs(os.path.join(self.dir, "hosts", "esxi-70"))
        with open(os.path.join(self.dir, "inventory"), "w") as f:
            f.write("# test inventory\n127.0.0.11 esxi esxi-1 version=8.0.2\n"
                    "127.0.0.17 esxi esxi-7 version=7.0.3\n"
                    "127.0.0.16 esxi esxi-67 version=6.7.0\n"
                    "127.0.0.18 esxi esxi-70 version=7.0.0\n"
                    "127.0.0.100 onyx switch-1\n")

    def run(self, command, address="127.0.0.11", env=None):
        e = {"PATH": "/usr/bin:/bin", "GC_LAB_DIR": self.dir,
             "SSH_CONNECTION": "127.0.0.1 40000 %s 2222" % address,
             "SSH_ORIGINAL_COMMAND": command}
        e.update(env or {})
        p = subprocess.run([DISPATCH], env=e, capture_output=True, text=True, timeout=30)
        return p.returncode, p.stdout, p.stderr

    def host_file(self, host, leaf):
        return os.path.join(self.dir, "hosts", host, leaf)

    def control(self, host, data):
        with open(self.host_file(host, "control.json"), "w") as f:
            json.dump(data, f)

    def close(self):
        shutil.rmtree(self.dir)


class SimTest(unittest.TestCase):
    def setUp(self):
        self.lab = Lab()

    def tearDown(self):
        self.lab.close()

    def ok(self, command, address="127.0.0.11"):
        rc, out, err = self.lab.run(command, address)
        self.assertEqual((rc, err), (0, ""), "command %r" % command)
        return out

    def fails(self, command, address="127.0.0.11"):
        rc, out, err = self.lab.run(command, address)
        self.assertNotEqual(rc, 0)
        self.assertEqual(out, "")
        return rc, err


class TestFormats(SimTest):
    def test_maintenance_mode_all_formats(self):
        self.assertEqual(self.ok("esxcli system maintenanceMode get"), "Disabled\n")
        self.assertEqual(self.ok("esxcli --formatter=xml system maintenanceMode get"),
                         XML_HEAD + "   <string>Disabled</string>\n" + XML_TAIL)
        self.assertEqual(self.ok("esxcli --formatter=keyvalue system maintenanceMode get"),
                         "string=Disabled\n")
        self.assertEqual(self.ok("esxcli system maintenanceMode set -e true"), "")
        self.assertEqual(self.ok("esxcli system maintenanceMode get"), "Enabled\n")
        self.assertEqual(self.fails("esxcli system maintenanceMode set --enable=true"),
                         (1, "Maintenance mode is already enabled.\n"))
        self.assertEqual(self.fails("esxcli system maintenanceMode set"),
                         (1, "Error: Missing required parameter -e|--enable\n"))

    def test_graphics_host(self):
        self.assertEqual(self.ok("esxcli graphics host get"),
                         "   Default Graphics Type: Shared\n"
                         "   Shared Passthru Assignment Policy: Performance\n")
        self.ok("esxcli graphics host set --default-type SharedPassthru")
        self.assertEqual(self.ok("esxcli --formatter=xml graphics host get"),
                         XML_HEAD +
                         '   <structure typeName="HostGraphicsConfig">\n'
                         '      <field name="DefaultGraphicsType">\n'
                         '         <string>SharedPassthru</string>\n'
                         '      </field>\n'
                         '      <field name="SharedPassthruAssignmentPolicy">\n'
                         '         <string>Performance</string>\n'
                         '      </field>\n'
                         '   </structure>\n' + XML_TAIL)
        self.assertEqual(self.ok("esxcli --formatter=keyvalue graphics host get"),
                         "HostGraphicsConfig.DefaultGraphicsType.string=SharedPassthru\n"
                         "HostGraphicsConfig.SharedPassthruAssignmentPolicy.string=Performance\n")

    def test_graphics_device_list_block(self):
        out = self.ok("esxcli graphics device list")
        self.assertEqual(out.split("\n\n")[0],
                         "0000:af:00.0\n"
                         "   Vendor Name: NVIDIA Corporation\n"
                         "   Device Name: GA100 [A100 PCIe 40GB]\n"
                         "   Module Name: None\n"
                         "   Graphics Type: Basic\n"
                         "   Memory Size in KB: 0\n"
                         "   Number of VMs: 0")

    def test_passthru_table_xml_and_pending(self):
        self.assertEqual(self.ok("esxcli hardware pci pcipassthru list"),
                         "Device ID     Enabled\n"
                         "------------  -------\n"
                         "0000:18:00.0    false\n"
                         "0000:3b:00.0    false\n"
                         "0000:3b:00.1    false\n"
                         "0000:af:00.0    false\n"
                         "0000:d8:00.0    false\n")
        self.assertEqual(self.ok("esxcli hardware pci pcipassthru set -d 0000:af:00.0 -e true"), "")
        self.assertEqual(self.fails("esxcli hardware pci pcipassthru set -d 0000:af:00.0 -e on"),
                         (1, "Unable to configure the PCI device: Device owner is already "
                             "configured to passthru.\n"))
        kv = self.ok("esxcli --formatter=keyvalue hardware pci pcipassthru list")
        self.assertIn("structure[3].PCIPassthruDevice.DeviceID.string=0000:af:00.0\n"
                      "structure[3].PCIPassthruDevice.Enabled.boolean=true\n", kv)
        # configured at once, current owner only after the reboot
        pci = self.ok("esxcli hardware pci list")
        gpu = [b for b in pci.split("\n\n") if b.startswith("0000:af:00.0")][0]
        self.assertIn("   Configured Owner: VM Passthru\n   Current Owner: VMkernel\n", gpu)
        self.assertIn("   Module Name: None\n", gpu)
        self.lab.control("esxi-1", {"reboot_seconds": 0})
        self.assertEqual(self.lab.run("reboot"), (255, "", ""))
        pci = self.ok("esxcli hardware pci list")
        gpu = [b for b in pci.split("\n\n") if b.startswith("0000:af:00.0")][0]
        self.assertIn("   Configured Owner: VM Passthru\n   Current Owner: VM Passthru\n", gpu)
        self.assertIn("   Module Name: pciPassthru\n", gpu)
        # -a applies at once
        self.ok("esxcli hardware pci pcipassthru set -d 0000:d8:00.0 -e true -a")
        pci = self.ok("esxcli hardware pci list")
        gpu = [b for b in pci.split("\n\n") if b.startswith("0000:d8:00.0")][0]
        self.assertIn("   Current Owner: VM Passthru\n", gpu)

    def test_unknown_command_and_namespace(self):
        self.assertEqual(self.fails("esxcli graphics host refresh"),
                         (1, "Error: Unknown command or namespace graphics host refresh\n"))
        self.assertEqual(self.fails("esxcfg-foo -l"), (127, "sh: esxcfg-foo: not found\n"))
        self.assertEqual(self.fails("esxcli --formatter=json system maintenanceMode get"),
                         (1, "Error: Invalid formatter 'json'. Valid formatters are: csv, "
                             "keyvalue, xml\n"))

    def test_module_parameters(self):
        self.ok('esxcli system module parameters set -m nmlx5_core '
                '-p "pfctx=0x08 pfcrx=0x08 trust_state=2 max_vfs=4,4"')
        self.assertEqual(
            self.ok("esxcli system module parameters list -m nmlx5_core"),
            "Name                 Type           Value  Description\n"
            "-------------------  -------------  -----  ------------------------------------------------------\n"
            "DRSS                 int                   Number of hardware queues for Default Queue (DEFQ) RSS\n"
            "ecn                  int                   Enables the ECN feature\n"
            "max_vfs              array of uint  4,4    Number of PCI VFs to initialize\n"
            "pfcrx                int            0x08   Priority based Flow Control policy on RX\n"
            "pfctx                int            0x08   Priority based Flow Control policy on TX\n"
            "trust_state          uint           2      Port policy to calculate the switch priority\n"
            "supported_num_ports  int                   Maximum number of supported ports\n")
        # -p replaces the whole string
        self.ok("esxcli system module parameters set -m nmlx5_core -p max_vfs=8,8")
        kv = self.ok("esxcli --formatter=keyvalue system module parameters list -m nmlx5_core")
        self.assertIn("structure[2].ModuleParameter.Value.string=8,8\n", kv)
        self.assertIn("structure[3].ModuleParameter.Value.string=\n", kv)

    def test_sriovnic_list_after_the_reboot_and_only_with_sriov_firmware(self):
        none = self.ok("esxcli network sriovnic list")
        self.assertEqual(none.splitlines()[0].split(), ["Name", "PCI", "Device", "Driver", "Link",
                                                        "Speed", "Duplex", "MAC", "Address",
                                                        "MTU", "Description"])
        self.assertEqual(len(none.splitlines()), 2)  # titles and rule: no VFs yet
        self.ok("esxcli system maintenanceMode set -e true")
        self.ok("esxcli system module parameters set -m nmlx5_core -p max_vfs=8,8")
        self.assertEqual(len(self.ok("esxcli network sriovnic list").splitlines()), 2)
        # port 2's firmware allows 4 VFs only: it gets none
        self.lab.control("esxi-1", {"reboot_seconds": 0,
                                    "sriov_firmware": {"0000:3b:00.1": {"SRIOV_EN": 1,
                                                                        "NUM_OF_VFS": 4}}})
        self.assertEqual(self.lab.run("reboot"), (255, "", ""))
        xml = self.ok("esxcli --formatter=xml network sriovnic list")
        self.assertIn('<structure typeName="SriovNic">', xml)
        self.assertIn('<field name="PCIDevice">\n            <string>0000:3b:00.0</string>', xml)
        self.assertNotIn("0000:3b:00.1", xml)
        rows = self.ok("esxcli network sriovnic list").splitlines()[2:]
        self.assertEqual([r.split()[:3] for r in rows], [["vmnic4", "0000:3b:00.0", "nmlx5_core"]])

    def test_mft_stand_in(self):
        # no MFT: not found, and the driver's snippet says none
        self.assertEqual(self.lab.run("/opt/mellanox/bin/mst status -vv")[0], 127)
        self.assertEqual(self.ok("sh -c '%s' mft T0K" % esxi_sim_script()), "@@mft:T0K:none\n")
        self.lab.control("esxi-1", {"reboot_seconds": 0, "mft": True,
                                    "sriov_firmware": {"0000:3b:00.0": {"SRIOV_EN": 0,
                                                                        "NUM_OF_VFS": 0}}})
        mst = self.ok("/opt/mellanox/bin/mst status -vv").splitlines()
        self.assertEqual(mst[:2], ["PCI devices:", "------------"])
        self.assertEqual(mst[2].split(), ["DEVICE_TYPE", "MST", "PCI", "RDMA", "NET", "NUMA"])
        self.assertEqual([l.split() for l in mst[3:]],
                         [["ConnectX6(rev:0)", "mt4123_pciconf0", "3b:00.0", "net-vmnic4"],
                          ["ConnectX6(rev:0)", "mt4123_pciconf0.1", "3b:00.1", "net-vmnic5"]])
        q = "/opt/mellanox/bin/mlxconfig -d mt4123_pciconf0 q SRIOV_EN NUM_OF_VFS"
        self.assertEqual([l.split() for l in self.ok(q).splitlines()[-2:]],
                         [["SRIOV_EN", "False(0)"], ["NUM_OF_VFS", "0"]])
        self.assertEqual(self.ok("/opt/mellanox/bin/mlxconfig -y -d mt4123_pciconf0 set SRIOV_EN=1 "
                                 "NUM_OF_VFS=4"),
                         "Applying... Done!\n-I- Please reboot machine to load new configurations.\n")
        # the next boot's values: q shows them at once, sriovnic list after a reboot
        self.assertEqual([l.split() for l in self.ok(q).splitlines()[-2:]],
                         [["SRIOV_EN", "True(1)"], ["NUM_OF_VFS", "4"]])
        self.ok("esxcli system maintenanceMode set -e true")
        self.ok("esxcli system module parameters set -m nmlx5_core -p max_vfs=4,4")
        self.assertEqual(self.lab.run("reboot"), (255, "", ""))
        rows = self.ok("esxcli network sriovnic list").splitlines()[2:]
        self.assertEqual([r.split()[1] for r in rows], ["0000:3b:00.0", "0000:3b:00.1"])

    def test_the_mft_query_writes_the_state_only_when_it_first_meets_a_device(self):
        self.lab.control("esxi-1", {"mft": True})
        state = self.lab.host_file("esxi-1", "state.json")
        snippet = "sh -c '%s' mft T0K" % esxi_sim_script()
        first = self.ok(snippet)
        self.assertIn("@@mft:T0K:dev:mt4123_pciconf0\n", first)
        with open(state) as f:  # the firmware settings it met, kept
            self.assertEqual(sorted(json.load(f)["mft_fw"]), ["0000:3b:00.0", "0000:3b:00.1"])
        before = os.stat(state)
        self.assertEqual(self.ok(snippet), first)
        after = os.stat(state)
        # an observation changes nothing: the file is not written again
        self.assertEqual((after.st_ino, after.st_mtime_ns), (before.st_ino, before.st_mtime_ns))

    def test_mft_snippet_equals_a_real_shell(self):
        # the simulator runs the driver's snippet as Python; a real sh
        # (dash here, busybox on ESXi) with mst and mlxconfig answering as the
        # simulator does must print the same
        self.lab.control("esxi-1", {"mft": True})
        simulated = self.ok("sh -c '%s' mft T0K" % esxi_sim_script())
        bindir = tempfile.mkdtemp(prefix="gc-mft-")
        try:
            for tool in ("mst", "mlxconfig"):
                path = os.path.join(bindir, tool)
                with open(path, "w") as f:
                    f.write('#!/bin/sh\nexec env SSH_ORIGINAL_COMMAND="/opt/mellanox/bin/%s $*" '
                            'GC_LAB_DIR=%s SSH_CONNECTION="127.0.0.1 40000 127.0.0.11 2222" %s\n'
                            % (tool, self.lab.dir, DISPATCH))
                os.chmod(path, 0o755)
            script = esxi_sim_script().replace("M=/opt/mellanox/bin", "M=" + bindir)
            real = subprocess.run(["/bin/sh", "-c", script, "mft", "T0K"], capture_output=True,
                                  text=True, timeout=60)
        finally:
            shutil.rmtree(bindir)
        self.assertEqual((real.returncode, real.stderr), (0, ""))
        self.assertIn("@@mft:T0K:dev:mt4123_pciconf0.1\n", real.stdout)
        self.assertEqual(real.stdout, simulated)

    def test_lease_snippets_equal_a_real_shell(self):
        # the driver's lease snippets (include/gc/esxi.h), run as Python by
        # the simulator and by a real sh (dash here, busybox on ESXi) whose
        # esxcli is the simulator's: the same words, status and lease after,
        # with no option, our lease, another apply's, and after a clear
        sys.path.insert(0, HERE)
        import esxi_sim
        read, clear = esxi_sim.LEASE_READ_SCRIPT, esxi_sim.LEASE_CLEAR_SCRIPT
        ours = "cluster=c;holder=a@b;pid=1;lock=0123456789abcdef;since=1;expires=2"
        theirs = ours.replace("0123456789abcdef", "fedcba9876543210")
        bindir = tempfile.mkdtemp(prefix="gc-lease-")
        try:
            path = os.path.join(bindir, "esxcli")
            with open(path, "w") as f:
                # each word quoted again for the simulator's shell (a lease
                # holds ';'), as sshd hands it the command line
                f.write('#!/usr/bin/python3\nimport os, shlex, sys\n'
                        'os.environ.update(SSH_ORIGINAL_COMMAND=shlex.join(["esxcli"] + sys.argv[1:]), '
                        'GC_LAB_DIR=%r, SSH_CONNECTION="127.0.0.1 40000 127.0.0.11 2222")\n'
                        'os.execv(%r, [%r])\n' % (self.lab.dir, DISPATCH, DISPATCH))
            os.chmod(path, 0o755)

            def both(script, *args):
                before, default = self.lease_now(), self.lease_default()
                sim = self.lab.run("sh -c %s lease %s" % (shlex.quote(script),
                                                          " ".join(shlex.quote(a) for a in args)))
                after_sim = self.lease_now()
                self.set_lease(before, default)
                real = subprocess.run(["/bin/sh", "-c", script, "lease"] + list(args), capture_output=True,
                                      text=True, timeout=60, env={"PATH": bindir + ":/usr/bin:/bin"})
                after_real = self.lease_now()
                self.assertEqual((real.returncode, real.stdout, real.stderr), sim)
                self.assertEqual(after_real, after_sim)
                return sim, after_sim

            self.set_lease(None)
            self.assertEqual(both(read, "T0K"), ((0, "@@lease:T0K:none\n", ""), None))
            self.assertEqual(both(clear, "0123456789abcdef"), ((0, "@@lease:none\n", ""), None))
            self.set_lease(theirs)
            (rc, out, err), after = both(read, "T0K")
            self.assertEqual((rc, err, after), (0, "", theirs))
            self.assertIn("<field name=\"StringValue\">\n            <string>%s</string>" % theirs, out)
            self.assertEqual(both(clear, "0123456789abcdef"), ((0, "@@lease:kept\n", ""), theirs))
            self.set_lease(ours)
            self.assertEqual(both(clear, "0123456789abcdef"), ((0, "@@lease:cleared\n", ""), "none"))
            # the take (the apply's observation when it expects changes):
            # written where there is no option, no lease or ours; another's
            # only read
            take, mine = esxi_sim.LEASE_TAKE_SCRIPT, ours.replace("since=1", "since=3")
            self.set_lease(None)
            self.assertEqual(both(take, "T0K", "0123456789abcdef", mine),
                             ((0, "@@lease:T0K:none\n@@lease:T0K:took\n", ""), mine))
            for held in ("none", ours):
                self.set_lease(held)
                (rc, out, err), after = both(take, "T0K", "0123456789abcdef", mine)
                self.assertEqual((rc, err, after), (0, "", mine))
                self.assertTrue(out.endswith("</output>\n@@lease:T0K:took\n"), out)
                self.assertIn("<string>%s</string>" % held, out)
            self.set_lease(theirs)
            (rc, out, err), after = both(take, "T0K", "0123456789abcdef", mine)
            self.assertEqual((rc, err, after), (0, "", theirs))
            self.assertNotIn("took", out)
            self.assertIn("<string>%s</string>" % theirs, out)
            # only the value counts, not the default an older apply's `add`
            # left: ours in the default, theirs in the value is theirs
            self.set_lease(theirs, default=ours)
            (rc, out, err), after = both(take, "T0K", "0123456789abcdef", mine)
            self.assertEqual((rc, err, after), (0, "", theirs))
            self.assertNotIn("took", out)
            self.assertEqual(both(clear, "0123456789abcdef"), ((0, "@@lease:kept\n", ""), theirs))
            self.set_lease("none", default=theirs)
            (rc, out, err), after = both(take, "T0K", "0123456789abcdef", mine)
            self.assertEqual((rc, err, after), (0, "", mine))
            self.assertTrue(out.endswith("@@lease:T0K:took\n"), out)
            self.set_lease(ours, default=theirs)
            self.assertEqual(both(clear, "0123456789abcdef"), ((0, "@@lease:cleared\n", ""), "none"))
            # the compare-and-set (a host's first changing exec, the plain
            # write of a lease): silent where it writes ours (no option, no
            # lease, ours); another's stops it, named on stderr, and stays
            cas = esxi_sim.LEASE_CAS_SCRIPT
            self.set_lease(None)
            self.assertEqual(both(cas, "T0K", "0123456789abcdef", mine), ((0, "", ""), mine))
            for held in ("none", ours):
                self.set_lease(held)
                self.assertEqual(both(cas, "T0K", "0123456789abcdef", mine), ((0, "", ""), mine))
            for default in ("", ours):
                self.set_lease(theirs, default=default)
                self.assertEqual(both(cas, "T0K", "0123456789abcdef", mine),
                                 ((1, "", "@@lease:T0K:held:%s\n" % theirs), theirs))
            self.set_lease("none", default=theirs)
            self.assertEqual(both(cas, "T0K", "0123456789abcdef", mine), ((0, "", ""), mine))
        finally:
            shutil.rmtree(bindir)

    def lease_default(self):
        with open(self.lab.host_file("esxi-1", "state.json")) as f:
            return json.load(f).get("advanced_defaults", {}).get("/UserVars/GpuclusterctlLease", "")

    def lease_now(self):
        with open(self.lab.host_file("esxi-1", "state.json")) as f:
            return json.load(f)["advanced"].get("/UserVars/GpuclusterctlLease")

    def set_lease(self, value, default=""):
        """The lease option as value (None: no option), with that default
        string value, in the host's state file."""
        self.ok("esxcli system settings advanced set -o /Net/FollowHardwareMac -i 0")  # written
        path = self.lab.host_file("esxi-1", "state.json")
        with open(path) as f:
            st = json.load(f)
        st["advanced"].pop("/UserVars/GpuclusterctlLease", None)
        st.setdefault("advanced_defaults", {}).pop("/UserVars/GpuclusterctlLease", None)
        if value is not None:
            st["advanced"]["/UserVars/GpuclusterctlLease"] = value
            st["advanced_defaults"]["/UserVars/GpuclusterctlLease"] = default
        with open(path, "w") as f:
            json.dump(st, f)

    def test_module_parameters_of_an_older_driver(self):
        # a driver release without ecn: not listed, and refused when set
        self.lab.control("esxi-1", {"nmlx5_without": ["ecn"]})
        listed = self.ok("esxcli --formatter=keyvalue system module parameters list -m nmlx5_core")
        self.assertNotIn("=ecn\n", listed)
        self.assertIn("structure[1].ModuleParameter.Name.string=max_vfs\n", listed)
        self.assertEqual(self.fails("esxcli system module parameters set -m nmlx5_core "
                                    "-p 'trust_state=2 ecn=1'"),
                         (1, "Unable to set module parameters: unknown parameter 'ecn' for "
                             "module nmlx5_core\n"))
        self.lab.control("esxi-1", {})

    def test_firewall_and_advanced(self):
        self.ok("esxcli network firewall ruleset set -r pvrdma -e true")
        self.assertEqual(self.ok("esxcli network firewall ruleset list -r pvrdma"),
                         "Name    Enabled\n------  -------\npvrdma     true\n")
        self.ok("esxcli system settings advanced set -o /Net/PVRDMAVmknic -s vmk1")
        self.assertEqual(self.ok("esxcli system settings advanced list -o /Net/PVRDMAVmknic"),
                         "   Path: /Net/PVRDMAVmknic\n"
                         "   Type: string\n"
                         "   Int Value: 0\n"
                         "   Default Int Value: 0\n"
                         "   Min Value: 0\n"
                         "   Max Value: 0\n"
                         "   String Value: vmk1\n"
                         "   Default String Value:\n"
                         "   Valid Characters: **\n"
                         "   Description: Vmknic for PVRDMA\n")

    def test_ntp(self):
        self.ok("esxcli system ntp set -s 10.0.0.1 -s 10.0.0.2 -e true")
        self.assertEqual(self.ok("esxcli system ntp get"),
                         "   Enabled: true\n   Loglevel: warning\n   Server: 10.0.0.1, 10.0.0.2\n")
        self.assertEqual(self.ok("esxcli --formatter=keyvalue system ntp get"),
                         "NTPConfig.Enabled.boolean=true\nNTPConfig.Loglevel.string=warning\n"
                         "NTPConfig.Server.string[0]=10.0.0.1\nNTPConfig.Server.string[1]=10.0.0.2\n")

    def test_vmware_version(self):
        self.assertEqual(self.ok("vmware -v"), "VMware ESXi 8.0.2 build-22380479\n")
        self.assertEqual(self.ok("vmware -v", "127.0.0.17"), "VMware ESXi 7.0.3 build-19193900\n")


class TestReleases(SimTest):
    """6.7 has neither `hardware pci pcipassthru` nor `system ntp`, 7.0 GA
    no `system ntp`: they answer as any unknown namespace (issue 14, item 1)."""

    def test_67_lacks_pcipassthru_and_ntp(self):
        self.assertEqual(self.ok("vmware -v", "127.0.0.16"), "VMware ESXi 6.7.0 build-8169922\n")
        for cmd, words in (("hardware pci pcipassthru list", "hardware pci pcipassthru list"),
                           ("hardware pci pcipassthru set -d 0000:3b:00.0 -e true",
                            "hardware pci pcipassthru set"),
                           ("system ntp get", "system ntp get"),
                           ("system ntp set -s 10.0.0.1 -e true", "system ntp set")):
            self.assertEqual(self.fails("esxcli --formatter=xml " + cmd, "127.0.0.16"),
                             (1, "Error: Unknown command or namespace %s\n" % words))
        # what it has: the PCI list with each device's owner
        self.assertIn("Configured Owner: VMkernel",
                      self.ok("esxcli hardware pci list", "127.0.0.16"))

    def test_70_has_pcipassthru_not_ntp(self):
        self.assertIn("<string>0000:3b:00.0</string>",
                      self.ok("esxcli --formatter=xml hardware pci pcipassthru list", "127.0.0.18"))
        self.assertEqual(self.fails("esxcli system ntp get", "127.0.0.18"),
                         (1, "Error: Unknown command or namespace system ntp get\n"))
        self.ok("esxcli system ntp get", "127.0.0.17")


class TestVibs(SimTest):
    def test_install_needs_maintenance_mode(self):
        self.assertEqual(self.fails("esxcli software vib install -d " + NVD_AIE),
                         (1, "[MaintenanceModeError]\n MaintenanceMode is required to remove: "
                             "[]; install: [%s].\n Please refer to the log file for more "
                             "details.\n" % NVD_AIE_ID))

    def test_install_8x_pending_until_reboot(self):
        today = time.strftime("%Y-%m-%d", time.gmtime())
        self.ok("esxcli system maintenanceMode set -e true")
        self.assertEqual(self.ok("esxcli software vib install -d " + NVD_AIE),
                         "Installation Result\n"
                         "   Message: The update completed successfully, but the system needs "
                         "to be rebooted for the changes to be effective.\n"
                         "   VIBs Installed: %s\n"
                         "   VIBs Removed:\n"
                         "   VIBs Skipped:\n"
                         "   Reboot Required: true\n"
                         "   DPU Results:\n" % NVD_AIE_ID)
        self.assertNotIn("NVD-AIE", self.ok("esxcli software vib list"))
        self.assertIn("NVD-AIE_ESXi_8.0.0_Driver  525.105.14-1OEM.800.1.0.20613240  NVIDIA  "
                      "VMwareAccepted    %s    host\n" % today,
                      self.ok("esxcli software vib list --rebooting-image"))
        # again before the reboot: already in the image -> skipped
        self.assertEqual(self.ok("esxcli --formatter=keyvalue software vib install -d " + NVD_AIE),
                         "InstallationResult.Message.string=Host is not changed.\n"
                         "InstallationResult.VIBsSkipped.string[0]=%s\n"
                         "InstallationResult.RebootRequired.boolean=false\n" % NVD_AIE_ID)
        self.assertEqual(self.lab.run("nvidia-smi -q"), (127, "", "sh: nvidia-smi: not found\n"))
        self.lab.control("esxi-1", {"reboot_seconds": 0})
        self.assertEqual(self.lab.run("esxcli system shutdown reboot -r 'vGPU manager'"),
                         (255, "", ""))
        self.assertEqual(self.ok("esxcli system maintenanceMode get"), "Enabled\n")
        self.assertEqual(
            self.ok("esxcli software vib list"),
            "Name                       Version                           Vendor  "
            "Acceptance Level  Install Date  Platforms\n"
            "-------------------------  --------------------------------  ------  "
            "----------------  ------------  ---------\n"
            "NVD-AIE_ESXi_8.0.0_Driver  525.105.14-1OEM.800.1.0.20613240  NVIDIA  "
            "VMwareAccepted    %s    host\n"
            "esx-base                   8.0.2-0.0.22380479                VMware  "
            "VMwareCertified   2023-10-12    host\n"
            "i40en                      1.11.2.6-1vmw.802.0.0.22380479    VMW     "
            "VMwareCertified   2023-10-12    host\n"
            "nmlx5-core                 4.23.0.66-1vmw.802.0.0.22380479   VMW     "
            "VMwareCertified   2023-10-12    host\n" % today)
        # the driver is loaded now: ECC toggles pending until the next reboot
        self.assertEqual(self.ok("nvidia-smi -e 0"),
                         "Disabled ECC support for GPU 00000000:AF:00.0.\n"
                         "Disabled ECC support for GPU 00000000:D8:00.0.\n"
                         "All done.\nReboot required.\n")
        q = self.ok("nvidia-smi -q -d ECC")
        self.assertIn("GPU 00000000:AF:00.0\n    ECC Mode\n"
                      "        Current                           : Enabled\n"
                      "        Pending                           : Disabled\n", q)
        self.assertEqual(self.lab.run("reboot"), (255, "", ""))
        self.assertIn("        Current                           : Disabled\n",
                      self.ok("nvidia-smi -q -d ECC"))
        graphics = self.ok("esxcli graphics device list")
        self.assertIn("   Module Name: nvidia\n   Graphics Type: Shared\n", graphics)

    def test_install_7x_field_order(self):
        self.ok("esxcli system maintenanceMode set -e true", "127.0.0.17")
        vib = "/vmfs/volumes/ds1/NVD_bootbank_nvdgpumgmtdaemon_525.147.01-1OEM.700.1.0.15843807.vib"
        self.assertEqual(self.ok("esxcli software vib install -v " + vib, "127.0.0.17"),
                         "Installation Result\n"
                         "   Message: The update completed successfully, but the system needs "
                         "to be rebooted for the changes to be effective.\n"
                         "   Reboot Required: true\n"
                         "   VIBs Installed: NVD_bootbank_nvdgpumgmtdaemon_525.147.01-1OEM.700.1.0.15843807\n"
                         "   VIBs Removed:\n"
                         "   VIBs Skipped:\n")
        xml = self.ok("esxcli --formatter=xml software vib install -v " + vib, "127.0.0.17")
        self.assertIn('      <field name="VIBsSkipped">\n'
                      '         <list type="string">\n'
                      '            <string>NVD_bootbank_nvdgpumgmtdaemon_525.147.01-1OEM.700.1.0.15843807</string>\n'
                      '         </list>\n'
                      '      </field>\n', xml)
        # ESXi 7 has no Platforms column
        self.assertTrue(self.ok("esxcli software vib list", "127.0.0.17").startswith(
            "Name        Version                          Vendor  Acceptance Level  Install Date\n"))

    def test_sources_vib_list_names_what_the_bundle_holds(self):
        # the human table: columns of the esxcli reference, widths from the data
        self.assertEqual(
            self.ok("esxcli software sources vib list -d " + NVD_AIE),
            "Name                       Version                           Vendor  Creation Date  "
            "Acceptance Level  Status\n"
            "-------------------------  --------------------------------  ------  -------------  "
            "----------------  ------\n"
            "NVD-AIE_ESXi_8.0.0_Driver  525.105.14-1OEM.800.1.0.20613240  NVIDIA  2023-03-24     "
            "VMwareAccepted    New\n")
        vib = "/vmfs/volumes/ds1/NVD_bootbank_nvdgpumgmtdaemon_525.147.01-1OEM.700.1.0.15843807.vib"
        xml = self.ok("esxcli --formatter=xml software sources vib list -v '%s'" % vib)
        self.assertIn('<structure typeName="VIBSummary">\n'
                      '         <field name="Name">\n'
                      '            <string>nvdgpumgmtdaemon</string>\n'
                      '         </field>\n'
                      '         <field name="Version">\n'
                      '            <string>525.147.01-1OEM.700.1.0.15843807</string>\n', xml)
        # once installed (pending in the rebooting image) the status says so
        self.ok("esxcli system maintenanceMode set -e true")
        self.ok("esxcli software vib install -d " + NVD_AIE)
        self.assertIn("VMwareAccepted    Installed\n",
                      self.ok("esxcli software sources vib list -d " + NVD_AIE))

    def test_sources_vib_list_of_a_missing_file_fails(self):
        self.lab.control("esxi-1", {"missing_files": [NVD_AIE]})
        rc, out, err = self.lab.run("esxcli --formatter=xml software sources vib list -d " + NVD_AIE)
        self.assertEqual((rc, out), (1, ""))
        self.assertTrue(err.startswith("[MetadataDownloadError]\n Could not download from depot at zip:"
                                       + NVD_AIE + "?index.xml, skipping"), err)
        self.ok("esxcli system maintenanceMode set -e true")
        self.assertEqual(self.lab.run("esxcli software vib install -d " + NVD_AIE)[0], 1)
        self.assertNotIn("NVD-AIE", self.ok("esxcli software vib list --rebooting-image"))

    def test_esxcli_reboot_needs_maintenance_mode(self):
        self.assertEqual(self.fails("esxcli system shutdown reboot -r x"),
                         (1, "Unable to reboot the host: the host is not in maintenance mode.\n"))


class TestShellAndFaults(SimTest):
    def test_sequences_and_quoting(self):
        rc, out, err = self.lab.run("echo a; false && echo no || echo 'yes  quoted';\n"
                                    "echo \"x;y\" && true")
        self.assertEqual((rc, out, err), (0, "a\nyes  quoted\nx;y\n", ""))
        self.assertEqual(self.lab.run("echo MARK1; vmware -v; echo MARK2; false"),
                         (1, "MARK1\nVMware ESXi 8.0.2 build-22380479\nMARK2\n", ""))
        self.assertEqual(self.lab.run("vmware -v | grep ESXi"),
                         (2, "", "sh: syntax error: unsupported operator '|'\n"))
        self.assertEqual(self.lab.run("vmware -v >/dev/null"),
                         (2, "", "sh: syntax error: redirections are not supported by the "
                                 "simulator\n"))
        self.assertEqual(self.lab.run("vmware -v 2>x"),
                         (2, "", "sh: syntax error: redirections are not supported by the "
                                 "simulator\n"))
        self.assertEqual(self.lab.run("echo 'open"),
                         (2, "", "sh: syntax error: No closing quotation\n"))

    def test_command_log(self):
        self.ok("echo one")
        self.ok("echo two\necho three")
        with open(self.lab.host_file("esxi-1", "commands.log")) as f:
            lines = f.read().splitlines()
        self.assertEqual([line.split(" ", 1)[1] for line in lines],
                         ["echo one", "echo two\\necho three"])
        self.assertRegex(lines[0], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z ")

    def test_a_guarded_read_back_runs_only_behind_its_guard(self):
        # the reboot poll carrying the read-back (include/gc/esxi.h
        # gc_esxi_script_guarded): below the bound the read-back and its exit
        # run; a host up longer than the bound runs the uptime read alone
        sys.path.insert(0, HERE)
        import esxi_sim
        guard = "echo @@gc:K:up; sh -c %s up %%d || exit 0; " % shlex.quote(esxi_sim.UPTIME_GUARD_SCRIPT)
        readback = ("echo @@gc:K:2; esxcli --formatter=xml system maintenanceMode get || echo @@gc:K:failed; "
                    "echo @@gc:K:17; esxcli system maintenanceMode set -e false || echo @@gc:K:failed; "
                    "echo @@gc:K:end")
        self.ok("esxcli system maintenanceMode set -e true")
        out = self.ok(guard % 1000000 + readback)
        self.assertRegex(out, r"^@@gc:K:up\n\d{13}\n$")  # up 30 days: not rebooted
        self.assertEqual(self.ok("esxcli system maintenanceMode get"), "Enabled\n")
        out = self.ok(guard % (10 ** 15) + readback)
        self.assertRegex(out, r"^@@gc:K:up\n\d{13}\n@@gc:K:2\n<\?xml (.|\n)*<string>Enabled</string>(.|\n)*\n@@gc:K:17\n@@gc:K:end\n$")
        self.assertEqual(self.ok("esxcli system maintenanceMode get"), "Disabled\n")
        with open(self.lab.host_file("esxi-1", "commands.log")) as f:
            lines = [line.split(" ", 1)[1] for line in f.read().splitlines()]
        # what ran: the uptime read alone (then the test's check), then the
        # uptime read, the read-back's reads at once and the exit as it ran
        get = "esxcli system maintenanceMode get"
        self.assertEqual(lines[1:], ["esxcli system stats uptime get", get, "esxcli system stats uptime get",
                                     "echo @@gc:K:2; esxcli --formatter=xml system maintenanceMode get || "
                                     "echo @@gc:K:failed; echo @@gc:K:end",
                                     "esxcli system maintenanceMode set -e false", get])
        # a bound that is no number: the uptime, then nothing, as in a real shell
        self.ok("esxcli system maintenanceMode set -e true")
        rc, out, err = self.lab.run(guard.replace("up %d", "up x") + readback)
        self.assertEqual((rc, err), (0, "sh: bad number\n"))
        self.assertRegex(out, r"^@@gc:K:up\n\d{13}\n$")
        self.assertEqual(self.ok("esxcli system maintenanceMode get"), "Enabled\n")
        self.assertEqual(self.lab.run("sh -c %s up 5" % shlex.quote(esxi_sim.UPTIME_GUARD_SCRIPT))[0], 1)

    def test_the_uptime_guard_equals_a_real_shell(self):
        # the guard (include/gc/esxi.h GC_ESXI_UPTIME_GUARD_SCRIPT), run as
        # Python by the simulator and by a real sh (dash here, busybox on
        # ESXi) whose esxcli is the simulator's: the same words and status
        sys.path.insert(0, HERE)
        import esxi_sim
        bindir = tempfile.mkdtemp(prefix="gc-guard-")
        self.addCleanup(shutil.rmtree, bindir)
        path = os.path.join(bindir, "esxcli")
        with open(path, "w") as f:
            f.write('#!/bin/sh\nexec env SSH_ORIGINAL_COMMAND="esxcli $*" GC_LAB_DIR=%s '
                    'SSH_CONNECTION="127.0.0.1 40000 127.0.0.11 2222" %s\n' % (self.lab.dir, DISPATCH))
        os.chmod(path, 0o755)
        for bound in ("1000000", str(10 ** 15)):
            sim = self.lab.run("sh -c %s up %s" % (shlex.quote(esxi_sim.UPTIME_GUARD_SCRIPT), bound))
            real = subprocess.run(["/bin/sh", "-c", esxi_sim.UPTIME_GUARD_SCRIPT, "up", bound],
                                  capture_output=True, text=True, timeout=60,
                                  env={"PATH": bindir + ":/usr/bin:/bin"})
            # the uptime moved on between the two reads: compare its digits' count
            self.assertEqual((real.returncode, re.sub(r"\d", "9", real.stdout), real.stderr),
                             (sim[0], re.sub(r"\d", "9", sim[1]), sim[2]), bound)
            self.assertEqual(real.returncode, 1 if bound == "1000000" else 0)

    def test_fail_once(self):
        self.lab.control("esxi-1", {"fail_once": {"match": "esxcli software vib install",
                                                  "message": "[InstallationError]\n boom",
                                                  "exit": 1}})
        self.ok("esxcli system maintenanceMode set -e true")
        rc, out, err = self.lab.run("esxcli software vib install -d " + NVD_AIE)
        self.assertEqual((rc, out, err), (1, "", "[InstallationError]\n boom\n"))
        self.assertIn("Installation Result\n", self.ok("esxcli software vib install -d " + NVD_AIE))

    def test_drop_after(self):
        self.lab.control("esxi-1", {"drop_after": 2})
        self.assertEqual(self.lab.run("echo 1; echo 2; echo 3; echo 4"), (255, "1\n2\n", ""))
        self.assertEqual(self.ok("echo again"), "again\n")

    def test_drop_once_drops_its_command_and_no_other(self):
        self.lab.control("esxi-1", {"drop_once": {"match": "esxcli system maintenanceMode set"}})
        self.assertEqual(self.lab.run("echo 1; esxcli system maintenanceMode get; "
                                      "esxcli system maintenanceMode set -e true; echo 2"),
                         (255, "1\nDisabled\n", ""))
        # it ran nothing: still out of maintenance; then the fault is gone
        self.assertEqual(self.ok("esxcli system maintenanceMode get"), "Disabled\n")
        self.ok("esxcli system maintenanceMode set -e true")
        self.assertEqual(self.ok("esxcli system maintenanceMode get"), "Enabled\n")

    def test_reboot_refuses_while_down(self):
        self.lab.control("esxi-1", {"reboot_seconds": 30})
        self.assertEqual(self.lab.run("echo before; reboot; echo after"), (255, "before\n", ""))
        self.assertEqual(self.lab.run("echo hello"), (255, "", ""))
        with open(self.lab.host_file("esxi-1", "refused.log")) as f:
            self.assertTrue(f.read().endswith("Z echo hello\n"))
        # other hosts are not affected
        self.assertEqual(self.ok("echo hi", "127.0.0.17"), "hi\n")

    def test_latency(self):
        self.lab.control("esxi-1", {"latency_ms": 150})
        t0 = time.monotonic()
        self.ok("echo a; echo b")
        self.assertGreaterEqual(time.monotonic() - t0, 0.3)

    def test_slow_delays_only_its_commands(self):
        # the match is a prefix of the simple command (its words joined);
        # a lower bound for the slow one, and the other well under its delay
        self.lab.control("esxi-1", {"slow": {"match": "esxcli system maintenanceMode get",
                                             "ms": 3000}})
        t0 = time.monotonic()
        self.assertEqual(self.ok("echo a"), "a\n")
        self.assertLess(time.monotonic() - t0, 3.0)
        t0 = time.monotonic()
        self.assertEqual(self.ok("esxcli system maintenanceMode get"), "Disabled\n")
        self.assertGreaterEqual(time.monotonic() - t0, 3.0)

    def test_rtt(self):
        # rtt_ms delays the exec (once, before its first command: session());
        # a lower bound only, as test_latency: no upper timing bound in tests
        self.lab.control("esxi-1", {"rtt_ms": 400})
        t0 = time.monotonic()
        self.assertEqual(self.ok("echo a; echo b"), "a\nb\n")
        self.assertGreaterEqual(time.monotonic() - t0, 0.4)

    def test_a_fault_consumed_by_one_command_is_gone_for_the_next(self):
        # run_simple reads control.json once per command and hands that read
        # to the command: the one-shot fault it consumed must not come back
        # through it, and a later command of the same exec sees the file as
        # the fault left it
        self.lab.control("esxi-1", {"fail_once": {"match": "esxcli system maintenanceMode get",
                                                  "message": "Error: once", "exit": 1},
                                    "nmlx5_without": ["max_vfs"]})
        rc, out, err = self.lab.run("esxcli system maintenanceMode get; "
                                    "esxcli system maintenanceMode get")
        self.assertEqual((rc, out, err), (0, "Disabled\n", "Error: once\n"))
        with open(self.lab.host_file("esxi-1", "control.json")) as f:
            self.assertEqual(json.load(f), {"nmlx5_without": ["max_vfs"]})

    def test_dispatch_errors(self):
        self.assertEqual(self.lab.run("echo", "127.0.0.55"),
                         (255, "", "gclab: no simulated host at address '127.0.0.55' "
                                   "(see %s/inventory)\n" % self.lab.dir))
        if not os.path.exists(os.path.join(HERE, "onyx_sim.py")):
            rc, out, err = self.lab.run("show version", "127.0.0.100")
            self.assertEqual(rc, 127)
            self.assertIn("simulator", err)


class TokensTest(unittest.TestCase):
    """esxi_sim.tokens() splits a plain line by regular expressions and
    hands anything else to shlex: every line must give shlex's tokens, or
    shlex's error."""

    @classmethod
    def setUpClass(cls):
        sys.path.insert(0, HERE)
        import esxi_sim
        cls.sim = esxi_sim

    def same(self, line):
        try:
            want = ("ok", self.sim.shlex_tokens(line))
        except ValueError as e:
            want = ("error", str(e))
        try:
            got = ("ok", self.sim.tokens(line))
        except ValueError as e:
            got = ("error", str(e))
        self.assertEqual(got, want, repr(line))
        return got

    def test_cases(self):
        self.assertEqual(self.same("echo @@gc:ab12:1; vmware -v || echo @@gc:ab12:failed; "
                                   "esxcli --formatter=xml system maintenanceMode get"),
                         ("ok", ["echo", "@@gc:ab12:1", ";", "vmware", "-v", "||", "echo",
                                 "@@gc:ab12:failed", ";", "esxcli", "--formatter=xml", "system",
                                 "maintenanceMode", "get"]))
        self.assertEqual(self.same("sh -c 'a=\"$1\"; echo \"#x\" && b' lease 0f"),
                         ("ok", ["sh", "-c", 'a="$1"; echo "#x" && b', "lease", "0f"]))
        self.assertEqual(self.same("a'b c'd;''\n&&|| x"),
                         ("ok", ["ab cd", ";", "", "\n&&||", "x"]))
        for line in ["", "  \t", "echo 'open", "a#b c", "# c\nd", 'say "x;y"', "a\\ b",
                     "x\x0by \x0c", "é'ü ß'", "a;;b&c|d", "'#' #", "\r\n;", "'a'\"b\"'c'"]:
            self.same(line)

    def test_random_lines(self):
        import random
        rng = random.Random(20261201)
        # the second alphabet has mostly what the regular expressions take
        # (single quotes, backslashes; no double quote or #), the first all
        for alphabet in ("ab -=@:'\"\\#;&|\n\t\r\x0bé", "ab -@:'';&|\n\t\r\x0bé\\\\"):
            for _ in range(10000):
                self.same("".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 24))))

    def test_the_tools_own_lines(self):
        # an observation batch, a batch of changes and the lease snippet, as
        # gpuclusterctl sends them (the shapes of execs.log)
        lease = shlex.quote(self.sim.LEASE_CLEAR_SCRIPT)
        for line in [
            "echo @@gc:5f0e:1; vmware -v || echo @@gc:5f0e:failed; echo @@gc:5f0e:2; "
            "esxcli --formatter=xml hardware pci list || echo @@gc:5f0e:failed",
            "echo @@gc:ad45:c0 && esxcli system ntp set -e true -s ntp1.lab.example && "
            "echo @@gc:ad45:c1 && esxcli system module parameters set -m nmlx5_core -p 'max_vfs=4'",
            "echo @@gc:9a:7; esxcli system maintenanceMode set -e false && echo @@gc:9a:8 && "
            "sh -c " + lease + " lease 0123456789abcdef || echo @@gc:9a:failed; ",
        ]:
            self.assertEqual(self.same(line)[0], "ok")
            # and by the regular expressions, not a character at a time
            self.assertTrue(self.sim.PLAIN_LINE.fullmatch(line), line)


class CachedReadTest(unittest.TestCase):
    """simlab.read_json keeps what it read (a worker runs session after
    session) and must never answer with what a file held before a change."""

    def setUp(self):
        sys.path.insert(0, HERE)
        import simlab
        self.simlab = simlab
        self.dir = tempfile.mkdtemp(prefix="gc-simcache-")
        self.path = os.path.join(self.dir, "control.json")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def write_in_place(self, data):
        with open(self.path, "w") as f:  # as a test's Lab.control does: same inode
            json.dump(data, f)

    def settled(self):
        time.sleep(self.simlab.CACHE_SETTLE_NS / 1e9 + 0.02)

    def test_a_settled_file_is_kept_and_each_read_gets_its_own_copy(self):
        self.write_in_place({"rtt_ms": 1})
        self.settled()
        first = self.simlab.read_json(self.path, {})
        self.assertIn(self.path, self.simlab._CACHE)
        first["rtt_ms"] = 99  # a caller's change is its own
        self.assertEqual(self.simlab.read_json(self.path, {}), {"rtt_ms": 1})

    def test_a_rewrite_in_place_of_the_same_size_is_read(self):
        self.write_in_place({"rtt_ms": 1})
        self.settled()
        self.assertEqual(self.simlab.read_json(self.path, {}), {"rtt_ms": 1})
        self.write_in_place({"rtt_ms": 2})
        self.assertEqual(self.simlab.read_json(self.path, {}), {"rtt_ms": 2})

    def test_a_file_changed_within_the_settle_time_is_not_kept(self):
        # the second write may share the first's mtime (the kernel's coarse
        # clock), inode and size: only not keeping the first read is safe
        self.write_in_place({"rtt_ms": 1})
        self.assertEqual(self.simlab.read_json(self.path, {}), {"rtt_ms": 1})
        self.assertNotIn(self.path, self.simlab._CACHE)
        self.write_in_place({"rtt_ms": 2})
        self.assertEqual(self.simlab.read_json(self.path, {}), {"rtt_ms": 2})

    def test_a_replaced_or_removed_file_is_read_again(self):
        self.write_in_place({"rtt_ms": 1})
        self.settled()
        self.assertEqual(self.simlab.read_json(self.path, {}), {"rtt_ms": 1})
        self.simlab.write_json(self.path, {"rtt_ms": 1, "reboot_seconds": 2})
        self.assertEqual(self.simlab.read_json(self.path, {}), {"rtt_ms": 1, "reboot_seconds": 2})
        os.unlink(self.path)
        self.assertEqual(self.simlab.read_json(self.path, {"none": True}), {"none": True})

    def test_the_inventory_follows_its_file(self):
        inv = os.path.join(self.dir, "inventory")
        with open(inv, "w") as f:
            f.write("# lab\n127.0.0.11 esxi esxi-1 version=8.0.2\n")
        self.settled()
        host = self.simlab.find_host(self.dir, "127.0.0.11")
        self.assertEqual((host.kind, host.name, host.attrs), ("esxi", "esxi-1", {"version": "8.0.2"}))
        host.attrs["version"] = "7.0.3"  # a caller's change is its own
        self.assertEqual(self.simlab.find_host(self.dir, "127.0.0.11").attrs, {"version": "8.0.2"})
        self.assertIsNone(self.simlab.find_host(self.dir, "127.0.0.12"))
        with open(inv, "a") as f:
            f.write("127.0.0.12 esxi esxi-2 version=7.0.3\n")
        self.assertEqual(self.simlab.find_host(self.dir, "127.0.0.12").name, "esxi-2")


if __name__ == "__main__":
    unittest.main(verbosity=1 if sys.stdout.isatty() else 2)
