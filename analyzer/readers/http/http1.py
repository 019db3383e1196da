"""HTTP/1.1 reassembly of one TCP connection with h11, from the two byte streams of a capture.

The caller (`capture_http`) feeds the client→server bytes and the server→client bytes in TCP order
(`tcp` puts segments back in sequence), and gets back what each feed completed (`http1_events`): request
heads, finished request bodies, response heads, response body pieces and response ends. No I/O, no tshark.
This module reads the client's half; the server's is `http1_responses`.

Plain heads and bodies (`http1_head`, `http1_body`: one Host, one Content-Length or chunked, no
1xx, no HEAD, ...) are read without h11; any other message goes to h11 from its first byte, which
gives the same events (`plain=False` is h11 alone, the tests' reference). h11 is a protocol
*participant*, not a passive parser, so each message it reads gets a fresh `h11.Connection`: a
server-role connection parses one request; after its `EndOfMessage` the bytes h11 has not consumed
(`trailing_data`) start the next request (keep-alive, pipelining). The client's bytes stay in one buffer
(`_req_buf`) and h11 is handed only what it reads next (`http1_feed`), so a buffer of many small pipelined
requests is copied about once, not once per request. After a parse error a direction is not parsed any
further (HTTP/1.1 has no way to find the next message boundary); the caller reports it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import h11

from .http1_body import BodyOutcome, PlainBody
from .http1_events import (
    Headers,
    HttpEvent,
    ParseError,
    RequestEnd,
    RequestHead,
    ResponseData,
    ResponseEnd,
    ResponseHead,
    body_data,
    fields,
    header,
    text,
)
from .http1_feed import H11Reader, h11_reader
from .http1_head import Next, read_request
from .http1_responses import AwaitingResponse, Responses

__all__ = [
    "MAX_BODY_BYTES",
    "Headers",
    "Http1Connection",
    "HttpEvent",
    "ParseError",
    "RequestEnd",
    "RequestHead",
    "ResponseData",
    "ResponseEnd",
    "ResponseHead",
    "header",
]

MAX_BODY_BYTES = 16 << 20


@dataclass(slots=True, init=False)
class Http1Connection:
    """The HTTP/1.1 state of one TCP connection. Exchanges are numbered from 0 in request order. Its
    `__init__` is written out: mypyc compiles a written one, where the dataclass's own runs interpreted."""

    exchanges: int
    """How many requests have started so far."""
    client_broken: bool
    client_closed: bool
    """The client's end of stream (FIN) was fed: h11 must get no byte after it."""
    plain: Final[bool]
    """Read plain heads and bodies without h11 (`http1_head`, `http1_body`); False: h11 alone, the
    reference the tests compare with."""
    _connect: bool
    """A CONNECT request was read: HTTP/1.1 ends on this connection."""
    _responses: Final[Responses]
    """The server's half."""
    _req: H11Reader | None
    """h11 reading the current request; None between plain requests and in a plain request's body."""
    _req_buf: bytearray
    """Client bytes not read yet: a plain head's and body's, and what h11 (`_req`) reads (handed it as it
    reads them)."""
    _req_eof: bool
    """`_req` was given the client's FIN (after every held byte)."""
    _req_plain: PlainBody | None
    _req_exchange: int | None
    _req_body: bytearray
    _req_size: int

    def __init__(self, *, exchanges: int = 0, plain: bool = True) -> None:
        self.exchanges, self.plain = exchanges, plain
        self.client_broken = self.client_closed = self._connect = False
        self._responses = Responses(plain=plain)
        self._req, self._req_buf, self._req_eof = None, bytearray(), False
        self._req_plain, self._req_exchange, self._req_body, self._req_size = None, None, bytearray(), 0

    # -- public API --------------------------------------------------------------------------------

    @property
    def server_broken(self) -> bool:
        return self._responses.broken

    @server_broken.setter
    def server_broken(self, broken: bool) -> None:
        self._responses.broken = broken

    @property
    def server_closed(self) -> bool:
        """The server's end of stream (FIN) was fed: h11 must get no byte after it."""
        return self._responses.closed

    @property
    def switched(self) -> tuple[Headers, bytes] | None:
        """After a 101: the upgraded request's headers, and the server's bytes after the 101 (the new protocol's)."""
        return self._responses.switched

    @property
    def upgraded(self) -> bool:
        """A 101 Switching Protocols response (or CONNECT) ended HTTP/1.1 on this connection."""
        return self._connect or self._responses.switched is not None

    @property
    def at_rest(self) -> bool:
        """Between messages: no request or response under way, no byte held, nothing broken or closed."""
        return self._responses.at_rest and not (
            self._req_exchange is not None or self.client_broken or self.upgraded or self.client_closed or self._req_buf
        )

    def open_exchanges(self) -> list[int]:
        """Exchanges whose response has not ended, oldest first (the first one is being answered)."""
        return self._responses.open_exchanges()

    def feed_client(self, data: bytes) -> list[HttpEvent]:
        if self.client_broken or self.upgraded or not data:
            return []
        if self.client_closed:  # h11 raises RuntimeError on data after EOF: never hand it any
            self.client_broken = True
            return [ParseError(True, f"{len(data)} client bytes after the client's FIN", self._req_exchange)]
        out: list[HttpEvent] = []
        self._req_buf += data
        self._pump_requests(out)
        return out

    def feed_server(self, data: bytes) -> list[HttpEvent]:
        return [] if self._connect else self._responses.feed(data)

    def close_client(self) -> list[HttpEvent]:
        """The client sent FIN: a request cut in the middle is a parse error."""
        if self.client_broken or self.upgraded or self.client_closed:
            return []
        self.client_closed = True
        out: list[HttpEvent] = []
        if self._req_plain is not None:  # the body was not finished: cut
            self.client_broken = True
            out.append(ParseError(True, f"bad request: {self._req_plain.eof_error()}", self._req_exchange))
            return out
        if self._req is None:  # h11 reads what is held, and the end (nothing, when nothing is held)
            if not self._req_buf:
                return out
            self._req = h11_reader(h11.SERVER, self._req_buf)
        self._pump_requests(out)
        return out

    def close_server(self) -> list[HttpEvent]:
        """The server sent FIN: ends a read-until-close body, or cuts the response being sent."""
        return [] if self._connect else self._responses.close()

    # -- internals ---------------------------------------------------------------------------------

    def _pump_requests(self, out: list[HttpEvent]) -> None:
        while not self.client_broken and (
            self._h11_request(out) if self._req is not None else self._plain_request(out)
        ):
            pass

    def _plain_request(self, out: list[HttpEvent]) -> bool:
        """One step on `_req_buf` without h11: a plain head, or its body's bytes; or hand the request to
        h11. False when more bytes are needed."""
        if self._req_plain is not None:
            if not self._req_buf:
                return False
            fed = self._req_plain.feed(self._req_buf)
            del self._req_buf[: fed.end]
            for piece in fed.pieces:
                self._request_bytes(piece)
            if fed.outcome is BodyOutcome.MORE:
                return False
            self._req_plain = None
            self._request_end(out)
            return True
        if self.plain and not self._req_buf:
            return False
        head = read_request(self._req_buf) if self.plain else Next.H11
        if head is Next.WAIT:
            return False
        if head is Next.H11:
            self._req = h11_reader(h11.SERVER, self._req_buf)
            return True
        del self._req_buf[: head.size]
        method, target = head.fields
        self._request_head(RequestHead(self.exchanges, method, target, head.headers, "1.1"), None, out)
        if head.length:
            self._req_plain = PlainBody(head.length)
        else:
            self._request_end(out)
        return True

    def _h11_request(self, out: list[HttpEvent]) -> bool:
        """One h11 event of the request: False when h11 needs more bytes or the request side broke. Once the
        client has closed, h11 is given the FIN when it has every held byte."""
        assert self._req is not None
        try:
            event = self._req.next_event()
        except h11.RemoteProtocolError as exc:
            self.client_broken = True
            out.append(ParseError(True, f"bad request: {exc}", self._req_exchange))
            return False
        if isinstance(event, h11.Request) and not event.http_version.startswith(b"1."):
            self.client_broken = True
            version = text(event.http_version)
            why = "HTTP/2 is read only on a connection that starts with its preface"
            out.append(ParseError(True, f"HTTP/{version} is not HTTP/1.x ({why})"))
            return False
        if isinstance(event, h11.Request):
            method, target, version = text(event.method), text(event.target), text(event.http_version)
            self._request_head(RequestHead(self.exchanges, method, target, fields(event.headers), version), event, out)
        elif isinstance(event, h11.Data):
            self._request_bytes(body_data(event))
        elif isinstance(event, h11.EndOfMessage):
            self._request_end(out)
        elif event is h11.NEED_DATA and self.client_closed and not self._req_eof:
            self._req.conn.receive_data(b"")
            self._req_eof = True
        else:  # NEED_DATA, PAUSED, ConnectionClosed
            return False
        return True

    def _request_bytes(self, data: bytes | bytearray) -> None:
        self._req_size += len(data)
        room = MAX_BODY_BYTES - len(self._req_body)
        if room > 0:
            self._req_body += data[:room]

    def _request_head(self, head: RequestHead, event: h11.Request | None, out: list[HttpEvent]) -> None:
        """A request head (`event` is h11's, None when read plain): the exchange starts."""
        self.exchanges += 1
        self._req_exchange = head.exchange
        self._req_body.clear()
        self._req_size = 0
        out.append(head)
        if head.method.upper() == "CONNECT":
            self._connect = True
        self._responses.expect(AwaitingResponse(head.exchange, head, plain=event is None, event=event), out)

    def _request_end(self, out: list[HttpEvent]) -> None:
        """A request ended: the bytes h11 has not consumed start the next request (keep-alive), read plain
        again, or by h11 once the client has closed."""
        exchange = self._req_exchange if self._req_exchange is not None else self.exchanges - 1
        out.append(RequestEnd(exchange, bytes(self._req_body), self._req_size > MAX_BODY_BYTES, self._req_size))
        self._req_body.clear()
        self._req_exchange = None
        if self._req is None:
            return
        self._req.let_go()
        self._req = h11_reader(h11.SERVER, self._req_buf) if self.client_closed else None
        self._req_eof = False
