#!/usr/bin/env bash
# test_vcsim_sh.sh LABDIR PORT - tests/sim/vcsim.sh end to end: build (cached),
# start with TLS from the test CA, env, a verified HTTPS request, refusal of
# an unverified one, secrets kept out of output and logs, stop.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
export GC_VCSIM_DIR=${1:?lab dir}
port=${2:?port}
sim=$root/tests/sim/vcsim.sh
fail() { echo "FAIL: $*" >&2; "$sim" stop >/dev/null 2>&1 || true; exit 1; }

rm -rf "$GC_VCSIM_DIR"
"$sim" stop
out=$("$sim" start --port "$port") || fail "start"
[ -z "$out" ] || fail "start printed '$out'"
"$sim" status | grep -q "^running (pid [0-9]*, port $port)$" || fail "status"
"$sim" start --port "$port" 2>/dev/null && fail "second start succeeded"

env_out=$("$sim" env)
expect="GC_VCSIM_URL=https://127.0.0.1:$port
GC_VCSIM_CA_FILE=$GC_VCSIM_DIR/ca.crt
GC_VCSIM_USERNAME=gcadmin
GC_VCSIM_PASSWORD_FILE=$GC_VCSIM_DIR/password"
[ "$env_out" = "$expect" ] || fail "env: got '$env_out'"
[ "$(stat -c %a "$GC_VCSIM_DIR/password")" = 600 ] || fail "password file mode"
[ "$(stat -c %a "$GC_VCSIM_DIR/server.key")" = 600 ] || fail "server key mode"

/usr/bin/python3 - "$port" "$GC_VCSIM_DIR/ca.crt" <<'PY' || fail "https"
import ssl, sys, urllib.request
port, ca = sys.argv[1], sys.argv[2]
url = "https://127.0.0.1:%s/about" % port
ok = urllib.request.urlopen(url, context=ssl.create_default_context(cafile=ca), timeout=10)
assert ok.status == 200, ok.status
try:
    urllib.request.urlopen(url, context=ssl.create_default_context(), timeout=10)
    sys.exit("an unverified certificate was accepted")
except urllib.error.URLError as e:
    assert "CERTIFICATE_VERIFY_FAILED" in str(e.reason), e.reason
PY

pw=$(cat "$GC_VCSIM_DIR/password")
[ ${#pw} -ge 16 ] || fail "password too short"
for f in "$GC_VCSIM_DIR"/vcsim.out "$GC_VCSIM_DIR"/vcsim.log; do
	grep -qF -- "$pw" "$f" && fail "password in $f"
done
tr '\0' ' ' <"/proc/$(cat "$GC_VCSIM_DIR/vcsim.pid")/cmdline" | grep -qF -- "$pw" && fail "password in argv"

# A restart (the lab's reset) with the last run's vcsim.out still there:
# start returns only once the new process listens, never on the old line.
for i in 1 2 3 4 5; do
	"$sim" stop
	grep -q '^export GOVC_URL=' "$GC_VCSIM_DIR/vcsim.out" || fail "restart $i: no old line to mislead"
	"$sim" start --port "$port" || fail "restart $i"
	/usr/bin/python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 5).close()' "$port" ||
		fail "restart $i: start returned before vcsim listened"
done

"$sim" stop
"$sim" status >/dev/null && fail "still running after stop"
bin=${GC_VCSIM_BIN:-$root/.lab/vcsim/bin}/vcsim
bin_mtime=$(stat -c %Y "$bin")
"$sim" build
[ "$(stat -c %Y "$bin")" = "$bin_mtime" ] || fail "build was not cached"
echo "ok"
