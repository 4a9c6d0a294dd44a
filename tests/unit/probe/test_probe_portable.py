#!/usr/bin/python3
"""test_probe_portable - gpuclusterctl-probe-portable runs on glibc 2.17+.

ctest runs it as probe_portable_abi with the binary's path:
    test_probe_portable.py BUILD/src/probe/gpuclusterctl-probe-portable
It reads the binary with objdump/readelf (binutils): no dynamic symbol and
no version requirement newer than GLIBC_2.17, DT_NEEDED exactly libdl.so.2
and libc.so.6, the usual x86_64 interpreter, and no constructor beyond
crtbeginS.o's frame_dummy (glibc < 2.34 would not run one with our _start,
src/probe/start_x86_64.S).  Then it runs it on this machine's glibc: --help,
--json (parsed), and dlopen/dlsym/dlerror through the pinned GLIBC_2.2.5
symbols via the GC_PROBE_LIB* hooks (docs/probe.md).  With
GC_PROBE_OLD_GLIBC=DIR (an older glibc's ld.so, libc.so.6 and libdl.so.2,
e.g. Debian 11's 2.31) the same runs go through that glibc's ld.so, and the
dl* calls must bind to its libdl.so.2; without it those are skipped.
docs/probe.md, "Which guests it runs on", says what stays unverified.
"""

import ctypes
import json
import os
import re
import subprocess
import sys
import unittest

BIN = None
SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SYSFS_NONE = os.path.join(SRC, "tests", "data", "probe", "sysfs-none")
MAX = (2, 17)


def tool(*argv):
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout


def too_new(ver):
    """True when GLIBC_<ver> is above 2.17 or not a plain version number."""
    m = re.fullmatch(r"(\d+)\.(\d+)(?:\.\d+)?", ver)
    return m is None or (int(m.group(1)), int(m.group(2))) > MAX


def probe(*args, env=None, old=None):
    """Run the binary; under the glibc in directory `old` when given."""
    e = {"PATH": "/usr/bin:/bin", "GC_PROBE_NO_TOOLS": "1"}
    e.update(env or {})
    pre = [os.path.join(old, "ld-linux-x86-64.so.2"), "--library-path", old] if old else []
    return subprocess.run([*pre, BIN, *args], capture_output=True, text=True, env=e, timeout=60)


def probe_json(*args, env=None, old=None):
    """--json on a machine with no RDMA device or GPU (or --no-* both):
    exit 5, nothing to check (docs/probe.md)."""
    r = probe("--json", *args, env=env, old=old)
    if r.returncode != 5:
        raise AssertionError(f"exit {r.returncode}, not 5, stderr: {r.stderr!r}")
    j = json.loads(r.stdout)
    if j["result"] != "nothing_to_check":
        raise AssertionError(f"result {j['result']!r}, not 'nothing_to_check'")
    return j


def glibc_symbols():
    """[(symbol, version)] of the dynamic symbols bound to a GLIBC_ version."""
    out = []
    for line in tool("objdump", "-T", BIN).splitlines():
        # "0000000000000000      DF *UND*\t0000000000000000 (GLIBC_2.2.5) dlopen"
        m = re.search(r"[ (]GLIBC_([^ )]+)\)?\s+(\S+)$", line)
        if m:
            out.append((m.group(2), m.group(1)))
    return out


class Abi(unittest.TestCase):
    def test_symbol_versions_at_most_2_17(self):
        bad = [f"{s}@GLIBC_{v}" for s, v in glibc_symbols() if too_new(v)]
        self.assertEqual(bad, [], "symbols newer than GLIBC_2.17")
        # versions required without a symbol, e.g. GLIBC_ABI_DT_RELR
        needs = re.findall(r"Name: GLIBC_(\S+)", tool("readelf", "-V", "-W", BIN))
        self.assertIn("2.2.5", needs)
        self.assertEqual([n for n in needs if too_new(n)], [],
                         "version requirements newer than GLIBC_2.17")

    def test_dl_and_start_are_pinned(self):
        want = ("dlopen", "dlsym", "dlerror", "dlclose", "__libc_start_main")
        got = sorted((s, v) for s, v in glibc_symbols() if s in want)
        self.assertEqual(got, sorted((s, "2.2.5") for s in want))

    def test_needed_and_interpreter(self):
        d = tool("readelf", "-d", "-W", BIN)
        needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.+)\]", d)
        self.assertEqual(sorted(needed), ["libc.so.6", "libdl.so.2"])
        self.assertRegex(d, r"FLAGS_1\)\s+Flags: .*PIE")
        interp = re.findall(r"Requesting program interpreter: (.+)\]",
                            tool("readelf", "-l", "-W", BIN))
        self.assertEqual(interp, ["/lib64/ld-linux-x86-64.so.2"])

    def test_no_constructor_besides_crtbegin(self):
        # .init_array: exactly one pointer, a relative relocation to frame_dummy
        sections = tool("readelf", "-S", "-W", BIN)
        self.assertNotIn(".preinit_array", sections)
        m = re.search(r"\] \.init_array\s+INIT_ARRAY\s+([0-9a-f]+) [0-9a-f]+ ([0-9a-f]+) ", sections)
        self.assertIsNotNone(m, "no .init_array")
        addr, size = int(m.group(1), 16), int(m.group(2), 16)
        self.assertEqual(size, 8, "a constructor was added (start_x86_64.S explains why not)")
        relocs = tool("readelf", "-r", "-W", BIN)
        r = re.search(rf"^0*{addr:x}\s+\S+\s+R_X86_64_RELATIVE\s+([0-9a-f]+)$", relocs, re.M)
        self.assertIsNotNone(r, f"no R_X86_64_RELATIVE at .init_array {addr:#x}")
        target = int(r.group(1), 16)
        names = [l.split()[2] for l in tool("nm", BIN).splitlines()
                 if len(l.split()) == 3 and int(l.split()[0], 16) == target]
        self.assertIn("frame_dummy", names)


class Runs(unittest.TestCase):
    OLD = None  # this machine's glibc

    def test_help(self):
        r = probe("--help", old=self.OLD)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.startswith("usage: gpuclusterctl-probe [options]"), r.stdout)

    def test_json_runs(self):
        j = probe_json("--no-cuda", "--no-rdma", old=self.OLD)
        self.assertEqual(j["schema"], 1)
        self.assertEqual(j["rdma"]["status"], "not_run")
        self.assertEqual(j["cuda"]["status"], "not_run")
        self.assertEqual(j["expectations"]["failed"], 0)

    def test_dlopen_error_is_reported(self):
        lib = "/nonexistent/libibverbs.so.1"
        j = probe_json("--no-cuda", "--sysfs-root", SYSFS_NONE, env={"GC_PROBE_LIBIBVERBS": lib},
                       old=self.OLD)
        self.assertEqual(j["rdma"]["status"], "absent")
        self.assertIs(j["rdma"]["verbs_loaded"], False)
        self.assertEqual(j["rdma"]["verbs_reason"],
                         f"{lib} not loadable: {lib}: cannot open shared object file: "
                         "No such file or directory")

    def test_dlsym_miss_is_reported(self):
        # dlopen succeeds, dlsym finds nothing, dlclose: all through GLIBC_2.2.5
        j = probe_json("--no-cuda", "--sysfs-root", SYSFS_NONE,
                       env={"GC_PROBE_LIBIBVERBS": "libc.so.6"}, old=self.OLD)
        self.assertIs(j["rdma"]["verbs_loaded"], False)
        self.assertEqual(j["rdma"]["verbs_reason"], "libc.so.6 lacks symbol ibv_get_device_list")

    def test_real_libibverbs_loads(self):
        if self.OLD:
            self.skipTest("this machine's libibverbs needs this machine's glibc")
        try:
            ctypes.CDLL("libibverbs.so.1")
        except OSError:
            self.skipTest("libibverbs.so.1 is not installed here")
        j = probe_json("--no-cuda", "--sysfs-root", SYSFS_NONE)
        self.assertEqual(j["rdma"]["verbs_reason"], "")
        self.assertIs(j["rdma"]["verbs_loaded"], True)


@unittest.skipUnless(os.environ.get("GC_PROBE_OLD_GLIBC"),
                     "GC_PROBE_OLD_GLIBC=DIR not set (docs/probe.md: an older glibc to run under)")
class RunsOnOldGlibc(Runs):
    """The same runs under an older glibc's ld.so and libraries:
    GC_PROBE_OLD_GLIBC=DIR holds its ld-linux-x86-64.so.2, libc.so.6 and
    libdl.so.2 (e.g. Debian 11's libc6 package unpacked, glibc 2.31)."""
    OLD = os.environ.get("GC_PROBE_OLD_GLIBC")

    def test_dl_bind_to_libdl(self):
        # below 2.34 the pinned dl* must come from libdl.so.2, the start from libc
        r = probe("--json", "--no-cuda", "--sysfs-root", SYSFS_NONE, old=self.OLD,
                  env={"GC_PROBE_LIBIBVERBS": "libc.so.6", "LD_DEBUG": "bindings"})
        self.assertEqual(r.returncode, 5, r.stderr[-2000:])
        got = {}
        for m in re.finditer(r"to (\S+) \[0\]: normal symbol `(\w+)' \[(GLIBC_[\d.]+)\]", r.stderr):
            got[m.group(2)] = (os.path.basename(m.group(1)), m.group(3))
        self.assertEqual({k: got.get(k) for k in ("__libc_start_main", "dlopen", "dlsym", "dlclose")},
                         {"__libc_start_main": ("libc.so.6", "GLIBC_2.2.5"),
                          "dlopen": ("libdl.so.2", "GLIBC_2.2.5"),
                          "dlsym": ("libdl.so.2", "GLIBC_2.2.5"),
                          "dlclose": ("libdl.so.2", "GLIBC_2.2.5")})


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: test_probe_portable.py PATH/TO/gpuclusterctl-probe-portable")
    BIN = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
