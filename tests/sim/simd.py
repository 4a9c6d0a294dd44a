"""simd - the lab's simulator server: one warm Python that forks a session.

Every SSH exec the lab sshd accepts used to start a fresh Python for
tests/sim/dispatch (interpreter, imports, the simulator module): about 50 ms
of CPU on the project's 2-core machine, half of what a lab test spent.  The
simulated hosts must cost far less than the tool they test (issue 16, item 5),
so the lab now runs this server as the lab user (scripts/lab.sh start):

  sshd -> ForceCommand tests/sim/simc.c (built into $lab/bin/simc)
       -> connects to $GC_LAB_DIR/simd/sock, passes its stdin, stdout and
          stderr (SCM_RIGHTS) and its environment, pid, cwd and umask
  simd -> forks; the child takes those descriptors and that environment and
          runs dispatch's main() exactly as the fresh Python did; the server
          waits for it and sends the client "x N" (exit status N) or "s N"
          (killed by signal N), which the client reproduces for sshd.

Nothing about a session changes: the same code runs with the same stdio,
environment, command log, faults and state files; drop_session() kills the
client's sshd (simlab.session_pid); a kill_once fault's signal reaches sshd
as the exit signal.  The client falls back to the Python dispatch when the
server is not there, and for sessions on a terminal (the Onyx CLI's PTY:
a terminal wants a process of its own).

Request on the socket: "GCSIM1" then a 4-byte big-endian length and that
many bytes: pid, umask (octal), cwd, then NAME=VALUE environment entries,
each ended by a NUL; the three descriptors ride on the first sendmsg.
"""

import array
import gc
import os
import select
import signal
import socket
import struct
import sys
import time
import traceback
from importlib.machinery import SourceFileLoader

SIM_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, SIM_DIR)

import simlab  # noqa: E402

# The session code, loaded once (dispatch is the fallback script too).
dispatch = SourceFileLoader("gc_dispatch", os.path.join(SIM_DIR, "dispatch")).load_module()
import esxi_sim  # noqa: E402,F401  (warm: what most sessions run)

MAGIC = b"GCSIM1"
MAX_REQUEST = 1 << 20


def recv_request(conn):
    """(fds, fields) or None for a malformed request."""
    fds = array.array("i")
    data, anc, _flags, _addr = conn.recvmsg(65536, socket.CMSG_SPACE(3 * fds.itemsize))
    for level, kind, payload in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[:len(payload) - len(payload) % fds.itemsize])
    fds = list(fds)
    if len(fds) != 3 or not data.startswith(MAGIC) or len(data) < len(MAGIC) + 4:
        for fd in fds:
            os.close(fd)
        return None
    (size,) = struct.unpack(">I", data[len(MAGIC):len(MAGIC) + 4])
    body = data[len(MAGIC) + 4:]
    if size > MAX_REQUEST:
        for fd in fds:
            os.close(fd)
        return None
    while len(body) < size:
        chunk = conn.recv(min(65536, size - len(body)))
        if not chunk:
            for fd in fds:
                os.close(fd)
            return None
        body += chunk
    fields = body[:size].split(b"\0")
    if fields and fields[-1] == b"":
        fields.pop()
    if len(fields) < 3:
        for fd in fds:
            os.close(fd)
        return None
    return fds, fields


def run_session(fds, fields):
    """In the forked child: become the session, run it, return its status."""
    for i, fd in enumerate(fds):
        os.dup2(fd, i)
        os.close(fd)
    pid, mask, cwd, env = int(fields[0]), int(fields[1], 8), fields[2], fields[3:]
    os.umask(mask)
    os.environb.clear()
    for entry in env:
        name, sep, value = entry.partition(b"=")
        if sep and name:
            os.environb[name] = value
    try:
        os.chdir(cwd)
    except OSError:
        pass
    simlab.session_pid = pid
    try:
        status = dispatch.main()
    except SystemExit as e:
        code = e.code
        if code is None:
            status = 0
        elif isinstance(code, int):
            status = code
        else:
            sys.stderr.write("%s\n" % code)
            status = 1
    except BaseException:  # noqa: B902 - what a fresh Python would print
        traceback.print_exc()
        status = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    return status


def bind(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o077)  # the lab user's clients only
    listener.bind(path)
    os.umask(old)
    # a burst of every simulated host at once (bench/apply_bench.py: 256)
    listener.listen(1024)
    listener.setblocking(False)  # the forkers share it: one takes each client
    return listener


def forker(listener, master_r):
    """Take sessions off the shared listener and fork each; answer its client
    when it ends.  Returns when the master is gone (master_r at EOF)."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    os.set_blocking(wake_r, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    children = {}  # pid -> the client's connection
    # EPOLLEXCLUSIVE: a client wakes one waiting forker, not every one
    ep = select.epoll()
    ep.register(listener.fileno(), select.EPOLLIN | select.EPOLLEXCLUSIVE)
    ep.register(wake_r, select.EPOLLIN)
    ep.register(master_r, select.EPOLLIN)
    while True:
        try:
            ready = {fd for fd, _ in ep.poll()}
        except InterruptedError:
            continue
        if master_r in ready:
            return
        if wake_r in ready:
            try:
                while os.read(wake_r, 512):
                    pass
            except BlockingIOError:
                pass
        while children:
            try:
                pid, wstatus = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            conn = children.pop(pid, None)
            if conn is None:
                continue
            if os.WIFSIGNALED(wstatus):
                msg = b"s %d\n" % os.WTERMSIG(wstatus)
            else:
                msg = b"x %d\n" % os.waitstatus_to_exitcode(wstatus)
            try:
                conn.sendall(msg)
            except OSError:
                pass
            conn.close()
        if listener.fileno() not in ready:
            continue
        try:
            conn, _ = listener.accept()
        except OSError:  # another forker took it (BlockingIOError), or it left
            continue
        conn.setblocking(True)
        try:
            req = recv_request(conn)
        except OSError:
            req = None
        if req is None:
            conn.close()
            continue
        fds, fields = req
        pid = os.fork()
        if pid == 0:
            status = 1
            try:
                signal.set_wakeup_fd(-1)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                ep.close()
                for fd in (listener.fileno(), conn.fileno(), wake_r, wake_w, master_r):
                    os.close(fd)
                for c in children.values():
                    c.close()
                status = run_session(fds, fields)
            finally:
                os._exit(status & 0xFF)
        for fd in fds:
            os.close(fd)
        children[pid] = conn


def forkers_wanted():
    """GC_SIMD_FORKERS, else one per two CPUs this process may run on (at
    least 1, at most 16).

    One forker serialised every session's accept and fork: about 1 ms of a
    warm Python's CPU each (most of it the copy-on-write faults a fork costs
    the parent), so 256 hosts dialled at once queued a quarter of a second
    behind it however many cores the machine had.  On two CPUs a second
    forker bought nothing and cost the lab 8 % more CPU (the 256-host apply
    bench, 3 runs each), so there one forker it is."""
    try:
        n = int(os.environ.get("GC_SIMD_FORKERS", ""))
    except ValueError:
        n = len(os.sched_getaffinity(0)) // 2
    return max(1, min(n, 16))


def serve(path, nforkers):
    """The master: binds, starts the forkers (each a fork of this warm
    process) and keeps that many running until SIGTERM, which ends them."""
    listener = bind(path)
    master_r, master_w = os.pipe()  # at EOF when the master is gone
    forkers = set()

    def stop(*_):
        raise Stopping()

    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGTERM, stop)

    def start_one():
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                os.close(master_w)
                forker(listener, master_r)
            except SystemExit:
                pass
            except BaseException:  # noqa: B902 - said in simd.log, then gone
                traceback.print_exc()
                code = 1
            finally:
                os._exit(code)
        forkers.add(pid)

    try:
        for _ in range(nforkers):
            start_one()
        while True:
            try:
                pid, _ = os.wait()
            except ChildProcessError:
                time.sleep(0.1)
                continue
            if pid in forkers:
                forkers.discard(pid)
                time.sleep(0.1)  # not a tight loop if one keeps failing
                start_one()
    except Stopping:
        pass
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    for pid in forkers:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    for pid in forkers:
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass


class Stopping(Exception):
    """SIGTERM to the master."""


def main():
    # What the imports made stays out of the collector: a forked session
    # then does not touch (and copy) the server's pages to collect them.
    gc.freeze()
    if len(sys.argv) != 2:
        sys.stderr.write("usage: simd.py DIR   (serves DIR/sock, writes DIR/pid)\n")
        return 2
    d = sys.argv[1]
    with open(os.path.join(d, "pid.tmp"), "w", encoding="utf-8") as f:
        f.write("%d\n" % os.getpid())
    os.replace(os.path.join(d, "pid.tmp"), os.path.join(d, "pid"))
    serve(os.path.join(d, "sock"), forkers_wanted())
    return 0


if __name__ == "__main__":
    sys.exit(main())
