#!/usr/bin/env python3
"""run_cli_tests.py - gpuclusterctl as a user runs it: exact output, exit codes.

    run_cli_tests.py GPUCLUSTERCTL SOURCE_DIR
    GC_UPDATE_GOLDEN=1 run_cli_tests.py ...   # rewrite tests/data/plan/* (review the diff!)

Golden plans: `plan --offline` of every example, text and JSON, compared
byte for byte, exit status 2.  Observed snapshots: converged -> "No
changes." and exit 0; drifted -> exactly the drift.  Usage and spec errors:
exit 64 / 1 with the exact message, nothing on stdout.  Every JSON output
validates against its schema in specs/; DOT output renders with Graphviz.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

BIN, SRC = sys.argv[1], sys.argv[2]
UPDATE = os.environ.get("GC_UPDATE_GOLDEN") == "1"
EXAMPLES = ["roce-passthrough", "vgpu-pvrdma", "gpudirect-pair", "multi-gpu-vm"]
failures = []


def run(*args):
    env = dict(os.environ, NO_COLOR="1")
    p = subprocess.run([BIN, *args], cwd=SRC, env=env, capture_output=True, text=True,
                       stdin=subprocess.DEVNULL)
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
                   "--only takes a comma list of esxi, switch, vcenter, guest; got 'esx'"),
                  (["plan", "--offline", "--parallelism", "zero", "x.yaml"],
                   "--parallelism needs a number from 1 to 4096, not 'zero'"),
                  (["plan", "--offline", "a.yaml", "b.yaml"], "too many arguments (one SPEC)"),
                  (["check"], "missing SPEC"),
                  (["graph", "--dot", "--json", "x.yaml"], "--dot and --json exclude each other")]:
    rc, out, err = run(*args)
    check(f"{' '.join(args)}: exit 64 '{msg}'",
          rc == 64 and out == "" and err.startswith(f"gpuclusterctl {args[0]}: {msg}\n"), err)
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
have_dot = shutil.which("dot") is not None
for ex in EXAMPLES:
    rc, out, err = run("graph", "--dot", f"examples/{ex}.yaml")
    check(f"graph --dot {ex}: exit 0", rc == 0 and out.startswith("digraph gpuclusterctl {"), err)
    if have_dot:
        p = subprocess.run(["dot", "-Tsvg"], input=out, capture_output=True, text=True)
        check(f"graph --dot {ex}: renders with dot -Tsvg", p.returncode == 0 and "<svg" in p.stdout,
              p.stderr)
    rc, out, err = run("graph", "--json", f"examples/{ex}.yaml")
    check(f"graph --json {ex}", rc == 0 and json.loads(out)["format_version"] == 1, err)

print(f"\n{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
