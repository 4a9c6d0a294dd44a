#!/usr/bin/python3 -IS
"""onyx_sim - a simulated NVIDIA/Mellanox Onyx switch CLI (see docs/onyx.md).

Runs as the login shell of a lab switch (tests/sim/dispatch execs it with
GC_SIM_HOST, GC_SIM_HOST_DIR, GC_LAB_DIR in the environment) or standalone
on stdin/stdout:  python3 tests/sim/onyx_sim.py --state DIR [--hostname H]

It follows shared/REAL-FORMATS.md section B: the "Mellanox Switch" banner,
prompts `<host> [standalone: master] > `, ` # `, ` (config) # ` and
sub-modes (`(config interface ethernet 1/1) # `, `(config pool roce) # `),
`enable` (with a `password: ` prompt when the switch has an enable
password), `configure terminal`, the B.4 RoCE recipe, the B.5 one-shot
`roce` (only on releases >= 3.8.2000), the show commands the driver uses
(with `| json-print` where B.6 gives a shape, and `| include REGEX`), and
`%` errors: `% Unrecognized command "xyz".` + `Type "?" for help.`,
`% Incomplete command`.  Values outside the grammar (a traffic class 9, a
trust mode L4) are reported as unrecognized tokens; a port the switch does
not have as `% Interface 1/33 does not exist` (invented wording).

State (the host directory): switch.json (facts: release, model, ports,
enable_password, mlag_domain, banner; optional), running.json (the running
config, written after each change), startup.json (what `configuration
write` saved; `reload` restores it and drops the session), commands.log
(every line received, in order, in simlab's format; an enable secret is
logged as ********), control.json (faults, simlab's names: latency_ms,
drop_after N, fail_once {"match": prefix, "message": "% ..."}).
"""

import json
import os
import sys
import time

SIM_DIR = os.environ.get("GC_SIM_DIR") or os.path.dirname(os.path.abspath(__file__))
if SIM_DIR not in sys.path:
    sys.path.insert(0, SIM_DIR)

import simlab  # noqa: E402

ONESHOT_MIN = (3, 8, 2000)
POOL_TYPES = ("lossless", "lossy", "lossy-mc")
TRUST = ("L2", "L3", "both")
ROCE_MODES = ("lossless", "lossy", "semi-lossless")


class Drop(Exception):
    """End the session (exit, reload, injected drop)."""

    def __init__(self, injected=False):
        Exception.__init__(self)
        self.injected = injected


class CliError(Exception):
    def __init__(self, text):
        Exception.__init__(self, text)
        self.text = text


def unrecognized(tok):
    return CliError('%% Unrecognized command "%s".\nType "?" for help.' % tok)


INCOMPLETE = CliError("% Incomplete command")


def version_tuple(s):
    out = []
    for part in s.split("."):
        digits = "".join(c for c in part if c.isdigit())
        out.append(int(digits or 0))
    return tuple(out)


# ------------------------------------------------------------------ ports

def parse_port(s):
    parts = s.split("/")
    if len(parts) not in (2, 3) or not all(p.isdigit() and 0 < len(p) <= 3 for p in parts):
        return None
    return tuple(int(p) for p in parts)


def expand_ports(text):
    """'1/1-1/4,1/9' -> [(1,1),(1,2),...]; None when malformed."""
    out = []
    for item in text.split(","):
        lo, _, hi = item.partition("-")
        a = parse_port(lo)
        b = parse_port(hi) if hi else a
        if a is None or b is None or len(a) != len(b) or a[:-1] != b[:-1] or a > b:
            return None
        out.extend(a[:-1] + (n,) for n in range(a[-1], b[-1] + 1))
    return sorted(set(out))


def port_name(p):
    return "/".join(str(x) for x in p)


def compress(ports):
    """Sorted ports -> ['1/1-1/4', '1/9'] (contiguous runs, as running-config shows)."""
    runs = []
    for p in ports:
        if runs and runs[-1][1][:-1] == p[:-1] and runs[-1][1][-1] + 1 == p[-1]:
            runs[-1][1] = p
        else:
            runs.append([p, p])
    return [port_name(a) if a == b else "%s-%s" % (port_name(a), port_name(b)) for a, b in runs]


# ------------------------------------------------------------------ config model

def default_config(hostname):
    return {"hostname": hostname,
            "pool": {"type": None, "percent": None, "map": []},
            "pfc": {"enabled": False, "priorities": []},
            "lldp": False, "roce": None, "ports": {}}


def port_cfg(cfg, name):
    return cfg["ports"].setdefault(name, {})


def prune(cfg):
    for name in list(cfg["ports"]):
        pc = cfg["ports"][name]
        for key in list(pc):
            if pc[key] in (None, {}, []):
                del pc[key]
        if not pc:
            del cfg["ports"][name]


def port_lines(pc):
    """(order key, suffix) of every non-default setting of one port."""
    out = []
    if pc.get("trust"):
        out.append(((0, 0), "qos trust %s" % pc["trust"]))
    for tc, cc in sorted(pc.get("cc", {}).items()):
        mode, kind, lo, hi = cc
        out.append(((1, int(tc)), "traffic-class %s congestion-control %s minimum-%s %s "
                    "maximum-%s %s" % (tc, mode, kind, lo, kind, hi)))
    for tc, ets in sorted(pc.get("ets", {}).items()):
        out.append(((2, int(tc)), "traffic-class %s dcb ets %s" % (tc, ets)))
    if pc.get("pfc_mode"):
        out.append(((3, 0), "dcb priority-flow-control mode %s" % pc["pfc_mode"]))
    return out


def grouped_port_lines(cfg, categories):
    groups = {}
    for name, pc in cfg["ports"].items():
        for key, suffix in port_lines(pc):
            if key[0] in categories:
                groups.setdefault((key, suffix), []).append(parse_port(name))
    lines = []
    for (key, suffix), ports in groups.items():
        ports.sort()
        for rng in compress(ports):
            first = parse_port(rng.split("-")[0])
            lines.append(((key, first, suffix), "interface ethernet %s %s" % (rng, suffix)))
    return [text for _k, text in sorted(lines)]


def render_running(cfg, facts):
    out = ['##', '## Running database "initial"',
           '## Generated at %s' % time.strftime("%Y/%m/%d %H:%M:%S +0000", time.gmtime()),
           '## Hostname: %s' % cfg["hostname"],
           '## Product release: %s' % facts["release"], '##', '']

    def section(title, lines):
        out.extend(['##', '## %s' % title, '##'])
        out.extend(lines)
        out.append('')

    section("Running-config temporary prefix mode setting", ["no cli default prefix-modes enable"])
    pool = cfg["pool"]
    lines = []
    if pool["type"]:
        lines.append("   traffic pool roce type %s" % pool["type"])
    if pool["percent"]:
        lines.append("   traffic pool roce memory percent %s" % pool["percent"])
    for p in sorted(pool["map"]):
        lines.append("   traffic pool roce map switch-priority %d" % p)
    if lines:
        section("Interface Ethernet buffer configuration", lines)
    if cfg.get("roce"):
        section("RoCE configuration", ["   roce %s" % cfg["roce"]])
    lines = ["   " + x for x in grouped_port_lines(cfg, (0, 1, 2))]
    if lines:
        section("QoS switch configuration", lines)
    lines = []
    if cfg["pfc"]["enabled"]:
        lines.append("   dcb priority-flow-control enable force")
    for p in sorted(cfg["pfc"]["priorities"]):
        lines.append("   dcb priority-flow-control priority %d enable" % p)
    lines += ["   " + x for x in grouped_port_lines(cfg, (3,))]
    if lines:
        section("DCBX PFC configuration", lines)
    if cfg["lldp"]:
        section("LLDP configuration", ["   lldp"])
    section("Other IP configuration", ["   hostname %s" % cfg["hostname"]])
    section("Persistent prefix mode setting", ["cli default prefix-modes enable"])
    return "\n".join(out)


# ------------------------------------------------------------------ the switch

class Switch:
    def __init__(self, host, standalone):
        self.host = host
        self.standalone = standalone
        facts = simlab.read_json(host.path("switch.json"), {})
        self.facts = {
            "product": facts.get("product", host.attrs.get("product", "Onyx")),
            "release": facts.get("release", host.attrs.get("release",
                                                           host.attrs.get("version", "3.9.0300"))),
            "model": facts.get("model", host.attrs.get("model", "SN2700")),
            "ports": int(facts.get("ports", host.attrs.get("ports", 32))),
            "enable_password": facts.get("enable_password"),
            "mlag_domain": facts.get("mlag_domain"),
            "banner": facts.get("banner", True),
        }
        self.default_hostname = facts.get("hostname") or host.name
        self.modes = ["user"]
        self.sub = None  # (prompt text, token prefix)
        self.paging = True

    # -- state
    def running(self):
        cfg = simlab.read_json(self.host.path("running.json"), None)
        if cfg is None:
            cfg = simlab.read_json(self.host.path("startup.json"), None)
        return cfg or default_config(self.default_hostname)

    def save_running(self, cfg):
        prune(cfg)
        simlab.write_json(self.host.path("running.json"), cfg)

    def has_port(self, p):
        return len(p) == 2 and p[0] == 1 and 1 <= p[1] <= self.facts["ports"]

    def prompt(self):
        cfg = self.running()
        role = "[%s: master]" % (self.facts["mlag_domain"] or "standalone")
        mode = self.modes[-1]
        if mode == "user":
            return "%s %s > " % (cfg["hostname"], role)
        if mode == "enable":
            return "%s %s # " % (cfg["hostname"], role)
        if mode == "config":
            return "%s %s (config) # " % (cfg["hostname"], role)
        return "%s %s (%s) # " % (cfg["hostname"], role, self.sub[0])

    # -- dispatch
    def run(self, line):
        """Run one line; returns output text (may be '')."""
        words = line.split()
        if not words:
            return ""
        pipe = None
        if "|" in words:
            i = words.index("|")
            pipe = words[i + 1:]
            words = words[:i]
            if not pipe:
                raise INCOMPLETE
        mode = self.modes[-1]
        if words[0] == "show":
            return self.show(words[1:], pipe)
        if pipe:
            raise unrecognized("|")
        if words == ["exit"] or words == ["quit"]:
            if mode in ("user", "enable"):
                raise Drop()
            self.modes.pop()
            self.sub = None
            return ""
        if words[:4] == ["no", "cli", "session", "paging"] or words[:3] == ["cli", "session", "paging"]:
            self.paging = words[0] != "no"
            return ""
        if mode == "user":
            if words == ["enable"]:
                return "ENABLE"
            raise unrecognized(words[0])
        if mode == "enable":
            if words[0] in ("configure", "config", "conf"):
                if len(words) == 1:
                    raise INCOMPLETE
                if not "terminal".startswith(words[1]) or len(words) > 2:
                    raise unrecognized(words[1])
                self.modes.append("config")
                return ""
            if words == ["disable"]:
                self.modes.pop()
                return ""
            if words == ["reload"]:
                cfg = simlab.read_json(self.host.path("startup.json"), None)
                self.save_running(cfg or default_config(self.default_hostname))
                raise Drop()
            raise unrecognized(words[0])
        if mode == "sub":
            neg = words[0] == "no"
            body = words[1:] if neg else words
            words = (["no"] if neg else []) + self.sub[1] + body
        return self.config(words)

    def config(self, words):
        if words == ["configuration", "write"]:
            simlab.write_json(self.host.path("startup.json"), self.running())
            return ""
        if words[0] == "configuration":
            if len(words) == 1:
                raise INCOMPLETE
            raise unrecognized(words[1])
        neg = words[0] == "no"
        w = words[1:] if neg else words
        if not w:
            raise INCOMPLETE
        cfg = self.running()
        head = w[0]
        if head == "hostname":
            if neg:
                cfg["hostname"] = self.default_hostname
            elif len(w) != 2:
                raise INCOMPLETE if len(w) < 2 else unrecognized(w[2])
            else:
                cfg["hostname"] = w[1]
        elif head == "lldp":
            if len(w) > 1:
                raise unrecognized(w[1])
            cfg["lldp"] = not neg
        elif head == "roce":
            if version_tuple(self.facts["release"]) < ONESHOT_MIN:
                raise unrecognized("roce")
            if neg:
                cfg["roce"] = None
            else:
                mode = w[1] if len(w) > 1 else "lossless"
                if mode not in ROCE_MODES or len(w) > 2:
                    raise unrecognized(w[1] if mode not in ROCE_MODES else w[2])
                cfg["roce"] = mode
        elif head == "traffic":
            if self.pool(cfg, w, neg):
                return ""
        elif head == "dcb":
            self.pfc_global(cfg, w, neg)
        elif head == "interface":
            if self.interface(cfg, w, neg):
                return ""
        else:
            raise unrecognized(words[0])
        self.save_running(cfg)
        return ""

    def pool(self, cfg, w, neg):
        if len(w) < 2 or (w[1] == "pool" and len(w) < 3):
            raise INCOMPLETE
        if w[1] != "pool":
            raise unrecognized(w[1])
        if w[2] != "roce":
            raise unrecognized(w[2])
        pool = cfg["pool"]
        rest = w[3:]
        if not rest:
            if neg:
                cfg["pool"] = {"type": None, "percent": None, "map": []}
                return False
            self.modes.append("sub")
            self.sub = ("config pool roce", ["traffic", "pool", "roce"])
            return True
        if rest[0] == "type":
            if neg:
                pool["type"] = None
                return False
            if len(rest) < 2:
                raise INCOMPLETE
            if rest[1] not in POOL_TYPES or len(rest) > 2:
                raise unrecognized(rest[1] if rest[1] not in POOL_TYPES else rest[2])
            pool["type"] = rest[1]
        elif rest[0] == "memory":
            if len(rest) < 2 or (rest[1] == "percent" and len(rest) < 3 and not neg):
                raise INCOMPLETE
            if rest[1] != "percent":
                raise unrecognized(rest[1])
            if neg:
                pool["percent"] = None
                return False
            try:
                value = float(rest[2])
            except ValueError:
                raise unrecognized(rest[2])
            if not 0 <= value <= 100 or len(rest) > 3:
                raise unrecognized(rest[2])
            pool["percent"] = "%.2f" % value
        elif rest[0] == "map":
            if len(rest) < 3:
                raise INCOMPLETE
            if rest[1] != "switch-priority":
                raise unrecognized(rest[1])
            prios = []
            for tok in rest[2:]:
                if tok not in "01234567" or len(tok) != 1:
                    raise unrecognized(tok)
                prios.append(int(tok))
            if neg:
                pool["map"] = [p for p in pool["map"] if p not in prios]
            else:
                pool["map"] = sorted(set(pool["map"]) | set(prios))
        else:
            raise unrecognized(rest[0])
        return False

    def pfc_global(self, cfg, w, neg):
        if len(w) < 3:
            raise INCOMPLETE
        if w[1] != "priority-flow-control":
            raise unrecognized(w[1])
        if w[2] == "enable":
            if len(w) > 3 and (w[3] != "force" or len(w) > 4):
                raise unrecognized(w[3] if w[3] != "force" else w[4])
            cfg["pfc"]["enabled"] = not neg
        elif w[2] == "priority":
            if len(w) < 5:
                raise INCOMPLETE
            if len(w[3]) != 1 or w[3] not in "01234567":
                raise unrecognized(w[3])
            if w[4] != "enable" or len(w) > 5:
                raise unrecognized(w[4] if w[4] != "enable" else w[5])
            prios = set(cfg["pfc"]["priorities"])
            if neg:
                prios.discard(int(w[3]))
            else:
                prios.add(int(w[3]))
            cfg["pfc"]["priorities"] = sorted(prios)
        else:
            raise unrecognized(w[2])

    def interface(self, cfg, w, neg):
        if len(w) < 3:
            raise INCOMPLETE
        if w[1] != "ethernet":
            raise unrecognized(w[1])
        ports = expand_ports(w[2])
        if ports is None:
            raise unrecognized(w[2])
        for p in ports:
            if not self.has_port(p):
                raise CliError("%% Interface %s does not exist" % port_name(p))
        names = [port_name(p) for p in ports]
        rest = w[3:]
        if rest and rest[0] == "no":  # flat form of a sub-mode negation
            if neg:
                raise unrecognized("no")
            neg = True
            rest = rest[1:]
            if not rest:
                raise INCOMPLETE
        if not rest:
            if neg:
                raise unrecognized("ethernet")
            self.modes.append("sub")
            self.sub = ("config interface ethernet %s" % w[2], ["interface", "ethernet", w[2]])
            return True
        setter = self.port_setter(rest, neg)
        for name in names:
            setter(port_cfg(cfg, name))
        return False

    def port_setter(self, rest, neg):
        """Parse the per-port part; returns a function applying it to one port."""
        head = rest[0]
        if head == "qos":
            if len(rest) < 2 or (rest[1] == "trust" and len(rest) < 3 and not neg):
                raise INCOMPLETE
            if rest[1] != "trust":
                raise unrecognized(rest[1])
            if neg:
                return lambda pc: pc.pop("trust", None)
            if rest[2] not in TRUST or len(rest) > 3:
                raise unrecognized(rest[2] if rest[2] not in TRUST else rest[3])
            return lambda pc: pc.__setitem__("trust", rest[2])
        if head == "traffic-class":
            if len(rest) < 3:
                raise INCOMPLETE
            if len(rest[1]) != 1 or rest[1] not in "01234567":
                raise unrecognized(rest[1])
            tc = rest[1]
            if rest[2] == "congestion-control":
                if neg:
                    return lambda pc: pc.setdefault("cc", {}).pop(tc, None)
                return self.cc_setter(tc, rest[3:])
            if rest[2] == "dcb":
                if len(rest) < 4 or (not neg and len(rest) < 5):
                    raise INCOMPLETE
                if rest[3] != "ets":
                    raise unrecognized(rest[3])
                if neg:
                    return lambda pc: pc.setdefault("ets", {}).pop(tc, None)
                if rest[4] == "strict" and len(rest) == 5:
                    return lambda pc: pc.setdefault("ets", {}).__setitem__(tc, "strict")
                if rest[4] == "wrr":
                    if len(rest) != 6 or not rest[5].isdigit() or not 1 <= int(rest[5]) <= 100:
                        raise INCOMPLETE if len(rest) == 5 else unrecognized(rest[-1])
                    return lambda pc: pc.setdefault("ets", {}).__setitem__(tc, "wrr " + rest[5])
                raise unrecognized(rest[4] if rest[4] not in ("strict", "wrr") else rest[5])
            raise unrecognized(rest[2])
        if head == "dcb":
            if len(rest) < 3:
                raise INCOMPLETE
            if rest[1] != "priority-flow-control":
                raise unrecognized(rest[1])
            if rest[2] != "mode":
                raise unrecognized(rest[2])
            if neg:
                if len(rest) > 4 or (len(rest) == 4 and rest[3] != "force"):
                    raise unrecognized(rest[3])
                return lambda pc: pc.pop("pfc_mode", None)
            if len(rest) < 4:
                raise INCOMPLETE
            if rest[3] != "on":
                raise unrecognized(rest[3])
            if len(rest) > 5 or (len(rest) == 5 and rest[4] != "force"):
                raise unrecognized(rest[4])
            mode = " ".join(rest[3:])
            return lambda pc: pc.__setitem__("pfc_mode", mode)
        raise unrecognized(head)

    def cc_setter(self, tc, rest):
        if len(rest) < 5:
            raise INCOMPLETE
        if rest[0] not in ("ecn", "red", "both"):
            raise unrecognized(rest[0])
        kinds = {"minimum-absolute": "absolute", "minimum-relative": "relative"}
        if rest[1] not in kinds:
            raise unrecognized(rest[1])
        kind = kinds[rest[1]]
        if rest[3] != "maximum-" + kind:
            raise unrecognized(rest[3])
        limit = 100 if kind == "relative" else 16 * 1024 * 1024
        for tok in (rest[2], rest[4]):
            if not tok.isdigit() or not 0 < int(tok) <= limit:
                raise unrecognized(tok)
        if len(rest) > 5:
            raise unrecognized(rest[5])
        lo, hi = int(rest[2]), int(rest[4])
        if lo > hi:
            raise CliError("% Minimum threshold must not exceed maximum threshold")
        value = [rest[0], kind, lo, hi]
        return lambda pc: pc.setdefault("cc", {}).__setitem__(tc, value)

    # -- show
    def show(self, words, pipe):
        json_print = False
        include = None
        if pipe:
            if pipe == ["json-print"]:
                json_print = True
            elif pipe[0] == "include" and len(pipe) >= 2:
                include = " ".join(pipe[1:])
            else:
                raise unrecognized(pipe[0])
        if not words:
            raise INCOMPLETE
        cfg = self.running()
        if words == ["version"]:
            text = self.show_version(json_print)
        elif words in (["running-config"], ["running-config", "expanded"]):
            if json_print:
                raise unrecognized("json-print")
            text = render_running(cfg, self.facts)
        elif words == ["roce"]:
            if version_tuple(self.facts["release"]) < ONESHOT_MIN:
                raise unrecognized("roce")
            if json_print:
                raise unrecognized("json-print")
            text = self.show_roce(cfg)
        elif words == ["dcb", "priority-flow-control"]:
            text = self.show_pfc(cfg, json_print)
        elif words == ["traffic", "pool", "roce"]:
            text = self.show_pool(cfg, json_print)
        else:
            raise unrecognized(words[-1] if words[0] in ("dcb", "traffic") else words[0])
        if include is not None:
            import re
            rx = re.compile(include)
            text = "\n".join(x for x in text.split("\n") if rx.search(x))
        return text

    def show_version(self, json_print):
        f = self.facts
        rows = [("Product name", f["product"]), ("Product release", f["release"]),
                ("Build ID", "#1-dev"), ("Build date", "2020-02-26 19:25:24"),
                ("Target arch", "x86_64"), ("Target hw", "x86_64"),
                ("Built by", "jenkins@7c42130d8bd6"),
                ("Version summary", "X86_64 %s 2020-02-26 19:25:24 x86_64" % f["release"]),
                None, ("Product model", f["model"]), ("Host ID", "506B4BF4FCB0"),
                ("System serial num", "MT1845X03127"),
                ("System UUID", "7ce27170-e2ba-11e8-8000-98039befd600"), None,
                ("Uptime", "68d 5h 21m 36.256s"), ("CPU load averages", "3.20 / 3.20 / 3.18"),
                ("Number of CPUs", "2"),
                ("System memory", "2763 MB used / 5026 MB free / 7789 MB total"),
                ("Swap", "0 MB used / 0 MB free / 0 MB total")]
        if json_print:
            return json.dumps(dict(r for r in rows if r), indent=4)
        return "\n".join("" if r is None else ("%-19s%s" % (r[0] + ":", r[1])) for r in rows)

    def show_roce(self, cfg):
        mode = cfg.get("roce")
        if not mode:
            return "RoCE mode      : N/A"
        return "\n".join([
            "RoCE mode      : %s" % mode, "LLDP           : %s" % ("enabled" if cfg["lldp"] else "disabled"),
            "Port trust mode: L3", "", "Application TLV:", "  Selector: udp", "  Protocol: 4791",
            "  Priority: 3", "", "Port congestion-control:", "  Mode: ecn, absolute", "  Min : 150",
            "  Max : 1500", "", "PFC : enabled", "  switch-priority 3: enabled", "",
            "RoCE used TCs:", "-" * 46, "Switch-Priority  TC  Application  ETS", "-" * 46,
            "3                3   RoCE         WRR 50%", "6                6   CNP          Strict"])

    def show_pfc(self, cfg, json_print):
        enabled = sorted(cfg["pfc"]["priorities"])
        disabled = [p for p in range(8) if p not in enabled]
        state = "enabled" if cfg["pfc"]["enabled"] else "disabled"
        ports = []
        for n in range(1, self.facts["ports"] + 1):
            pc = cfg["ports"].get("1/%d" % n, {})
            on = pc.get("pfc_mode", "").startswith("on")
            ports.append(("Eth1/%d" % n, "on" if on else "Auto",
                          "Enabled" if on and cfg["pfc"]["enabled"] else "Disabled"))
        if json_print:
            return json.dumps([{"PFC": state,
                                "Priority Enabled List": " ".join(map(str, enabled)),
                                "Priority Disabled List": " ".join(map(str, disabled))}, {},
                               {p: [{"PFC admin": a, "PFC oper": o}] for p, a, o in ports}],
                              indent=4)
        lines = ["PFC: %s" % state,
                 "Priority Enabled List: %s" % " ".join(map(str, enabled)),
                 "Priority Disabled List: %s" % " ".join(map(str, disabled)),
                 "-" * 49, "%-17s%-17s%s" % ("Interface", "PFC admin", "PFC oper"), "-" * 49]
        lines += ["%-17s%-17s%s" % p for p in ports]
        return "\n".join(lines)

    def show_pool(self, cfg, json_print):
        pool = cfg["pool"]
        row = {"Type": pool["type"] or "lossy", "Switch Priorities": " ".join(map(str, pool["map"])),
               "Max Usage": "0", "Usage": "0", "Memory actual": "5.9M",
               "Memory [%]": pool["percent"] or "0.00"}
        if json_print:
            return json.dumps({"roce": [row], "Exception list": {"message": "N/A"}}, indent=4)
        # Text layout not captured anywhere (REAL-FORMATS B.6): invented columns.
        return "\n".join(["%-8s%-10s%-19s%-12s%s" % ("Pool", "Type", "Switch Priorities",
                                                     "Memory [%]", "Usage"),
                          "%-8s%-10s%-19s%-12s%s" % ("roce", row["Type"], row["Switch Priorities"] or "-",
                                                     row["Memory [%]"], row["Usage"])])


# ------------------------------------------------------------------ session

class Term:
    """stdin/stdout; echo is the PTY's job (a pipe gets none)."""

    def __init__(self):
        self.tty = os.isatty(0)

    def write(self, text):
        sys.stdout.write(text)
        sys.stdout.flush()

    def readline(self, secret=False, prompt=""):
        """Echo goes off before the prompt shows, so a fast client's secret
        is never echoed."""
        old = None
        if secret and self.tty:
            import termios
            old = termios.tcgetattr(0)
            new = termios.tcgetattr(0)
            new[3] &= ~termios.ECHO
            termios.tcsetattr(0, termios.TCSANOW, new)
        self.write(prompt)
        try:
            line = sys.stdin.readline()
        finally:
            if old is not None:
                termios.tcsetattr(0, termios.TCSANOW, old)
                if line:
                    self.write("\n")
        return line


def drop(sw, injected):
    if injected and not sw.standalone:
        simlab.drop_session()
    sys.stdout.flush()
    os._exit(0)


def handle(sw, term, line):
    """One received line; returns False when the session ends."""
    control = simlab.read_control(sw.host)
    delay = simlab.latency_ms(sw.host, control) + simlab.slow_ms(control, line.strip())
    with simlab.Lock(sw.host):
        fault = simlab.take_fault(sw.host, line)
    if delay:
        time.sleep(delay / 1000.0)
    if fault and fault[0] == "drop":
        drop(sw, True)
    if fault:
        term.write(fault[1].rstrip("\n") + "\n")
        return True
    try:
        with simlab.Lock(sw.host):
            out = sw.run(line)
    except CliError as e:
        term.write(e.text + "\n")
        return True
    except Drop:
        return False
    if out == "ENABLE":
        if sw.facts["enable_password"]:
            secret = term.readline(secret=True, prompt="password: ")
            simlab.log_command(sw.host, "********")
            if secret.rstrip("\r\n") != sw.facts["enable_password"]:
                term.write("% Authentication failed\n")
                return True
        sw.modes.append("enable")
        return True
    if out:
        term.write(out.rstrip("\n") + "\n")
    return True


def session(sw):
    term = Term()
    command = os.environ.get("SSH_ORIGINAL_COMMAND")
    if command is not None:  # ssh switch 'show version': run in enable mode
        simlab.log_command(sw.host, command)
        sw.modes = ["user", "enable"]
        try:
            out = sw.run(command)
        except CliError as e:
            term.write(e.text + "\n")
            return 1
        except Drop:
            return 0
        term.write(out.rstrip("\n") + "\n" if out else "")
        return 0
    if sw.facts["banner"]:
        term.write("\nMellanox Switch\n\n")
    while True:
        term.write(sw.prompt())
        line = term.readline()
        if not line:
            return 0
        line = line.rstrip("\r\n")
        simlab.log_command(sw.host, line)
        if not handle(sw, term, line):
            return 0


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(description="simulated Onyx switch CLI")
    ap.add_argument("--state", help="state directory (default: $GC_SIM_HOST_DIR)")
    ap.add_argument("--hostname", help="default hostname (default: $GC_SIM_HOST or switch-b7b218)")
    args = ap.parse_args(argv)
    state = args.state or os.environ.get("GC_SIM_HOST_DIR")
    if not state:
        sys.stderr.write("onyx_sim: give --state DIR (or run under the lab)\n")
        return 2
    os.makedirs(state, exist_ok=True)
    name = args.hostname or os.environ.get("GC_SIM_HOST") or "switch-b7b218"
    attrs = {}
    lab = os.environ.get("GC_LAB_DIR")
    if lab and not args.state:
        found = simlab.find_host(lab, simlab.dialled_address())
        attrs = found.attrs if found else {}
    host = simlab.Host(lab or state, os.environ.get("GC_SIM_ADDR", ""), "onyx", name, attrs)
    host.dir = state
    return session(Switch(host, standalone=bool(args.state)))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
