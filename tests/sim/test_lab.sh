#!/usr/bin/env bash
# test_lab.sh - scripts/lab.sh: start is idempotent, status/env/reset say and
# do what docs/lab.md says, stop leaves nothing running, no secret is printed.
# Uses its own lab dir and port; needs root (as CI) and openssh-server.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
export GC_LAB_DIR=${1:-$root/build/test-lab-sh}/lab
lab=$root/scripts/lab.sh
port=$((23000 + $$ % 900))
fails=0

check() { # check DESCRIPTION COMMAND...
	local what=$1
	shift
	if "$@"; then echo "ok - $what"; else echo "FAIL - $what"; fails=$((fails + 1)); fi
}

"$lab" stop >/dev/null 2>&1 || true
rm -rf "$GC_LAB_DIR"
# two sshd listeners share the port (SO_REUSEPORT from downgate.c's bind()),
# whatever this machine's CPU count would give
export GC_LAB_SSHD_LISTENERS=2
out=$("$lab" start --hosts 2 --switches 1 --port "$port")
check "start says where" grep -q "on port $port: 2 ESXi hosts, 1 switches" <<<"$out"
check "start says how many listeners" grep -q "and 1 more on its port" <<<"$out"
pid=$(cat "$GC_LAB_DIR/sshd.pid")
check "sshd runs" kill -0 "$pid"
pid2=$(cat "$GC_LAB_DIR/sshd.2.pid")
check "the second listener runs" kill -0 "$pid2"
check "two listeners on the port" test "$(ss -Hltn "sport = :$port" | wc -l)" = 2
# the listeners stand for every host: an accept queue of 4096 each
# (downgate.c's listen(), capped by somaxconn), not sshd's 128 (ss: Send-Q
# of a listener)
want=$(( $(cat /proc/sys/net/core/somaxconn) < 4096 ? $(cat /proc/sys/net/core/somaxconn) : 4096 ))
check "each listener's accept queue is $want" \
	test "$(ss -Hltn "sport = :$port" | awk '{print $3}' | sort -u)" = "$want"
out=$("$lab" start --hosts 3 --switches 1 --port "$port")
check "second start is a no-op" grep -q "already running (pid $pid" <<<"$out"
check "second start adds the host" grep -q '^127.0.0.13 esxi esxi-3 version=8.0.2$' "$GC_LAB_DIR/inventory"
check "switch address" grep -q '^127.0.0.100 onyx switch-1$' "$GC_LAB_DIR/inventory"
check "known_hosts: 2 keys x 4 addresses" test "$(wc -l <"$GC_LAB_DIR/client/known_hosts")" -eq 8
check "known_hosts names the port" grep -q "^\[127.0.0.13\]:$port ssh-ed25519 " "$GC_LAB_DIR/client/known_hosts"
check "client dir is private" test "$(stat -c %a "$GC_LAB_DIR/client")" = 700
check "password file is private" test "$(stat -c %a "$GC_LAB_DIR/client/password")" = 600
# SHA-512 crypt of 1,000 rounds, crypt(3)'s least (lab.sh ensure_user)
check "the lab user's password hash is \$6\$rounds=1000\$" \
	bash -c 'getent shadow "$(cat "$1/user")" | cut -d: -f2 | grep -q "^[$]6[$]rounds=1000[$]"' _ "$GC_LAB_DIR"

# the lab user's login shell is simc itself (lab.sh install_shell): sshd's
# `SHELL -c "exec $lab/bin/simc"` runs the session with no /bin/sh between
check "the lab user's shell is the installed simc" \
	test "$(getent passwd "$(cat "$GC_LAB_DIR/user")" | cut -d: -f7)" = /usr/local/libexec/gclab/simc
check "... the lab's own simc, byte for byte" cmp -s /usr/local/libexec/gclab/simc "$GC_LAB_DIR/bin/simc"
check "... which hands any other command line to /bin/sh" \
	test "$(/usr/local/libexec/gclab/simc -c 'echo "$0:" a\ b; exit 3' 2>&1; echo "rc=$?")" = "$(printf 'sh: a b\nrc=3')"

envout=$("$lab" env)
check "env exports the port" grep -qx "export GC_LAB_PORT=$port" <<<"$envout"
check "env names the password file" grep -q "GC_LAB_PASSWORD_FILE='$GC_LAB_DIR/client/password'" <<<"$envout"
secret=$(cat "$GC_LAB_DIR/client/password")
check "no secret printed by env/status/start" \
	bash -c '! { "$1" env; "$1" status; "$1" start --hosts 3 --switches 1; } 2>&1 | grep -qF -- "$2"' _ "$lab" "$secret"

eval "$envout"
ssh_lab() {
	ssh -p "$GC_LAB_PORT" -i "$GC_LAB_KEY" -o UserKnownHostsFile="$GC_LAB_KNOWN_HOSTS" \
		-o StrictHostKeyChecking=yes -o BatchMode=yes "$GC_LAB_USER@$1" "$2"
}
check "OpenSSH client reaches esxi-3" test "$(ssh_lab 127.0.0.13 hostname)" = esxi-3
ssh_lab 127.0.0.11 'esxcli system maintenanceMode set -e true' >/dev/null
check "state kept" test "$(ssh_lab 127.0.0.11 'esxcli system maintenanceMode get')" = Enabled
"$lab" reset >/dev/null
check "reset forgets state" test "$(ssh_lab 127.0.0.11 'esxcli system maintenanceMode get')" = Disabled
check "reset keeps sshd" test "$(cat "$GC_LAB_DIR/sshd.pid")" = "$pid"

# a rebooting host takes no new connection (tests/sim/downgate.c): the
# connection is reset before sshd's banner, sshd never logs it, the other
# hosts answer, and the host answers again once its reboot is over
echo '{"reboot_seconds": 4}' >"$GC_LAB_DIR/hosts/esxi-2/control.json"
set +e
ssh_lab 127.0.0.12 'reboot' >/dev/null 2>&1
set -e
check "the reboot marks the host down" test -s "$GC_LAB_DIR/down/127.0.0.12"
seen=$(grep -c "on 127.0.0.12 port" "$GC_LAB_DIR/sshd.log" || true)
set +e
err=$(ssh_lab 127.0.0.12 'hostname' 2>&1 >/dev/null)
rc=$?
set -e
check "a connection to the rebooting host fails (exit 255)" test "$rc" = 255
check "... reset before the banner" grep -q "Connection reset" <<<"$err"
check "... and never reaches sshd" test "$(grep -c "on 127.0.0.12 port" "$GC_LAB_DIR/sshd.log" || true)" = "$seen"
check "... nor the simulator" test ! -e "$GC_LAB_DIR/hosts/esxi-2/refused.log"
check "another host answers meanwhile" test "$(ssh_lab 127.0.0.11 hostname)" = esxi-1
sleep 4
check "the host answers after its reboot" test "$(ssh_lab 127.0.0.12 hostname)" = esxi-2

check "status running" "$lab" status >/dev/null
"$lab" stop >/dev/null
check "stop ends sshd" bash -c '! [ -r /proc/$1/stat ] || [ "$(cut -d" " -f3 /proc/$1/stat)" = Z ]' _ "$pid"
check "stop ends the second listener" bash -c '! [ -r /proc/$1/stat ] || [ "$(cut -d" " -f3 /proc/$1/stat)" = Z ]' _ "$pid2"
check "stop ends the simulator server and its forkers" bash -c '! pgrep -f -- "simd.py $1/simd" >/dev/null' _ "$GC_LAB_DIR"
check "no lab process left" bash -c '! pgrep -f -- "$1/sshd_config" >/dev/null' _ "$GC_LAB_DIR"
set +e
"$lab" status >/dev/null
rc=$?
set -e
check "status says stopped (exit 3)" test "$rc" = 3
out=$("$lab" stop)
check "stop twice is fine" grep -q "not running" <<<"$out"

# a start that fails once it started the simulator server stops it again
# (a vcsim left holding its port failed the next lab that asked for it)
busy=$((port + 1))
python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen(); time.sleep(60)' "$busy" &
holder=$!
sleep 0.5
set +e
out=$("$lab" start --hosts 1 --port "$busy" 2>&1)
rc=$?
set -e
kill "$holder"
check "a start on a busy port fails, saying so" grep -q "^lab: sshd did not" <<<"$out"
check "a start on a busy port exits 1" test "$rc" = 1
check "a failed start leaves no simulator server" bash -c '! pgrep -f -- "simd.py $1/simd" >/dev/null' _ "$GC_LAB_DIR"

# a port that another lab's listeners share (SO_REUSEPORT, as ours set it)
# is refused too, not shared: the listeners' option would let a second
# sshd bind it
other=$root/build/test-lab-sh/other
GC_LAB_DIR=$other "$lab" start --hosts 1 --port "$busy" >/dev/null
set +e
out=$("$lab" start --hosts 1 --port "$busy" 2>&1)
rc=$?
set -e
check "a start on a port another lab listens on fails, saying so" \
	grep -q "^lab: sshd did not start on port $busy: something listens there already" <<<"$out"
check "... exit 1" test "$rc" = 1
check "... and the other lab's listeners are all that listen there" \
	test "$(ss -Hltnp "sport = :$busy" | grep -c sshd)" = 2
GC_LAB_DIR=$other "$lab" stop >/dev/null
rm -rf "$other"

# GC_LAB_KEX: the key exchanges the lab sshd offers (bench/apply_bench.py's
# FIPS list); a value that is not a comma list of names is refused before
# anything starts
set +e
out=$(GC_LAB_KEX='ecdh-sha2-nistp256
Port 1' "$lab" start --hosts 1 --port "$port" 2>&1)
rc=$?
set -e
check "a GC_LAB_KEX that is not a list is refused, saying so" \
	grep -q "^lab: GC_LAB_KEX must be a comma list of key exchange names" <<<"$out"
check "... exit 1, and nothing listens on the port" \
	bash -c '[ "$1" = 1 ] && [ -z "$(ss -Hltn "sport = :$2")" ]' _ "$rc" "$port"
GC_LAB_KEX=ecdh-sha2-nistp256,diffie-hellman-group14-sha256 "$lab" start --hosts 1 --port "$port" >/dev/null
check "the sshd_config has the key exchanges" \
	grep -qx "KexAlgorithms ecdh-sha2-nistp256,diffie-hellman-group14-sha256" "$GC_LAB_DIR/sshd_config"
lab_ssh() {
	ssh -q -p "$port" -i "$GC_LAB_DIR/client/id_ed25519" -o BatchMode=yes \
		-o UserKnownHostsFile="$GC_LAB_DIR/client/known_hosts" -o StrictHostKeyChecking=yes \
		"$@" "$(cat "$GC_LAB_DIR/user")@127.0.0.11" vmware -v
}
curve25519_refused() { ! lab_ssh -o KexAlgorithms=curve25519-sha256 2>/dev/null; }
p256_answers() { lab_ssh -o KexAlgorithms=ecdh-sha2-nistp256 | grep -q '^VMware ESXi'; }
check "a client offering only curve25519 is refused" curve25519_refused
check "a client offering ecdh-sha2-nistp256 gets in" p256_answers
"$lab" stop >/dev/null
check "without GC_LAB_KEX, OpenSSH's own list" bash -c '"$1" start --hosts 1 --port "$2" >/dev/null &&
	! grep -q KexAlgorithms "$GC_LAB_DIR/sshd_config"; rc=$?; "$1" stop >/dev/null; exit $rc' _ "$lab" "$port"

if [ "$fails" -ne 0 ]; then
	echo "$fails check(s) failed"
	exit 1
fi
echo "all lab.sh checks passed"
