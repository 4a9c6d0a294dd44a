#!/usr/bin/python3
"""test_install.py - what `cmake --install` lays out, used as a user would.

    test_install.py CMAKE BUILD_DIR PORTABLE(0|1)      (ctest -R install)

Installs the build into a temporary prefix, then checks: exactly the files
the README lists, nothing else; the programs run from there (and `validate`
finds the probe it uploads under libexec/); `man -l` renders the man page
without a warning and its EXIT STATUS table; bash completion, sourced and
called as bash calls it (COMP_WORDS/COMP_CWORD, then COMPREPLY), completes
commands, a command's options, option arguments and --target names from the
spec; zsh completion offers the same through a stand-in compadd.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

CMAKE, BUILD, PORTABLE = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
SRC = os.getcwd()
SCHEMAS = sorted(f for f in os.listdir(os.path.join(SRC, "specs")) if f.endswith(".schema.json"))


class Installed(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.prefix = tempfile.mkdtemp(prefix="gc-install-")
        r = subprocess.run([CMAKE, "--install", BUILD, "--prefix", cls.prefix],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise AssertionError(f"cmake --install failed: {r.stdout}{r.stderr}")
        cls.env = dict(os.environ, PATH=os.path.join(cls.prefix, "bin") + ":/usr/bin:/bin",
                       NO_COLOR="1", LC_ALL="C.UTF-8")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.prefix, ignore_errors=True)

    def run_in(self, *argv, **kw):
        return subprocess.run(argv, capture_output=True, text=True, env=self.env, cwd=SRC,
                              timeout=60, **kw)

    def test_every_file_and_nothing_else(self):
        want = ["bin/gpuclusterctl", "bin/gpuclusterctl-probe",
                "libexec/gpuclusterctl/gpuclusterctl-online",
                "share/bash-completion/completions/gpuclusterctl",
                "share/man/man1/gpuclusterctl.1",
                "share/zsh/site-functions/_gpuclusterctl"]
        want += ["share/gpuclusterctl/specs/" + f for f in SCHEMAS]
        if PORTABLE:
            want.append("libexec/gpuclusterctl/gpuclusterctl-probe")
        got = [os.path.relpath(os.path.join(d, f), self.prefix)
               for d, _, fs in os.walk(self.prefix) for f in fs]
        self.assertEqual(sorted(got), sorted(want))
        self.assertEqual(set(SCHEMAS), {"gpuclusterctl-v1.schema.json", "observed-v1.schema.json",
                                        "check-v1.schema.json", "graph-v1.schema.json",
                                        "plan-v1.schema.json", "apply-v1.schema.json",
                                        "validate-v1.schema.json", "probe-v1.schema.json",
                                        "discover-v1.schema.json"})
        for f in want:
            p = os.path.join(self.prefix, f)
            exe = f.startswith(("bin/", "libexec/"))
            self.assertEqual(os.access(p, os.X_OK), exe, f)
            if not exe:
                with open(p, "rb") as a, open(self.source_of(f), "rb") as b:
                    self.assertEqual(a.read(), b.read(), f)

    @staticmethod
    def source_of(f):
        base = os.path.basename(f)
        if f.startswith("share/gpuclusterctl/specs/"):
            return os.path.join(SRC, "specs", base)
        return os.path.join(SRC, {"gpuclusterctl.1": "docs/gpuclusterctl.1",
                                  "gpuclusterctl": "completions/gpuclusterctl.bash",
                                  "_gpuclusterctl": "completions/_gpuclusterctl"}[base])

    def test_front_maps_no_network_library_and_hands_over(self):
        ldd = subprocess.run(["ldd", os.path.join(self.prefix, "bin/gpuclusterctl")],
                             capture_output=True, text=True, check=True).stdout
        for lib in ("libssh2", "libcurl", "libgnutls", "libvirt"):
            self.assertNotIn(lib, ldd)
        # apply is the online binary's: the front becomes it (same pid, same argv)
        r = self.run_in("gpuclusterctl", "apply", "--help")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.startswith("usage: gpuclusterctl apply [options] SPEC"))
        # without it, only the offline commands work, and the error says so
        online = os.path.join(self.prefix, "libexec/gpuclusterctl/gpuclusterctl-online")
        os.rename(online, online + ".away")
        try:
            r = self.run_in("gpuclusterctl", "apply", "--help")
            self.assertEqual(r.returncode, 1)
            self.assertIn("gpuclusterctl-online is not installed beside this gpuclusterctl", r.stderr)
            r = self.run_in("gpuclusterctl", "plan", "--offline", "examples/roce-passthrough.yaml")
            self.assertEqual(r.returncode, 2, r.stderr)
        finally:
            os.rename(online + ".away", online)

    def test_programs_run_from_the_prefix(self):
        r = self.run_in("gpuclusterctl", "version")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.splitlines()[0], "gpuclusterctl 0.1.0")
        r = self.run_in("gpuclusterctl-probe", "--help")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.startswith("usage: gpuclusterctl-probe [options]"), r.stdout)
        if not PORTABLE:
            return  # no portable probe in this build (docs/probe.md says why)
        # validate finds the probe it uploads beside itself (../libexec/gpuclusterctl/);
        # with no guest among the targets it has nothing to check (exit 5)
        r = self.run_in("gpuclusterctl", "validate", "--skip", "config,pairs", "--target", "esx01",
                        "--state-dir", os.path.join(self.prefix, "state"),
                        "examples/roce-passthrough.yaml")
        self.assertEqual((r.returncode, r.stdout, r.stderr),
                         (5, "0 checks: 0 passed, 0 failed, 0 skipped in 0.0 s\n",
                          "gpuclusterctl: nothing to check: every check was skipped or left out "
                          "(exit 5)\n"))

    def test_man_page(self):
        page = os.path.join(self.prefix, "share/man/man1/gpuclusterctl.1")
        r = subprocess.run(["man", "--warnings", "-l", page], capture_output=True, text=True,
                           env=dict(self.env, MANWIDTH="80"), timeout=60)
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        out = r.stdout
        self.assertTrue(out.startswith("GPUCLUSTERCTL(1)"), out[:200])
        self.assertIn("gpuclusterctl 0.1.0", out.splitlines()[-1])  # the version in the footer
        table = out[out.index("EXIT STATUS"):out.index("ENVIRONMENT")]
        rows = [l.split()[:2] for l in table.splitlines() if l[7:8].isdigit()]
        self.assertEqual([r[0] for r in rows], ["0", "1", "2", "5", "64", "130"], table)
        self.assertRegex(table, r"\n +2 +plan +Success, and the plan has changes\.\n")
        self.assertRegex(table, r"\n +5 +validate, probe +Nothing to check: ")

    # ------------------------------------------------------------ bash
    def bash_complete(self, *words, cword=None):
        """COMPREPLY of the installed completion for COMP_WORDS=words."""
        script = os.path.join(self.prefix, "share/bash-completion/completions/gpuclusterctl")
        cword = len(words) - 1 if cword is None else cword
        quoted = " ".join("'%s'" % w for w in words)
        r = self.run_in("bash", "--norc", "--noprofile", "-c",
                        f"source '{script}' && COMP_WORDS=({quoted}) && COMP_CWORD={cword} && "
                        "_gpuclusterctl && printf '%s\\n' \"${COMPREPLY[@]}\"")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")
        return [l for l in r.stdout.splitlines() if l]

    def test_bash_commands(self):
        self.assertEqual(self.bash_complete("gpuclusterctl", "pl"), ["plan"])
        self.assertEqual(self.bash_complete("gpuclusterctl", "v"), ["validate", "version"])
        self.assertEqual(self.bash_complete("gpuclusterctl", "--"), ["--help", "--version"])
        self.assertEqual(self.bash_complete("gpuclusterctl", "help", "ch"), ["check"])
        self.assertEqual(self.bash_complete("gpuclusterctl", "disc"), ["discover"])
        self.assertEqual(self.bash_complete("gpuclusterctl", "discover", "--o"), ["--out"])
        self.assertEqual(self.bash_complete("gpuclusterctl", "discover", "exam"), ["examples/"])
        # the hidden helper is not a command
        self.assertEqual(self.bash_complete("gpuclusterctl", "_"), [])

    def test_bash_flags_of_a_command(self):
        self.assertEqual(self.bash_complete("gpuclusterctl", "plan", "--o"),
                         ["--offline", "--observed", "--only", "--out"])
        self.assertEqual(self.bash_complete("gpuclusterctl", "validate", "--s"),
                         ["--skip", "--state-dir"])
        self.assertEqual(self.bash_complete("gpuclusterctl", "probe", "--no-"),
                         ["--no-cuda", "--no-rdma", "--no-bw", "--no-tools"])
        self.assertEqual(self.bash_complete("gpuclusterctl", "check", "-"),
                         ["--json", "-h", "--help"])

    def test_bash_option_arguments_and_spec(self):
        spec = "examples/roce-pair.yaml"
        self.assertEqual(self.bash_complete("gpuclusterctl", "plan", "--target", "", spec, cword=3),
                         ["esx01", "esx02", "vcenter", "sn2700", "worker-01", "worker-02"])
        self.assertEqual(self.bash_complete("gpuclusterctl", "apply", spec, "--target", "w"),
                         ["worker-01", "worker-02"])
        self.assertEqual(self.bash_complete("gpuclusterctl", "plan", spec, "--target", "=", "esx"),
                         ["esx01", "esx02"])
        self.assertEqual(self.bash_complete("gpuclusterctl", "plan", "--only", "esxi,s"),
                         ["esxi,switch"])
        self.assertEqual(self.bash_complete("gpuclusterctl", "validate", "--skip", "p"), ["pairs"])
        self.assertEqual(self.bash_complete("gpuclusterctl", "plan", "--parallelism", ""), [])
        # SPEC: *.yaml, *.yml and directories (readline sorts what it shows)
        self.assertEqual(sorted(self.bash_complete("gpuclusterctl", "plan", "examples/roce-p")),
                         ["examples/roce-pair.yaml", "examples/roce-passthrough.yaml"])
        self.assertEqual(self.bash_complete("gpuclusterctl", "check", "exam"), ["examples/"])
        # apply: also a saved plan (*.json), never the .txt beside it
        self.assertEqual(self.bash_complete("gpuclusterctl", "apply", "tests/data/plan/roce-passthrough"),
                         ["tests/data/plan/roce-passthrough.json"])

    # ------------------------------------------------------------ zsh
    def zsh_complete(self, *words, current=None):
        """What the installed _gpuclusterctl hands compadd (a stand-in that,
        like compadd, keeps the words starting with the current one)."""
        if shutil.which("zsh") is None:
            self.fail("zsh is not installed (scripts/setup.sh installs it)")
        fdir = os.path.join(self.prefix, "share/zsh/site-functions")
        current = len(words) if current is None else current
        quoted = " ".join("'%s'" % w for w in words)
        r = self.run_in("zsh", "-f", "-c",
                        "compadd() { while [[ $1 != -- ]]; do shift; done; shift; "
                        "print -rl -- ${(M)@:#${words[CURRENT]##*,}*} }; compset() { : }; "
                        "_files() { print -r -- \"_files $*\" }; "
                        f"fpath=('{fdir}' $fpath); autoload -Uz _gpuclusterctl; "
                        f"words=({quoted}); CURRENT={current}; _gpuclusterctl")
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        return r.stdout.splitlines()

    def test_zsh(self):
        self.assertEqual(self.zsh_complete("gpuclusterctl", "pl"), ["plan"])
        self.assertEqual(self.zsh_complete("gpuclusterctl", "plan", "--o"),
                         ["--offline", "--observed", "--only", "--out"])
        self.assertEqual(self.zsh_complete("gpuclusterctl", "plan", "--target", "w",
                                           "examples/roce-pair.yaml", current=4),
                         ["worker-01", "worker-02"])
        self.assertEqual(self.zsh_complete("gpuclusterctl", "plan", "--only", "esxi,s"), ["switch"])
        self.assertEqual(self.zsh_complete("gpuclusterctl", "plan", "ex"),
                         ["_files -g *.(yaml|yml)(-.)"])
        self.assertEqual(self.zsh_complete("gpuclusterctl", "apply", "--state-dir", ""), ["_files -/"])


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
