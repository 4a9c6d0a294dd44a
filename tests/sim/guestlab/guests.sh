#!/usr/bin/env bash
# guests.sh - the local lab's real Linux guests: one QEMU/TCG Debian 12 VM per
# spec guest, booted from the cached image (image.sh).  Called by
# scripts/lab.sh (start --spec, stop, status, guest-reset); docs/lab.md
# "Guest VMs".
#
#   guests.sh start SPEC PORT [N]   boot the first N spec guests (all when N is
#                                   absent; 0: none) and wait for their SSH
#   guests.sh stop                  stop every guest and the hub
#   guests.sh status                list the guests (exit 3 if one is down)
#   guests.sh reset [VM...]         fresh overlay + reboot (all guests by default)
#
# Lab dir: $GC_LAB_DIR (set by lab.sh).  Per guest, $GC_LAB_DIR/guests/<vm>/:
#   overlay.qcow2 (on the cached rootfs.qcow2), seed.tar (the seed disk),
#   ssh_host_{ed25519,ecdsa}_key{,.pub}, console.log (serial console),
#   qemu.pid, rdma.sock (its end of the hub), info (address port index).
# Lab-wide: guest_key{,.pub} (users gclab and gcpw), guest_password (gcpw's
# sudo password), known_hosts ([address]:port lines of every guest),
# client_configuration_token.tok, the stand-in .run installer and OFED
# archive, guests/hub.*.
# SSH: hostfwd on the spec guest address, port = lab port + 10000.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
lab=${GC_LAB_DIR:?GC_LAB_DIR must be set (scripts/lab.sh sets it)}
gdir=$lab/guests
qemu=${GC_QEMU:-qemu-system-x86_64}
boot_timeout=${GC_LAB_GUEST_TIMEOUT:-300}
# The guests' kernel command line.  no_timer_check: a TCG vCPU starved of
# the host's CPU (eight guests booting at once on two cores) can miss the
# timer interrupts that the kernel's early IO-APIC timer check counts, and
# the kernel then panics "IO-APIC + timer doesn't work!" (seen in a guest
# soak, 2026-12-04, docs/lab.md).  The parameter skips that check; the
# kernel's own documentation: "Disables the code which tests for broken
# timer IRQ sources" (Documentation/admin-guide/kernel-parameters.txt).
# Keep it equal to test_kvmhost.py's QEMU_APPEND and image.sh's EFI cmdline.
kernel_cmdline="root=LABEL=gclab-root rw console=ttyS0 net.ifnames=0 panic=-1 no_timer_check"
py=/usr/bin/python3

die() { echo "lab: $*" >&2; exit 1; }

ssh_opts() {
	echo -o BatchMode=yes -o ConnectTimeout=5 -o UserKnownHostsFile="$lab/known_hosts" \
		-o StrictHostKeyChecking=yes -o LogLevel=ERROR -i "$lab/guest_key"
}

qemu_pid() { # $1 vm: the pid of its running QEMU
	local f=$gdir/$1/qemu.pid pid
	[ -f "$f" ] || return 1
	pid=$(cat "$f" 2>/dev/null) || return 1
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$gdir/$1/overlay.qcow2" || return 1
	echo "$pid"
}

hub_pid() {
	local pid
	pid=$(cat "$gdir/hub.pid" 2>/dev/null) || return 1
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$here/hub.py $gdir" || return 1
	echo "$pid"
}

start_hub() {
	hub_pid >/dev/null && return 0
	rm -f "$gdir/hub.sock" # a dead hub's socket is not a sign the new one listens
	setsid "$py" "$here/hub.py" "$gdir" </dev/null >>"$gdir/hub.log" 2>&1 &
	echo $! >"$gdir/hub.pid"
	for _ in $(seq 50); do
		[ -S "$gdir/hub.sock" ] && return 0
		sleep 0.1
	done
	die "the RDMA hub did not start (see $gdir/hub.log)"
}

lab_secrets() {
	[ -f "$lab/guest_key" ] || ssh-keygen -q -t ed25519 -N '' -C gclab-guest -f "$lab/guest_key"
	if [ ! -s "$lab/guest_password" ]; then
		(umask 077; head -c 18 /dev/urandom | base64 | tr -d '/+=\n' >"$lab/guest_password")
	fi
	[ -s "$lab/client_configuration_token.tok" ] ||
		echo "gclab-client-configuration-token-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')" \
			>"$lab/client_configuration_token.tok"
}

# The seed disk of one guest: a tar archive of files at their final paths,
# owners and modes, unpacked over / by /usr/lib/gc-lab/seed at every boot.
write_seed() {
	local vm=$1 json=$2 d=$gdir/$1 s idx iface rdev u uid gid
	s=$d/seed
	rm -rf "$s"
	mkdir -p "$s/etc/ssh" "$s/etc/gc-lab" "$s/etc/systemd/network"
	for t in ed25519 ecdsa; do
		[ -f "$d/ssh_host_${t}_key" ] || ssh-keygen -q -t "$t" -N '' -C "root@$vm" -f "$d/ssh_host_${t}_key"
		install -m 600 "$d/ssh_host_${t}_key" "$s/etc/ssh/"
		install -m 644 "$d/ssh_host_${t}_key.pub" "$s/etc/ssh/"
	done
	echo "$vm" >"$s/etc/hostname"
	# uid/gid of the image's users (image.sh writes them)
	while read -r u uid gid; do
		mkdir -p "$s/home/$u/.ssh"
		install -m 600 "$lab/guest_key.pub" "$s/home/$u/.ssh/authorized_keys"
		# the guests reach each other with the lab's key (Open MPI starts the
		# ranks of `validate --mpirun` over SSH, as on every MPI cluster);
		# first contact is accepted: the guests reach nothing but each other
		install -m 600 "$lab/guest_key" "$s/home/$u/.ssh/gclab_key"
		printf '# gpuclusterctl lab: guest to guest (Open MPI launches over SSH)\nHost *\n\tIdentityFile ~/.ssh/gclab_key\n\tStrictHostKeyChecking accept-new\n\tBatchMode yes\n\tLogLevel ERROR\n' \
			>"$s/home/$u/.ssh/config"
		chmod 600 "$s/home/$u/.ssh/config"
		chown "$uid:$gid" "$s/home/$u/.ssh/authorized_keys" "$s/home/$u/.ssh/gclab_key" "$s/home/$u/.ssh/config"
	done <"$img/users"
	(umask 077; openssl passwd -6 -stdin <"$lab/guest_password" >"$s/etc/gc-lab/gcpw.hash")
	idx=$(jf "$json" index)
	iface=$(jf "$json" rdma_interface)
	rdev=$(jf "$json" rdma_device)
	"$py" -c 'import json, sys
g = json.loads(sys.argv[1])
print("{\"gpus\": [")
print(",\n".join(" " + json.dumps(x, sort_keys=True) for x in g["gpus"]))
print("]}")' "$json" >"$s/etc/gc-lab/gpu.json"
	printf 'IFACE=%s\nRDMA_DEV=%s\nMAC=%s\n' "$iface" "$rdev" "$(mac "$idx" 2)" >"$s/etc/gc-lab/rdma.env"
	printf '# gpuclusterctl lab: the management NIC (QEMU user-mode net)\n[Match]\nMACAddress=%s\n\n[Network]\nAddress=10.0.2.15/24\nGateway=10.0.2.2\nLinkLocalAddressing=no\nIPv6AcceptRA=no\n' \
		"$(mac "$idx" 1)" >"$s/etc/systemd/network/10-gclab-mgmt.network"
	printf '# gpuclusterctl lab: the management NIC\n[Match]\nMACAddress=%s\n\n[Link]\nName=eth0\n' \
		"$(mac "$idx" 1)" >"$s/etc/systemd/network/10-gclab-mgmt.link"
	printf '# gpuclusterctl lab: the RDMA NIC, named as the spec says\n[Match]\nMACAddress=%s\n\n[Link]\nName=%s\n' \
		"$(mac "$idx" 2)" "$iface" >"$s/etc/systemd/network/10-gclab-rdma.link"
	chmod 644 "$s"/etc/hostname "$s"/etc/gc-lab/gpu.json "$s"/etc/gc-lab/rdma.env "$s"/etc/systemd/network/*
	# files only (no directory entries): existing directories keep their metadata
	(cd "$s" && find . -type f -printf '%P\n' | sort |
		tar -c -f "$d/seed.tar" --numeric-owner --no-recursion -T -)
	rm -rf "$s"
}

jf() { "$py" -c 'import json, sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }
mac() { printf '52:54:00:67:%02x:%02x' "$1" "$2"; }

# Boot one guest (its overlay, seed and info must exist).  The overlay is
# the lab's to throw away (guest-reset makes a new one), so the guest's disk
# flushes are not passed on to the host's disk (cache=unsafe): dpkg's fsync
# per unpacked file otherwise waits on this machine's own disk each time.
# QEMU writes its qcow2 metadata out when it exits on SIGTERM (stop_one);
# an overlay whose QEMU was SIGKILLed may lack some, so it is not booted
# again (stop_one drops it, test_guest resets its killed guest).
boot() {
	local vm=$1 d=$gdir/$1 img addr port idx
	read -r addr port idx <"$d/info"
	img=$(cat "$d/image")
	rm -f "$d/rdma.sock" "$d/qemu.pid"
	: >"$d/console.log"
	"$qemu" -name "$vm" -accel tcg -machine pc -m 1024 -smp 1 \
		-nodefaults -no-user-config -display none \
		-kernel "$img/vmlinuz" -initrd "$img/initrd.img" \
		-append "$kernel_cmdline" \
		-drive "file=$d/overlay.qcow2,if=none,format=qcow2,cache=unsafe,id=root" \
		-device virtio-blk-pci,drive=root,serial=gclab-root \
		-drive "file=$d/seed.tar,if=none,format=raw,readonly=on,id=seed" \
		-device virtio-blk-pci,drive=seed,serial=gclab-seed \
		-netdev "user,id=mgmt,restrict=on,ipv6=off,hostfwd=tcp:$addr:$port-:22" \
		-device "virtio-net-pci,netdev=mgmt,mac=$(mac "$idx" 1)" \
		-netdev "dgram,id=rdma,local.type=unix,local.path=$d/rdma.sock,remote.type=unix,remote.path=$gdir/hub.sock" \
		-device "virtio-net-pci,netdev=rdma,mac=$(mac "$idx" 2)" \
		-device virtio-rng-pci \
		-serial "file:$d/console.log" -pidfile "$d/qemu.pid" -daemonize ||
		die "QEMU did not start guest $vm (port $addr:$port busy?)"
}

new_overlay() {
	local vm=$1 img=$2 d=$gdir/$1
	rm -f "$d/overlay.qcow2"
	qemu-img create -q -f qcow2 -b "$img/rootfs.qcow2" -F qcow2 "$d/overlay.qcow2"
	echo "$img" >"$d/image"
}

# Wait (bounded) until each named guest answers SSH as gclab.
wait_ssh() {
	local deadline=$((SECONDS + boot_timeout)) vm addr port idx pending
	pending=("$@")
	while [ ${#pending[@]} -gt 0 ]; do
		local left=()
		for vm in "${pending[@]}"; do
			read -r addr port idx <"$gdir/$vm/info"
			qemu_pid "$vm" >/dev/null || die "guest $vm: QEMU exited (console log: $gdir/$vm/console.log)"
			if grep -qE 'ALERT!|Kernel panic|Gave up waiting' "$gdir/$vm/console.log"; then
				tail -n 5 "$gdir/$vm/console.log" | sed 's/^/lab:   /' >&2
				die "guest $vm failed to boot (console log: $gdir/$vm/console.log)"
			fi
			# shellcheck disable=SC2046
			if ssh $(ssh_opts) -p "$port" "gclab@$addr" true </dev/null 2>/dev/null; then
				echo "lab: guest $vm answers SSH on $addr:$port"
			else
				left+=("$vm")
			fi
		done
		pending=("${left[@]+"${left[@]}"}")
		[ ${#pending[@]} -eq 0 ] && break
		if [ $SECONDS -ge $deadline ]; then
			for vm in "${pending[@]}"; do
				echo "lab: guest $vm did not answer SSH within ${boot_timeout}s; last console lines ($gdir/$vm/console.log):" >&2
				tail -n 5 "$gdir/$vm/console.log" | sed 's/^/lab:   /' >&2
			done
			die "guest(s) ${pending[*]} not up (GC_LAB_GUEST_TIMEOUT=${boot_timeout})"
		fi
		sleep 2
	done
}

write_known_hosts() {
	local vm addr port idx t
	: >"$lab/known_hosts.tmp"
	for d in "$gdir"/*/; do
		vm=$(basename "$d")
		[ -f "$d/info" ] || continue
		read -r addr port idx <"$d/info"
		for t in ed25519 ecdsa; do
			echo "[$addr]:$port $(cut -d' ' -f1,2 "$d/ssh_host_${t}_key.pub")" >>"$lab/known_hosts.tmp"
		done
	done
	mv "$lab/known_hosts.tmp" "$lab/known_hosts"
}

cmd_start() {
	local spec=$1 labport=$2 n=${3:-} json vm addr idx started=() want=()
	if [ "${n:-x}" = 0 ]; then
		# none asked for: stopped and forgotten, as start forgets guests no longer asked for
		cmd_stop >/dev/null
		[ -d "$gdir" ] && find "$gdir" -mindepth 1 -maxdepth 1 -type d -exec rm -rf {} +
		echo "lab: no guests (--guests 0)"
		return 0
	fi
	mapfile -t want < <("$py" "$root/tests/sim/lab_spec.py" guests "$spec" $n)
	[ ${#want[@]} -gt 0 ] || return 0
	command -v "$qemu" >/dev/null || die "$qemu not found (scripts/setup.sh installs qemu-system-x86)"
	if [ "$(id -u)" = 0 ]; then
		img=$("$here/image.sh" build) || die "cannot build the guest image"
	else
		img=$("$here/image.sh" path) || die "no guest image (build it once as root: $here/image.sh build)"
	fi
	mkdir -p "$gdir"
	lab_secrets
	cp "$img/NVIDIA-Linux-x86_64-535.183.01-grid.run" "$img/MLNX_OFED_LINUX-23.10-1.1.9.0-debian12.1-x86_64.tgz" "$lab/"
	# a .run of another driver version, where a guest's driver.runfile names one
	local ver run
	for ver in $("$py" "$root/tests/sim/lab_spec.py" runfiles "$spec"); do
		run=$("$here/image.sh" runfile "$ver") || die "cannot build the stand-in .run for driver $ver"
		cp "$run" "$lab/"
	done
	# guests of this spec beyond N, or of another spec: stopped and forgotten
	for d in "$gdir"/*/; do
		[ -d "$d" ] || continue
		vm=$(basename "$d")
		printf '%s\n' "${want[@]}" | grep -qF "\"name\": \"$vm\"" && continue
		stop_one "$vm"
		rm -rf "${gdir:?}/$vm"
	done
	start_hub
	for json in "${want[@]}"; do
		vm=$(jf "$json" name)
		addr=$(jf "$json" address)
		idx=$(jf "$json" index)
		[[ $addr == 127.* ]] || die "guest $vm: address '$addr' is not on loopback (127.0.0.0/8): the lab only forwards loopback"
		mkdir -p "$gdir/$vm"
		[ ${#gdir} -lt 90 ] || die "lab dir too long for unix socket paths: $gdir (choose a shorter GC_LAB_DIR)"
		echo "$addr $((labport + 10000)) $idx" >"$gdir/$vm/info.new"
		write_seed "$vm" "$json"
		if qemu_pid "$vm" >/dev/null && cmp -s "$gdir/$vm/info" "$gdir/$vm/info.new" &&
			[ "$(cat "$gdir/$vm/image")" = "$img" ]; then
			rm -f "$gdir/$vm/info.new"
			echo "lab: guest $vm already running (pid $(qemu_pid "$vm"))"
			continue
		fi
		stop_one "$vm"
		mv "$gdir/$vm/info.new" "$gdir/$vm/info"
		[ -f "$gdir/$vm/overlay.qcow2" ] && [ "$(cat "$gdir/$vm/image" 2>/dev/null)" = "$img" ] ||
			new_overlay "$vm" "$img"
		boot "$vm"
		echo "lab: booting guest $vm (pid $(qemu_pid "$vm")) on $addr:$((labport + 10000)), console $gdir/$vm/console.log"
		started+=("$vm")
	done
	write_known_hosts
	[ ${#started[@]} -eq 0 ] || wait_ssh "${started[@]}"
}

stop_one() {
	local vm=$1 pid
	pid=$(qemu_pid "$vm") || return 0
	kill "$pid" 2>/dev/null || true
	for _ in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	if kill -0 "$pid" 2>/dev/null; then
		kill -9 "$pid" 2>/dev/null || true
		rm -f "$gdir/$vm/overlay.qcow2" # its metadata may not all be written (boot)
	fi
	rm -f "$gdir/$vm/qemu.pid" "$gdir/$vm/rdma.sock"
	echo "lab: stopped guest $vm (pid $pid)"
}

cmd_stop() {
	local d pid
	[ -d "$gdir" ] || return 0
	for d in "$gdir"/*/; do
		[ -d "$d" ] && stop_one "$(basename "$d")"
	done
	if pid=$(hub_pid); then
		kill "$pid" 2>/dev/null || true
		echo "lab: stopped the RDMA hub (pid $pid)"
	fi
	rm -f "$gdir/hub.pid" "$gdir/hub.sock"
}

cmd_status() {
	local d vm pid addr port idx rc=0
	[ -d "$gdir" ] || return 0
	for d in "$gdir"/*/; do
		[ -f "$d/info" ] || continue
		vm=$(basename "$d")
		read -r addr port idx <"$d/info"
		if pid=$(qemu_pid "$vm"); then
			echo "lab: guest $vm running (pid $pid, ssh $addr:$port)"
		else
			echo "lab: guest $vm not running (ssh $addr:$port)"
			rc=3
		fi
	done
	if pid=$(hub_pid); then echo "lab: RDMA hub running (pid $pid, $gdir/hub.sock)"; fi
	return $rc
}

cmd_reset() {
	local vm vms=("$@") img
	if [ ${#vms[@]} -eq 0 ]; then
		for d in "$gdir"/*/; do [ -f "$d/info" ] && vms+=("$(basename "$d")"); done
	fi
	[ ${#vms[@]} -gt 0 ] || die "no guests in $gdir"
	for vm in "${vms[@]}"; do
		[ -f "$gdir/$vm/info" ] || die "no guest '$vm' in this lab ($gdir)"
	done
	start_hub
	for vm in "${vms[@]}"; do
		img=$(cat "$gdir/$vm/image")
		stop_one "$vm" >/dev/null
		new_overlay "$vm" "$img"
		boot "$vm"
		echo "lab: guest $vm reset to a fresh overlay, rebooting"
	done
	wait_ssh "${vms[@]}"
}

[ $# -ge 1 ] || { sed -n '2,20p' "$0" >&2; exit 2; }
verb=$1
shift
case $verb in
start) [ $# -ge 2 ] || die "usage: guests.sh start SPEC PORT [N]"; cmd_start "$@" ;;
stop) cmd_stop ;;
status) cmd_status ;;
reset) cmd_reset "$@" ;;
*) sed -n '2,20p' "$0" >&2; exit 2 ;;
esac
