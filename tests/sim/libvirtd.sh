#!/usr/bin/env bash
# libvirtd.sh - make sure a real libvirtd (with virtlogd) answers on
# qemu:///system, starting both by hand when nothing runs them (this lab has
# no systemd).  Idempotent; prints "started" or "running".  Needs root and
# the packages of scripts/setup.sh (libvirt-daemon-system, -driver-qemu, tini).
#
# libvirtd runs under `tini -s`, a subreaper: the QEMU processes libvirtd
# starts to probe capabilities daemonize, and where PID 1 reaps nothing (a
# container's init) they stay zombies that libvirtd then waits on for seconds
# per probe ("virProcessKillPainfully").  And it runs in its own mount
# namespace with a root-only (0600) node of /dev/null bound over /dev/kvm: this
# machine's /dev/kvm (a PVM backend that cannot run a stock kernel) made
# libvirtd re-probe QEMU on every define (~4-7 s each, its capabilities
# cache rewritten each time).  libvirt keeps the cache while "the QEMU user
# can open /dev/kvm read-write" matches what the cached probe found; /dev/null
# (0666) bound there could be opened, so the cache never matched.  Now a
# define takes milliseconds.  It stays a character device: libvirt moves the
# mounts under /dev into each domain's own /dev, and refuses to move a
# regular file there ("Unable to move ... mount to /dev/kvm").  The lab's
# domains are TCG (hosts[].accel: tcg).
set -euo pipefail

up() { virsh -q -c qemu:///system version >/dev/null 2>&1; }

if up; then
	echo running
	exit 0
fi
pgrep -x virtlogd >/dev/null || virtlogd -d
# a VM on a network writes its MACs under dnsmasq's directory even where the
# network runs no dnsmasq (the lab's isolated networks, <dns enable='no'/>)
mkdir -p /var/lib/libvirt/dnsmasq
if ! pgrep -x libvirtd >/dev/null; then
	mkdir -p /var/log/libvirt
	# (where mknod is not allowed, /dev/null itself: slow defines, but they work)
	kvm_hide='if [ -e /dev/kvm ]; then rm -f /run/gc-lab-nokvm
		if mknod -m 600 /run/gc-lab-nokvm c 1 3; then mount --bind /run/gc-lab-nokvm /dev/kvm
		else mount --bind /dev/null /dev/kvm; fi; fi; exec libvirtd'
	setsid tini -s -- unshare -m sh -c "$kvm_hide" </dev/null \
		>>/var/log/libvirt/gc-lab-libvirtd.log 2>&1 &
fi
for _ in $(seq 100); do
	if up; then
		echo started
		exit 0
	fi
	sleep 0.1
done
echo "libvirtd.sh: libvirtd did not answer on qemu:///system" >&2
exit 1
