#!/usr/bin/python3
"""Reference copy bandwidth for the node probe (docs/benchmarks.md).

Same sizes and method as gpuclusterctl-probe: pinned host memory, one
non-default stream, 3 warm-up copies, then TRIALS runs of REPS async copies
between two CUDA events; the median trial in GB/s (1e9 bytes copied per s).
Prints one JSON object: {"torch": {...}, "cupy": {...}}.
"""
import argparse, json, statistics, sys


def torch_ref(size, reps, trials):
    import torch
    h = torch.randint(1, 255, (size,), dtype=torch.uint8).pin_memory()
    d1 = torch.empty(size, dtype=torch.uint8, device="cuda")
    d2 = torch.empty(size, dtype=torch.uint8, device="cuda")
    s = torch.cuda.Stream()
    out = {"device": torch.cuda.get_device_name(0), "version": torch.__version__}

    def bench(fn):
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        res = []
        with torch.cuda.stream(s):
            for t in range(-1, trials):
                n = 3 if t < 0 else reps
                e0.record(s)
                for _ in range(n):
                    fn()
                e1.record(s)
                e1.synchronize()
                if t >= 0:
                    res.append(size * n / (e0.elapsed_time(e1) * 1e6))
        return statistics.median(res)

    out["h2d_gbs"] = bench(lambda: d1.copy_(h, non_blocking=True))
    out["d2h_gbs"] = bench(lambda: h.copy_(d1, non_blocking=True))
    out["d2d_gbs"] = bench(lambda: d2.copy_(d1, non_blocking=True))
    return out


def cupy_ref(size, reps, trials):
    import cupy as cp
    rt = cp.cuda.runtime
    hp = cp.cuda.alloc_pinned_memory(size)
    d1 = cp.empty(size, dtype=cp.uint8)
    d2 = cp.empty(size, dtype=cp.uint8)
    s = cp.cuda.Stream(non_blocking=True)
    out = {"version": cp.__version__}

    def bench(dst, src, kind):
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        res = []
        for t in range(-1, trials):
            n = 3 if t < 0 else reps
            e0.record(s)
            for _ in range(n):
                rt.memcpyAsync(dst, src, size, kind, s.ptr)
            e1.record(s)
            e1.synchronize()
            if t >= 0:
                res.append(size * n / (cp.cuda.get_elapsed_time(e0, e1) * 1e6))
        return statistics.median(res)

    out["h2d_gbs"] = bench(d1.data.ptr, hp.ptr, rt.memcpyHostToDevice)
    out["d2h_gbs"] = bench(hp.ptr, d1.data.ptr, rt.memcpyDeviceToHost)
    out["d2d_gbs"] = bench(d2.data.ptr, d1.data.ptr, rt.memcpyDeviceToDevice)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--trials", type=int, default=5)
    a = ap.parse_args()
    size = a.mib << 20
    res = {"bytes": size, "reps": a.reps, "trials": a.trials}
    for name, fn in (("torch", torch_ref), ("cupy", cupy_ref)):
        try:
            res[name] = fn(size, a.reps, a.trials)
        except Exception as e:  # report, do not hide
            res[name] = {"error": repr(e)}
    json.dump(res, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
