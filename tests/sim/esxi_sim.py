"""esxi_sim - a simulated ESXi shell behind the lab sshd (see docs/lab.md).

One exec (or one line of an interactive shell) is parsed like a small POSIX
shell: shlex words, `;` / newline, `&&`, `||`, quoting.  Every exec goes to
the host's execs.log as sent, and to its commands.log, except that a batch
of changes (gpuclusterctl's `&&` chain) is logged there command by command
as each runs.  Each simple command
runs against the host's state, a JSON file under the host's directory, read
and written under the host's file lock.  Outputs follow
shared/REAL-FORMATS.md section A: esxcli's human layouts (table, simple,
block, scalar) and its --formatter=xml|keyvalue|csv forms, built from one
typed result per command so the formats cannot drift apart.

Pending-until-reboot: configuration commands change the *configured* state
at once (what esxcli get/list shows, as on real ESXi, where the config store
is updated immediately) and the *running* state at the next reboot (what
hardware pci list's Current Owner, graphics device list's Graphics Type,
nvidia-smi ECC Current and software vib list show).  `software vib list
--rebooting-image` shows the image that becomes active after the reboot.
"""

import os
import re
import shlex
import sys
import time

import simlab

ESXCLI_NS = "http://www.vmware.com/Products/ESX/5.0/esxcli"
BUILDS = {"8.0.2": "22380479", "8.0.3": "24022510", "8.0.0": "20513097",
          "7.0.3": "19193900", "7.0.2": "17630552", "7.0.0": "15843807",
          "6.7.0": "8169922"}


class Exit(Exception):
    """Raised by a command to stop the whole session (reboot, drop)."""


class Out:
    def __init__(self):
        self.stdout = sys.stdout
        self.stderr = sys.stderr

    def out(self, text):
        self.stdout.write(text)

    def err(self, text):
        self.stderr.write(text)


# ------------------------------------------------------------------ state

def lab_made(host):
    """When the lab was made: its inventory's mtime, whole seconds (the same
    for every host and every session of one lab); now without one (the
    lab's seeding from a spec, tests/sim/lab_spec.py, writes each state
    once)."""
    try:
        return int(os.stat(os.path.join(getattr(host, "lab", None), "inventory")).st_mtime)
    except (OSError, TypeError):
        return int(time.time())


def default_state(host):
    version = host.attrs.get("version", "8.0.2")
    gpus = int(host.attrs.get("gpus", "2"))
    gpu_addrs = ["0000:af:00.0", "0000:d8:00.0", "0000:3d:00.0", "0000:86:00.0"][:gpus]
    pci = [
        {"addr": "0000:18:00.0", "vendor": "Intel Corporation", "vendor_id": "0x8086",
         "device": "Ethernet Controller X710 for 10GbE SFP+", "device_id": "0x1572",
         "class": "0x0200", "class_name": "Ethernet controller", "module": "i40en",
         "vmkname": "vmnic0", "capable": True},
        {"addr": "0000:3b:00.0", "vendor": "Mellanox Technologies", "vendor_id": "0x15b3",
         "device": "MT28908 Family [ConnectX-6]", "device_id": "0x101b",
         "class": "0x0200", "class_name": "Ethernet controller", "module": "nmlx5_core",
         "vmkname": "vmnic4", "capable": True},
        {"addr": "0000:3b:00.1", "vendor": "Mellanox Technologies", "vendor_id": "0x15b3",
         "device": "MT28908 Family [ConnectX-6]", "device_id": "0x101b",
         "class": "0x0200", "class_name": "Ethernet controller", "module": "nmlx5_core",
         "vmkname": "vmnic5", "capable": True},
    ]
    for a in gpu_addrs:
        pci.append({"addr": a, "vendor": "NVIDIA Corporation", "vendor_id": "0x10de",
                    "device": "GA100 [A100 PCIe 40GB]", "device_id": "0x20f1",
                    "class": "0x0302", "class_name": "3D controller", "module": "None",
                    "vmkname": "", "capable": True, "gpu": True})
    for d in pci:
        d["passthru"] = False          # configured (pcipassthru list)
        d["passthru_active"] = False   # running (Current Owner)
    base_date = "2023-10-12"
    vibs = [
        {"name": "esx-base", "version": version + "-0.0." + BUILDS.get(version, "1"),
         "vendor": "VMware", "acceptance": "VMwareCertified", "date": base_date},
        {"name": "nmlx5-core", "version": "4.23.0.66-1vmw.%s.0.0.%s" % (version.replace(".", "")[:3], BUILDS.get(version, "1")),
         "vendor": "VMW", "acceptance": "VMwareCertified", "date": base_date},
        {"name": "i40en", "version": "1.11.2.6-1vmw.%s.0.0.%s" % (version.replace(".", "")[:3], BUILDS.get(version, "1")),
         "vendor": "VMW", "acceptance": "VMwareCertified", "date": base_date},
    ]
    return {
        "version": version,
        "hostname": host.name,
        "maintenance": False,
        "boot_count": 0,
        # epoch seconds of the last (simulated) boot: a host of the lab had
        # been up 30 days when the lab was made (its inventory written), and
        # its uptime grows from there, as a real host's does (the driver's
        # reboot evidence compares two readings)
        "boot_time": lab_made(host) - 30 * 86400,
        "down_until": 0,
        "graphics": {"type": "Shared", "policy": "Performance"},
        "graphics_active": "Shared",
        "pci": pci,
        "vibs": vibs,             # running image
        "vibs_pending": vibs[:],  # image after the next reboot
        "modules": {"nmlx5_core": "", "nmlx5_rdma": ""},
        "modules_active": {"nmlx5_core": "", "nmlx5_rdma": ""},  # loaded at the last boot
        "firewall": {"pvrdma": False, "sshServer": True, "ntpClient": False,
                     "httpClient": False, "vSphereClient": True},
        "advanced": {"/Net/PVRDMAVmknic": "", "/Net/FollowHardwareMac": 0},
        "ntp": {"enabled": False, "servers": [], "loglevel": "warning"},
        "ecc": {"current": "Enabled", "pending": "Enabled"},
    }


def load_state(host):
    state = simlab.read_json(host.path("state.json"), None)
    if state is None:
        state = default_state(host)
    return state


def save_state(host, state):
    simlab.write_json(host.path("state.json"), state)


def vib_active(state):
    """Is an NVIDIA host driver (vGPU manager) in the running image?"""
    return any(v["vendor"] == "NVIDIA" for v in state["vibs"])


def mark_down(host, until):
    """$GC_LAB_DIR/down/ADDRESS: the lab sshd's accept() resets connections
    to this host until then (tests/sim/downgate.c); absent (a lab without
    it, or the unit tests' own dir), sessions are refused instead."""
    d = os.path.join(host.lab, "down")
    if not os.path.isdir(d) or not re.fullmatch(r"[0-9.]+", host.address or ""):
        return
    tmp = os.path.join(d, ".%s.%d" % (host.address, os.getpid()))
    with open(tmp, "w") as f:
        f.write("%d\n" % int(until * 1000))
    os.replace(tmp, os.path.join(d, host.address))


def apply_reboot(state, host):
    control = simlab.read_control(host)
    state["boot_count"] += 1
    state["boot_time"] = time.time() + float(control.get("reboot_seconds", 2))
    state["down_until"] = time.time() + float(control.get("reboot_seconds", 2))
    mark_down(host, state["down_until"])
    state["vibs"] = [dict(v) for v in state["vibs_pending"]]
    state["graphics_active"] = state["graphics"]["type"]
    # "passthru_stuck": the reboot does not make passthrough current (a
    # device the hypervisor cannot claim): the read-back after it fails
    if not control.get("passthru_stuck"):
        for d in state["pci"]:
            d["passthru_active"] = d["passthru"]
    state["ecc"]["current"] = state["ecc"]["pending"]
    state["modules_active"] = dict(state["modules"])
    # mlxconfig's values are the next boot's (NVCONFIG): loaded now
    for entry in state.get("mft_fw", {}).values():
        entry["active"] = dict(entry["next"])


# ------------------------------------------------------------------ typed results
#
# A result is one of:
#   ("none",)                               set commands: print nothing
#   ("scalar", type, value)                 e.g. maintenanceMode get
#   ("struct", TypeName, fields, human)     fields = [(Key Title, type, value)]
#   ("list", TypeName, [fields...], human)
# human says how the default formatter lays it out:
#   ("simple", title or None)  ("table", [(title, align)])  ("block", idkey)
# Field types: "string", "integer", "boolean", "string[]".

def xml_name(title):
    return title.replace(" ", "")


def xml_value(ftype, value, ind):
    pad = " " * ind
    if ftype == "string[]":
        lines = [pad + '<list type="string">']
        for v in value:
            lines.append(pad + "   <string>%s</string>" % xml_escape(v))
        lines.append(pad + "</list>")
        return "\n".join(lines)
    if ftype == "boolean":
        return pad + "<boolean>%s</boolean>" % ("true" if value else "false")
    if ftype == "integer":
        return pad + "<integer>%d</integer>" % value
    return pad + "<string>%s</string>" % xml_escape(value)


def xml_escape(s):
    return str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def xml_struct(tname, fields, ind):
    pad = " " * ind
    lines = [pad + '<structure typeName="%s">' % tname]
    for title, ftype, value in fields:
        lines.append(pad + '   <field name="%s">' % xml_name(title))
        lines.append(xml_value(ftype, value, ind + 6))
        lines.append(pad + "   </field>")
    lines.append(pad + "</structure>")
    return lines


def fmt_xml(res):
    lines = ['<?xml version="1.0" encoding="utf-8"?>',
             '<output xmlns="%s">' % ESXCLI_NS, "<root>"]
    kind = res[0]
    if kind == "none":
        lines.append("   <boolean>true</boolean>")
    elif kind == "scalar":
        lines.append(xml_value(res[1], res[2], 3))
    elif kind == "struct":
        lines += xml_struct(res[1], res[2], 3)
    else:
        lines.append('   <list type="structure">')
        for fields in res[2]:
            lines += xml_struct(res[1], fields, 6)
        lines.append("   </list>")
    lines += ["</root>", "</output>"]
    return "\n".join(lines) + "\n"


def kv_value(ftype, value):
    if ftype == "boolean":
        return "true" if value else "false"
    return str(value)


def kv_fields(prefix, fields):
    lines = []
    for title, ftype, value in fields:
        key = "%s.%s" % (prefix, xml_name(title))
        if ftype == "string[]":
            for i, v in enumerate(value):
                lines.append("%s.string[%d]=%s" % (key, i, v))
        else:
            lines.append("%s.%s=%s" % (key, ftype, kv_value(ftype, value)))
    return lines


def fmt_keyvalue(res):
    kind = res[0]
    if kind == "none":
        lines = ["boolean=true"]
    elif kind == "scalar":
        lines = ["%s=%s" % (res[1], kv_value(res[1], res[2]))]
    elif kind == "struct":
        lines = kv_fields(res[1], res[2])
    else:
        lines = []
        for i, fields in enumerate(res[2]):
            lines += kv_fields("structure[%d].%s" % (i, res[1]), fields)
    return "".join(line + "\n" for line in lines)


def csv_cell(ftype, value):
    if ftype == "string[]":
        return '"' + "".join(v + "," for v in value) + '"'
    return kv_value(ftype, value)


def fmt_csv(res):
    kind = res[0]
    if kind == "none":
        return "true\n"
    if kind == "scalar":
        return kv_value(res[1], res[2]) + "\n"
    rows = [res[2]] if kind == "struct" else res[2]
    if not rows:
        return ""
    names = sorted(xml_name(t) for t, _, _ in rows[0])
    out = [",".join(names) + ","]
    for fields in rows:
        cells = {xml_name(t): csv_cell(ft, v) for t, ft, v in fields}
        out.append(",".join(cells[n] for n in names) + ",")
    return "".join(line + "\n" for line in out)


def human_value(ftype, value):
    if ftype == "string[]":
        return ", ".join(value)
    if ftype == "boolean":
        return "true" if value else "false"
    return str(value)


def fmt_human(res):
    kind = res[0]
    if kind == "none":
        return ""
    if kind == "scalar":
        return human_value(res[1], res[2]) + "\n"
    human = res[3]
    if kind == "struct":
        lines = [human[1]] if human[1] else []
        for title, ftype, value in res[2]:
            lines.append(("   %s: %s" % (title, human_value(ftype, value))).rstrip())
        return "".join(line + "\n" for line in lines)
    if human[0] == "table":
        cols = human[1]
        rows = [[human_value(ft, v) for _, ft, v in fields] for fields in res[2]]
        widths = [max([len(c[0])] + [len(r[i]) for r in rows]) for i, c in enumerate(cols)]

        def line(cells, dashes=False):
            parts = []
            for i, cell in enumerate(cells):
                right = cols[i][1] == "r" and not dashes
                parts.append(cell.rjust(widths[i]) if right else cell.ljust(widths[i]))
            return "  ".join(parts).rstrip()
        out = [line([c[0] for c in cols]), line(["-" * w for w in widths], True)]
        out += [line(r) for r in rows]
        return "".join(o + "\n" for o in out)
    if human[0] == "block":
        idkey = human[1]
        blocks = []
        for fields in res[2]:
            lines = []
            if idkey:
                lines.append(human_value(*[(ft, v) for t, ft, v in fields if t == idkey][0]))
            for title, ftype, value in fields:
                if title == idkey and human[2] is False:
                    continue
                lines.append(("   %s: %s" % (title, human_value(ftype, value))).rstrip())
            blocks.append("".join(line + "\n" for line in lines))
        return "\n".join(blocks)
    raise AssertionError(human)


def render(res, formatter):
    if formatter == "xml":
        return fmt_xml(res)
    if formatter == "keyvalue":
        return fmt_keyvalue(res)
    if formatter == "csv":
        return fmt_csv(res)
    return fmt_human(res)


# ------------------------------------------------------------------ esxcli option parsing

class EsxcliError(Exception):
    pass


def parse_opts(args, spec):
    """spec: {canonical: (short, long, takes_value, repeatable)}."""
    out = {}
    by_short = {v[0]: k for k, v in spec.items() if v[0]}
    by_long = {v[1]: k for k, v in spec.items()}
    i = 0
    while i < len(args):
        a = args[i]
        value = None
        if a.startswith("--"):
            name, eq, value = a[2:].partition("=")
            key = by_long.get(name)
            if not eq:
                value = None
        elif a.startswith("-") and len(a) > 1:
            key = by_short.get(a[1:2])
            if len(a) > 2:
                value = a[2:]
        else:
            raise EsxcliError("Error: Invalid option %s" % a)
        if key is None:
            raise EsxcliError("Error: Invalid option %s" % a)
        takes, repeat = spec[key][2], spec[key][3]
        if takes and value is None:
            i += 1
            if i >= len(args):
                raise EsxcliError("Error: Missing value for option %s" % a)
            value = args[i]
        if not takes:
            value = True
        if repeat:
            out.setdefault(key, []).append(value)
        else:
            out[key] = value
        i += 1
    return out


def need(opts, key, spec):
    if key not in opts:
        s = spec[key]
        raise EsxcliError("Error: Missing required parameter -%s|--%s" % (s[0], s[1])
                          if s[0] else "Error: Missing required parameter --%s" % s[1])
    return opts[key]


def parse_bool(text, opt):
    t = str(text).lower()
    if t in ("true", "1", "yes", "on"):
        return True
    if t in ("false", "0", "no", "off"):
        return False
    raise EsxcliError("Error: Invalid data constraint for parameter '%s'. "
                      "Expected a boolean value (true/false, 1/0, yes/no)." % opt)


# ------------------------------------------------------------------ esxcli commands

GRAPHICS_TYPES = ("Shared", "SharedPassthru")


def c_graphics_host_get(st, args):
    parse_opts(args, {})
    g = st["graphics"]
    return ("struct", "HostGraphicsConfig",
            [("Default Graphics Type", "string", g["type"]),
             ("Shared Passthru Assignment Policy", "string", g["policy"])],
            ("simple", None))


def c_graphics_host_set(st, args):
    spec = {"type": ("", "default-type", True, False),
            "policy": ("", "shared-passthru-assignment-policy", True, False)}
    o = parse_opts(args, spec)
    if "type" in o:
        if o["type"] not in GRAPHICS_TYPES:
            raise EsxcliError("Error: Invalid default graphics type '%s'. Valid values are: "
                              "Shared, SharedPassthru" % o["type"])
        st["graphics"]["type"] = o["type"]
    if "policy" in o:
        if o["policy"] not in ("Performance", "Consolidation"):
            raise EsxcliError("Error: Invalid shared passthru assignment policy '%s'. "
                              "Valid values are: Performance, Consolidation" % o["policy"])
        st["graphics"]["policy"] = o["policy"]
    return ("none",)


def c_graphics_device_list(st, args):
    parse_opts(args, {"configured": ("", "configured-type", False, False)})
    driver = vib_active(st)
    items = []
    for d in st["pci"]:
        if not d.get("gpu"):
            continue
        gtype = "Basic"
        if driver and not d["passthru_active"]:
            gtype = st["graphics_active"]
        items.append([("Device ID", "string", d["addr"]),
                      ("Vendor Name", "string", d["vendor"]),
                      ("Device Name", "string", d["device"]),
                      ("Module Name", "string", "nvidia" if driver else "None"),
                      ("Graphics Type", "string", gtype),
                      ("Memory Size in KB", "integer", 41943040 if driver else 0),
                      ("Number of VMs", "integer", 0)])
    return ("list", "GraphicsDevice", items, ("block", "Device ID", False))


def vib_id(v):
    return "%s_bootbank_%s_%s" % (v["vendor"], v["name"], v["version"])


def c_vib_list(st, args):
    o = parse_opts(args, {"rebooting": ("", "rebooting-image", False, False)})
    vibs = st["vibs_pending"] if o.get("rebooting") else st["vibs"]
    v8 = not st["version"].startswith(("5.", "6.", "7."))
    items = []
    for v in sorted(vibs, key=lambda x: x["name"]):
        f = [("Name", "string", v["name"]), ("Version", "string", v["version"]),
             ("Vendor", "string", v["vendor"]),
             ("Acceptance Level", "string", v["acceptance"]),
             ("Install Date", "string", v["date"])]
        if v8:
            f.append(("Platforms", "string", "host"))
        items.append(f)
    cols = [("Name", "l"), ("Version", "l"), ("Vendor", "l"), ("Acceptance Level", "l"),
            ("Install Date", "l")] + ([("Platforms", "l")] if v8 else [])
    return ("list", "VIBSummaryExt" if v8 else "VIBSummary", items, ("table", cols))


def vib_from_path(path, is_depot):
    base = os.path.basename(path)
    if is_depot:
        stem = base[:-4] if base.endswith(".zip") else base
        parts = stem.split("_")
        # NVD-AIE-800_525.105.14-1OEM.800.1.0.20613240_21517574.zip
        if parts[0].startswith("NVD-") and len(parts) >= 2 and parts[0][-3:].isdigit():
            fam = parts[0][:-4]
            major = parts[0][-3:]
            name = "%s_ESXi_%s.%s.%s_Driver" % (fam, major[0], major[1], major[2])
            return {"name": name, "version": parts[1], "vendor": "NVIDIA",
                    "acceptance": "VMwareAccepted"}
        # NVIDIA-VMware-430.27-1OEM.670.0.0.8169922-offline_bundle.zip: the
        # vGPU manager bundles for ESXi 6.x (NVIDIA vGPU 9.x/10.x for vSphere
        # 6.7), one VIB NVIDIA-VMware_ESXi_6.7_Host_Driver of that version
        m = re.match(r"NVIDIA-VMware-(\d[\w.]*-1OEM\.(\d)(\d)0\.[\d.]+)-offline_bundle$", stem)
        if m:
            return {"name": "NVIDIA-VMware_ESXi_%s.%s_Host_Driver" % (m.group(2), m.group(3)),
                    "version": m.group(1), "vendor": "NVIDIA", "acceptance": "VMwareAccepted"}
        name = parts[0].replace("-", "").lower() if parts[0].startswith("nvd") else parts[0]
        version = parts[1] if len(parts) > 1 else "1.0.0-1"
        return {"name": name, "version": version, "vendor": "NVD" if name.startswith("nvd") else "VMW",
                "acceptance": "VMwareAccepted"}
    stem = base[:-4] if base.endswith(".vib") else base
    parts = stem.split("_")
    if len(parts) >= 4 and parts[1] == "bootbank":
        return {"name": parts[2], "version": "_".join(parts[3:]), "vendor": parts[0],
                "acceptance": "VMwareAccepted"}
    return {"name": stem, "version": "1.0.0-1", "vendor": "VMW", "acceptance": "PartnerSupported"}


# The host's control.json, read by esxcli() for the command it runs (one
# simulator process serves one session of one host).
CONTROL = {}


def missing_file(path, depot):
    """The lab's control "missing_files": paths that are not on the host.
    Every other absolute path is.  The error texts are inferred from
    [MetadataDownloadError] reports (no capture of an ESXi 8 one)."""
    if path not in (CONTROL.get("missing_files") or []):
        return
    if depot:
        raise EsxcliError("[MetadataDownloadError]\n Could not download from depot at zip:%s?index.xml,"
                          " skipping (('zip:%s?index.xml', '', \"Error extracting index.xml from %s: "
                          "[Errno 2] No such file or directory: '%s'\"))\n url = zip:%s?index.xml\n"
                          " Please refer to the log file for more details." % ((path,) * 5))
    raise EsxcliError("[VibDownloadError]\n ('%s', '', \"[Errno 2] No such file or directory: '%s'\")\n"
                      " url = %s\n Please refer to the log file for more details." % ((path,) * 3))


def c_sources_vib_list(st, args):
    """`software sources vib list -d DEPOT | -v VIB`: the VIBs a bundle or
    file holds.  Columns from the esxcli reference (Name, Version, Vendor,
    Creation Date, Acceptance Level, Status); the XML typeName and the
    Status words (New, Update, Installed) are inferred, no capture."""
    spec = {"vib": ("v", "viburl", True, True), "depot": ("d", "depot", True, True),
            "proxy": ("", "proxy", True, False)}
    o = parse_opts(args, spec)
    paths = [(p, False) for p in o.get("vib", [])] + [(p, True) for p in o.get("depot", [])]
    if not paths:
        raise EsxcliError("[NoMatchError]\n Please specify at least one of VIB URLs, or depot URLs.\n"
                          " Please refer to the log file for more details.")
    items = []
    for p, depot in paths:
        missing_file(p, depot)
        v = vib_from_path(p, depot)
        now = [x for x in st["vibs_pending"] if x["name"] == v["name"]]
        status = "New" if not now else ("Installed" if now[0]["version"] == v["version"] else "Update")
        items.append([("Name", "string", v["name"]), ("Version", "string", v["version"]),
                      ("Vendor", "string", v["vendor"]), ("Creation Date", "string", "2023-03-24"),
                      ("Acceptance Level", "string", v["acceptance"]), ("Status", "string", status)])
    cols = [("Name", "l"), ("Version", "l"), ("Vendor", "l"), ("Creation Date", "l"),
            ("Acceptance Level", "l"), ("Status", "l")]
    return ("list", "VIBSummary", items, ("table", cols))


def c_vib_install(st, args):
    spec = {"vib": ("v", "viburl", True, True), "depot": ("d", "depot", True, True),
            "force": ("f", "force", False, False), "nosig": ("", "no-sig-check", False, False),
            "dry": ("", "dry-run", False, False), "mm": ("", "maintenance-mode", False, False),
            "nolive": ("", "no-live-install", False, False)}
    o = parse_opts(args, spec)
    paths = [(p, False) for p in o.get("vib", [])] + [(p, True) for p in o.get("depot", [])]
    if not paths:
        raise EsxcliError("[NoMatchError]\n Please specify at least one of VIB URLs, or depot URLs.\n"
                          " Please refer to the log file for more details.")
    new = []
    for p, depot in paths:
        if not (p.startswith("/") or "://" in p):
            kind = "depot" if depot else "VIB"
            raise EsxcliError("[ValueError]\n %s path '%s' is not absolute.\n"
                              " Please refer to the log file for more details." % (kind, p))
        missing_file(p, depot)
        new.append(vib_from_path(p, depot))
    pending_ids = {vib_id(v) for v in st["vibs_pending"]}
    installed, skipped = [], []
    for v in new:
        (skipped if vib_id(v) in pending_ids else installed).append(v)
    if installed and not st["maintenance"] and not o.get("mm"):
        raise EsxcliError("[MaintenanceModeError]\n MaintenanceMode is required to remove: [];"
                          " install: [%s].\n Please refer to the log file for more details."
                          % ", ".join(vib_id(v) for v in installed))
    removed = []
    if not o.get("dry"):
        for v in installed:
            for old in [x for x in st["vibs_pending"] if x["name"] == v["name"]]:
                removed.append(vib_id(old))
                st["vibs_pending"].remove(old)
            st["vibs_pending"].append(dict(v, date=time.strftime("%Y-%m-%d", time.gmtime())))
    reboot = bool(installed)
    msg = ("The update completed successfully, but the system needs to be rebooted for the "
           "changes to be effective." if reboot else "Host is not changed.")
    if o.get("dry"):
        msg = "Dryrun only, host not changed. The following installers will be applied: []"
    f_msg = ("Message", "string", msg)
    f_rr = ("Reboot Required", "boolean", reboot)
    f_in = ("VIBs Installed", "string[]", [vib_id(v) for v in installed])
    f_rm = ("VIBs Removed", "string[]", removed)
    f_sk = ("VIBs Skipped", "string[]", [vib_id(v) for v in skipped])
    if st["version"].startswith(("5.", "6.", "7.")):
        fields = [f_msg, f_rr, f_in, f_rm, f_sk]
    else:
        fields = [f_msg, f_in, f_rm, f_sk, f_rr, ("DPU Results", "string[]", [])]
    return ("struct", "InstallationResult", fields, ("simple", "Installation Result"))


def find_pci(st, addr):
    for d in st["pci"]:
        if d["addr"] == addr:
            return d
    return None


def c_passthru_list(st, args):
    parse_opts(args, {})
    items = [[("Device ID", "string", d["addr"]), ("Enabled", "boolean", d["passthru"])]
             for d in st["pci"] if d["capable"]]
    return ("list", "PCIPassthruDevice", items, ("table", [("Device ID", "l"), ("Enabled", "r")]))


def c_passthru_set(st, args):
    spec = {"dev": ("d", "device-id", True, False), "en": ("e", "enable", True, False),
            "apply": ("a", "apply-now", False, False)}
    o = parse_opts(args, spec)
    addr = need(o, "dev", spec)
    enable = parse_bool(need(o, "en", spec), "enable")
    d = find_pci(st, addr)
    if d is None or not d["capable"]:
        raise EsxcliError("Unable to configure the PCI device: Invalid device ID %s." % addr)
    if d["passthru"] == enable:
        raise EsxcliError("Unable to configure the PCI device: Device owner is already "
                          "configured to %s." % ("passthru" if enable else "vmkernel"))
    d["passthru"] = enable
    if o.get("apply"):
        d["passthru_active"] = enable
    return ("none",)


def c_pci_list(st, args):
    parse_opts(args, {})
    items = []
    for d in st["pci"]:
        seg, bus, rest = d["addr"].split(":")
        slot, fn = rest.split(".")
        active = d["passthru_active"]
        module = "pciPassthru" if active else d["module"]
        if d.get("gpu") and not active and vib_active(st):
            module = "nvidia"
        items.append([
            ("Address", "string", d["addr"]),
            ("Segment", "string", "0x" + seg), ("Bus", "string", "0x" + bus),
            ("Slot", "string", "0x" + slot), ("Function", "string", "0x" + fn),
            ("VMkernel Name", "string", "" if active else d["vmkname"]),
            ("Vendor Name", "string", d["vendor"]), ("Device Name", "string", d["device"]),
            ("Configured Owner", "string", "VM Passthru" if d["passthru"] else "VMkernel"),
            ("Current Owner", "string", "VM Passthru" if active else "VMkernel"),
            ("Vendor ID", "string", d["vendor_id"]), ("Device ID", "string", d["device_id"]),
            ("Device Class", "string", d["class"]),
            ("Device Class Name", "string", d["class_name"]),
            ("Module Name", "string", module),
            ("Passthru Capable", "boolean", d["capable"]),
        ])
    return ("list", "PCIDevice", items, ("block", "Address", True))


# nmlx5_core's parameters as NVIDIA's nmlx5 ESXi driver manual (v4.17.15.16)
# names them (a few of them); `ecn` "Enables the ECN feature" (0 by default).  control.json's
# `nmlx5_without: [NAME, ...]` simulates a driver release without them.
MODULE_PARAMS = {
    "nmlx5_core": [("DRSS", "int", "Number of hardware queues for Default Queue (DEFQ) RSS"),
                   ("ecn", "int", "Enables the ECN feature"),
                   ("max_vfs", "array of uint", "Number of PCI VFs to initialize"),
                   ("pfcrx", "int", "Priority based Flow Control policy on RX"),
                   ("pfctx", "int", "Priority based Flow Control policy on TX"),
                   ("trust_state", "uint", "Port policy to calculate the switch priority"),
                   ("supported_num_ports", "int", "Maximum number of supported ports")],
    "nmlx5_rdma": [("dscp_force", "int", "Force DSCP value for RoCE traffic"),
                   ("pcp_force", "int", "Force PCP value for RoCE traffic")],
}


def module_need(o, spec):
    name = need(o, "mod", spec)
    if name not in MODULE_PARAMS:
        raise EsxcliError("Unable to find module %s" % name)
    return name


def module_params(name):
    """The parameters this host's release of the module has."""
    without = set(CONTROL.get("nmlx5_without", [])) if name == "nmlx5_core" else set()
    return [p for p in MODULE_PARAMS[name] if p[0] not in without]


def c_module_list(st, args):
    spec = {"mod": ("m", "module", True, False)}
    o = parse_opts(args, spec)
    name = module_need(o, spec)
    values = {}
    for word in st["modules"].get(name, "").split():
        k, _, v = word.partition("=")
        values[k] = v
    items = [[("Name", "string", p), ("Type", "string", t), ("Value", "string", values.get(p, "")),
              ("Description", "string", desc)] for p, t, desc in module_params(name)]
    return ("list", "ModuleParameter", items,
            ("table", [("Name", "l"), ("Type", "l"), ("Value", "l"), ("Description", "l")]))


def c_module_set(st, args):
    spec = {"mod": ("m", "module", True, False), "params": ("p", "parameter-string", True, False),
            "append": ("a", "append", False, False), "force": ("f", "force", False, False)}
    o = parse_opts(args, spec)
    name = module_need(o, spec)
    params = need(o, "params", spec)
    known = {p for p, _, _ in module_params(name)}
    for word in params.split():
        k = word.partition("=")[0]
        if k not in known and not o.get("force"):
            raise EsxcliError("Unable to set module parameters: unknown parameter '%s' for "
                              "module %s" % (k, name))
    if o.get("append") and st["modules"].get(name):
        params = st["modules"][name] + " " + params
    st["modules"][name] = params
    return ("none",)


def c_firewall_list(st, args):
    o = parse_opts(args, {"rs": ("r", "ruleset-id", True, False)})
    names = sorted(st["firewall"])
    if "rs" in o:
        if o["rs"] not in st["firewall"]:
            raise EsxcliError("Invalid Ruleset Id: %s" % o["rs"])
        names = [o["rs"]]
    items = [[("Name", "string", n), ("Enabled", "boolean", st["firewall"][n])] for n in names]
    return ("list", "Ruleset", items, ("table", [("Name", "l"), ("Enabled", "r")]))


# The adapters' firmware (Mellanox NVCONFIG: SRIOV_EN, NUM_OF_VFS per port):
# the lab's hosts have no MFT, so it is not readable on them; the control
# file's "sriov_firmware": {PCI: {"SRIOV_EN": 0|1, "NUM_OF_VFS": N}} sets a
# port's, every other port has SR-IOV on with 8 VFs.  nmlx5_core creates a
# port's VFs at load (the boot after `max_vfs` was set) only when the
# firmware has SRIOV_EN and NUM_OF_VFS >= that port's max_vfs (NVIDIA's
# ESXi SR-IOV how-to: set both with mlxconfig first).  Whether a real
# driver then makes NUM_OF_VFS VFs instead of none is not known: none here.
def sriov_firmware(st, addr):
    """The firmware the last boot loaded: MFT's record once mlxconfig touched
    the port (state "mft_fw"), else the control file's, else SR-IOV on, 8 VFs."""
    entry = st.get("mft_fw", {}).get(addr)
    if entry is not None:
        return entry["active"]
    fw = (CONTROL.get("sriov_firmware") or {}).get(addr)
    return fw if fw is not None else {"SRIOV_EN": 1, "NUM_OF_VFS": 8}


def running_max_vfs(st, addr):
    """max_vfs=8,8 of the loaded nmlx5_core: one value per port, port n = PCI function n."""
    params = st.get("modules_active", st["modules"]).get("nmlx5_core", "")
    for word in params.split():
        if word.startswith("max_vfs="):
            vals = word[len("max_vfs="):].split(",")
            fn = int(addr.rsplit(".", 1)[1], 16)
            try:
                return int(vals[fn] if fn < len(vals) else vals[-1])
            except ValueError:
                return 0
    return 0


def c_sriovnic_list(st, args):
    parse_opts(args, {})
    items = []
    for d in st["pci"]:
        if d.get("module") != "nmlx5_core" or not d.get("vmkname"):
            continue
        n, fw = running_max_vfs(st, d["addr"]), sriov_firmware(st, d["addr"])
        if n <= 0 or not fw.get("SRIOV_EN") or fw.get("NUM_OF_VFS", 0) < n:
            continue
        items.append([("Name", "string", d["vmkname"]), ("PCI Device", "string", d["addr"]),
                      ("Driver", "string", "nmlx5_core"), ("Link", "string", "Up"),
                      ("Speed", "integer", 100000), ("Duplex", "string", "Full"),
                      ("MAC Address", "string", "0c:42:a1:00:00:%02x" % int(d["addr"][-1])),
                      ("MTU", "integer", 1500), ("Description", "string", d["device"])])
    return ("list", "SriovNic", items,
            ("table", [("Name", "l"), ("PCI Device", "l"), ("Driver", "l"), ("Link", "l"),
                       ("Speed", "r"), ("Duplex", "l"), ("MAC Address", "l"), ("MTU", "r"),
                       ("Description", "l")]))


def c_firewall_set(st, args):
    spec = {"rs": ("r", "ruleset-id", True, False), "en": ("e", "enabled", True, False),
            "all": ("a", "allowed-all", True, False)}
    o = parse_opts(args, spec)
    name = need(o, "rs", spec)
    if name not in st["firewall"]:
        raise EsxcliError("Invalid Ruleset Id: %s" % name)
    if "en" in o:
        st["firewall"][name] = parse_bool(o["en"], "enabled")
    if "all" in o:
        parse_bool(o["all"], "allowed-all")
    return ("none",)


ADV_DESC = {"/Net/PVRDMAVmknic": "Vmknic for PVRDMA",
            "/Net/FollowHardwareMac": "If set to 1, the management interface MAC address will "
                                      "update to the new hardware MAC address"}


def adv_fields(path, value, default=""):
    if isinstance(value, int):
        return [("Path", "string", path), ("Type", "string", "integer"),
                ("Int Value", "integer", value), ("Default Int Value", "integer", 0),
                ("Min Value", "integer", 0), ("Max Value", "integer", 1),
                ("String Value", "string", ""), ("Default String Value", "string", ""),
                ("Valid Characters", "string", ""), ("Description", "string", ADV_DESC.get(path, "User defined option"))]
    return [("Path", "string", path), ("Type", "string", "string"),
            ("Int Value", "integer", 0), ("Default Int Value", "integer", 0),
            ("Min Value", "integer", 0), ("Max Value", "integer", 0),
            ("String Value", "string", value), ("Default String Value", "string", default),
            ("Valid Characters", "string", "**"), ("Description", "string", ADV_DESC.get(path, "User defined option"))]


def c_advanced_list(st, args):
    o = parse_opts(args, {"opt": ("o", "option", True, False),
                          "delta": ("d", "delta", False, False)})
    paths = sorted(st["advanced"])
    if "opt" in o:
        if o["opt"] not in st["advanced"]:
            raise EsxcliError("Unable to find option %s" % o["opt"].lstrip("/").split("/")[-1])
        paths = [o["opt"]]
    defaults = st.get("advanced_defaults", {})
    items = [adv_fields(p, st["advanced"][p], defaults.get(p, "")) for p in paths]
    return ("list", "SettingsAdvancedOption", items, ("block", None, True))


def c_advanced_set(st, args):
    spec = {"opt": ("o", "option", True, False), "str": ("s", "string-value", True, False),
            "int": ("i", "int-value", True, False), "default": ("d", "default", False, False)}
    o = parse_opts(args, spec)
    path = need(o, "opt", spec)
    if path not in st["advanced"]:
        raise EsxcliError("Unable to find option %s" % path.lstrip("/").split("/")[-1])
    cur = st["advanced"][path]
    if o.get("default"):
        st["advanced"][path] = 0 if isinstance(cur, int) else ""
    elif isinstance(cur, int):
        if "int" not in o:
            raise EsxcliError("Error: Missing required parameter -i|--int-value")
        try:
            st["advanced"][path] = int(o["int"])
        except ValueError:
            raise EsxcliError("Error: Invalid integer value '%s'" % o["int"]) from None
    else:
        if "str" not in o:
            raise EsxcliError("Error: Missing required parameter -s|--string-value")
        st["advanced"][path] = o["str"]
    return ("none",)


def c_advanced_add(st, args):
    # ESXi 7+: a user-defined string option, created under /UserVars
    spec = {"opt": ("o", "option", True, False), "type": ("t", "option-type", True, False),
            "str": ("s", "string-value", True, False), "desc": ("d", "description", True, False)}
    o = parse_opts(args, spec)
    name = need(o, "opt", spec)
    if need(o, "type", spec) != "string":
        raise EsxcliError("Error: only string options are simulated")
    path = "/UserVars/" + name
    if path in st["advanced"]:
        raise EsxcliError("Unable to add option %s: it already exists" % name)
    # -s taken as the option's default string value as well as its value
    # until set: REAL-FORMATS has no capture of `add` or of a user-defined
    # option's listing, so the lab assumes the harder case for the lease
    # snippets, a default that may hold an old lease
    st["advanced"][path] = o.get("str", "")
    st.setdefault("advanced_defaults", {})[path] = o.get("str", "")
    return ("none",)


def c_uptime_get(st, args):
    # `esxcli system stats uptime get`: microseconds since boot, printed bare
    # (scalar).  A host that was never rebooted in the lab was up 30 days
    # when the lab made it (a state of an older lab, without a boot time, 30
    # days now).
    parse_opts(args, {})
    boot = st.get("boot_time") or (time.time() - 30 * 86400)
    return ("scalar", "integer", int(max(0.0, time.time() - boot) * 1e6))


def c_mm_get(st, args):
    parse_opts(args, {})
    return ("scalar", "string", "Enabled" if st["maintenance"] else "Disabled")


def c_mm_set(st, args):
    spec = {"en": ("e", "enable", True, False), "timeout": ("t", "timeout", True, False),
            "vsan": ("m", "vsanmode", True, False)}
    o = parse_opts(args, spec)
    enable = parse_bool(need(o, "en", spec), "enable")
    if st["maintenance"] == enable:
        raise EsxcliError("Maintenance mode is already %s." % ("enabled" if enable else "disabled"))
    st["maintenance"] = enable
    return ("none",)


def c_ntp_get(st, args):
    parse_opts(args, {})
    n = st["ntp"]
    return ("struct", "NTPConfig",
            [("Enabled", "boolean", n["enabled"]), ("Loglevel", "string", n["loglevel"]),
             ("Server", "string[]", n["servers"])], ("simple", None))


def c_ntp_set(st, args):
    spec = {"en": ("e", "enabled", True, False), "srv": ("s", "server", True, True),
            "reset": ("r", "reset", False, False), "log": ("l", "loglevel", True, False)}
    o = parse_opts(args, spec)
    n = st["ntp"]
    if o.get("reset"):
        n.update(enabled=False, servers=[], loglevel="warning")
    if "srv" in o:
        n["servers"] = o["srv"]
    if "log" in o:
        n["loglevel"] = o["log"]
    if "en" in o:
        en = parse_bool(o["en"], "enabled")
        if en and not n["servers"]:
            raise EsxcliError("Unable to enable NTP: no NTP servers are configured")
        n["enabled"] = en
    return ("none",)


def c_shutdown_reboot(st, args):
    spec = {"reason": ("r", "reason", True, False), "delay": ("d", "delay", True, False)}
    o = parse_opts(args, spec)
    need(o, "reason", spec)
    if not st["maintenance"]:
        raise EsxcliError("Unable to reboot the host: the host is not in maintenance mode.")
    return ("reboot",)


ESXCLI = {
    ("graphics", "host", "get"): c_graphics_host_get,
    ("graphics", "host", "set"): c_graphics_host_set,
    ("graphics", "device", "list"): c_graphics_device_list,
    ("software", "vib", "list"): c_vib_list,
    ("software", "sources", "vib", "list"): c_sources_vib_list,
    ("software", "vib", "install"): c_vib_install,
    ("software", "vib", "update"): c_vib_install,
    ("hardware", "pci", "pcipassthru", "list"): c_passthru_list,
    ("hardware", "pci", "pcipassthru", "set"): c_passthru_set,
    ("hardware", "pci", "list"): c_pci_list,
    ("system", "module", "parameters", "list"): c_module_list,
    ("system", "module", "parameters", "set"): c_module_set,
    ("network", "firewall", "ruleset", "list"): c_firewall_list,
    ("network", "firewall", "ruleset", "set"): c_firewall_set,
    ("network", "sriovnic", "list"): c_sriovnic_list,
    ("system", "settings", "advanced", "list"): c_advanced_list,
    ("system", "settings", "advanced", "set"): c_advanced_set,
    ("system", "settings", "advanced", "add"): c_advanced_add,
    ("system", "maintenanceMode", "get"): c_mm_get,
    ("system", "stats", "uptime", "get"): c_uptime_get,
    ("system", "maintenanceMode", "set"): c_mm_set,
    ("system", "ntp", "get"): c_ntp_get,
    ("system", "ntp", "set"): c_ntp_set,
    ("system", "shutdown", "reboot"): c_shutdown_reboot,
}


# Namespaces that came with a later release than the host's: (version, words
# prefix).  Sources: VMware's esxcli command references per release
# (developer.broadcom.com/xapis/esxcli-command-reference/<release>/
# namespace/esxcli_hardware.html and esxcli_system.html): 6.7.0 lists
# neither `hardware pci pcipassthru` nor `system ntp`; 7.0.0 lists the
# first; `system ntp` came with 7.0 Update 1 (7.0.1, its release notes).
# An older host answers them as it answers any unknown namespace.
LATER_NAMESPACES = [
    ((7, 0, 0), ("hardware", "pci", "pcipassthru")),
    ((7, 0, 1), ("system", "ntp")),
]


def version_tuple(v):
    parts = []
    for p in v.split(".")[:3]:
        parts.append(int(p) if p.isdigit() else 0)
    return tuple(parts + [0] * (3 - len(parts)))


def known_namespace(version, words):
    have = version_tuple(version)
    return not any(have < since and tuple(words[:len(prefix)]) == prefix
                   for since, prefix in LATER_NAMESPACES)


def esxcli(ctx, argv):
    formatter = None
    i = 1
    while i < len(argv) and argv[i].startswith("--"):
        name, eq, value = argv[i][2:].partition("=")
        if name == "formatter":
            if not eq:
                i += 1
                value = argv[i] if i < len(argv) else ""
            formatter = value
        elif name not in ("debug",):
            ctx.io.err("Error: Invalid option %s\n" % argv[i])
            return 1
        i += 1
    if formatter not in (None, "xml", "keyvalue", "csv"):
        ctx.io.err("Error: Invalid formatter '%s'. Valid formatters are: csv, keyvalue, xml\n"
                   % formatter)
        return 1
    words = []
    j = i
    while j < len(argv) and not argv[j].startswith("-"):
        words.append(argv[j])
        j += 1
    handler = ESXCLI.get(tuple(words))
    if handler is None:
        ctx.io.err("Error: Unknown command or namespace %s\n" % " ".join(words))
        return 1
    global CONTROL
    with simlab.Lock(ctx.host):
        st = load_state(ctx.host)
        CONTROL = ctx.take_control()
        if not known_namespace(st["version"], words):
            ctx.io.err("Error: Unknown command or namespace %s\n" % " ".join(words))
            return 1
        try:
            res = handler(st, argv[j:])
        except EsxcliError as e:
            ctx.io.err(str(e) + "\n")
            return 1
        if res[0] == "reboot":
            apply_reboot(st, ctx.host)
            save_state(ctx.host, st)
            raise Exit()
        # a `list` or `get` reads the state and changes nothing: not written
        # back (most of a simulated exec's CPU went to rewriting it after
        # each command of an observation batch)
        if not handler.__name__.endswith(("_list", "_get")):
            save_state(ctx.host, st)
    ctx.io.out(render(res, formatter))
    return 0


# ------------------------------------------------------------------ other commands

def qline(key, value, level):
    return ("    " * level + key).ljust(42) + ": " + value + "\n"


def nvidia_smi(ctx, argv):
    with simlab.Lock(ctx.host):
        st = load_state(ctx.host)
        if not vib_active(st):
            ctx.io.err("sh: nvidia-smi: not found\n")
            return 127
        gpus = [d for d in st["pci"] if d.get("gpu") and not d["passthru_active"]]
        args = argv[1:]
        if args[:1] in (["-i"], ["--id"]) and len(args) >= 2:
            # -i selects one GPU by PCI bus id (any domain width, any case).
            # ECC is kept per host in this simulator; -i only has to name a
            # GPU the host has.  The not-found text is assumed (no capture).
            want = args[1].lower().split(":", 1)[-1]
            if not any(d["addr"].lower().split(":", 1)[-1] == want for d in gpus):
                ctx.io.err("No devices were found\n")
                return 6
            args = args[2:]
        if args[:1] in (["-e"], ["--ecc-config"]) or (args and args[0].startswith("--ecc-config=")):
            val = args[1] if args[0] == "-e" and len(args) > 1 else args[0].partition("=")[2]
            if val not in ("0", "1", "ENABLED", "DISABLED"):
                ctx.io.err("Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n")
                return 2
            on = val in ("1", "ENABLED")
            st["ecc"]["pending"] = "Enabled" if on else "Disabled"
            save_state(ctx.host, st)
            for d in gpus:
                ctx.io.out("%s ECC support for GPU %s.\n"
                           % ("Enabled" if on else "Disabled", gpu_busid(d)))
            ctx.io.out("All done.\nReboot required.\n")
            return 0
        if args[:1] == ["-q"]:
            out = ["\n", "==============NVSMI LOG==============\n", "\n",
                   "Timestamp".ljust(42) + ": " + time.strftime("%a %b %d %H:%M:%S %Y") + "\n",
                   "Driver Version".ljust(42) + ": 535.154.02\n",
                   "CUDA Version".ljust(42) + ": Not Found\n", "\n",
                   "Attached GPUs".ljust(42) + ": %d\n" % len(gpus)]
            only_ecc = "-d" in args and "ECC" in args
            for d in gpus:
                out.append("GPU %s\n" % gpu_busid(d))
                if not only_ecc:
                    out.append(qline("Product Name", "NVIDIA A100-PCIE-40GB", 1))
                    out.append("    GPU Virtualization Mode\n")
                    out.append(qline("Virtualization Mode", "Host VGPU", 2))
                    out.append(qline("Host VGPU Mode", "SR-IOV", 2))
                out.append("    ECC Mode\n")
                out.append(qline("Current", st["ecc"]["current"], 2))
                out.append(qline("Pending", st["ecc"]["pending"], 2))
                out.append("\n")
            ctx.io.out("".join(out))
            return 0
        ctx.io.err("Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n")
        return 2


def gpu_busid(d):
    return "0000" + d["addr"].upper()


def vmware(ctx, argv):
    with simlab.Lock(ctx.host):
        st = load_state(ctx.host)
    v = st["version"]
    if argv[1:] == ["-v"]:
        ctx.io.out("VMware ESXi %s build-%s\n" % (v, BUILDS.get(v, "1")))
        return 0
    if argv[1:] == ["-l"]:
        major = v.rsplit(".", 1)[0]
        upd = v.rsplit(".", 1)[1]
        ctx.io.out("VMware ESXi %s%s\n" % (major, " GA" if upd == "0" else " Update %s" % upd))
        return 0
    ctx.io.err("vmware: unrecognized option\n")
    return 1


def reboot(ctx, argv):
    with simlab.Lock(ctx.host):
        st = load_state(ctx.host)
        apply_reboot(st, ctx.host)
        save_state(ctx.host, st)
    raise Exit()


def echo(ctx, argv):
    args = argv[1:]
    newline = True
    if args[:1] == ["-n"]:
        newline = False
        args = args[1:]
    ctx.io.out(" ".join(args) + ("\n" if newline else ""))
    return 0


def sleep(ctx, argv):
    try:
        time.sleep(float(argv[1]))
    except (IndexError, ValueError):
        ctx.io.err("sleep: invalid number '%s'\n" % " ".join(argv[1:]))
        return 1
    return 0


def lab_bytes(ctx, argv):
    """gclab-bytes N [stderr]: N bytes of 'x' (lab-only, for transport tests)."""
    try:
        n = int(argv[1])
    except (IndexError, ValueError):
        ctx.io.err("gclab-bytes: usage: gclab-bytes N [stderr]\n")
        return 2
    stream = ctx.io.stderr if argv[2:] == ["stderr"] else ctx.io.stdout
    chunk = "x" * 65536
    while n > 0:
        stream.write(chunk[:min(n, 65536)])
        n -= 65536
    return 0


def lab_stdin(ctx, argv):
    """gclab-stdin: read standard input to its end, then print how many bytes
    it held (lab-only, for the transport's interrupt test: the EOF the
    client sends)."""
    n = 0
    while True:
        chunk = os.read(0, 65536)
        if not chunk:
            break
        n += len(chunk)
    ctx.io.out("eof after %d bytes\n" % n)
    return 0


def hostname(ctx, argv):
    ctx.io.out(ctx.host.name + "\n")
    return 0


def exit_cmd(ctx, argv):
    ctx.exit_status = int(argv[1]) if len(argv) > 1 and argv[1].isdigit() else ctx.last
    raise Exit()


# ------------------------------------------------------------------ Mellanox MFT (stand-in)
#
# For a host whose control file says "mft": true: /opt/mellanox/bin/mst
# status -vv and mlxconfig -d DEV q|set, in the layouts of NVIDIA's MFT docs
# (the "VMware ESXi" mst page, the "SR-IOV Configuration" page; the column
# widths are not verified, and the driver reads them tolerantly), and the
# driver's fixed observation snippet `sh -c GC_ESXI_MFT_SCRIPT mft TOKEN`
# (include/gc/esxi.h), which this shell cannot interpret (if, for, $(), |):
# it runs the snippet's Python equivalent, for that exact text only.  A
# port's firmware starts as the control file's sriov_firmware (or SR-IOV
# on, 8 VFs); `set` changes the next boot's values (what `q` shows) and a
# reboot loads them (what `network sriovnic list` goes by).

MFT_BIN = "/opt/mellanox/bin"
MFT_SCRIPT = (
    'M=/opt/mellanox/bin; if [ ! -x $M/mlxconfig ]; then echo @@mft:$1:none; exit 0; fi; '
    's=$($M/mst status -vv) || exit 1; echo "$s"; '
    'for d in $(echo "$s" | grep -owE "mt[0-9]+_pciconf[0-9]+(\\.[0-9]+)?"); do '
    'echo @@mft:$1:dev:$d; $M/mlxconfig -d $d q SRIOV_EN NUM_OF_VFS || echo @@mft:$1:failed; done')


def mft_devices(st):
    """[(mst name, device, adapter type)] of the Mellanox PCI functions, by address."""
    out, adapters = [], []
    for d in sorted(st["pci"], key=lambda d: d["addr"]):
        if d.get("vendor_id") != "0x15b3":
            continue
        slot = d["addr"][:-2]
        if slot not in adapters:
            adapters.append(slot)
        fn = int(d["addr"].rsplit(".", 1)[1], 16)
        name = "mt%d_pciconf%d%s" % (int(d["device_id"], 16), adapters.index(slot),
                                     "" if fn == 0 else ".%d" % fn)
        m = re.search(r"\[(.*)\]", d["device"])
        kind = (m.group(1) if m else "ConnectX").replace("-", "").replace(" ", "")
        out.append((name, d, kind))
    return out


def mft_fw(st, addr):
    entry = st.setdefault("mft_fw", {}).get(addr)
    if entry is None:
        fw = (CONTROL.get("sriov_firmware") or {}).get(addr) or {"SRIOV_EN": 1, "NUM_OF_VFS": 8}
        entry = st["mft_fw"][addr] = {"next": dict(fw), "active": dict(fw)}
    return entry


def mst_status(st):
    text = "PCI devices:\n------------\n"
    text += "%-24s%-30s%-10s%-16s%-26s%s\n" % ("DEVICE_TYPE", "MST", "PCI", "RDMA", "NET", "NUMA")
    for name, d, kind in mft_devices(st):
        text += ("%-24s%-30s%-10s%-16s%-26s\n" % ("%s(rev:0)" % kind, name, d["addr"][5:], "",
                                                 "net-" + d["vmkname"] if d["vmkname"] else "")).rstrip() + "\n"
    return text


def mlxconfig_q(st, name, keys):
    dev = [(n, d, k) for n, d, k in mft_devices(st) if n == name]
    if not dev:
        return None   # the error wording of a real mlxconfig is not known
    fw = mft_fw(st, dev[0][1]["addr"])["next"]
    text = ("\nDevice #1:\n----------\n\nDevice type:    %s\nPCI device:     %s\n\n"
            "Configurations:                              Next Boot\n" % (dev[0][2], name))
    for key in keys or ["SRIOV_EN", "NUM_OF_VFS"]:
        if key == "SRIOV_EN":
            value = "True(1)" if fw["SRIOV_EN"] else "False(0)"
        elif key == "NUM_OF_VFS":
            value = str(fw["NUM_OF_VFS"])
        else:
            continue
        text += "         %-36s%s\n" % (key, value)
    return text


def mlxconfig_set(st, name, pairs):
    dev = [d for n, d, k in mft_devices(st) if n == name]
    if not dev:
        return None
    fw = mft_fw(st, dev[0]["addr"])["next"]
    for pair in pairs:
        key, _, value = pair.partition("=")
        if key == "SRIOV_EN" and value in ("0", "1", "True", "False"):
            fw[key] = 1 if value in ("1", "True") else 0
        elif key == "NUM_OF_VFS" and value.isdigit():
            fw[key] = int(value)
        else:
            return "-E- The Device doesn't support %s parameter\n" % key  # wording assumed
    return ""


def mft_installed(ctx):
    global CONTROL
    CONTROL = simlab.read_control(ctx.host)
    return bool(CONTROL.get("mft"))


def mst(ctx, argv):
    with simlab.Lock(ctx.host):
        if not mft_installed(ctx):
            ctx.io.err("sh: %s: not found\n" % argv[0])
            return 127
        if argv[1:2] != ["status"]:
            ctx.io.err("-E- Unsupported by the simulator: %s\n" % " ".join(argv[1:]))
            return 1
        ctx.io.out(mst_status(load_state(ctx.host)))
    return 0


def mlxconfig(ctx, argv):
    args, yes = argv[1:], False
    if args[:1] == ["-y"]:
        yes, args = True, args[1:]
    if len(args) < 3 or args[0] != "-d" or args[2] not in ("q", "query", "set"):
        ctx.io.err("-E- Unsupported by the simulator: %s\n" % " ".join(argv[1:]))
        return 1
    with simlab.Lock(ctx.host):
        if not mft_installed(ctx):
            ctx.io.err("sh: %s: not found\n" % argv[0])
            return 127
        st = load_state(ctx.host)
        if args[2] == "set":
            if not yes:
                ctx.io.out("Apply new Configuration? (y/n) [n] : \nAborted by user\n")
                return 1
            err = mlxconfig_set(st, args[1], args[3:])
            text = None if err is None else ("Applying... Done!\n-I- Please reboot machine to "
                                             "load new configurations.\n" if not err else err)
            if err:
                ctx.io.err(err)
                return 1
        else:
            text = mlxconfig_q(st, args[1], args[3:])
        if text is None:
            ctx.io.err("-E- Failed to open device: %s\n" % args[1])  # wording assumed
            return 1
        save_state(ctx.host, st)
    ctx.io.out(text)
    return 0


# ------------------------------------------------------------------ the cluster lease's snippets
#
# The driver's fixed `sh -c` snippets for the lease (include/gc/esxi.h:
# GC_ESXI_LEASE_READ_SCRIPT in the apply's observation batch, _TAKE_SCRIPT
# there when it expects changes, _CAS_SCRIPT, a compare-and-set, for a
# write and at the head of a host's first changing exec,
# GC_ESXI_LEASE_CLEAR_SCRIPT, a compare-and-clear, at the end of the run),
# run as their Python equivalents, for that exact text only.  Their esxcli
# commands go through run_simple, so the lab's injected faults reach them.

LEASE_OPTION = "/UserVars/GpuclusterctlLease"
LEASE_READ_SCRIPT = (
    'r=$(esxcli --formatter=xml system settings advanced list -o ' + LEASE_OPTION +
    ' 2>&1) && { echo "$r"; exit 0; }; case "$r" in *"Unable to find option"*) '
    'echo @@lease:$1:none;; *) echo "$r" >&2; exit 1;; esac')
LEASE_TAKE_SCRIPT = (
    'r=$(esxcli --formatter=xml system settings advanced list -o ' + LEASE_OPTION +
    ' 2>&1) || { case "$r" in *"Unable to find option"*) echo @@lease:$1:none; '
    'esxcli system settings advanced add -o GpuclusterctlLease -t string -s none '
    "-d 'gpuclusterctl cluster lease' && esxcli system settings advanced set -o "
    + LEASE_OPTION + ' -s "$3" && echo @@lease:$1:took; exit 0;; esac; echo "$r" >&2; '
    'exit 1; }; echo "$r"; v=${r#*\\"StringValue\\">}; v=${v%%</field>*}; '
    'case "$v" in *"lock=$2;"*) ;; *"lock="*) exit 0;; esac; '
    'esxcli system settings advanced set -o ' + LEASE_OPTION + ' -s "$3" && '
    'echo @@lease:$1:took; exit 0')
LEASE_CAS_SCRIPT = (
    'r=$(esxcli --formatter=xml system settings advanced list -o ' + LEASE_OPTION +
    ' 2>&1) || { case "$r" in *"Unable to find option"*) esxcli system settings advanced '
    "add -o GpuclusterctlLease -t string -s none -d 'gpuclusterctl cluster lease' && esxcli "
    'system settings advanced set -o ' + LEASE_OPTION + ' -s "$3"; exit;; esac; '
    'echo "$r" >&2; exit 1; }; v=${r#*\\"StringValue\\">}; v=${v%%</field>*}; '
    'case "$v" in *"lock=$2;"*) ;; *"lock="*) v=${v#*<string>}; echo '
    '"@@lease:$1:held:${v%%</string>*}" >&2; exit 1;; esac; esxcli system settings advanced '
    'set -o ' + LEASE_OPTION + ' -s "$3"')
LEASE_CLEAR_SCRIPT = (
    'r=$(esxcli --formatter=xml system settings advanced list -o ' + LEASE_OPTION + ' 2>&1) || { '
    'case "$r" in *"Unable to find option"*) echo @@lease:none; exit 0;; esac; '
    'echo "$r" >&2; exit 1; }; v=${r#*\\"StringValue\\">}; v=${v%%</field>*}; '
    'case "$v" in *"lock=$1;"*) esxcli system settings advanced '
    'set -o ' + LEASE_OPTION + ' -s none && echo @@lease:cleared;; *) echo @@lease:kept;; esac')


class Capture:
    """An Out that keeps what a command printed, as $(cmd 2>&1) does."""
    def __init__(self):
        import io
        self.stdout = self.stderr = io.StringIO()

    def out(self, text):
        self.stdout.write(text)

    def err(self, text):
        self.stderr.write(text)

    def text(self):
        return self.stdout.getvalue().rstrip("\n")


def captured(ctx, argv):
    """(status, output) of one simple command, stdout and stderr together."""
    sub = Ctx(ctx.host, Capture())
    rc = run_simple(sub, argv)
    return rc, sub.io.text()


def string_value(listing):
    """The option's value in `advanced list --formatter=xml`, as the
    snippets cut it out: after `"StringValue">`, up to the next `</field>`
    (the whole text when the field is not there, as ${r#...} leaves it)."""
    v = listing.split('"StringValue">', 1)[-1]
    return v.split("</field>", 1)[0]


def lease_snippet(ctx, script, arg):
    listing = ["esxcli", "system", "settings", "advanced", "list", "-o", LEASE_OPTION]
    if script == LEASE_READ_SCRIPT:
        rc, r = captured(ctx, listing[:1] + ["--formatter=xml"] + listing[1:])
        if rc == 0:
            ctx.io.out(r + "\n")
            return 0
        if "Unable to find option" in r:
            ctx.io.out("@@lease:%s:none\n" % arg)
            return 0
        ctx.io.err(r + "\n")
        return 1
    rc, r = captured(ctx, listing[:1] + ["--formatter=xml"] + listing[1:])
    if rc != 0:
        if "Unable to find option" in r:
            ctx.io.out("@@lease:none\n")
            return 0
        ctx.io.err(r + "\n")
        return 1
    if "lock=%s;" % arg not in string_value(r):
        ctx.io.out("@@lease:kept\n")
        return 0
    rc = run_simple(ctx, ["esxcli", "system", "settings", "advanced", "set", "-o", LEASE_OPTION,
                          "-s", "none"])
    if rc == 0:
        ctx.io.out("@@lease:cleared\n")
    return rc


LEASE_LISTING = ["esxcli", "--formatter=xml", "system", "settings", "advanced", "list", "-o",
                 LEASE_OPTION]
LEASE_ADD = ["esxcli", "system", "settings", "advanced", "add", "-o", "GpuclusterctlLease", "-t",
             "string", "-s", "none", "-d", "gpuclusterctl cluster lease"]


def lease_listing(ctx):
    """(status, words) of the option's listing; status None when it is
    missing (never leased), 1 after printing any other failure's words."""
    rc, r = captured(ctx, LEASE_LISTING)
    if rc == 0:
        return 0, r
    if "Unable to find option" in r:
        return None, r
    ctx.io.err(r + "\n")
    return 1, r


def lease_set(ctx, value):
    return run_simple(ctx, ["esxcli", "system", "settings", "advanced", "set", "-o", LEASE_OPTION,
                            "-s", value])


def others(listing, lock):
    """The value holds another apply's lease (its own `lock=`, not ours)."""
    v = string_value(listing)
    return "lock=%s;" % lock not in v and "lock=" in v


def lease_take(ctx, token, lock, value):
    """LEASE_TAKE_SCRIPT: the read, then ours written where the host holds
    no lease or one of ours (the listing's own words decide, as the snippet's
    `case` does)."""
    rc, r = lease_listing(ctx)
    if rc == 1:
        return 1
    if rc is None:
        ctx.io.out("@@lease:%s:none\n" % token)
        if run_simple(ctx, LEASE_ADD) == 0 and lease_set(ctx, value) == 0:
            ctx.io.out("@@lease:%s:took\n" % token)
        return 0
    ctx.io.out(r + "\n")
    if not others(r, lock) and lease_set(ctx, value) == 0:
        ctx.io.out("@@lease:%s:took\n" % token)
    return 0


def lease_cas(ctx, token, lock, value):
    """LEASE_CAS_SCRIPT: LEASE_TAKE_SCRIPT's compare-and-set, silent, that
    fails naming the value when another apply's lease is there."""
    rc, r = lease_listing(ctx)
    if rc == 1:
        return 1
    if rc is None:
        rc = run_simple(ctx, LEASE_ADD)
        return rc if rc != 0 else lease_set(ctx, value)
    if others(r, lock):
        v = string_value(r).split("<string>", 1)[-1]
        ctx.io.err("@@lease:%s:held:%s\n" % (token, v.split("</string>", 1)[0]))
        return 1
    return lease_set(ctx, value)


# The reboot poll's guard (include/gc/esxi.h GC_ESXI_UPTIME_GUARD_SCRIPT),
# run as `sh -c SCRIPT up BOUND`: the uptime printed, exit 0 only when it is
# below BOUND, so that the read-back after it runs only on a host that
# rebooted (src/drivers/esxi/reboot.c poll_once).
UPTIME = "esxcli system stats uptime get"
UPTIME_GUARD_SCRIPT = 'u=$(' + UPTIME + ') || exit 2; echo "$u"; [ "$u" -lt "$1" ]'


def uptime_guard(ctx, bound):
    rc, text = captured(ctx, UPTIME.split())
    if rc != 0:  # its words (captured with stdout here) go to stderr
        ctx.io.err(text + "\n" if text else "")
        return 2
    up = text.strip()
    ctx.io.out(up + "\n")
    if not re.fullmatch(r"-?[0-9]+", up) or not re.fullmatch(r"-?[0-9]+", bound):
        ctx.io.err("sh: bad number\n")
        return 2
    return 0 if int(up) < int(bound) else 1


def sh(ctx, argv):
    """Only `sh -c SNIPPET NAME ARG...` for the driver's fixed snippets (MFT,
    the lease's, the reboot poll's guard), each run as its Python
    equivalent."""
    if len(argv) == 5 and argv[1] == "-c" and argv[2] == UPTIME_GUARD_SCRIPT:
        return uptime_guard(ctx, argv[4])
    if len(argv) == 5 and argv[1] == "-c" and argv[2] in (LEASE_READ_SCRIPT, LEASE_CLEAR_SCRIPT):
        return lease_snippet(ctx, argv[2], argv[4])
    if len(argv) == 7 and argv[1] == "-c" and argv[2] == LEASE_TAKE_SCRIPT:
        return lease_take(ctx, argv[4], argv[5], argv[6])
    if len(argv) == 7 and argv[1] == "-c" and argv[2] == LEASE_CAS_SCRIPT:
        return lease_cas(ctx, argv[4], argv[5], argv[6])
    if len(argv) != 5 or argv[1] != "-c" or argv[2] != MFT_SCRIPT:
        ctx.io.err("sh: the simulator runs only gpuclusterctl's fixed snippets under sh -c\n")
        return 2
    token = argv[4]
    with simlab.Lock(ctx.host):
        if not mft_installed(ctx):
            ctx.io.out("@@mft:%s:none\n" % token)
            return 0
        st = load_state(ctx.host)
        known = len(st.get("mft_fw", {}))
        text = mst_status(st)
        for name, _, _ in mft_devices(st):
            text += "@@mft:%s:dev:%s\n" % (token, name) + mlxconfig_q(st, name, ["SRIOV_EN", "NUM_OF_VFS"])
        # a query writes the state only when it met a device for the first
        # time (mft_fw: its firmware settings, from the control file's
        # sriov_firmware); an observation changes nothing on the host
        if len(st.get("mft_fw", {})) != known:
            save_state(ctx.host, st)
    ctx.io.out(text)
    return 0


COMMANDS = {
    "esxcli": esxcli,
    "sh": sh, MFT_BIN + "/mst": mst, MFT_BIN + "/mlxconfig": mlxconfig, "nvidia-smi": nvidia_smi, "vmware": vmware, "reboot": reboot,
    "echo": echo, "sleep": sleep, "hostname": hostname, "exit": exit_cmd,
    "gclab-bytes": lab_bytes, "gclab-stdin": lab_stdin,
    "true": lambda ctx, argv: 0, "false": lambda ctx, argv: 1,
}


# ------------------------------------------------------------------ the shell

class ShellSyntax(Exception):
    pass


# A line with no double quote or comment outside single quotes, and no
# backslash outside them but one escaping the character after it (not a
# newline), splits into exactly the tokens shlex gives it (below) by
# regular expressions; shlex reads a character at a time, and that was a
# third of the CPU of an exec of gpuclusterctl's observation batch, then
# half of it once the batch carried the lease snippet: its sh -c script is
# single-quoted with each quote inside it written '\'' (shlex.quote's
# form, and the tool's).  Anything else (an unclosed quote, a backslash at
# the end or before a newline) goes through shlex itself.  test_esxi_sim's
# TokensTest holds the two to the same tokens.
PLAIN_LINE = re.compile(r"(?:[^'\\\"#]|'[^']*'|\\[^\n])*")
PLAIN_TOKEN = re.compile(r"((?:[^ \t\r;&|\n'\\]|'[^']*'|\\[^\n])+)|([;&|\n]+)|[ \t\r]+")
UNQUOTE = re.compile(r"'([^']*)'|\\([^\n])")


def unquote(m):
    return m.group(1) if m.group(1) is not None else m.group(2)


def tokens(line):
    """The lexer's tokens: words (quotes and escapes removed) and runs of
    ;&| and newline, as shlex.shlex(posix, punctuation_chars,
    whitespace_split)."""
    if PLAIN_LINE.fullmatch(line):
        out = []
        for m in PLAIN_TOKEN.finditer(line):
            word, punct = m.group(1), m.group(2)
            if word is not None:
                out.append(UNQUOTE.sub(unquote, word) if "'" in word or "\\" in word else word)
            elif punct is not None:
                out.append(punct)
        return out
    return shlex_tokens(line)


def shlex_tokens(line):
    lex = shlex.shlex(line, posix=True, punctuation_chars=";&|\n")
    lex.whitespace = " \t\r"
    lex.whitespace_split = True
    return list(lex)


def parse(line):
    """Split into [(op, argv)] where op joins it to the previous: ';', '&&', '||'."""
    seq, words, op = [], [], ";"
    try:
        tokens_ = tokens(line)
    except ValueError as e:
        raise ShellSyntax("sh: syntax error: %s" % e) from None
    for tok in tokens_:
        if tok and set(tok) <= set(";&|\n"):
            stripped = tok.replace("\n", "")
            if stripped in ("", ";"):
                newop = ";"
            elif stripped in ("&&", "||"):
                newop = stripped
            else:
                raise ShellSyntax("sh: syntax error: unsupported operator '%s'" % stripped)
            if words:
                seq.append((op, words))
                words = []
                op = newop
            elif newop != ";":
                raise ShellSyntax("sh: syntax error: unexpected \"%s\"" % newop)
            continue
        if tok[:1] in "<>" or (tok[:1].isdigit() and tok.lstrip("0123456789")[:1] in ("<", ">")):
            raise ShellSyntax("sh: syntax error: redirections are not supported by the simulator")
        words.append(tok)
    if words:
        seq.append((op, words))
    elif op in ("&&", "||"):
        raise ShellSyntax("sh: syntax error: end of input after \"%s\"" % op)
    return seq


class Ctx:
    def __init__(self, host, io):
        self.host = host
        self.io = io
        self.last = 0
        self.exit_status = None
        self.control = None  # run_simple's read of control.json, for this command only

    def take_control(self):
        """The control file for the running command: run_simple's read of
        it when no sleep came between, else read now."""
        control, self.control = self.control, None
        return control if control is not None else simlab.read_control(self.host)


def run_simple(ctx, argv):
    ctx.control = None
    with simlab.Lock(ctx.host):
        control = simlab.read_control(ctx.host)
        fault = simlab.take_fault(ctx.host, " ".join(argv), control)
    if fault and fault[0] == "drop":
        simlab.drop_session()
    if fault and fault[0] == "kill":
        ctx.io.stdout.flush()
        ctx.io.stderr.flush()
        os.kill(os.getpid(), fault[1])
    delay = simlab.latency_ms(ctx.host, control) + simlab.slow_ms(control, " ".join(argv))
    if delay > 0:
        time.sleep(delay / 1000.0)
    else:
        # the command reads the control file as it was read above, not
        # again microseconds later (one read a command where there were
        # three: the bulk of an observation batch's file reads); after a
        # sleep it reads it afresh, so a test may change it meanwhile
        ctx.control = control
    if fault and fault[0] == "fail":
        text = fault[1] if fault[1].endswith("\n") else fault[1] + "\n"
        (ctx.io.out if fault[3] == "stdout" else ctx.io.err)(text)
        return fault[2]
    fn = COMMANDS.get(argv[0])
    if fn is None:
        ctx.io.err("sh: %s: not found\n" % argv[0])
        return 127
    return fn(ctx, argv)


# gpuclusterctl's batch of changes (src/drivers/esxi/batch.c): an `&&`
# chain of simple commands, each after an `echo @@gc:<token>:c<i>` marker
BATCH = re.compile(r"^echo @@gc:[A-Za-z0-9]+:c0 && ")


def split_chain(line):
    """The text of each simple command of an `&&` chain, quotes kept (the
    parts parse() reads, in the same order)."""
    parts, cur, quote, i = [], [], None, 0
    while i < len(line):
        ch = line[i]
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
            cur.append(ch)
        elif ch == "\\" and i + 1 < len(line):
            cur.extend(line[i:i + 2])
            i += 1
        elif line.startswith(" && ", i):
            parts.append("".join(cur))
            cur = []
            i += 4
            continue
        else:
            cur.append(ch)
        i += 1
    parts.append("".join(cur))
    return parts


EXIT_MM = "esxcli system maintenanceMode set -e false"
# ... and, in a host's last step, the lease's compare-and-clear once the
# exit worked (include/gc/esxi.h GC_ESXI_OBS_LEASE_CLEAR)
EXIT_SECTION = re.compile(r"echo @@gc:([A-Za-z0-9]+):\d+; " + re.escape(EXIT_MM) +
                          r"( && echo @@gc:\1:\d+ && sh -c " + re.escape(shlex.quote(LEASE_CLEAR_SCRIPT)) +
                          r" lease [0-9a-f]{16})? \|\| echo @@gc:\1:failed; ")


def readback_exit(command):
    """The read-back after a reboot that leaves maintenance mode in the same
    exec (the ESXi driver's verify): its reads go to commands.log as one
    line, at once, and the exit as its own command when it runs.  None for
    any other exec."""
    m = EXIT_SECTION.search(command)
    if m is None:
        return None
    simlab.log_command(CURRENT_HOST[0], command[:m.start()] + command[m.end():])
    return ["echo @@gc:" if " ".join(argv) != EXIT_MM else EXIT_MM for _, argv in parse(command)]


CURRENT_HOST = [None]
# the reboot poll's guard heading the read-back (esxi.h gc_esxi_script_guarded)
GUARDED = re.compile(r"echo @@gc:[A-Za-z0-9]+:up; sh -c " + re.escape(shlex.quote(UPTIME_GUARD_SCRIPT)) +
                     r" up -?[0-9]+ \|\| exit 0; ")


def run_line(ctx, line, log_each=None):
    """Run one line; log_each: the text of each simple command, logged as it
    runs (a batch's commands.log shows what ran, not what was sent)."""
    try:
        seq = parse(line)
    except ShellSyntax as e:
        ctx.io.err(str(e) + "\n")
        ctx.last = 2
        return 2
    if log_each is not None and len(log_each) != len(seq):
        log_each = None  # not a plain chain after all: logged whole, below
        simlab.log_command(ctx.host, line)
    for i, (op, argv) in enumerate(seq):
        if op == "&&" and ctx.last != 0:
            continue
        if op == "||" and ctx.last == 0:
            continue
        if log_each is not None and not log_each[i].startswith("echo @@gc:"):
            simlab.log_command(ctx.host, log_each[i])
        ctx.last = run_simple(ctx, argv)
        ctx.io.stdout.flush()
        ctx.io.stderr.flush()
    return ctx.last


def refuse_if_down(host):
    st = simlab.read_json(host.path("state.json"), None)
    if st and st.get("down_until", 0) > time.time():
        simlab.log_command(host, os.environ.get("SSH_ORIGINAL_COMMAND", "(shell)"),
                           leaf="refused.log")
        simlab.drop_session()


def session(host):
    """Entry point from tests/sim/dispatch; returns the exit status."""
    refuse_if_down(host)
    CURRENT_HOST[0] = host
    io = Out()
    ctx = Ctx(host, io)
    command = os.environ.get("SSH_ORIGINAL_COMMAND")
    if command is not None:
        # execs.log: every round trip, as sent; commands.log: what the host
        # ran, a batch of changes command by command as each runs (one cut
        # short shows only what ran)
        simlab.log_command(host, command, leaf="execs.log")
        guard = GUARDED.match(command)
        if guard is None:
            each = split_chain(command) if BATCH.match(command) else readback_exit(command)
            if each is None:
                simlab.log_command(host, command)
        rtt = simlab.rtt_ms(host)
        if rtt > 0:
            time.sleep(rtt / 1000.0)
        try:
            if guard is not None:
                # a reboot poll carrying the read-back: the guard's uptime
                # read, then the read-back only when the guard let it run
                simlab.log_command(host, UPTIME)
                run_line(ctx, command[:guard.end()])
                command = command[guard.end():]
                each = readback_exit(command)
                if each is None:
                    simlab.log_command(host, command)
            return run_line(ctx, command, each)
        except Exit:
            if ctx.exit_status is not None:
                return ctx.exit_status
            simlab.drop_session()
    # Interactive shell (a PTY): prompt, one line at a time.
    prompt = "[root@%s:~] " % host.name
    while True:
        io.out(prompt)
        io.stdout.flush()
        line = sys.stdin.readline()
        if not line:
            return ctx.last
        line = line.rstrip("\r\n")
        if not line.strip():
            continue
        simlab.log_command(host, line)
        try:
            run_line(ctx, line)
        except Exit:
            if ctx.exit_status is not None:
                return ctx.exit_status
            simlab.drop_session()
