"""test_kvm_guest - a VM from the spec, defined through a real libvirtd,
booted with OVMF from the lab's Debian image, given its identity by the
NoCloud seed the libvirt driver writes, reached over SSH and configured by
the guest stage: the KVM path end to end, short of hardware.

The base image is the lab's efi.qcow2 (tests/sim/guestlab/image.sh: the
lab's root filesystem behind an EFI system partition holding a unified
kernel image); the VM runs under TCG (`accel: tcg`) on an isolated libvirt
network whose bridge this machine reaches.  What is asserted is read with
independent clients: `virsh`, `isoinfo` on the seed volume, `ssh` into the
guest.
"""
import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest

import yaml

from test_kvm import BIN, ROOT, URI, virsh

POOL = "gc-it-kvmg"
NET = "gc-it-mgmt"
VM = "kvm-guest-01"
ADDR = "192.168.124.61"


def forget_all():
    virsh("destroy", VM, check=False)
    virsh("undefine", "--nvram", VM, check=False)
    virsh("net-destroy", NET, check=False)
    virsh("net-undefine", NET, check=False)
    virsh("pool-destroy", POOL, check=False)
    virsh("pool-undefine", POOL, check=False)


class KvmGuest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        subprocess.run([os.path.join(ROOT, "tests", "sim", "libvirtd.sh")], check=True)
        img = subprocess.run([os.path.join(ROOT, "tests", "sim", "guestlab", "image.sh"), "build"],
                             check=True, capture_output=True, text=True).stdout.strip()
        forget_all()
        cls.dir = tempfile.mkdtemp(prefix="gc-it-kvmg-")
        os.chmod(cls.dir, 0o755)
        pool = os.path.join(cls.dir, "pool")
        os.mkdir(pool)
        cls.base = os.path.join(pool, "lab-efi.qcow2")
        try:
            os.link(os.path.join(img, "efi.qcow2"), cls.base)
        except OSError:
            shutil.copyfile(os.path.join(img, "efi.qcow2"), cls.base)
        virsh("pool-define-as", POOL, "dir", "--target", pool)
        virsh("pool-start", POOL)
        netxml = os.path.join(cls.dir, "net.xml")
        with open(netxml, "w", encoding="utf-8") as f:
            f.write("<network><name>%s</name><bridge name='gcitbr0' stp='off'/>"
                    "<dns enable='no'/><ip address='192.168.124.1' prefix='24'/></network>" % NET)
        virsh("net-define", netxml)
        virsh("net-start", NET)
        cls.key = os.path.join(cls.dir, "guest_key")
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "gc-it", "-f", cls.key],
                       check=True)
        cls.known = os.path.join(cls.dir, "known_hosts")
        spec = {
            "apiVersion": "gpuclusterctl/v1", "kind": "Cluster", "metadata": {"name": "kvm-guest"},
            "credentials": [{"name": "root", "username": "root", "key_file": cls.key},
                            {"name": "guest", "username": "gclab", "key_file": cls.key}],
            "hosts": [{"name": "kvm01", "hypervisor": "kvm", "address": "127.0.0.21",
                       "libvirt_uri": URI, "accel": "tcg", "credentials": "root"}],
            "vms": [{"name": VM, "host": "kvm01", "image": cls.base, "pool": POOL, "cpus": 1,
                     "memory_gb": 1, "firmware": "efi",
                     "nics": [{"type": "virtio", "network": NET, "address": ADDR + "/24"}],
                     "guest": {"address": ADDR, "credentials": "guest", "os": "debian",
                               "ssh": {"known_hosts": cls.known, "trust_new_host_keys": True},
                               "rdma_packages": True}}],
        }
        cls.spec = os.path.join(cls.dir, "kvm-guest.yaml")
        with open(cls.spec, "w", encoding="utf-8") as f:
            yaml.safe_dump(spec, f, sort_keys=False)
        cls.state = os.path.join(cls.dir, "state")

    @classmethod
    def tearDownClass(cls):
        forget_all()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def gc(self, *args):
        return subprocess.run([BIN] + list(args) + ["--state-dir", self.state, self.spec],
                              capture_output=True, text=True, timeout=1500)

    def ssh(self, *cmd):
        return subprocess.run(["ssh", "-i", self.key, "-o", "BatchMode=yes",
                               "-o", "UserKnownHostsFile=" + self.known,
                               "-o", "StrictHostKeyChecking=yes", "gclab@" + ADDR] + list(cmd),
                              capture_output=True, text=True, timeout=300)

    def test_1_apply_boots_seeds_and_configures(self):
        t0 = time.monotonic()
        p = self.gc("apply", "--only", "libvirt,guest", "--yes")
        took = time.monotonic() - t0
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        print("\n  apply (define, boot with OVMF under TCG, cloud-init, guest stage): %.0f s"
              % took)
        self.assertEqual(virsh("domstate", VM).stdout.strip(), "running")
        # the seed, read with isoinfo: cloud-init's NoCloud files
        vol = virsh("vol-path", "--pool", POOL, VM + "-seed.iso").stdout.strip()
        info = subprocess.run(["isoinfo", "-d", "-i", vol], capture_output=True, text=True).stdout
        self.assertIn("Volume id: CIDATA", info)  # ISO 9660 d-characters: capitals
        ud = subprocess.run(["isoinfo", "-R", "-i", vol, "-x", "/user-data"],
                            capture_output=True, text=True).stdout
        self.assertTrue(ud.startswith("#cloud-config\n"), ud)
        with open(self.key + ".pub", encoding="utf-8") as f:
            self.assertIn(f.read().strip(), ud)
        nc = subprocess.run(["isoinfo", "-R", "-i", vol, "-x", "/network-config"],
                            capture_output=True, text=True).stdout
        self.assertIn('"' + ADDR + '/24"', nc)
        # the guest: its name and address from the seed, the stage's package
        p = self.ssh("hostname; ip -4 -o addr show; sudo -n cloud-init status; "
                     "dpkg-query -W -f='${Status}' rdma-core")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr, "")  # sudo resolves the seed's hostname
        out = p.stdout.splitlines()
        self.assertEqual(out[0], VM)
        self.assertIn("status: done", out)
        self.assertTrue(any(ADDR + "/24" in l for l in out), p.stdout)
        self.assertEqual(out[-1], "install ok installed")

    def test_2_reapply_changes_nothing(self):
        p = self.gc("plan", "--only", "libvirt,guest")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("No changes. The cluster matches the spec.", p.stdout)

    def test_3_validate_reads_the_kvm_targets_back(self):
        """validate's read-back covers the libvirt domain like a vCenter VM
        (the node probe, RDMA pairs and CUDA need what the lab VM lacks)."""
        p = self.gc("validate", "--target", VM, "--skip", "node,pairs,cuda", "--json")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        doc = json.loads(p.stdout)
        self.assertTrue(doc["summary"]["ok"], p.stdout)
        vm = [t for t in doc["targets"] if t["name"] == VM and t["kind"] == "vm"]
        self.assertEqual(len(vm), 1, p.stdout)
        names = {c["name"]: c["status"] for c in vm[0]["checks"]}
        self.assertEqual(names, {"config vm/%s%s" % (VM, sub): "pass"
                                 for sub in ("", "/hw", "/seed", "/nic.virtio/0", "/power")})

    def test_4_killed_while_its_vm_boots_the_rerun_waits_for_the_guest(self):
        """A run killed after it started the VM, while the guest boots: the
        re-run finds the VM running and the guest silent.  Found by reading
        the resume code after the guest soak: the transport's few retries
        (~20 s) gave up on a guest whose TCG boot takes ~40 s, and the re-run
        failed.  The journal's start of the VM, with no step of the guest
        after it, makes the re-run wait for the guest as for a reboot."""
        virsh("destroy", VM, check=False)
        virsh("undefine", "--nvram", VM)
        for vol in (VM + ".qcow2", VM + "-seed.iso"):
            virsh("vol-delete", "--pool", POOL, vol)
        # a new instance: cloud-init makes new host keys
        subprocess.run(["ssh-keygen", "-q", "-R", ADDR, "-f", self.known], capture_output=True)
        p = subprocess.Popen([BIN, "apply", "--only", "libvirt,guest", "--yes", "--state-dir",
                              self.state, self.spec], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 300
        while virsh("domstate", VM, check=False).stdout.strip() != "running":
            self.assertIsNone(p.poll(), "the apply ended before the VM ran")
            self.assertLess(time.monotonic(), deadline, "the VM never ran")
            time.sleep(0.2)
        time.sleep(2)
        p.kill()
        p.wait()
        killed = time.time()
        uuid = virsh("domuuid", VM).stdout.strip()
        r = self.gc("apply", "--only", "libvirt,guest", "--yes", "-v")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("%s: warning: an earlier apply started its VM and never reached it: "
                      "waiting up to 1200 s for it (" % VM, r.stderr)
        self.assertIn("%s: answers, after the start of its VM an earlier apply sent" % VM,
                      r.stderr)
        self.assertEqual(virsh("domuuid", VM).stdout.strip(), uuid)  # not defined again
        self.assertEqual(virsh("domstate", VM).stdout.strip(), "running")
        q = self.ssh("last -x reboot | grep -c '^reboot '; awk '/^btime/ {print $2}' /proc/stat; "
                     "dpkg-query -W -f='${Status}' rdma-core")
        self.assertEqual(q.returncode, 0, q.stderr)
        boots, btime, status = q.stdout.splitlines()
        self.assertEqual(status, "install ok installed")
        # the boot the killed run started, not one of the re-run: the new
        # instance's wtmp holds one boot (its clock cannot tell: a TCG
        # guest's clock lags under load, and put its boot 5.1 s after the
        # kill on a loaded CI machine)
        self.assertEqual(boots, "1", "booted again after the kill at %.0f (btime %s)" % (killed, btime))
        p = self.gc("plan", "--only", "libvirt,guest")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)


if __name__ == "__main__":
    unittest.main()
