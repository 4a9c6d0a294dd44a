#!/usr/bin/env bash
# vcsim.sh - the lab's vCenter: govmomi's simulator on loopback with TLS.
#
#   tests/sim/vcsim.sh build              # once; cached; needs no network
#   tests/sim/vcsim.sh start [--port P] [--vms N] [--host-gpus FILE] [--inventory FILE]
#                            [--method-delay M:ms,...] [--paging]
#                 (--vms: VMs per resource pool; the default model has 2 pools;
#                  --host-gpus: passthrough devices and vGPU types per host, see
#                  tests/sim/vcsim/main.go and tests/sim/vcsim/host-gpus.json;
#                  --inventory: a spec's inventory instead of the default model,
#                  from tests/sim/lab_spec.py vcsim-inventory SPEC;
#                  --paging: RetrievePropertiesEx results in pages of the
#                  caller's maxObjects, as vCenter does, see
#                  tests/sim/vcsim/paging.go; without it, one reply as from vcsim)
# Start waits $GC_VCSIM_START_S seconds (default 60) for vcsim to listen:
# a model of tens of thousands of VMs takes longer to build.
#   tests/sim/vcsim.sh stop | status | env
#
# Built from Debian 12's golang-github-vmware-govmomi-dev with Debian's Go in
# GOPATH mode.  That package ships the simulator library but not govmomi's
# vcsim command, so tests/sim/vcsim/main.go is the command we build.
#
# Binary: $GC_VCSIM_BIN (default .lab/vcsim/bin at the repository root), shared
# by every lab dir; rebuilt only when a tests/sim/vcsim/*.go file is newer.  Lab dir: $GC_VCSIM_DIR
# (default .lab/vcsim): the test CA and server certificate (openssl, SAN
# 127.0.0.1 and localhost), the password file, the pid file and the log.
# Port: --port, else $GC_VCSIM_PORT, else 8990.  Username: gcadmin.
# Faults: vcsim reads $lab/faults.json at every request (format in
# tests/sim/vcsim/faults.go); tests write and remove it while vcsim runs.
# Host configuration calls (UpdatePassthruConfig, UpdateDateTimeConfig, the
# service calls) are appended as received to $lab/host-calls.log, the
# distributed switch calls (CreateDVS_Task, ReconfigureDvs_Task) to
# $lab/dvs-calls.log.
# Secrets live in files under the lab dir and are never printed.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bindir=${GC_VCSIM_BIN:-$root/.lab/vcsim/bin}
lab=${GC_VCSIM_DIR:-$root/.lab/vcsim}
case $lab in /*) ;; *) lab=$PWD/$lab ;; esac
case $bindir in /*) ;; *) bindir=$PWD/$bindir ;; esac
port=${GC_VCSIM_PORT:-8990}
user=gcadmin
src=$root/tests/sim/vcsim

die() { echo "vcsim: $*" >&2; exit 1; }

usage() {
	echo "usage: tests/sim/vcsim.sh build | start [--port P] [--vms N] [--host-gpus FILE] [--inventory FILE] [--method-delay M:ms,...] [--paging] | stop | status | env" >&2
	exit 2
}

# In a subshell, so the lock's descriptor never leaks into vcsim itself.
build() (
	local bin=$bindir/vcsim
	mkdir -p "$bindir"
	exec 9>"$bindir/.lock"
	flock 9
	if [ -x "$bin" ] && [ -z "$(find "$src" -maxdepth 1 -name '*.go' -newer "$bin")" ]; then
		return 0
	fi
	command -v go >/dev/null || die "no 'go': install golang-go (scripts/setup.sh)"
	[ -d /usr/share/gocode/src/github.com/vmware/govmomi/simulator ] ||
		die "no govmomi simulator: install golang-github-vmware-govmomi-dev (scripts/setup.sh)"
	# GOPATH mode against Debian's packaged sources only: no module proxy,
	# no network.  The build cache stays beside the binary.
	env GO111MODULE=off GOPATH=/usr/share/gocode GOPROXY=off GOFLAGS= \
		GOCACHE="$bindir/cache" HOME="$bindir" \
		go build -o "$bin.tmp" "$src"/*.go >"$bindir/build.log" 2>&1 ||
		die "build failed (see $bindir/build.log)"
	mv -f "$bin.tmp" "$bin"
)

vcsim_pid() {
	local pid
	[ -f "$lab/vcsim.pid" ] || return 1
	pid=$(cat "$lab/vcsim.pid" 2>/dev/null) || return 1
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
	# Only our vcsim: its command line names our certificate.
	tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$lab/server.crt" || return 1
	echo "$pid"
}

# A CA and a server certificate signed by it, made once per lab dir.
make_certs() {
	[ -f "$lab/server.crt" ] && [ -f "$lab/server.key" ] && [ -f "$lab/ca.crt" ] && return 0
	command -v openssl >/dev/null || die "no 'openssl' (scripts/setup.sh)"
	(
		cd "$lab"
		umask 077
		openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=gpuclusterctl lab CA" \
			-keyout ca.key -out ca.crt -addext basicConstraints=critical,CA:TRUE \
			-addext keyUsage=critical,keyCertSign,cRLSign
		openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" \
			-keyout server.key -out server.csr
		printf '%s\n' "subjectAltName=IP:127.0.0.1,DNS:localhost" \
			"basicConstraints=CA:FALSE" "keyUsage=digitalSignature,keyEncipherment" \
			"extendedKeyUsage=serverAuth" >server.ext
		openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
			-days 3650 -extfile server.ext -out server.crt
		chmod 644 ca.crt server.crt
	) >"$lab/openssl.log" 2>&1 || die "openssl failed (see $lab/openssl.log)"
}

make_password() {
	[ -s "$lab/password" ] && return 0
	(umask 077; printf '%s' "$(head -c 18 /dev/urandom | base64 | tr -d '/+=')" >"$lab/password")
}

start() {
	local delay="" vms="" gpus="" inv="" paging="" pid i wait_s=${GC_VCSIM_START_S:-60}
	while [ $# -gt 0 ]; do
		case $1 in
		--port) port=${2:?}; shift 2 ;;
		--method-delay) delay=${2:?}; shift 2 ;;
		--vms) vms=${2:?}; shift 2 ;;
		--host-gpus) gpus=${2:?}; shift 2 ;;
		--inventory) inv=${2:?}; shift 2 ;;
		--paging) paging=1; shift ;;
		*) usage ;;
		esac
	done
	case $port in '' | *[!0-9]*) die "bad port '$port'" ;; esac
	mkdir -p "$lab"
	if pid=$(vcsim_pid); then
		die "already running (pid $pid); stop it first"
	fi
	build
	make_certs
	make_password
	echo "$port" >"$lab/port"
	echo "$user" >"$lab/username"
	set -- -l "127.0.0.1:$port" -tlscert "$lab/server.crt" -tlskey "$lab/server.key" \
		-username "$user" -password-file "$lab/password"
	[ -n "$delay" ] && set -- "$@" -method-delay "$delay"
	[ -n "$gpus" ] && set -- "$@" -host-gpus "$gpus"
	[ -n "$inv" ] && set -- "$@" -inventory "$inv"
	[ -n "$paging" ] && set -- "$@" -paging
	set -- "$@" -faults "$lab/faults.json" # read at every request; absent = no faults
	set -- "$@" -host-calls "$lab/host-calls.log" # host configuration SOAP bodies as received
	set -- "$@" -dvs-calls "$lab/dvs-calls.log"   # CreateDVS_Task, ReconfigureDvs_Task bodies
	case $vms in '' | *[!0-9]*) [ -z "$vms" ] || die "bad --vms '$vms'" ;; *) set -- "$@" -vm "$vms" ;; esac
	# The line below is read to learn that it listens: a restart's old line
	# must be gone before the new process starts, or the wait loop can read
	# it before the background job's redirection truncates the file (seen
	# in CI on a loaded machine: the first request after a lab reset got
	# "connection refused").
	rm -f "$lab/vcsim.out"
	setsid "$bindir/vcsim" "$@" >"$lab/vcsim.out" 2>"$lab/vcsim.log" </dev/null &
	echo $! >"$lab/vcsim.pid"
	case $wait_s in '' | *[!0-9]*) die "bad GC_VCSIM_START_S '$wait_s'" ;; esac
	for i in $(seq 1 $((wait_s * 10))); do
		grep -q '^export GOVC_URL=' "$lab/vcsim.out" 2>/dev/null && return 0
		kill -0 "$(cat "$lab/vcsim.pid")" 2>/dev/null ||
			die "exited at start: $(tail -n 3 "$lab/vcsim.log")"
		sleep 0.1
	done
	die "not listening after $wait_s s (see $lab/vcsim.log)"
}

stop() {
	local pid i
	pid=$(vcsim_pid) || { rm -f "$lab/vcsim.pid"; return 0; }
	kill -TERM "$pid"
	for i in $(seq 1 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
	rm -f "$lab/vcsim.pid"
}

print_env() {
	[ -f "$lab/port" ] || die "never started in $lab"
	echo "GC_VCSIM_URL=https://127.0.0.1:$(cat "$lab/port")"
	echo "GC_VCSIM_CA_FILE=$lab/ca.crt"
	echo "GC_VCSIM_USERNAME=$(cat "$lab/username")"
	echo "GC_VCSIM_PASSWORD_FILE=$lab/password"
}

case ${1:-} in
build) build ;;
start) shift; start "$@" ;;
stop) stop ;;
status) if pid=$(vcsim_pid); then echo "running (pid $pid, port $(cat "$lab/port"))"; else echo stopped; exit 1; fi ;;
env) print_env ;;
*) usage ;;
esac
