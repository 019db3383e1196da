#!/usr/bin/env python3
"""A slow link on stdio: runs COMMAND and relays its stdin and stdout, each chunk DELAY seconds late.

    python scripts/peers/slow_link.py --delay 0.06 -- COMMAND [ARG ...]

Stands for a network between two machines (60 ms each way is a transatlantic round trip) where the
samples need one: a host that launches this in place of its server talks to COMMAND over a link whose
every byte takes DELAY seconds in each direction. Order is kept (one queue per direction), bytes are
never changed, an end of input reaches the other side DELAY seconds after it was read, and stderr
passes through at once. Each direction has a reader thread (blocking `os.read`) that stamps every chunk
with when it is due, and a writer thread that sleeps until then.
"""

from __future__ import annotations

import argparse
import os
import queue
import subprocess
import sys
import threading
import time

CHUNK = 65536


def relay(src: int, dst: int, delay: float, done: threading.Event | None = None) -> list[threading.Thread]:
    """Two threads moving bytes from SRC to DST, each chunk DELAY seconds after it was read; an end of
    input closes DST DELAY seconds after it was seen."""
    pending: queue.Queue[tuple[float, bytes]] = queue.Queue()

    def read() -> None:
        while True:
            try:
                data = os.read(src, CHUNK)
            except OSError:
                data = b""
            pending.put((time.monotonic() + delay, data))
            if not data:
                return

    def write() -> None:
        while True:
            due, data = pending.get()
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            if not data:
                os.close(dst)
                if done is not None:
                    done.set()
                return
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(dst, view) :]
            except OSError:  # the reader went away: keep draining so the writer never blocks
                continue

    threads = [threading.Thread(target=read, daemon=True), threading.Thread(target=write, daemon=True)]
    for thread in threads:
        thread.start()
    return threads


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--delay", type=float, default=0.06, help="seconds each way (default 0.06)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARG ...]")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command")
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    assert child.stdin is not None and child.stdout is not None
    out_done = threading.Event()
    relay(sys.stdin.fileno(), child.stdin.fileno(), args.delay)
    relay(child.stdout.fileno(), sys.stdout.fileno(), args.delay, out_done)
    status = child.wait()
    out_done.wait(timeout=5.0)
    return status


if __name__ == "__main__":
    sys.exit(main())
