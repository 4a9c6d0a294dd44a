#!/usr/bin/python3
"""hub.py - the lab guests' RDMA segment: a tiny Ethernet hub on unix-domain
datagram sockets.

    hub.py DIR      bind DIR/hub.sock; peers are DIR/*/rdma.sock

Each guest's second NIC is a QEMU `-netdev dgram` whose local end is
DIR/<vm>/rdma.sock and whose remote end is DIR/hub.sock.  Every frame that
arrives is sent to every other peer (a hub: no learning, no filtering), so
the guests share one L2 segment.  Frames never leave this process and the
QEMU processes: no IP socket is opened, nothing reaches any network.
Peers are the sockets present under DIR (looked up again every second and
whenever an unknown sender shows up); a peer that is gone is skipped.
"""
import glob
import os
import socket
import sys
import time


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 64
    d = os.path.abspath(argv[1])
    path = os.path.join(d, "hub.sock")
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(path)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    s.settimeout(1.0)
    peers = []
    last = 0.0
    frames = 0
    while True:
        try:
            data, sender = s.recvfrom(65536)
        except socket.timeout:
            data, sender = None, None
        now = time.monotonic()
        if now - last > 1.0 or (sender and sender not in peers):
            peers = sorted(glob.glob(os.path.join(d, "*", "rdma.sock")))
            last = now
        if data is None:
            continue
        frames += 1
        for p in peers:
            if p != sender:
                try:
                    s.sendto(data, p)
                except OSError:
                    pass  # that guest is not running (or its queue is full: a lost frame)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
