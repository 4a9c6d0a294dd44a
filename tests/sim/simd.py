"""simd - the lab's simulator server: warm Pythons that run the sessions.

Every SSH exec the lab sshd accepts used to start a fresh Python for
tests/sim/dispatch (interpreter, imports, the simulator module): about 50 ms
of CPU on the project's 2-core machine, half of what a lab test spent.  The
simulated hosts must cost far less than the tool they test (issue 16, item 5),
so the lab now runs this server as the lab user (scripts/lab.sh start):

  sshd -> ForceCommand tests/sim/simc.c (built into $lab/bin/simc)
       -> connects to $GC_LAB_DIR/simd/sock, passes its stdin, stdout and
          stderr (SCM_RIGHTS) and its environment, pid, cwd and umask
  simd -> the master binds the socket and forks the forkers (one per two
          CPUs), which share it; the forker that takes a client hands the
          session to an idle worker of its own (forking one when none is),
          which takes those descriptors and that environment and runs
          dispatch's main() exactly as the fresh Python did, then is reset
          for the next session; the forker sends the client "x N" (exit
          status N) or "s N" (the worker killed by signal N), which the
          client reproduces for sshd.

Nothing about a session changes: the same code runs with the same stdio,
environment, command log, faults and state files; drop_session() kills the
client's sshd (simlab.session_pid); a kill_once fault's signal reaches sshd
as the exit signal (a session that ends its process ends its worker, and
the worker's exit status is the session's), and the worker answers "d"
for a session that drop_session() ended.  The client falls back to the Python dispatch when the
server is not there, and for sessions on a terminal (the Onyx CLI's PTY:
a terminal wants a process of its own).

Request on the socket: "GCSIM1" then a 4-byte big-endian length and that
many bytes: pid, umask (octal), cwd, then NAME=VALUE environment entries,
each ended by a NUL; the three descriptors ride on the first sendmsg.  Pid
0: the client has no process whose parent is the connection's (labsshd), so
drop_session() kills nothing and the answer "d" tells it to drop.
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


def run_session(fds, fields, dup=True):
    """Become the session, run it, return its status: in a worker (fds are
    already 0, 1 and 2), or in a child forked for it."""
    if dup:
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
    except simlab.SessionDropped:  # its sshd killed, in a worker: it goes on
        status = DROPPED
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


def in_child(body):
    """In a forked forker or worker: run body(), then end the process, with 0
    (SystemExit included) or 1 after the traceback (in simd.log)."""
    code = 0
    try:
        body()
    except SystemExit:
        pass
    except BaseException:  # noqa: B902 - said in simd.log, then gone
        traceback.print_exc()
        code = 1
    finally:
        os._exit(code)


class Worker:
    """A forker's child that runs sessions one after another (its socket
    carries each request in and its status out)."""

    def __init__(self, pid, sock):
        self.pid = pid
        self.sock = sock
        self.conn = None  # the client of the session it runs, if any
        self.served = 0


# The modules whose globals a session may rebind (esxi_sim's CONTROL ...):
# put back as they were before a worker's first session, after each one.
SESSION_MODULES = ("esxi_sim", "simlab", "gc_dispatch")
# The largest request passed to a worker in one datagram; a larger one is
# run in a fork of its own, as every session was before the workers.
WORKER_REQUEST = 60000


def worker_sessions():
    """A worker serves this many sessions (GC_SIMD_WORKER_SESSIONS, default
    500), then ends (its forker starts another when one is needed): whatever
    a session left behind that the reset between sessions misses ends with
    it."""
    try:
        return max(1, int(os.environ.get("GC_SIMD_WORKER_SESSIONS", "")))
    except ValueError:
        return 500


# run_session's status for a session that drop_session() ended in a worker:
# the worker answers "d" (dropped) instead of "x N".  simc exits 255 on it
# (its sshd is killed already); tests/sim/labsshd, which has no process a
# connection for drop_session() to kill, closes the session's connection.
DROPPED = -1


def worker_loop(sock):
    """In a worker: run each session handed over on sock, answer "x N"."""
    simlab.in_worker = True  # before the snapshot: every session sees it
    snapshots = [(sys.modules[m], dict(sys.modules[m].__dict__))
                 for m in SESSION_MODULES if m in sys.modules]
    home = os.getcwd()
    saved = [os.dup(i) for i in range(3)]  # the server's own: /dev/null, simd.log
    std = [(s.encoding, s.errors, s.line_buffering) for s in (sys.stdin, sys.stdout, sys.stderr)]
    while True:
        fds = array.array("i")
        try:
            data, anc, _flags, _addr = sock.recvmsg(WORKER_REQUEST + 16,
                                                    socket.CMSG_SPACE(3 * fds.itemsize))
        except OSError:
            return
        if not data:
            return  # the forker is gone, or has enough idle workers
        for level, kind, payload in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(payload[:len(payload) - len(payload) % fds.itemsize])
        fields = data.split(b"\0")
        if fields and fields[-1] == b"":
            fields.pop()
        # fresh standard streams on the session's descriptors, as a fresh
        # Python has: nothing read ahead or buffered by the last session
        for i, fd in enumerate(fds):
            os.dup2(fd, i)
            os.close(fd)
        streams = []
        for i, (enc, err, lb) in enumerate(std):
            streams.append(open(i, "r" if i == 0 else "w", buffering=1 if lb else -1,
                                encoding=enc, errors=err, closefd=False))
        sys.stdin, sys.stdout, sys.stderr = streams
        try:
            os.chdir(home)  # where a fork of the server would start
        except OSError:
            pass
        status = run_session([0, 1, 2], fields, dup=False)
        for f in streams:
            try:
                f.close()  # closefd=False: flushes, leaves 0-2 open
            except Exception:
                pass
        sys.stdin, sys.stdout, sys.stderr = sys.__stdin__, sys.__stdout__, sys.__stderr__
        for i in range(3):
            os.dup2(saved[i], i)  # the session's pipes: closed here, as its exit would
        for mod, snap in snapshots:
            d = mod.__dict__
            for name in [n for n in d if n not in snap]:
                del d[name]
            d.update(snap)
        esxi = sys.modules.get("esxi_sim")
        if esxi is not None:
            esxi.CURRENT_HOST[0] = None
        try:
            sock.send(b"d\n" if status == DROPPED else b"x %d\n" % (status & 0xFF))
        except OSError:
            return


def forker(listener, master_r):
    """Take sessions off the shared listener and hand each to an idle worker
    (forking one when none is idle); answer its client when it ends.
    Returns when the master is gone (master_r at EOF)."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    os.set_blocking(wake_r, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    workers = {}  # pid -> Worker
    by_sock = {}  # socket fd -> Worker
    idle = []
    children = {}  # pid of a session forked whole -> the client's connection
    max_idle = idle_wanted()
    max_sessions = worker_sessions()
    # EPOLLEXCLUSIVE: a client wakes one waiting forker, not every one
    ep = select.epoll()
    ep.register(listener.fileno(), select.EPOLLIN | select.EPOLLEXCLUSIVE)
    ep.register(wake_r, select.EPOLLIN)
    ep.register(master_r, select.EPOLLIN)

    def answer(conn, wstatus):
        if os.WIFSIGNALED(wstatus):
            msg = b"s %d\n" % os.WTERMSIG(wstatus)
        else:
            msg = b"x %d\n" % os.waitstatus_to_exitcode(wstatus)
        try:
            conn.sendall(msg)
        except OSError:
            pass
        conn.close()

    def forget(w):
        by_sock.pop(w.sock.fileno(), None)
        try:
            ep.unregister(w.sock.fileno())
        except (OSError, ValueError):
            pass
        if w in idle:
            idle.remove(w)
        w.sock.close()

    def child_setup():
        """In a fresh child: drop the forker's descriptors and handlers."""
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        ep.close()
        for fd in (listener.fileno(), wake_r, wake_w, master_r):
            os.close(fd)
        for w in workers.values():
            w.sock.close()
            if w.conn is not None:
                w.conn.close()
        for c in children.values():
            c.close()

    def start_worker(conn, fds):
        """A new worker, forked while the forker holds a client's connection
        and session descriptors: the worker must not keep them (a session's
        stdout held open is a session sshd never sees end)."""
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            def work():
                mine.close()
                conn.close()
                for fd in fds:
                    os.close(fd)
                child_setup()
                worker_loop(theirs)
            in_child(work)
        theirs.close()
        w = Worker(pid, mine)
        workers[pid] = w
        by_sock[mine.fileno()] = w
        ep.register(mine.fileno(), select.EPOLLIN)
        return w

    def fork_whole(conn, fds, fields):
        """A session forked on its own (a request too large for a worker)."""
        pid = os.fork()
        if pid == 0:
            status = 1
            try:
                child_setup()
                conn.close()
                status = run_session(fds, fields)
            finally:
                os._exit(status & 0xFF)
        for fd in fds:
            os.close(fd)
        children[pid] = conn

    try:
        while True:
            try:
                events = ep.poll()
            except InterruptedError:
                continue
            ready = {fd for fd, _ in events}
            if master_r in ready:
                return
            if wake_r in ready:
                try:
                    while os.read(wake_r, 512):
                        pass
                except BlockingIOError:
                    pass
            while True:
                try:
                    pid, wstatus = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    break
                if pid == 0:
                    break
                if pid in children:
                    answer(children.pop(pid), wstatus)
                    continue
                w = workers.pop(pid, None)
                if w is None:
                    continue
                # a worker that ended in a session (a kill_once signal, the
                # Onyx simulator it exec'd; drop_session() raises instead):
                # the session's status is the worker's, as a fork's was
                if w.conn is not None:
                    answer(w.conn, wstatus)
                    w.conn = None
                forget(w)
            for fd in ready:
                w = by_sock.get(fd)
                if w is None:
                    continue
                try:
                    msg = w.sock.recv(64)
                except OSError:
                    msg = b""
                if not msg:
                    # gone (or exec'd): its exit status answers the client
                    by_sock.pop(fd, None)
                    ep.unregister(fd)
                    if w in idle:
                        idle.remove(w)
                    continue
                if w.conn is not None:
                    try:
                        w.conn.sendall(msg)
                    except OSError:
                        pass
                    w.conn.close()
                    w.conn = None
                w.served += 1
                if w.served >= max_sessions or len(idle) >= max_idle:
                    forget(w)  # its socket at EOF: it ends
                else:
                    idle.append(w)
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
            body = b"\0".join(fields) + b"\0"
            if len(body) > WORKER_REQUEST:
                fork_whole(conn, fds, fields)
                continue
            w = idle.pop() if idle else start_worker(conn, fds)
            try:
                w.sock.sendmsg([body], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                         array.array("i", fds))])
                w.conn = conn
            except OSError:
                forget(w)
                fork_whole(conn, fds, fields)
                continue
            for fd in fds:
                os.close(fd)
    finally:
        # the workers end with their forker (their sockets at EOF; one in a
        # session is ended as a fork of the server was when lab.sh stopped it)
        for w in list(workers.values()):
            try:
                os.kill(w.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for pid in list(workers):
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass


def idle_wanted():
    """How many idle workers a forker keeps: GC_SIMD_IDLE, else 512 over the
    forkers (a burst of the apply bench's 256 hosts finds them all again)."""
    try:
        return max(0, int(os.environ.get("GC_SIMD_IDLE", "")))
    except ValueError:
        return max(16, 512 // forkers_wanted())


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
            def work():
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                os.close(master_w)
                forker(listener, master_r)
            in_child(work)
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
