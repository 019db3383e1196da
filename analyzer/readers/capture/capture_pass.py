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

from collections.abc import Iterator

from ...model import AnomalyName, Event, Vantage
from ..base import InputSource, ReadOptions
from ..http.http2_joined import starts_with_frames
from .conn import Conn, ConnKind, IdleConn
from .frames import Frame, FrameSource
from .over_http1 import HttpCapture, looks_http, looks_http_server
from .sessions import Sessions
from .tcp import ACK, FIN, RST, SYN, Delivered, TcpConnection, client_by_handshake

TLS_HEADER = 5
"""Bytes of a TLS record's header: a record's ciphertext is at least its plaintext and these."""


class CapturePass:
    """One pass over one capture. All state lives here; nothing is module-level."""

    def __init__(self, source: InputSource, options: ReadOptions) -> None:
        self.source = source
        self.options = options
        self.sessions = Sessions(source.name, options.session_vantage(Vantage.WIRE))
        self.http = HttpCapture(self.sessions, options.inflate.max_ratio)
        self.conns: dict[int, Conn | IdleConn] = {}
        self.frames = 0
        self.http_conns = 0
        self.encrypted: set[int] = set()
        """TLS connections with no decrypted byte (so far)."""
        self.untimed: tuple[int, int, str] | None = None
        """Frames whose time cannot be a clock reading: (count, first frame, its time as tshark gave it)."""
        self.cut: list[int] = [0, 0, 0, 0]
        """Frames whose payload the snaplen cut: [count, first frame, its captured bytes, its tcp.len]."""

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
        if known is None:
            if not f.length and not f.flags & SYN:
                return  # a late ACK/FIN/RST of a connection already finished (or never seen opening)
            conn = self.conns[f.stream] = self._new_conn(f)
        elif type(known) is IdleConn:
            if not f.length and not f.flags & (SYN | FIN | RST) and not f.decrypted:
                return  # an ACK of a connection at rest: nothing waits for it
            conn = self.conns[f.stream] = known.revive()
        else:
            conn = known  # type: ignore[assignment]  # the type test above leaves Conn
        from_client = (f.src, f.sport) == conn.tcp.client
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
            if conn.tcp.closed or (conn.tcp.reset and not conn.kind.read):
                del self.conns[conn.stream]  # nothing is open on it any more
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
        return Conn(f.stream, TcpConnection(client, server), h2_midway=midway)

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
