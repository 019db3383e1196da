"""One pass over one packet capture.

A frame source gives a few TCP fields per frame (`frames.Frame`): the in-process reader (`direct`) or one
streaming tshark pass (`tshark_fields`), which give the same frames; everything above that is ours, in pure
modules testable without tshark, so a response that never finishes, an SSE body still open at the end of the
capture, or a server port tshark would decode as something else are all read the same:

* `tcp`: per connection, segments back in order, gaps, FIN, RST, zero windows;
* `capture_http` (with `http1`): per connection that carries HTTP (sniffed by the request line at
  its start, or forced with `ReadOptions.http_ports`), the exchanges (`tcp{stream}/{n}`, n from 0 in
  request order) and their transport events;
* `capture_bodies` (with `sse` and `jsonrpc`): the JSON-RPC messages of request and response bodies;
* `capture_sessions`: which session each exchange belongs to, and the `seq` of every event.

Capture-wide anomalies raised here: what the frame source could not read (`frames.ReadProblem`: a file cut
short or damaged, what tshark said, IP fragments and unknown link types the direct reader skips),
`capture.encrypted` (TLS without usable keys),
`capture.no-mcp` (no JSON-RPC message at all, and why).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from heapq import heappop, heappush
from typing import Final

from ...model import AnomalyName, Event, Vantage
from ..base import InputSource, ReadOptions
from ..http.http2_joined import starts_with_frames
from .conn import Conn, ConnKind, IdleConn, ResetConn
from .frames import Frame, FrameSource
from .over_http1 import HttpCapture, looks_http, looks_http_server
from .sessions import Sessions
from .tcp import ACK, FIN, RST, SYN, Delivered, TcpConnection, client_by_handshake, seq_before

TLS_HEADER: Final = 5
"""Bytes of a TLS record's header: a record's ciphertext is at least its plaintext and these."""
GRACE_FLOOR: Final = 1.0
"""Seconds a reset connection is read on at least (`grace`): the most the round trips a recording shows may
widen a race window to (`rebuild.ordering.MAX_MEASURED_WINDOW`): later than that after a cancel, a reply
is judged late on any channel."""
GRACE_CAP: Final = 10.0
"""Seconds at most; also the grace of a connection whose handshake was not captured (no round trip)."""
MAX_LIVE_CONNS = 4096
"""Connections held at once (read, at rest or reset): an open SSE exchange costs about 11 KiB, so 45 MB."""
RETIRE_BATCH = MAX_LIVE_CONNS // 16
"""Connections finished early at a time once there are too many (the least recently active)."""


def grace(conn: Conn) -> float:
    """How long after a RST the connection is still read: what the server sent before the RST reached it is
    captured at most a round trip (capture point → server → capture point) after the RST. That round trip
    is measured by the handshake (SYN to SYN/ACK), whose segments meet empty queues: twice it, for data
    queued behind data, at least `GRACE_FLOOR` and at most `GRACE_CAP`."""
    if conn.round_trip is None:
        return GRACE_CAP
    return max(GRACE_FLOOR, min(2 * conn.round_trip, GRACE_CAP))


def _recency(conn: Conn | IdleConn | ResetConn) -> int:
    """The last frame read on CONN; 0 for one at rest, which keeps no frame number (a few hundred bytes)."""
    return 0 if isinstance(conn, IdleConn) else conn.active


class CapturePass:
    """One pass over one capture. All state lives here; nothing is module-level."""

    def __init__(self, source: InputSource, options: ReadOptions) -> None:
        self.source = source
        self.options = options
        self.sessions = Sessions(source.name, options.session_vantage(Vantage.WIRE))
        self.http = HttpCapture(self.sessions, options.inflate.max_ratio)
        self.conns: dict[int, Conn | IdleConn | ResetConn] = {}
        self.frames = 0
        self.http_conns = 0
        self.encrypted: set[int] = set()
        """TLS connections with no decrypted byte (so far)."""
        self.untimed: tuple[int, int, str] | None = None
        """Frames whose time cannot be a clock reading: (count, first frame, its time as tshark gave it)."""
        self.cut: list[int] = [0, 0, 0, 0]
        """Frames whose payload the snaplen cut: [count, first frame, its captured bytes, its tcp.len]."""
        self.resets: list[tuple[float, int, Conn]] = []
        """Reset connections by the time they retire (a heap: `grace`)."""
        self._order = itertools.count()
        self.finished_early: tuple[int, int] = (0, 0)
        """Connections finished early as too many were open (`MAX_LIVE_CONNS`): (count, first frame)."""

    def events(self, source: FrameSource) -> Iterator[Event]:
        """Every event of the capture, reading each frame `source` gives, then what it could not read."""
        sessions, out = self.sessions, self.sessions.out
        for parsed in source.frames():
            self.frames += 1
            if isinstance(parsed, int):
                sessions.frame = parsed
                continue
            sessions.frame, sessions.ts = parsed.number, parsed.ts
            if parsed.ts is None:
                self._untimed(parsed.number, parsed.clock)
            elif self.resets and parsed.ts > self.resets[0][0]:
                self._retire(parsed.ts)
            self._frame(parsed)
            if out:
                yield from out
                out.clear()
        for problem in source.problems():
            sessions.anomaly(None, problem.name, problem.detail, frame=problem.frame)
        self._finish()
        yield from out
        out.clear()

    # -- frames ------------------------------------------------------------------------------------

    def _frame(self, f: Frame) -> None:
        known = self.conns.get(f.stream)
        conn = known if isinstance(known, Conn) else self._conn(f, known)
        if conn is None:
            return
        conn.active = f.number
        from_client = (f.src, f.sport) == conn.tcp.client
        if f.flags & SYN and not from_client and conn.opened is not None and conn.round_trip is None:
            conn.round_trip = f.ts - conn.opened if f.ts is not None else None
        if f.payload and conn.kind is ConnKind.UNKNOWN:
            self._classify(conn, f, from_client)
        if not from_client and f.length and f.flags & ACK and self._keeps_acks(conn):
            conn.tcp.down.note_sent(f.seq, f.length, f.ack)
        if f.decrypted:
            self._decrypted(conn, from_client, f)
        if f.length > len(f.payload):
            self._cut(f)
        events = conn.tcp.segment(f, from_client)
        if events:
            self.http.tcp(conn, events)
            self._after(conn, f)

    def _conn(self, f: Frame, known: IdleConn | ResetConn | None) -> Conn | None:
        """The connection frame F is read on when it has none being read (KNOWN: what is kept of it), or None
        when there is nothing to read it for."""
        if known is None:
            if not f.length and not f.flags & SYN:
                return None  # a late ACK/FIN/RST of a connection already finished (or never seen opening)
            conn = self.conns[f.stream] = self._new_conn(f)
            if len(self.conns) > MAX_LIVE_CONNS:
                self._too_many(conn)
            return conn
        if type(known) is IdleConn:
            if not f.length and not f.flags & (SYN | FIN | RST) and not f.decrypted:
                return None  # an ACK of a connection at rest: nothing waits for it
            conn = self.conns[f.stream] = known.revive()
            return conn
        if type(known) is ResetConn:
            self._after_reset(known, f)
        return None

    def _after(self, conn: Conn, f: Frame) -> None:
        """What the connection keeps once frame F's events are read: nothing when it is over, a grace once
        reset (`grace`), a few hundred bytes at rest (`IdleConn`)."""
        if conn.tcp.closed or (conn.tcp.reset and not conn.kind.read):
            del self.conns[conn.stream]  # nothing is open on it any more
        elif conn.reset:
            if conn.retires is None and f.ts is not None:
                conn.retires = f.ts + grace(conn)
                heappush(self.resets, (conn.retires, next(self._order), conn))
        elif (rest := conn.rest()) is not None:
            self.conns[conn.stream] = rest  # at rest: its parsers and history are let go

    def _new_conn(self, f: Frame) -> Conn:
        src, dst = (f.src, f.sport), (f.dst, f.dport)
        client = client_by_handshake(src, dst, f.flags)
        midway = False
        if client is None:  # no handshake seen: the side that speaks first, or the forced port, tells
            ports = self.options.http_ports
            if looks_http(f.payload, f.dport, ports):
                client = src
            elif midway := starts_with_frames(f.payload):  # HTTP/2 joined late: the ephemeral port is the client's
                client = dst if f.sport in ports or (f.dport not in ports and f.dport > f.sport) else src
            else:
                client = dst if f.payload.startswith(b"HTTP/1.") or f.sport in ports else src
        server = dst if client == src else src
        conn = Conn(f.stream, TcpConnection(client, server), h2_midway=midway)
        if f.flags & SYN and not f.flags & ACK:
            conn.opened = f.ts
        return conn

    # -- bounds ------------------------------------------------------------------------------------

    def _retire(self, now: float) -> None:
        """Reset connections whose grace is over at NOW: finished as the capture's end finishes them, and
        only what a later server segment needs kept (`ResetConn`)."""
        resets = self.resets
        while resets and resets[0][0] < now:
            retires, _, conn = heappop(resets)
            if self.conns.get(conn.stream) is not conn:
                continue  # finished already (too many open)
            self.http.finish(conn)
            last = conn.last.remains() if conn.last is not None else None
            late = grace(conn)
            self.conns[conn.stream] = ResetConn(
                conn.stream, conn.tcp.server, conn.tcp.down.next, last, retires - late, late, conn.active
            )

    def _after_reset(self, tomb: ResetConn, f: Frame) -> None:
        """A segment of a connection retired after its reset: server payload past what was read is counted."""
        if not f.length or (f.src, f.sport) != tomb.server:
            return
        end = (f.seq + f.length) & 0xFFFFFFFF
        if tomb.down is not None and not seq_before(tomb.down, end):
            return  # a retransmission of bytes read before
        tomb.down = end
        if tomb.last is not None:
            after = f"{f.ts - tomb.reset_at:.3f} s " if f.ts is not None else ""
            why = (
                f"{after}after the connection was reset, past the {tomb.grace:.3f} s in which it could have sent "
                "them before the reset reached it (a TCP that has taken a RST sends nothing more): not read"
            )
            self.http.server_bytes(tomb.last, f.length, why)

    def _too_many(self, new: Conn) -> None:
        """More than `MAX_LIVE_CONNS` connections: those at rest first (nothing is open on them), then the least
        recently active, are finished now as the end of the capture finishes them, and counted (`_finish` names
        them)."""
        olds = sorted((c for c in self.conns.values() if c is not new), key=_recency)[:RETIRE_BATCH]
        for old in olds:
            if type(old) is Conn:
                self.http.finish(old)
            del self.conns[old.stream]
        done, first = self.finished_early
        self.finished_early = (done + len(olds), first or self.sessions.frame)

    def _classify(self, conn: Conn, f: Frame, from_client: bool) -> None:
        server_port = conn.tcp.server[1]
        http_ports = self.options.http_ports
        if from_client and f.payload[:2] == b"\x16\x03":
            conn.kind = ConnKind.TLS
            conn.tcp.reassemble = False  # tshark decrypts and reassembles TLS itself
            self.encrypted.add(conn.stream)
        elif conn.h2_midway or (looks_http if from_client else looks_http_server)(f.payload, server_port, http_ports):
            conn.kind = ConnKind.HTTP
            conn.tcp.reassemble = True
            self.http_conns += 1
        else:
            conn.kind = ConnKind.OTHER
            conn.tcp.reassemble = False

    def _keeps_acks(self, conn: Conn) -> bool:
        """Server segments of a TLS connection that can still be decrypted keep their acknowledgements, for
        the records decrypted from them (plain HTTP keeps them in `tcp`)."""
        return self.options.keylog is not None and (conn.kind is ConnKind.TLS or conn.kind is ConnKind.TLS_HTTP)

    def _decrypted(self, conn: Conn, from_client: bool, f: Frame) -> None:
        """The TLS records decrypted in frame F, each delivered with the acknowledgement its first bytes left
        with, as plain TCP bytes are (`tcp.Delivered.acked`), so a reply can cross the client's close here too.
        A record ends at or before the end of the frame that completes it, and its ciphertext is at least its
        plaintext and a header: the segment holding the byte that far back is the one that carried the
        record's first byte or a later one, whose acknowledgement can only say the record crossed less."""
        ends = (f.seq + f.length) & 0xFFFFFFFF
        back = sum(len(chunk) + TLS_HEADER for chunk in f.decrypted)
        for chunk in f.decrypted:
            acked = None if from_client else conn.tcp.down.sent_with((ends - back + 1) & 0xFFFFFFFF)
            back -= len(chunk) + TLS_HEADER
            self._record(conn, from_client, chunk, acked)

    def _record(self, conn: Conn, from_client: bool, chunk: bytes, acked: int | None) -> None:
        if conn.kind is not ConnKind.TLS and conn.kind is not ConnKind.TLS_HTTP:
            return
        self.encrypted.discard(conn.stream)
        if conn.kind is ConnKind.TLS:
            server_port, ports = conn.tcp.server[1], self.options.http_ports
            http = (looks_http if from_client else looks_http_server)(chunk, server_port, ports)
            if http or from_client:  # server bytes first decide only when they are an HTTP/2 preface
                conn.kind = ConnKind.TLS_HTTP if http else ConnKind.TLS_OTHER
                self.http_conns += http
        if conn.kind is ConnKind.TLS_HTTP:
            self.http.tcp(conn, [Delivered(from_client, chunk, acked)])

    def _untimed(self, number: int, shown: str) -> None:
        if self.untimed is None:
            self.untimed = (1, number, shown)
        else:
            self.untimed = (self.untimed[0] + 1, *self.untimed[1:])

    def _cut(self, f: Frame) -> None:
        if not self.cut[0]:
            self.cut[1:] = [f.number, len(f.payload), f.length]
        self.cut[0] += 1

    # -- end of the capture ------------------------------------------------------------------------

    def _finish(self) -> None:
        for conn in self.conns.values():
            if type(conn) is Conn:  # one at rest has nothing open
                self.http.finish(conn)
        if self.finished_early[0]:
            done, first = self.finished_early
            self.sessions.anomaly(
                None,
                AnomalyName.CAPTURE_TOO_MANY_CONNECTIONS,
                f"more than {MAX_LIVE_CONNS} TCP connections were open at once: {done} of them (the least "
                f"recently active, from frame {first} on) were finished early, as the end of the capture "
                "finishes one; a later segment of one was read as a new connection",
                frame=first,
            )
        if self.encrypted:
            streams = ", ".join(map(str, sorted(self.encrypted)))
            why = (
                "the keylog file did not decrypt them"
                if self.options.keylog
                else "no keylog file was given (--keylog SSLKEYLOGFILE)"
            )
            self.sessions.anomaly(
                None, AnomalyName.CAPTURE_ENCRYPTED, f"TLS on tcp streams {streams} was skipped: {why}"
            )
        if self.untimed is not None:
            count, first, shown = self.untimed
            self.sessions.anomaly(
                None,
                AnomalyName.INPUT_IMPLAUSIBLE_TIME,
                f"{count} frame(s) have a time that cannot be a clock reading (before 1970 or after 2106), the "
                f"first frame {first} ({shown} s since 1970); their events are kept without a time",
                frame=first,
            )
        if self.cut[0]:
            count, first, captured, length = self.cut
            unread = "; no JSON-RPC message could be read" if self.http.bodies.messages == 0 else ""
            self.sessions.anomaly(
                None,
                AnomalyName.CAPTURE_SNAPLEN_TRUNCATED,
                f"the capture was taken with a snaplen that cut TCP payloads: {count} frame(s), the first frame "
                f"{first} with {captured} of its {length} payload bytes{unread}; capture again with -s 0",
                frame=first,
            )
        elif self.http.bodies.messages == 0:
            self.sessions.anomaly(None, AnomalyName.CAPTURE_NO_MCP, self._no_mcp_detail())

    def _no_mcp_detail(self) -> str:
        if self.frames == 0:
            return "the capture holds no packets"
        if self.http_conns == 0 and self.encrypted:
            return f"{self.frames} frames; the only candidates were TLS connections that were not decrypted"
        if self.http_conns == 0:
            return (
                f"{self.frames} frames but no HTTP connection (sniffed by an HTTP/1.1 request line or the "
                "HTTP/2 preface; force ports with --http-port)"
            )
        return f"{self.http_conns} HTTP connections but no JSON-RPC message in them"
