"""Idle keep-alive connections cost memory by what is open, not by how many there were (issue 19). Before,
each kept its HTTP/1.1 parsers and retransmission history (about 6.5 KiB) to the end of the capture: 40 000
of them peaked at 288 MB in the reader alone. A connection at rest keeps a few hundred bytes
(`capture.conn.IdleConn`) and is read on as before when it speaks again. Captures: scripts/synth_silence.py
idle (deterministic), written at test time."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cancelwire.model import MessageEvent, TransportEvent
from cancelwire.readers.base import ReadOptions
from cancelwire.readers.capture.reader import PcapReader
from cancelwire.readers.source import InputSource
from fuzzing import ROOT

pytestmark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed")


def _capture(tmp_path: Path, connections: int, *again: str) -> Path:
    out = tmp_path / f"idle-{connections}{'-again' if again else ''}.pcapng"
    script = ROOT / "scripts" / "synth_silence.py"
    subprocess.run([sys.executable, str(script), "idle", str(out), str(connections), *again], check=True)
    return out


def _read(path: Path) -> list[object]:
    return list(PcapReader().read(InputSource(path.name, path), ReadOptions()))


PEAK = """
import sys, tracemalloc
from pathlib import Path
from cancelwire.readers.base import ReadOptions
from cancelwire.readers.source import InputSource
from cancelwire.readers.capture.reader import PcapReader
path = Path(sys.argv[1])
tracemalloc.start()
for _ in PcapReader().read(InputSource(path.name, path), ReadOptions()):
    pass
print(tracemalloc.get_traced_memory()[1])
"""


def _peak(path: Path) -> int:
    """Traced peak of reading the capture in a fresh process (what the first read imports counts alike in
    every run), the events consumed one by one and none kept."""
    run = subprocess.run([sys.executable, "-c", PEAK, str(path)], check=True, capture_output=True, text=True)
    return int(run.stdout)


def test_four_times_the_idle_connections_cost_about_the_same(tmp_path: Path) -> None:
    """600 and 2400 connections, each answered once and left open: the traced peak grows by far less than the
    count. Before: 7.2 MB against 18.8 MB (2.6x), 6.5 KiB more per connection; now 3.7 MB against 4.7 MB
    (1.3x), 0.6 KiB."""
    few, many = _peak(_capture(tmp_path, 600)), _peak(_capture(tmp_path, 2400))
    assert many < 1.5 * few, (few, many)
    assert (many - few) / 1800 < 1536, (few, many)  # bytes per idle connection


def test_a_connection_that_rested_is_read_on_as_before(tmp_path: Path) -> None:
    """The reverse: after every connection rested, each carries a second call on the same connection, numbered
    on (`tcpN/1`), answered and closed."""
    events = _read(_capture(tmp_path, 3, "--again"))
    messages = [(e.message.id, e.stream) for e in events if isinstance(e, MessageEvent)]
    assert messages == [
        (1, "tcp0/0"),
        (1, "tcp0/0"),
        (2, "tcp1/0"),
        (2, "tcp1/0"),
        (3, "tcp2/0"),
        (3, "tcp2/0"),
        (4, "tcp0/1"),
        (4, "tcp0/1"),
        (5, "tcp1/1"),
        (5, "tcp1/1"),
        (6, "tcp2/1"),
        (6, "tcp2/1"),
    ]
    closes = [(e.kind.value, e.stream) for e in events if isinstance(e, TransportEvent)]
    assert closes == [("closed-by-server", f"tcp{n % 3}/{n // 3}") for n in range(6)]
