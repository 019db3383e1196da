"""MCP over HTTP/1.1 on one TCP connection of a capture: what the TCP events (`tcp`) and the HTTP
events (`http1`) of the connection mean as MCP transport events, per exchange (`tcp{stream}/{n}`).

* STREAM_OPENED: a 2xx `text/event-stream` response head.
* CLOSED_BY_CLIENT: the client's FIN while the response is not finished (a `DELETE` of a session is
  CLOSED_BY_CLIENT with stream None).
* CLOSED_BY_SERVER: an SSE response ends, or the server's FIN cuts a response.
* RESET_BY_CLIENT / RESET_BY_SERVER: an RST while a response is not finished.
* RECEIVE_WINDOW_ZERO: the client advertises a zero window while a response is open (once per episode).
* SERVER_BYTES: server payload after the client closed or reset the exchange (once per frame); the end
  of a chunked body alone is no payload (it is the response's end, CLOSED_BY_SERVER).
* RECORDING_ENDED: the response is still open at the end of the capture.

A connection whose client starts with the HTTP/2 preface is read by `capture_http2` instead (its
streams are exchanges); heads, bodies and ends take the same path. Bodies are read by
`capture_bodies`, sessions decided by `capture_sessions`.
"""

from __future__ import annotations

from typing import Final

from ...model import AnomalyName, Direction, Message, Side, TransportEvent, TransportKind
from ...model.jsonrpc import decode_text
from ..http.http1 import (
    MAX_BODY_BYTES,
    HttpEvent,
    ParseError,
    RequestEnd,
    RequestHead,
    ResponseData,
    ResponseEnd,
    ResponseHead,
    header,
)
from ..http.http2 import Http2Connection, looks_http2, looks_http2_server
from ..http.http2_joined import JoinedHttp2Connection
from ..http.sse import SseParser
from ..inflate import DEFAULT_LIMITS
from .bodies import Bodies
from .conn import Conn
from .over_http2 import Http2Capture
from .sessions import Build, Exchange, Sessions, WaitsFor
from .tcp import AfterFin, Closed, Conflict, Delivered, Lost, Reset, TcpEvent, WindowZero

REPLIES_UNREAD: Final = TransportKind.REPLIES_UNREAD
MAX_ANSWERED_EARLY = 64
"""Exchanges per connection answered before their request body ended, kept for its end (a client
sends one body at a time: a hostile one cannot grow this past the cap)."""
METHODS: Final = (b"GET ", b"POST ", b"DELETE ", b"PUT ", b"HEAD ", b"OPTIONS ", b"PATCH ")


def looks_http(data: bytes, server_port: int, http_ports: tuple[int, ...]) -> bool:
    """The client's first bytes are an HTTP/1.1 request or the HTTP/2 preface (or the port is forced)."""
    return data.startswith(METHODS) or looks_http2(data) or server_port in http_ports


def looks_http_server(data: bytes, server_port: int, http_ports: tuple[int, ...]) -> bool:
    """The server spoke first: only an HTTP/2 server preface (or a forced port) says HTTP."""
    return looks_http2_server(data) or server_port in http_ports


class HttpCapture:
    """The HTTP side of every connection of one capture."""

    def __init__(self, sessions: Sessions, max_ratio: float = DEFAULT_LIMITS.max_ratio) -> None:
        self.sessions = sessions
        self.bodies = Bodies(sessions, max_ratio)
        self.h2 = Http2Capture(self)

    # -- TCP ---------------------------------------------------------------------------------------

    def tcp(self, conn: Conn, events: list[TcpEvent]) -> None:
        for event in events:
            if type(event) is Delivered:  # by far the most common: tested first, without isinstance
                if event.from_client or not (conn.tcp.up.fin or conn.reset_by_client or conn.h2 is not None):
                    self.bytes(conn, event.from_client, event.data)  # no close of the client's to cross
                    continue
                self.sessions.crossed = conn.reset_by_client or conn.tcp.before_client_fin(event.acked)
                self.sessions.acked = event.acked
                self.bytes(conn, False, event.data)
                self.sessions.crossed, self.sessions.acked = False, None
            elif isinstance(event, WindowZero):
                self._window_zero(conn)
            elif isinstance(event, Lost):
                self._gap(conn, event.from_client, event.size)
            elif isinstance(event, Closed):
                if conn.kind.read:
                    self._fin(conn, event.from_client, (event.frame, event.ts))
            elif isinstance(event, Reset):
                if conn.kind.read:
                    self._rst(conn, event.from_client)
            elif isinstance(event, Conflict):
                self._conflict(conn, event)
            elif isinstance(event, AfterFin):
                self._after_fin(conn, event)

    def bytes(self, conn: Conn, from_client: bool, data: bytes) -> None:
        if (conn.tcp.up if from_client else conn.tcp.down).gap:
            return
        if conn.reset and (from_client or not conn.reset_by_client):
            if not from_client and conn.last is not None:
                self.server_bytes(conn.last, len(data), "after the connection was reset")
            return
        if conn.h2 is None and conn.http.exchanges == 0:
            if conn.h2_midway:
                conn.h2 = JoinedHttp2Connection()
            elif (looks_http2 if from_client else looks_http2_server)(data):
                conn.h2 = Http2Connection()
        if conn.h2 is not None:
            self.h2.bytes(conn, from_client, data)
            return
        if from_client:
            self.http_events(conn, conn.http.feed_client(data))
            return
        ex = conn.current()
        if ex is not None and ex.client_closed and not self.sessions.crossed:
            only_end = data.strip() == b"0"  # just the chunked terminator: no event
            if not only_end:  # the terminator ends the response already sent (its CLOSED_BY_SERVER): no write
                self.server_bytes(ex, len(data), "after the client closed the exchange")
        self.http_events(conn, conn.http.feed_server(data))

    def finish(self, conn: Conn) -> None:
        """The capture ended: what is still open on the connection ends with the recording."""
        self.tcp(conn, conn.tcp.finish())
        if conn.reset_by_client:  # the client's reset ended it: what the server sent before it was read
            if conn.h2 is None:
                self._end_reset(conn)
            else:
                self.h2.end_reset(conn)
            return
        for n in conn.open_numbers():
            ex = conn.exchanges.get(n)
            if ex is None:
                continue
            self.sessions.settle(ex)
            self.sessions.resolve(ex, None)
            self.bodies.partial(ex)
            self.sessions.transport(ex, TransportKind.RECORDING_ENDED, "the capture ended before the response finished")

    def _window_zero(self, conn: Conn) -> None:
        """The client stopped reading the connection: on HTTP/2 that stalls every stream being answered."""
        if conn.h2 is not None:
            stalled = [ex for n in conn.open_numbers() if (ex := conn.exchanges.get(n)) and ex.status]
        else:
            stalled = [ex] if (ex := conn.current()) is not None else []
        for ex in stalled:
            self.sessions.transport(
                ex,
                TransportKind.RECEIVE_WINDOW_ZERO,
                "the client advertised a zero TCP receive window (it stopped reading)",
            )

    def _gap(self, conn: Conn, from_client: bool, lost: int) -> None:
        if not conn.first_time(AnomalyName.CAPTURE_TCP_GAP, from_client):
            return  # that direction is not read any more: later holes add nothing
        side = "client→server" if from_client else "server→client"
        detail = f"tcp stream {conn.stream}: {lost} {side} bytes missing from the capture; "
        self.stopped(
            conn,
            conn.current(),
            AnomalyName.CAPTURE_TCP_GAP,
            detail + "HTTP in that direction is not read further",
            from_client=from_client,
        )
        if from_client:
            conn.http.client_broken = True
        else:
            conn.http.server_broken = True

    def stopped(self, conn: Conn, ex: Exchange | None, name: AnomalyName, detail: str, *, from_client: bool) -> None:
        """A direction of the connection is not read further (`name` says why): what silence no longer proves.
        Client→server: the client's replies to the server's open requests may be in it. Server→client: the
        replies of the connection's exchanges, open now or begun later (`unread_replies`)."""
        self.sessions.anomaly(ex.key if ex else None, name, detail, unread_from=Side.CLIENT if from_client else None)
        if from_client or conn.replies_unread:
            return
        frame = self.sessions.frame
        conn.replies_unread = f"tcp stream {conn.stream}: server→client not read after frame {frame} ({name})"
        for open_ex in list(conn.exchanges.values()):
            if open_ex.request_ended:
                self.unread_replies(conn, open_ex)
            if open_ex.sse is not None:
                self._legacy_unread(open_ex.key, conn.replies_unread)

    def _legacy_unread(self, key: str | None, why: str) -> None:
        """An SSE stream no longer read: in an HTTP+SSE session it carries every reply, so every client request
        of the session open now, and sent later (`_request_read`), is judged as unread."""
        s = self.sessions
        if key is None or not s.legacy(key) or key in s.replies_unread:
            return
        s.replies_unread[key] = why
        ts, origin = s.ts, s.origin()
        s.emit(key, s.frame, ts, lambda seq, k: TransportEvent(seq, ts, origin, k, REPLIES_UNREAD, None, why))

    def _request_read(self, conn: Conn, ex: Exchange, event: RequestEnd) -> None:
        """A request has been read: its messages, and whether its replies come where nothing is read."""
        self._request_end(ex, event)
        if conn.replies_unread:
            self.unread_replies(conn, ex)
        elif ex.key in self.sessions.replies_unread:  # an HTTP+SSE session whose GET stream is not read
            self.sessions.transport(ex, REPLIES_UNREAD, self.sessions.replies_unread[ex.key])

    def unread_replies(self, conn: Conn, ex: Exchange) -> None:
        """The exchange's answer is on a direction no longer read: its messages are delivered as far as can
        be known, and its requests' replies (and the stream's end) may be in the recording, unread."""
        self.sessions.settle(ex, unknown=True)
        self.sessions.resolve(ex, None)
        self.sessions.transport(ex, REPLIES_UNREAD, conn.replies_unread)

    def _fin(self, conn: Conn, from_client: bool, at: tuple[int, float | None]) -> None:
        if conn.h2 is not None:
            self.h2.fin(conn, from_client, at)
            return
        if from_client:
            self.http_events(conn, conn.http.close_client())
            ex = conn.current()
            if ex is not None:
                self.sessions.transport(ex, TransportKind.CLOSED_BY_CLIENT, "client FIN " + ex.stage(), at=at)
            for open_ex in conn.exchanges.values():
                open_ex.client_closed = True
        else:
            self.http_events(conn, conn.http.close_server())
            ex = conn.current()
            if ex is not None and not ex.status:
                self.sessions.transport(ex, TransportKind.CLOSED_BY_SERVER, "server FIN before any response", at=at)
        if conn.tcp.closed:
            for open_ex in conn.exchanges.values():
                self.sessions.settle(open_ex)
                self.bodies.partial(open_ex)

    def _rst(self, conn: Conn, from_client: bool) -> None:
        if conn.h2 is not None:
            self.h2.rst(conn, from_client)
            return
        conn.reset = True
        ex = conn.current()
        conn.last = ex
        if ex is None:
            return
        kind = TransportKind.RESET_BY_CLIENT if from_client else TransportKind.RESET_BY_SERVER
        self.sessions.transport(ex, kind, "TCP RST " + ex.stage())
        if from_client:  # segments the server sent before the RST reached it may still be captured: read them
            conn.reset_by_client = True
            for open_ex in conn.exchanges.values():
                open_ex.client_closed = True
            return
        self._end_reset(conn)

    def _end_reset(self, conn: Conn) -> None:
        """A reset connection: every exchange still open on it ends, its response cut."""
        for open_ex in list(conn.exchanges.values()):
            self.sessions.settle(open_ex)
            self.bodies.partial(open_ex)
            self.bodies.cut_body(open_ex, "the connection was reset")
            open_ex.client_closed = True
        conn.exchanges.clear()  # the connection is gone: nothing is open any more

    def _conflict(self, conn: Conn, event: Conflict) -> None:
        """Overlapping segments disagree: the first bytes were kept (see `tcp`); say so, naming both
        (the first conflict per direction: a hostile capture could hold millions)."""
        if not conn.first_time(AnomalyName.CAPTURE_TCP_OVERLAP_CONFLICT, event.from_client):
            return
        ex = conn.current() or conn.last
        side = "client→server" if event.from_client else "server→client"
        self.sessions.anomaly(
            ex.key if ex else None,
            AnomalyName.CAPTURE_TCP_OVERLAP_CONFLICT,
            f"tcp stream {conn.stream}: a {side} segment overlaps {event.size} bytes already received in frame "
            f"{event.first_frame} with different bytes; the bytes of frame {event.first_frame} were kept "
            "(first wins, as in Zeek and Wireshark)",
        )

    def _after_fin(self, conn: Conn, event: AfterFin) -> None:
        """Payload after the sender's FIN is not part of its byte stream: said once per direction."""
        if not conn.first_time(AnomalyName.CAPTURE_DATA_AFTER_FIN, event.from_client):
            return
        ex = conn.current() or conn.last
        who = "client" if event.from_client else "server"
        self.sessions.anomaly(
            ex.key if ex else None,
            AnomalyName.CAPTURE_DATA_AFTER_FIN,
            f"tcp stream {conn.stream}: the {who} sent {event.size} payload bytes after its FIN; "
            "they are not read (a FIN ends the sender's byte stream)",
        )

    def server_bytes(self, ex: Exchange, size: int, why: str) -> None:
        """SERVER_BYTES for the exchange, once per frame."""
        frame = self.sessions.frame
        if ex.last_server_bytes_frame == frame:
            return
        ex.last_server_bytes_frame = frame
        self.sessions.transport(ex, TransportKind.SERVER_BYTES, f"server sent {size} bytes {why}")

    # -- HTTP --------------------------------------------------------------------------------------

    def http_events(self, conn: Conn, events: list[HttpEvent]) -> None:
        for event in events:
            if isinstance(event, ParseError):
                ex = conn.exchanges.get(event.exchange) if event.exchange is not None else None
                who = "request" if event.from_client else "response"
                detail = f"tcp stream {conn.stream}: {who} is not valid HTTP/1.1: {event.detail}"
                self.stopped(conn, ex, AnomalyName.HTTP_PARSE_ERROR, detail, from_client=event.from_client)
                continue
            if isinstance(event, RequestHead):
                self._request_head(conn, event)
                continue
            ex = conn.exchanges.get(event.exchange)
            if ex is None:
                if isinstance(event, RequestEnd) and (early := conn.answered_early.pop(event.exchange, None)):
                    self._request_end(early, event)
                continue
            if isinstance(event, RequestEnd):
                self._request_read(conn, ex, event)
            elif isinstance(event, ResponseHead):
                self._response_head(ex, event)
                if event.status == 101:
                    self.h2.upgrade(conn, ex, event.headers)
            elif isinstance(event, ResponseData):
                self.bodies.response_data(ex, event.data)
            elif isinstance(event, ResponseEnd):
                self._response_end(conn, ex, event)

    def _request_head(self, conn: Conn, event: RequestHead) -> None:
        ex = Exchange(
            stream=conn.stream,
            number=event.exchange,
            method=event.method,
            target=event.target,
            session_id=header(event.headers, "mcp-session-id"),
            revision=header(event.headers, "mcp-protocol-version"),
            client=conn.tcp.client,
            server=conn.tcp.server,
            http2=event.http_version == "2",
            request_coding=header(event.headers, "content-encoding"),
        )
        conn.exchanges[event.exchange] = ex
        conn.last = ex
        self.sessions.start_request(ex)

    def _request_end(self, ex: Exchange, event: RequestEnd) -> None:
        s = self.sessions
        ex.request_ended = True
        if ex.method == "DELETE" and ex.session_id and ex.key is not None:
            ts, origin = s.ts, s.origin()
            s.emit(
                ex.key,
                s.frame,
                ts,
                lambda seq, k: TransportEvent(
                    seq, ts, origin, k, TransportKind.CLOSED_BY_CLIENT, None, "DELETE session"
                ),
            )
        if not event.body:
            if ex.waits_for is WaitsFor.NOTHING:
                s.resolve(ex, None)
            return
        if event.truncated:
            self._request_unread(ex)
            s.anomaly(
                ex.key,
                AnomalyName.HTTP_BODY_TOO_LARGE,
                f"{ex.id}: request body of {event.body_size} bytes skipped (limit {MAX_BODY_BYTES}); "
                "replies on this exchange are not judged either",
            )
            return
        body = self.bodies.decoded_request(ex, event.body) if ex.request_coding else event.body
        if body is None:  # an encoded body not read (named): as one too large to read
            self._request_unread(ex)
            return
        decoded = decode_text(body)
        if decoded is not None and len(decoded.messages) == 1 and not decoded.batch:
            ex.request_id, ex.request_method = decoded.messages[0].id, decoded.messages[0].method
        if ex.key is None:
            if decoded is not None and any(m.method == "initialize" for m in decoded.messages):
                ex.waits_for = WaitsFor.RESPONSE
            elif ex.waits_for is WaitsFor.NOTHING:
                s.resolve(ex, None)
        sent: list[tuple[Build, Message]] = []
        self.bodies.json(ex, body, Direction.C2S, "request body", sent)
        s.request_body(ex, sent)

    def _request_unread(self, ex: Exchange) -> None:
        """A request body that is not read (too large, or encoded unreadably): its replies are not judged."""
        self.bodies.messages += 1  # an MCP body all the same: the capture does hold MCP traffic
        ex.request_unread = True
        if ex.waits_for is WaitsFor.NOTHING:
            self.sessions.resolve(ex, None)

    def _response_head(self, ex: Exchange, event: ResponseHead) -> None:
        ex.status = event.status
        media = (header(event.headers, "content-type") or "").split(";", 1)[0].strip().lower()
        json = media == "application/json" or media.endswith("+json")
        if event.status >= 200:  # final: what the request body held is delivered or not (`delivery`)
            ex.location = header(event.headers, "location") if event.status < 400 else None
            ex.reads_error_body = event.status >= 400 and json
            self.sessions.answered(ex)  # before the session is resolved: what was not delivered opens none
        if ex.waits_for is WaitsFor.RESPONSE:
            sid = header(event.headers, "mcp-session-id")
            self.sessions.resolve(ex, self.sessions.by_session_id(sid, ex.server) if sid else None)
        elif ex.waits_for is WaitsFor.FIRST_EVENT and media != "text/event-stream":
            self.sessions.resolve(ex, None)
        if event.status >= 400 and ex.method == "POST":
            self.sessions.anomaly(
                ex.key,
                AnomalyName.HTTP_ERROR_STATUS,
                f"{ex.id}: HTTP {event.status} {event.reason} to POST {ex.target}",
                request_id=ex.request_id,
                method=ex.request_method,
            )
        if media == "text/event-stream" and 200 <= event.status < 300:
            ex.sse = SseParser()
            self.sessions.transport(ex, TransportKind.STREAM_OPENED, f"{ex.method} {ex.target}")
        elif json:
            ex.body = bytearray()
            length = (header(event.headers, "content-length") or "").strip()
            ex.content_length = int(length) if length.isdigit() and len(length) < 20 else None
        coding = header(event.headers, "content-encoding")
        if coding is not None:
            self.bodies.encoded(ex, coding)

    def _response_end(self, conn: Conn, ex: Exchange, event: ResponseEnd) -> None:
        conn.exchanges.pop(ex.number, None)
        if not ex.request_ended and len(conn.answered_early) < MAX_ANSWERED_EARLY:
            conn.answered_early[ex.number] = ex
        self.sessions.settle(ex)
        self.sessions.resolve(ex, None)
        if ex.sse is not None:
            self.bodies.partial(ex)
            how = "end of the SSE body" if event.complete else f"connection closed mid-body ({event.detail})"
            self.sessions.transport(ex, TransportKind.CLOSED_BY_SERVER, how)
        elif not event.complete:
            self.sessions.transport(ex, TransportKind.CLOSED_BY_SERVER, f"response cut: {event.detail}")
            self.bodies.cut_body(ex, "the server closed the connection")
        else:
            self.bodies.response_body_end(ex)
            if ex.request_id is not None and ex.status != 202 and not ex.undelivered:  # 202: reply elsewhere
                # keep-alive: a request's stream ends with its own response, not at the connection's close
                self.sessions.transport(ex, TransportKind.CLOSED_BY_SERVER, "end of the response body")
