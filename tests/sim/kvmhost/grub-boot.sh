#!/bin/sh
# grub-boot.sh - the local lab's stand-in for GRUB handing the kernel its
# arguments.  QEMU boots a lab guest's kernel directly with its own
# -append, so at every boot (gclab-grub.service) this shows as
# /proc/cmdline what GRUB would have passed: BOOT_IMAGE= and the arguments
# of grub.cfg's first `linux` line, then QEMU's (so nothing of GRUB's can
# land after an init `--`), bind-mounted over /proc/cmdline.  Nothing
# else of the kernel changes: the lab has no IOMMU to turn on (docs/lab.md).
l=$(grep -m1 -E '^[[:space:]]*linux[[:space:]]' /boot/grub/grub.cfg 2>/dev/null) || exit 0
set -f
# shellcheck disable=SC2086
set -- $l
k=$2
shift 2
printf 'BOOT_IMAGE=%s %s %s\n' "$k" "$*" "$(cat /proc/cmdline)" >/run/gclab-cmdline
mount --bind /run/gclab-cmdline /proc/cmdline
