"""Connections reset by their client are read for a grace after the RST, then finished (issue 20). Before,
each stayed in `CapturePass.conns` with its open SSE exchange to the end of the capture (about 11 KiB each,
1,114 on bench-data/http-200k.pcapng). A TCP that has taken a RST sends nothing more, so what the server sent
before the RST reached it is captured within a round trip of the RST (`capture_pass.grace`: twice the
handshake's, at least 1 s): inside it a server segment is read as crossing the close, past it it is counted as
bytes after the reset and not read. Captures: scripts/make_crossing_fixtures.py (HAND-WRITTEN, committed) and
scripts/synth_silence.py resets (HAND-WRITTEN, deterministic, written at test time)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from cancelwire.model import MessageEvent, TransportEvent, TransportKind
from cancelwire.readers.base import CaptureReaderChoice, ReadOptions
from cancelwire.readers.capture.capture_pass import GRACE_FLOOR, grace
from cancelwire.readers.capture.conn import Conn, ConnKind
from cancelwire.readers.capture.reader import PcapReader
from cancelwire.readers.capture.tcp import TcpConnection
from cancelwire.readers.source import InputSource
from fuzzing import ROOT

CROSSING = ROOT / "tests" / "fixtures" / "crossing"


def _read(path: Path) -> list[object]:
    return list(PcapReader().read(InputSource(path.name, path), ReadOptions(capture_reader=CaptureReaderChoice.DIRECT)))


def _transport(events: list[object]) -> list[tuple[str, str | None, str]]:
    return [(e.kind.value, e.stream, e.detail) for e in events if isinstance(e, TransportEvent)]


def test_a_server_segment_inside_the_grace_is_read_as_crossing_the_reset() -> None:
    """0.9 s after the client's RST (handshake round trip 0.1 ms: grace 1 s): the result is read, crossed."""
    events = _read(CROSSING / "h1-result-inside-grace.pcapng")
    results = [(e.message.id, e.crossed, e.origin.frame) for e in events if isinstance(e, MessageEvent)]
    assert results == [(2, False, 4), (2, True, 7)]
    assert _transport(events) == [
        ("stream-opened", "tcp0/0", "POST /mcp"),
        ("reset-by-client", "tcp0/0", "TCP RST before the response finished"),
    ]


def test_a_server_segment_past_the_grace_is_counted_not_read() -> None:
    """1.1 s after it: the connection was finished at that frame; its bytes are counted and said unread."""
    events = _read(CROSSING / "h1-result-past-grace.pcapng")
    assert [(e.message.id, e.origin.frame) for e in events if isinstance(e, MessageEvent)] == [(2, 4)]
    late = [e for e in events if isinstance(e, TransportEvent) and e.kind is TransportKind.SERVER_BYTES]
    assert [(e.stream, e.origin.frame) for e in late] == [("tcp0/0", 7)]
    assert late[0].detail == (
        "server sent 113 bytes 1.100 s after the connection was reset, past the 1.000 s in which it could have "
        "sent them before the reset reached it (a TCP that has taken a RST sends nothing more): not read"
    )


def test_the_grace_is_twice_the_handshake_round_trip_within_bounds() -> None:
    conn = Conn(0, TcpConnection(("10.0.0.1", 40000), ("10.0.0.2", 8000)))
    assert grace(conn) == 10.0  # no handshake captured: the cap
    for round_trip, expected in ((0.0001, GRACE_FLOOR), (0.8, 1.6), (30.0, 10.0)):
        conn.round_trip = round_trip
        assert grace(conn) == expected


PEAK = """
import sys, tracemalloc
from pathlib import Path
from cancelwire.readers.base import CaptureReaderChoice, ReadOptions
from cancelwire.readers.source import InputSource
from cancelwire.readers.capture.reader import PcapReader
path = Path(sys.argv[1])
tracemalloc.start()
for _ in PcapReader().read(InputSource(path.name, path), ReadOptions(capture_reader=CaptureReaderChoice.DIRECT)):
    pass
print(tracemalloc.get_traced_memory()[1])
"""


def _peak(tmp_path: Path, connections: int) -> int:
    """Traced peak of reading CONNECTIONS client-reset connections (one every 50 ms) in a fresh process."""
    out = tmp_path / f"resets-{connections}.pcapng"
    script = ROOT / "scripts" / "synth_silence.py"
    subprocess.run([sys.executable, str(script), "resets", str(out), str(connections)], check=True)
    run = subprocess.run([sys.executable, "-c", PEAK, str(out)], check=True, capture_output=True, text=True)
    return int(run.stdout)


def test_four_times_the_reset_connections_cost_about_the_same(tmp_path: Path) -> None:
    """200 and 800 connections, each an SSE exchange the client cancelled by FIN and RST mid-event: about 20
    are within their grace at once, the rest are tombstones. Before: each kept its parsers, history and
    exchange to the end, 6.4 MB against 12.9 MB (2.0x, 10.9 KiB more per connection); now 5.0 MB against
    6.3 MB (1.3x, 2.3 KiB: the tombstone and the exchange it charges late bytes to, about 1 KiB with their
    endpoints, and the direct reader's record of each conversation, about 0.7 KiB, kept to the end)."""
    few, many = _peak(tmp_path, 200), _peak(tmp_path, 800)
    assert many < 1.5 * few, (few, many)
    assert (many - few) / 600 < 3072, (few, many)  # bytes per reset connection


def test_a_keep_alive_connection_keeps_its_round_trip_while_it_rests() -> None:
    """A connection at rest (`IdleConn`) and read again is reset later: its grace is still measured by its
    handshake. Before, the round trip went with the parsers, and a keep-alive connection reset after its
    first exchange was read for the cap (10 s): on bench-data/http-200k.pcapng about 600 such connections
    were within their grace at once where about 60 are now (issue 20)."""
    conn = Conn(0, TcpConnection(("10.0.0.1", 40000), ("10.0.0.2", 8000)), ConnKind.HTTP, round_trip=0.0001)
    conn.tcp.up.next, conn.tcp.down.next = 1, 1
    rest = conn.rest()
    assert rest is not None
    assert grace(rest.revive()) == GRACE_FLOOR
