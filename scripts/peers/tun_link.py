#!/usr/bin/env python3
"""A slow wire between two network namespaces: every IP packet takes DELAY seconds each way.

    python scripts/peers/tun_link.py --peer-pid PID [--delay 0.06] [--near cw0] [--far cw1]

Run inside a network namespace of your own (`unshare -rn`, no root needed) that holds the tun device
NEAR; PID is a process in a second namespace holding the tun device FAR (`ip tuntap add dev ... mode tun`
in each, addresses set by the caller). This process attaches to both devices and copies each packet from
one to the other DELAY seconds after it read it, in order: the kernels at both ends run real TCP over it
(their own acknowledgements, retransmissions and closes), which a relay of bytes would not (it answers
every segment itself). A capture on NEAR is a capture at the near end of the link, one on FAR at the far
end. Used where the kernel has no `netem`. Prints READY once both devices are attached; runs until killed.
"""

from __future__ import annotations

import argparse
import ctypes
import fcntl
import os
import queue
import struct
import sys
import threading
import time

TUNSETIFF = 0x400454CA
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000
CLONE_NEWNET = 0x40000000
MTU = 65536


def attach(name: str) -> int:
    fd = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TUN | IFF_NO_PI))
    return fd


def setns(path: str) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(path, os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns {path}")
    finally:
        os.close(fd)


def pump(src: int, dst: int, delay: float) -> None:
    pending: queue.Queue[tuple[float, bytes]] = queue.Queue()

    def write() -> None:
        while True:
            due, packet = pending.get()
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            os.write(dst, packet)

    threading.Thread(target=write, daemon=True).start()
    while True:
        packet = os.read(src, MTU)  # stamped once read: an idle link must not make it due at once
        pending.put((time.monotonic() + delay, packet))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--peer-pid", type=int, required=True)
    parser.add_argument("--delay", type=float, default=0.06)
    parser.add_argument("--near", default="cw0")
    parser.add_argument("--far", default="cw1")
    args = parser.parse_args()
    home = f"/proc/{os.getpid()}/ns/net"
    near = attach(args.near)
    setns(f"/proc/{args.peer_pid}/ns/net")
    far = attach(args.far)
    setns(home)
    threading.Thread(target=pump, args=(far, near, args.delay), daemon=True).start()
    print("READY", flush=True)
    pump(near, far, args.delay)
    return 0


if __name__ == "__main__":
    sys.exit(main())
