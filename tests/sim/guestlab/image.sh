#!/usr/bin/env bash
# image.sh - build (once) and cache the Debian 12 guest image of the local lab.
#
#   tests/sim/guestlab/image.sh build     build if needed; print the cache dir
#   tests/sim/guestlab/image.sh path      print the cache dir (exit 1 if not built)
#   tests/sim/guestlab/image.sh key       print the cache key
#   tests/sim/guestlab/image.sh runfile VERSION
#                                         build (once) and print a stand-in .run
#                                         of another driver version
#   tests/sim/guestlab/image.sh clean     remove cached images other than the
#                                         current one (and their stage 1)
#
# Cache: ${GC_GUEST_CACHE:-/var/cache/gpuclusterctl/guest-image}/<key>/ holds
#   vmlinuz, initrd.img   the image's own Debian kernel (direct kernel boot)
#   rootfs.qcow2          ext4 root filesystem, whole disk, label gclab-root
#   efi.qcow2             the same root on a GPT disk behind an EFI system
#                         partition whose \EFI\BOOT\BOOTX64.EFI is a unified
#                         kernel image (systemd's EFI stub + the kernel, initrd
#                         and command line): what OVMF boots when libvirt
#                         defines a lab VM from the spec (tests/integration/test_kvm.py)
#   kernel-version        e.g. 6.1.0-41-amd64
#   NVIDIA-Linux-x86_64-535.183.01-grid.run   the stand-in .run installer
#   MLNX_OFED_LINUX-23.10-1.1.9.0-debian12.1-x86_64.tgz   the stand-in OFED archive
#   repo.txt              the packages of the image's local APT repository
#   users                 "name uid gid" of the lab users gclab and gcpw (for the seed)
# <key> hashes the package lists, the stand-in sources and this script, so
# a change to any of them builds a new image beside the old one.
#
# Two stages, each under flock (two builders never race):
#  1. stage1-<key1>/root: debootstrap --variant=minbase of bookworm from the
#     host's own mirror (/etc/apt/sources.list.d/debian.sources), the base
#     packages and linux-image-amd64 installed, the optional packages
#     (rdma-core, perftest, ... with all their dependencies) downloaded as
#     real .debs but not installed.  key1 hashes the package lists only, so
#     changing a stand-in does not debootstrap again (80 s - 3 min).
#  2. <key>/: a copy of stage 1 plus the lab's "hardware" stand-ins
#     (standins/), the local APT repository /srv/gc-lab-repo (the downloaded
#     .debs plus the stand-in nvidia-driver and nvidia-container-toolkit
#     .debs, indexed by apt-ftparchive), the kernel modules nvidia.ko and
#     nvidia_peermem.ko built against the image kernel's linux-headers (on the
#     host: installed through apt when missing), written as ext4 with
#     mkfs.ext4 -d (no loop mounts) and converted to qcow2.
# Needs root (debootstrap, chroot), debootstrap, qemu-utils, e2fsprogs,
# apt-utils (apt-ftparchive), dpkg-dev, build-essential, and for efi.qcow2
# systemd-boot-efi, dosfstools, mtools, fdisk (sfdisk).  docs/lab.md "Guest VMs".
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${GC_GUEST_CACHE:-/var/cache/gpuclusterctl/guest-image}
suite=bookworm

# What every guest has (what a minimal Debian server has, and what boot needs),
# and Open MPI: what `validate --mpirun` launches with, which users' images
# carry (the reference guides install it with the OS, not through us); and
# cloud-init, as in every cloud image: it reads the NoCloud seed the libvirt
# driver gives a KVM VM, and disables itself where there is none (the lab's
# own guests, seeded by gc-lab-seed).
base_packages=(
	systemd-sysv udev kmod dbus openssh-server sudo iproute2 procps netbase
	iputils-ping less linux-image-amd64 initramfs-tools zstd openmpi-bin
	cloud-init
)
# What the driver installs: in the local repository only, with all
# dependencies, never preinstalled.
repo_packages=(rdma-core ibverbs-utils perftest infiniband-diags chrony)
driver_version=535.183.01
ctk_version=1.14.6
ofed_name=MLNX_OFED_LINUX-23.10-1.1.9.0-debian12.1-x86_64

die() { echo "image: $*" >&2; exit 1; }
log() { echo "image: $*" >&2; }

key1() {
	printf '%s\n' "$suite" "${base_packages[*]}" "${repo_packages[*]}" "$(stage1_recipe)" | sha256sum | cut -c1-16
}

key() {
	{
		key1
		sha256sum <"$here/image.sh" # the content, not the path: one image for every checkout
		(cd "$here" && find standins -type f -print0 | sort -z | xargs -0 sha256sum)
	} | sha256sum | cut -c1-16
}

# The host's Debian mirror and suites (deb822 sources), for the chroot.
host_sources() {
	local f=/etc/apt/sources.list.d/debian.sources
	[ -f "$f" ] || die "no $f: the image uses the host's Debian mirror"
	cat "$f"
}

mirror() {
	awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources
}

# The part of this script that shapes stage 1 (for key1).
stage1_recipe() {
	declare -f build_stage1
}

mounted=()
cleanup_mounts() {
	local i
	for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
		umount -l "${mounted[$i]}" 2>/dev/null || true
	done
	mounted=()
}

chroot_mounts() {
	local r=$1
	mount -t proc proc "$r/proc" && mounted+=("$r/proc")
	mount -t sysfs sysfs "$r/sys" && mounted+=("$r/sys")
	mount --bind /dev "$r/dev" && mounted+=("$r/dev")
	mount -t devpts devpts "$r/dev/pts" && mounted+=("$r/dev/pts")
}

build_stage1() {
	local out=$1 r=$1/root
	rm -rf "$out"
	mkdir -p "$out"
	log "debootstrap --variant=minbase $suite from $(mirror) (1-3 min)"
	debootstrap --variant=minbase --include=ca-certificates "$suite" "$r" "$(mirror)" \
		>"$out/debootstrap.log" 2>&1 || die "debootstrap failed (see $out/debootstrap.log)"
	chroot_mounts "$r"
	# the host's mirror and suites (updates, security): same kernel as the host's headers
	rm -f "$r/etc/apt/sources.list"
	host_sources >"$r/etc/apt/sources.list.d/debian.sources"
	printf '#!/bin/sh\nexit 101\n' >"$r/usr/sbin/policy-rc.d"
	chmod 755 "$r/usr/sbin/policy-rc.d"
	export DEBIAN_FRONTEND=noninteractive LC_ALL=C
	chroot "$r" apt-get update -qq >>"$out/debootstrap.log" 2>&1 || die "apt-get update in the chroot failed"
	log "installing ${base_packages[*]}"
	chroot "$r" apt-get install -y -qq --no-install-recommends "${base_packages[@]}" \
		>>"$out/debootstrap.log" 2>&1 || die "apt-get install failed (see $out/debootstrap.log)"
	log "downloading ${repo_packages[*]} with their dependencies"
	chroot "$r" apt-get clean
	chroot "$r" apt-get install -y -qq --no-install-recommends --download-only "${repo_packages[@]}" \
		>>"$out/debootstrap.log" 2>&1 || die "apt-get --download-only failed (see $out/debootstrap.log)"
	mkdir -p "$out/debs"
	mv "$r"/var/cache/apt/archives/*.deb "$out/debs/"
	chroot "$r" apt-get clean
	cleanup_mounts
	rm -f "$r/usr/sbin/policy-rc.d"
	touch "$out/done"
}

stage1() {
	local k1 out
	k1=$(key1)
	out=$cache/stage1-$k1
	mkdir -p "$cache"
	exec 8>"$cache/.lock-stage1-$k1"
	flock 8
	if [ ! -f "$out/done" ]; then
		build_stage1 "$out"
	fi
	exec 8>&-
	echo "$out"
}

# The kernel modules nvidia.ko and nvidia_peermem.ko for kernel $1, built
# on the host against its linux-headers-$1 (installed through apt if missing),
# into $2; $3, when given, the driver version they say (MODULE_VERSION, what
# /sys/module/nvidia/version shows), else the image's.
build_modules() {
	local kver=$1 out=$2 ver=${3:-$driver_version} hdr=/usr/src/linux-headers-$1
	if [ ! -f "$hdr/Makefile" ]; then
		log "installing linux-headers-$kver on the host (for the stand-in modules)"
		# the chroot's package lists are fresh; the host's may be older
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "linux-headers-$kver" \
			>"$out.apt.log" 2>&1 ||
			{ apt-get update -qq >>"$out.apt.log" 2>&1 &&
				DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "linux-headers-$kver" \
					>>"$out.apt.log" 2>&1; } ||
			die "cannot install linux-headers-$kver on the host (see $out.apt.log)"
	fi
	rm -rf "$out"
	cp -r "$here/standins/nvidia-driver/kmod" "$out"
	make -s -C "$hdr" M="$out" KCFLAGS="-DGC_NV_VERSION=\\\"$ver\\\"" modules >"$out.log" 2>&1 ||
		die "module build failed (see $out.log)"
	[ -f "$out/nvidia.ko" ] && [ -f "$out/nvidia_peermem.ko" ] || die "module build made no .ko (see $out.log)"
}

# A .deb from a file tree: $1 package dir (with DEBIAN/), $2 output dir.
build_deb() {
	find "$1" -type d -exec chmod 755 {} +
	dpkg-deb --root-owner-group -Zxz --build "$1" "$2" >/dev/null
}

build_stage2() {
	local s1=$1 out=$2 w=$2.tmp r kver p d
	rm -rf "$w"
	mkdir -p "$w"
	r=$w/root
	log "copying stage 1 ($s1)"
	cp -a "$s1/root" "$r"
	kver=$(ls "$r/lib/modules")
	[ "$(echo "$kver" | wc -w)" = 1 ] || die "expected one kernel in the image, found: $kver"

	log "stand-in modules for $kver"
	build_modules "$kver" "$w/kmod"

	# nvidia-driver .deb: nvidia-smi, nvidia-gridd, modules (REAL-FORMATS C.3-C.5)
	p=$w/pkg-nvidia
	mkdir -p "$p/DEBIAN" "$p/lib/modules/$kver/updates"
	cp -a "$here/standins/nvidia-driver/usr" "$here/standins/nvidia-driver/lib" "$here/standins/nvidia-driver/etc" "$p/"
	install -m 644 "$w/kmod/nvidia.ko" "$w/kmod/nvidia_peermem.ko" "$p/lib/modules/$kver/updates/"
	cat >"$p/DEBIAN/control" <<CTL
Package: nvidia-driver
Version: $driver_version-1~gclab
Architecture: amd64
Maintainer: gpuclusterctl lab <lab@gpuclusterctl.invalid>
Depends: kmod
Provides: nvidia-driver-${driver_version%%.*}, nvidia-driver-${driver_version%%.*}-server, nvidia-smi, nvidia-kernel-dkms
Section: non-free/libs
Priority: optional
Description: NVIDIA driver - gpuclusterctl lab stand-in (no GPU behind it)
 Stand-in nvidia-smi, nvidia-gridd and kernel modules nvidia and
 nvidia_peermem (they only load), built for the lab image's kernel $kver.
CTL
	printf '/etc/nvidia/gridd.conf.template\n' >"$p/DEBIAN/conffiles"
	cat >"$p/DEBIAN/postinst" <<POST
#!/bin/sh
# nvidia-driver (lab stand-in) postinst: register the modules, enable gridd
set -e
depmod -a $kver
if [ -d /run/systemd/system ]; then systemctl daemon-reload || true; fi
systemctl enable nvidia-gridd.service >/dev/null 2>&1 || true
exit 0
POST
	cat >"$p/DEBIAN/postrm" <<POST
#!/bin/sh
# nvidia-driver (lab stand-in) postrm
set -e
depmod -a $kver || true
exit 0
POST
	chmod 755 "$p/DEBIAN/postinst" "$p/DEBIAN/postrm"
	mkdir -p "$w/repo"
	build_deb "$p" "$w/repo"

	# nvidia-container-toolkit .deb: nvidia-ctk (REAL-FORMATS C.6)
	p=$w/pkg-ctk
	mkdir -p "$p/DEBIAN"
	cp -a "$here/standins/nvidia-container-toolkit/usr" "$p/"
	cat >"$p/DEBIAN/control" <<CTL
Package: nvidia-container-toolkit
Version: $ctk_version-1
Architecture: amd64
Maintainer: gpuclusterctl lab <lab@gpuclusterctl.invalid>
Section: utils
Priority: optional
Description: NVIDIA Container Toolkit - gpuclusterctl lab stand-in
 Stand-in nvidia-ctk: --version, runtime configure --runtime=docker|containerd.
CTL
	build_deb "$p" "$w/repo"

	# the .run installer: same payload as the nvidia-driver .deb
	d=$w/run-payload
	mkdir -p "$d"
	# merged /usr: the payload names /usr/lib, never the /lib symlink
	cp -a "$w/pkg-nvidia/usr" "$w/pkg-nvidia/etc" "$d/"
	cp -a "$w/pkg-nvidia/lib/." "$d/usr/lib/"
	{
		sed "s/@KVER@/$kver/" "$here/standins/run-installer.sh"
		tar -czf - -C "$d" --owner=0 --group=0 .
	} >"$w/NVIDIA-Linux-x86_64-$driver_version-grid.run"
	chmod 755 "$w/NVIDIA-Linux-x86_64-$driver_version-grid.run"

	# the MLNX_OFED stand-in archive: the installer, ofed_info and the real
	# Debian .debs of the RDMA stack (what the repository has for it)
	d=$w/$ofed_name
	mkdir -p "$d/DEBS"
	install -m 755 "$here/standins/ofed/mlnxofedinstall" "$here/standins/ofed/ofed_info" "$d/"
	cp "$s1"/debs/*.deb "$d/DEBS/"
	rm -f "$d"/DEBS/chrony_*.deb
	tar -czf "$w/$ofed_name.tgz" -C "$w" --owner=0 --group=0 "$ofed_name"
	rm -rf "$d"

	log "local APT repository /srv/gc-lab-repo"
	cp "$s1"/debs/*.deb "$w/repo/"
	mkdir -p "$r/srv/gc-lab-repo"
	cp "$w"/repo/*.deb "$r/srv/gc-lab-repo/"
	(
		cd "$r/srv/gc-lab-repo"
		apt-ftparchive packages . >Packages
		gzip -9kn Packages
		apt-ftparchive -o APT::FTPArchive::Release::Origin=gpuclusterctl-lab \
			-o APT::FTPArchive::Release::Label=gc-lab-repo release . >Release
	)
	(cd "$r/srv/gc-lab-repo" && ls *.deb) >"$w/repo.txt"
	rm -f "$r/etc/apt/sources.list.d/debian.sources" "$r/etc/apt/sources.list"
	echo "deb [trusted=yes] file:/srv/gc-lab-repo ./" >"$r/etc/apt/sources.list.d/gc-lab-repo.list"
	chroot_mounts "$r"
	LC_ALL=C chroot "$r" apt-get update -qq >"$w/apt-update.log" 2>&1 || die "apt-get update on the local repo failed (see $w/apt-update.log)"

	log "lab hardware stand-ins, users, services"
	cp -a "$here/standins/hardware/." "$r/"
	install -d -m 755 "$r/etc/gc-lab" "$r/etc/gc-lab/faults" "$r/var/log/gc-lab"
	# every stand-in appends here, also when called by a non-root user
	install -m 666 /dev/null "$r/var/log/gc-lab/calls.log"
	chroot "$r" useradd -m -s /bin/bash -c "gpuclusterctl lab (NOPASSWD sudo)" gclab
	chroot "$r" useradd -m -s /bin/bash -c "gpuclusterctl lab (sudo wants a password)" -G sudo gcpw
	echo "gclab ALL=(ALL:ALL) NOPASSWD: ALL" >"$r/etc/sudoers.d/gclab"
	: >"$w/users"
	for u in gclab gcpw; do
		chroot "$r" install -d -m 700 -o "$u" -g "$u" "/home/$u/.ssh"
		echo "$u $(chroot "$r" id -u "$u") $(chroot "$r" id -g "$u")" >>"$w/users"
	done
	chmod 440 "$r/etc/sudoers.d/gclab"
	chroot "$r" passwd -l root >/dev/null
	rm -f "$r"/etc/ssh/ssh_host_*
	echo "LABEL=gclab-root / ext4 defaults,errors=remount-ro 0 1" >"$r/etc/fstab"
	echo gclab-guest >"$r/etc/hostname"
	# the image's default interface names are the kernel's (net.ifnames=0 on
	# the command line); the seed's .link files name both NICs by MAC
	chroot "$r" systemctl enable gc-lab-seed.service gc-lab-rxe.service systemd-networkd.service ssh.service >/dev/null 2>&1
	# no unattended apt runs racing the driver's apt-get (documented in docs/lab.md)
	chroot "$r" systemctl mask apt-daily.timer apt-daily-upgrade.timer >/dev/null 2>&1
	# e2scrub_reap takes ~25 s of a TCG boot and checks nothing here (no LVM)
	chroot "$r" systemctl mask e2scrub_reap.service e2scrub_all.timer >/dev/null 2>&1
	# a small initramfs: only what mounting the root disk needs (the full
	# MODULES=most one costs ~10 s more of every TCG boot); the rest of the
	# modules load from the root filesystem as usual
	sed -i 's/^MODULES=.*/MODULES=list/' "$r/etc/initramfs-tools/initramfs.conf"
	printf '%s\n' virtio_pci virtio_blk ext4 >>"$r/etc/initramfs-tools/modules"
	LC_ALL=C chroot "$r" update-initramfs -u -k "$kver" >"$w/initramfs.log" 2>&1 ||
		die "update-initramfs failed (see $w/initramfs.log)"
	cleanup_mounts
	rm -rf "$r"/var/cache/apt/*.bin "$r"/tmp/* "$r"/var/log/*.log

	log "rootfs (ext4 -> qcow2)"
	cp "$r/boot/vmlinuz-$kver" "$w/vmlinuz"
	cp "$r/boot/initrd.img-$kver" "$w/initrd.img"
	mkfs.ext4 -q -F -L gclab-root -d "$r" "$w/rootfs.raw" 6G >"$w/mkfs.log" 2>&1 || die "mkfs.ext4 -d failed (see $w/mkfs.log)"
	qemu-img convert -q -O qcow2 "$w/rootfs.raw" "$w/rootfs.qcow2"
	efi_disk "$w" "$r"
	rm -f "$w/rootfs.raw" "$w/mkfs.log" "$w/initramfs.log" "$w/apt-update.log"
	rm -rf "$r" "$w/kmod" "$w/kmod.log" "$w/pkg-nvidia" "$w/pkg-ctk" "$w/run-payload" "$w/repo"
	echo "$kver" >"$w/kernel-version"
	touch "$w/done"
	rm -rf "$out"
	mv "$w" "$out"
}

# efi_disk W ROOT: W/efi.qcow2, a GPT disk of a 64 MiB EFI system partition
# (FAT, \EFI\BOOT\BOOTX64.EFI: the removable-media path OVMF boots without
# an NVRAM entry) and W/rootfs.raw as partition 2.  BOOTX64.EFI is a unified
# kernel image: systemd-boot-efi's linuxx64.efi.stub with .osrel, .cmdline,
# .linux and .initrd sections at the addresses systemd's documentation gives
# for objcopy (no loop devices: mkfs.fat --offset, mtools, dd).
efi_disk() {
	local w=$1 r=$2 stub=/usr/lib/systemd/boot/efi/linuxx64.efi.stub esp_mib=64 d
	[ -f "$stub" ] || die "no $stub (apt-get install systemd-boot-efi)"
	d=$w/efi
	mkdir -p "$d"
	# as guests.sh boots the BIOS guests (no_timer_check: see its kernel_cmdline)
	echo "root=LABEL=gclab-root rw console=ttyS0 net.ifnames=0 panic=-1 no_timer_check" >"$d/cmdline"
	objcopy \
		--add-section .osrel="$r/usr/lib/os-release" --change-section-vma .osrel=0x20000 \
		--add-section .cmdline="$d/cmdline" --change-section-vma .cmdline=0x30000 \
		--add-section .linux="$w/vmlinuz" --change-section-vma .linux=0x2000000 \
		--add-section .initrd="$w/initrd.img" --change-section-vma .initrd=0x3000000 \
		"$stub" "$d/BOOTX64.EFI" || die "objcopy of the unified kernel image failed"
	truncate -s "$(( (1 + esp_mib) * 1048576 + $(stat -c %s "$w/rootfs.raw") + 1048576 ))" "$d/disk.raw"
	printf 'label: gpt\nstart=2048, size=%d, type=U, name="ESP"\nstart=%d, type=L, name="gclab-root"\n' \
		$((esp_mib * 2048)) $(((1 + esp_mib) * 2048)) | sfdisk -q "$d/disk.raw" >/dev/null ||
		die "sfdisk failed"
	# (it warns that the file is larger than the FAT it was asked for: it is)
	mkfs.fat -F 16 -n ESP --offset 2048 "$d/disk.raw" $((esp_mib * 1024)) >/dev/null 2>&1 ||
		die "mkfs.fat failed"
	MTOOLS_SKIP_CHECK=1 mmd -i "$d/disk.raw@@1M" ::EFI ::EFI/BOOT
	MTOOLS_SKIP_CHECK=1 mcopy -i "$d/disk.raw@@1M" "$d/BOOTX64.EFI" ::EFI/BOOT/BOOTX64.EFI
	dd if="$w/rootfs.raw" of="$d/disk.raw" bs=1M seek=$((1 + esp_mib)) conv=notrunc,sparse status=none
	qemu-img convert -q -O qcow2 "$d/disk.raw" "$w/efi.qcow2"
	rm -rf "$d"
}

cmd_build() {
	local s1 k out
	[ "$(id -u)" = 0 ] || die "building the guest image needs root (debootstrap, chroot)"
	trap cleanup_mounts EXIT
	k=$(key)
	out=$cache/$k
	mkdir -p "$cache"
	exec 9>"$cache/.lock-$k"
	flock 9
	if [ ! -f "$out/done" ]; then
		s1=$(stage1)
		build_stage2 "$s1" "$out"
	fi
	echo "$out"
}

# Old images are kept (a running lab's overlays may still use one) until
# `clean`, which removes every cache entry but the current key's.
cmd_clean() {
	local k k1 d
	k=$(key)
	k1=$(key1)
	[ -d "$cache" ] || return 0
	exec 9>"$cache/.lock-$k"
	flock 9
	for d in "$cache"/*/ "$cache"/*.tmp; do
		[ -e "$d" ] || continue
		d=${d%/}
		case $(basename "$d") in "$k" | "stage1-$k1") continue ;; esac
		rm -rf "$d" "$cache/.lock-$(basename "$d")"
		echo "image: removed $d"
	done
}

# A stand-in .run of another driver version than the image's (a spec's
# driver.runfile names the version it installs, and the guest driver
# compares it with what runs): the image's .run payload with nvidia-smi,
# the installer and both modules saying $1.  Built once per image and
# version, beside the image (needs root, like build); prints its path.
cmd_runfile() {
	local ver=$1 d kver out w p
	[[ $ver =~ ^[0-9]{2,4}\.[0-9]{1,4}(\.[0-9]{1,4})?$ ]] || die "runfile: not an NVIDIA driver version: '$ver'"
	d=$cache/$(key)
	[ -f "$d/done" ] || die "not built: $d (run: $0 build)"
	out=$d/NVIDIA-Linux-x86_64-$ver-grid.run
	exec 8>"$d/.lock-runfile"
	flock 8
	if [ ! -f "$out" ]; then
		kver=$(cat "$d/kernel-version")
		w=$(mktemp -d "$d/.runfile.XXXXXX")
		log "stand-in .run for driver $ver (modules for $kver)"
		build_modules "$kver" "$w/kmod" "$ver"
		# the layout of the image's .run payload (build_stage2): merged /usr
		p=$w/payload
		mkdir -p "$p/usr/lib/modules/$kver/updates"
		cp -a "$here/standins/nvidia-driver/usr" "$here/standins/nvidia-driver/etc" "$p/"
		cp -a "$here/standins/nvidia-driver/lib/." "$p/usr/lib/"
		sed -i "s/^driver=.*/driver=$ver/" "$p/usr/bin/nvidia-smi"
		install -m 644 "$w/kmod/nvidia.ko" "$w/kmod/nvidia_peermem.ko" "$p/usr/lib/modules/$kver/updates/"
		{
			sed -e "s/@KVER@/$kver/" -e "s/^version=.*/version=$ver/" \
				-e "2s/$driver_version/$ver/" "$here/standins/run-installer.sh"
			tar -czf - -C "$p" --owner=0 --group=0 .
		} >"$w/run"
		chmod 755 "$w/run"
		mv "$w/run" "$out"
		rm -rf "$w"
	fi
	exec 8>&-
	echo "$out"
}

case ${1:-} in
build) cmd_build ;;
runfile) [ $# = 2 ] || die "usage: $0 runfile VERSION"; cmd_runfile "$2" ;;
clean) cmd_clean ;;
key) key ;;
path) d=$cache/$(key); [ -f "$d/done" ] || die "not built: $d (run: $0 build)"; echo "$d" ;;
*) sed -n '2,11p' "$0" >&2; exit 2 ;;
esac
