#!/usr/bin/python3
"""run_cli_tests.py - gpuclusterctl as a user runs it: exact output, exit codes.

    run_cli_tests.py GPUCLUSTERCTL SOURCE_DIR
    GC_UPDATE_GOLDEN=1 run_cli_tests.py ...   # rewrite tests/data/plan/* (review the diff!)

Golden plans: `plan --offline` of every example, text and JSON, compared
byte for byte, exit status 2.  Observed snapshots: converged -> "No
changes." and exit 0; drifted -> exactly the drift.  Usage and spec errors:
exit 64 / 1 with the exact message, nothing on stdout.  Every JSON output
validates against its schema in specs/; DOT output renders with Graphviz.
"""
import errno
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

BIN, SRC = sys.argv[1], sys.argv[2]
UPDATE = os.environ.get("GC_UPDATE_GOLDEN") == "1"
EXAMPLES = ["roce-passthrough", "vgpu-pvrdma", "gpudirect-pair", "multi-gpu-vm", "kvm-pair", "vgpu67-k8s"]
failures = []


exits = set()  # (command, exit status) of every run, for the man page's table


def run(*args, env=None):
    env = dict(os.environ, NO_COLOR="1", **(env or {}))
    p = subprocess.run([BIN, *args], cwd=SRC, env=env, capture_output=True, text=True,
                       stdin=subprocess.DEVNULL)
    exits.add((args[0] if args and not args[0].startswith("-") else "", p.returncode))
    return p.returncode, p.stdout, p.stderr


def check(name, cond, detail=""):
    if cond:
        print(f"ok   {name}")
    else:
        print(f"FAIL {name}\n{detail}")
        failures.append(name)


def golden(name, got, path):
    full = os.path.join(SRC, path)
    if UPDATE:
        with open(full, "w") as f:
            f.write(got)
    try:
        want = open(full).read()
    except FileNotFoundError:
        want = None
    if got != want:
        import difflib
        diff = "".join(difflib.unified_diff((want or "").splitlines(True), got.splitlines(True),
                                            path, "got"))
        check(name, False, diff[:6000])
    else:
        check(name, True)


def schema(name):
    import jsonschema
    return jsonschema.Draft202012Validator(json.load(open(os.path.join(SRC, "specs", name))))


def valid(name, validator, text):
    """The output parses as JSON and is valid against its schema in specs/."""
    try:
        doc = json.loads(text)
    except ValueError as e:
        check(f"{name}: JSON", False, f"{e}\n{text[:2000]}")
        return None
    errors = sorted(validator.iter_errors(doc), key=str)
    check(f"{name}: valid against its schema", not errors,
          "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:5]))
    return doc


# ---------------------------------------------------------------- golden plans
plan_schema = schema("plan-v1.schema.json")
for ex in EXAMPLES:
    spec = f"examples/{ex}.yaml"
    rc, out, err = run("plan", "--offline", spec)
    check(f"plan --offline {ex}: exit 2", rc == 2, err)
    check(f"plan --offline {ex}: quiet stderr", err == "", err)
    golden(f"plan --offline {ex}: text", out, f"tests/data/plan/{ex}.txt")
    rc_v, out_v, err_v = run("plan", "-v", "--offline", spec)
    check(f"plan -v --offline {ex}: same exit and stdout, quiet stderr",
          rc_v == rc and out_v == out and err_v == "", err_v)
    rc, out, err = run("plan", "--offline", "--json", spec)
    check(f"plan --offline --json {ex}: exit 2", rc == 2, err)
    golden(f"plan --offline --json {ex}: json", out, f"tests/data/plan/{ex}.json")
    errors = sorted(plan_schema.iter_errors(json.loads(out)), key=str)
    check(f"plan --json {ex}: valid against plan-v1.schema.json", not errors,
          "\n".join(e.message for e in errors[:5]))

# ---------------------------------------------------------------- observed snapshots
obs_schema = schema("observed-v1.schema.json")
obs_dir = os.path.join(SRC, "tests/data/observed")
for f in sorted(os.listdir(obs_dir)):
    if f.endswith(".json"):
        errors = list(obs_schema.iter_errors(json.load(open(os.path.join(obs_dir, f)))))
        check(f"{f}: valid against observed-v1.schema.json", not errors,
              "\n".join(e.message for e in errors[:5]))

for ex in ["roce-passthrough", "vgpu-pvrdma"]:
    rc, out, err = run("plan", "--observed", f"tests/data/observed/{ex}-converged.json",
                       f"examples/{ex}.yaml")
    check(f"plan --observed converged {ex}: exit 0", rc == 0, err)
    check(f"plan --observed converged {ex}: no changes",
          out == "No changes. The cluster matches the spec.\n", out)
    rc, out, err = run("plan", "--json", "--observed", f"tests/data/observed/{ex}-converged.json",
                       f"examples/{ex}.yaml")
    check(f"plan --json converged {ex}: changes false", rc == 0 and not json.loads(out)["changes"])

for drift, ex in [("roce-passthrough-drift-pfc", "roce-passthrough"),
                  ("roce-passthrough-drift-passthru", "roce-passthrough"),
                  ("vgpu-pvrdma-drift-vib", "vgpu-pvrdma")]:
    rc, out, err = run("plan", "--observed", f"tests/data/observed/{drift}.json",
                       f"examples/{ex}.yaml")
    check(f"plan --observed {drift}: exit 2", rc == 2, err)
    golden(f"plan --observed {drift}: text", out, f"tests/data/plan/{drift}.txt")

# a host with two uplinks on one switch: one set, compared as a set
two = "tests/data/spec/ok/sriov-dvs-and-uplinks.yaml"
rc, out, err = run("plan", "--offline", two)
check("plan --offline two uplinks of one host: one line with both",
      rc == 2 and out.count("uplink.esx01") == 1
      and "    + dvs/dvs\n        mtu: (none) → 9000\n        uplink.esx01: (none) → vmnic4,vmnic5\n" in out,
      out + err)
rc, out, err = run("graph", "--json", two)
uplinks_graph = json.loads(out)
for seen, want_rc, want_line in [("vmnic5,vmnic4", 0, None), ("vmnic5", 2, "uplink.esx01: vmnic5 → vmnic4,vmnic5"),
                                 ("vmnic4,vmnic5,vmnic6", 2, "uplink.esx01: vmnic4,vmnic5,vmnic6 → vmnic4,vmnic5")]:
    snap = {"version": 1, "resources": {}, "hosts": {}, "vms": {}}
    for t in uplinks_graph["targets"]:
        if t["kind"] == "esxi":
            snap["hosts"][t["name"]] = {"maintenance": False, "reachable": True}
    for r in uplinks_graph["resources"]:
        if r["kind"] == "vm.power":
            continue
        snap["resources"][r["id"]] = dict(r["properties"])
        if r["kind"] == "vm":
            snap["vms"][r["vm"]] = {"power": "on", "host": r["properties"]["host"]}
    snap["resources"]["dvs/dvs"]["uplink.esx01"] = seen
    path = "/tmp/gc-cli-test-uplinks-%d.json" % os.getpid()
    with open(path, "w") as f:
        json.dump(snap, f)
    rc, out, err = run("plan", "--observed", path, two)
    os.unlink(path)
    if want_line is None:
        check(f"plan --observed uplinks {seen}: no changes",
              rc == 0 and out == "No changes. The cluster matches the spec.\n", out + err)
    else:
        check(f"plan --observed uplinks {seen}: one switch change, the list",
              rc == 2 and f"    ~ dvs/dvs\n        {want_line}\n" in out
              and "Plan: 0 to add, 1 to change, 0 to destroy" in out, out + err)

rc, out, err = run("plan", "--observed", "tests/data/observed/missing.json",
                   "examples/roce-passthrough.yaml")
check("plan --observed missing file: exit 1", rc == 1 and out == "", err)
check("plan --observed missing file: names it",
      err.startswith("gpuclusterctl: error: ") and "tests/data/observed/missing.json" in err, err)

# ---------------------------------------------------------------- usage
# without --offline/--observed plan observes live (tests/integration covers the
# lab): a guest that does not answer is retried, then named with the reason
rc, out, err = run("plan", "--only", "guest", "--state-dir", "/tmp/gc-cli-test-state",
                   "examples/roce-pair.yaml")
check("live plan of unreachable guests: exit 1", rc == 1, err)
check("live plan of unreachable guests: both listed as unknown with the reason",
      out == "Unknown: not observed, nothing planned for them\n\n"
             "  guest worker-01: unknown: guest 'worker-01': ssh ubuntu@127.0.0.51:22: cannot "
             "connect: Connection refused\n"
             "  guest worker-02: unknown: guest 'worker-02': ssh ubuntu@127.0.0.52:22: cannot "
             "connect: Connection refused\n\n"
             "Plan: 0 to add, 0 to change, 0 to destroy, 0 synthesized steps (0 hosts need "
             "maintenance, 0 reboots). 2 targets unknown.\n", out)
check("live plan of unreachable guests: names the guest and the reason",
      err.endswith("gpuclusterctl: error: guest 'worker-01' failed: guest 'worker-01': ssh "
                   "ubuntu@127.0.0.51:22: cannot connect: Connection refused\n"), err)
for args, msg in [(["plan", "--offline"], "missing SPEC"),
                  (["plan", "--bogus", "x.yaml"], "unknown option '--bogus'"),
                  (["plan", "--offline", "--observed", "o.json", "x.yaml"],
                   "--offline and --observed exclude each other"),
                  (["plan", "--only", "esx", "x.yaml"],
                   "--only takes a comma list of esxi, switch, vcenter, guest, kvm, libvirt; got 'esx'"),
                  (["plan", "--offline", "--parallelism", "zero", "x.yaml"],
                   "--parallelism needs a number from 1 to 4096, not 'zero'"),
                  (["plan", "--offline", "a.yaml", "b.yaml"], "too many arguments (one SPEC)"),
                  (["validate", "--rdma-qp-timeout", "32", "x.yaml"],
                   "--rdma-qp-timeout needs 1 to 31, not '32'"),
                  (["validate", "--rdma-qp-timeout", "0", "x.yaml"],
                   "--rdma-qp-timeout needs 1 to 31, not '0'"),
                  (["validate", "--mpi-timeout", "0", "x.yaml"],
                   "--mpi-timeout needs 1 to 86400 seconds, not '0'"),
                  (["validate", "--mpi-timeout", "86401", "x.yaml"],
                   "--mpi-timeout needs 1 to 86400 seconds, not '86401'"),
                  (["check"], "missing SPEC"),
                  (["graph", "--dot", "--json", "x.yaml"], "--dot and --json exclude each other")]:
    rc, out, err = run(*args)
    check(f"{' '.join(args)}: exit 64 '{msg}'",
          rc == 64 and out == "" and err.startswith(f"gpuclusterctl {args[0]}: {msg}\n"), err)
# every numeric option of validate taken, in range: it goes on to the spec
# (a parser that stopped at a good value would exit 0 having checked nothing)
rc, out, err = run("validate", "--rdma-msg-kib", "256", "--rdma-iters", "5", "--rdma-timeout", "10",
                   "--rdma-qp-timeout", "18", "--parallelism", "2", "--mpi-timeout", "60",
                   "/nonexistent/x.yaml")
check("validate's numeric options in range: on to the spec, which is missing (exit 1)",
      rc == 1 and out == "" and
      err == "gpuclusterctl: error: cannot open '/nonexistent/x.yaml': No such file or directory\n",
      "%d %r" % (rc, err))
rc, out, err = run("plna")
check("unknown command: exit 64 with a hint", rc == 64 and
      err == "gpuclusterctl: 'plna' is not a gpuclusterctl command (did you mean 'plan'?)\n"
             "See 'gpuclusterctl --help'.\n", err)
rc, out, err = run()
check("no command: exit 64, usage on stderr", rc == 64 and out == "" and "usage:" in err)
for args in (["--help"], ["-h"], ["help"]):
    rc, out, err = run(*args)
    check(f"{' '.join(args)}: exit 0 lists commands", rc == 0 and "   plan " in out and
          "   check " in out and "   graph " in out, out + err)
for cmd in ["plan", "check", "graph", "version", "help"]:
    rc, out, err = run(cmd, "--help")
    rc2, out2, _ = run("help", cmd)
    check(f"{cmd} --help == help {cmd}", rc == 0 and rc2 == 0 and out == out2 and
          out.startswith(f"usage: gpuclusterctl {cmd}"), out + err)
    rc, out, _ = run(cmd, "-h")
    check(f"{cmd} -h", rc == 0 and out == out2)
rc, out, err = run("version")
check("version", rc == 0 and out.startswith("gpuclusterctl "), out + err)

# ---------------------------------------------------------------- spec errors
tmp = tempfile.mkdtemp()
bad = os.path.join(tmp, "bad.yaml")
with open(bad, "w") as f:
    f.write("apiVersion: gpuclusterctl/v1\nkind: Cluster\nmetadata: {name: x}\n"
            "hosts:\n  - name: esx01\n    address: 127.0.0.1\n    cpu: 4\n")
for args in (["check", bad], ["plan", "--offline", bad], ["graph", bad]):
    rc, out, err = run(*args)
    lines = err.splitlines()
    check(f"{args[0]} broken spec: exit 1, nothing on stdout", rc == 1 and out == "", err)
    check(f"{args[0]} broken spec: diagnostics then the count",
          err.startswith(f"{bad}:") and lines and lines[-1].startswith("gpuclusterctl: ") and
          lines[-1].endswith(f" in {bad}") and " error" in lines[-1], err)
for ex in EXAMPLES:
    rc, out, err = run("check", f"examples/{ex}.yaml")
    check(f"check {ex}: exit 0", rc == 0 and out.startswith(f"examples/{ex}.yaml: ok ("), out + err)
shutil.rmtree(tmp)

# ---------------------------------------------------------------- approval, Terraform spellings
# (no lab needed: each is settled before anything is observed)
roce = "examples/roce-passthrough.yaml"
rc, out, err = run("apply", roce)   # stdin is not a terminal here (ctest, or </dev/null)
check("apply without a terminal or --yes: refused, nothing touched",
      rc == 64 and out == "" and err ==
      "gpuclusterctl apply: standard input is not a terminal, so nobody can approve the plan: "
      "pass --yes (or --auto-approve) to apply without asking, or save a plan with "
      "'plan --out FILE' and apply that FILE\n"
      "Try 'gpuclusterctl apply --help' for more information.\n", err)
rc, out, err = run("apply", "--json", "--yes", "--only", "esxi", "tests/data/spec/bad/unknown-keys.yaml")
check("apply --yes goes on to load the spec", rc == 1 and "unknown key" in err, err)
rc, out, err = run("apply", "-auto-approve", "--only", "esxi", "tests/data/spec/bad/unknown-keys.yaml")
check("apply -auto-approve (Terraform) is --yes", rc == 1 and "unknown key" in err, err)
rc, out, err = run("apply", "-detailed-exitcode", roce)
check("apply -detailed-exitcode: refused naming plan",
      rc == 64 and err.startswith("gpuclusterctl apply: -detailed-exitcode is a plan option (our plan "
                                  "always exits 0 for no changes, 2 for changes, 1 for an error)\n"), err)
rc, out, err = run("plan", "--offline", "-detailed-exitcode", roce)
check("plan -detailed-exitcode (Terraform) is how plan exits anyway", rc == 2 and out.startswith("Wave 1 of "), err)
rc, out, err = run("plan", "--offline", "-out=" + os.devnull, roce)
check("plan -out= (Terraform) is --out, which needs a live plan",
      rc == 64 and err.startswith("gpuclusterctl plan: --out saves a live plan (what the targets hold "
                                  "now); not with --offline or --observed\n"), err)
rc, out, err = run("plan", "--offline", "-target", "esx0[12]", roce)
check("plan -target (Terraform) is --target", rc == 2 and "esxi esx02\n" in out and "esx03" not in out,
      out + err)

# saved plans (apply FILE): refused before anything is observed
with tempfile.TemporaryDirectory() as tmp:
    bad = os.path.join(tmp, "v2.plan")
    with open(bad, "w") as f:
        json.dump({"gpuclusterctl_plan": 2, "spec": "/x.yaml", "spec_hash": "fnv1a64:0",
                   "fingerprints": {}, "plan": {}}, f)
    rc, out, err = run("apply", bad)
    check("apply FILE: a plan file of another version is refused",
          rc == 1 and out == "" and err == f"gpuclusterctl: error: '{bad}' is not a plan file of "
          "this version (plan --out FILE writes one)\n", err)
    spec = os.path.join(SRC, roce)
    stale = os.path.join(tmp, "stale.plan")
    with open(stale, "w") as f:
        json.dump({"gpuclusterctl_plan": 1, "spec": spec, "spec_hash": "fnv1a64:0000000000000000",
                   "only": [], "targets": [], "fingerprints": {}, "plan": {"format_version": 1}}, f)
    rc, out, err = run("apply", stale)
    check("apply FILE: a spec changed since the plan was saved is refused",
          rc == 1 and out == "" and err == f"gpuclusterctl: error: the spec '{spec}' changed since "
          "the plan was saved: nothing was changed; run plan --out again and review it\n", err)

rc, out, err = run("unlock", roce)
check("unlock without --force: refused, nothing touched",
      rc == 64 and out == "" and err.startswith(
          "gpuclusterctl unlock: unlock clears another apply's lease: pass --force once you know "
          "that apply is dead\n"), err)

# ---------------------------------------------------------------- graph
# Every example's DOT renders with Graphviz (scripts/setup.sh installs it), and
# each box of the SVG reads: whose it is (the VM, host, switch, distributed
# switch or port group by name), what it is, its kind, what a change costs.
NS = "{http://www.w3.org/2000/svg}"


def svg_labels(dot):
    """{node id: [its text lines as the SVG shows them]}"""
    import xml.etree.ElementTree as ET
    p = subprocess.run(["dot", "-Tsvg"], input=dot, capture_output=True, text=True)
    if p.returncode != 0:
        return None
    return {g.find(NS + "title").text: [t.text for t in g.findall(NS + "text")]
            for g in ET.fromstring(p.stdout).iter(NS + "g") if g.get("class") == "node"}


def owner(r):
    """The name a resource's box starts with, from graph --json."""
    if r["target_kind"] in ("esxi", "kvm"):
        return r["host"]
    if r["target_kind"] in ("switch", "guest"):
        return r["target"]
    return r.get("vm") or r.get("host") or r["id"].rsplit("/", 1)[1]


check("graphviz's dot is installed (scripts/setup.sh)", shutil.which("dot") is not None)
graph_schema = schema("graph-v1.schema.json")
all_examples = sorted(f[:-5] for f in os.listdir(os.path.join(SRC, "examples")) if f.endswith(".yaml"))
shown = {}
for ex in all_examples:
    rc, out, err = run("graph", "--dot", f"examples/{ex}.yaml")
    check(f"graph --dot {ex}: exit 0", rc == 0 and out.startswith("digraph gpuclusterctl {"), err)
    labels = svg_labels(out) if shutil.which("dot") else None
    check(f"graph --dot {ex}: renders with dot -Tsvg", labels is not None)
    rc, out, err = run("graph", "--json", f"examples/{ex}.yaml")
    check(f"graph --json {ex}: exit 0", rc == 0, err)
    valid(f"graph --json {ex}", graph_schema, out)
    if labels is None or rc != 0:
        continue
    res = json.loads(out)["resources"]
    bad = [(r["id"], labels.get(r["id"])) for r in res
           if (labels.get(r["id"]) or [None])[0] != owner(r) or labels[r["id"]][2] != r["kind"]]
    check(f"graph --dot {ex}: every box names its VM/host/switch/port group, then its kind",
          len(labels) == len(res) and not bad, str(bad[:5]))
    seen = {}
    for i, l in labels.items():
        seen.setdefault(tuple(l), []).append(i)
    dup = [ids for ids in seen.values() if len(ids) > 1]
    check(f"graph --dot {ex}: no two boxes read the same", not dup, str(dup[:3]))
    shown.update({(ex, i): l for i, l in labels.items()})
for key, want in [
        (("roce-pair", "vm/worker-01"), ["worker-01", "virtual machine on esx01", "vm", "[VM off]"]),
        (("roce-pair", "vm/worker-02/device.pci/0000:3b:00.0"),
         ["worker-02", "passthrough GPU 0000:3b:00.0", "vm.device.pci", "[VM off]"]),
        (("roce-pair", "esx02/esxi.pci_passthru/0000:3b:00.0"),
         ["esx02", "passthrough for GPU 0000:3b:00.0", "esxi.pci_passthru", "[maintenance, reboot]"]),
        (("roce-pair", "sn2700/switch.pfc"), ["sn2700", "PFC on the lossless priority", "switch.pfc"]),
        (("roce-pair", "guest/worker-01/peermem"),
         ["worker-01", "GPUDirect RDMA (peer memory module)", "guest.peermem", "[after reboot]"]),
        (("vgpu-pvrdma", "dvs/dvs-rdma/portgroup/pvrdma-pg"),
         ["pvrdma-pg", "port group on dvs-rdma", "dvs.portgroup"]),
        (("vgpu-pvrdma", "vm/worker-03/device.vgpu/0"),
         ["worker-03", "vGPU grid_t4-16c", "vm.device.vgpu", "[VM off]"]),
        (("vgpu-pvrdma", "esx01/esxi.gpu_ecc/0000:3b:00.0"),
         ["esx01", "ECC of GPU 0000:3b:00.0", "esxi.gpu_ecc", "[maintenance, reboot, after reboot]"])]:
    check(f"graph --dot {key[0]}: {key[1]} reads {want}", shown.get(key) == want, str(shown.get(key)))

# ---------------------------------------------------------------- --json of every command
# plan's and graph's above; each against its schema in specs/
check_schema = schema("check-v1.schema.json")
for ex in all_examples:
    rc, out, err = run("check", "--json", f"examples/{ex}.yaml")
    doc = valid(f"check --json {ex}", check_schema, out)
    check(f"check --json {ex}: exit 0, valid, nothing on stderr",
          rc == 0 and doc and doc["valid"] and doc["errors"] == 0 and err == "", err)
bad_dir = os.path.join(SRC, "tests/data/spec/bad")
for f in sorted(os.listdir(bad_dir)):
    if f.endswith(".yaml"):
        rc, out, err = run("check", "--json", f"tests/data/spec/bad/{f}")
        doc = valid(f"check --json bad/{f}", check_schema, out)
        check(f"check --json bad/{f}: exit 1, not valid, nothing on stderr",
              rc == 1 and doc and not doc["valid"] and doc["errors"] > 0 and err == "", err)
rc, out, err = run("check", "--json", "examples/roce-pair.yaml")
check("check --json roce-pair: exactly", out ==
      '{\n  "format_version": 1,\n  "spec": "examples/roce-pair.yaml",\n  "valid": true,\n'
      '  "counts": {\n    "hosts": 2,\n    "vms": 2,\n    "switches": 1\n  },\n'
      '  "errors": 0,\n  "warnings": 0,\n  "diagnostics": [\n  ],\n  "not_shown": 0,\n'
      '  "error": null\n}\n', out)
rc, out, err = run("check", "--json", "tests/data/spec/bad/unknown-keys.yaml")
doc = json.loads(out)
check("check --json unknown-keys: the diagnostics as text shows them",
      doc["counts"] is None and doc["errors"] == 5 and doc["diagnostics"][0] == {
          "severity": "error", "file": "tests/data/spec/bad/unknown-keys.yaml", "line": 11,
          "col": 5, "message": "unknown key 'adress'", "hint": "did you mean 'address'?",
          "source_line": "    adress: 127.0.0.12", "notes": []}, out)
anchored = os.path.join(tempfile.mkdtemp(), "anchored.yaml")
with open(anchored, "w") as f:
    f.write("apiVersion: gpuclusterctl/v1\nkind: Cluster\nmetadata: {name: a}\n"
            "credentials: [{name: root, username: root, password_env: GC_PW}]\n"
            "vcenter: {url: 'https://127.0.0.1/sdk', datacenter: DC0, credentials: root}\n"
            "hosts: [{name: h1, address: 127.0.0.1, credentials: root}]\n"
            "x-vm: &w {host: h1, cpus: 4, memroy_gb: 8}\n"
            "vms: [{<<: *w, name: w1}, {<<: *w, name: w2}]\n")
rc, out, err = run("check", "--json", anchored)
doc = valid("check --json of a typo in an anchor", check_schema, out)
check("check --json of a typo in an anchor: once, a note per VM that uses it",
      rc == 1 and doc and [(d["line"], d["message"], d["notes"]) for d in doc["diagnostics"]] ==
      [(7, "unknown key 'memroy_gb'", ["used by VM 'w1' at line 8", "used by VM 'w2' at line 8"])],
      out)
shutil.rmtree(os.path.dirname(anchored))
rc, out, err = run("check", "--json", "tests/data/spec/missing.yaml")
doc = valid("check --json of a missing file", check_schema, out)
check("check --json of a missing file: exit 1, the error",
      rc == 1 and doc and doc["error"] == "cannot open 'tests/data/spec/missing.yaml': No such file "
                                          "or directory" and doc["diagnostics"] == [], out + err)

probe_schema = schema("probe-v1.schema.json")
probe_env = {"GC_PROBE_NO_TOOLS": "1", "GC_PROBE_LIBCUDA": "/nonexistent/libcuda.so.1",
             "GC_PROBE_LIBNVML": "/nonexistent/libnvidia-ml.so.1",
             "GC_PROBE_LIBIBVERBS": "/nonexistent/libibverbs.so.1"}
for tree, args, code, result in [("sysfs-roce", [], 0, "ok"), ("sysfs-down", [], 0, "ok"),
                                 ("sysfs-roce", ["--expect-set", "gpu.count=1"], 1, "failed"),
                                 ("sysfs-none", [], 5, "nothing_to_check"),
                                 ("sysfs-none", ["--no-cuda", "--rdma-server"], 5, "nothing_to_check")]:
    env = {**probe_env, "GC_PROBE_SYSFS": os.path.join(SRC, "tests/data/probe", tree)}
    rc, out, err = run("probe", "--json", *args, env=env)
    doc = valid(f"probe --json {' '.join(args)} on {tree}", probe_schema, out)
    check(f"probe --json {' '.join(args)} on {tree}: exit {code}, result {result}",
          rc == code and doc and doc["result"] == result, out + err)

apply_schema = schema("apply-v1.schema.json")
validate_schema = schema("validate-v1.schema.json")
state = tempfile.mkdtemp()
rc, out, err = run("apply", "--json", "--yes", "--only", "guest", "--state-dir", state,
                   "examples/roce-pair.yaml")
doc = valid("apply --json, guests unreachable", apply_schema, out)
check("apply --json, guests unreachable: exit 1, status failed, each guest's error",
      rc == 1 and doc and doc["status"] == "failed" and
      [t["error"] for t in doc["targets"]] ==
      ["guest 'worker-01': ssh ubuntu@127.0.0.51:22: cannot connect: Connection refused",
       "guest 'worker-02': ssh ubuntu@127.0.0.52:22: cannot connect: Connection refused"], out + err)
rc, out, err = run("apply", "--json", "--yes", "--only", "switch", "--state-dir", state,
                   "examples/gpudirect-pair.yaml")
doc = valid("apply --json, nothing to do", apply_schema, out)
check("apply --json, nothing to do: exit 0, status ok", rc == 0 and doc and doc["status"] == "ok",
      out + err)
rc, out, err = run("validate", "--json", "--skip", "node", "--state-dir", state,
                   "examples/gpudirect-pair.yaml")
doc = valid("validate --json, guests and vCenter unreachable", validate_schema, out)
check("validate --json, unreachable: exit 1, result failed",
      rc == 1 and doc and doc["summary"]["result"] == "failed" and not doc["summary"]["ok"], out + err)
rc, out, err = run("validate", "--json", "--skip", "config,node,pairs", "--target", "esx01",
                   "--state-dir", state, "examples/roce-passthrough.yaml")
doc = valid("validate --json, nothing to check", validate_schema, out)
check("validate --json, nothing to check: exit 5, result nothing_to_check",
      rc == 5 and doc and doc["summary"]["result"] == "nothing_to_check", out + err)
shutil.rmtree(state)

# discover --json: a host that refuses the connection is exit 1, named on
# stderr, and the document still valid against its schema
discover_schema = schema("discover-v1.schema.json")
d = tempfile.mkdtemp()
unreachable = os.path.join(d, "unreachable.yaml")
with open(unreachable, "w") as f:
    f.write("apiVersion: gpuclusterctl/v1\nkind: Cluster\nmetadata: {name: gone}\n"
            "credentials: [{name: root, username: root, password_env: GC_NO_SUCH_PASSWORD}]\n"
            "ssh: {port: 9, connect_timeout_s: 2}\n"
            "hosts: [{name: esx01, address: 127.0.0.1, credentials: root}]\n")
rc, out, err = run("discover", "--json", unreachable)
doc = valid("discover --json, host unreachable", discover_schema, out)
check("discover --json, host unreachable: exit 1, the host named with its error",
      rc == 1 and doc and doc["hosts"][0]["read"] is False and
      err == "gpuclusterctl: error: host 'esx01': " + doc["hosts"][0]["error"] + "\n" and
      "127.0.0.1:9: cannot connect: Connection refused" in err, out + err)
shutil.rmtree(d)

# ---------------------------------------------------------------- __complete (the shell completions' helper)
# hidden from help; every option it offers is one the command takes, with its
# argument's name when it has one (tests/install runs the completions themselves)
rc, out, err = run("help")
check("__complete is not listed as a command", rc == 0 and "__complete" not in out, out)
rc, out, err = run("__complete", "commands")
check("__complete commands", rc == 0 and out == "plan\ncheck\ngraph\napply\nunlock\nvalidate\ndiscover\nprobe\n"
      "version\nhelp\n", out + err)
rc, out, err = run("__complete", "flags", "unlock")
check("__complete flags unlock: the options, arguments named as --help names them",
      rc == 0 and out == "--force\n--only KINDS\n--target NAME|GLOB\n--known-hosts FILE\n"
      "--trust-new-host-keys\n--state-dir DIR\n-h\n--help\n", out + err)
rc, out, err = run("__complete", "targets", "examples/vgpu-pvrdma.yaml")
check("__complete targets: hosts, vCenter, VMs", rc == 0 and out.split() ==
      ["esx01", "esx02", "esx03", "esx04", "esx05", "vcenter", "k8s-master", "worker-01",
       "worker-02", "worker-03", "worker-04"], out + err)
rc, out, err = run("__complete", "targets", "tests/data/spec/bad/unknown-keys.yaml")
check("__complete targets of a broken spec: nothing, silently, exit 1", (rc, out, err) == (1, "", ""))
rc, out, err = run("__complete", "bogus")
check("__complete bogus: exit 64", rc == 64 and out == "", err)
ARG = {"N": "1", "S": "1", "SECS": "1", "KINDS": "esxi", "GROUPS": "config", "FILE": "/dev/null",
       "DIR": "/tmp", "NAME|GLOB": "x", "IMAGE": "x", "HOST": "x", "NAME": "x",
       "KEY=VALUE": "gpu.count=1"}
for cmd in run("__complete", "commands")[1].split():
    lines = run("__complete", "flags", cmd)[1].splitlines()
    bad = []
    for line in lines:
        flag, _, arg = line.partition(" ")
        if arg and arg not in ARG:
            bad.append(f"{line}: argument name the completions do not know")
            continue
        rc, out, err = run(cmd, flag, *([ARG[arg]] if arg else []), "--help")
        if rc != 0 or "unknown" in err:
            bad.append(f"{cmd} {line} --help: exit {rc}: {err.strip()}")
    check(f"__complete flags {cmd}: {len(lines)} options, each taken by {cmd}", lines and not bad,
          "\n".join(bad))

# ---------------------------------------------------------------- exit status contract
# The man page's EXIT STATUS table, row by row: every code for every command
# it names, seen above or here (a few only where a lab is needed, named).
roce_tree = {**probe_env, "GC_PROBE_SYSFS": os.path.join(SRC, "tests/data/probe/sysfs-roce")}
none_tree = {**probe_env, "GC_PROBE_SYSFS": os.path.join(SRC, "tests/data/probe/sysfs-none")}
rc, out, err = run("probe", env=roce_tree)
check("probe with an RDMA device: exit 0", rc == 0 and out.startswith("RDMA\n") and
      "Nothing to check" not in out, out + err)
rc, out, err = run("probe", "--expect-set", "gpu.count=1", env=roce_tree)
check("probe, an expectation failed: exit 1",
      rc == 1 and "  FAIL gpu.count                  expected 1, found 0\n" in out, out + err)
rc, out, err = run("probe", env=none_tree)
check("probe with nothing to check: exit 5, and says so",
      rc == 5 and out.endswith("\nNothing to check: no RDMA device, no CUDA GPU and no "
                               "expectation (exit 5)\n") and err == "", out + err)
rc, out, err = run("probe", "--json", env=none_tree)
check("probe --json with nothing to check: exit 5, result nothing_to_check",
      rc == 5 and json.loads(out)["result"] == "nothing_to_check", out + err)
rc, out, err = run("probe", "--bogus")
check("probe --bogus: exit 64", rc == 64 and out == "" and
      err.startswith("gpuclusterctl-probe: unknown or incomplete option '--bogus'\nusage: "), err)
state = tempfile.mkdtemp()
rc, out, err = run("apply", "--yes", "--only", "switch", "--state-dir", state,
                   "examples/gpudirect-pair.yaml")
check("apply with nothing to do: exit 0",
      rc == 0 and out == "No changes on the selected targets (--only; 24 resources on other "
                         "target kinds were left out).\n", out + err)
rc, out, err = run("unlock", "--force", "--only", "switch", "--state-dir", state,
                   "examples/gpudirect-pair.yaml")
check("unlock without a lease: exit 0", rc == 0 and out == "No cluster lease to clear.\n", out + err)
rc, out, err = run("validate", "--skip", "config,node,pairs", "--target", "esx01",
                   "--state-dir", state, "examples/roce-passthrough.yaml")
check("validate with every check skipped: exit 5, and says so",
      rc == 5 and out == "0 checks: 0 passed, 0 failed, 0 skipped in 0.0 s\n" and
      err == "gpuclusterctl: nothing to check: every check was skipped or left out (exit 5)\n",
      out + err)
for cmd in ["validate", "unlock", "discover"]:
    rc, out, err = run(cmd, *{"unlock": ["--force"], "validate": ["--skip=node"]}.get(cmd, []),
                       "tests/data/spec/bad/unknown-keys.yaml")
    check(f"{cmd} of a broken spec: exit 1", rc == 1 and "unknown key" in err, err)
for cmd in ["apply", "validate", "unlock", "discover", "version"]:
    rc, out, err = run(cmd, "--bogus", "x.yaml")
    check(f"{cmd} --bogus: exit 64", rc == 64 and out == "", err)
rc, out, err = run("help", "plna")
check("help of an unknown command: exit 64",
      rc == 64 and err.startswith("gpuclusterctl help: unknown command 'plna'\n"), err)


def open_fifo_writer(fifo, p):
    """Our end of FIFO, open for writing once process p has it open for
    reading (a non-blocking open succeeds then); None if p ended first or 20 s
    passed: a deadline, not a blocking open, which a p that died would hang."""
    fd, deadline = None, time.monotonic() + 20
    while fd is None and p.poll() is None and time.monotonic() < deadline:
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as e:
            if e.errno != errno.ENXIO:
                raise
            time.sleep(0.01)
    return fd


def interrupted(args):
    """Run a command that reads FIFO (a spec, an expect file); once it has it
    open (our non-blocking open for writing succeeds), send SIGINT."""
    d = tempfile.mkdtemp()
    fifo = os.path.join(d, "spec.yaml")
    os.mkfifo(fifo)
    p = subprocess.Popen([BIN, *[fifo if a == "FIFO" else a for a in args]], cwd=SRC,
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    fd = open_fifo_writer(fifo, p)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=20)
    if fd is not None:
        os.close(fd)
    shutil.rmtree(d)
    exits.add((args[0], p.returncode))
    return p.returncode, out, err


for args in (["check", "FIFO"], ["graph", "FIFO"], ["plan", "--offline", "FIFO"],
             ["apply", "--yes", "--state-dir", state, "FIFO"],
             ["validate", "--skip", "node", "--state-dir", state, "FIFO"],
             ["unlock", "--force", "--state-dir", state, "FIFO"], ["discover", "FIFO"],
             ["probe", "--expect", "FIFO"]):
    rc, out, err = interrupted(args)
    check(f"{args[0]} interrupted (SIGINT): exit 130, nothing printed",
          rc == 130 and out == "" and err == "", f"exit {rc}\n{out}{err}")
shutil.rmtree(state)


def ignoring_sigint():
    signal.signal(signal.SIGINT, signal.SIG_IGN)


# a command started with SIGINT ignored (a background job of a script) keeps
# it ignored: Ctrl-C sent to it changes nothing, and it finishes its work
d = tempfile.mkdtemp()
fifo = os.path.join(d, "spec.yaml")
os.mkfifo(fifo)
p = subprocess.Popen([BIN, "check", fifo], cwd=SRC, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, text=True, preexec_fn=ignoring_sigint)
fd = open_fifo_writer(fifo, p)
alive = False
if fd is not None:
    p.send_signal(signal.SIGINT)
    try:
        p.wait(timeout=0.5)
    except subprocess.TimeoutExpired:
        pass
    alive = p.poll() is None
    os.write(fd, b"kind: Cluster\n")
    os.close(fd)
out, err = p.communicate(timeout=20)
shutil.rmtree(d)
check("check with SIGINT ignored by its parent: SIGINT changes nothing, the spec is read",
      alive and p.returncode == 1 and "missing required key 'apiVersion'" in err,
      f"alive {alive}, exit {p.returncode}\n{out}{err}")

# only where a target answers: validate's exit 0 (all checks passed) is
# asserted on the lab by tests/integration/test_apply.py; discover's exit 0
# (every target read) by tests/integration/test_discover.py
ELSEWHERE = {("validate", 0), ("discover", 0)}
man = open(os.path.join(SRC, "docs/gpuclusterctl.1")).read()
table = man[man.index(".SH EXIT STATUS"):]
table = table[table.index("\n_\n") + 3:table.index("\n.TE")]
rows = re.findall(r"^(\d+)\|(?:T\{\n)?([^|\n]+?)(?:\nT\})?\|", table, re.M)
commands = [l.split()[0] for l in run("help")[1].split("Commands:\n")[1].split("\n\n")[0].splitlines()]
check("man page: the EXIT STATUS table has 0, 1, 2, 5, 64, 130",
      [c for c, _ in rows] == ["0", "1", "2", "5", "64", "130"], str(rows))
for code, who in rows:
    if who == "all":
        names = commands
    elif who == "all but version, help":
        names = [c for c in commands if c not in ("version", "help")]
    else:
        names = [w.strip() for w in who.split(",")]
    missing = [n for n in names if (n, int(code)) not in exits and (n, int(code)) not in ELSEWHERE]
    check(f"man page: exit {code} ({who}) seen from each of them", not missing,
          f"never seen: {missing}")

# every option a command's help lists (on its lines that start with an
# option) is in that command's own entry of the man page's COMMANDS section
# (roff's "\-" read as "-"): an option added to one and not the other is
# found here.  probe's options are in docs/probe.md (below).
body = man[man.index(".SH COMMANDS"):man.index(".SH EXIT STATUS")]
heads = [(h.start(), h.group(1)) for h in re.finditer(r"^\.TP\n\.B (\w+)[ \n]", body, re.M)]
entry = {n: body[at:heads[i + 1][0] if i + 1 < len(heads) else len(body)].replace("\\-", "-")
         for i, (at, n) in enumerate(heads)}
for name in commands:
    if name in ("version", "help", "probe"):
        continue
    lines = [l for l in run("help", name)[1].splitlines() if re.match(r" +-", l)]
    opts = sorted(set(re.findall(r"--[a-z][a-z0-9-]*", "\n".join(lines))) - {"--help"})
    missing = [o for o in opts if not re.search(re.escape(o) + r"(?![a-z0-9-])", entry.get(name, ""))]
    check(f"man page: every option of 'help {name}' in its entry ({len(opts)})",
          name in entry and not missing, f"not in docs/gpuclusterctl.1's {name} entry: {missing}")
# the probe's own options are documented in docs/probe.md, where the man
# page and 'help probe' send the reader
probe_doc = open(os.path.join(SRC, "docs/probe.md")).read()
opts = sorted(set(re.findall(r"--[a-z][a-z0-9-]*", run("probe", "--help")[1])))
missing = [o for o in opts if not re.search(re.escape(o) + r"(?![a-z0-9-])", probe_doc)]
check(f"docs/probe.md: every option of 'probe --help' ({len(opts)})", len(opts) > 10 and not missing,
      f"not in docs/probe.md: {missing}")

print(f"\n{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
