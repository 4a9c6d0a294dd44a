#!/bin/sh
# front_libraries.sh FRONT ONLINE - the front binary (check, graph, plan
# --offline) maps none of the network, TLS or libvirt libraries; the online
# one maps them.  Prints both lists on failure.
set -u
front=$1 online=$2
net='libssh2|libcurl|libgnutls|libssl|libcrypto|libvirt|libkrb5|libibverbs'
fail=0
if ldd "$front" | grep -E "$net"; then
	echo "FAIL: $front maps the libraries above" >&2
	fail=1
fi
for lib in libssh2 libcurl libvirt; do
	if ! ldd "$online" | grep -q "$lib"; then
		echo "FAIL: $online does not map $lib" >&2
		fail=1
	fi
done
# and it runs: an offline plan in the front, a --help that execs the online binary
src=$(dirname "$0")/../../..
"$front" plan --offline "$src/examples/roce-passthrough.yaml" >/dev/null
rc=$?
[ $rc = 2 ] || { echo "FAIL: plan --offline exited $rc, not 2" >&2; fail=1; }
"$front" apply --help | head -1 | grep -qx 'usage: gpuclusterctl apply \[options\] SPEC' ||
	{ echo "FAIL: apply --help through the online binary" >&2; fail=1; }
[ $fail = 0 ] && echo "front: $(ldd "$front" | wc -l) mappings; online: $(ldd "$online" | wc -l)"
exit $fail
