"""test_kvm - the KVM path's VM part against a real libvirtd with QEMU.

The tests start libvirtd themselves (tests/sim/libvirtd.sh), give it a
storage pool holding a base image, and apply examples/kvm-pair.yaml's
libvirt targets (`--only libvirt`) with the lab's rewrite: both hosts'
libvirt URI is this machine's qemu:///system, accel tcg (this machine's
/dev/kvm cannot run a guest), the image in that pool, and the VMs left off
(a domain with a <hostdev> cannot start without an IOMMU).

Everything asserted is read back by libvirt's own client, `virsh` (never our
code): the domain XML, the overlay volume, the networks.
"""
import os
import re
import shutil
import signal
import subprocess
import tempfile
import unittest
import xml.etree.ElementTree as ET

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("GC_BIN", os.path.join(ROOT, "build", "src", "cli", "gpuclusterctl"))
URI = "qemu:///system"
POOL = "gc-it-kvm"
VMS = ("kvm-worker-01", "kvm-worker-02", "kvm-locked", "kvm-disk", "kvm-plain")
NETS = ("kvm01-rdma", "kvm02-rdma")
QEMU_NS = "{http://libvirt.org/schemas/domain/qemu/1.0}"


def virsh(*args, check=True):
    p = subprocess.run(["virsh", "-q", "-c", URI] + list(args), capture_output=True, text=True,
                       timeout=120)
    if check and p.returncode != 0:
        raise AssertionError("virsh %s: %s" % (" ".join(args), p.stderr))
    return p


def forget_all():
    """Remove what an earlier run left: our domains, networks and pool."""
    for vm in VMS:
        virsh("destroy", vm, check=False)
        virsh("undefine", "--nvram", vm, check=False)
    for net in NETS:
        virsh("net-destroy", net, check=False)
        virsh("net-undefine", net, check=False)
    virsh("pool-destroy", POOL, check=False)
    virsh("pool-undefine", POOL, check=False)


class KvmLibvirt(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        subprocess.run([os.path.join(ROOT, "tests", "sim", "libvirtd.sh")], check=True)
        forget_all()
        cls.dir = tempfile.mkdtemp(prefix="gc-it-kvm-")
        os.chmod(cls.dir, 0o755)
        pool = os.path.join(cls.dir, "pool")
        os.mkdir(pool)
        cls.base = os.path.join(pool, "debian-12-base.qcow2")
        subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", cls.base, "1G"], check=True)
        virsh("pool-define-as", POOL, "dir", "--target", pool)
        virsh("pool-start", POOL)
        with open(os.path.join(ROOT, "examples", "kvm-pair.yaml"), encoding="utf-8") as f:
            spec = yaml.safe_load(f)
        # the guests' key: its public half goes into each VM's NoCloud seed
        key = os.path.join(cls.dir, "guest_key")
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "gc-it", "-f", key],
                       check=True)
        for c in spec["credentials"]:
            if c["name"] == "guest-user":
                c["key_file"] = key
        for h in spec["hosts"]:
            h["libvirt_uri"] = URI
            h["accel"] = "tcg"
        for vm in spec["vms"]:
            vm["image"] = cls.base
            vm["pool"] = POOL
            vm["power_on"] = False
        cls.spec = spec
        cls.specfile = cls.write_spec("kvm-pair.yaml", spec)
        cls.state = os.path.join(cls.dir, "state")

    @classmethod
    def tearDownClass(cls):
        forget_all()
        shutil.rmtree(cls.dir, ignore_errors=True)

    @classmethod
    def write_spec(cls, name, spec):
        path = os.path.join(cls.dir, name)
        with open(path, "w", encoding="utf-8") as f:
            yaml.safe_dump(spec, f, sort_keys=False)
        return path

    def gc(self, *args, spec=None):
        return subprocess.run([BIN] + list(args) + ["--state-dir", self.state, spec or self.specfile],
                              capture_output=True, text=True, timeout=600)

    def domain(self, vm):
        return ET.fromstring(virsh("dumpxml", "--inactive", vm).stdout)

    def test_1_apply_defines_what_the_spec_says(self):
        p = self.gc("apply", "--only", "libvirt", "--yes")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("Apply complete: 14 actions done, 0 failed, 0 skipped.", p.stdout)
        for vm, net in (("kvm-worker-01", "kvm01-rdma"), ("kvm-worker-02", "kvm02-rdma")):
            d = self.domain(vm)
            self.assertEqual(d.get("type"), "qemu")  # accel: tcg
            self.assertEqual(d.find("memory").text, str(128 * 1024 * 1024))
            self.assertEqual(d.find("memory").get("unit"), "KiB")
            self.assertEqual(d.find("vcpu").text, "16")
            self.assertIsNotNone(d.find("memoryBacking/locked"))
            # EFI: OVMF chosen by feature, Secure Boot off
            self.assertEqual(d.find("os").get("firmware"), "efi")
            feats = {f.get("name"): f.get("enabled") for f in d.findall("os/firmware/feature")}
            self.assertEqual(feats, {"secure-boot": "no", "enrolled-keys": "no"})
            # the GPU, passed through
            hd = d.findall("devices/hostdev")
            self.assertEqual(len(hd), 1)
            self.assertEqual((hd[0].get("type"), hd[0].get("managed")), ("pci", "yes"))
            a = hd[0].find("source/address")
            self.assertEqual((a.get("domain"), a.get("bus"), a.get("slot"), a.get("function")),
                             ("0x0000", "0x3b", "0x00", "0x0"))
            # the 64-bit window: 80 GB of GPU -> 128 GB, for QEMU and for OVMF
            self.assertEqual(d.find("devices/controller[@model='pcie-root']/pcihole64").text,
                             str(128 * 1024 * 1024))
            args = [a.get("value") for a in d.findall(QEMU_NS + "commandline/" + QEMU_NS + "arg")]
            self.assertEqual(args, ["-fw_cfg", "name=opt/ovmf/X-PciMmio64Mb,string=131072"])
            # NICs: virtio on the default network, the VF from the PF's pool
            nics = [(i.get("type"), i.find("source").get("network"),
                     i.find("model").get("type") if i.find("model") is not None else None)
                    for i in d.findall("devices/interface")]
            self.assertEqual(nics, [("network", "default", "virtio"), ("network", net, None)])
            # the disk: a qcow2 overlay of the base image, in the pool; the
            # NoCloud seed beside it, read-only
            src = d.find("devices/disk/source")
            seed = d.findall("devices/disk")[1]
            self.assertEqual((seed.find("source").get("volume"), seed.find("target").get("dev")),
                             (vm + "-seed.iso", "vdb"))
            self.assertIsNotNone(seed.find("readonly"))
            self.assertEqual((src.get("pool"), src.get("volume")), (POOL, vm + ".qcow2"))
            vol = ET.fromstring(virsh("vol-dumpxml", "--pool", POOL, vm + ".qcow2").stdout)
            self.assertEqual(vol.find("backingStore/path").text, self.base)
            self.assertEqual(vol.find("target/format").get("type"), "qcow2")
            self.assertEqual(virsh("domstate", vm).stdout.strip(), "shut off")
            # the PF's VF pool
            n = ET.fromstring(virsh("net-dumpxml", net).stdout)
            self.assertEqual(n.find("forward").get("mode"), "hostdev")
            self.assertEqual(n.find("forward/pf").get("dev"), "ens5f0")
            info = virsh("net-info", net).stdout
            self.assertRegex(info, r"Autostart:\s+yes")

    def test_2_second_apply_changes_nothing(self):
        before = {vm: virsh("dumpxml", "--inactive", vm).stdout for vm in VMS[:2]}
        p = self.gc("plan", "--only", "libvirt")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("No changes. The cluster matches the spec.", p.stdout)
        p = self.gc("apply", "--only", "libvirt", "--yes")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("No changes", p.stdout)
        for vm in VMS[:2]:
            self.assertEqual(virsh("dumpxml", "--inactive", vm).stdout, before[vm])

    def test_3_hand_edit_is_drift(self):
        xml = virsh("dumpxml", "--inactive", "kvm-worker-01").stdout
        # what `virsh edit` would do: 96 GiB of memory, the GPU removed
        xml = xml.replace("<memory unit='KiB'>134217728</memory>",
                          "<memory unit='KiB'>100663296</memory>")
        xml = xml.replace("<currentMemory unit='KiB'>134217728</currentMemory>",
                          "<currentMemory unit='KiB'>100663296</currentMemory>")
        xml = re.sub(r"<hostdev .*?</hostdev>\n", "", xml, flags=re.S)
        path = os.path.join(self.dir, "edited.xml")
        with open(path, "w", encoding="utf-8") as f:
            f.write(xml)
        virsh("define", path)
        p = self.gc("plan", "--only", "libvirt")
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertRegex(p.stdout, r"~ vm/kvm-worker-01  \[VM off\]\n\s+memory_gb: 96 → 128\n")
        self.assertIn("+ vm/kvm-worker-01/device.pci/0000:3b:00.0  [VM off]", p.stdout)
        self.assertNotIn("kvm-worker-02", p.stdout)
        p = self.gc("apply", "--only", "libvirt", "--yes")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        d = self.domain("kvm-worker-01")
        self.assertEqual(d.find("memory").text, str(128 * 1024 * 1024))
        self.assertEqual(len(d.findall("devices/hostdev")), 1)
        p = self.gc("plan", "--only", "libvirt")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_3a_sriov_nic_placed_without_its_network_is_defined_again(self):
        # the short soak's finding: a domain defined while its hostdev
        # network did not exist gets its SR-IOV interface as an emulated
        # rtl8139 behind a pcie-to-pci-bridge (libvirt places it by the
        # network it finds).  Made here by hand: the network gone, the
        # domain defined again without libvirt's addresses, the network back
        net = virsh("net-dumpxml", "--inactive", "kvm01-rdma").stdout
        virsh("net-undefine", "kvm01-rdma")
        xml = virsh("dumpxml", "--inactive", "kvm-worker-01").stdout
        xml = re.sub(r"\s*<address type='pci'[^>]*/>", "", xml)
        xml = re.sub(r"\s*<controller type='pci' index='[1-9][0-9]*'.*?</controller>", "", xml,
                     flags=re.S)
        path = os.path.join(self.dir, "placed.xml")
        with open(path, "w", encoding="utf-8") as f:
            f.write(xml)
        virsh("define", path)
        with open(os.path.join(self.dir, "net.xml"), "w", encoding="utf-8") as f:
            f.write(net)
        virsh("net-define", os.path.join(self.dir, "net.xml"))
        virsh("net-autostart", "kvm01-rdma")

        def sriov(d):
            return [i for i in d.findall("devices/interface")
                    if i.find("source").get("network") == "kvm01-rdma"][0]

        def bridges(d):
            return d.findall("devices/controller[@model='pcie-to-pci-bridge']")

        d = self.domain("kvm-worker-01")
        self.assertEqual(sriov(d).find("model").get("type"), "rtl8139")  # the precondition
        self.assertEqual(len(bridges(d)), 1)
        p = self.gc("plan", "--only", "libvirt")
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("~ vm/kvm-worker-01/nic.sriov/1  [VM off]\n"
                      "        network: kvm01-rdma (an emulated rtl8139 NIC: defined before the "
                      "network existed) → kvm01-rdma\n", p.stdout)
        self.assertNotIn("kvm-worker-02", p.stdout)
        p = self.gc("apply", "--only", "libvirt", "--yes")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        d = self.domain("kvm-worker-01")
        self.assertIsNone(sriov(d).find("model"))  # a hostdev of the network's VFs
        self.assertEqual(bridges(d), [])
        self.assertEqual(len(d.findall("devices/hostdev")), 1)
        p = self.gc("plan", "--only", "libvirt")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_4_start_failure_names_that_vm(self):
        spec = yaml.safe_load(yaml.safe_dump(self.spec))
        spec["vms"][0]["power_on"] = True
        for vm in spec["vms"]:
            vm["nics"] = [n for n in vm["nics"] if n["type"] != "virtio"]
        path = self.write_spec("kvm-pair-on.yaml", spec)
        p = self.gc("apply", "--only", "libvirt", "--yes", spec=path)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        out = p.stdout + p.stderr
        # the hostdev network's PF does not exist here: starting the VM
        # fails on it, for that VM alone
        self.assertIn("kvm01: power on kvm-worker-01 FAILED: VM 'kvm-worker-01': network "
                      "'kvm01-rdma': internal error: No usable Vf's present on SRIOV PF ens5f0",
                      out)
        # the other host's VM (its virtio NIC dropped here too) is unaffected
        self.assertIn("kvm02        libvirt  2 done, 0 failed, 0 skipped", out)
        self.assertEqual(virsh("domstate", "kvm-worker-01").stdout.strip(), "shut off")

    def test_5_hostdev_start_error_is_reported(self):
        spec = yaml.safe_load(yaml.safe_dump(self.spec))
        vm = spec["vms"][1]
        vm["power_on"] = True
        vm["nics"] = []
        spec["vms"] = [vm]
        path = self.write_spec("kvm-hostdev-on.yaml", spec)
        p = self.gc("apply", "--only", "libvirt", "--yes", spec=path)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("FAILED: VM 'kvm-worker-02': ", p.stdout + p.stderr)
        self.assertIn("passthrough of host PCI devices", p.stdout + p.stderr)

    def test_6_locked_memory(self):
        """A full reservation is <memoryBacking><locked/>; where the host may
        not lock it (this sandbox: no CAP_SYS_RESOURCE) the start error is
        libvirt's, for that VM."""
        spec = yaml.safe_load(yaml.safe_dump(self.spec))
        spec["vms"] = [{"name": "kvm-locked", "host": "kvm01", "image": self.base, "pool": POOL,
                        "cpus": 1, "memory_gb": 1, "reserve_all_memory": True}]
        path = self.write_spec("kvm-locked.yaml", spec)
        p = self.gc("apply", "--only", "libvirt", "--yes", spec=path)
        self.assertIsNotNone(self.domain("kvm-locked").find("memoryBacking/locked"))
        state = virsh("domstate", "kvm-locked").stdout.strip()
        if p.returncode == 0:
            self.assertEqual(state, "running")
        else:
            self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
            self.assertRegex(p.stdout + p.stderr,
                             r"power on kvm-locked FAILED: VM 'kvm-locked': .*locked memory")
            self.assertEqual(state, "shut off")
        virsh("destroy", "kvm-locked", check=False)

    def test_7_disk_grows_never_shrinks(self):
        spec = yaml.safe_load(yaml.safe_dump(self.spec))
        vm = {"name": "kvm-disk", "host": "kvm01", "image": self.base, "pool": POOL, "cpus": 1,
              "memory_gb": 1, "disk_gb": 2, "power_on": False}
        spec["vms"] = [vm]
        cap = lambda: int(ET.fromstring(virsh("vol-dumpxml", "--pool", POOL,
                                              "kvm-disk.qcow2").stdout).find("capacity").text)
        try:
            p = self.gc("apply", "--only", "libvirt", "--yes", spec=self.write_spec("d.yaml", spec))
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertEqual(cap(), 2 << 30)
            vm["disk_gb"] = 3
            p = self.gc("plan", "--only", "libvirt", spec=self.write_spec("d.yaml", spec))
            self.assertIn("disk_gb: 2 → 3", p.stdout)
            p = self.gc("apply", "--only", "libvirt", "--yes", spec=self.write_spec("d.yaml", spec))
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertEqual(cap(), 3 << 30)
            vm["disk_gb"] = 2
            p = self.gc("apply", "--only", "libvirt", "--yes", spec=self.write_spec("d.yaml", spec))
            self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
            self.assertIn("VM 'kvm-disk': its disk kvm-disk.qcow2 is 3 GB, disk_gb 2 would shrink "
                          "it (gpuclusterctl only grows disks)", p.stdout + p.stderr)
            self.assertEqual(cap(), 3 << 30)
        finally:
            virsh("undefine", "kvm-disk", check=False)

    def test_8_saved_plan_refused_after_drift(self):
        """plan --out, then a hand edit of one domain: apply FILE names that
        KVM host's libvirt target and changes nothing."""
        spec = yaml.safe_load(yaml.safe_dump(self.spec))
        spec["vms"][0]["memory_gb"] = 64
        path = self.write_spec("kvm-pair-64.yaml", spec)
        out = os.path.join(self.dir, "plan.json")
        p = self.gc("plan", "--only", "libvirt", "--out", out, spec=path)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        xml = virsh("dumpxml", "--inactive", "kvm-worker-01").stdout
        edited = os.path.join(self.dir, "edited-vcpu.xml")
        with open(edited, "w", encoding="utf-8") as f:
            f.write(re.sub(r"<vcpu placement='static'>16</vcpu>",
                           "<vcpu placement='static'>8</vcpu>", xml))
        virsh("define", edited)
        p = subprocess.run([BIN, "apply", "--state-dir", self.state, out], capture_output=True,
                           text=True, timeout=600)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("gpuclusterctl: error: libvirt 'kvm01' changed since the plan was saved: "
                      "nothing was changed; run plan --out again and review it", p.stderr)
        d = self.domain("kvm-worker-01")
        self.assertEqual((d.find("vcpu").text, d.find("memory").text), ("8", str(128 << 20)))
        p = self.gc("apply", "--only", "libvirt", "--yes")  # back to the spec
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_9_domain_defined_meanwhile_is_defined_over(self):
        """A domain of the VM's name that appears after the driver looked for
        it (what a killed run's define leaves: libvirtd finishes the call after
        the run is gone; the soak found the re-run failing on it with
        "already exists with uuid") gets the spec's definition over its UUID."""
        virsh("undefine", "--nvram", "kvm-worker-01")
        uuid = "6d0a3c41-9e55-4a3b-8f0e-3f1d2c7b9a10"
        hand = os.path.join(self.dir, "meanwhile.xml")
        with open(hand, "w", encoding="utf-8") as f:
            f.write("<domain type='qemu'><name>kvm-worker-01</name><uuid>%s</uuid>"
                    "<memory unit='KiB'>65536</memory><os><type arch='x86_64'>hvm</type></os>"
                    "</domain>" % uuid)
        rc, out = self.apply_with_gap("kvm-worker-01", lambda: virsh("define", hand),
                                      doing="defining it")
        self.assertEqual(rc, 0, out)
        self.assertIn("kvm-worker-01: defined meanwhile (uuid %s): defining it again" % uuid, out)
        self.assertEqual(virsh("domuuid", "kvm-worker-01").stdout.strip(), uuid)
        d = self.domain("kvm-worker-01")
        self.assertEqual((d.find("vcpu").text, d.find("memory").text), ("16", str(128 << 20)))
        self.assertEqual(len(d.findall("devices/hostdev")), 1)
        p = self.gc("plan", "--only", "libvirt")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def apply_with_gap(self, name, in_gap, spec=None, doing="creating it", env=None):
        """apply --only libvirt held (GC_TEST_LIBVIRT_CREATE_PAUSE) between its
        look at the network, volume or domain `name` and its create (or the
        domain's define or start), where in_gap() does the same, as a killed run's call
        that libvirtd finished after the run was gone would; its output and
        exit status."""
        env = dict(os.environ, GC_TEST_LIBVIRT_CREATE_PAUSE="%s:4000" % name, **(env or {}))
        p = subprocess.Popen([BIN, "apply", "-v", "--only", "libvirt", "--yes", "--state-dir", self.state,
                              spec or self.specfile], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, env=env)
        out, seen = [], False
        for line in p.stdout:
            out.append(line)
            if "%s: pausing 4000 ms before %s (test hook)" % (name, doing) in line:
                in_gap()
                seen = True
                break
        out.append(p.stdout.read())
        p.stdout.close()
        rc = p.wait(timeout=600)
        self.assertTrue(seen, "".join(out))
        return rc, "".join(out)

    def plain_spec(self, power_on):
        """A spec of one small VM, kvm-plain on kvm01 (no NICs, no GPU): its path."""
        spec = yaml.safe_load(yaml.safe_dump(self.spec))
        spec["vms"] = [{"name": "kvm-plain", "host": "kvm01", "image": self.base, "pool": POOL,
                        "cpus": 1, "memory_gb": 1, "power_on": power_on}]
        return self.write_spec("plain-%s.yaml" % ("on" if power_on else "off"), spec)

    def seed_files(self, vm):
        """The NoCloud files of a VM's seed volume, read with isoinfo."""
        path = os.path.join(self.dir, vm + "-seed.iso")
        virsh("vol-download", "--pool", POOL, vm + "-seed.iso", path)
        names = subprocess.run(["isoinfo", "-R", "-f", "-i", path], capture_output=True, text=True,
                               check=True).stdout.split()
        return {n: subprocess.run(["isoinfo", "-R", "-i", path, "-x", n], capture_output=True,
                                  check=True).stdout for n in names}

    def test_9a_network_defined_meanwhile_is_defined_over(self):
        """The network of that race: the spec's definition over the UUID of
        the one that appeared, autostarted."""
        virsh("net-destroy", "kvm01-rdma", check=False)
        virsh("net-undefine", "kvm01-rdma")
        uuid = "0f6c2f0e-5b8e-4c7e-9d51-7a3e2b1c4d10"
        hand = os.path.join(self.dir, "net-meanwhile.xml")
        with open(hand, "w", encoding="utf-8") as f:
            f.write("<network><name>kvm01-rdma</name><uuid>%s</uuid>"
                    "<bridge name='gcmeanwhile0'/></network>" % uuid)
        rc, out = self.apply_with_gap("kvm01-rdma", lambda: virsh("net-define", hand))
        self.assertEqual(rc, 0, out)
        self.assertIn("network kvm01-rdma: defined meanwhile: defining it again", out)
        self.assertEqual(virsh("net-uuid", "kvm01-rdma").stdout.strip(), uuid)
        n = ET.fromstring(virsh("net-dumpxml", "--inactive", "kvm01-rdma").stdout)
        self.assertEqual(n.find("forward").get("mode"), "hostdev")
        self.assertEqual(n.find("forward/pf").get("dev"), "ens5f0")
        self.assertIsNone(n.find("bridge"))
        self.assertRegex(virsh("net-info", "kvm01-rdma").stdout, r"Autostart:\s+yes")
        p = self.gc("plan", "--only", "libvirt")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_9b_overlay_created_meanwhile_is_kept_and_grown(self):
        """The overlay of that race is kept (it holds the VM's disk, never
        deleted) and grown to disk_gb like one an earlier run made."""
        spec = yaml.safe_load(yaml.safe_dump(self.spec))
        spec["vms"] = [{"name": "kvm-disk", "host": "kvm01", "image": self.base, "pool": POOL,
                        "cpus": 1, "memory_gb": 1, "disk_gb": 2, "power_on": False}]
        path = self.write_spec("disk-meanwhile.yaml", spec)
        virsh("undefine", "kvm-disk", check=False)
        virsh("vol-delete", "--pool", POOL, "kvm-disk.qcow2", check=False)
        try:
            rc, out = self.apply_with_gap("kvm-disk.qcow2", lambda: virsh(
                "vol-create-as", POOL, "kvm-disk.qcow2", "1G", "--format", "qcow2",
                "--backing-vol", self.base, "--backing-vol-format", "qcow2"), spec=path)
            self.assertEqual(rc, 0, out)
            self.assertIn("kvm-disk: volume kvm-disk.qcow2 created meanwhile: keeping it", out)
            vol = ET.fromstring(virsh("vol-dumpxml", "--pool", POOL, "kvm-disk.qcow2").stdout)
            self.assertEqual(int(vol.find("capacity").text), 2 << 30)
            self.assertEqual(vol.find("backingStore/path").text, self.base)
            d = self.domain("kvm-disk")
            self.assertEqual(d.find("devices/disk/source").get("volume"), "kvm-disk.qcow2")
            p = self.gc("plan", "--only", "libvirt", spec=path)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        finally:
            virsh("undefine", "kvm-disk", check=False)
            virsh("vol-delete", "--pool", POOL, "kvm-disk.qcow2", check=False)

    def test_9c_seed_created_meanwhile_is_written_again(self):
        """A seed volume that appears between the delete of the old seed and
        the create of the new one is deleted and the seed written again: the
        VM's NoCloud files, not what appeared."""
        vm = "kvm-worker-02"
        before = self.seed_files(vm)
        self.assertIn("/user-data", before)
        virsh("undefine", "--nvram", vm)  # its define writes the seed again
        rc, out = self.apply_with_gap(vm + "-seed.iso", lambda: virsh(
            "vol-create-as", POOL, vm + "-seed.iso", "1M", "--format", "raw"))
        self.assertEqual(rc, 0, out)
        self.assertIn("%s: volume %s-seed.iso created meanwhile: writing it again" % (vm, vm), out)
        self.assertEqual(self.seed_files(vm), before)
        self.assertEqual(self.domain(vm).findall("devices/disk")[1].find("source").get("volume"),
                         vm + "-seed.iso")
        p = self.gc("plan", "--only", "libvirt")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_9d_vm_started_meanwhile_is_left_running(self):
        """A VM that starts between the driver's look at its state and its own
        start (a killed run's start, finished by libvirtd) is left running:
        libvirt's "already running" is what the spec wants."""
        path = self.plain_spec(power_on=True)
        try:
            rc, out = self.apply_with_gap("kvm-plain", lambda: virsh("start", "kvm-plain"), spec=path,
                                          doing="starting it")
            self.assertEqual(rc, 0, out)
            self.assertIn("kvm-plain: started meanwhile: it runs", out)
            self.assertEqual(virsh("domstate", "kvm-plain").stdout.strip(), "running")
            p = self.gc("plan", "--only", "libvirt", spec=path)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        finally:
            remove_plain()

    def test_9e_vm_gone_off_before_its_destroy_is_off(self):
        """A VM that goes off between the driver's look at its state and its
        destroy (after a guest shutdown that took too long) is what the
        spec wants: libvirt's refusal to destroy a domain that is not
        running is not a failure."""
        on, off = self.plain_spec(power_on=True), self.plain_spec(power_on=False)
        try:
            p = self.gc("apply", "--only", "libvirt", "--yes", spec=on)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertEqual(virsh("domstate", "kvm-plain").stdout.strip(), "running")
            # nothing boots in this VM: its ACPI shutdown is never answered,
            # so after 1 s the driver destroys it, held in the gap first
            rc, out = self.apply_with_gap("kvm-plain", lambda: virsh("destroy", "kvm-plain"),
                                          spec=off, doing="destroying it",
                                          env={"GC_GUEST_SHUTDOWN_TIMEOUT_MS": "1000"})
            self.assertEqual(rc, 0, out)
            self.assertIn("kvm-plain: guest shutdown, 0 s", out)
            self.assertIn("kvm-plain: went off by itself before the destroy", out)
            self.assertEqual(virsh("domstate", "kvm-plain").stdout.strip(), "shut off")
            p = self.gc("plan", "--only", "libvirt", spec=off)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        finally:
            remove_plain()

    def test_9f_ctrl_c_in_a_guest_shutdown_forces_nothing_off(self):
        """Ctrl-C while apply waits for a guest's own shutdown (300 s by
        default) ends the wait at once and does not destroy the VM: a
        graceful stop never forces a VM off; the step fails saying so, and
        the next apply asks again."""
        on, off = self.plain_spec(power_on=True), self.plain_spec(power_on=False)
        try:
            p = self.gc("apply", "--only", "libvirt", "--yes", spec=on)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            # nothing boots in this VM: its ACPI shutdown is never answered
            p = subprocess.Popen([BIN, "apply", "-v", "--only", "libvirt", "--yes", "--state-dir",
                                  self.state, off], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 text=True)
            out, seen = [], False
            for line in p.stdout:
                out.append(line)
                if "kvm-plain: guest shutdown, 1 s" in line:
                    p.send_signal(signal.SIGINT)
                    seen = True
                    break
            out.append(p.stdout.read())
            p.stdout.close()
            rc = p.wait(timeout=60)
            out = "".join(out)
            self.assertTrue(seen, out)
            self.assertEqual(rc, 130, out)
            self.assertRegex(out, r"VM 'kvm-plain': interrupted \d+ s into its guest shutdown: "
                                  r"not destroyed \(the guest may still shut down\)")
            self.assertIn("\nApply interrupted: 0 actions done, 1 failed, 0 skipped.\n", out)
            self.assertEqual(virsh("domstate", "kvm-plain").stdout.strip(), "running")
            # the power-off is still to do
            p = self.gc("plan", "--only", "libvirt", spec=off)
            self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
            self.assertIn("power off kvm-plain", p.stdout)
        finally:
            remove_plain()


def remove_plain():
    """Whatever a test left of kvm-plain (plain_spec)."""
    virsh("destroy", "kvm-plain", check=False)
    virsh("undefine", "--nvram", "kvm-plain", check=False)
    virsh("vol-delete", "--pool", POOL, "kvm-plain.qcow2", check=False)


if __name__ == "__main__":
    unittest.main()
