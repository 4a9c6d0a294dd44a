#!/usr/bin/env bash
# lab.sh - the local lab: one real OpenSSH sshd on loopback standing for many
# simulated ESXi hosts and Onyx switches (tests/sim/).  See docs/lab.md.
#
#   scripts/lab.sh start [--hosts N] [--switches M] [--esxi7 K] [--port P]
#   scripts/lab.sh start --spec FILE [--port P] [--vcsim-port P] [--guests N]
#   scripts/lab.sh stop | status | reset | env
#   scripts/lab.sh guest-reset [VM...]
#
# With --spec the lab stands in for the spec's own targets: one simulated
# ESXi host per spec host (its name, address, version and PCI devices) and one
# simulated switch per spec switch, and it writes $lab/<spec file name>: the
# same spec with only its connection settings (port, known_hosts, lab user
# and password file) pointed at the lab (tests/sim/lab_spec.py).  When the
# spec has a vcenter, the lab also runs vcsim (tests/sim/vcsim.sh, lab dir
# $lab/vcsim) with the spec's inventory, and the written spec's vcenter
# points at it.  vcsim port: --vcsim-port, else $GC_LAB_VCSIM_PORT, else
# the port of a previous start, else 8990.
# When the spec's VMs have a `guest:`, the lab also boots one real Debian 12
# VM per guest (QEMU/TCG, tests/sim/guestlab/guests.sh; the first N with
# --guests N, none with --guests 0): SSH on the spec's guest address, port
# lab port + 10000; see docs/lab.md "Guest VMs".  `guest-reset` puts guests
# back on a fresh disk and reboots them.
#
# Lab dir: $GC_LAB_DIR (default .lab/ at the repository root).  Port:
# --port, else $GC_LAB_PORT, else the port of a previous start, else 2222.
# ESXi hosts dial 127.0.0.11.., switches 127.0.0.100..; sshd listens on all
# addresses but admits only clients from 127.0.0.0/8 (AllowUsers).
# As root the lab user is the system user `gclab` (key + password auth);
# otherwise it is the calling user and only key auth works.
# Secrets (the client key, the password) live in files under the lab dir and
# are never printed.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
lab=${GC_LAB_DIR:-$root/.lab}
case $lab in /*) ;; *) lab=$PWD/$lab ;; esac
sshd_bin=${GC_SSHD:-/usr/sbin/sshd}
user_home=/var/lib/gclab

die() { echo "lab: $*" >&2; exit 1; }

usage() {
	cat >&2 <<'EOF'
usage: scripts/lab.sh start [--hosts N] [--switches M] [--esxi7 K] [--port P]
       scripts/lab.sh start --spec FILE [--port P] [--vcsim-port P] [--guests N]
       scripts/lab.sh stop | status | reset | env
       scripts/lab.sh guest-reset [VM...]
EOF
	exit 2
}

lab_user() {
	if [ "$(id -u)" = 0 ]; then echo gclab; else id -un; fi
}

sshd_pid() {
	local pid
	[ -f "$lab/sshd.pid" ] || return 1
	pid=$(cat "$lab/sshd.pid" 2>/dev/null) || return 1
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
	# Only our sshd: its command line names our config file.
	tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$lab/sshd_config" || return 1
	echo "$pid"
}

# The lab sshd's other listeners on the same port (cmd_start): their pids.
extra_listeners() {
	local f pid
	for f in "$lab"/sshd.[0-9]*.pid; do
		[ -f "$f" ] || continue
		pid=$(cat "$f" 2>/dev/null) || continue
		[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || continue
		tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$lab/sshd_config" || continue
		echo "$pid"
	done
}

# How many sshd listeners share the lab's port: GC_LAB_SSHD_LISTENERS, else
# one per two CPUs (at least 1, at most 16; on 2 CPUs a second listener
# bought nothing and cost the lab's sshd 8 % more CPU in the apply bench).
listeners_wanted() {
	local n=${GC_LAB_SSHD_LISTENERS:-$(($(nproc 2>/dev/null || echo 2) / 2))}
	case $n in '' | *[!0-9]*) n=1 ;; esac
	[ "$n" -ge 1 ] || n=1
	[ "$n" -le 16 ] || n=16
	echo "$n"
}

# The key exchanges the lab sshd offers: GC_LAB_KEX (a comma list, as
# sshd_config's KexAlgorithms takes it), else OpenSSH's own.  The apply bench
# (bench/apply_bench.py) offers those of an ESXi host whose SSH runs in its
# FIPS 140-2 mode (no curve25519): a connection's key exchange then costs
# the lab sshd OpenSSL's P-256 instead of OpenSSH's own curve25519 code,
# about 2.4 ms a connection less on the project's 2-core machine.
kex_line() {
	local kex=${GC_LAB_KEX:-}
	[ -n "$kex" ] || return 0
	case $kex in
	*[!a-z0-9@.,-]* | ,* | *, | *,,*) die "GC_LAB_KEX must be a comma list of key exchange names, not '$kex'" ;;
	esac
	echo "KexAlgorithms $kex"
}

# Running and not a zombie (a container's PID 1 may never reap the daemon).
alive() {
	local state
	state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
	[ -n "$state" ] && [ "$state" != Z ]
}

ensure_user() {
	# root only: a system user whose password is generated once per machine
	# (kept root-only in $user_home) so several lab dirs agree on it.  Labs
	# that start at once (the test suite's, on a fresh machine) take turns:
	# two of them creating the user and its password together clashed.
	local user=$1 pwfile=$user_home/.lab-password lockfd
	[ "$(id -u)" = 0 ] || return 0
	mkdir -p /run/lock
	exec {lockfd}>/run/lock/gpuclusterctl-lab-user.lock
	flock "$lockfd"
	if ! id "$user" >/dev/null 2>&1; then
		useradd --system --create-home --home-dir "$user_home" --shell /bin/sh \
			--comment "gpuclusterctl lab" "$user" >/dev/null
	fi
	mkdir -p "$user_home"
	# The hash is SHA-512 crypt ($6$), the scheme ESXi keeps its passwords
	# in, not Debian's default yescrypt: sshd verifies it on every password
	# login, and yescrypt's 80 ms of CPU a login was a tenth of what a lab
	# test spent.  1,000 rounds, the least crypt(3) takes, not the default
	# 5,000: the check of a 5,000-round hash was a sixth of the lab sshd's
	# CPU in the apply bench (2.5 ms a login here), which a real host pays
	# on its own CPU, not the one the bench measures the tool on; the
	# password is 24 random bytes on loopback.  A user hashed otherwise
	# before is re-hashed once.
	if [ ! -s "$pwfile" ]; then
		(umask 077; head -c 24 /dev/urandom | base64 | tr -d '/+=\n' >"$pwfile.tmp")
		# chpasswd reads "user:password" on stdin: the secret never is in argv.
		{ printf '%s:' "$user"; cat "$pwfile.tmp"; echo; } | chpasswd -c SHA512 -s 1000
		mv "$pwfile.tmp" "$pwfile"
	elif ! getent shadow "$user" | cut -d: -f2 | grep -q '^[$]6[$]rounds=1000[$]'; then
		{ printf '%s:' "$user"; cat "$pwfile"; echo; } | chpasswd -c SHA512 -s 1000
	fi
	chown root:root "$pwfile"
	chmod 600 "$pwfile"
	(umask 077; cp "$pwfile" "$lab/client/password")
	passwd -u "$user" >/dev/null 2>&1 || true
	exec {lockfd}>&-
}

write_inventory() {
	local hosts=$1 switches=$2 esxi7=$3 i ver
	[ "$hosts" -le 88 ] || die "--hosts is at most 88 (127.0.0.11..98)"
	[ "$switches" -le 150 ] || die "--switches is at most 150"
	{
		echo "# address kind name [key=value ...]   (written by scripts/lab.sh)"
		for ((i = 1; i <= hosts; i++)); do
			ver=8.0.2
			[ "$i" -le "$esxi7" ] && ver=7.0.3
			echo "127.0.0.$((10 + i)) esxi esxi-$i version=$ver"
		done
		for ((i = 1; i <= switches; i++)); do
			echo "127.0.0.$((99 + i)) onyx switch-$i"
		done
	} >"$lab/inventory.tmp"
	mv "$lab/inventory.tmp" "$lab/inventory"
}

write_known_hosts() {
	local port=$1 key addr t
	: >"$lab/client/known_hosts.tmp"
	while read -r addr _; do
		case $addr in '#'* | '') continue ;; esac
		for t in ed25519 ecdsa; do
			key=$(cut -d' ' -f1,2 "$lab/ssh_host_${t}_key.pub")
			echo "[$addr]:$port $key" >>"$lab/client/known_hosts.tmp"
		done
	done <"$lab/inventory"
	mv "$lab/client/known_hosts.tmp" "$lab/client/known_hosts"
}

make_host_dirs() {
	local user=$1 name
	mkdir -p "$lab/hosts"
	chmod 755 "$lab/hosts"
	# down/ADDRESS: until when (Unix ms) a rebooting host refuses connections
	# (written by the simulator, read by tests/sim/downgate.c in the sshd)
	rm -rf "${lab:?}/down"
	mkdir -p "$lab/down"
	chown "$user" "$lab/down"
	chmod 755 "$lab/down"
	while read -r _ _ name _; do
		[ -n "${name:-}" ] || continue
		mkdir -p "$lab/hosts/$name"
		chown "$user" "$lab/hosts/$name"
		chmod 755 "$lab/hosts/$name"
	done < <(grep -v '^#' "$lab/inventory")
}

# tests/sim/downgate.c into $lab/bin/downgate.so (for the sshd's
# LD_PRELOAD); false without a C compiler: rebooting hosts then still
# complete the handshake and only their sessions are dropped.
build_downgate() {
	local src=$root/tests/sim/downgate.c
	mkdir -p "$lab/bin"
	if [ ! -f "$lab/bin/downgate.so" ] || [ "$src" -nt "$lab/bin/downgate.so" ]; then
		if ! command -v cc >/dev/null 2>&1 ||
			! cc -O2 -Wall -Wextra -shared -fPIC -o "$lab/bin/downgate.so.tmp" "$src" 2>"$lab/bin/downgate.log"; then
			echo "lab: cannot build $src (see $lab/bin/downgate.log): rebooting hosts answer SSH" >&2
			rm -f "$lab/bin/downgate.so" "$lab/bin/downgate.so.tmp"
			return 1
		fi
		chmod 644 "$lab/bin/downgate.so.tmp"
		mv "$lab/bin/downgate.so.tmp" "$lab/bin/downgate.so"
	fi
}

# The lab's SSH server: GC_LAB_SSH_SERVER, "openssh" (the default: OpenSSH's
# sshd, what every test talks to) or "go" (tests/sim/labsshd, for the apply
# bench only: one process serving the same sshd_config, host keys, user and
# simulator server, without OpenSSH's three processes a connection and one a
# session; see that file and docs/lab.md).
ssh_server() {
	case ${GC_LAB_SSH_SERVER:-openssh} in
	openssh | go) echo "${GC_LAB_SSH_SERVER:-openssh}" ;;
	*) die "GC_LAB_SSH_SERVER must be openssh or go, not '$GC_LAB_SSH_SERVER'" ;;
	esac
}

# tests/sim/labsshd into $lab/bin/labsshd, with Debian's Go and
# golang-golang-x-crypto-dev in GOPATH mode (no module proxy), as vcsim is
# built; or the binary GC_LABSSHD_BIN names (the 16-core machine has no Go:
# scripts/device-bench-bundle.sh carries one).
build_labsshd() {
	local src=$root/tests/sim/labsshd/main.go
	mkdir -p "$lab/bin"
	if [ -n "${GC_LABSSHD_BIN:-}" ]; then
		[ -x "$GC_LABSSHD_BIN" ] || die "GC_LABSSHD_BIN: no program at '$GC_LABSSHD_BIN'"
		cp "$GC_LABSSHD_BIN" "$lab/bin/labsshd"
		return 0
	fi
	[ -f "$lab/bin/labsshd" ] && [ ! "$src" -nt "$lab/bin/labsshd" ] && return 0
	command -v go >/dev/null 2>&1 || die "GC_LAB_SSH_SERVER=go needs Go (apt-get install golang-go golang-golang-x-crypto-dev)"
	[ -d /usr/share/gocode/src/golang.org/x/crypto/ssh ] ||
		die "GC_LAB_SSH_SERVER=go needs golang-golang-x-crypto-dev (apt-get install golang-golang-x-crypto-dev)"
	(cd "$(dirname "$src")" && env CGO_ENABLED=0 GO111MODULE=off GOPATH=/usr/share/gocode GOPROXY=off GOFLAGS= \
		go build -o "$lab/bin/labsshd.tmp" .) >"$lab/bin/labsshd.log" 2>&1 ||
		die "cannot build $src (see $lab/bin/labsshd.log)"
	mv "$lab/bin/labsshd.tmp" "$lab/bin/labsshd"
}

# The session command: the simulator server's client when it is built
# (start_simd), else the Python dispatcher it falls back to anyway.
force_command() {
	if [ -x "$lab/bin/simc" ]; then echo "$lab/bin/simc"; else echo "$root/tests/sim/dispatch"; fi
}

# The lab's simulator server (tests/sim/simd.py): one warm Python, run as the
# lab user, that forks each SSH exec's session instead of sshd starting a
# fresh Python for it; tests/sim/simc.c hands the session over.  Without a C
# compiler the lab runs the Python dispatcher per exec, as it did before.
simd_pid() {
	local pid
	pid=$(cat "$lab/simd/pid" 2>/dev/null) || return 1
	[ -n "$pid" ] && alive "$pid" || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "simd.py $lab/simd" || return 1
	echo "$pid"
}

start_simd() {
	local user=$1 src=$root/tests/sim/simc.c
	mkdir -p "$lab/bin"
	chmod 755 "$lab/bin"
	if [ ! -x "$lab/bin/simc" ] || [ "$src" -nt "$lab/bin/simc" ]; then
		# static where libc.a is there: no dynamic loading on every exec
		if command -v cc >/dev/null 2>&1 &&
			{ cc -O2 -Wall -Wextra -static -o "$lab/bin/simc.tmp" "$src" 2>"$lab/bin/simc.log" ||
				cc -O2 -Wall -Wextra -o "$lab/bin/simc.tmp" "$src" 2>>"$lab/bin/simc.log"; }; then
			chmod 755 "$lab/bin/simc.tmp"
			mv "$lab/bin/simc.tmp" "$lab/bin/simc"
		else
			echo "lab: cannot build $src (see $lab/bin/simc.log): one Python per SSH exec" >&2
			rm -f "$lab/bin/simc" "$lab/bin/simc.tmp"
			return 0
		fi
	fi
	if simd_pid >/dev/null; then
		# a server that imported simulators edited since: restart it, so a
		# running lab never answers with code older than the tree
		local f stale=""
		for f in "$root"/tests/sim/*.py "$root/tests/sim/dispatch"; do
			[ "$f" -nt "$lab/simd/pid" ] && stale=1
		done
		[ -z "$stale" ] && return 0
		echo "lab: the simulators changed since the simulator server started: restarting it" >&2
		stop_simd
	fi
	mkdir -p "$lab/simd"
	rm -f "$lab/simd/pid" "$lab/simd/sock"
	chown "$user" "$lab/simd"
	chmod 700 "$lab/simd"
	local run=()
	[ "$(id -u)" = 0 ] && run=(runuser -u "$user" --)
	# its own session, a clean environment (each session brings its own)
	"${run[@]}" setsid env -i PATH=/usr/bin:/bin ${GC_SIMD_FORKERS:+GC_SIMD_FORKERS="$GC_SIMD_FORKERS"} \
		${GC_SIMD_IDLE:+GC_SIMD_IDLE="$GC_SIMD_IDLE"} \
		${GC_SIMD_WORKER_SESSIONS:+GC_SIMD_WORKER_SESSIONS="$GC_SIMD_WORKER_SESSIONS"} "$py" -IS "$root/tests/sim/simd.py" "$lab/simd" \
		</dev/null >>"$lab/simd.log" 2>&1 &
	for _ in $(seq 100); do
		[ -S "$lab/simd/sock" ] && simd_pid >/dev/null && return 0
		sleep 0.05
	done
	echo "lab: the simulator server did not start (see $lab/simd.log): one Python per SSH exec" >&2
}

# The lab user's login shell: simc itself, where this runs as root and
# built it.  sshd runs every session as `SHELL -c "exec $lab/bin/simc"` (the
# ForceCommand), and /bin/sh did nothing there but exec simc; simc as the
# shell does the session itself (tests/sim/simc.c), one exec a session
# less: a fifth of what a session costs the lab sshd (2.4 -> 1.9 ms of CPU
# on the project's 2-core machine; a connection costs it about 9 ms more).
# Any other command line it hands to /bin/sh.  One copy for every
# lab on the machine (the user is shared), in a root-owned directory,
# replaced when a lab brings a different one, under the user's lock.
lab_shell=/usr/local/libexec/gclab/simc

install_shell() {
	local user=$1 lockfd
	[ "$(id -u)" = 0 ] && [ -x "$lab/bin/simc" ] || return 0
	mkdir -p /run/lock
	exec {lockfd}>/run/lock/gpuclusterctl-lab-user.lock
	flock "$lockfd"
	if ! cmp -s "$lab/bin/simc" "$lab_shell"; then
		mkdir -p "${lab_shell%/*}"
		cp "$lab/bin/simc" "$lab_shell.tmp.$$"
		chmod 755 "$lab_shell.tmp.$$"
		mv -f "$lab_shell.tmp.$$" "$lab_shell"
	fi
	[ "$(getent passwd "$user" | cut -d: -f7)" = "$lab_shell" ] || usermod -s "$lab_shell" "$user"
	exec {lockfd}>&-
}

stop_simd() {
	local pid
	pid=$(simd_pid) || return 0
	kill "$pid" 2>/dev/null || true
	for _ in $(seq 100); do
		alive "$pid" || break
		sleep 0.02
	done
	rm -f "$lab/simd/sock" "$lab/simd/pid"
}

write_config() {
	local port=$1 user=$2 out=${3:-$lab/sshd_config}
	cat >"$out" <<EOF
# written by scripts/lab.sh - the gpuclusterctl lab sshd (served by: $(ssh_server))
Port $port
ListenAddress 0.0.0.0
AddressFamily inet
HostKey $lab/ssh_host_ed25519_key
HostKey $lab/ssh_host_ecdsa_key
PidFile $lab/sshd.pid
$(kex_line)
AuthorizedKeysFile $lab/authorized_keys
# Loopback clients only, one user.
AllowUsers $user@127.0.0.0/8
PermitRootLogin no
PubkeyAuthentication yes
PasswordAuthentication yes
KbdInteractiveAuthentication no
PermitEmptyPasswords no
UsePAM no
StrictModes no
UseDNS no
ForceCommand exec $(force_command)
SetEnv GC_LAB_DIR=$lab GC_SIM_DIR=$root/tests/sim${GC_SIM_LATENCY_MS:+ GC_SIM_LATENCY_MS=$GC_SIM_LATENCY_MS}
AcceptEnv GC_SIM_LATENCY_MS
PermitUserEnvironment no
AllowTcpForwarding no
AllowAgentForwarding no
AllowStreamLocalForwarding no
X11Forwarding no
PermitTunnel no
PrintMotd no
PrintLastLog no
# One listener for every simulated host: a real host's sshd starts dropping
# unauthenticated connections past 10 (10:30:100), and 256 hosts dialled at
# once (bench/apply_bench.py, up to 1000 hosts) are that many listeners' worth.
MaxStartups 1000:30:2000
MaxSessions 64
MaxAuthTries 6
LoginGraceTime 30
ClientAliveInterval 0
LogLevel VERBOSE
EOF
}

py=/usr/bin/python3
vcsim_sh=$root/tests/sim/vcsim.sh

vcsim() { GC_VCSIM_DIR=$lab/vcsim "$vcsim_sh" "$@"; }

# The lab's real Linux guests (tests/sim/guestlab/guests.sh).
guests() { GC_LAB_DIR=$lab "$root/tests/sim/guestlab/guests.sh" "$@"; }

# Boot (or keep) the spec's guests: $1 lab port, $2 --guests (may be empty).
start_guests() {
	local spec
	spec=$(cat "$lab/spec" 2>/dev/null || true)
	if [ -z "$spec" ]; then
		guests stop
		return 0
	fi
	guests start "$spec" "$1" ${2:+"$2"}
}

# The lab's vCenter, for a spec with a vcenter: vcsim with the spec's
# inventory (tests/sim/lab_spec.py vcsim-inventory).  A running vcsim with
# the same port and inventory is left alone; otherwise it is (re)started,
# which is a fresh inventory.  $1: the port asked for, may be empty.
start_vcsim() {
	local want=$1 spec port pid
	spec=$(cat "$lab/spec" 2>/dev/null || true)
	if [ -z "$spec" ] || ! "$py" -c 'import sys, yaml; sys.exit(0 if (yaml.safe_load(open(sys.argv[1])) or {}).get("vcenter") else 1)' "$spec"; then
		stop_vcsim
		rm -f "$lab/vcsim-inventory.json" "$lab/vcsim/port"
		return 0
	fi
	port=${want:-${GC_LAB_VCSIM_PORT:-$(cat "$lab/vcsim/port" 2>/dev/null || echo 8990)}}
	[[ $port =~ ^[0-9]+$ ]] || die "not a number: '$port'"
	"$py" "$root/tests/sim/lab_spec.py" vcsim-inventory "$spec" >"$lab/vcsim-inventory.json.tmp" ||
		die "cannot write vcsim's inventory from $spec"
	if pid=$(vcsim_pid) && [ "$(cat "$lab/vcsim/port" 2>/dev/null)" = "$port" ] &&
		cmp -s "$lab/vcsim-inventory.json" "$lab/vcsim-inventory.json.tmp"; then
		rm -f "$lab/vcsim-inventory.json.tmp"
		echo "lab: vcsim already running (pid $pid, port $port)"
		return 0
	fi
	mv "$lab/vcsim-inventory.json.tmp" "$lab/vcsim-inventory.json"
	stop_vcsim
	run_vcsim "$port"
}

run_vcsim() {
	vcsim start --port "$1" --inventory "$lab/vcsim-inventory.json" ||
		die "vcsim did not start on port $1 (see $lab/vcsim/vcsim.log)"
	echo "lab: started vcsim (pid $(vcsim_pid)) on https://127.0.0.1:$1/sdk: $(spec_summary)"
}

spec_summary() {
	"$py" -c 'import json, sys; d = json.load(open(sys.argv[1])); print("datacenter %s, cluster %s, %d hosts, %d templates" % (d["datacenter"], d["cluster"], len(d["hosts"]), len(d["templates"])))' "$lab/vcsim-inventory.json"
}

vcsim_pid() {
	[ -d "$lab/vcsim" ] || return 1
	vcsim status >/dev/null 2>&1 || return 1
	cat "$lab/vcsim/vcsim.pid"
}

stop_vcsim() {
	local pid
	pid=$(vcsim_pid) || return 0
	vcsim stop
	echo "lab: stopped vcsim (pid $pid)"
}

# Seed the simulated hosts of a spec lab with the spec's hardware (only
# hosts without state yet), owned by the lab user.
seed_from_spec() {
	local user=$1 spec
	[ -f "$lab/spec" ] || return 0
	spec=$(cat "$lab/spec")
	"$py" "$root/tests/sim/lab_spec.py" seed "$spec" "$lab" || die "cannot seed the lab from $spec"
	chown -R "$user" "$lab/hosts"
}

# A start that fails after it started the simulator server and vcsim stops
# them again: a lab that did not start leaves nothing running (a vcsim left
# holding its port fails the next lab that asks for that port).
start_failed() {
	stop_simd
	stop_vcsim
	die "$@"
}

cmd_start() {
	local hosts=2 switches=0 esxi7=0 port="" user pid spec="" vcport="" nguests=""
	while [ $# -gt 0 ]; do
		case $1 in
		--spec) spec=${2:?}; shift 2 ;;
		--vcsim-port) vcport=${2:?}; shift 2 ;;
		--guests) nguests=${2:?}; shift 2 ;;
		--hosts) hosts=${2:?}; shift 2 ;;
		--switches) switches=${2:?}; shift 2 ;;
		--esxi7) esxi7=${2:?}; shift 2 ;;
		--port) port=${2:?}; shift 2 ;;
		*) usage ;;
		esac
	done
	for v in "$hosts" "$switches" "$esxi7" ${port:+"$port"} ${vcport:+"$vcport"} ${nguests:+"$nguests"}; do
		[[ $v =~ ^[0-9]+$ ]] || die "not a number: '$v'"
	done
	kex_line >/dev/null # a GC_LAB_KEX that is not a list stops here
	ssh_server >/dev/null # and a GC_LAB_SSH_SERVER that is neither
	[ -x "$sshd_bin" ] || die "$sshd_bin not found (apt-get install openssh-server)"
	[ -n "$port" ] || port=${GC_LAB_PORT:-}
	[ -n "$port" ] || port=$(cat "$lab/port" 2>/dev/null || true)
	[ -n "$port" ] || port=2222
	user=$(lab_user)

	mkdir -p "$lab/client"
	chmod 755 "$lab"
	chmod 700 "$lab/client"
	[ -f "$lab/ssh_host_ed25519_key" ] ||
		ssh-keygen -q -t ed25519 -N '' -C gclab-host -f "$lab/ssh_host_ed25519_key"
	[ -f "$lab/ssh_host_ecdsa_key" ] ||
		ssh-keygen -q -t ecdsa -b 256 -N '' -C gclab-host -f "$lab/ssh_host_ecdsa_key"
	[ -f "$lab/client/id_ed25519" ] ||
		ssh-keygen -q -t ed25519 -N '' -C gclab-client -f "$lab/client/id_ed25519"
	cp "$lab/client/id_ed25519.pub" "$lab/authorized_keys"
	chmod 644 "$lab/authorized_keys"
	ensure_user "$user"
	echo "$user" >"$lab/user"
	if [ -n "$spec" ]; then
		[ -f "$spec" ] || die "no spec file '$spec'"
		spec=$(cd "$(dirname "$spec")" && pwd)/$(basename "$spec")
		{
			echo "# address kind name [key=value ...]   (written by scripts/lab.sh from $spec)"
			"$py" "$root/tests/sim/lab_spec.py" inventory "$spec"
		} >"$lab/inventory.tmp" || die "cannot read $spec"
		mv "$lab/inventory.tmp" "$lab/inventory"
		echo "$spec" >"$lab/spec"
		hosts=$(grep -c ' esxi ' "$lab/inventory" || true)
		switches=$(grep -c ' onyx ' "$lab/inventory" || true)
	else
		rm -f "$lab/spec"
		write_inventory "$hosts" "$switches" "$esxi7"
	fi
	make_host_dirs "$user"
	seed_from_spec "$user"
	# The simulators run as the lab user: it must reach its host directories.
	if [ "$(id -u)" = 0 ] && ! runuser -u "$user" -- test -x "$lab/hosts" -a -r "$lab/inventory"; then
		die "user $user cannot reach $lab (a parent directory is not searchable by others?); choose another GC_LAB_DIR"
	fi
	start_vcsim "$vcport"
	start_simd "$user"
	install_shell "$user"

	if pid=$(sshd_pid); then
		write_config "$port" "$user" "$lab/sshd_config.new"
		if [ "$(cat "$lab/port")" = "$port" ] &&
			cmp -s "$lab/sshd_config" "$lab/sshd_config.new"; then
			rm -f "$lab/sshd_config.new"
			write_known_hosts "$port"
			echo "lab: already running (pid $pid, port $port, $hosts hosts, $switches switches)"
			start_guests "$port" "$nguests"
			write_lab_spec
			return 0
		fi
		rm -f "$lab/sshd_config.new"
		cmd_stop >/dev/null
	fi
	echo "$port" >"$lab/port"
	write_known_hosts "$port"
	write_config "$port" "$user"
	if [ "$(id -u)" = 0 ]; then
		mkdir -p /run/sshd
		chmod 755 /run/sshd
	fi
	"$sshd_bin" -t -f "$lab/sshd_config" || start_failed "sshd rejected $lab/sshd_config"
	rm -f "$lab/sshd.pid"
	: >"$lab/sshd.log"
	# sshd binds before it daemonizes: a busy port fails here, not later.
	# -r: each connection is a fork of the listener, not a re-exec of sshd
	# (a fresh address-space layout per connection, which a real host's
	# sshd keeps; here one sshd answers for every simulated host on this
	# machine's cores, and the re-exec was a fifth to a quarter of its CPU per
	# connection: the apply bench's reboot polls and handshakes)
	# A rebooting host takes no new connection (tests/sim/downgate.c, when
	# a C compiler built it): the sshd's accept() resets a connection to an
	# address whose $lab/down/ADDRESS names a time still to come.
	# Several listeners share the port where downgate.so is there to set
	# SO_REUSEPORT (GC_LAB_REUSEPORT): 256 real hosts have 256 listeners,
	# and one sshd accepting and forking every connection in turn was the
	# queue a burst of the apply bench's hosts waited in.
	if [ "$(ssh_server)" = go ]; then
		start_labsshd "$port" "$user"
		start_guests "$port" "$nguests"
		write_lab_spec
		return 0
	fi
	local preload=() n i
	n=1
	if build_downgate; then
		n=$(listeners_wanted)
		preload=(env "LD_PRELOAD=$lab/bin/downgate.so" "GC_LAB_DOWN_DIR=$lab/down")
		[ "$n" -gt 1 ] && preload+=(GC_LAB_REUSEPORT=1)
	fi
	rm -f "$lab"/sshd.[0-9]*.pid
	# SO_REUSEPORT would let these listeners share the port with another
	# root process's that set it too (another lab's sshd): a port already
	# listened on fails here, as it did before they shared it.
	if command -v ss >/dev/null 2>&1 && [ -n "$(ss -Hltn "sport = :$port" 2>/dev/null)" ]; then
		start_failed "sshd did not start on port $port: something listens there already (ss -ltnp 'sport = :$port')"
	fi
	if ! "${preload[@]}" "$sshd_bin" -r -f "$lab/sshd_config" -E "$lab/sshd.log"; then
		sed 's/^/lab: sshd: /' "$lab/sshd.log" >&2
		start_failed "sshd did not start on port $port"
	fi
	for _ in $(seq 50); do
		pid=$(sshd_pid) && break
		sleep 0.05
	done
	[ -n "${pid:-}" ] || start_failed "sshd did not write its pid file (see $lab/sshd.log)"
	for ((i = 2; i <= n; i++)); do
		if ! "${preload[@]}" "$sshd_bin" -r -f "$lab/sshd_config" -o "PidFile=$lab/sshd.$i.pid" \
			-E "$lab/sshd.log"; then
			echo "lab: a listener more on port $port did not start (see $lab/sshd.log): $((i - 1)) listeners" >&2
			break
		fi
	done
	echo "lab: started sshd (pid $pid$( ((n > 1)) && echo " and $((n - 1)) more on its port")) on port $port: $hosts ESXi hosts, $switches switches, lab dir $lab"
	start_guests "$port" "$nguests"
	write_lab_spec
}

# GC_LAB_SSH_SERVER=go: tests/sim/labsshd on the lab's port, in the
# background, serving $lab/sshd_config (its pid in the PidFile there).
start_labsshd() {
	local port=$1 user=$2 pid pw=$user_home/.lab-password
	build_labsshd
	[ -r "$pw" ] || pw=""
	if command -v ss >/dev/null 2>&1 && [ -n "$(ss -Hltn "sport = :$port" 2>/dev/null)" ]; then
		start_failed "labsshd did not start on port $port: something listens there already (ss -ltnp 'sport = :$port')"
	fi
	setsid env GC_LAB_DOWN_DIR="$lab/down" "$lab/bin/labsshd" -f "$lab/sshd_config" \
		${pw:+-password-file "$pw"} -simd "$lab/simd/sock" -E "$lab/sshd.log" \
		</dev/null >>"$lab/sshd.log" 2>&1 &
	for _ in $(seq 100); do
		pid=$(sshd_pid) && break
		sleep 0.05
	done
	[ -n "${pid:-}" ] || start_failed "labsshd did not start on port $port (see $lab/sshd.log)"
	echo "lab: started labsshd (pid $pid) on port $port: $(grep -c ' esxi ' "$lab/inventory" || true) ESXi hosts, lab dir $lab"
}

# The spec of a spec lab, with its connection settings pointed at the lab.
write_lab_spec() {
	local spec out
	[ -f "$lab/spec" ] || return 0
	spec=$(cat "$lab/spec")
	out=$lab/$(basename "$spec")
	"$py" "$root/tests/sim/lab_spec.py" rewrite "$spec" "$lab" "$out" || die "cannot write $out"
	echo "lab: $out is $spec with its connections pointed at the lab"
}

cmd_stop() {
	local pid kids p extra
	extra=$(extra_listeners)
	if pid=$(sshd_pid); then
		# The listeners' children are the per-connection sshd processes;
		# each takes its session with it when it gets SIGTERM.
		for p in $pid $extra; do
			kids=$(ps -o pid= --ppid "$p" 2>/dev/null || true)
			kill "$p" 2>/dev/null || true
			for k in $kids; do kill "$k" 2>/dev/null || true; done
		done
		for p in $pid $extra; do
			for _ in $(seq 100); do
				alive "$p" || break
				sleep 0.02
			done
			alive "$p" && kill -9 "$p" 2>/dev/null || true
		done
		echo "lab: stopped sshd (pid $pid$([ -n "$extra" ] && echo " and $(echo $extra | wc -w) more"))"
	else
		for p in $extra; do kill "$p" 2>/dev/null || true; done
		echo "lab: not running"
	fi
	rm -f "$lab/sshd.pid" "$lab"/sshd.[0-9]*.pid
	stop_simd
	stop_vcsim
	guests stop
}

cmd_status() {
	local pid
	local rc=0
	if pid=$(sshd_pid); then
		echo "lab: running (pid $pid, port $(cat "$lab/port"), lab dir $lab)"
		grep -v '^#' "$lab/inventory" | sed 's/^/  /'
	else
		echo "lab: not running (lab dir $lab)"
		rc=3
	fi
	if [ -f "$lab/vcsim-inventory.json" ]; then
		if pid=$(vcsim_pid); then
			echo "lab: vcsim running (pid $pid, https://127.0.0.1:$(cat "$lab/vcsim/port")/sdk): $(spec_summary)"
		else
			echo "lab: vcsim not running (lab dir $lab/vcsim)"
			rc=3
		fi
	fi
	guests status || rc=3
	return $rc
}

cmd_reset() {
	# Forget all simulated state (and faults, logs); keep keys and sshd.
	local user name
	[ -f "$lab/inventory" ] || die "no lab at $lab (run: scripts/lab.sh start)"
	user=$(cat "$lab/user")
	while read -r _ _ name _; do
		[ -n "${name:-}" ] || continue
		rm -rf "${lab:?}/hosts/$name"
	done < <(grep -v '^#' "$lab/inventory")
	make_host_dirs "$user"
	seed_from_spec "$user"
	echo "lab: reset $lab/hosts"
	if [ -f "$lab/vcsim-inventory.json" ] && [ -f "$lab/vcsim/port" ]; then
		# vCenter state lives in vcsim's memory: a restart is a fresh inventory
		rm -f "$lab/vcsim/faults.json"
		stop_vcsim >/dev/null
		run_vcsim "$(cat "$lab/vcsim/port")" >/dev/null
		echo "lab: reset vcsim (fresh inventory, no faults)"
	fi
}

cmd_env() {
	[ -f "$lab/port" ] || die "no lab at $lab (run: scripts/lab.sh start)"
	cat <<EOF
export GC_LAB_DIR='$lab'
export GC_LAB_PORT=$(cat "$lab/port")
export GC_LAB_USER=$(cat "$lab/user")
export GC_LAB_KNOWN_HOSTS='$lab/client/known_hosts'
export GC_LAB_KEY='$lab/client/id_ed25519'
export GC_LAB_PASSWORD_FILE='$lab/client/password'
EOF
	if [ -f "$lab/guest_key" ]; then
		cat <<EOF
export GC_LAB_GUEST_KEY='$lab/guest_key'
export GC_LAB_GUEST_KNOWN_HOSTS='$lab/known_hosts'
export GC_LAB_GUEST_PORT=$(($(cat "$lab/port") + 10000))
export GC_LAB_GUEST_PASSWORD_FILE='$lab/guest_password'
EOF
	fi
	if [ -f "$lab/vcsim-inventory.json" ] && [ -f "$lab/vcsim/port" ]; then
		cat <<EOF
export GC_LAB_VCSIM_URL=https://127.0.0.1:$(cat "$lab/vcsim/port")/sdk
export GC_LAB_VCSIM_CA_FILE='$lab/vcsim/ca.crt'
export GC_LAB_VCSIM_USERNAME=$(cat "$lab/vcsim/username")
export GC_LAB_VCSIM_PASSWORD_FILE='$lab/vcsim/password'
export GC_LAB_VCSIM_FAULTS='$lab/vcsim/faults.json'
EOF
	fi
}

[ $# -ge 1 ] || usage
verb=$1
shift
case $verb in
start) cmd_start "$@" ;;
stop) cmd_stop ;;
status) cmd_status ;;
reset) cmd_reset ;;
env) cmd_env ;;
guest-reset) guests reset "$@" ;;
*) usage ;;
esac
