#!/usr/bin/env bash
# libvirtd.sh - make sure a real libvirtd (with virtlogd) answers on
# qemu:///system, starting both by hand when nothing runs them (this lab has
# no systemd).  Idempotent; prints "started" or "running".  Needs root and
# the packages of scripts/setup.sh (libvirt-daemon-system, -driver-qemu).
set -euo pipefail

up() { virsh -q -c qemu:///system version >/dev/null 2>&1; }

if up; then
	echo running
	exit 0
fi
pgrep -x virtlogd >/dev/null || virtlogd -d
pgrep -x libvirtd >/dev/null || libvirtd -d
for _ in $(seq 100); do
	if up; then
		echo started
		exit 0
	fi
	sleep 0.1
done
echo "libvirtd.sh: libvirtd did not answer on qemu:///system" >&2
exit 1
