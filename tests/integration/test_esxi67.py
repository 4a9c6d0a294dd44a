"""End-to-end: an ESXi 6.7 host beside an ESXi 8.0 host (issue 14, item 1),
tests/data/spec/ok/esxi67-mixed.yaml applied by the real gpuclusterctl
binary to the lab.

ESXi 6.7 has neither `esxcli hardware pci pcipassthru` nor `esxcli system
ntp` (the lab's 6.7 host answers them "Unknown command or namespace", as
6.7 does): its GPU passthrough and NTP go through vCenter's host objects,
inside its maintenance window; the 8.0 host gets the same with esxcli over
SSH.  Asserted from outside the tool: the exact SOAP bodies vcsim received
(its -host-calls log), the host as tests/sim/vcsim_edit.py reads it back,
the exact commands each simulated host received and its state, a
re-apply that changes nothing, and a change of NTP servers (the new list,
ntpd restarted).
"""
import json
import os
import unittest

from test_vcenter import VcenterLab

NTP = ["ntp1.lab.example", "ntp2.lab.example"]
GPU = "0000:3b:00.0"


class Esxi67Mixed(VcenterLab):
    spec = "tests/data/spec/ok/esxi67-mixed.yaml"
    port = 2354  # vcsim on 9014
    only = "esxi,vcenter"

    def host_calls(self):
        return self.vcsim_log("host-calls.log")

    def expected_calls(self, moref):
        servers = "".join("<server>%s</server>" % s for s in NTP)
        return [
            '<UpdateDateTimeConfig xmlns="urn:vim25"><_this type="HostDateTimeSystem">'
            "dateTimeSystem-%s</_this><config><ntpConfig>%s</ntpConfig></config>"
            "</UpdateDateTimeConfig>" % (moref, servers),
            '<UpdateServicePolicy xmlns="urn:vim25"><_this type="HostServiceSystem">'
            "serviceSystem-%s</_this><id>ntpd</id><policy>on</policy></UpdateServicePolicy>"
            % moref,
            '<StartService xmlns="urn:vim25"><_this type="HostServiceSystem">'
            "serviceSystem-%s</_this><id>ntpd</id></StartService>" % moref,
            '<UpdatePassthruConfig xmlns="urn:vim25"><_this type="HostPciPassthruSystem">'
            'pciPassthruSystem-%s</_this><config xsi:type="HostPciPassthruConfig">'
            "<id>%s</id><passthruEnabled>true</passthruEnabled></config>"
            "</UpdatePassthruConfig>" % (moref, GPU),
        ]

    def assert_calls_per_action(self, calls, moref):
        """esx67's NTP (three calls, in this order) and its passthrough (one
        call, inside the maintenance window) are independent actions of the
        vCenter target, which runs independent actions in parallel lanes: the
        two may interleave either way, so each action's calls are compared in
        order and the whole as the exact set sent."""
        want = self.expected_calls(moref)
        passthru = [c for c in calls if "<UpdatePassthruConfig " in c]
        self.assertEqual([c for c in calls if c not in passthru], want[:3])
        self.assertEqual(passthru, want[3:])

    def vc_host(self, name):
        return json.loads(self.vc("host", name).stdout)

    def test_67_through_vcenter_80_through_esxcli_then_reapply_changes_nothing(self):
        # the lab's reset keeps a running vcsim: this test changes it, the
        # other one changes nothing there
        before = self.vc_host("esx67")
        self.assertEqual([(p["id"], p["passthruEnabled"]) for p in before["passthru"]],
                         [(GPU, "false")])
        self.assertEqual(before["ntp_servers"], [])

        self.apply()

        # esx67: what vCenter was sent, exactly, and what it now holds
        self.assert_calls_per_action(self.host_calls(), before["moref"])
        after = self.vc_host("esx67")
        self.assertEqual([(p["id"], p["passthruEnabled"]) for p in after["passthru"]],
                         [(GPU, "true")])
        self.assertEqual(after["ntp_servers"], NTP)
        self.assertEqual(after["ntpd"], {"running": True, "policy": "on"})
        # over SSH it got only its maintenance window and the reboot
        self.assertEqual(self.changes("esx67"), [
            "esxcli system maintenanceMode set -e true",
            "esxcli system shutdown reboot -r gpuclusterctl",
            "esxcli system maintenanceMode set -e false",
        ])
        # esx80 the same settings with esxcli, nothing through vCenter
        self.assertEqual(self.changes("esx80"), [
            "esxcli system ntp set -e true -s ntp1.lab.example -s ntp2.lab.example",
            "esxcli system maintenanceMode set -e true",
            "esxcli hardware pci pcipassthru set -d %s -e true" % GPU,
            "esxcli system shutdown reboot -r gpuclusterctl",
            "esxcli system maintenanceMode set -e false",
        ])
        st = self.state("esx80")
        self.assertEqual((st["ntp"]["enabled"], st["ntp"]["servers"]), (True, NTP))
        self.assertEqual([d["passthru"] for d in st["pci"] if d["addr"] == GPU], [True])
        # the VM on esx67 got its GPU after the host's window
        vm = self.show("worker-67")
        self.assertEqual(vm["host"], "esx67")
        self.assertEqual([d["backing"].get("id") for d in self.devices(vm, "VirtualPCIPassthrough")],
                         [GPU])

        n67, n80 = len(self.changes("esx67")), len(self.changes("esx80"))
        self.reapply_changes_nothing()
        self.assert_calls_per_action(self.host_calls(), before["moref"])
        self.assertEqual((len(self.changes("esx67")), len(self.changes("esx80"))), (n67, n80))

        # other NTP servers: the new list, and the running ntpd restarted to read it
        def one_server(d):
            for h in d["hosts"]:
                h["ntp"] = ["ntp3.lab.example"]
        self.apply(spec=self.spec_variant(one_server))
        self.assertEqual(self.host_calls()[4:], [
            '<UpdateDateTimeConfig xmlns="urn:vim25"><_this type="HostDateTimeSystem">'
            "dateTimeSystem-%s</_this><config><ntpConfig><server>ntp3.lab.example</server>"
            "</ntpConfig></config></UpdateDateTimeConfig>" % before["moref"],
            '<RestartService xmlns="urn:vim25"><_this type="HostServiceSystem">'
            "serviceSystem-%s</_this><id>ntpd</id></RestartService>" % before["moref"],
        ])
        self.assertEqual(self.vc_host("esx67")["ntp_servers"], ["ntp3.lab.example"])
        self.assertEqual(self.changes("esx67")[n67:], [])
        self.assertEqual(self.changes("esx80")[n80:],
                         ["esxcli system ntp set -e true -s ntp3.lab.example"])

    def test_a_67_host_without_version_is_refused_with_the_fix(self):
        """Without hosts[].version the graph sends esxcli to esx67; its `vmware
        -v` says 6.7.0 and the plan stops with what to write, sending nothing."""
        def no_version(d):
            del d["hosts"][0]["version"]
        calls = self.host_calls()  # vcsim outlives the lab's reset: its log too
        r = self.plan(spec=self.spec_variant(no_version), check=1)
        self.assertIn(
            "host 'esx67' runs ESXi 6.7.0 (vmware -v), which has no 'esxcli system ntp' (ESXi "
            "7.0 Update 1 and later): set the host's version: \"6.7.0\" in the spec, and that "
            "is set through vCenter\n"
            "host 'esx67' runs ESXi 6.7.0 (vmware -v), which has no 'esxcli hardware pci "
            "pcipassthru' (ESXi 7.0 and later): set the host's version: \"6.7.0\" in the "
            "spec, and that is set through vCenter\n", r.stderr)
        self.assertEqual(self.changes("esx67"), [])
        self.assertEqual(self.host_calls(), calls)

    def test_a_host_on_another_release_than_the_spec_says_is_refused(self):
        """Issue 12: the spec's ESXi version is compared with `vmware -v`.
        Saying 8.0.2 for the 6.7 host would send it down the esxcli path it
        does not have: plan and apply stop at that host, sending it nothing."""
        def says_80(d):
            d["hosts"][0]["version"] = "8.0.2"
        spec = self.spec_variant(says_80)
        calls = self.host_calls()
        want = ("host 'esx67' runs ESXi 6.7.0 (vmware -v), but the spec says version: \"8.0.2\": "
                "correct the spec's version, or bring the host to that release first "
                "(gpuclusterctl does not upgrade ESXi)\n")
        r = self.plan(spec=spec, check=1)
        self.assertIn(want, r.stderr)
        self.assertNotIn("which has no 'esxcli", r.stderr)  # one reason, not two
        r = self.apply(spec=spec, check=1)
        self.assertIn(want, r.stderr)
        self.assertEqual(self.changes("esx67"), [])
        self.assertEqual(self.host_calls(), calls)


if __name__ == "__main__":
    unittest.main()


class Vgpu67K8s(VcenterLab):
    """examples/vgpu67-k8s.yaml (issue 14's 6.7 example): three ESXi 6.7
    hosts, vGPU release 9.0 on two T4s from NVIDIA's 6.7 offline bundle,
    PVRDMA vmknics with their addresses made through vCenter, NTP through
    vCenter, a Kubernetes master and two vGPU workers."""
    spec = "examples/vgpu67-k8s.yaml"
    port = 2355  # vcsim on 9015
    only = "esxi,vcenter"
    VIB = "NVIDIA-VMware_ESXi_6.7_Host_Driver"

    def test_applies_on_the_lab_then_reapplies_clean(self):
        self.apply()
        for i, host in ((1, "esx01"), (2, "esx02")):
            st = self.state(host)
            vib = [v for v in st["vibs"] if v["name"] == self.VIB]
            self.assertEqual([v["version"] for v in vib], ["430.27-1OEM.670.0.0.8169922"], host)
            self.assertEqual(st["boot_count"], 1, host)
            self.assertFalse(st["maintenance"], host)
            self.assertEqual(st["advanced"].get("/Net/PVRDMAVmknic"), "vmk1", host)
            vnic = [v for v in json.loads(self.vc("vnics", host).stdout) if v["device"] == "vmk1"]
            self.assertEqual([(v["ip"], v["mask"], v["switch"], v["portgroup"]) for v in vnic],
                             [("192.168.10.2%d" % i, "255.255.255.0", "dvs-rdma", "pvrdma-pg")], host)
            vm = self.show("worker-%02d" % i)
            self.assertEqual([d["backing"]["vgpu"] for d in self.devices(vm, "VirtualPCIPassthrough")],
                             ["grid_t4-16c"])
            self.assertEqual((vm["host"], vm["power"]), (host, "poweredOn"))
        for host in ("esx01", "esx02", "esx03"):
            # 6.7: no esxcli system ntp; vCenter's HostDateTimeSystem has it
            self.assertEqual(self.vc_host(host)["ntp_servers"], ["ntp1.lab.example"], host)
            self.assertFalse([c for c in self.changes(host) if "system ntp" in c], host)
        self.assertEqual(self.state("esx03")["boot_count"], 0)
        self.reapply_changes_nothing()

    def vc_host(self, name):
        return json.loads(self.vc("host", name).stdout)
