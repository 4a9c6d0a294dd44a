#!/bin/sh
# NVIDIA-Linux-x86_64-535.183.01-grid.run - gpuclusterctl lab STAND-IN for
# NVIDIA's GRID (vGPU guest) driver installer (a makeself .run that needs a
# real GPU).  Installs the same payload as the lab's nvidia-driver .deb
# (nvidia-smi, nvidia-gridd + unit, gridd.conf.template, nvidia.ko and
# nvidia_peermem.ko for the lab image's kernel) without dpkg, and records
# what it installed for --uninstall.  Flags: --silent / -s, --no-questions /
# -q, --accept-license, --uninstall, --version; anything else fails.
# Log: /var/log/nvidia-installer.log (the real installer's log file); calls
# also go to /var/log/gc-lab/calls.log.  Payload: a tar.gz after the marker.
set -eu
version=535.183.01
kver=@KVER@
manifest=/var/lib/gc-lab/nvidia-run.manifest
mkdir -p /var/log/gc-lab
printf '%s %s %s\n' "$(date -u +%FT%TZ)" "$(basename "$0")" "$*" >>/var/log/gc-lab/calls.log
silent=0 uninstall=0
for a in "$@"; do
	case $a in
	--silent | -s) silent=1 ;;
	--no-questions | -q | --accept-license | --ui=none | --disable-nouveau) ;;
	--uninstall) uninstall=1 ;;
	--version | -v) echo "NVIDIA-Linux-x86_64-$version-grid.run (gpuclusterctl lab stand-in)"; exit 0 ;;
	*) echo "ERROR: Unrecognized option: '$a'; please run \`sh $(basename "$0") --help\` for usage information." >&2; exit 1 ;;
	esac
done
say() { [ $silent = 1 ] || echo "$*"; echo "$*" >>/var/log/nvidia-installer.log; }
if [ "$(id -u)" != 0 ]; then
	echo "ERROR: nvidia-installer must be run as root" >&2
	exit 1
fi
echo "nvidia-installer log file '/var/log/nvidia-installer.log'" >/var/log/nvidia-installer.log
echo "creation time: $(date)" >>/var/log/nvidia-installer.log
if [ $uninstall = 1 ]; then
	[ -f "$manifest" ] || { echo "ERROR: No NVIDIA driver is currently installed." >&2; exit 1; }
	systemctl disable --now nvidia-gridd.service >/dev/null 2>&1 || true
	modprobe -r nvidia_peermem nvidia 2>/dev/null || true
	while read -r f; do rm -f "/$f"; done <"$manifest"
	rm -f "$manifest"
	depmod -a "$kver" || true
	systemctl daemon-reload 2>/dev/null || true
	say "Uninstallation of existing driver: NVIDIA Accelerated Graphics Driver for Linux-x86_64 ($version) is complete."
	exit 0
fi
if [ "$(uname -r)" != "$kver" ]; then
	echo "ERROR: Unable to find the kernel source tree for the currently running kernel.  (lab stand-in: its modules are built for $kver, this is $(uname -r))" >&2
	exit 1
fi
say "Verifying archive integrity... OK"
say "Uncompressing NVIDIA Accelerated Graphics Driver for Linux-x86_64 $version..."
line=$(awk '/^__GCLAB_PAYLOAD__$/ {print NR + 1; exit}' "$0")
mkdir -p /var/lib/gc-lab
tail -n +"$line" "$0" | tar -xzf - -C / --no-same-owner --keep-directory-symlink
tail -n +"$line" "$0" | tar -tzf - | grep -v '/$' >"$manifest"
depmod -a "$kver"
systemctl daemon-reload 2>/dev/null || true
systemctl enable nvidia-gridd.service >/dev/null 2>&1 || true
say "Installation of the NVIDIA Accelerated Graphics Driver for Linux-x86_64 (version: $version) is now complete."
exit 0
__GCLAB_PAYLOAD__
