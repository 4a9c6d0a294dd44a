#!/bin/bash
# device-soak-bundle.sh - what scripts/soak.py needs on the 16-core GPU machine
# and that machine lacks (nothing can be installed there): our two binaries,
# OpenSSH's sshd/ssh-keygen/ssh, the lab's vcsim (tests/sim/vcsim.sh build),
# their shared libraries from this Debian 12 machine (glibc's own excepted)
# and Debian's pure-Python PyYAML for tests/sim/lab_spec.py.
# Output: .device/soak.tar.xz (git-ignored; `carry` .device).
#
#   scripts/device-soak-bundle.sh && run carry=[".device"] command="scripts/device-soak.sh ..."
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=.device/soak
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/py"
cmake --build build -j2 --target gpuclusterctl >/dev/null
tests/sim/vcsim.sh build >/dev/null
cp build/src/cli/gpuclusterctl build/src/cli/gpuclusterctl-online "$out/bin/"
cp /usr/sbin/sshd /usr/bin/ssh-keygen /usr/bin/ssh .lab/vcsim/bin/vcsim "$out/bin/"
scripts/bundle-libs.sh "$out/lib" "$out"/bin/*
cp -r /usr/lib/python3/dist-packages/yaml "$out/py/"
rm -f "$out"/py/yaml/_yaml*.so
/usr/bin/ldd --version 2>&1 | sed -n 1p >"$out/glibc.txt"
git rev-parse --short HEAD >"$out/commit.txt"
tar -C .device -cJf .device/soak.tar.xz soak
rm -rf "$out"
ls -l .device/soak.tar.xz
