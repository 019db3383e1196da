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
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

TSHARK = shutil.which("tshark") or "/usr/bin/tshark"
START_SECONDS = 20.0
SETTLE_SECONDS = 0.5
"""tshark prints "Capturing on" as the capture starts: a margin before the traffic."""
LINGER_SECONDS = 0.8
"""After the block: let the last FIN/ACK/RST land before tshark stops."""


class CaptureError(RuntimeError):
    """tshark did not start capturing, or wrote no file."""


@dataclass
class Capture:
    path: Path
    stderr: str = ""
    """tshark's stderr, filled in once the capture has stopped."""


@contextlib.contextmanager
def loopback_capture(out: Path, bpf: str, *, buffer_mb: int | None = None) -> Iterator[Capture]:
    """tshark -i lo with capture filter `bpf`, writing `out`; waits until tshark is really capturing
    and stops it with SIGINT (then kill) after the block. Raises CaptureError if it cannot start."""
    out.unlink(missing_ok=True)
    argv = [TSHARK, "-i", "lo", *(["-B", str(buffer_mb)] if buffer_mb else []), "-f", bpf, "-w", str(out)]
    result = Capture(out)
    with tempfile.TemporaryDirectory(prefix="cancelwire-capture-") as tmp:
        errpath = Path(tmp) / "tshark.stderr"
        with errpath.open("ab") as err:
            proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, stdin=subprocess.DEVNULL)
        try:
            _wait_capturing(proc, errpath)
            time.sleep(SETTLE_SECONDS)
            yield result
            time.sleep(LINGER_SECONDS)
        finally:
            _stop(proc)
            result.stderr = errpath.read_text(errors="replace")
    if not out.exists():
        raise CaptureError(f"tshark wrote no {out.name}: {result.stderr}")


def _wait_capturing(proc: subprocess.Popen[bytes], errpath: Path) -> None:
    deadline = time.monotonic() + START_SECONDS
    while True:
        text = errpath.read_text(errors="replace")
        if "Capturing on" in text:
            return
        if proc.poll() is not None or time.monotonic() > deadline:
            raise CaptureError(f"tshark did not start capturing: {text}")
        time.sleep(0.05)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
