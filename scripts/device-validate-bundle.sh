#!/bin/bash
# device-validate-bundle.sh - put together what `validate` on the GPU machine
# needs and that machine lacks (nothing can be installed there): our
# gpuclusterctl and portable probe, OpenSSH's sshd/ssh-keygen, and the shared
# libraries of both from this Debian 12 machine (glibc's own are left out:
# the GPU machine's glibc is used, and must be 2.36 or newer - the script
# there checks).  Output: .device/bundle.tar.xz (git-ignored; `carry` .device).
#
#   scripts/device-validate-bundle.sh && run carry=[".device"] command=scripts/device-validate.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=.device/bundle
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"
cmake --build build -j2 --target gpuclusterctl gpuclusterctl-probe-portable >/dev/null
cp build/src/cli/gpuclusterctl build/src/cli/gpuclusterctl-online build/src/probe/gpuclusterctl-probe-portable "$out/bin/"
cp /usr/sbin/sshd /usr/bin/ssh-keygen "$out/bin/"
scripts/bundle-libs.sh "$out/lib" "$out"/bin/*
/usr/bin/ldd --version 2>&1 | sed -n 1p > "$out/glibc.txt"

# ICU's data alone is 31 MB (libxml2's dependency): travel compressed
tar -C .device -cJf .device/bundle.tar.xz bundle
rm -rf "$out"
ls -l .device/bundle.tar.xz
