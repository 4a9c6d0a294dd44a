#!/usr/bin/python3
"""lab_spec - make the local lab stand in for the targets of a spec.

    lab_spec.py inventory SPEC            print lab inventory lines for its hosts/switches
    lab_spec.py seed SPEC LABDIR          seed each simulated host with the spec's hardware
    lab_spec.py rewrite SPEC LABDIR OUT   write the spec with connection settings -> lab
    lab_spec.py vcsim-inventory SPEC      print the vCenter simulator's inventory (JSON)
    lab_spec.py guests SPEC [N]           print the lab guests (JSON, one per line)
    lab_spec.py runfiles SPEC             print the driver versions of the stand-in
                                          .run files its guests need besides the image's

`seed` writes hosts/<name>/state.json (only when absent, so a running lab
keeps its state): the host's ESXi version and PCI devices exactly as the
spec declares them (GPU models with their PCI ids, Mellanox NICs with their
vmnic names), plus one management NIC, in factory state (nothing configured).

`rewrite` changes only how targets are reached: every SSH target gets the
lab's port and known_hosts file, every credential used by a host or switch
becomes the lab user with the lab's password file, and when the lab runs a
vcsim (LABDIR/vcsim/port exists) the spec's vcenter gets its URL
(https://127.0.0.1:PORT/sdk), the lab CA as ca_file, and its credential
becomes vcsim's user with vcsim's password file.  Names, addresses,
hardware and desired configuration are untouched, so applying the rewritten
spec exercises exactly the example.  (Comments are not kept.)

For a spec whose VMs have a `guest:`, `rewrite` also points every guest at
the lab's Debian 12 VMs (tests/sim/guestlab): the guest's `ssh:` block gets
the guest port (lab port + 10000) and LABDIR/known_hosts, its credential
becomes user `gclab` with `key_file: LABDIR/guest_key` (a credential shared
with a host, switch or vCenter is left to them and the guests get a copy
named `NAME-lab`), `os: debian`, `driver.runfile` (when present) the lab's
stand-in .run installer of the version its name carries (NVIDIA's
`NVIDIA-Linux-x86_64-<version>-grid.run`; another name gets the image's
535.183.01), `rdma_stack.installer` (when present) the lab's
stand-in MLNX_OFED archive, `license.token_file` (when present) a token file
the lab writes (LABDIR/client_configuration_token.tok).

`guests` prints, for the first N VMs with a `guest:` (all when N is
absent), what the lab needs to boot one: name, address, index, the RDMA
interface name (guest.rdma_interface.name, else roce_qos.interface, else
eth1), the RDMA device (roce_qos.rdma_device, else rxe0) and the GPUs
(gpu.json entries for the nvidia-smi stand-in).

Addresses: the lab listens on loopback only.  A host, switch or guest whose
`address` is a DNS name or a non-loopback IP gets a loopback address of its
own, 127.0.100.N in the order the spec names them, the same in every
subcommand (so the inventory, vcsim, the guests and the rewritten spec
agree); `rewrite` prints each mapping on stderr.  The rewritten spec holds
the loopback addresses: nothing resolves or dials the spec's own names.

`vcsim-inventory` prints what tests/sim/vcsim/main.go -inventory reads
(format in tests/sim/vcsim/inventory.go): the spec's datacenter, cluster and
datastore (datastore1 when the spec names none), every host with its ESXi
version and PCI devices as vCenter shows a host whose host-side setup is
done (passthrough GPUs enabled and active, except on an ESXi 6.x host,
where vCenter is what sets them; SR-IOV NICs with their VFs,
vGPU GPUs not passed through and offering their model's vGPU types), the
networks and templates the spec's VMs name (a template is EFI when a VM
cloned from it is EFI, as an operator installs templates for GPU VMs, else
BIOS).
"""
import ipaddress
import json
import os
import re
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

# PCI ids and esxcli device names by spec model (public PCI id database).
GPU_IDS = {
    "P100": ("0x15f8", "GP100GL [Tesla P100 PCIe 16GB]"),
    "P100-12GB": ("0x15f7", "GP100GL [Tesla P100 PCIe 12GB]"),
    "V100-16GB": ("0x1db4", "GV100GL [Tesla V100 PCIe 16GB]"),
    "V100": ("0x1db4", "GV100GL [Tesla V100 PCIe 16GB]"),
    "V100-32GB": ("0x1db6", "GV100GL [Tesla V100 PCIe 32GB]"),
    "T4": ("0x1eb8", "TU104GL [Tesla T4]"),
    "A100-40GB": ("0x20f1", "GA100 [A100 PCIe 40GB]"),
    "A100-80GB": ("0x20b5", "GA100 [A100 PCIe 80GB]"),
    "A30": ("0x20b7", "GA100GL [A30 PCIe]"),
    "L4": ("0x27b8", "AD104GL [L4]"),
    "L40S": ("0x26b9", "AD102GL [L40S]"),
    "H100": ("0x2331", "GH100 [H100 PCIe]"),
    "H200": ("0x2335", "GH100 [H200 NVL]"),
}
NIC_IDS = {
    "ConnectX-3": ("0x1003", "MT27500 Family [ConnectX-3]"),
    "ConnectX-3 Pro": ("0x1007", "MT27520 Family [ConnectX-3 Pro]"),
    "Connect-IB": ("0x1011", "MT27600 [Connect-IB]"),
    "ConnectX-4": ("0x1013", "MT27700 Family [ConnectX-4]"),
    "ConnectX-4 Lx": ("0x1015", "MT27710 Family [ConnectX-4 Lx]"),
    "ConnectX-5": ("0x1017", "MT27800 Family [ConnectX-5]"),
    "ConnectX-6": ("0x101b", "MT28908 Family [ConnectX-6]"),
    "ConnectX-6 Dx": ("0x101d", "MT2892 Family [ConnectX-6 Dx]"),
    "ConnectX-7": ("0x1021", "MT2910 Family [ConnectX-7]"),
    "BlueField-2": ("0xa2d6", "MT42822 BlueField-2 integrated ConnectX-6 Dx"),
}

# Mirrors src/spec/tables.c (sources and confidence are noted there): the
# vGPU types of each GPU model in the spelling ESXi uses, and the most VFs
# a NIC model offers per port.
VGPU_TYPES = {
    "P100": ["grid_p100-1q", "grid_p100-2q", "grid_p100-4q", "grid_p100-8q", "grid_p100-16q",
             "grid_p100-4c", "grid_p100-8c", "grid_p100-16c"],
    "P100-12GB": ["grid_p100c-1q", "grid_p100c-2q", "grid_p100c-4q", "grid_p100c-6q",
                  "grid_p100c-12q", "grid_p100c-4c", "grid_p100c-6c", "grid_p100c-12c"],
    "V100-16GB": ["grid_v100-1q", "grid_v100-2q", "grid_v100-4q", "grid_v100-8q", "grid_v100-16q",
                  "grid_v100-4c", "grid_v100-8c", "grid_v100-16c"],
    "V100-32GB": ["grid_v100d-1q", "grid_v100d-2q", "grid_v100d-4q", "grid_v100d-8q",
                  "grid_v100d-16q", "grid_v100d-32q", "grid_v100d-4c", "grid_v100d-8c",
                  "grid_v100d-16c", "grid_v100d-32c"],
    "T4": ["grid_t4-1q", "grid_t4-2q", "grid_t4-4q", "grid_t4-8q", "grid_t4-16q",
           "grid_t4-4c", "grid_t4-8c", "grid_t4-16c"],
    "A100-40GB": ["grid_a100-4c", "grid_a100-5c", "grid_a100-8c", "grid_a100-10c", "grid_a100-20c",
                  "grid_a100-40c", "grid_a100-1-5c", "grid_a100-2-10c", "grid_a100-3-20c",
                  "grid_a100-4-20c", "grid_a100-7-40c"],
    "A100-80GB": ["grid_a100d-4c", "grid_a100d-8c", "grid_a100d-10c", "grid_a100d-16c",
                  "grid_a100d-20c", "grid_a100d-40c", "grid_a100d-80c", "grid_a100d-1-10c",
                  "grid_a100d-2-20c", "grid_a100d-3-40c", "grid_a100d-4-40c", "grid_a100d-7-80c"],
    "A30": ["grid_a30-4c", "grid_a30-6c", "grid_a30-8c", "grid_a30-12c", "grid_a30-24c",
            "grid_a30-1-6c", "grid_a30-2-12c", "grid_a30-4-24c"],
    "L4": ["grid_l4-1q", "grid_l4-2q", "grid_l4-3q", "grid_l4-4q", "grid_l4-6q", "grid_l4-8q",
           "grid_l4-12q", "grid_l4-24q", "grid_l4-4c", "grid_l4-6c", "grid_l4-8c", "grid_l4-12c",
           "grid_l4-24c"],
    "L40S": ["grid_l40s-1q", "grid_l40s-2q", "grid_l40s-3q", "grid_l40s-4q", "grid_l40s-6q",
             "grid_l40s-8q", "grid_l40s-12q", "grid_l40s-16q", "grid_l40s-24q", "grid_l40s-48q",
             "grid_l40s-4c", "grid_l40s-6c", "grid_l40s-8c", "grid_l40s-12c", "grid_l40s-16c",
             "grid_l40s-24c", "grid_l40s-48c"],
    "H100": ["grid_h100-4c", "grid_h100-5c", "grid_h100-10c", "grid_h100-20c", "grid_h100-40c",
             "grid_h100-80c", "grid_h100-1-10c", "grid_h100-2-20c", "grid_h100-3-40c",
             "grid_h100-4-40c", "grid_h100-7-80c"],
}
MAX_VFS = {"ConnectX-4 Lx": 63, "ConnectX-4": 63, "Connect-IB": 62,
           "ConnectX-3": 63, "ConnectX-3 Pro": 63}  # 127 for the others
NIC_DRIVER = {"ConnectX-3": "nmlx4_core", "ConnectX-3 Pro": "nmlx4_core"}  # nmlx5_core for the others
BUILDS = {"8.0.2": "22380479", "8.0.3": "24022510", "8.0.0": "20513097"}


LAB_NET = "127.0.100."


def _loopback(addr):
    try:
        return ipaddress.ip_address(addr).is_loopback
    except ValueError:
        return False  # a DNS name


def map_addresses(spec):
    """Give every target whose address the lab cannot listen on a loopback
    address of its own; returns [(spec address, lab address)] in spec order."""
    mapping = {}
    targets = list(spec.get("hosts") or []) + list(spec.get("switches") or [])
    targets += [vm["guest"] for vm in spec.get("vms") or []
                if isinstance(vm, dict) and isinstance(vm.get("guest"), dict)]
    for t in targets:
        if not isinstance(t, dict):
            continue
        a = t.get("address")
        if not isinstance(a, str) or _loopback(a):
            continue
        if a not in mapping:
            if len(mapping) >= 254:
                raise ValueError("the lab maps at most 254 non-loopback addresses (%s)" % a)
            mapping[a] = LAB_NET + str(len(mapping) + 1)
        t["address"] = mapping[a]
    return list(mapping.items())


def load(path, mapped=None):
    with open(path, encoding="utf-8") as f:
        spec = yaml.safe_load(f)
    m = map_addresses(spec) if isinstance(spec, dict) else []
    if mapped is not None:
        mapped.extend(m)
    return spec


def inventory(spec):
    lines = []
    for h in spec.get("hosts") or []:
        lines.append("%s esxi %s version=%s" % (h["address"], h["name"], h.get("version", "8.0.2")))
    for s in spec.get("switches") or []:
        lines.append("%s onyx %s" % (s["address"], s["name"]))
    return lines


class _Host:
    def __init__(self, name, version):
        self.name = name
        self.attrs = {"version": str(version), "gpus": "0"}


def host_state(h):
    import esxi_sim  # the simulator's own factory state, then our hardware

    state = esxi_sim.default_state(_Host(h["name"], h.get("version", "8.0.2")))
    mgmt = [d for d in state["pci"] if d["vmkname"] == "vmnic0"]
    pci = [dict(d) for d in mgmt]
    for g in h.get("gpus") or []:
        dev_id, dev_name = GPU_IDS.get(g.get("model"), ("0x0000", "NVIDIA GPU"))
        pci.append({"addr": g["pci"], "vendor": "NVIDIA Corporation", "vendor_id": "0x10de",
                    "device": dev_name, "device_id": dev_id, "class": "0x0302",
                    "class_name": "3D controller", "module": "None", "vmkname": "",
                    "capable": True, "gpu": True, "passthru": False, "passthru_active": False})
    for i, n in enumerate(h.get("nics") or []):
        dev_id, dev_name = NIC_IDS.get(n.get("model"), ("0x0000", "Mellanox NIC"))
        pci.append({"addr": n["pci"], "vendor": "Mellanox Technologies", "vendor_id": "0x15b3",
                    "device": dev_name, "device_id": dev_id, "class": "0x0200",
                    "class_name": "Ethernet controller",
                    "module": n.get("driver") or NIC_DRIVER.get(n.get("model"), "nmlx5_core"),
                    "vmkname": n.get("device") or "vmnic%d" % (4 + i), "capable": True,
                    "passthru": False, "passthru_active": False})
    state["pci"] = pci
    return state


def seed(spec, lab):
    for h in spec.get("hosts") or []:
        d = os.path.join(lab, "hosts", h["name"])
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "state.json")
        if os.path.exists(path):
            continue
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(host_state(h), f, indent=1, sort_keys=True)
        os.replace(tmp, path)


def rewrite(spec, lab):
    with open(os.path.join(lab, "port"), encoding="utf-8") as f:
        port = int(f.read().strip())
    with open(os.path.join(lab, "user"), encoding="utf-8") as f:
        user = f.read().strip()
    known = os.path.join(lab, "client", "known_hosts")
    password = os.path.join(lab, "client", "password")
    ssh = dict(spec.get("ssh") or {})
    ssh.update(port=port, known_hosts=known)
    spec["ssh"] = ssh
    used = set()
    for t in (spec.get("hosts") or []) + (spec.get("switches") or []):
        used.add(t.get("credentials"))
        if isinstance(t.get("ssh"), dict):
            t["ssh"].pop("port", None)
            t["ssh"].pop("known_hosts", None)
    for s in spec.get("switches") or []:
        s.pop("enable_password_env", None)
    for c in spec.get("credentials") or []:
        if c.get("name") in used:
            for k in ("password_env", "key_file", "key_passphrase_env", "agent"):
                c.pop(k, None)
            c["username"] = user
            c["password_file"] = password
    rewrite_vcenter(spec, lab, used)
    rewrite_guests(spec, lab, port, used)
    return spec


def rewrite_vcenter(spec, lab, used):
    """Point the spec's vCenter at the lab's vcsim, when it runs one."""
    vc = spec.get("vcenter")
    d = os.path.join(lab, "vcsim")
    if not isinstance(vc, dict) or not os.path.exists(os.path.join(d, "port")):
        return
    with open(os.path.join(d, "port"), encoding="utf-8") as f:
        port = int(f.read().strip())
    with open(os.path.join(d, "username"), encoding="utf-8") as f:
        user = f.read().strip()
    vc["url"] = "https://127.0.0.1:%d/sdk" % port
    vc["ca_file"] = os.path.join(d, "ca.crt")
    vc.pop("insecure", None)
    creds = spec.setdefault("credentials", [])
    name = vc.get("credentials")
    if name in used or not any(c.get("name") == name for c in creds):
        # shared with a host or switch (now the lab's SSH user), or missing
        name = "%s-vcsim" % (name or "vcenter")
        creds.append({"name": name})
        vc["credentials"] = name
    for c in creds:
        if c.get("name") == name:
            for k in ("password_env", "key_file", "key_passphrase_env", "agent"):
                c.pop(k, None)
            c["username"] = user
            c["password_file"] = os.path.join(d, "password")


# The lab's guest side (tests/sim/guestlab): what nvidia-smi reports for a
# passthrough GPU of each spec model: product name, FB memory (MiB), brand,
# architecture (values as nvidia-smi prints them for these boards).
GPU_SMI = {
    "P100": ("Tesla P100-PCIE-16GB", 16384, "Tesla", "Pascal"),
    "P100-12GB": ("Tesla P100-PCIE-12GB", 12288, "Tesla", "Pascal"),
    "V100-16GB": ("Tesla V100-PCIE-16GB", 16384, "Tesla", "Volta"),
    "V100": ("Tesla V100-PCIE-16GB", 16384, "Tesla", "Volta"),
    "V100-32GB": ("Tesla V100-PCIE-32GB", 32768, "Tesla", "Volta"),
    "T4": ("Tesla T4", 15360, "NVIDIA", "Turing"),
    "A100-40GB": ("NVIDIA A100-PCIE-40GB", 40960, "NVIDIA", "Ampere"),
    "A100-80GB": ("NVIDIA A100 80GB PCIe", 81920, "NVIDIA", "Ampere"),
    "A30": ("NVIDIA A30", 24576, "NVIDIA", "Ampere"),
    "L4": ("NVIDIA L4", 23034, "NVIDIA", "Ada Lovelace"),
    "L40S": ("NVIDIA L40S", 46068, "NVIDIA", "Ada Lovelace"),
    "H100": ("NVIDIA H100 PCIe", 81559, "NVIDIA", "Hopper"),
    "H200": ("NVIDIA H200 NVL", 143771, "NVIDIA", "Hopper"),
}
# vGPU licence edition by profile series (REAL-FORMATS C.8)
VGPU_EDITION = {"c": "NVIDIA Virtual Compute Server", "q": "NVIDIA RTX Virtual Workstation",
                "b": "NVIDIA Virtual PC", "a": "NVIDIA Virtual Applications"}
RUNFILE = "NVIDIA-Linux-x86_64-535.183.01-grid.run"
RUNFILE_RE = re.compile(r"^NVIDIA-Linux-x86_64-(\d{2,4}\.\d{1,4}(?:\.\d{1,4})?)-grid\.run$")
TOKEN = "client_configuration_token.tok"
OFED = "MLNX_OFED_LINUX-23.10-1.1.9.0-debian12.1-x86_64.tgz"


def _as_dict(v):
    return v if isinstance(v, dict) else {}


def guest_gpus(spec, vm, index):
    """gpu.json entries for one VM: its passthrough GPUs (model of the host
    GPU it names) and its vGPUs (product from the profile)."""
    hosts = {h.get("name"): h for h in spec.get("hosts") or []}
    host_gpus = {g.get("pci"): g for g in (hosts.get(vm.get("host")) or {}).get("gpus") or []}
    feature = str(_as_dict(_as_dict(vm.get("guest")).get("license")).get("feature_type", ""))
    out = []
    for n, g in enumerate(vm.get("gpus") or []):
        if not isinstance(g, dict):
            continue
        pci = "00000000:%02X:00.0" % (0x13 + n)  # where ESXi puts a VM's PCI devices
        d = {"pci": pci, "uuid": "GPU-6c616267-%04x-%04x-8000-%012x" % (index, n, index * 16 + n),
             "serial": "1562%09d" % (index * 100 + n), "ecc": "Enabled"}
        if g.get("vgpu"):
            prof = str(g["vgpu"])
            name = prof[5:] if prof.startswith("grid_") else prof
            digits = [p for p in name.split("-")[1:] if p[:-1].isdigit()]
            mem = int(digits[-1][:-1]) * 1024 if digits else 0
            series = name[-1:].lower()
            d.update(product="GRID " + name.upper(), memory_mib=mem, mode="VGPU",
                     brand="NVIDIA", arch="", ecc="N/A",
                     licence_product=VGPU_EDITION.get(series, "NVIDIA Virtual Compute Server"))
        else:
            model = (host_gpus.get(g.get("host_pci")) or {}).get("model") or g.get("model")
            prod, mem, brand, arch = GPU_SMI.get(model, ("NVIDIA GPU", 16384, "NVIDIA", ""))
            d.update(product=prod, memory_mib=mem, mode="Pass-Through", brand=brand, arch=arch,
                     licence_product={"2": VGPU_EDITION["q"]}.get(feature, VGPU_EDITION["c"]))
        out.append(d)
    return out


_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
_IFNAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,14}$")


def guests(spec, n=None):
    """The lab guests of a spec: the first n VMs with a guest (all: None).
    Names become file names, interface and device names in the lab: anything
    else than plain names is refused here (the loader says why, later)."""
    out = []
    seen = set()
    for vm in spec.get("vms") or []:
        g = vm.get("guest")
        if not isinstance(g, dict):
            continue
        if n is not None and len(out) >= n:
            break
        ri = _as_dict(g.get("rdma_interface"))
        qos = _as_dict(g.get("roce_qos"))
        index = len(out) + 1
        d = {"name": str(vm.get("name", "")), "address": str(g.get("address", "")), "index": index,
             "rdma_interface": str(ri.get("name") or qos.get("interface") or "eth1"),
             "rdma_device": str(qos.get("rdma_device") or "rxe0"),
             "gpus": guest_gpus(spec, vm, index)}
        if not _NAME.match(d["name"]):
            raise ValueError("lab guest: VM name %r is not a plain name" % d["name"])
        for k in ("rdma_interface", "rdma_device"):
            if not _IFNAME.match(d[k]):
                raise ValueError("lab guest %s: %s %r is not an interface name" % (d["name"], k, d[k]))
        if d["address"] in seen:
            raise ValueError("lab guest %s: address %s is another guest's" % (d["name"], d["address"]))
        seen.add(d["address"])
        out.append(d)
    return out


LAB_MIN_RDMA_GBPS = 0.01
LAB_MAX_RDMA_LATENCY_US = 100000


def rewrite_guests(spec, lab, port, used):
    """Point every guest at the lab's VMs (see the module docstring)."""
    vms = [vm for vm in spec.get("vms") or [] if isinstance(vm.get("guest"), dict)]
    if not vms:
        return
    known = os.path.join(lab, "known_hosts")
    key = os.path.join(lab, "guest_key")
    creds = spec.setdefault("credentials", [])
    vc = _as_dict(spec.get("vcenter")).get("credentials")
    shared = set(used) | ({vc} if vc else set())
    renamed = {}
    for vm in vms:
        g = vm["guest"]
        ssh = dict(_as_dict(g.get("ssh")))
        ssh.update(port=port + 10000, known_hosts=known)
        g["ssh"] = ssh
        name = g.get("credentials")
        if name in shared or not any(c.get("name") == name for c in creds):
            new = renamed.get(name) or "%s-lab" % (name or "guest")
            if new not in renamed.values():
                creds.append({"name": new})
            renamed[name] = new
            g["credentials"] = new
            name = new
        for c in creds:
            if c.get("name") == name:
                for k in ("password_env", "password_file", "key_passphrase_env", "agent"):
                    c.pop(k, None)
                c["username"] = "gclab"
                c["key_file"] = key
        g["os"] = "debian"
        drv = g.get("driver")
        if isinstance(drv, dict) and "runfile" in drv:
            drv["runfile"] = os.path.join(lab, lab_runfile(drv["runfile"]))
        stack = g.get("rdma_stack")
        if isinstance(stack, dict) and "installer" in stack:
            stack["installer"] = os.path.join(lab, OFED)
        lic = g.get("license")
        if isinstance(lic, dict) and "token_file" in lic:
            lic["token_file"] = os.path.join(lab, TOKEN)
    # Soft-RoCE through TCG and the hub moves ~0.05-0.2 Gb/s at ~0.3-1 ms a
    # round trip: the spec's RDMA thresholds (for 100 GbE) become the lab's.
    val = spec.get("validation")
    if isinstance(val, dict):
        if val.get("min_rdma_gbps"):
            val["min_rdma_gbps"] = LAB_MIN_RDMA_GBPS
        if val.get("max_rdma_latency_us"):
            val["max_rdma_latency_us"] = LAB_MAX_RDMA_LATENCY_US


def lab_runfile(path):
    """The lab's stand-in .run for a spec's driver.runfile: of the version
    its name carries (NVIDIA's NVIDIA-Linux-x86_64-<version>-grid.run; the
    lab builds it, tests/sim/guestlab/image.sh runfile), else the image's."""
    m = RUNFILE_RE.match(os.path.basename(str(path)))
    return m.group(0) if m else RUNFILE


def runfile_versions(spec):
    """The driver versions of the stand-in .run files the spec's guests need
    besides the image's own."""
    out = []
    for vm in spec.get("vms") or []:
        g = _as_dict(_as_dict(vm).get("guest"))
        drv = g.get("driver")
        if isinstance(drv, dict) and "runfile" in drv:
            m = RUNFILE_RE.match(lab_runfile(drv["runfile"]))
            if m.group(0) != RUNFILE and m.group(1) not in out:
                out.append(m.group(1))
    return out


def short(hexid):
    """A PCI id as vCenter's xsd:short: signed 16 bits (0x10de -> 4318)."""
    v = int(hexid, 16) & 0xffff
    return v - 0x10000 if v >= 0x8000 else v


def needs_efi(vm):
    """The VM's firmware is EFI: given so, or derived from passthrough devices
    or a vGPU (docs/spec-reference.md, vm.firmware)."""
    if vm.get("firmware"):
        return vm["firmware"] == "efi"
    return bool(vm.get("gpus")) or any(n.get("type") in ("sriov", "passthrough")
                                       for n in vm.get("nics") or [])


def vcsim_inventory(spec):
    vc = spec.get("vcenter") or {}
    vms = spec.get("vms") or []
    hosts = spec.get("hosts") or []
    used_vgpu = {}  # host name -> profiles its VMs use
    networks = ["VM Network"]
    templates = []
    efi = set()  # templates a VM needs EFI from: the operator installed them so
    for vm in vms:
        for g in vm.get("gpus") or []:
            if g.get("vgpu"):
                used_vgpu.setdefault(vm.get("host"), []).append(g["vgpu"])
        for n in vm.get("nics") or []:
            net = n.get("network")
            if net and n.get("type") != "pvrdma" and net not in networks:
                networks.append(net)
        t = vm.get("template")
        if t and t not in templates:
            templates.append(t)
        if t and needs_efi(vm):
            efi.add(t)
    out_hosts = []
    for h in hosts:
        pci = []
        vgpu = []
        version = str(h.get("version", "8.0.2"))
        # an ESXi 6.x host's passthrough is set through vCenter itself
        # (no esxcli pcipassthru before 7.0): it starts off there
        import esxi_sim  # its release rules
        via_vcenter = esxi_sim.version_tuple(version) < (7, 0, 0)
        for g in h.get("gpus") or []:
            model = g.get("model")
            dev_id, dev_name = GPU_IDS.get(model, ("0x0000", "NVIDIA GPU"))
            mode = g.get("mode", "passthrough")
            on = mode == "passthrough" and not via_vcenter
            pci.append({"id": g["pci"], "class_id": short("0x0302"),
                        "vendor_id": short("0x10de"), "vendor_name": "NVIDIA Corporation",
                        "device_id": short(dev_id), "device_name": dev_name,
                        "passthru_capable": True, "passthru_enabled": on, "passthru_active": on})
            if mode == "vgpu":
                for p in VGPU_TYPES.get(model, []) + used_vgpu.get(h["name"], []):
                    if p not in vgpu:
                        vgpu.append(p)
        for i, n in enumerate(h.get("nics") or []):
            dev_id, dev_name = NIC_IDS.get(n.get("model"), ("0x0000", "Mellanox NIC"))
            d = {"id": n["pci"], "class_id": short("0x0200"),
                 "vendor_id": short("0x15b3"), "vendor_name": "Mellanox Technologies",
                 "device_id": short(dev_id), "device_name": dev_name,
                 "passthru_capable": True, "passthru_enabled": False, "passthru_active": False,
                 "pnic": n.get("device") or "vmnic%d" % (4 + i), "driver": "nmlx5_core"}
            if n.get("mode") == "sriov":
                d["sriov"] = {"vfs": int(n.get("vfs", 0)),
                              "max_vfs": MAX_VFS.get(n.get("model"), 127)}
            elif n.get("mode") == "passthrough" and not via_vcenter:
                d["passthru_enabled"] = d["passthru_active"] = True
            pci.append(d)
        out_hosts.append({"name": h["name"], "address": h.get("address", ""),
                          "version": version, "build": BUILDS.get(version, ""),
                          "pci": pci, "vgpu_types": vgpu})
    first = hosts[0]["name"] if hosts else ""
    return {"datacenter": vc.get("datacenter", "DC0"), "cluster": vc.get("cluster", "gpu"),
            "datastore": vc.get("datastore") or "datastore1", "networks": networks,
            "templates": [{"name": t, "host": first, "firmware": "efi" if t in efi else "bios"}
                          for t in templates], "hosts": out_hosts}


def main(argv):
    if len(argv) >= 3 and argv[1] == "inventory":
        print("\n".join(inventory(load(argv[2]))))
        return 0
    if len(argv) == 3 and argv[1] == "vcsim-inventory":
        print(json.dumps(vcsim_inventory(load(argv[2])), indent=1))
        return 0
    if len(argv) in (3, 4) and argv[1] == "guests":
        for g in guests(load(argv[2]), int(argv[3]) if len(argv) == 4 else None):
            print(json.dumps(g))
        return 0
    if len(argv) == 3 and argv[1] == "runfiles":
        print("\n".join(runfile_versions(load(argv[2]))))
        return 0
    if len(argv) == 4 and argv[1] == "seed":
        seed(load(argv[2]), argv[3])
        return 0
    if len(argv) == 5 and argv[1] == "rewrite":
        mapped = []
        out = rewrite(load(argv[2], mapped), argv[3])
        for a, b in mapped:
            print("lab: %s is reached at %s (the lab listens on loopback only)" % (a, b),
                  file=sys.stderr)
        tmp = argv[4] + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write("# written by tests/sim/lab_spec.py from %s: connection settings point at the lab\n"
                    % argv[2])
            yaml.safe_dump(out, f, sort_keys=False, default_flow_style=False)
        os.replace(tmp, argv[4])
        return 0
    print(__doc__, file=sys.stderr)
    return 64


if __name__ == "__main__":
    sys.exit(main(sys.argv))
