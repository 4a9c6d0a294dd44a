#!/usr/bin/python3
"""soak - the fault soak (issue 18, item 4): SIGKILLs at random points of
`gpuclusterctl apply` on the local lab, and dropped connections at random
points of the vCenter and SSH drivers; after each, the re-runs must
converge to the state a clean apply leaves.

    scripts/soak.py [--examples roce-pair,...] [--kills 50] [--per-episode 5]
                    [--drops 4] [--seed S] [--port P] [--vcsim-port P]

For each example (its lab-rewritten spec, scripts/lab.sh start --spec):

1. clean: a reset lab, one apply without faults; its wall time T, each
   host's reboots (the "needed" reboots), each host's changing commands and
   the converged state (host state files, every VM read from vcsim) become
   the reference.
2. kills: episodes of up to --per-episode runs, each SIGKILLed after a
   random delay in (0, T), then re-runs until one exits 0 (a run that ends
   before its kill must exit 0 too), until --kills kills have landed.  With
   --kill-window remaining a re-run's delay is drawn from what the kills so
   far left of T (at least a minute), so more of them land before it ends.
3. drops: episodes of one apply in which one SSH target (host or switch)
   drops its connection after a random number of commands (simlab's
   drop_after) and, with a vCenter, vcsim closes the connection of one call
   of a random SOAP method at a random moment (tests/sim/vcsim/faults.go,
   "drop": "before" or "after"); that one apply must exit 0.  With
   --guests the SSH drops are the guests' instead (their spec keeps its
   long command timeout, which a host's silent dropped session would pay):
   --drops-per-episode times at a random moment of the apply, the guest
   driver's connection to a random guest is cut by killing its sshd session
   inside the guest (GUEST_DROP; at the next moment the driver holds one, if
   it holds none then); the soak prints what each cut session was running.

After every episode, read from outside the tool: a plan shows no changes;
no host is in maintenance mode (the simulators' state files); vCenter's
inventory has no name twice and equals the clean run's, and every VM holds
the same devices, read with tests/sim/vcsim_edit.py (SOAP, python's
standard library); each host booted
at most once more than in the clean run and the reboots it received (its
commands.log) are at most needed + 1; no VIB install went out twice; the
host state equals the clean run's but for boot times (the cluster lease
included: that is how the soak found a lease left behind).

It prints the seed first (replay: --seed S), a table of figures at the
end, and exits 1 on any violation, each printed with its example, episode
and seed.  Guests are left out (--only esxi,switch,vcenter) unless
--guests: then the lab boots the example's guests as real VMs (roce-pair's
or gpudirect-pair's two on a 2-core machine), every episode starts from
fresh guest disks (lab.sh guest-reset), apply runs with --only
esxi,switch,vcenter,guest, and after each episode every guest must hold
what the clean run left (packages with nothing half-done for dpkg --audit,
loaded modules, the files we write, and where its spec asks for them the
RoCE QoS boot unit and the RDMA interface's address and MTU, read over
plain ssh) and have booted at most once more than in the clean run (wtmp).
An example of more than five guests (roce-passthrough's eight, on two
cores) gets test_examples_full's guest SSH timeouts in the lab's copy of
its spec (Lab.tcg_guest_timeouts); nothing else of the spec changes.
--examples kvm-pair soaks that example's libvirt targets (apply --only
libvirt) through this machine's real libvirtd instead (LibvirtLab), read
back with virsh; it is not in the default list (it needs root and
libvirt-daemon-system).  --examples kvm-host soaks its KVM host stage
(apply --only kvm: kernel arguments, a reboot) on the lab VM that stands in
for a KVM host in test_kvmhost.py (KvmHostLab); with no IOMMU there every
run ends refusing the host for its firmware, so every episode must end as
the clean run did (KvmHostExample).
"""
import argparse
import difflib
import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("GC_BIN", os.path.join(ROOT, "build", "src", "cli", "gpuclusterctl"))
LAB = os.path.join(ROOT, "scripts", "lab.sh")
EDIT = os.path.join(ROOT, "tests", "sim", "vcsim_edit.py")
EXAMPLES = ["roce-pair", "roce-passthrough", "vgpu-pvrdma", "gpudirect-pair", "multi-gpu-vm"]
# soaked through a real libvirtd, not the simulators (LibvirtExample); not in
# the default list: it needs root and libvirt-daemon-system
LIBVIRT_EXAMPLES = ["kvm-pair"]
# kvm-pair's KVM host stage (kernel arguments, a reboot) on a real Linux: the
# lab VM that stands in for a KVM host in test_kvmhost.py (KvmHostExample);
# not in the default list: a TCG VM whose every episode reboots it
KVMHOST_EXAMPLES = ["kvm-host"]
KVMHOST_SPEC = os.path.join(ROOT, "tests", "data", "kvm", "kvmhost-lab.yaml")
KVMHOST_STANDINS = os.path.join(ROOT, "tests", "sim", "kvmhost")
ONLY = "esxi,switch,vcenter"
REBOOT = "esxcli system shutdown reboot"
VIB_INSTALL = "esxcli software vib install"
# what the vCenter driver sends (src/drivers/vcenter/); a drop of one call
# of one of these, picked at random, at a random moment of the apply
VC_METHODS = ["RetrievePropertiesEx", "CloneVM_Task", "ReconfigVM_Task", "PowerOnVM_Task",
              "PowerOffVM_Task", "RelocateVM_Task", "QueryConfigTarget", "CreateDVS_Task",
              "AddDVPortgroup_Task", "ReconfigureDvs_Task", "ReconfigureDVPortgroup_Task"]
# host state that changes with time, not with the spec (the cluster lease, an
# advanced option, is compared: a lease left behind refuses other operators)
VOLATILE = {"boot_count", "boot_time", "down_until", "uptime"}
# simlab's observation commands (tests/integration/labtest.py keeps the same list)
LEASE_OPTION = "/UserVars/GpuclusterctlLease"
# --kill-window remaining: a re-run's window never shrinks below this, nor
# below the clean run's time (its observation, and a wait for a guest still
# booting, come before any action); --reobserve sets it
REOBSERVE_S = 60.0
# apply's warning when a re-run meets a target still coming back from the
# reboot a killed run sent (src/exec/exec.c, observe_after_reboot)
RESUME_WAIT = "an earlier apply rebooted it and never saw it back"

# What keep_evidence asks each guest after a violation: its boot and load,
# its processes oldest first (an earlier run's orphaned commands among them),
# systemd's queued jobs (a stuck one holds logins and systemctl), the boots
# wtmp knows and the end of this boot's journal.  Each bounded by timeout.
GUEST_EVIDENCE = ("uptime; cat /proc/sys/kernel/random/boot_id; echo '-- ps'; "
                  "timeout 30 ps -eo pid,ppid,lstart,etime,stat,pcpu,args --sort=start_time | cut -c1-220; "
                  "echo '-- systemctl list-jobs'; timeout 30 systemctl list-jobs --no-pager; "
                  "echo '-- last -x'; last -x | head -20; "
                  "echo '-- journal'; timeout 60 sudo -n journalctl -b --no-pager -n 150")
# apply -v's note when a reboot wait's poll logs in and is cut before it
# reads the boot (src/exec/drvctx.c, gc_drv_wait_reboot): the wait polls
# again, no "retrying after:" line
WAIT_CUT = "the guest answered, but its boot could not be read"
# A guest drop: inside the guest, as root, SIGKILL every sshd session of the
# lab user but the one this script runs under (its ancestors): the
# connection of our guest driver, at whatever it was doing, the way test_8
# of test_guest.py drops it mid-install.  Prints the process table first
# (what the session was running), then "KILLED pid" per session.
GUEST_DROP = r"""
mine=" "; p=$$
while [ -n "$p" ] && [ "$p" -gt 1 ]; do mine="$mine$p "; p=$(awk '{print $4}' /proc/$p/stat); done
ps -e -o pid=,ppid=,args=
for p in $(pgrep -f '^sshd: [a-z_][a-z0-9_-]*@notty'); do
    case "$mine" in *" $p "*) ;; *) sudo -n kill -9 "$p" && echo "KILLED $p" ;; esac
done
"""


def observation(cmd):
    return ("@@gc:" in cmd or cmd in ("vmware -v", "esxcli system stats uptime get")
            or LEASE_OPTION in cmd or "advanced add -o GpuclusterctlLease " in cmd)


# The most guests a guest soak runs at the example's own guest SSH timeouts:
# vgpu-pvrdma's five did (docs/fuzzing.md); roce-passthrough's eight get
# Lab.tcg_guest_timeouts.
TCG_GUESTS_AT_SPEC_TIMEOUTS = 5


class Lab:
    """One private lab (scripts/lab.sh) for one example spec."""

    def __init__(self, example, port, vcsim_port, reboot_seconds, guests=False):
        self.dir = tempfile.mkdtemp(prefix="gc-soak-")
        os.chmod(self.dir, 0o755)
        self.env = dict(os.environ, GC_LAB_DIR=self.dir, GC_REBOOT_POLL_MS="100")
        if guests:
            # roce-passthrough boots eight TCG guests at once on two cores, as
            # test_examples_full does (lab.sh's default is 300 s)
            self.env.setdefault("GC_LAB_GUEST_TIMEOUT", "900")
        self.vcsim_port = vcsim_port
        self.reboot_seconds = reboot_seconds
        spec = os.path.join(ROOT, "examples", example + ".yaml")
        # with guests: one real VM per spec guest (QEMU/TCG, docs/lab.md)
        self.lab("start", "--spec", spec, "--port", str(port), "--vcsim-port", str(vcsim_port),
                 *(() if guests else ("--guests", "0")))
        self.spec = os.path.join(self.dir, example + ".yaml")
        if not guests:
            # (an apt-get install in a TCG guest takes minutes: the guest
            # soak keeps the spec's timeout and drops no SSH session)
            self.short_command_timeout()
        with open(os.path.join(self.dir, "inventory"), encoding="utf-8") as f:
            rows = [l.split() for l in f if not l.startswith("#") and len(l.split()) > 2]
        self.hosts = [r[2] for r in rows if r[1] == "esxi"]
        self.targets = [r[2] for r in rows if r[1] in ("esxi", "onyx")]
        self.vcenter = os.path.exists(os.path.join(self.dir, "vcsim-inventory.json"))
        self.guests = {}
        self.guest_spec = {}
        self.guest_port = port + 10000
        if guests:
            import yaml  # only here: the ESXi soak runs where PyYAML may not be
            with open(self.spec, encoding="utf-8") as f:
                doc = yaml.safe_load(f)
            self.guests = {v["name"]: v["guest"]["address"] for v in doc.get("vms") or []
                           if v.get("guest")}
            # what each guest's spec asks for that its view reads back: the
            # RDMA interface (roce-pair's ens224; gpudirect-pair's guests
            # have none) and the RoCE QoS unit
            self.guest_spec = {v["name"]: v["guest"] for v in doc.get("vms") or [] if v.get("guest")}
            if len(self.guests) > TCG_GUESTS_AT_SPEC_TIMEOUTS:
                self.tcg_guest_timeouts(doc)

    def tcg_guest_timeouts(self, doc):
        """More TCG guests than two cores carry at the spec's guest SSH
        timeouts get what test_examples_full gives them: with eight, an
        `apt-get install` of the driver outlasted roce-passthrough's 300 s
        command timeout and the busy guests' sshd its 10 s handshake
        (docs/benchmarks.md, the full examples).  Only the guests' timeouts
        change; a run that still fails is a violation, as ever."""
        import yaml
        for v in doc.get("vms") or []:
            if isinstance(v.get("guest"), dict):
                v["guest"]["ssh"] = dict(v["guest"].get("ssh") or {}, command_timeout_s=1800,
                                         connect_timeout_s=30)
        with open(self.spec, "w", encoding="utf-8") as f:
            yaml.safe_dump(doc, f, sort_keys=False)

    def guest_ssh(self, vm, command, timeout=120):
        """Plain OpenSSH into a lab guest (not our driver); its stdout."""
        r = subprocess.run(["ssh", "-p", str(self.guest_port), "-i", os.path.join(self.dir, "guest_key"),
                            "-o", "UserKnownHostsFile=" + os.path.join(self.dir, "known_hosts"),
                            "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes",
                            "-o", "ConnectTimeout=10", "-o", "LogLevel=ERROR",
                            "gclab@" + self.guests[vm], command],
                           capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0:
            raise RuntimeError("guest %s: %s: exit %d: %s" % (vm, command, r.returncode, r.stderr[-500:]))
        return r.stdout

    def guest_boots(self, vm):
        """Boots of a guest since its fresh disk (wtmp's reboot records)."""
        out = self.guest_ssh(vm, "last -x reboot")
        return sum(1 for l in out.splitlines() if l.startswith("reboot "))

    def guest_view(self, vm):
        """What a guest holds that must be the clean run's: packages (and that
        dpkg has nothing half-done), loaded modules, the files we write, and
        the RoCE QoS unit and RDMA interface where the spec asks for them."""
        g = getattr(self, "guest_spec", {}).get(vm) or {}
        iface = (g.get("rdma_interface") or {}).get("name")
        cmd = ("dpkg-query -W -f='${Package} ${Version} ${db:Status-Abbrev}\\n' | sort; "
               "echo '-- audit'; sudo -n dpkg --audit; "
               "echo '-- modules'; cut -d' ' -f1 /proc/modules | sort; "
               "echo '-- files'; sudo -n sha256sum /etc/modules-load.d/gpuclusterctl.conf "
               "/etc/nvidia/gridd.conf /etc/systemd/network/*gpuclusterctl* "
               "/etc/chrony/conf.d/gpuclusterctl.conf "
               "/etc/systemd/system/gpuclusterctl-roce-qos.service 2>&1; ")
        if "roce_qos" in g:
            cmd += "echo '-- unit'; systemctl is-enabled gpuclusterctl-roce-qos.service; "
        if iface:
            cmd += ("echo '-- link'; ip -o addr show dev %s | awk '{print $3, $4}'; "
                    "cat /sys/class/net/%s/mtu" % (iface, iface))
        else:
            cmd += "true"
        return self.guest_ssh(vm, cmd)

    def guest_reset(self):
        """Every guest back on a fresh disk (lab.sh guest-reset waits for SSH)."""
        self.lab("guest-reset")

    def short_command_timeout(self):
        # a dropped session may leave its TCP connection open and silent (the
        # simulator cannot kill sshd's root-owned monitor); test_apply's
        # test_dropped_connection does the same: 15 s, then GC_ETIMEOUT, retried
        with open(self.spec, encoding="utf-8") as f:
            text = f.read()
        text = re.sub(r"command_timeout_s: \d+", "command_timeout_s: 15", text)
        with open(self.spec, "w", encoding="utf-8") as f:
            f.write(text)

    def lab(self, *args):
        r = subprocess.run([LAB, *args], env=self.env, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("lab.sh %s failed: %s%s" % (" ".join(args), r.stdout, r.stderr))

    def stop(self):
        self.lab("stop")
        shutil.rmtree(self.dir, ignore_errors=True)

    def reset(self):
        self.lab("reset")
        for h in self.hosts:
            self.control(h, {"reboot_seconds": self.reboot_seconds})

    def path(self, name, leaf):
        return os.path.join(self.dir, "hosts", name, leaf)

    def state(self, name):
        with open(self.path(name, "state.json"), encoding="utf-8") as f:
            return json.load(f)

    def commands(self, name):
        """Every command a host or switch received, in order (its commands.log)."""
        if not os.path.exists(self.path(name, "commands.log")):
            return []
        with open(self.path(name, "commands.log"), encoding="utf-8") as f:
            return [l.rstrip("\n").partition(" ")[2] for l in f]

    def changes(self, name):
        """The changing commands a host or switch received, in order."""
        return [c for c in self.commands(name) if not observation(c)]

    def read_control(self, name):
        try:
            with open(self.path(name, "control.json"), encoding="utf-8") as f:
                return json.load(f)
        except FileNotFoundError:
            return {}

    def control(self, name, control):
        path = self.path(name, "control.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(control, f)
        with open(os.path.join(self.dir, "user"), encoding="utf-8") as f:
            shutil.chown(path, user=f.read().strip())

    def faults(self, faults):
        with open(os.path.join(self.dir, "vcsim", "faults.json"), "w", encoding="utf-8") as f:
            json.dump(faults, f)

    def vc(self, *args):
        d = os.path.join(self.dir, "vcsim")
        r = subprocess.run([EDIT, "--url", "https://127.0.0.1:%d/sdk" % self.vcsim_port,
                            "--ca", os.path.join(d, "ca.crt"), "--user", "gcadmin",
                            "--password-file", os.path.join(d, "password"), *args],
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise RuntimeError("vcsim_edit %s: %s%s" % (" ".join(args), r.stdout, r.stderr))
        return json.loads(r.stdout)


class Run:
    """One `gpuclusterctl apply` in the background."""

    def __init__(self, lab, state_dir, only, verbose=False):
        self.started = time.time()
        # a guard against a hung run, not a measure: roce-passthrough's whole
        # apply with its eight TCG guests takes 22-27 minutes here
        self.limit = 3600 if getattr(lab, "guests", None) else 900
        self.waited = 0  # "an earlier apply rebooted it" warnings: it met a target still booting
        self.err = tempfile.TemporaryFile(mode="w+")
        self.p = subprocess.Popen([BIN, "apply", "--yes"] + (["-v"] if verbose else []) +
                                  ["--only", only, "--state-dir", state_dir, lab.spec],
                                  env=lab.env, stdout=subprocess.DEVNULL, stderr=self.err)

    def kill_after(self, delay):
        """SIGKILL after delay s; True if it landed, False if the run had ended."""
        try:
            self.p.wait(timeout=delay)
            return False
        except subprocess.TimeoutExpired:
            self.p.send_signal(signal.SIGKILL)
            self.p.wait()
            self.read_err()
            return True

    def read_err(self):
        self.err.seek(0)
        err = self.err.read()
        self.err.close()
        self.waited = err.count(RESUME_WAIT)
        return err

    def wait(self, timeout=None):
        try:
            rc = self.p.wait(timeout=timeout or self.limit)
        except subprocess.TimeoutExpired:
            # no hung apply left behind the soak's report (and its lab's stop)
            self.p.kill()
            self.p.wait()
            raise
        return rc, self.read_err()


def device_view(d):
    """A device without what vCenter numbers or names by itself: keys,
    labels, MAC addresses, the datastore's path (vcsim's temporary dir)."""
    out = {k: v for k, v in d.items() if k not in ("key", "label", "unitNumber", "deviceInfo",
                                                      "macAddress", "summary")}
    port = out.get("backing", {}).get("port") if isinstance(out.get("backing"), dict) else None
    if isinstance(port, dict):
        # the port group by name ("network", "portgroup"): its key is vCenter's
        # numbering, which follows the order things were created in
        out["backing"] = dict(out["backing"], port={k: v for k, v in port.items()
                                                    if k not in ("portgroupKey", "switchUuid", "portKey")})
    if isinstance(out.get("backing"), dict):
        # vcsim gives every clone of a template the disk file name of the
        # latest clone (seen here: after the clean run every VM's disk read
        # "[LocalDS_0] worker-08/worker-08.vmdk"); the datastore is compared
        # through the name's "[LocalDS_0]" only
        out["backing"] = {k: (v.split("]")[0] + "]" if k == "fileName" and d.get("type") == "VirtualDisk" else v)
                          for k, v in out["backing"].items() if k != "datastore"}
    return json.dumps(out, sort_keys=True)


def session_work(ps, killed):
    """What the killed sessions ran: the innermost commands below them in
    `ps -e -o pid=,ppid=,args=` (not the sudo and sh wrapping them), or
    "idle"."""
    rows = {}
    for line in ps.splitlines():
        f = line.split(None, 2)
        if len(f) == 3 and f[0].isdigit() and f[1].isdigit():
            rows[f[0]] = (f[1], f[2])
    below, grew = set(killed), True
    while grew:
        more = {p for p, (pp, _) in rows.items() if pp in below} - below
        below |= more
        grew = bool(more)
    parents = {rows[p][0] for p in below if p in rows}
    leaves = [rows[p][1] for p in sorted(below - set(killed) - parents, key=int) if p in rows]
    return "; ".join(" ".join(w.split())[:100] for w in leaves[:3]) or "idle"


def vm_fingerprint(vm):
    """What must be the same after any episode: power, host, CPUs, memory,
    extraConfig and the devices with their backings."""
    devs = sorted(device_view(d) for d in vm["devices"])
    return {"power": vm["power"], "host": vm["host"], "devices": devs,
            "extra_config": vm["extra_config"], "cpus": vm["cpus"], "memory_mb": vm["memory_mb"]}


def vm_diff(mine, ref):
    """The first difference of two VM fingerprints, as text."""
    if mine is None or ref is None:
        return "missing" if mine is None else "not in the clean run"
    for k in sorted(ref):
        if mine[k] != ref[k]:
            if k == "devices":
                return "devices: %s, clean run's not here: %s" % (
                    sorted(set(mine[k]) - set(ref[k]))[:3], sorted(set(ref[k]) - set(mine[k]))[:3])
            return "%s: %r, clean run %r" % (k, mine[k], ref[k])
    return "same"


class Example:
    """The soak of one example: its lab, the clean reference, the episodes."""

    def __init__(self, name, args, rng, lab=None):
        self.name = name
        self.args = args
        self.rng = rng
        self.lab = lab or Lab(name, args.port, args.vcsim_port, args.reboot_seconds, args.guests)
        self.vcenter = getattr(self.lab, "vcenter", False) and "vcenter" in args.only.split(",")
        self.violations = []
        self.episode_s = []  # each kill episode's wall time (--budget)
        self.fig = {"kills": 0, "runs": 0, "episodes": 0, "drops_ssh": 0, "drops_vc": 0, "dropped_ssh": 0,
                    "retries_ssh": 0, "retries_vc": 0, "extra_reboots": 0, "worst_extra": "",
                    "guest_kills": 0, "guest_extra_reboots": 0, "resume_waits": 0,
                    "drops_guest": 0, "dropped_guest": 0, "retries_guest": 0,
                    "absorbed_guest": 0}
        self.guest_drops = []  # (episode, guest, seconds into the run, what its session ran)
        self.episode = "clean"
        self.kept = set()  # the episodes whose evidence keep_evidence kept
        self.state_dir = os.path.join(self.lab.dir, "state")
        self.t0 = time.time()

    # ------------------------------------------------------------ reference

    def fresh(self):
        self.lab.reset()
        if self.lab.guests:
            self.lab.guest_reset()
        shutil.rmtree(self.state_dir, ignore_errors=True)

    def clean_apply(self):
        """A fresh lab and one apply without faults: its time is T."""
        self.fresh()
        t0 = time.time()
        rc, err = Run(self.lab, self.state_dir, self.args.only).wait()
        self.clean_s = time.time() - t0
        if rc != 0:
            raise RuntimeError("%s: the clean apply failed (%d): %s" % (self.name, rc, err[-3000:]))

    def clean(self):
        self.clean_apply()
        self.needed = {h: self.lab.state(h)["boot_count"] for h in self.lab.hosts}
        self.commands = {t: len(self.lab.commands(t)) for t in self.lab.targets}
        self.ref_hosts = {h: self.host_view(h) for h in self.lab.hosts}
        self.ref_vms = self.vm_views() if self.vcenter else {}
        self.needed_guest = {vm: self.lab.guest_boots(vm) for vm in self.lab.guests}
        self.ref_guests = {vm: self.lab.guest_view(vm) for vm in self.lab.guests}
        self.check()

    def guest_stage(self):
        """Does this soak apply a guest stage (not only boot a lab VM)?"""
        return bool(self.lab.guests) and "guest" in self.args.only.split(",")

    def in_guest_stage(self, run):
        """Did a killed run die in the guest stage: after its own first guest
        action (a journal record of it, newer than the run's start)?"""
        if not self.lab.guests:
            return False
        for name in os.listdir(self.state_dir):
            if not name.endswith(".journal"):
                continue
            with open(os.path.join(self.state_dir, name), encoding="utf-8") as f:
                for line in f:
                    try:
                        rec = json.loads(line)
                    except ValueError:
                        continue
                    ts = rec.get("ts")
                    if (isinstance(ts, (int, float)) and ts >= run.started
                            and " guest/" in str(rec.get("action", ""))):
                        return True
        return False

    def host_view(self, h):
        return {k: v for k, v in self.lab.state(h).items() if k not in VOLATILE}

    def vm_views(self):
        # vCenter names a distributed switch's uplink port group after the
        # switch's object id ("dvs-rdma-DVUplinks-58"): numbering, not ours
        inv = {k: [re.sub(r"-DVUplinks-\d+$", "-DVUplinks", n) for n in v]
               for k, v in self.lab.vc("inventory").items()}
        for kind, names in sorted(inv.items()):
            dup = sorted({n for n in names if names.count(n) > 1})
            if dup:
                self.violation("two or more of %s %s in vCenter" % (kind, ", ".join(dup)))
        if self.episode != "clean" and inv != self.ref_inventory:
            self.violation("vCenter's inventory differs from the clean run's: %s"
                           % {k: v for k, v in inv.items() if v != self.ref_inventory.get(k)})
        self.ref_inventory = inv if self.episode == "clean" else self.ref_inventory
        names = inv["VirtualMachine"]
        return {n: vm_fingerprint(self.lab.vc("show", n)) for n in sorted(set(names))}

    # ------------------------------------------------------------ checks

    def violation(self, what, full=None):
        line = "%s %s (seed %d): %s" % (self.name, self.episode, self.args.seed, what)
        print("VIOLATION " + line, flush=True)
        self.violations.append(line)
        self.keep_evidence(line, full)

    def keep_evidence(self, line, full=None):
        """What the first violation of an episode leaves to look at once the
        lab is gone: the violation, the failing run's whole stderr, the state
        directory (the journal) and, for each guest, its serial console and
        what it runs (GUEST_EVIDENCE, read over plain ssh, all guests at
        once), in --evidence DIR/EXAMPLE-EPISODE.  Never raises: a guest that
        does not answer is recorded as such."""
        if not getattr(self.args, "evidence", None) or self.episode in self.kept:
            return
        self.kept.add(self.episode)
        d = os.path.join(self.args.evidence, "%s-%s" % (self.name, self.episode.replace(" ", "-")))
        try:
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "violation.txt"), "w", encoding="utf-8") as f:
                f.write(line + "\n")
            if full:
                with open(os.path.join(d, "stderr.txt"), "w", encoding="utf-8") as f:
                    f.write(full)
            if os.path.isdir(self.state_dir):
                shutil.copytree(self.state_dir, os.path.join(d, "state"), dirs_exist_ok=True)
            guests = sorted(getattr(self.lab, "guests", None) or {})
            got = {}

            def ask(vm):
                try:
                    got[vm] = self.lab.guest_ssh(vm, GUEST_EVIDENCE, timeout=150)
                except (RuntimeError, subprocess.TimeoutExpired, AttributeError, OSError) as e:
                    got[vm] = "not read: %s\n" % e
            threads = [threading.Thread(target=ask, args=(vm,)) for vm in guests]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            for vm in guests:
                os.makedirs(os.path.join(d, "guests", vm), exist_ok=True)
                with open(os.path.join(d, "guests", vm, "now.txt"), "w", encoding="utf-8") as f:
                    f.write(got.get(vm, ""))
                console = os.path.join(self.lab.dir, "guests", vm, "console.log")
                if os.path.exists(console):
                    shutil.copy(console, os.path.join(d, "guests", vm, "console.log"))
            print("soak: evidence of the violation kept in %s" % d, flush=True)
        except OSError as e:
            print("soak: keeping the evidence in %s failed: %s" % (d, e), flush=True)

    def check_plan(self):
        r = subprocess.run([BIN, "plan", "--only", self.args.only, "--state-dir", self.state_dir, self.lab.spec],
                           env=self.lab.env, capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            self.violation("plan after converging exits %d: %s" % (r.returncode, r.stdout[-1500:]))

    def check(self):
        self.check_plan()
        for h in self.lab.hosts:
            self.check_host(h)
        for vm in self.lab.guests:
            self.check_guest(vm)
        if self.vcenter and self.episode != "clean":
            views = self.vm_views()
            if views != self.ref_vms:
                diff = sorted(n for n in set(views) | set(self.ref_vms) if views.get(n) != self.ref_vms.get(n))
                self.violation("VMs differ from the clean run: %s; %s" % (", ".join(diff), vm_diff(
                    views.get(diff[0]), self.ref_vms.get(diff[0]))))

    def check_guest(self, vm):
        if self.episode == "clean":
            return
        boots = self.lab.guest_boots(vm)
        extra = boots - self.needed_guest[vm]
        if extra > 0:
            self.fig["guest_extra_reboots"] += extra
        if extra > 1:
            self.violation("guest %s booted %d times, needed %d" % (vm, boots, self.needed_guest[vm]))
        view = self.lab.guest_view(vm)
        if view != self.ref_guests[vm]:
            mine, ref = view.splitlines(), self.ref_guests[vm].splitlines()
            self.violation("guest %s differs from the clean run: %s; clean run's not here: %s"
                           % (vm, [l for l in mine if l not in ref][:4], [l for l in ref if l not in mine][:4]))

    def check_host(self, h):
        st = self.lab.state(h)
        if st["maintenance"]:
            self.violation("%s left in maintenance mode" % h)
        cmds = self.lab.changes(h)
        sent = sum(1 for c in cmds if c.startswith(REBOOT))
        extra = max(st["boot_count"], sent) - self.needed.get(h, st["boot_count"])
        if extra > 0:
            self.fig["extra_reboots"] += extra
            self.fig["worst_extra"] = "%s +%d" % (h, extra)
        if extra > 1:
            self.violation("%s rebooted %d times, needed %d" % (h, max(st["boot_count"], sent), self.needed[h]))
        if len([c for c in cmds if c.startswith(VIB_INSTALL)]) > 1:
            self.violation("%s: a VIB installed twice" % h)
        if self.episode != "clean" and self.host_view(h) != self.ref_hosts[h]:
            mine, ref = self.host_view(h), self.ref_hosts[h]
            keys = sorted(k for k in set(mine) | set(ref) if mine.get(k) != ref.get(k))
            self.violation("%s: state differs from the clean run in %s; %s: %s, clean run %s"
                           % (h, ", ".join(keys), keys[0], json.dumps(mine.get(keys[0]))[:300],
                              json.dumps(ref.get(keys[0]))[:300]))

    # ------------------------------------------------------------ episodes

    def converge(self, first_kill):
        """Re-runs after a kill until one exits 0; each is killed at a random
        point while this episode has kills left.  --kill-window clean draws
        every delay in (0, T); remaining draws a re-run's in (0, what is
        left of T after the kills so far, plus --reobserve), since a resumed
        run skips what is done and would mostly end before a delay from the
        whole of T; and the first run's in (0, the latest whole run from a
        fresh lab), when one has ended before its kill since: a clean run
        slowed by something beside it would leave most first runs unkilled."""
        left = self.args.per_episode - first_kill
        window = self.clean_s
        if self.args.kill_window == "remaining":
            window = min(self.clean_s, getattr(self, "whole_s", self.clean_s))
        first = True
        while True:
            self.fig["runs"] += 1
            run = Run(self.lab, self.state_dir, self.args.only)
            if left > 0 and self.fig["kills"] < self.args.kills:
                delay = self.rng.uniform(0.02, window)
                if run.kill_after(delay):
                    self.fig["kills"] += 1
                    self.fig["resume_waits"] += run.waited
                    if self.in_guest_stage(run):
                        self.fig["guest_kills"] += 1
                    if self.args.kill_window == "remaining":
                        again = min(self.args.reobserve, self.clean_s)
                        window = max(again, window - delay + again)
                    left -= 1
                    first = False
                    continue
            rc, err = run.wait()
            self.fig["resume_waits"] += run.waited
            if first:
                self.whole_s = time.time() - run.started
            if self.ended(rc, err):
                return
            self.violation("a re-run exited %d: %s" % (rc, err[-2000:]), err)
            return

    def ended(self, rc, err):
        """Did a run that was not killed end as it must: converged."""
        return rc == 0

    def kill_episode(self):
        self.fresh()
        self.fig["episodes"] += 1
        self.converge(0)
        self.check()

    def drop_episode(self):
        self.fresh()
        if self.lab.guests:
            # the guest soak's spec keeps its command timeout (an apt-get
            # install in a TCG guest takes minutes), so a host's silent
            # dropped session would cost minutes: its drops are the guests'
            # and vCenter's
            return self.guest_drop_episode()
        target = self.rng.choice(self.lab.targets)
        # simlab counts every command, observations too: the drop lands
        # somewhere in what the clean run sent that target
        after = self.rng.randrange(max(1, self.commands[target]))
        control = {"drop_after": after}
        if target in self.lab.hosts:
            control["reboot_seconds"] = self.args.reboot_seconds
        self.lab.control(target, control)
        self.fig["drops_ssh"] += 1
        timer = self.vc_drop_later() if self.vcenter else None
        t0 = time.time()
        rc, err = Run(self.lab, self.state_dir, self.args.only).wait()
        if timer:
            timer.cancel()
        self.fig["runs"] += 1
        if "drop_after" not in self.lab.read_control(target):
            self.fig["dropped_ssh"] += 1
        self.fig["retries_ssh"] += len(re.findall(r"^(?!vcenter:).*retrying after:", err, re.M))
        self.fig["retries_vc"] += len(re.findall(r"^vcenter: retrying after:", err, re.M))
        if rc != 0:
            self.violation("an apply with %s dropping after %d commands exited %d in %.1f s: %s"
                           % (target, after, rc, time.time() - t0, err[-2000:]), err)
            return
        self.check()

    def guest_drop_episode(self):
        """One apply from a fresh lab in which --drops-per-episode guest
        connections drop, each at a random moment in (0, T) (a guest picked
        at random; when our driver holds no session on it then, the first
        moment it does), and vCenter drops one call; it must exit 0."""
        run = Run(self.lab, self.state_dir, self.args.only, verbose=True)
        plan = sorted((self.rng.uniform(0.02, self.clean_s), self.rng.choice(sorted(self.lab.guests)))
                      for _ in range(self.args.drops_per_episode))
        self.fig["drops_guest"] += len(plan)
        dropper = threading.Thread(target=self.drop_guests, args=(run, plan), daemon=True)
        dropper.start()
        timer = self.vc_drop_later() if self.vcenter else None
        rc, err = run.wait(timeout=3600)
        if timer:
            timer.cancel()
        dropper.join()
        self.fig["runs"] += 1
        retries = re.findall(r"^(?:%s): retrying after:.*$" % "|".join(
            re.escape(vm) for vm in self.lab.guests), err, re.M)
        # a cut during a reboot wait's poll is one more poll, not a retry
        # (gc_drv_wait_reboot); -v shows it as a note
        absorbed = re.findall(r"^(?:%s): %s.*$" % ("|".join(
            re.escape(vm) for vm in self.lab.guests), re.escape(WAIT_CUT)), err, re.M)
        self.fig["retries_guest"] += len(retries)
        self.fig["absorbed_guest"] += len(absorbed)
        for line in retries + absorbed:  # which cut each retry or poll answered
            print("soak: %s: %s: %s" % (self.name, self.episode, line[:300]), flush=True)
        self.fig["retries_vc"] += len(re.findall(r"^vcenter: retrying after:", err, re.M))
        if rc != 0:
            self.violation("an apply with guest drops at %s exited %d: %s" % (
                ", ".join("%s %.0f s" % (vm, t) for t, vm in plan), rc, err[-2000:]), err)
            return
        self.check()

    def drop_guests(self, run, plan):
        for at, vm in plan:
            while run.p.poll() is None and time.time() < run.started + at:
                time.sleep(0.2)
            while run.p.poll() is None:
                try:
                    out = self.lab.guest_ssh(vm, GUEST_DROP, timeout=30)
                except (RuntimeError, subprocess.TimeoutExpired):
                    out = ""  # rebooting: our driver has no session on it either
                killed = re.findall(r"^KILLED (\d+)$", out, re.M)
                if killed:
                    self.fig["dropped_guest"] += 1
                    self.guest_drops.append((self.episode, vm, time.time() - run.started,
                                             session_work(out, killed)))
                    print("soak: %s: %s: dropped %s's connection %.0f s into the run: %s" % (
                        self.name, self.episode, vm, self.guest_drops[-1][2], self.guest_drops[-1][3]),
                        flush=True)
                    break
                time.sleep(1)

    def vc_drop_later(self):
        method = self.rng.choice(VC_METHODS)
        how = self.rng.choice(["before", "after"])
        delay = self.rng.uniform(0.0, self.clean_s)
        self.fig["drops_vc"] += 1
        timer = threading.Timer(delay, self.lab.faults, [{method: {"*": {"drop": how, "times": 1}}}])
        timer.start()
        return timer

    def soak(self):
        try:
            self.episodes()
        finally:
            self.fig["wall_s"] = time.time() - self.t0

    def out_of_time(self, started):
        """--budget: would one more kill episode, as long as the longest so
        far, end past it?  (The table then says how many kills landed.)"""
        if self.args.budget is None or not self.episode_s:
            return False
        return time.time() + max(self.episode_s) > started + self.args.budget

    def episodes(self):
        started = time.time()
        self.clean()
        while self.fig["kills"] < self.args.kills and not self.violations:
            if self.out_of_time(started):
                print("soak: %s: --budget %d s: stopping after %d kills" % (
                    self.name, self.args.budget, self.fig["kills"]), flush=True)
                break
            self.episode = "kill episode %d" % (self.fig["episodes"] + 1)
            t0 = time.time()
            self.kill_episode()
            self.episode_s.append(time.time() - t0)
            print("soak: %s: %s done in %.0f s: %d kills%s, %d runs, %d violations" % (
                self.name, self.episode, self.episode_s[-1], self.fig["kills"],
                " (%d in the guest stage)" % self.fig["guest_kills"] if self.guest_stage()
                else " (%d re-runs waited for a reboot)" % self.fig["resume_waits"]
                if self.lab.guests else "",
                self.fig["runs"], len(self.violations)), flush=True)
        for i in range(self.args.drops):
            if self.violations:
                break
            self.episode = "drop episode %d" % (i + 1)
            t0 = time.time()
            self.drop_episode()
            print("soak: %s: %s done in %.0f s: %d violations" % (
                self.name, self.episode, time.time() - t0, len(self.violations)), flush=True)


class LibvirtLab:
    """kvm-pair's libvirt targets on this machine's real libvirtd
    (tests/sim/libvirtd.sh), as test_kvm.py applies them: both hosts' URI
    qemu:///system, accel tcg, a storage pool of our own holding a blank base
    image, the VMs left off (a domain with a <hostdev> cannot start without an
    IOMMU).  Its names carry a "soak-" prefix, so it never touches what
    test_kvm.py defines."""

    URI = "qemu:///system"
    POOL = "gc-soak-kvm"

    def __init__(self, example):
        import yaml  # only here, as for the guests
        subprocess.run([os.path.join(ROOT, "tests", "sim", "libvirtd.sh")], check=True,
                       stdout=subprocess.DEVNULL)
        self.dir = tempfile.mkdtemp(prefix="gc-soak-kvm-")
        os.chmod(self.dir, 0o755)
        self.env = dict(os.environ)
        self.hosts, self.targets, self.guests = [], [], {}
        with open(os.path.join(ROOT, "examples", example + ".yaml"), encoding="utf-8") as f:
            doc = yaml.safe_load(f)
        self.vms = ["soak-" + v["name"] for v in doc["vms"]]
        self.nets = sorted({"soak-" + n["network"] for v in doc["vms"] for n in v.get("nics") or []
                            if n.get("type") == "sriov"})
        self.forget()
        pool = os.path.join(self.dir, "pool")
        os.mkdir(pool)
        self.base = os.path.join(pool, "base.qcow2")
        subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", self.base, "1G"], check=True)
        self.virsh("pool-define-as", self.POOL, "dir", "--target", pool)
        self.virsh("pool-start", self.POOL)
        key = os.path.join(self.dir, "guest_key")
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "gc-soak", "-f", key], check=True)
        for c in doc["credentials"]:
            c["key_file"] = key
        for h in doc["hosts"]:
            h["libvirt_uri"] = self.URI
            h["accel"] = "tcg"
        for v in doc["vms"]:
            v["name"] = "soak-" + v["name"]
            v["image"] = self.base
            v["pool"] = self.POOL
            v["power_on"] = False
            for n in v.get("nics") or []:
                if n.get("type") == "sriov":
                    n["network"] = "soak-" + n["network"]
        self.spec = os.path.join(self.dir, example + ".yaml")
        with open(self.spec, "w", encoding="utf-8") as f:
            yaml.safe_dump(doc, f, sort_keys=False)

    def virsh(self, *args, check=True):
        r = subprocess.run(["virsh", "-q", "-c", self.URI] + list(args), capture_output=True, text=True,
                           timeout=120)
        if check and r.returncode != 0:
            raise RuntimeError("virsh %s: %s" % (" ".join(args), r.stderr.strip()))
        return r.stdout

    def forget(self, keep=None):
        """Our domains and networks gone, and every volume of our pool but
        `keep`; without `keep` the pool too (what an earlier soak left)."""
        for vm in self.vms:
            self.virsh("destroy", vm, check=False)
            self.virsh("undefine", "--nvram", vm, check=False)
        for net in self.nets:
            self.virsh("net-destroy", net, check=False)
            self.virsh("net-undefine", net, check=False)
        for v in self.virsh("vol-list", "--pool", self.POOL, check=False).splitlines():
            if v.split() and v.split()[0] != keep:
                self.virsh("vol-delete", "--pool", self.POOL, v.split()[0], check=keep is not None)
        if keep is None:
            self.virsh("pool-destroy", self.POOL, check=False)
            self.virsh("pool-undefine", self.POOL, check=False)

    def reset(self):
        """Back to nothing defined: no domain, network or volume but the base."""
        self.forget(keep="base.qcow2")

    def volumes(self):
        return sorted(l.split()[0] for l in self.virsh("vol-list", "--pool", self.POOL).splitlines() if l.split())

    def view(self):
        """What libvirt holds of ours, read with virsh: each domain's
        persistent XML and state, each network's XML, whether it runs and
        starts with the host, each volume's XML and the sha256 of its bytes.
        Less what libvirt makes up on each define (UUIDs, MAC addresses) and
        the volumes' times."""
        def norm(xml):
            xml = re.sub(r"<uuid>[^<]*</uuid>", "<uuid/>", xml)
            xml = re.sub(r"<mac address='[^']*'/>", "<mac/>", xml)
            return re.sub(r"<timestamps>.*?</timestamps>", "", xml, flags=re.S)
        names = self.virsh("list", "--all", "--name").split()
        view = {"domains": sorted(n for n in names if n.startswith("soak-")),
                "networks": sorted(n for n in self.virsh("net-list", "--all", "--name").split()
                                   if n.startswith("soak-"))}
        for d in view["domains"]:
            view["domain " + d] = (norm(self.virsh("dumpxml", "--inactive", d)),
                                   self.virsh("domstate", d).strip())
        for n in view["networks"]:
            info = [l for l in self.virsh("net-info", n).splitlines() if not l.startswith("UUID")]
            view["network " + n] = (norm(self.virsh("net-dumpxml", "--inactive", n)), info)
        view["volumes"] = self.volumes()
        for v in view["volumes"]:
            out = os.path.join(self.dir, "vol.bin")
            self.virsh("vol-download", "--pool", self.POOL, v, out)
            view["volume " + v] = (norm(self.virsh("vol-dumpxml", "--pool", self.POOL, v)), self.content(out))
        return view

    @staticmethod
    def content(path):
        """A volume's sha256; a seed ISO's is that of each file on it, read
        with isoinfo (libisofs stamps the image with the time it is made)."""
        with open(path, "rb") as f:
            data = f.read()
        if data[0x8001:0x8006] != b"CD001":
            return hashlib.sha256(data).hexdigest()
        files = subprocess.run(["isoinfo", "-R", "-f", "-i", path], capture_output=True, text=True,
                               check=True).stdout.split()
        return {name: hashlib.sha256(subprocess.run(["isoinfo", "-R", "-i", path, "-x", name],
                                                    capture_output=True, check=True).stdout).hexdigest()
                for name in sorted(files)}

    def stop(self):
        self.forget()
        shutil.rmtree(self.dir, ignore_errors=True)


class LibvirtExample(Example):
    """kvm-pair's soak: kills of `apply --only libvirt` against a real
    libvirtd; after each episode a plan with no changes and libvirt's own
    view (LibvirtLab.view) equal to the clean run's."""

    def __init__(self, name, args, rng):
        # its own targets, and no SSH target to drop a connection of
        super().__init__(name, argparse.Namespace(**dict(vars(args), only="libvirt", drops=0)), rng,
                         LibvirtLab(name))
        self.needed = {}

    def clean(self):
        self.clean_apply()
        self.ref = self.lab.view()
        if self.ref["domains"] != sorted(self.lab.vms):
            raise RuntimeError("%s: the clean apply left domains %s" % (self.name, self.ref["domains"]))
        self.check()

    def check(self):
        self.check_plan()
        if self.episode == "clean":
            return
        view = self.lab.view()
        for k in sorted(set(view) | set(self.ref)):
            if view.get(k) != self.ref.get(k):
                self.violation("libvirt's %s differs from the clean run's:\n%s"
                               % (k, self.diff(self.ref.get(k), view.get(k))))

    @staticmethod
    def diff(ref, now):
        """The lines that differ, as a unified diff (clean run first): a
        domain's XML differs in a line or two of hundreds."""
        def lines(v):
            if isinstance(v, (tuple, list)):
                return [l for part in v for l in str(part).splitlines()]
            return str(v).splitlines()
        return "\n".join(difflib.unified_diff(lines(ref), lines(now), "clean run", "now",
                                               n=2, lineterm=""))


class KvmHostLab(Lab):
    """The lab VM of tests/data/kvm/kvmhost-lab.yaml as a KVM host, set up as
    test_kvmhost.py's test_4 leaves it: the stand-ins for update-grub and for
    GRUB booting grub.cfg's arguments installed (tests/sim/kvmhost), and a
    spec of one KVM host with one vGPU-mode GPU, so that its one resource is
    the IOMMU (kernel arguments and a reboot).  QEMU gives the VM no IOMMU:
    every apply ends refusing the host for its firmware once the arguments
    run, the way a host whose firmware keeps VT-d off is refused."""

    VM = "kvmlab"

    def __init__(self, port):
        self.dir = tempfile.mkdtemp(prefix="gc-soak-kvmhost-")
        os.chmod(self.dir, 0o755)
        self.env = dict(os.environ, GC_LAB_DIR=self.dir, GC_REBOOT_POLL_MS="1000")
        self.lab("start", "--spec", KVMHOST_SPEC, "--port", str(port), "--guests", "1")
        self.hosts, self.targets, self.vcenter = [], [], False
        self.guest_port = port + 10000
        self.guests = {self.VM: "127.0.0.71"}
        self.spec = os.path.join(self.dir, "kvmhost.yaml")
        with open(os.path.join(ROOT, "tests", "data", "kvm", "kvmhost-apply.yaml.in"),
                  encoding="utf-8") as f:
            text = f.read() % {"name": "kvmhost-soak", "lab": self.dir, "port": self.guest_port,
                               "addr": self.guests[self.VM]}
        with open(self.spec, "w", encoding="utf-8") as f:
            f.write(text)
        self.standins()

    def install(self, standin, path, mode):
        with open(os.path.join(KVMHOST_STANDINS, standin), encoding="utf-8") as f:
            text = f.read()
        r = subprocess.run(["ssh", "-p", str(self.guest_port), "-i", os.path.join(self.dir, "guest_key"),
                            "-o", "UserKnownHostsFile=" + os.path.join(self.dir, "known_hosts"),
                            "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes",
                            "-o", "LogLevel=ERROR", "gclab@" + self.guests[self.VM],
                            "sudo mkdir -p \"$(dirname %s)\" && sudo tee %s >/dev/null && sudo chmod %s %s"
                            % (path, path, mode, path)],
                           input=text, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise RuntimeError("installing %s: %s" % (standin, r.stderr[-500:]))

    def standins(self):
        self.install("update-grub", "/usr/local/sbin/update-grub", "755")
        self.install("default-grub", "/etc/default/grub", "644")
        self.install("grub-boot.sh", "/usr/local/lib/gclab/grub-boot.sh", "755")
        self.install("gclab-grub.service", "/etc/systemd/system/gclab-grub.service", "644")
        self.guest_ssh(self.VM, "sudo update-grub 2>/dev/null; sudo systemctl enable -q gclab-grub.service")

    def reset(self):
        """A fresh disk, booted, the stand-ins installed: no kernel argument
        of ours configured or running."""
        self.guest_reset()
        self.standins()

    def view(self):
        """What the KVM host stage leaves, read over plain ssh: our grub.d
        file, grub.cfg's kernel lines, the running kernel's arguments."""
        return self.guest_ssh(self.VM, "sudo cat /etc/default/grub.d/99-gpuclusterctl-iommu.cfg 2>&1; "
                                       "echo '-- grub.cfg'; grep -E '^[[:space:]]+linux' /boot/grub/grub.cfg; "
                                       "echo '-- cmdline'; cat /proc/cmdline")

    def stop(self):
        self.lab("stop")
        shutil.rmtree(self.dir, ignore_errors=True)


class KvmHostExample(Example):
    """kvm-pair's KVM host stage on the lab's KVM host VM (KvmHostLab):
    kills of `apply --only kvm`.  The lab cannot converge (no IOMMU in a TCG
    VM), so the reference is the clean run's outcome, and every episode must
    end as the clean run ended: its last run with the clean run's exit status
    and last error line (the host refused for its firmware once the
    arguments run: after its reboot, or at once when it already runs them),
    a plan refusing it alike, the same grub.d file, grub.cfg
    kernel lines and running arguments (read over plain ssh), and at most
    one boot more than the clean run's."""

    def __init__(self, name, args, rng):
        super().__init__(name, argparse.Namespace(**dict(vars(args), only="kvm", drops=0)), rng,
                         KvmHostLab(args.port))
        self.needed = {}

    def fresh(self):
        self.lab.reset()
        shutil.rmtree(self.state_dir, ignore_errors=True)

    def clean(self):
        self.fresh()
        t0 = time.time()
        rc, err = Run(self.lab, self.state_dir, self.args.only).wait()
        self.clean_s = time.time() - t0
        self.expected = (rc, last_line(err))
        firmware = "has no IOMMU groups: turn on"
        if rc != 1 or firmware not in self.expected[1]:
            raise RuntimeError("%s: the clean apply did not end refusing the host for its firmware "
                               "(%d): %s" % (self.name, rc, err[-2000:]))
        self.needed = {KvmHostLab.VM: self.lab.guest_boots(KvmHostLab.VM)}
        self.ref_plan = self.plan()
        self.ref = self.lab.view()
        print("soak: %s: clean apply %.1f s, exit %d: %s" % (self.name, self.clean_s, rc, self.expected[1]),
              flush=True)

    def plan(self):
        r = subprocess.run([BIN, "plan", "--only", "kvm", "--state-dir", self.state_dir, self.lab.spec],
                           env=self.lab.env, capture_output=True, text=True, timeout=300)
        return r.returncode, r.stdout

    def ended(self, rc, err):
        return (rc, last_line(err)) == self.expected

    def check(self):
        if self.episode == "clean":
            return
        plan = self.plan()
        if plan != self.ref_plan:
            self.violation("plan after the episode: exit %d: %s; clean run: exit %d: %s"
                           % (plan[0], plan[1][-800:], self.ref_plan[0], self.ref_plan[1][-800:]))
        view = self.lab.view()
        if view != self.ref:
            self.violation("the host differs from the clean run: %s; clean run: %s" % (view, self.ref))
        boots = self.lab.guest_boots(KvmHostLab.VM)
        extra = boots - self.needed[KvmHostLab.VM]
        if extra > 0:
            self.fig["extra_reboots"] += extra
            self.fig["worst_extra"] = "%s +%d" % (KvmHostLab.VM, extra)
        if extra > 1:
            self.violation("%s booted %d times, the clean run %d" % (KvmHostLab.VM, boots,
                                                                      self.needed[KvmHostLab.VM]))


def last_line(err):
    """A run's last error line; a host refused "after the reboot" is the same
    refusal as one found so at the observation (a re-run after a kill that
    came once the reboot had taken effect: test_kvmhost's last plan)."""
    lines = [l for l in err.splitlines() if l.strip()]
    return re.sub(r" failed: after the reboot: ", " failed: ", lines[-1]) if lines else ""


def example(name, args, rng):
    """The soak of one example: through the simulators, libvirtd's, or the
    lab's KVM host VM."""
    if name in KVMHOST_EXAMPLES:
        return KvmHostExample(name, args, rng)
    return (LibvirtExample if name in LIBVIRT_EXAMPLES else Example)(name, args, rng)


def table(results):
    head = ("example", "hosts", "clean s", "reboots/host", "kills", "episodes", "runs",
            "extra reboots", "ssh drops landed/retried", "vc drops/retried", "wall s", "result")
    rows = [head]
    for ex in results:
        f = ex.fig
        needed = sorted(set(ex.needed.values())) if hasattr(ex, "needed") else []
        rows.append((ex.name, str(len(ex.lab.hosts)), "%.1f" % getattr(ex, "clean_s", 0),
                     "/".join(str(n) for n in needed), str(f["kills"]), str(f["episodes"]),
                     str(f["runs"]), "%d%s" % (f["extra_reboots"], " (%s)" % f["worst_extra"] if f["worst_extra"] else ""),
                     "%d: %d/%d" % (f["drops_ssh"], f["dropped_ssh"], f["retries_ssh"]),
                     "%d/%d" % (f["drops_vc"], f["retries_vc"]), "%.0f" % f.get("wall_s", 0),
                     "FAIL" if ex.violations else "ok"))
    if any(ex.guest_stage() for ex in results):
        rows[0] = rows[0][:-2] + ("guests", "kills in guest stage", "guest extra reboots",
                                  "waits for a reboot",
                                  "guest drops landed/retried/polled again") + rows[0][-2:]
        for i, ex in enumerate(results, 1):
            f = ex.fig
            rows[i] = rows[i][:-2] + (str(len(ex.lab.guests)), str(f["guest_kills"]),
                                      str(f["guest_extra_reboots"]), str(f["resume_waits"]),
                                      "%d: %d/%d/%d" % (f["drops_guest"], f["dropped_guest"],
                                                        f["retries_guest"], f["absorbed_guest"])
                                      ) + rows[i][-2:]
        head = rows[0]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)


def parse_args(argv):
    offset = int(os.environ.get("GC_IT_PORT_OFFSET", "0"))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples", default=",".join(EXAMPLES))
    ap.add_argument("--kills", type=int, default=50, help="SIGKILLs per example")
    ap.add_argument("--per-episode", type=int, default=5, help="kills before a run may finish")
    ap.add_argument("--drops", type=int, default=None,
                    help="drop episodes per example (default 4; 0 with --guests, where each is a "
                         "whole apply from fresh guests, minutes of TCG)")
    ap.add_argument("--drops-per-episode", type=int, default=2,
                    help="with --guests: guest connections dropped in one drop episode's apply")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--budget", type=int, default=None, metavar="SECONDS",
                    help="start no kill episode that would end past SECONDS from the start "
                         "(judged by the longest episode so far); the table says how many "
                         "kills landed")
    ap.add_argument("--only", default=None,
                    help="apply's --only (target kinds; default %s, with --guests also guest)" % ONLY)
    ap.add_argument("--guests", action="store_true",
                    help="boot the example's guests as real VMs and soak the guest stage too")
    ap.add_argument("--kill-window", choices=("clean", "remaining"), default="clean",
                    help="where a re-run's kill may land: anywhere in the clean run's time "
                         "(clean, every recorded ESXi soak) or in what the kills so far left of "
                         "it (remaining: more kills land per episode, for the slow guest soak)")
    ap.add_argument("--reobserve", type=float, default=REOBSERVE_S, metavar="SECONDS",
                    help="with --kill-window remaining: what a re-run spends before it resumes "
                         "(observing, waiting for a target still booting); its window is what "
                         "the kills left of T plus this, and never below it (default %(default)s; "
                         "a smaller one lands more kills late in a re-run)")
    ap.add_argument("--evidence", default=None, metavar="DIR",
                    help="where a violation's evidence is kept (the run's stderr, the journal, "
                         "each guest's processes and console); default /tmp/gc-soak-evidence-SEED, "
                         "'' keeps none")
    ap.add_argument("--reboot-seconds", type=float, default=0.5)
    ap.add_argument("--port", type=int, default=2350 + offset)
    ap.add_argument("--vcsim-port", type=int, default=9020 + offset)
    args = ap.parse_args(argv)
    names = args.examples.split(",")
    libvirt_only = all(n in LIBVIRT_EXAMPLES for n in names)
    own_only = all(n in LIBVIRT_EXAMPLES + KVMHOST_EXAMPLES for n in names)
    if args.only is None:
        args.only = ("libvirt" if libvirt_only else "kvm" if own_only
                     else ONLY + (",guest" if args.guests else ""))
    if args.drops is None:
        args.drops = 0 if args.guests or own_only else 4
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1, 1 << 31)
    if args.evidence is None:
        args.evidence = "/tmp/gc-soak-evidence-%d" % args.seed
    return args


def main(argv):
    args = parse_args(argv)
    print("soak: seed %d (replay: scripts/soak.py --seed %d --examples %s --only %s --kills %d "
          "--per-episode %d --drops %d --drops-per-episode %d --kill-window %s --reobserve %g%s)" % (
                                              args.seed, args.seed, args.examples, args.only, args.kills,
                                              args.per_episode, args.drops, args.drops_per_episode,
                                              args.kill_window, args.reobserve,
                                              " --guests" if args.guests else ""), flush=True)
    results = []
    for name in args.examples.split(","):
        # one generator per example: --examples NAME --seed S draws the same
        # delays and drops for NAME (the kills still land on a machine's timing)
        ex = example(name, args, random.Random("%d/%s" % (args.seed, name)))
        try:
            ex.soak()
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            ex.violation(str(e))
        finally:
            ex.lab.stop()
        results.append(ex)
        print("soak: %s done in %.0f s\n%s" % (name, ex.fig["wall_s"], table([ex])), flush=True)
    print(table(results))
    bad = [v for ex in results for v in ex.violations]
    for v in bad:
        print("VIOLATION " + v)
    print("soak: seed %d: %s" % (args.seed, "%d violations" % len(bad) if bad else "no violations"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
