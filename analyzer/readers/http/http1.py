"""HTTP/1.1 reassembly of one TCP connection with h11, from the two byte streams of a capture.

The caller (`capture_http`) feeds the client→server bytes and the server→client bytes in TCP order
(`tcp` puts segments back in sequence), and gets back what each feed completed: request heads,
finished request bodies, response heads, response body pieces and response ends. No I/O, no tshark.

Plain heads and bodies (`http1_head`, `http1_body`: one Host, one Content-Length or chunked, no
1xx, no HEAD, ...) are read without h11; any other message goes to h11 from its first byte, which
gives the same events (`plain=False` is h11 alone, the tests' reference). h11 is a protocol
*participant*, not a passive parser, so each message it reads gets a fresh `h11.Connection`:

* requests: a server-role connection parses one request; after its `EndOfMessage` the bytes h11 has
  not consumed (`trailing_data`) start the next server-role connection (keep-alive, pipelining);
* responses: a client-role connection is told (with `send`) which request it is answering, so h11
  knows the framing (a response to HEAD has no body, `Connection: close` reads to EOF, ...), then
  parses that one response. Responses answer requests in order (HTTP/1.1 pipelining), so the
  response parser always works on the oldest request without a complete response.

Responses are read in one loop (`_read_responses`), a step at a time, never a call per response: a
hostile server's buffer of thousands of pipelined responses costs no deeper a stack than one.

Server bytes that arrive before any request (a capture that starts mid-connection) are held up to
`MAX_UNMATCHED_BYTES` and parsed once a request shows up. After a parse error a direction is not
parsed any further (HTTP/1.1 has no way to find the next message boundary); the caller reports it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

import h11

from .http1_body import BodyOutcome, PlainBody, chunked_parser, plain_framing
from .http1_head import Next, read_request, read_response

MAX_BODY_BYTES = 16 << 20
MAX_UNMATCHED_BYTES = 64 << 10

Headers = tuple[tuple[str, str], ...]


def header(headers: Headers, name: str) -> str | None:
    """The first value of a header (names are lower case), or None."""
    name = name.lower()
    for key, value in headers:
        if key == name:
            return value
    return None


@dataclass(frozen=True, slots=True)
class RequestHead:
    exchange: int
    method: str
    target: str
    headers: Headers
    http_version: str


@dataclass(frozen=True, slots=True)
class RequestEnd:
    exchange: int
    body: bytes
    """The whole request body, or its first `MAX_BODY_BYTES` when `truncated`."""
    truncated: bool = False
    body_size: int = 0


@dataclass(frozen=True, slots=True)
class ResponseHead:
    exchange: int
    status: int
    reason: str
    headers: Headers


@dataclass(frozen=True, slots=True)
class ResponseData:
    exchange: int
    data: bytes
    """De-chunked body bytes."""


@dataclass(frozen=True, slots=True)
class ResponseEnd:
    exchange: int
    complete: bool = True
    """False when the server closed the connection in the middle of the body (chunked without the
    final chunk, or fewer bytes than Content-Length)."""
    detail: str = ""


@dataclass(frozen=True, slots=True)
class ParseError:
    from_client: bool
    """True for a bad request (client bytes), False for a bad response (server bytes)."""
    detail: str
    exchange: int | None = None


HttpEvent = RequestHead | RequestEnd | ResponseHead | ResponseData | ResponseEnd | ParseError


@dataclass(slots=True)
class _AwaitingResponse:
    exchange: int
    head: RequestHead
    plain: bool
    """The head was read without h11 (`http1_head`): its response head can be too."""
    event: h11.Request | None = None
    """h11's request, made from `head` only when a response needs h11 (`request`)."""

    def request(self) -> h11.Request:
        if self.event is None:
            head = self.head
            self.event = h11.Request(
                method=head.method, target=head.target, headers=list(head.headers), http_version=head.http_version
            )
        return self.event


@dataclass(slots=True)
class Http1Connection:
    """The HTTP/1.1 state of one TCP connection. Exchanges are numbered from 0 in request order."""

    exchanges: int = 0
    """How many requests have started so far."""
    client_broken: bool = False
    server_broken: bool = False
    upgraded: bool = False
    """A 101 Switching Protocols response (or CONNECT) ended HTTP/1.1 on this connection."""
    switched: tuple[Headers, bytes] | None = None
    """After a 101: the upgraded request's headers, and the server's bytes after the 101 (the new protocol's)."""
    client_closed: bool = False
    server_closed: bool = False
    """That side's end of stream (FIN) was fed: h11 must get no byte after it."""
    plain: bool = True
    """Read plain heads and bodies without h11 (`http1_head`, `http1_body`); False: h11 alone, the
    reference the tests compare with."""
    _req: h11.Connection | None = None
    """h11 reading the current request; None between plain requests and in a plain request's body."""
    _req_buf: bytearray = field(default_factory=bytearray)
    """Client bytes not read yet while `_req` is None."""
    _req_plain: PlainBody | None = None
    _req_exchange: int | None = None
    _req_body: bytearray = field(default_factory=bytearray)
    _req_size: int = 0
    _waiting: deque[_AwaitingResponse] = field(default_factory=deque)
    """Requests whose response has not ended, oldest first."""
    _resp: h11.Connection | None = None
    _body: PlainBody | None = None
    """The response body being read without h11 (`http1_body`); `_resp` is None meanwhile."""
    _unmatched: bytearray = field(default_factory=bytearray)
    """Server bytes h11 does not hold: with no request to answer, before a plain response head is
    complete, or the start of a plain body until `_body_step` takes it."""

    # -- public API --------------------------------------------------------------------------------

    @property
    def at_rest(self) -> bool:
        """Between messages: no request or response under way, no byte held, nothing broken or closed."""
        return not (
            self._waiting
            or self._resp is not None
            or self._body is not None
            or self._req_exchange is not None
            or self._unmatched
            or self.client_broken
            or self.server_broken
            or self.upgraded
            or self.client_closed
            or self.server_closed
            or self._req_buf
            or (self._req is not None and self._req.trailing_data[0])
        )

    def open_exchanges(self) -> list[int]:
        """Exchanges whose response has not ended, oldest first (the first one is being answered)."""
        return [p.exchange for p in self._waiting]

    def feed_client(self, data: bytes) -> list[HttpEvent]:
        if self.client_broken or self.upgraded or not data:
            return []
        if self.client_closed:  # h11 raises RuntimeError on data after EOF: never hand it any
            self.client_broken = True
            return [ParseError(True, f"{len(data)} client bytes after the client's FIN", self._req_exchange)]
        out: list[HttpEvent] = []
        if self._req is not None:
            self._req.receive_data(data)
        else:
            self._req_buf += data
        self._pump_requests(out)
        return out

    def feed_server(self, data: bytes) -> list[HttpEvent]:
        if self.server_broken or self.upgraded or not data:
            return []
        if self.server_closed:  # h11 raises RuntimeError on data after EOF: never hand it any
            self.server_broken = True
            return [ParseError(False, f"{len(data)} server bytes after the server's FIN")]
        out: list[HttpEvent] = []
        if self._body is not None:  # the next bytes of a plain body (most segments): read on once it ends
            if not self._body_step(data, out):
                return out
        elif self._resp is not None:
            self._resp.receive_data(data)
        else:
            self._unmatched += data
            if not self._waiting and len(self._unmatched) > MAX_UNMATCHED_BYTES:
                self.server_broken = True
                self._unmatched.clear()
                return [ParseError(False, f"more than {MAX_UNMATCHED_BYTES} server bytes with no request")]
        self._read_responses(out)
        return out

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
            self._req = h11.Connection(h11.SERVER)
            self._req.receive_data(bytes(self._req_buf))
            self._req_buf.clear()
        self._req.receive_data(b"")
        self._pump_requests(out)
        return out

    def close_server(self) -> list[HttpEvent]:
        """The server sent FIN: ends a read-until-close body, or cuts the response being sent."""
        if self.server_broken or self.upgraded or self.server_closed:
            return []
        self.server_closed = True
        if not self._waiting:
            return []
        out: list[HttpEvent] = []
        if self._body is not None:  # the body was not finished: cut
            out.append(ResponseEnd(self._waiting[0].exchange, complete=False, detail=self._body.eof_error()))
            self._waiting.popleft()
            self._body = None
            return out
        self._read_responses(out, fin=True)
        return out

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
            fed = self._req_plain.feed(bytes(self._req_buf))
            self._req_buf.clear()
            for piece in fed.pieces:
                self._request_bytes(piece)
            if fed.outcome is BodyOutcome.MORE:
                return False
            self._req_plain = None
            self._req_buf += fed.rest
            self._request_end(out)
            return True
        if self.plain and not self._req_buf:
            return False
        head = read_request(self._req_buf) if self.plain else Next.H11
        if head is Next.WAIT:
            return False
        if head is Next.H11:
            self._req = h11.Connection(h11.SERVER)
            if self._req_buf:  # receive_data(b"") would mean EOF
                self._req.receive_data(bytes(self._req_buf))
                self._req_buf.clear()
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
        """One h11 event of the request: False when h11 needs more bytes or the request side broke."""
        assert self._req is not None
        try:
            event = self._req.next_event()
        except h11.RemoteProtocolError as exc:
            self.client_broken = True
            out.append(ParseError(True, f"bad request: {exc}", self._req_exchange))
            return False
        if isinstance(event, h11.Request) and not event.http_version.startswith(b"1."):
            self.client_broken = True
            version = _text(event.http_version)
            why = "HTTP/2 is read only on a connection that starts with its preface"
            out.append(ParseError(True, f"HTTP/{version} is not HTTP/1.x ({why})"))
            return False
        if isinstance(event, h11.Request):
            method, target, version = _text(event.method), _text(event.target), _text(event.http_version)
            self._request_head(
                RequestHead(self.exchanges, method, target, _headers(event.headers), version), event, out
            )
        elif isinstance(event, h11.Data):
            self._request_bytes(_body_data(event))
        elif isinstance(event, h11.EndOfMessage):
            self._request_end(out)
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
        self._waiting.append(_AwaitingResponse(head.exchange, head, plain=event is None, event=event))
        if head.method.upper() == "CONNECT":
            self.upgraded = True
        if self._resp is None and self._body is None and (len(self._waiting) == 1 or not self._waiting[0].plain):
            self._read_responses(out)  # (with an older plain request waiting, its response head is under way)

    def _request_end(self, out: list[HttpEvent]) -> None:
        """A request ended: the bytes h11 has not consumed start the next request (keep-alive)."""
        exchange = self._req_exchange if self._req_exchange is not None else self.exchanges - 1
        out.append(RequestEnd(exchange, bytes(self._req_body), self._req_size > MAX_BODY_BYTES, self._req_size))
        self._req_body.clear()
        self._req_exchange = None
        if self._req is None:
            return
        rest, closed = self._req.trailing_data
        if not closed:  # back to plain reading
            self._req = None
            self._req_buf += rest
            return
        self._req = h11.Connection(h11.SERVER)
        if rest:  # receive_data(b"") would mean EOF
            self._req.receive_data(rest)
        self._req.receive_data(b"")

    def _read_responses(self, out: list[HttpEvent], fin: bool = False) -> None:
        """Read the server's bytes into responses, one step at a time while a step moves on: start the
        oldest waiting response, read its head (plain or by h11), its body, end it, start the next. One
        loop, no call per response: a buffer of pipelined responses goes no deeper than one response.

        `fin` (the server has closed): an h11 reader that can go no further is given the FIN, after the
        bytes it holds, and read on; each response it ends leaves the FIN to the next reader."""
        given: h11.Connection | None = None  # the h11 reader given the FIN
        while not self.server_broken:
            if self._body is not None:
                moved = self._body_step(self._take_held(), out)
            elif self._resp is not None:
                moved = self._h11_step(out, closing=self._resp is given)
            elif self._waiting:
                pending = self._waiting[0]
                moved = self._plain_head(out) if pending.plain and not self.server_closed else self._h11_start(out)
            else:
                moved = False
            if not moved:
                if not fin or self._resp is None or self._resp is given:
                    return
                given = self._resp
                given.receive_data(b"")

    def _plain_head(self, out: list[HttpEvent]) -> bool:
        """Read the held server bytes as a plain response head, or give them to h11."""
        pending = self._waiting[0]
        if not self._unmatched:
            return False
        head = read_response(self._unmatched) if pending.head.method != "HEAD" else Next.H11
        if head is Next.WAIT:
            return False
        if head is Next.H11:
            return self._h11_start(out)
        status, reason = head.fields
        out.append(ResponseHead(pending.exchange, int(status), reason, head.headers))
        del self._unmatched[: head.size]
        self._body = PlainBody(head.length)
        return True

    def _h11_start(self, out: list[HttpEvent]) -> bool:
        """Make h11's response parser for the oldest waiting request and give it any held bytes."""
        pending = self._waiting[0]
        conn = h11.Connection(h11.CLIENT)
        try:
            conn.send(pending.request())
        except h11.LocalProtocolError as exc:  # a request h11 parsed but will not send (rare)
            self.server_broken = True
            out.append(ParseError(False, f"cannot follow the response to this request: {exc}", pending.exchange))
            return False
        self._resp = conn
        if self._unmatched:  # never receive_data(b""): that means EOF
            conn.receive_data(self._take_held())
        return True

    def _h11_step(self, out: list[HttpEvent], closing: bool) -> bool:
        """One h11 event of the response (`closing`: h11 has the server's FIN); False when h11 needs more
        bytes, the response side broke, or the connection switched protocols."""
        assert self._resp is not None
        pending = self._waiting[0]
        try:
            event = self._resp.next_event()
        except h11.RemoteProtocolError as exc:
            if closing:
                out.append(ResponseEnd(pending.exchange, complete=False, detail=str(exc)))
                self._waiting.popleft()
                self._resp = None
                return False
            self.server_broken = True
            out.append(ParseError(False, f"bad response: {exc}", pending.exchange))
            return False
        if isinstance(event, h11.InformationalResponse):
            if event.status_code != 101:
                return True
            self.upgraded = True
            self.switched = (pending.head.headers, bytes(self._resp.trailing_data[0]))
            out.append(ResponseHead(pending.exchange, 101, _text(event.reason), _headers(event.headers)))
            return False
        if isinstance(event, h11.Response):
            reason = event.reason.decode("latin-1")
            out.append(ResponseHead(pending.exchange, event.status_code, reason, _headers(event.headers)))
            length = plain_framing(pending.request().method, event) if self.plain and not closing else None
            if length is not None:
                self._body = PlainBody(length)
                self._unmatched += self._resp.trailing_data[0]
                self._resp = None
        elif isinstance(event, h11.Data):
            out.append(ResponseData(pending.exchange, bytes(_body_data(event))))
        elif isinstance(event, h11.EndOfMessage):
            self._end_response(out, self._resp.trailing_data[0])
        else:  # NEED_DATA, PAUSED, ConnectionClosed
            return False
        return True

    def _body_step(self, data: bytes, out: list[HttpEvent]) -> bool:
        """Bytes of a plain response body (`_body`): its pieces, and its end, error or return to h11."""
        assert self._body is not None
        pending = self._waiting[0]
        fed = self._body.feed(data)
        for piece in fed.pieces:
            out.append(ResponseData(pending.exchange, piece))
        if fed.outcome is BodyOutcome.MORE:
            return False
        if fed.outcome is BodyOutcome.ERROR:
            self.server_broken = True
            out.append(ParseError(False, f"bad response: {fed.error}", pending.exchange))
            return False
        self._body = None
        if fed.outcome is BodyOutcome.H11:
            self._resp = chunked_parser(pending.request())
            self._resp.receive_data(fed.rest)
        else:
            self._end_response(out, fed.rest)
        return True

    def _take_held(self) -> bytes:
        held = bytes(self._unmatched)
        self._unmatched.clear()
        return held

    def _end_response(self, out: list[HttpEvent], rest: bytes) -> None:
        """The oldest waiting response ended: the bytes after it are held for the next one."""
        out.append(ResponseEnd(self._waiting.popleft().exchange))
        self._resp = None
        self._unmatched += rest


def _body_data(event: h11.Data) -> bytes | bytearray:
    """h11 types its body bytes `bytes` but hands a bytearray: read untyped, as compiled code checks types."""
    data: bytes | bytearray = getattr(event, "data")  # noqa: B009
    return data


def _text(raw: bytes) -> str:
    return raw.decode("latin-1")


def _headers(raw: Iterable[tuple[bytes, bytes]]) -> Headers:
    return tuple((name.decode("latin-1").lower(), value.decode("latin-1")) for name, value in raw)
