"""Packet captures (pcap, pcapng) of MCP over HTTP/1.1: Streamable HTTP and legacy HTTP+SSE.

The only module that imports pyshark (and only to find tshark). The bulk path is one streaming tshark
pass that prints a few TCP fields per frame (`tshark_command`); TCP reassembly, HTTP/1.1 (`http1`),
SSE (`sse`) and JSON-RPC are done here, so a response that never finishes, an SSE body still open at
the end of the capture, or a server port tshark would decode as something else are all read the same.

What is emitted, per TCP connection that carries HTTP (sniffed by the request line at its start, or
forced with `ReadOptions.http_ports`), per exchange (request/response pair `tcp{stream}/{n}`, n from 0
in request order on the connection):

* `MessageEvent` C2S for each JSON-RPC message of a request body, at the frame that completed the body;
  S2C for an `application/json` response body at the frame that completed it, and for every SSE event
  whose data is JSON-RPC at the frame that completed that event. `revision_hint` is the request's
  `MCP-Protocol-Version` header.
* `TransportEvent`s (stream = the exchange): STREAM_OPENED (200 + text/event-stream), CLOSED_BY_CLIENT
  (client FIN while the response is not finished), CLOSED_BY_SERVER (an SSE response ends, or the
  server's FIN cuts a response), RESET_BY_CLIENT / RESET_BY_SERVER (RST while a response is not
  finished), RECEIVE_WINDOW_ZERO (the client advertises a zero window while a response is open; once
  per episode), SERVER_BYTES (server payload after the client closed or reset the exchange, once per
  frame; also SSE blocks with no data: priming events, comments, `retry`), RECORDING_ENDED (response
  still open at the end). A `DELETE` of a session is `CLOSED_BY_CLIENT` with stream None.
* `Anomaly`s: see `ANOMALIES`.

Sessions. A request's `Mcp-Session-Id` names its session (`{source}#{id}`). A request without one goes
to `{source}#{server_ip}:{port}` (2026-07-28, where POSTs stand alone), except in two cases whose events
are held (memory: one exchange's events) until the session is known: a POST carrying `initialize` waits
for its response head (an `Mcp-Session-Id` there names the session the initialize belongs to); a GET
waits for its first SSE event (`event: endpoint` makes it a legacy HTTP+SSE session `{source}#{id}`
keyed by the `sessionId`/`session_id` of the endpoint URI, to which later POSTs to that URI belong).
Held events keep their frames; only their `seq` is assigned when they are released.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from ..errors import InputError, ToolMissingError
from ..jsonrpc import decode_text
from ..model import (
    Anomaly,
    Direction,
    Event,
    Message,
    MessageEvent,
    Origin,
    RequestId,
    Revision,
    SessionStart,
    Transport,
    TransportEvent,
    TransportKind,
    Vantage,
)
from .base import InputSource, ReadOptions
from .http1 import (
    MAX_BODY_BYTES,
    Flow,
    Http1Connection,
    HttpEvent,
    ParseError,
    RequestEnd,
    RequestHead,
    ResponseData,
    ResponseEnd,
    ResponseHead,
    header,
)
from .sse import SseEvent, SseParser
from .tshark_fields import INSTALL_HINT, Frame, parse_line, tshark_command, tshark_version

ANOMALIES = (
    "capture.truncated",
    "capture.encrypted",
    "capture.no-mcp",
    "capture.tcp-gap",
    "capture.tshark-error",
    "http.parse-error",
    "http.error-status",
    "http.non-json-body",
    "http.body-too-large",
    "sse.partial-event",
    "sse.event-too-large",
    # and the JSON-RPC names from `cancelwire.jsonrpc`: jsonrpc.batch, jsonrpc.invalid-message, ...
)
SYN, RST, FIN, ACK = 0x02, 0x04, 0x01, 0x10
MAX_HELD_EVENTS = 512
METHODS = (b"GET ", b"POST ", b"DELETE ", b"PUT ", b"HEAD ", b"OPTIONS ", b"PATCH ")
PCAP_MAGICS = (b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"
_NOISE = re.compile(r"^Running as user .* This could be dangerous\.$")
Build = Callable[[int, str], Event]


# ---------------------------------------------------------------------------------------------- tshark


def find_tshark() -> str:
    """tshark's path (PATH first, then pyshark's config.ini and default places), or ToolMissingError."""
    found = shutil.which("tshark")
    if found:
        return found
    try:
        from pyshark.tshark.tshark import get_process_path

        path: str = get_process_path()
        return path
    except Exception as exc:  # pyshark raises its own TSharkNotFoundException (and is untyped)
        raise ToolMissingError(
            "tshark", "tshark (Wireshark's command-line tool) is not installed", INSTALL_HINT
        ) from exc


# ---------------------------------------------------------------------------------------------- state


@dataclass(slots=True)
class Exchange:
    id: str
    method: str
    target: str
    session_id: str | None
    revision: Revision | None
    key: str | None = None
    held: list[tuple[int, float, Build]] = field(default_factory=list)
    waits_for: str = ""
    """"" (key known), "response" (initialize POST) or "first-event" (GET without a session id)."""
    status: int = 0
    sse: SseParser | None = None
    body: bytearray | None = None
    body_size: int = 0
    request_id: RequestId | None = None
    request_method: str | None = None
    client_closed: bool = False
    last_server_bytes_frame: int = 0
    answered: bool = False
    """A JSON-RPC response to this exchange's request went by (the HTTP body may still be open)."""
    request_unread: bool = False
    """The request body was too large to read: its replies cannot be matched and are not judged."""


@dataclass(slots=True)
class Conn:
    stream: int
    client: tuple[str, int] | None = None
    kind: str = "unknown"
    """"unknown" until the first client bytes, then "http", "tls", "tls-http" or "other"."""
    http: Http1Connection = field(default_factory=Http1Connection)
    up: Flow = field(default_factory=Flow)
    down: Flow = field(default_factory=Flow)
    exchanges: dict[int, Exchange] = field(default_factory=dict)
    """Exchanges whose response is not finished (plus the last one, for writes after a reset)."""
    last: Exchange | None = None
    zero_window: bool = False
    reset: bool = False
    gap_up: bool = False
    gap_down: bool = False
    """Bytes were lost in that direction: what follows is not read (not even as SERVER_BYTES)."""

    server: tuple[str, int] = ("?", 0)

    def current(self) -> Exchange | None:
        """The exchange whose response is being sent (the oldest one not finished)."""
        for n in self.http.open_exchanges():
            if n in self.exchanges:
                return self.exchanges[n]
        return None


# ---------------------------------------------------------------------------------------------- reader


class PcapReader:
    name = "pcap"

    def sniff(self, head: bytes) -> bool:
        return head[:4] in PCAP_MAGICS or head[:4] == PCAPNG_MAGIC

    def read(self, source: InputSource, options: ReadOptions) -> Iterator[Event]:
        tshark = find_tshark()
        tshark_version(tshark)
        if options.keylog is not None and not options.keylog.is_file():
            raise InputError(
                source.name,
                f"keylog file {options.keylog} cannot be read",
                "pass the SSLKEYLOGFILE written while capturing",
            )
        with source.local_file() as path:
            yield from _Run(source, options, tshark, path).events()


class _Run:
    """One pass over one capture. All state lives here; nothing is module-level."""

    def __init__(self, source: InputSource, options: ReadOptions, tshark: str, path: Path) -> None:
        self.source = source
        self.options = options
        self.tshark = tshark
        self.path = path
        self.seq = 0
        self.out: list[Event] = []
        self.conns: dict[int, Conn] = {}
        self.started: set[str] = set()
        self.legacy: dict[str, str] = {}
        """Session id (or endpoint URI) from a legacy `endpoint` event → session key."""
        self.legacy_keys: set[str] = set()
        self.labels: dict[str, str] = {}
        self.frame = 0
        self.ts: float | None = None
        self.frames = 0
        self.http_conns = 0
        self.messages = 0
        self.encrypted: set[int] = set()
        """TLS connections with no decrypted byte (so far)."""

    # -- plumbing ----------------------------------------------------------------------------------

    def events(self) -> Iterator[Event]:
        cmd = tshark_command(self.tshark, self.path, self.options.keylog)
        with tempfile.TemporaryFile() as stderr:
            try:
                proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=stderr, stdin=subprocess.DEVNULL)
            except OSError as exc:
                raise ToolMissingError(self.source.name, f"cannot run tshark: {exc}", INSTALL_HINT) from exc
            try:
                assert proc.stdout is not None  # Popen with stdout=PIPE always has one
                for line in proc.stdout:
                    parsed = parse_line(line)
                    if parsed is None:
                        continue
                    self.frames += 1
                    if isinstance(parsed, int):
                        self.frame = parsed
                        continue
                    self.frame, self.ts = parsed.number, parsed.ts
                    self._frame(parsed)
                    if self.out:
                        yield from self.out
                        self.out.clear()
                rc = proc.wait()
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            stderr.seek(0)
            text = stderr.read().decode("utf-8", "replace")
        messages = [ln.strip() for ln in text.splitlines() if ln.strip() and not _NOISE.match(ln.strip())]
        shown = "; ".join(m.replace(str(self.path), self.source.name) for m in messages)
        if rc != 0 and self.frames == 0:
            raise InputError(
                self.source.name,
                f"tshark cannot read it: {shown or f'exit status {rc}'}",
                "is it a pcap/pcapng capture?",
            )
        for message in messages:
            shown_one = message.replace(str(self.path), self.source.name)
            if "cut short in the middle of a packet" in message:
                self._anomaly(
                    None,
                    "capture.truncated",
                    f"the capture ends in the middle of a packet after frame {self.frame}; "
                    f"everything before it was read ({shown_one})",
                )
            else:
                self._anomaly(None, "capture.tshark-error", shown_one)
        self._finish()
        yield from self.out
        self.out.clear()

    def _next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def _origin(self, frame: int | None = None) -> Origin:
        frame = frame if frame is not None else self.frame
        return Origin(self.source.name, frame=frame or None)

    def _anomaly(
        self,
        key: str | None,
        name: str,
        detail: str,
        frame: int | None = None,
        request_id: RequestId | None = None,
        method: str | None = None,
    ) -> None:
        if key is not None:
            self._emit(
                key,
                frame or self.frame,
                self.ts,
                lambda seq, k: Anomaly(seq, self.ts, self._origin(frame), k, name, detail, request_id, method),
            )
        else:
            self.out.append(
                Anomaly(self._next_seq(), self.ts, self._origin(frame), None, name, detail, request_id, method)
            )

    def _emit(self, key: str, frame: int, ts: float | None, build: Build) -> None:
        if key not in self.started:
            self.started.add(key)
            transport = Transport.HTTP_SSE if key in self.legacy_keys else Transport.STREAMABLE_HTTP
            self.out.append(
                SessionStart(
                    self._next_seq(),
                    ts,
                    self._origin(frame),
                    key,
                    transport,
                    self.options.session_vantage(Vantage.WIRE),
                    "pcap",
                    label=self.labels.get(key),
                )
            )
        self.out.append(build(self._next_seq(), key))

    def _ex(self, ex: Exchange, build: Build, frame: int | None = None) -> None:
        """Emit an exchange's event now, or hold it while its session is not known yet."""
        frame = frame or self.frame
        if ex.key is None:
            ex.held.append((frame, self.ts or 0.0, build))
            if len(ex.held) > MAX_HELD_EVENTS:
                self._resolve(ex, None)
            return
        self._emit(ex.key, frame, self.ts, build)

    def _resolve(self, ex: Exchange, key: str | None, conn: Conn | None = None) -> None:
        if ex.key is not None:
            return
        ex.key = key or self._fallback_key(conn)
        ex.waits_for = ""
        held, ex.held = ex.held, []
        for frame, ts, build in held:
            self._emit(ex.key, frame, ts, build)

    def _fallback_key(self, conn: Conn | None) -> str:
        """Without a session id (2026-07-28, or before one is issued): one session per client address
        and server, so two clients' request ids are never taken for one sender's."""
        ip, port = conn.server if conn is not None else ("?", 0)
        client = conn.client[0] if conn is not None and conn.client is not None else "?"
        key = f"{self.source.name}#{client}->{ip}:{port}"
        self.labels.setdefault(key, f"{client} -> {ip}:{port}")
        return key

    def _transport(self, ex: Exchange, kind: TransportKind, detail: str = "") -> None:
        frame, ts, name = self.frame, self.ts, self.source.name
        self._ex(ex, lambda seq, k: TransportEvent(seq, ts, Origin(name, frame=frame), k, kind, ex.id, detail))

    # -- frames ------------------------------------------------------------------------------------

    def _frame(self, f: Frame) -> None:
        conn = self.conns.get(f.stream)
        if conn is None:
            if not f.payload and not f.flags & SYN:
                return  # a late ACK/FIN/RST of a connection already finished (or never seen opening)
            conn = self.conns[f.stream] = Conn(f.stream)
        if conn.client is None:
            conn.client = self._client_side(f)
            conn.server = (f.dst, f.dport) if conn.client == (f.src, f.sport) else (f.src, f.sport)
        from_client = (f.src, f.sport) == conn.client
        flow = conn.up if from_client else conn.down
        if f.flags & SYN:
            flow.next = (f.seq + 1) & 0xFFFFFFFF
        if from_client and f.window >= 0 and not f.flags & (SYN | RST | FIN):
            self._window(conn, f)
        if f.payload:
            if conn.kind == "unknown":
                self._classify(conn, f, from_client)
            if conn.kind == "http":
                chunks, lost = flow.accept(f.seq, f.payload)
                if lost:
                    self._gap(conn, from_client, lost)
                for chunk in chunks:
                    self._bytes(conn, from_client, chunk)
        for chunk in f.decrypted:
            if conn.kind in ("tls", "tls-http"):
                self.encrypted.discard(conn.stream)
                if conn.kind == "tls" and from_client:
                    conn.kind = "tls-http" if self._looks_http(chunk, f.dport) else "tls-other"
                    self.http_conns += conn.kind == "tls-http"
                if conn.kind == "tls-http":
                    self._bytes(conn, from_client, chunk)
        if f.flags & FIN:
            self._fin(conn, from_client)
        if f.flags & RST:
            self._rst(conn, from_client)

    def _client_side(self, f: Frame) -> tuple[str, int]:
        if f.flags & SYN:
            return (f.src, f.sport) if not f.flags & ACK else (f.dst, f.dport)
        if f.payload.startswith(METHODS) or f.dport in self.options.http_ports:
            return f.src, f.sport
        if f.payload.startswith(b"HTTP/1.") or f.sport in self.options.http_ports:
            return f.dst, f.dport
        return f.src, f.sport

    def _looks_http(self, data: bytes, server_port: int) -> bool:
        return data.startswith(METHODS) or server_port in self.options.http_ports

    def _classify(self, conn: Conn, f: Frame, from_client: bool) -> None:
        server_port = conn.server[1]
        if from_client and f.payload[:2] == b"\x16\x03":
            conn.kind = "tls"
            self.encrypted.add(conn.stream)
        elif self._looks_http(f.payload, server_port) if from_client else server_port in self.options.http_ports:
            conn.kind = "http"
        else:
            conn.kind = "other"
        if conn.kind == "http":
            self.http_conns += 1

    def _window(self, conn: Conn, f: Frame) -> None:
        if f.window != 0:
            conn.zero_window = False
            return
        ex = conn.current()
        if ex is not None and not conn.zero_window:
            conn.zero_window = True
            self._transport(
                ex,
                TransportKind.RECEIVE_WINDOW_ZERO,
                "the client advertised a zero TCP receive window (it stopped reading)",
            )

    def _gap(self, conn: Conn, from_client: bool, lost: int) -> None:
        ex = conn.current()
        side = "client→server" if from_client else "server→client"
        self._anomaly(
            ex.key if ex else None,
            "capture.tcp-gap",
            f"tcp stream {conn.stream}: {lost} {side} bytes missing from the capture; "
            f"HTTP in that direction is not read further",
        )
        if from_client:
            conn.http.client_broken = conn.gap_up = True
        else:
            conn.http.server_broken = conn.gap_down = True

    def _fin(self, conn: Conn, from_client: bool) -> None:
        flow = conn.up if from_client else conn.down
        if flow.fin:
            return
        flow.fin = True
        chunks, lost = flow.skip_gap()
        if lost:
            self._gap(conn, from_client, lost)
        for chunk in chunks:
            self._bytes(conn, from_client, chunk)
        if conn.kind in ("http", "tls-http"):
            self._http_fin(conn, from_client)
        if conn.up.fin and conn.down.fin:
            for ex in conn.exchanges.values():
                self._partial(ex)
            del self.conns[conn.stream]  # both sides closed: nothing is open any more

    def _http_fin(self, conn: Conn, from_client: bool) -> None:
        if from_client:
            self._http(conn, conn.http.close_client())
            ex = conn.current()
            if ex is not None:
                self._transport(ex, TransportKind.CLOSED_BY_CLIENT, "client FIN " + _progress(ex))
            for open_ex in conn.exchanges.values():
                open_ex.client_closed = True
        else:
            self._http(conn, conn.http.close_server())
            ex = conn.current()
            if ex is not None and not ex.status:
                self._transport(ex, TransportKind.CLOSED_BY_SERVER, "server FIN before any response")

    def _rst(self, conn: Conn, from_client: bool) -> None:
        if conn.kind not in ("http", "tls-http"):
            del self.conns[conn.stream]
            return
        if conn.reset:
            return
        conn.reset = True
        ex = conn.current()
        conn.last = ex
        if ex is None:
            return
        kind = TransportKind.RESET_BY_CLIENT if from_client else TransportKind.RESET_BY_SERVER
        self._transport(ex, kind, "TCP RST " + _progress(ex))
        for open_ex in list(conn.exchanges.values()):
            self._partial(open_ex)
            open_ex.client_closed = True
        conn.exchanges.clear()  # the connection is gone: nothing is open any more

    # -- HTTP --------------------------------------------------------------------------------------

    def _bytes(self, conn: Conn, from_client: bool, data: bytes) -> None:
        if conn.gap_up if from_client else conn.gap_down:
            return
        if conn.reset:
            if not from_client and conn.last is not None:
                self._server_bytes(conn.last, len(data), "after the connection was reset")
            return
        if from_client:
            self._http(conn, conn.http.feed_client(data))
        else:
            ex = conn.current()
            if ex is not None and ex.client_closed:
                only_end = data.strip() == b"0"  # just the chunked terminator: no event
                self._server_bytes(
                    ex,
                    len(data),
                    "after the client closed the exchange"
                    + (" (only the end of the chunked body)" if only_end else ""),
                )
            self._http(conn, conn.http.feed_server(data))

    def _server_bytes(self, ex: Exchange, size: int, why: str) -> None:
        if ex.last_server_bytes_frame == self.frame:
            return
        ex.last_server_bytes_frame = self.frame
        self._transport(ex, TransportKind.SERVER_BYTES, f"server sent {size} bytes {why}")

    def _http(self, conn: Conn, events: list[HttpEvent]) -> None:
        for event in events:
            if isinstance(event, ParseError):
                ex = conn.exchanges.get(event.exchange) if event.exchange is not None else None
                who = "request" if event.from_client else "response"
                self._anomaly(
                    ex.key if ex else None,
                    "http.parse-error",
                    f"tcp stream {conn.stream}: {who} is not valid HTTP/1.1: {event.detail}",
                )
                continue
            ex = conn.exchanges.get(event.exchange)
            if isinstance(event, RequestHead):
                ex = self._request_head(conn, event)
            elif ex is None:
                continue
            elif isinstance(event, RequestEnd):
                self._request_end(conn, ex, event)
            elif isinstance(event, ResponseHead):
                self._response_head(conn, ex, event)
            elif isinstance(event, ResponseData):
                self._response_data(conn, ex, event.data)
            elif isinstance(event, ResponseEnd):
                self._response_end(conn, ex, event)

    def _request_head(self, conn: Conn, event: RequestHead) -> Exchange:
        ex = Exchange(
            f"tcp{conn.stream}/{event.exchange}",
            event.method,
            event.target,
            header(event.headers, "mcp-session-id"),
            header(event.headers, "mcp-protocol-version"),
        )
        conn.exchanges[event.exchange] = ex
        conn.last = ex
        if ex.session_id:
            ex.key = self._session_key(ex.session_id)
            self.labels.setdefault(ex.key, f"{conn.server[0]}:{conn.server[1]}")
        else:
            legacy = self._legacy_session(event.target)
            if legacy is not None:
                ex.key = legacy
            elif event.method == "GET":
                ex.waits_for = "first-event"
        return ex

    def _session_key(self, session_id: str) -> str:
        return self.legacy.get(session_id) or f"{self.source.name}#{session_id}"

    def _legacy_session(self, target: str) -> str | None:
        if not self.legacy:
            return None
        if target in self.legacy:
            return self.legacy[target]
        query = parse_qs(urlsplit(target).query)
        for name in ("sessionId", "session_id"):
            for value in query.get(name, []):
                if value in self.legacy:
                    return self.legacy[value]
        return None

    def _request_end(self, conn: Conn, ex: Exchange, event: RequestEnd) -> None:
        if ex.method == "DELETE" and ex.session_id and ex.key is not None:
            frame, ts, name = self.frame, self.ts, self.source.name
            self._emit(
                ex.key,
                frame,
                ts,
                lambda seq, k: TransportEvent(
                    seq, ts, Origin(name, frame=frame), k, TransportKind.CLOSED_BY_CLIENT, None, "DELETE session"
                ),
            )
        if not event.body:
            if ex.key is None and ex.waits_for == "":
                self._resolve(ex, None, conn)
            return
        if event.truncated:
            self.messages += 1  # an MCP body, too large to read: the capture does hold MCP traffic
            ex.request_unread = True
            if ex.key is None and ex.waits_for == "":
                self._resolve(ex, None, conn)
            self._anomaly(
                ex.key,
                "http.body-too-large",
                f"{ex.id}: request body of {event.body_size} bytes skipped (limit {MAX_BODY_BYTES}); "
                "replies on this exchange are not judged either",
            )
            return
        decoded = decode_text(event.body)
        if decoded is not None and len(decoded.messages) == 1 and not decoded.batch:
            ex.request_id, ex.request_method = decoded.messages[0].id, decoded.messages[0].method
        initialize = decoded is not None and any(m.method == "initialize" for m in decoded.messages)
        if ex.key is None:
            if initialize:
                ex.waits_for = "response"
            elif ex.waits_for == "":
                self._resolve(ex, None, conn)
        self._json(ex, event.body, Direction.C2S, "request body")

    def _json(self, ex: Exchange, body: bytes, direction: Direction, what: str) -> None:
        decoded = decode_text(body)
        frame, ts, name, revision = self.frame, self.ts, self.source.name, ex.revision
        origin = Origin(name, frame=frame)
        if decoded is None:
            shown = body[:120].decode("utf-8", "replace")
            self._ex(
                ex,
                lambda seq, k: Anomaly(
                    seq, ts, origin, k, "http.non-json-body", f"{ex.id}: {what} is not JSON: {shown!r}"
                ),
            )
            return
        if decoded.batch:
            size = len(decoded.messages) + len(decoded.problems)
            self._ex(
                ex,
                lambda seq, k: Anomaly(
                    seq, ts, origin, k, "jsonrpc.batch", f"{ex.id}: {what} is a JSON array of {size} messages (a batch)"
                ),
            )
        for problem in decoded.problems:
            self._ex(ex, _problem_build(ts, origin, problem.name, f"{ex.id}: {problem.detail}"))
        for message in decoded.messages:
            if ex.request_unread and message.method is None:
                continue  # a reply to the request we could not read (named in its body-too-large anomaly)
            self.messages += 1
            if (
                direction is Direction.S2C
                and message.id is not None
                and message.id == ex.request_id
                and message.method is None
            ):
                ex.answered = True
            self._ex(ex, _message_build(ts, origin, direction, message, ex.id, revision))

    def _response_head(self, conn: Conn, ex: Exchange, event: ResponseHead) -> None:
        ex.status = event.status
        media = (header(event.headers, "content-type") or "").split(";", 1)[0].strip().lower()
        if ex.waits_for == "response" or (ex.waits_for == "first-event" and media != "text/event-stream"):
            sid = header(event.headers, "mcp-session-id")
            key = self._session_key(sid) if sid and ex.waits_for == "response" else None
            if key is not None:
                self.labels.setdefault(key, f"{conn.server[0]}:{conn.server[1]}")
            self._resolve(ex, key, conn)
        if event.status >= 400 and ex.method == "POST":
            self._anomaly(
                ex.key,
                "http.error-status",
                f"{ex.id}: HTTP {event.status} {event.reason} to POST {ex.target}",
                request_id=ex.request_id,
                method=ex.request_method,
            )
        if media == "text/event-stream" and 200 <= event.status < 300:
            ex.sse = SseParser()
            self._transport(ex, TransportKind.STREAM_OPENED, f"{ex.method} {ex.target}")
        elif media == "application/json" or media.endswith("+json"):
            ex.body = bytearray()

    def _response_data(self, conn: Conn, ex: Exchange, data: bytes) -> None:
        if ex.sse is not None:
            for sse_event in ex.sse.feed(data):
                self._sse_event(conn, ex, sse_event)
        elif ex.body is not None:
            ex.body_size += len(data)
            room = MAX_BODY_BYTES - len(ex.body)
            if room > 0:
                ex.body += data[:room]

    def _sse_event(self, conn: Conn, ex: Exchange, event: SseEvent) -> None:
        if ex.waits_for == "first-event":
            sid = _endpoint_session(event) if event.event == "endpoint" else None
            if sid is not None:
                key = f"{self.source.name}#{sid}"
                self.legacy[sid] = key
                self.legacy[urlsplit((event.data or "").strip())._replace(scheme="", netloc="").geturl()] = key
                self.legacy_keys.add(key)
                self.labels.setdefault(key, f"{conn.server[0]}:{conn.server[1]}")
            self._resolve(ex, key if sid is not None else None, conn)
        if event.oversized:
            self._anomaly(
                ex.key, "sse.event-too-large", f"{ex.id}: an SSE event of {event.end - event.start} bytes was skipped"
            )
            return
        if event.event == "endpoint":
            return  # legacy HTTP+SSE setup: where to POST; no message
        if event.data is None or not event.data.strip():
            parts = [
                f"id={event.id}" if event.id is not None else "",
                f"retry={event.retry}" if event.retry is not None else "",
                f"comment={event.comments[0]!r:.60}" if event.comments else "",
            ]
            what = "priming event" if event.data is not None and event.id is not None else "SSE block without data"
            self._transport(ex, TransportKind.SERVER_BYTES, " ".join([what, *filter(None, parts)]))
            return
        self._json(
            ex,
            event.data.encode(),
            Direction.S2C,
            f"SSE event (id={event.id})" if event.id is not None else "SSE event",
        )

    def _response_end(self, conn: Conn, ex: Exchange, event: ResponseEnd) -> None:
        conn.exchanges.pop(int(ex.id.rsplit("/", 1)[1]), None)
        if ex.key is None:
            self._resolve(ex, None, conn)
        if ex.sse is not None:
            self._partial(ex)
            how = "end of the SSE body" if event.complete else f"connection closed mid-body ({event.detail})"
            self._transport(ex, TransportKind.CLOSED_BY_SERVER, how)
        elif not event.complete:
            self._transport(ex, TransportKind.CLOSED_BY_SERVER, f"response cut: {event.detail}")
        elif ex.body is not None:
            if ex.body_size > MAX_BODY_BYTES:
                self._anomaly(
                    ex.key,
                    "http.body-too-large",
                    f"{ex.id}: response body of {ex.body_size} bytes; only {MAX_BODY_BYTES} read",
                )
            elif ex.body:
                self._json(ex, bytes(ex.body), Direction.S2C, "response body")
            ex.body = None

    def _partial(self, ex: Exchange) -> None:
        if ex.sse is None:
            return
        partial = ex.sse.finish()
        if partial is None:
            return
        request_id: RequestId | None = None
        method: str | None = None
        if partial.data:
            decoded = decode_text(partial.data)
            if decoded is not None and decoded.messages:
                request_id, method = decoded.messages[0].id, decoded.messages[0].method
        shown = partial.raw[:200].decode("utf-8", "replace")
        if ex.key is None:
            self._resolve(ex, None)
        self._anomaly(
            ex.key,
            "sse.partial-event",
            f"{ex.id}: the SSE stream stopped inside an event at byte {partial.start} "
            f"(a client discards it): {shown!r}",
            request_id=request_id,
            method=method,
        )

    # -- end of the capture ------------------------------------------------------------------------

    def _finish(self) -> None:
        for conn in self.conns.values():
            for from_client, flow in ((True, conn.up), (False, conn.down)):
                chunks, lost = flow.skip_gap()
                if lost:
                    self._gap(conn, from_client, lost)
                for chunk in chunks:
                    self._bytes(conn, from_client, chunk)
            for n in conn.http.open_exchanges():
                ex = conn.exchanges.get(n)
                if ex is None:
                    continue
                if ex.key is None:
                    self._resolve(ex, None, conn)
                self._partial(ex)
                self._transport(ex, TransportKind.RECORDING_ENDED, "the capture ended before the response finished")
        if self.encrypted:
            streams = ", ".join(map(str, sorted(self.encrypted)))
            why = (
                "the keylog file did not decrypt them"
                if self.options.keylog
                else "no keylog file was given (--keylog SSLKEYLOGFILE)"
            )
            self._anomaly(None, "capture.encrypted", f"TLS on tcp streams {streams} was skipped: {why}")
        if self.messages == 0:
            if self.frames == 0:
                detail = "the capture holds no packets"
            elif self.http_conns == 0 and self.encrypted:
                detail = f"{self.frames} frames; the only candidates were TLS connections that were not decrypted"
            elif self.http_conns == 0:
                detail = (
                    f"{self.frames} frames but no HTTP/1.1 connection (sniffed by request line; "
                    "force ports with --http-port)"
                )
            else:
                detail = f"{self.http_conns} HTTP connections but no JSON-RPC message in them"
            self._anomaly(None, "capture.no-mcp", detail)


def _progress(ex: Exchange) -> str:
    """Where the exchange stood when a connection closed: for details that people read."""
    if not ex.status:
        return "before any response"
    if ex.answered:
        return "after the JSON-RPC response, before the HTTP body ended"
    return "before the response finished"


def _problem_build(ts: float | None, origin: Origin, name: str, detail: str) -> Build:
    return lambda seq, key: Anomaly(seq, ts, origin, key, name, detail)


def _message_build(
    ts: float | None, origin: Origin, direction: Direction, message: Message, stream: str, revision: Revision | None
) -> Build:
    return lambda seq, key: MessageEvent(seq, ts, origin, key, direction, message, stream, revision)


def _endpoint_session(event: SseEvent) -> str | None:
    """The session id in a legacy `endpoint` event's URI (`sessionId` or `session_id`), else the URI."""
    uri = (event.data or "").strip()
    if not uri:
        return None
    query = parse_qs(urlsplit(uri).query)
    for name in ("sessionId", "session_id"):
        if query.get(name):
            return query[name][0]
    return uri


READER = PcapReader()


def frame_details(capture: Path, frame: int) -> Any:
    """One frame as a pyshark packet, for a human look-up (never on the bulk path)."""
    import pyshark

    find_tshark()
    try:
        with pyshark.FileCapture(str(capture), keep_packets=False, display_filter=f"frame.number == {frame}") as cap:
            for packet in cap:
                return packet
    except Exception as exc:  # pyshark raises its own untyped errors for unreadable files
        raise InputError(str(capture), f"tshark could not read it: {exc}") from exc
    raise InputError(f"{capture}#{frame}", "no such frame in the capture")
