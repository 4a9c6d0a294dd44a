#!/usr/bin/env bash
# setup.sh - install the Debian 12 packages that building, the local lab and
# the test suite need.  Idempotent; needs root (or sudo) on a fresh machine.
#
#   scripts/setup.sh            # build + lab + tests (fuzzers included)
set -euo pipefail

packages=(
	# build
	build-essential cmake pkg-config git
	libyaml-dev libjson-c-dev libssh2-1-dev libssl-dev libcurl4-openssl-dev libxml2-dev libvirt-dev
	# tests (python3-jsonschema: every --json against specs/; graphviz: graph --dot
	# rendered; man-db and zsh: the installed man page and completions, tests/install)
	libcmocka-dev libibverbs-dev python3 python3-yaml python3-jsonschema graphviz man-db zsh
	# the fuzzers (scripts/test.sh's fuzz pass, scripts/fuzz.sh): clang, its
	# libFuzzer and sanitizer runtimes, llvm-symbolizer for readable reports
	clang libclang-rt-14-dev llvm
	# validate: its JUnit XML checked against the schema (xmllint), Open MPI for
	# the MPI bandwidth test of the probe
	libxml2-utils openmpi-bin
	# the local lab: a real OpenSSH server on loopback behind our simulated shells
	# (procps: ps/pgrep in scripts/lab.sh and the lab tests; openssl: test
	# certificates; iproute2: ss, the listener's accept queue in tests/sim/test_lab.sh)
	openssh-server openssh-client procps openssl iproute2
	# the lab's vCenter: a simulator built from Debian's govmomi (tests/sim/vcsim.sh);
	# the apply bench's light lab SSH server (tests/sim/labsshd): x/crypto/ssh
	golang-go golang-github-vmware-govmomi-dev golang-golang-x-crypto-dev
	# the lab's real Linux guests (tests/sim/guestlab): QEMU/TCG VMs booted from
	# a Debian 12 image built with debootstrap (ext4 via mkfs.ext4 -d, qcow2),
	# a local APT repository (apt-ftparchive, dpkg-deb), stand-in kernel
	# modules built against the image kernel's headers (image.sh installs the
	# exact linux-headers-<version> itself when the metapackage's differs)
	qemu-system-x86 qemu-utils debootstrap e2fsprogs apt-utils dpkg-dev
	linux-headers-amd64 kmod
	# the KVM path: a real libvirtd with QEMU (started by the tests, no
	# systemd needed; installing it also upgrades some systemd packages) and
	# OVMF, which the domains' EFI firmware resolves to
	libvirt-daemon-system libvirt-daemon-driver-qemu libvirt-clients ovmf tini
	# the lab image's EFI disk for a libvirt-defined VM (tests/sim/guestlab/image.sh):
	# systemd's EFI stub for a unified kernel image, FAT and GPT without loop devices
	systemd-boot-efi dosfstools mtools fdisk
	# the NoCloud seed the libvirt driver writes (an ISO 9660 image), and
	# isoinfo, which the tests read it back with
	libisofs-dev genisoimage
)

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "setup: all ${#packages[@]} packages present"
	exit 0
fi

sudo=""
if [ "$(id -u)" != 0 ]; then
	command -v sudo >/dev/null || { echo "setup: run as root (missing: ${missing[*]})" >&2; exit 1; }
	sudo=sudo
fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
