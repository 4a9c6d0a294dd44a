#!/usr/bin/python3
"""test_guestlab - the lab's real Linux guests, checked from outside.

Starts a lab for tests/data/spec/guestlab.yaml (2 simulated ESXi hosts, 2
VMs with guests) with its own lab dir and port, so two real Debian 12
QEMU/TCG guests boot (tests/sim/guestlab), then drives them with plain
OpenSSH and the lab's guest key - never with gpuclusterctl - and asserts
what a user would see: packages install from the guests' local APT
repository, the soft-RoCE device named as the spec says is on the spec's
interface, ib_write_bw runs between the guests, the stand-in NVIDIA driver
(.deb on one guest, .run on the other) loads its modules and nvidia-smi -q -x
is XML, the licence comes and the licence fault keeps it away, mlnx_qos
state is gone after a reboot, gcpw's sudo wants a password, guest-reset
gives a fresh disk, the stand-in MLNX_OFED archive installs the RDMA stack
the way the guest driver runs it, and `lab.sh stop` leaves no QEMU behind.

Needs root (the first run builds the guest image: 1-3 min with Debian's
mirror reachable), qemu-system-x86.  Takes 5-10 min on 2 cores (TCG).
Port: GC_GUESTLAB_PORT (default 2410; guests on +10000, vcsim on 8950).
"""
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
import unittest
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LAB = os.path.join(ROOT, "scripts", "lab.sh")
SPEC = os.path.join(ROOT, "tests", "data", "spec", "guestlab.yaml")
PORT = int(os.environ.get("GC_GUESTLAB_PORT", "2410"))
VMS = {"gpu-01": "127.0.0.51", "gpu-02": "127.0.0.52"}
RUNFILE = "NVIDIA-Linux-x86_64-535.183.01-grid.run"
OFED = "MLNX_OFED_LINUX-23.10-1.1.9.0-debian12.1-x86_64.tgz"


def qemu_pids(lab):
    """QEMU processes whose command line names this lab dir."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "qemu-system" in cmd and lab in cmd:
            out.append(int(pid))
    return out


@unittest.skipUnless(os.environ.get("GC_GUESTLAB_VMS", "1") == "1", "GC_GUESTLAB_VMS=0: no VMs")
@unittest.skipUnless(os.geteuid() == 0, "needs root (guest image build, lab user)")
@unittest.skipUnless(shutil.which("qemu-system-x86_64"), "needs qemu-system-x86")
class GuestLab(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.lab = tempfile.mkdtemp(prefix="gc-guestlab-", dir="/tmp")
        os.chmod(cls.lab, 0o755)
        cls.env = dict(os.environ, GC_LAB_DIR=cls.lab)
        t0 = time.monotonic()
        r = cls.run_lab("start", "--spec", SPEC, "--port", str(PORT), "--vcsim-port",
                        str(8950 + PORT - 2410), "--guests", "2", timeout=900)
        cls.start_s = time.monotonic() - t0
        print("guestlab: lab.sh start with 2 guests took %.0f s" % cls.start_s, flush=True)
        cls.start_out = r.stdout
        if r.returncode != 0:
            cls.run_lab("stop")
            raise AssertionError("lab.sh start failed:\n%s%s" % (r.stdout, r.stderr))

    @classmethod
    def tearDownClass(cls):
        r = cls.run_lab("stop")
        left = qemu_pids(cls.lab)
        for pid in left:  # only ours, by pid, if stop failed
            os.kill(pid, 9)
        shutil.rmtree(cls.lab, ignore_errors=True)
        assert r.returncode == 0, r.stderr
        assert not left, "lab.sh stop left QEMU running: %s" % left

    @classmethod
    def run_lab(cls, *args, timeout=600):
        return subprocess.run([LAB, *args], env=cls.env, capture_output=True, text=True,
                              timeout=timeout)

    def ssh(self, vm, cmd, user="gclab", timeout=300, check=True):
        r = subprocess.run(
            ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10",
             "-o", "UserKnownHostsFile=%s/known_hosts" % self.lab, "-o", "StrictHostKeyChecking=yes",
             "-i", "%s/guest_key" % self.lab, "-p", str(PORT + 10000), "%s@%s" % (user, VMS[vm]), cmd],
            capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        if check:
            self.assertEqual(r.returncode, 0, "%s on %s: rc %d\n%s%s" % (cmd, vm, r.returncode,
                                                                         r.stdout, r.stderr))
        return r

    def both(self, cmd, **kw):
        """Run cmd on both guests at once; {vm: result}."""
        res = {}

        def one(vm):
            res[vm] = self.ssh(vm, cmd, check=False, **kw)

        ts = [threading.Thread(target=one, args=(vm,)) for vm in VMS]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        for vm, r in res.items():
            self.assertEqual(r.returncode, 0, "%s on %s: %s%s" % (cmd, vm, r.stdout, r.stderr))
        return res

    def boot_id(self, vm):
        return self.ssh(vm, "cat /proc/sys/kernel/random/boot_id").stdout.strip()

    def wait_new_boot(self, vm, old, limit=400):
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            r = self.ssh(vm, "cat /proc/sys/kernel/random/boot_id", check=False, timeout=20)
            if r.returncode == 0 and r.stdout.strip() not in ("", old):
                return
            time.sleep(3)
        self.fail("%s did not come back from its reboot in %ds" % (vm, limit))

    def test_01_guests_are_the_spec_vms(self):
        st = self.run_lab("status")
        for vm, addr in VMS.items():
            self.assertRegex(st.stdout, r"lab: guest %s running \(pid \d+, ssh %s:%d\)"
                             % (vm, re.escape(addr), PORT + 10000))
            self.assertEqual(self.ssh(vm, "hostname").stdout.strip(), vm)
            # Debian 12, the lab's stand-in GPU description from the spec
            self.assertIn('VERSION_CODENAME=bookworm', self.ssh(vm, "cat /etc/os-release").stdout)
            self.assertIn('"product": "Tesla V100-PCIE-32GB"', self.ssh(vm, "cat /etc/gc-lab/gpu.json").stdout)
        with open(os.path.join(self.lab, "known_hosts"), encoding="utf-8") as f:
            kh = f.read()
        self.assertIn("[127.0.0.51]:%d ssh-ed25519 " % (PORT + 10000), kh)
        # the written spec reaches the guests through the lab
        with open(os.path.join(self.lab, "guestlab.yaml"), encoding="utf-8") as f:
            import yaml
            spec = yaml.safe_load(f)
        g = spec["vms"][0]["guest"]
        self.assertEqual(g["ssh"]["port"], PORT + 10000)
        self.assertEqual(g["os"], "debian")
        cred = [c for c in spec["credentials"] if c["name"] == g["credentials"]][0]
        self.assertEqual((cred["username"], cred["key_file"]), ("gclab", os.path.join(self.lab, "guest_key")))
        # nothing of the RDMA stack is preinstalled; the only apt source is the local repo
        r = self.ssh("gpu-01", "dpkg-query -W -f='${Status}' rdma-core", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertEqual(self.ssh("gpu-01", "cat /etc/apt/sources.list.d/*.list").stdout.strip(),
                         "deb [trusted=yes] file:/srv/gc-lab-repo ./")

    def test_02_rdma_stack_from_the_local_repo(self):
        res = self.both("sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -q rdma-core ibverbs-utils perftest")
        for r in res.values():
            self.assertIn("Setting up perftest", r.stdout)
        self.assertEqual(self.ssh("gpu-01", "dpkg-query -W -f='${Version}' rdma-core").stdout, "44.0-2")
        for vm in VMS:
            self.assertRegex(self.ssh(vm, "ibv_devices").stdout, r"\n\s+mlx5_0\s+[0-9a-f]{16}\n")
            self.assertRegex(self.ssh(vm, "rdma link").stdout,
                             r"link mlx5_0/1 state \w+ physical_state \w+ netdev ens224")
            # the lab gives the RDMA NIC no address: that is the driver's job
            self.assertNotIn("inet ", self.ssh(vm, "ip -4 addr show dev ens224").stdout)

    def test_03_ib_write_bw_between_the_guests(self):
        for vm, ip in (("gpu-01", "198.18.0.51"), ("gpu-02", "198.18.0.52")):
            self.ssh(vm, "sudo ip addr add %s/24 dev ens224 && sudo ip link set ens224 up" % ip)
        for vm in VMS:
            self.assertEqual(self.ssh(vm, "cat /sys/class/infiniband/mlx5_0/ports/1/gid_attrs/types/1").stdout.strip(),
                             "RoCE v2")
            for _ in range(30):
                if "PORT_ACTIVE" in self.ssh(vm, "ibv_devinfo -d mlx5_0").stdout:
                    break
                time.sleep(1)
            self.assertIn("PORT_ACTIVE (4)", self.ssh(vm, "ibv_devinfo -d mlx5_0").stdout)
        server = self.ssh("gpu-01", "nohup timeout 120 ib_write_bw -d mlx5_0 -x 1 -s 65536 -n 100 --report_gbits"
                          " >/tmp/bw-server.out 2>&1 </dev/null & sleep 2; echo started")
        self.assertIn("started", server.stdout)
        r = None
        for _ in range(5):  # the server may still be starting under TCG
            r = self.ssh("gpu-02", "timeout 120 ib_write_bw -d mlx5_0 -x 1 -s 65536 -n 100 --report_gbits 198.18.0.51",
                         check=False, timeout=200)
            if r.returncode == 0:
                break
            time.sleep(3)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"\n\s*65536\s+100\s+[0-9.]+\s+[0-9.]+\s+[0-9.]+")
        self.assertIn("RDMA_Write BW Test", r.stdout)

    def test_04_nvidia_driver_deb_and_run(self):
        self.assertEqual(self.ssh("gpu-01", "nvidia-smi", check=False).returncode, 127)
        self.ssh("gpu-01", "sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -q nvidia-driver nvidia-container-toolkit")
        self.assertEqual(self.ssh("gpu-01", "dpkg-query -W -f='${Version}' nvidia-driver").stdout, "535.183.01-1~gclab")
        r = self.ssh("gpu-01", "nvidia-smi", check=False)
        self.assertEqual(r.returncode, 9)
        self.assertIn("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver", r.stdout)
        # the .run on the other guest: uploaded like the driver would
        subprocess.run(["scp", "-q", "-o", "BatchMode=yes", "-o", "UserKnownHostsFile=%s/known_hosts" % self.lab,
                        "-i", "%s/guest_key" % self.lab, "-P", str(PORT + 10000),
                        os.path.join(self.lab, RUNFILE), "gclab@127.0.0.52:/tmp/"], check=True, timeout=120)
        r = self.ssh("gpu-02", "sudo sh /tmp/%s --no-such-flag" % RUNFILE, check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("Unrecognized option: '--no-such-flag'", r.stderr)
        self.ssh("gpu-02", "sudo sh /tmp/%s --silent --no-questions" % RUNFILE)
        for vm in VMS:
            self.ssh(vm, "sudo modprobe nvidia_peermem")
            mods = self.ssh(vm, "lsmod").stdout
            self.assertRegex(mods, r"\nnvidia_peermem\s")
            self.assertRegex(mods, r"\nnvidia\s+\d+\s+1 nvidia_peermem")
            x = ET.fromstring(self.ssh(vm, "nvidia-smi -q -x").stdout.split("\n", 2)[2])
            self.assertEqual(x.tag, "nvidia_smi_log")
            self.assertEqual(x.findtext("driver_version"), "535.183.01")
            self.assertEqual(x.findtext("attached_gpus"), "1")
            gpu = x.find("gpu")
            self.assertEqual(gpu.findtext("product_name"), "Tesla V100-PCIE-32GB")
            self.assertEqual(gpu.findtext("gpu_virtualization_mode/virtualization_mode"), "Pass-Through")
            self.assertEqual(gpu.findtext("fb_memory_usage/total"), "32768 MiB")
            self.assertEqual(self.ssh(vm, "nvidia-smi --query-gpu=name,memory.total,driver_version"
                                          " --format=csv,noheader").stdout,
                             "Tesla V100-PCIE-32GB, 32768 MiB, 535.183.01\n")
        self.assertIn("nvidia-smi -q -x", self.ssh("gpu-01", "cat /var/log/gc-lab/calls.log").stdout)
        # container toolkit: the real docker key
        self.ssh("gpu-01", "sudo nvidia-ctk runtime configure --runtime=docker")
        self.assertIn('"path": "nvidia-container-runtime"', self.ssh("gpu-01", "cat /etc/docker/daemon.json").stdout)

    def test_05_licence(self):
        status = "nvidia-smi -q | sed -n 's/^ *License Status *: //p'"
        self.ssh("gpu-01", "sudo cp /etc/nvidia/gridd.conf.template /etc/nvidia/gridd.conf"
                 " && sudo sed -i 's/^FeatureType=0/FeatureType=4/' /etc/nvidia/gridd.conf"
                 " && sudo mkdir -p /etc/nvidia/ClientConfigToken"
                 " && echo token | sudo tee /etc/nvidia/ClientConfigToken/client_configuration_token.tok >/dev/null"
                 " && sudo systemctl restart nvidia-gridd")
        for _ in range(20):
            if self.ssh("gpu-01", status).stdout.startswith("Licensed"):
                break
            time.sleep(1)
        self.assertRegex(self.ssh("gpu-01", status).stdout,
                         r"^Licensed \(Expiry: \d{4}-\d{1,2}-\d{1,2} \d\d:\d\d:\d\d GMT\)\n$")
        self.ssh("gpu-01", "sudo touch /etc/gc-lab/faults/licence-never && sudo systemctl restart nvidia-gridd && sleep 4")
        self.assertEqual(self.ssh("gpu-01", status).stdout, "Unlicensed (Unrestricted)\n")

    def test_06_qos_is_lost_at_reboot(self):
        vm = "gpu-02"
        out = self.ssh(vm, "sudo mlnx_qos -i ens224 --trust dscp --pfc 0,0,0,1,0,0,0,0").stdout
        self.assertIn("Priority trust state: dscp\n", out)
        self.assertIn("\tenabled     0   0   0   1   0   0   0   0", out)
        old = self.boot_id(vm)
        self.ssh(vm, "sudo systemctl reboot", check=False, timeout=30)
        self.wait_new_boot(vm, old)
        out = self.ssh(vm, "sudo mlnx_qos -i ens224").stdout
        self.assertIn("Priority trust state: pcp\n", out)
        self.assertIn("\tenabled     0   0   0   0   0   0   0   0", out)
        # the disk keeps what was installed; the lab's RDMA device is back
        self.assertIn("install ok installed", self.ssh(vm, "dpkg-query -W -f='${Status}' perftest").stdout)
        self.assertIn("netdev ens224", self.ssh(vm, "rdma link").stdout)

    def test_07_gcpw_sudo_wants_a_password(self):
        r = self.ssh("gpu-01", "sudo -n true", user="gcpw", check=False)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr.strip(), "sudo: a password is required")
        self.assertEqual(self.ssh("gpu-01", "sudo -n true && echo yes").stdout, "yes\n")

    def test_08_guest_reset_is_a_fresh_disk(self):
        r = self.run_lab("guest-reset", "gpu-02", timeout=600)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("lab: guest gpu-02 answers SSH", r.stdout)
        self.assertNotEqual(self.ssh("gpu-02", "dpkg-query -W -f='${Status}' perftest", check=False).returncode, 0)
        self.assertEqual(self.ssh("gpu-02", "hostname").stdout.strip(), "gpu-02")

    def test_09_ofed_installer(self):
        # on the fresh gpu-02, the way the guest driver runs an OFED archive
        subprocess.run(["scp", "-q", "-o", "BatchMode=yes", "-o", "UserKnownHostsFile=%s/known_hosts" % self.lab,
                        "-i", "%s/guest_key" % self.lab, "-P", str(PORT + 10000),
                        os.path.join(self.lab, OFED), "gclab@127.0.0.52:/tmp/"], check=True, timeout=120)
        self.assertEqual(self.ssh("gpu-02", "ofed_info -s", check=False).returncode, 127)
        r = self.ssh("gpu-02", "cd /tmp && rm -rf ofed && mkdir ofed && tar -xzf %s -C ofed && cd ofed/*"
                     " && sudo ./mlnxofedinstall --force --without-fw-update" % OFED)
        self.assertIn("Installation passed successfully", r.stdout)
        self.assertEqual(self.ssh("gpu-02", "ofed_info -s").stdout, "MLNX_OFED_LINUX-23.10-1.1.9.0:\n")
        self.assertRegex(self.ssh("gpu-02", "ibv_devices").stdout, r"\n\s+mlx5_0\s+[0-9a-f]{16}\n")
        self.assertIn("install ok installed", self.ssh("gpu-02", "dpkg-query -W -f='${Status}' perftest").stdout)


class LabSpecGuests(unittest.TestCase):
    """lab_spec.py's guest side, without VMs: what `guests` gives the lab and
    what `rewrite` changes in a spec (only how guests are reached)."""

    def setUp(self):
        import sys
        import yaml
        sys.path.insert(0, os.path.join(ROOT, "tests", "sim"))
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


if __name__ == "__main__":
    unittest.main(verbosity=2)
