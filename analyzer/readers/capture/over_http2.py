"""MCP over HTTP/2 on one TCP connection of a capture: what the HTTP/2 events (`http2`) and the TCP
events of the connection mean as MCP transport events, per exchange (`tcp{stream}/h2s{stream id}`).

The same transport kinds as on HTTP/1.1 (`capture_http`), so every rule reads both alike:

* RESET_BY_CLIENT: the client's RST_STREAM on a stream whose response is open (the 2026-07-28 cancel
  by closing the request's stream), or a TCP RST from the client;
* RESET_BY_SERVER: the server's RST_STREAM while the response is open, or its TCP RST;
* CLOSED_BY_CLIENT: the client's GOAWAY with an error code, or its FIN, while the response is open
  (a GOAWAY with NO_ERROR lets open streams finish: it is no close by itself);
* CLOSED_BY_SERVER: an SSE response ends (END_STREAM), the server's FIN cuts a response, or its
  GOAWAY says a stream above its last stream id was never processed (then, unanswered, its request
  body's messages were not delivered: `delivery`, Delivery.UNPROCESSED);
* RECEIVE_WINDOW_ZERO: the server used up the flow-control window the client granted for a stream
  (or the connection) while the response is open: the client stopped reading (once per episode);
* SERVER_BYTES: a DATA frame from the server on a stream the client reset or closed (once per frame).

Unlike HTTP/1.1, a client reset does not end the exchange: the server's frames after it are read
(they are the "written after the close" evidence, and may carry a late reply). After the client's TCP
RST, as on HTTP/1.1, the server's frames captured are read as crossing it until the capture ends.
"""

from __future__ import annotations

from ...model import AnomalyName, TransportKind
from ..http.http1 import Headers, HttpEvent, ParseError, ResponseData, header
from ..http.http2 import Http2Connection
from ..http.http2_events import Flood, GoAway, H2Event, Joined, StreamError, StreamReset, WindowExhausted
from .conn import Conn, HttpSide
from .sessions import Exchange
from .tcp import seq_before


class Http2Capture:
    """The HTTP/2 side of the connections of one capture (the HTTP/1.1 machinery does the rest)."""

    def __init__(self, http: HttpSide) -> None:
        self.http = http
        self.sessions = http.sessions

    def bytes(self, conn: Conn, from_client: bool, data: bytes) -> None:
        h2 = conn.h2
        if h2 is None:
            return
        at = self.sessions.ts
        self._events(conn, h2.feed_client(data, at) if from_client else h2.feed_server(data, at))

    def upgrade(self, conn: Conn, ex: Exchange, response: Headers) -> None:
        """A 101 to an HTTP/1.1 request with `Upgrade: h2c` (RFC 7540 3.2; RFC 9113 deprecates it, servers
        such as hypercorn still accept it): the connection goes on as HTTP/2 and the upgraded request,
        already read, is stream 1 (its exchange is renamed `tcp{stream}/h2s1`). Any other protocol is
        not read, as before."""
        switched = conn.http.switched
        if switched is None or (header(response, "upgrade") or "").strip().lower() != "h2c":
            return
        request, rest = switched
        if "h2c" not in (header(request, "upgrade") or "").lower():
            return
        conn.h2, events = Http2Connection.upgraded(header(request, "http2-settings") or "")
        del conn.exchanges[ex.number]
        ex.number, ex.http2, ex.id = 1, True, f"tcp{conn.stream}/h2s1"
        conn.exchanges[1] = ex
        self._events(conn, events)
        self.bytes(conn, False, rest)

    def fin(self, conn: Conn, from_client: bool, at: tuple[int, float | None]) -> None:
        """A FIN: the client leaving closes every open stream; the server's cuts them."""
        for ex in self._open(conn):
            if from_client:
                if not ex.client_closed:
                    self.sessions.transport(ex, TransportKind.CLOSED_BY_CLIENT, "client FIN " + ex.stage(), at=at)
                ex.client_closed = True
            else:
                detail = "server FIN " + ex.stage()
                self._cut(conn, ex, TransportKind.CLOSED_BY_SERVER, detail, "the server closed the connection", at)

    def rst(self, conn: Conn, from_client: bool) -> None:
        """A TCP RST ends the connection: every open stream is reset by that side. The server's frames
        captured after the client's RST left before it reached the server (a TCP that has taken a RST
        sends nothing more): they are read, as crossing it, and `end_reset` cuts what is still open."""
        conn.reset = True
        if not from_client:
            self.end_reset(conn, TransportKind.RESET_BY_SERVER)
            return
        conn.reset_by_client = True
        for ex in self._open(conn):
            conn.last = ex
            if not ex.client_closed:
                self.sessions.transport(ex, TransportKind.RESET_BY_CLIENT, "TCP RST " + ex.stage())
            ex.client_closed = True

    def end_reset(self, conn: Conn, kind: TransportKind = TransportKind.RESET_BY_CLIENT) -> None:
        """The reset connection's streams still open end, their responses cut."""
        for ex in self._open(conn):
            conn.last = ex
            self._cut(conn, ex, kind, "TCP RST " + ex.stage(), "the connection was reset", None)

    # -- HTTP/2 events -----------------------------------------------------------------------------

    def _events(self, conn: Conn, events: list[H2Event]) -> None:
        common: list[HttpEvent] = []
        for event in events:
            if isinstance(event, ParseError | Flood | StreamError):
                self._flush(conn, common)
                self._refused(conn, event)
            elif isinstance(event, Joined):
                self._flush(conn, common)
                self._joined(conn, event)
            elif isinstance(event, StreamReset):
                self._flush(conn, common)
                self._reset(conn, event)
            elif isinstance(event, GoAway):
                self._flush(conn, common)
                self._goaway(conn, event)
            elif isinstance(event, WindowExhausted):
                self._flush(conn, common)
                self._stalled(conn, event)
            elif isinstance(event, ResponseData) and self._crossed_reset(conn, event):
                self._flush(conn, common)
                self.sessions.crossed, crossed = True, self.sessions.crossed
                self.http.http_events(conn, [event])
                self.sessions.crossed = crossed
            else:
                if isinstance(event, ResponseData):
                    ex = conn.exchanges.get(event.exchange)
                    if ex is not None and ex.client_closed and not self.sessions.crossed:
                        self.http.server_bytes(ex, len(event.data), "on the stream after the client closed it")
                common.append(event)
        self._flush(conn, common)

    def _crossed_reset(self, conn: Conn, event: ResponseData) -> bool:
        """DATA the server sent on a stream before the client's RST_STREAM of it reached the server: the
        segment's acknowledgement does not cover the client's bytes up to the reset (RFC 9113 6.4: the
        sender of RST_STREAM must be prepared for frames the peer sent before receiving it)."""
        ex = conn.exchanges.get(event.exchange)
        acked = self.sessions.acked
        if ex is None or ex.client_closed_at is None or acked is None:
            return False
        return seq_before(acked, ex.client_closed_at)

    def _flush(self, conn: Conn, common: list[HttpEvent]) -> None:
        """Heads, bodies and ends go through the HTTP/1.1 path, in order."""
        if common:
            self.http.http_events(conn, common)
            common.clear()

    def _refused(self, conn: Conn, event: ParseError | Flood | StreamError) -> None:
        """A frame that breaks HTTP/2 (that direction stops), a flood (stops too), or a stream error
        (only that stream's frame is refused, as the receiver would reset it)."""
        number = event.exchange if not isinstance(event, Flood) else None
        ex = conn.exchanges.get(number) if number is not None else (conn.current() or conn.last)
        side = "client→server" if event.from_client else "server→client"
        at = f"tcp stream {conn.stream}: {side} HTTP/2"
        frame = self.sessions.frame
        if isinstance(event, ParseError):
            name, detail = AnomalyName.HTTP2_PROTOCOL_ERROR, f"{at} is not valid at frame {frame}: {event.detail}"
        elif isinstance(event, Flood):
            name, detail = AnomalyName.HTTP2_FLOOD, f"{at} flood at frame {frame}: {event.detail}"
        else:
            name, detail = AnomalyName.HTTP2_STREAM_ERROR, f"{at} stream error at frame {frame}: {event.detail}"
        if isinstance(event, StreamError):
            self.sessions.anomaly(ex.key if ex else None, name, detail)
        else:
            detail += "; that direction is not read further"
            self.http.stopped(conn, ex, name, detail, from_client=event.from_client)

    def _joined(self, conn: Conn, event: Joined) -> None:
        """What a capture that began mid-connection cannot show (`http2_joined`)."""
        ex = conn.exchanges.get(event.exchange) if event.exchange is not None else None
        frame = self.sessions.frame
        if event.exchange is None and event.detail.startswith("the capture starts"):
            detail = (
                f"tcp stream {conn.stream}: {event.detail} (no TCP handshake; HTTP/2 frames from frame {frame}): "
                "header blocks that use HPACK entries from before it are unknown, streams begun before it count "
                "only by their resets and closes (their requests are not in it), flow-control stalls are not judged"
            )
        else:
            side = "client→server" if event.from_client else "server→client"
            detail = f"tcp stream {conn.stream}: {side} HTTP/2 at frame {frame}: {event.detail}"
        self.sessions.anomaly(ex.key if ex else None, AnomalyName.HTTP2_MID_CONNECTION, detail)

    def _reset(self, conn: Conn, event: StreamReset) -> None:
        ex = conn.exchanges.get(event.exchange)
        if ex is None:
            return
        what = f"HTTP/2 RST_STREAM ({event.code}) on stream {event.exchange} " + ex.stage()
        if event.from_client:
            if not ex.client_closed:
                self.sessions.transport(ex, TransportKind.RESET_BY_CLIENT, what)
                # the client's bytes delivered so far end with the segment that carried the reset
                ex.client_closed_at = conn.tcp.up.next
            ex.client_closed = True
        else:
            self._cut(conn, ex, TransportKind.RESET_BY_SERVER, what, "the server reset the stream", None)

    def _goaway(self, conn: Conn, event: GoAway) -> None:
        for ex in self._open(conn):
            if event.from_client and event.code != "NO_ERROR" and not ex.client_closed:
                detail = f"HTTP/2 GOAWAY ({event.code}) from the client " + ex.stage()
                self.sessions.transport(ex, TransportKind.CLOSED_BY_CLIENT, detail)
                ex.client_closed = True
            elif not event.from_client and ex.number > event.last_stream:
                detail = f"HTTP/2 GOAWAY ({event.code}, last stream {event.last_stream}): "
                detail += f"the server never processed stream {ex.number}"
                if not ex.status:  # unanswered: its messages never reached the server (RFC 9113 6.8)
                    self.sessions.settle(ex, unprocessed=True)
                how = "the server's GOAWAY dropped the stream"
                self._cut(conn, ex, TransportKind.CLOSED_BY_SERVER, detail, how, None)

    def _stalled(self, conn: Conn, event: WindowExhausted) -> None:
        ex = conn.exchanges.get(event.exchange)
        if ex is None or ex.client_closed:
            return
        self.sessions.transport(
            ex,
            TransportKind.RECEIVE_WINDOW_ZERO,
            f"the client granted no more HTTP/2 window (stream {event.exchange}: {event.stream_window}, "
            f"connection: {event.connection_window} bytes) while the response is open (it stopped reading)",
        )

    def _cut(
        self, conn: Conn, ex: Exchange, kind: TransportKind, detail: str, how: str, at: tuple[int, float | None] | None
    ) -> None:
        """The stream ends without its response: said (unless the client had closed it already), and
        what its body held so far is judged."""
        conn.exchanges.pop(ex.number, None)
        self.sessions.settle(ex)
        self.sessions.resolve(ex, None)
        if not ex.client_closed:
            self.sessions.transport(ex, kind, detail, at=at)
        self.http.bodies.partial(ex)
        self.http.bodies.cut_body(ex, how)
        ex.client_closed = True

    @staticmethod
    def _open(conn: Conn) -> list[Exchange]:
        return [ex for ex in (conn.exchanges.get(n) for n in conn.open_numbers()) if ex is not None]
