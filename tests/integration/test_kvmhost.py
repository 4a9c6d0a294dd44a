"""test_kvmhost - the KVM host driver against a real Linux.

One lab VM (QEMU/TCG, the lab's Debian 12 image, booted by scripts/lab.sh
from tests/data/kvm/kvmhost-lab.yaml) stands in for a KVM host: its
/proc/cmdline, /proc/cpuinfo, os-release, sysfs, sudo and systemd are
real, and so are the files the driver writes and the reboot it sends.
What a lab VM lacks is a stand-in, installed by these tests over plain
ssh (tests/sim/kvmhost, docs/lab.md "A KVM host"):

  - a boot loader: the lab boots its kernel straight from QEMU.  The
    stand-in update-grub writes /boot/grub/grub.cfg from /etc/default/grub
    and grub.d as grub-mkconfig does; the stand-in for GRUB itself
    (gclab-grub.service) shows grub.cfg's arguments in /proc/cmdline at
    boot;
  - an IOMMU: QEMU gives the VM none, so a kernel with amd_iommu=on has no
    IOMMU groups, exactly what a host whose firmware keeps VT-d/AMD-Vi off
    shows.  GPUs, SR-IOV NICs and vGPUs need hardware: the spec names only
    a vGPU-mode GPU (at the VM's host bridge, 0000:00:00.0) and no VM,
    which makes the IOMMU the one resource.

The tests run in order on one VM (two reboots, ~5 min on 2 cores).
Everything asserted about the VM is read back over plain ssh.
"""
import os
import shutil
import subprocess
import tempfile
import unittest

from labtest import ROOT, LabCase

STANDINS = os.path.join(ROOT, "tests", "sim", "kvmhost")
# test_3's VM on the host's libvirtd (this machine's, tests/sim/libvirtd.sh)
VM = "kvmlab-vm"
VM_POOL = "gc-it-kvmhost"


def virsh(*args, check=True):
    p = subprocess.run(["virsh", "-q", "-c", "qemu:///system"] + list(args), capture_output=True,
                       text=True, timeout=120)
    if check and p.returncode != 0:
        raise AssertionError("virsh %s: %s" % (" ".join(args), p.stderr))
    return p


def forget_vm():
    """What test_3 left in libvirtd: its VM, the VM's volumes, the pool."""
    virsh("destroy", VM, check=False)
    virsh("undefine", "--nvram", VM, check=False)
    virsh("pool-destroy", VM_POOL, check=False)
    virsh("pool-undefine", VM_POOL, check=False)
# guests.sh boots every lab VM with this (its kernel_cmdline)
QEMU_APPEND = "root=LABEL=gclab-root rw console=ttyS0 net.ifnames=0 panic=-1 no_timer_check"


class KvmHostLab(LabCase):
    spec = "tests/data/kvm/kvmhost-lab.yaml"
    guests = 1
    port = 2370
    addr = "127.0.0.71"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.gport = cls.port + 10000
        vendor = cls.ssh_cls("grep -m1 '^vendor_id' /proc/cpuinfo").split(":")[1].strip()
        cls.key = "intel_iommu" if vendor == "GenuineIntel" else "amd_iommu"
        cls.kernel = cls.ssh_cls("uname -r").strip()
        cls.hostspec = os.path.join(cls.lab, "kvmhost.yaml")
        with open(os.path.join(ROOT, "tests", "data", "kvm", "kvmhost-apply.yaml.in"),
                  encoding="utf-8") as f:
            text = f.read() % {"name": "kvmhost-lab", "lab": cls.lab, "port": cls.gport,
                               "addr": cls.addr}
        with open(cls.hostspec, "w", encoding="utf-8") as f:
            f.write(text)

    def setUp(self):
        # one VM for the whole class, in order: no lab reset between tests
        self.state_dir = os.path.join(self.lab, "state-%s" % self._testMethodName)

    # ---------------------------------------------------------------- an independent client

    @classmethod
    def ssh_cls(cls, command, stdin=None):
        r = subprocess.run(["ssh", "-p", str(cls.port + 10000), "-i",
                            os.path.join(cls.lab, "guest_key"),
                            "-o", "UserKnownHostsFile=" + os.path.join(cls.lab, "known_hosts"),
                            "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes",
                            "-o", "ConnectTimeout=5", "-o", "LogLevel=ERROR",
                            "gclab@" + cls.addr, command],
                           input=stdin, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise AssertionError("ssh %s: exit %d\n%s%s" % (command, r.returncode, r.stdout,
                                                          r.stderr))
        return r.stdout

    def ssh(self, command, stdin=None):
        return self.ssh_cls(command, stdin)

    def install(self, standin, path, mode):
        with open(os.path.join(STANDINS, standin), encoding="utf-8") as f:
            self.ssh("sudo mkdir -p \"$(dirname %s)\" && sudo tee %s >/dev/null && sudo chmod %s %s"
                     % (path, path, mode, path), stdin=f.read())

    def boot_id(self):
        return self.ssh("cat /proc/sys/kernel/random/boot_id").strip()

    def kvm(self, verb, check, timeout=300):
        return self.gc(verb, "--only", "kvm", spec=self.hostspec, check=check, timeout=timeout)

    # ---------------------------------------------------------------- the tests

    def test_1_observes_a_real_linux(self):
        # the lab image has no boot loader tool: refused before any change
        r = self.kvm("plan", check=1)
        want = ("host 'kvmlab' has neither update-grub nor grubby: cannot set the kernel "
                "arguments %s=on iommu=pt (set them in its boot loader by hand)" % self.key)
        self.assertIn("  kvm kvmlab: unknown: %s\n" % want, r.stdout)
        self.assertTrue(r.stderr.endswith("gpuclusterctl: error: kvm 'kvmlab' failed: %s\n"
                                          % want), r.stderr)
        r = self.kvm("apply", check=1)
        self.assertEqual(self.ssh("ls /etc/default/grub.d 2>&1 || true"),
                         "ls: cannot access '/etc/default/grub.d': No such file or directory\n")

    def test_1a_a_host_slower_than_its_read_timeout_is_unknown(self):
        # `wc` (in the observation's IOMMU-group count) takes 4 s on this
        # host; the host's `ssh: {read_timeout_s: 2}` cuts each read short:
        # tried again on a new connection, then the host is unknown
        spec = os.path.join(self.lab, "kvmhost-read-timeout.yaml")
        with open(self.hostspec, encoding="utf-8") as f:
            text = f.read()
        head = "    address: %s\n" % self.addr
        self.assertEqual(text.count(head), 1)
        with open(spec, "w", encoding="utf-8") as f:
            f.write(text.replace(head, head + "    ssh: {read_timeout_s: 2}\n"))
        self.ssh("sudo tee /usr/local/sbin/wc >/dev/null && sudo chmod 755 /usr/local/sbin/wc",
                 stdin="#!/bin/sh\nsleep 4\nexec /usr/bin/wc \"$@\"\n")
        try:
            r = self.gc("plan", "--only", "kvm", spec=spec, check=1)
        finally:
            self.ssh("sudo rm -f /usr/local/sbin/wc")
        timed_out = ("host 'kvmlab': observation: ssh gclab@%s:%d: command: timed out after 2.000 s"
                     % (self.addr, self.gport))
        self.assertEqual(r.stderr.count("kvmlab: retrying after: " + timed_out + "\n"), 3, r.stderr)
        self.assertTrue(r.stderr.endswith("gpuclusterctl: error: kvm 'kvmlab' failed: %s\n"
                                          % timed_out), r.stderr)
        self.assertIn("  kvm kvmlab: unknown: %s\n" % timed_out, r.stdout)

    def test_2_plans_the_kernel_arguments(self):
        self.install("update-grub", "/usr/local/sbin/update-grub", "755")
        self.install("default-grub", "/etc/default/grub", "644")
        self.ssh("sudo update-grub 2>/dev/null")
        r = self.kvm("plan", check=2)
        self.assertEqual(r.stdout,
                         "Wave 1 of 1\n"
                         "\n"
                         "  kvm kvmlab\n"
                         "    ~ kvmlab/kvm.iommu  [reboot]\n"
                         "        iommu: off → on\n"
                         "        iommu_mode: none → pt\n"
                         "    > reboot\n"
                         "        why: one reboot for 1 change that takes effect after a reboot\n"
                         "    > wait for the host\n"
                         "        why: the host must answer again, with a new boot id\n"
                         "    > verify\n"
                         "        why: read the host back after its reboot\n"
                         "\n"
                         "Plan: 0 to add, 1 to change, 0 to destroy, 3 synthesized steps "
                         "(0 hosts need maintenance, 1 reboots).\n")

    def vm_on_the_host(self):
        """The host spec with a VM on the host's libvirtd (this machine's
        qemu:///system, the default for a loopback address), and that VM
        running, defined by hand (virsh): its path."""
        subprocess.run([os.path.join(ROOT, "tests", "sim", "libvirtd.sh")], check=True,
                       capture_output=True)
        pool = tempfile.mkdtemp(prefix="gc-it-kvmhost-pool-")
        os.chmod(pool, 0o755)
        self.addCleanup(shutil.rmtree, pool, ignore_errors=True)
        self.addCleanup(forget_vm)
        forget_vm()
        base = os.path.join(pool, "base.qcow2")
        subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", base, "1G"], check=True)
        virsh("pool-define-as", VM_POOL, "dir", "--target", pool)
        virsh("pool-start", VM_POOL)
        xml = os.path.join(self.lab, "kvmlab-vm.xml")
        with open(xml, "w", encoding="utf-8") as f:
            f.write("<domain type='qemu'><name>%s</name><memory unit='MiB'>128</memory>"
                    "<vcpu>1</vcpu><os><type arch='x86_64'>hvm</type></os></domain>" % VM)
        virsh("define", xml)
        virsh("start", VM)
        with open(self.hostspec, encoding="utf-8") as f:
            text = f.read()
        head = "    address: %s\n" % self.addr
        self.assertEqual(text.count(head), 1)
        text = text.replace(head, head + "    accel: tcg\n")
        text += ("vms:\n  - {name: %s, host: kvmlab, image: %s, pool: %s, cpus: 1, memory_gb: 1, "
                 "power_on: true}\n" % (VM, base, VM_POOL))
        spec = os.path.join(self.lab, "kvmhost-vm.yaml")
        with open(spec, "w", encoding="utf-8") as f:
            f.write(text)
        return spec

    def test_3_apply_reboots_and_verify_finds_the_loader_did_not_boot_them(self):
        # with a VM running on the host: powered off for the host's reboot
        # (its guest, none here, never shuts down: destroyed after 1 s), and
        # powered back on when the window fails, as it was found
        spec = self.vm_on_the_host()
        vm_before = virsh("domid", VM).stdout.strip()
        before = self.boot_id()
        r = self.gc("apply", "--only", "kvm,libvirt", spec=spec, check=1, timeout=900,
                    env=dict(self.env, GC_GUEST_SHUTDOWN_TIMEOUT_MS="1000"))
        self.assertNotEqual(self.boot_id(), before, "no reboot happened")
        self.assertRegex(r.stdout, r"\n  kvmlab +powered back on after the failure: kvmlab-vm\n")
        self.assertNotIn("LEFT", r.stdout)
        # read back by libvirt's own client: running, in a new QEMU process
        self.assertEqual(virsh("domstate", VM).stdout.strip(), "running")
        self.assertNotEqual(virsh("domid", VM).stdout.strip(), vm_before)
        self.assertTrue(r.stderr.endswith(
            "gpuclusterctl: error: kvm 'kvmlab' failed: host 'kvmlab': after the reboot kernel "
            "arguments %(k)s=on iommu=pt configured, the running kernel has %(k)s=off "
            "iommu=none: does the boot loader boot its default entry?\n" % {"k": self.key}),
            r.stderr)
        self.assertEqual(self.ssh("cat /etc/default/grub.d/99-gpuclusterctl-iommu.cfg"),
                         "# written by gpuclusterctl: do not edit, the next apply puts it back\n"
                         "# the IOMMU for VFIO device assignment, in passthrough mode for the "
                         "host's own devices\n"
                         "GRUB_CMDLINE_LINUX=\"$GRUB_CMDLINE_LINUX %s=on iommu=pt\"\n" % self.key)
        self.assertEqual(self.ssh("grep -E '^[[:space:]]+linux' /boot/grub/grub.cfg"),
                         "\tlinux\t/boot/vmlinuz-%s root=LABEL=gclab-root ro  %s=on iommu=pt "
                         "quiet\n" % (self.kernel, self.key))
        self.assertEqual(self.ssh("cat /proc/cmdline").split(), QEMU_APPEND.split())

    def test_4_owed_reboot_then_no_iommu_in_the_firmware(self):
        # now with a boot loader that boots grub.cfg (the stand-in for GRUB)
        self.install("grub-boot.sh", "/usr/local/lib/gclab/grub-boot.sh", "755")
        self.install("gclab-grub.service", "/etc/systemd/system/gclab-grub.service", "644")
        self.ssh("sudo systemctl enable -q gclab-grub.service")
        r = self.kvm("plan", check=2)
        self.assertEqual(r.stdout,
                         "Wave 1 of 1\n"
                         "\n"
                         "  kvm kvmlab\n"
                         "    > reboot\n"
                         "        why: a reboot is owed: kernel arguments %(k)s=on iommu=pt "
                         "configured, the running kernel has %(k)s=off iommu=none\n"
                         "    > wait for the host\n"
                         "        why: the host must answer again, with a new boot id\n"
                         "    > verify\n"
                         "        why: read the host back after its reboot\n"
                         "\n"
                         "Plan: 0 to add, 0 to change, 0 to destroy, 3 synthesized steps "
                         "(0 hosts need maintenance, 1 reboots).\n" % {"k": self.key})
        before = self.boot_id()
        r = self.kvm("apply", check=1, timeout=900)
        self.assertNotEqual(self.boot_id(), before, "no reboot happened")
        self.assertEqual(self.ssh("cat /proc/cmdline").split(),
                         ("BOOT_IMAGE=/boot/vmlinuz-%s root=LABEL=gclab-root ro %s=on iommu=pt "
                          "quiet %s" % (self.kernel, self.key, QEMU_APPEND)).split())
        firmware = ("host 'kvmlab' runs with %s=on but has no IOMMU groups: turn on %s in its "
                    "firmware" % (self.key, "VT-d" if self.key == "intel_iommu"
                                  else "AMD-Vi (IOMMU)"))
        self.assertTrue(r.stderr.endswith("gpuclusterctl: error: kvm 'kvmlab' failed: after the "
                                          "reboot: %s\n" % firmware), r.stderr)
        # the arguments hold now: nothing to change, the host is refused for its firmware
        r = self.kvm("plan", check=1)
        self.assertIn("  kvm kvmlab: unknown: %s\n" % firmware, r.stdout)


if __name__ == "__main__":
    unittest.main()
