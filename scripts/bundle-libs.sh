#!/bin/bash
# bundle-libs.sh LIBDIR BINARY... - copy the shared libraries the binaries
# load (ldd) into LIBDIR, glibc's own excepted (the machine they travel to
# uses its own glibc, which must be as new as this one's), and strip them.
# For the bundles of scripts/device-validate-bundle.sh and fuzz-bundle.sh.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: scripts/bundle-libs.sh LIBDIR BINARY..." >&2; exit 64; }
dir=$1
shift
mkdir -p "$dir"
for b in "$@"; do
	ldd "$b" | awk '$3 ~ /^\// {print $3}'
done | sort -u | while read -r lib; do
	case "$(basename "$lib")" in
	libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | librt.so.* | libresolv.so.* | ld-linux*) ;;
	*) cp -L "$lib" "$dir/" ;;
	esac
done
strip --strip-unneeded "$dir"/* 2>/dev/null || true
