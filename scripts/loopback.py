"""Capture loopback traffic with tshark for as long as a `with` block runs.

One helper for everything that records real traffic on ``lo``: the benchmark (`scripts/bench.py`),
the sample and fixture scripts (`capture_samples.py`, `make_capture_fixtures.py`) and the capture
tests (`tests/test_pcap_reader.py`). It lives in scripts/ (stdlib only) rather than in tests/ because
the benchmark must run without the test dependencies; the tests put scripts/ on their path.

    with loopback_capture(Path("x.pcapng"), "tcp port 8000") as cap:
        ...  # traffic
    print(cap.stderr)  # what tshark said (drops, warnings), once it has stopped
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

TSHARK = shutil.which("tshark") or "/usr/bin/tshark"
WAIT_SECONDS = 60.0
"""Ceiling for tshark to start and for a marker to reach the file: a loaded machine is only slower."""
MARKER = b"cancelwire-capture-marker-"
TAIL_BYTES = 1 << 20


class CaptureError(RuntimeError):
    """tshark did not start capturing, or wrote no file."""


@dataclass
class Capture:
    path: Path
    stderr: str = ""
    """tshark's stderr, filled in once the capture has stopped."""


@contextlib.contextmanager
def loopback_capture(out: Path, bpf: str, *, buffer_mb: int | None = None) -> Iterator[Capture]:
    """tshark -i lo with capture filter `bpf`, writing `out`; yields once tshark is really capturing
    and stops it with SIGINT (then kill) once all traffic of the block is in the file. Raises
    CaptureError if it cannot start.

    tshark prints "Capturing on" before the capture is live and writes packets to the file in
    batches, so fixed sleeps lose the first or last packets on a loaded machine. Instead a UDP
    datagram to a port of our own (added to the filter) is sent until it shows in the file: once
    before the block (live) and once after it (everything before it written). Both are then removed.
    """
    out.unlink(missing_ok=True)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sink:
        sink.bind(("127.0.0.1", 0))  # bound, so the markers draw no ICMP
        port = sink.getsockname()[1]
        cap = f"({bpf}) or (udp dst port {port})"
        argv = [TSHARK, "-i", "lo", *(["-B", str(buffer_mb)] if buffer_mb else []), "-f", cap, "-w", str(out)]
        result = Capture(out)
        with tempfile.TemporaryDirectory(prefix="cancelwire-capture-") as tmp:
            errpath = Path(tmp) / "tshark.stderr"
            with errpath.open("ab") as err:
                proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, stdin=subprocess.DEVNULL)
            try:
                _wait_capturing(proc, errpath)
                if not _marker_reaches(out, port, b"start", proc):
                    raise CaptureError(f"tshark never captured: {errpath.read_text(errors='replace')}")
                yield result
                _marker_reaches(out, port, b"end", proc)
            finally:
                _stop(proc)
                result.stderr = errpath.read_text(errors="replace")
    if not out.exists():
        raise CaptureError(f"tshark wrote no {out.name}: {result.stderr}")
    _drop_markers(out)


def _wait_capturing(proc: subprocess.Popen[bytes], errpath: Path) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        text = errpath.read_text(errors="replace")
        if "Capturing on" in text:
            return
        if proc.poll() is not None or time.monotonic() > deadline:
            raise CaptureError(f"tshark did not start capturing: {text}")
        time.sleep(0.05)


def _marker_reaches(out: Path, port: int, name: bytes, proc: subprocess.Popen[bytes]) -> bool:
    """Send the marker every 50 ms until it is in the file's tail; False if tshark ended or WAIT passed."""
    marker = MARKER + name
    deadline = time.monotonic() + WAIT_SECONDS
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        while proc.poll() is None and time.monotonic() < deadline:
            udp.sendto(marker, ("127.0.0.1", port))
            time.sleep(0.05)
            with contextlib.suppress(OSError), out.open("rb") as fh:
                fh.seek(max(0, fh.seek(0, os.SEEK_END) - TAIL_BYTES))
                if marker in fh.read():
                    return True
    return False


def _drop_markers(out: Path) -> None:
    """Rewrite the pcapng without the Enhanced Packet Blocks (type 6) that hold a marker, block by block."""
    kept = out.with_name(out.name + ".tmp")
    with out.open("rb") as src, kept.open("wb") as dst:
        order = "<"
        while len(head := src.read(12)) == 12:
            if head[:4] == b"\x0a\x0d\x0d\x0a":  # a section header: its byte-order magic decides
                order = "<" if head[8:12] == b"\x4d\x3c\x2b\x1a" else ">"
            kind, length = struct.unpack(order + "II", head[:8])
            block = head + src.read(max(length, 12) - 12)
            if not (kind == 6 and MARKER in block):
                dst.write(block)
    kept.replace(out)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        proc.wait(WAIT_SECONDS)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
