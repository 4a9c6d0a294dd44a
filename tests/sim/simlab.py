"""simlab - plumbing shared by the lab's simulators (tests/sim/).

The lab sshd runs tests/sim/dispatch for every session (ForceCommand).  The
dispatcher finds the simulated host from the address the client dialled and
hands over to a simulator; this module gives simulators what they share:

- the host record from the lab inventory (address, kind, name, key=value
  attributes) and the host's own directory under $GC_LAB_DIR/hosts/<name>/;
- a file lock (flock on hosts/<name>/lock) around state read-modify-write;
- the command log hosts/<name>/commands.log: one line per command received,
  "<UTC ISO-8601 timestamp with ms> <command>" with backslash, newline and
  carriage return escaped as \\\\, \\n and \\r;
- faults from the control file hosts/<name>/control.json (see docs/lab.md):
  latency_ms, rtt_ms, slow, drop_after, drop_once, fail_once, kill_once, reboot_seconds;
- drop_session(): end the SSH connection the way a dying host does, by
  killing this session's sshd process (the client sees the socket close, no
  exit status; ssh(1) would exit 255).

Only the standard library, and only light modules: a session is a fork of
the lab's simulator server (tests/sim/simd.py), or a fresh Python for every
exec where the server is not running, so start-up time is latency the tests
pay.
"""

import fcntl
import json
import os
import signal
import sys
import time


class Host:
    def __init__(self, lab, address, kind, name, attrs):
        self.lab = lab
        self.address = address
        self.kind = kind
        self.name = name
        self.attrs = attrs
        self.dir = os.path.join(lab, "hosts", name)

    def path(self, leaf):
        return os.path.join(self.dir, leaf)


def lab_dir():
    lab = os.environ.get("GC_LAB_DIR")
    if not lab:
        raise SystemExit("gclab: GC_LAB_DIR is not set (is this the lab sshd?)")
    return lab


def dialled_address():
    """The server address of this SSH connection: 3rd field of SSH_CONNECTION."""
    conn = os.environ.get("SSH_CONNECTION", "").split()
    return conn[2] if len(conn) >= 3 else os.environ.get("GC_SIM_ADDR", "")


def find_host(lab, address):
    record = _inventory(os.path.join(lab, "inventory")).get(address)
    return Host(lab, address, record[0], record[1], dict(record[2])) if record else None


def _inventory(path):
    """{address: (kind, name, attrs)} of the lab inventory (cached_read)."""
    got = cached_read(path, _parse_inventory)
    return got if got is not None else {}


def _parse_inventory(text):
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if not parts or parts[0].startswith("#") or len(parts) < 3 or parts[0] in out:
            continue
        out[parts[0]] = (parts[1], parts[2], dict(p.split("=", 1) for p in parts[3:] if "=" in p))
    return out


# What a file held when this process last read it, by path, with the file's
# identity then (inode, size, mtime, ctime): a simulator server's worker
# runs session after session, and a session read the same few files dozens
# of times (an observation batch: control.json 33 times, state.json 13),
# open, read and close being a fifth of its CPU.  Every read still stat()s
# the file; a file replaced (write_json: a new inode), rewritten or
# touched since is read again.  A file changed within CACHE_SETTLE_NS of the
# read is not kept: its mtime, from the kernel's coarse clock, could still
# equal that of a write to come in the same tick (what git calls "racily
# clean"), which a test that rewrites control.json in place could hit.
CACHE_SETTLE_NS = 50 * 1000 * 1000
CACHE_MAX = 1024
_CACHE = {}


def cached_read(path, parse):
    """parse(text) of the file at path, or None where there is none.  What
    parse returns is shared by later reads of the unchanged file: callers
    must not change it (read_json hands out a fresh parse every time)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        _CACHE.pop(path, None)
        return None
    key = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, parse)
    hit = _CACHE.get(path)
    if hit is not None and hit[0] == key:
        return hit[1]
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return None
    value = parse(text)
    if time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) > CACHE_SETTLE_NS:
        if len(_CACHE) >= CACHE_MAX:
            _CACHE.clear()
        _CACHE[path] = (key, value)
    return value


class Lock:
    """flock() on hosts/<name>/lock; a with-statement holds it."""

    def __init__(self, host):
        self.path = host.path("lock")
        self.fd = -1

    def __enter__(self):
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        os.close(self.fd)
        self.fd = -1


def read_json(path, default):
    """The file's JSON, parsed afresh (callers change what they get), from
    its text as cached_read last saw it."""
    text = cached_read(path, _text)
    return default if text is None else json.loads(text)


def _text(text):
    return text


def write_json(path, data):
    """Atomic replace (the host directory belongs to the lab user).  One
    line, keys sorted (`python3 -m json.tool` shows it indented): json's C
    encoder takes no indent, and its Python one was a quarter of the CPU of
    a session that writes the state (a read-back: 0.7 of 2.6 ms)."""
    tmp = "%s.%d.tmp" % (path, os.getpid())
    text = json.dumps(data, sort_keys=True) + "\n"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def _escape(text):
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")


def log_command(host, command, leaf="commands.log"):
    now = time.time()
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now))
    line = "%s.%03dZ %s\n" % (stamp, int(now * 1000) % 1000, _escape(command))
    fd = os.open(host.path(leaf), os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        os.write(fd, line.encode("utf-8", "replace"))
    finally:
        os.close(fd)


def read_control(host):
    return read_json(host.path("control.json"), {})


def write_control(host, control):
    if control:
        write_json(host.path("control.json"), control)
    else:
        try:
            os.unlink(host.path("control.json"))
        except FileNotFoundError:
            pass


def latency_ms(host, control=None):
    if control is None:
        control = read_control(host)
    if "latency_ms" in control:
        return int(control["latency_ms"])
    try:
        return int(os.environ.get("GC_SIM_LATENCY_MS", "0") or 0)
    except ValueError:
        return 0


def slow_ms(control, command):
    """Milliseconds more for this one command: control's `slow`,
    {"match": prefix, "ms": N}, delays every command starting with prefix
    (a switch's `configuration write`, slower than its reads)."""
    slow = control.get("slow")
    if not isinstance(slow, dict) or not command.startswith(slow.get("match", "")):
        return 0
    try:
        return int(slow.get("ms", 0) or 0)
    except (TypeError, ValueError):
        return 0


def rtt_ms(host, control=None):
    """Milliseconds a whole exec (one SSH round trip) waits before its first
    command: the network's round trip, paid once per exec however many
    commands its line holds (latency_ms is paid by every command)."""
    if control is None:
        control = read_control(host)
    try:
        return int(control.get("rtt_ms", 0) or 0)
    except (TypeError, ValueError):
        return 0


def take_fault(host, command, control=None):
    """Consume one-shot faults for the command about to run (lock held).

    control: the control file as the caller just read it under the same
    lock (it is changed in place when a fault is consumed, so the caller
    holds what the file now says); None reads it here.

    Returns None, ("drop",), ("fail", message, exit_status, stream) or
    ("kill", signal_number).
    drop_after N: N commands run normally, the next drops the connection.
    drop_once {"match": prefix}: the first command starting with prefix drops
    the connection instead of running.
    fail_once {"match": prefix, "message": text, "exit": 1, "stream": "stderr",
    "times": 1}: the first command starting with prefix fails with that
    text, and the next ones up to `times` in all.
    kill_once {"match": prefix, "signal": 9}: the simulator kills itself with
    that signal when that command comes (sshd reports the exit signal).
    """
    if control is None:
        control = read_control(host)
    result = None
    changed = False
    if "drop_after" in control:
        n = int(control["drop_after"])
        if n <= 0:
            del control["drop_after"]
            result = ("drop",)
        else:
            control["drop_after"] = n - 1
        changed = True
    drop = control.get("drop_once")
    if result is None and drop and command.startswith(drop.get("match", "")):
        del control["drop_once"]
        changed = True
        result = ("drop",)
    fail = control.get("fail_once")
    if result is None and fail and command.startswith(fail.get("match", "")):
        if int(fail.get("times", 1)) > 1:
            fail["times"] = int(fail["times"]) - 1
        else:
            del control["fail_once"]
        changed = True
        result = ("fail", fail.get("message", "Error: injected failure"),
                  int(fail.get("exit", 1)), fail.get("stream", "stderr"))
    kill = control.get("kill_once")
    if result is None and kill and command.startswith(kill.get("match", "")):
        del control["kill_once"]
        changed = True
        result = ("kill", int(kill.get("signal", 9)))
    if changed:
        write_control(host, control)
    return result


def _ppid_comm(pid):
    with open("/proc/%d/stat" % pid, encoding="utf-8", errors="replace") as f:
        data = f.read()
    comm = data[data.index("(") + 1:data.rindex(")")]
    ppid = int(data[data.rindex(")") + 2:].split()[1])
    return ppid, comm


# The process sshd started for this session: this one, or under the lab's
# simulator server (tests/sim/simd.py) the client that handed it over.
session_pid = None
# True in a worker of the simulator server, which runs sessions one after
# another: drop_session() ends the session, not the process.
in_worker = False


class SessionDropped(BaseException):
    """drop_session() in a worker: the session ends with status 255 and the
    worker goes on to the next one (simd.run_session).  A BaseException, so
    that no handler of the simulators' own errors takes it."""


def drop_session():
    """Kill this session's sshd process: the connection drops, no output.
    Then end the session: exit 255, or in a worker of the simulator server
    raise SessionDropped (a fresh process per reboot was most of what the
    server's workers still forked: every simulated reboot drops its
    session)."""
    try:
        sys.stdout.flush()
    except Exception:
        pass
    # session_pid 0: the client has no process of a connection's own to
    # kill (tests/sim/labsshd); the simulator server answers "d" and the
    # client closes the connection itself
    pid = session_pid if session_pid is not None else os.getpid()
    for _ in range(8 if pid else 0):
        try:
            ppid, _comm = _ppid_comm(pid)
            _pp, comm = _ppid_comm(ppid)
        except (OSError, ValueError, IndexError):
            break
        if comm == "sshd":
            try:
                os.kill(ppid, signal.SIGKILL)
            except OSError:
                pass
            break
        pid = ppid
    if in_worker:
        raise SessionDropped()
    os._exit(255)
