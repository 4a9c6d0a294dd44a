#!/usr/bin/python3
"""check_schema.py - the JSON Schema agrees with the loader on the easy cases.

Every example and every tests/data/spec/ok/ spec must validate against
specs/gpuclusterctl-v1.schema.json (YAML -> JSON with PyYAML, which resolves
anchors and merge keys like the loader), and a few bad specs whose problem is
purely one of shape must fail it.  Exit 77 (skipped) without PyYAML or
jsonschema.  Run from the repository root.
"""
import glob
import json
import sys

try:
    import jsonschema
    import yaml
except ImportError as e:  # pragma: no cover
    print("skipping: %s" % e)
    sys.exit(77)

# shape-only problems the schema must catch too
MUST_FAIL = [
    "unknown-keys", "wrong-types", "numeric-strings", "numbers-out-of-range",
    "vcenter-http", "hostile-command-substitution", "hostile-quotes",
    "hostile-pci-and-profile", "hostile-path-traversal", "credential-secrets",
    "vm-nic-keys", "gpu-entries", "license-fields", "wrong-api-version", "rolling-policy", "vcenter-names-too-long",
]


def load(path):
    with open(path, "rb") as f:
        return yaml.safe_load(f)


def main():
    with open("specs/gpuclusterctl-v1.schema.json") as f:
        schema = json.load(f)
    cls = jsonschema.Draft202012Validator
    cls.check_schema(schema)
    v = cls(schema)
    bad = 0
    good = sorted(glob.glob("examples/*.yaml") + glob.glob("tests/data/spec/ok/*.yaml"))
    for path in good:
        errors = sorted(v.iter_errors(load(path)), key=lambda e: list(e.path))
        for e in errors:
            print("%s: %s: %s" % (path, "/".join(str(p) for p in e.path), e.message))
            bad += 1
    for name in MUST_FAIL:
        path = "tests/data/spec/bad/%s.yaml" % name
        if v.is_valid(load(path)):
            print("%s: the schema accepts it, the loader does not" % path)
            bad += 1
    print("%d specs validated, %d bad specs rejected, %d problems"
          % (len(good), len(MUST_FAIL), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
