#!/usr/bin/python3
"""Compare gpuclusterctl-probe --json bandwidth with device-probe-ref.py runs.

usage: device-probe-compare.py probe1.json [probe2.json ...] -- ref1.json [ref2.json ...]
Takes the best median of each side over the interleaved runs and prints the
ratio probe/reference per direction against the acceptance bars
(H2D, D2H >= 90 %, D2D >= 85 % of the reference).
"""
import json, sys

args = sys.argv[1:]
cut = args.index("--")
probes = [json.load(open(p)) for p in args[:cut]]
refs = [json.load(open(p)) for p in args[cut + 1:]]
bars = {"h2d_gbs": 0.90, "d2h_gbs": 0.90, "d2d_gbs": 0.85}
gpu = probes[0]["cuda"]["gpus"][0]
print(f"device: {gpu['name']}  pci {gpu['pci_bus_id']}  virt {gpu['virtualization_mode']}  "
      f"driver {probes[0]['cuda']['driver_version']}")
print(f"{'dir':5} {'probe GB/s':>11} {'torch GB/s':>11} {'ratio':>7} {'cupy GB/s':>10} {'ratio':>7}  bar")
ok = True
for k, bar in bars.items():
    p = max(pr["cuda"]["gpus"][0][k] for pr in probes)
    t = max(r["torch"].get(k, 0) for r in refs)
    c = max(r["cupy"].get(k, 0) for r in refs)
    rt = p / t if t else float("nan")
    rc = p / c if c else float("nan")
    good = t > 0 and rt >= bar
    ok &= good
    print(f"{k[:3].upper():5} {p:11.2f} {t:11.2f} {rt:7.3f} {c:10.2f} {rc:7.3f}  >= {bar:.2f} "
          f"{'PASS' if good else 'FAIL'}")
print("acceptance:", "PASS" if ok else "FAIL")
