"""The server→client half of an HTTP/1.1 connection (`http1`): response heads, bodies and ends.

h11 is a protocol *participant*, not a passive parser: each response it reads gets a fresh client-role
`h11.Connection`, told (with `send`) which request it is answering, so h11 knows the framing (a response
to HEAD has no body, `Connection: close` reads to EOF, ...), then parses that one response. Responses
answer requests in order (HTTP/1.1 pipelining), so the reader always works on the oldest request without
a complete response. Plain heads and bodies (`http1_head`, `http1_body`) are read without h11.

Responses are read in one loop (`Responses.read`), a step at a time, never a call per response: a
hostile server's buffer of thousands of pipelined responses costs no deeper a stack than one. Nor more
work per byte: the server's bytes stay in one buffer (`_held`), each reader takes its bytes from the
front, and h11 is handed only what it reads next (`http1_feed`: a head to its blank line, a body in growing windows),
so a segment of many small responses is copied about once, not once per response. h11 handed bytes so
gives exactly the events it gives handed each segment whole (tests/test_http1_body.py compares them).

Server bytes that arrive before any request (a capture that starts mid-connection) are held up to
`MAX_UNMATCHED_BYTES` and parsed once a request shows up. After a parse error the server's bytes are not
parsed any further (HTTP/1.1 has no way to find the next message boundary); the caller reports it.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Final

import h11

from .http1_body import BodyOutcome, PlainBody, chunked_parser, plain_framing
from .http1_events import (
    Headers,
    HttpEvent,
    ParseError,
    RequestHead,
    ResponseData,
    ResponseEnd,
    ResponseHead,
    body_data,
    fields,
    text,
)
from .http1_feed import H11Reader, h11_reader
from .http1_head import Next, read_response

MAX_UNMATCHED_BYTES = 64 << 10


@dataclass(slots=True, init=False)
class AwaitingResponse:
    """A request waiting for its response. Its `__init__` is written out, as `Responses`'s."""

    exchange: Final[int]
    head: Final[RequestHead]
    plain: Final[bool]
    """The head was read without h11 (`http1_head`): its response head can be too."""
    event: h11.Request | None
    """h11's request, made from `head` only when a response needs h11 (`request`)."""

    def __init__(self, exchange: int, head: RequestHead, *, plain: bool, event: h11.Request | None = None) -> None:
        self.exchange, self.head, self.plain, self.event = exchange, head, plain, event

    def request(self) -> h11.Request:
        if self.event is None:
            head = self.head
            self.event = h11.Request(
                method=head.method, target=head.target, headers=list(head.headers), http_version=head.http_version
            )
        return self.event


@dataclass(slots=True, init=False)
class Responses:
    """The server's side of one connection: the requests waiting for a response, and the reader of the
    response under way (h11's, or a plain body's). Its `__init__` is written out: mypyc compiles a written
    one, where the dataclass's own runs interpreted."""

    plain: Final[bool]
    """Read plain heads and bodies without h11; False: h11 alone (`Http1Connection.plain`)."""
    broken: bool
    closed: bool
    """The server's end of stream (FIN) was fed: h11 must get no byte after it."""
    switched: tuple[Headers, bytes] | None
    """After a 101: the upgraded request's headers, and the server's bytes after the 101 (the new protocol's)."""
    _waiting: Final[deque[AwaitingResponse]]
    """Requests whose response has not ended, oldest first."""
    _resp: H11Reader | None
    _body: PlainBody | None
    """The response body being read without h11 (`http1_body`); `_resp` is None meanwhile."""
    _held: bytearray
    """Server bytes not read yet: with no request to answer, before a plain response head is complete,
    the start of a plain body until `_body_step` takes it, and what h11 reads (`_resp` hands it them as it
    reads them, never all of them per response: a buffer of many small responses is copied once, not once
    per response)."""

    def __init__(self, *, plain: bool = True) -> None:
        self.plain, self.broken, self.closed, self.switched = plain, False, False, None
        self._waiting, self._resp, self._body, self._held = deque(), None, None, bytearray()

    @property
    def at_rest(self) -> bool:
        """No request waiting, no response under way, no byte held, not broken, switched or closed."""
        return not (
            self._waiting
            or self._resp is not None
            or self._body is not None
            or self._held
            or self.broken
            or self.switched is not None
            or self.closed
        )

    def open_exchanges(self) -> list[int]:
        """Exchanges whose response has not ended, oldest first (the first one is being answered)."""
        return [p.exchange for p in self._waiting]

    def expect(self, awaiting: AwaitingResponse, out: list[HttpEvent]) -> None:
        """A request head was read: its response is read once those of the requests before it ended."""
        self._waiting.append(awaiting)
        if self._resp is None and self._body is None and (len(self._waiting) == 1 or not self._waiting[0].plain):
            self.read(out)  # (with an older plain request waiting, its response head is under way)

    def feed(self, data: bytes) -> list[HttpEvent]:
        """The server's next bytes: what they complete."""
        if self.broken or self.switched is not None or not data:
            return []
        if self.closed:  # h11 raises RuntimeError on data after EOF: never hand it any
            self.broken = True
            return [ParseError(False, f"{len(data)} server bytes after the server's FIN")]
        out: list[HttpEvent] = []
        if self._body is not None and not self._held:  # the next bytes of a plain body (most segments)
            if not self._body_step(data, out):
                return out
        else:
            self._held += data
            if not self._waiting and len(self._held) > MAX_UNMATCHED_BYTES:
                self.broken = True
                self._held.clear()
                return [ParseError(False, f"more than {MAX_UNMATCHED_BYTES} server bytes with no request")]
        self.read(out)
        return out

    def close(self) -> list[HttpEvent]:
        """The server sent FIN: ends a read-until-close body, or cuts the response being sent."""
        if self.broken or self.switched is not None or self.closed:
            return []
        self.closed = True
        out: list[HttpEvent] = []
        self.read(out, fin=True)
        return out

    def read(self, out: list[HttpEvent], fin: bool = False) -> None:
        """Read the server's bytes into responses, one step at a time while a step moves on: start the
        oldest waiting response, read its head (plain or by h11), its body, end it, start the next. One
        loop, no call per response: a buffer of pipelined responses goes no deeper than one response.

        Once the server has closed (`closed`), a response whose body can go no further is ended the same
        way however its head was read: a plain body is cut (in h11's words), an h11 reader is given the
        FIN, after the bytes it holds, and read on. `fin` (the FIN itself): so is the reader of a head
        under way; each response a reader given the FIN ends leaves it to the next reader."""
        given: H11Reader | None = None  # the h11 reader given the FIN
        while not self.broken:
            if self._body is not None:
                moved = self._body_step(self._held, out)
            elif self._resp is not None:
                moved = self._h11_step(out, closing=self._resp is given)
            elif self._waiting:
                pending = self._waiting[0]
                moved = self._plain_head(out) if pending.plain and not self.closed else self._h11_start(out)
            else:
                moved = False
            if moved:
                continue
            if not self.closed:
                return
            if self._body is not None:  # the FIN cut the body
                pending = self._waiting.popleft()
                cut = self._body.eof_error(left=bool(self._held))
                out.append(ResponseEnd(pending.exchange, complete=False, detail=cut))
                self._body = None
                return
            if self._resp is None or self._resp is given or not (fin or self._resp.conn.their_state is h11.SEND_BODY):
                return
            given = self._resp
            while given.hand():  # h11 gets the FIN after every byte before it
                pass
            given.conn.receive_data(b"")

    def _plain_head(self, out: list[HttpEvent]) -> bool:
        """Read the held server bytes as a plain response head, or give them to h11."""
        pending = self._waiting[0]
        if not self._held:
            return False
        head = read_response(self._held) if pending.head.method != "HEAD" else Next.H11
        if head is Next.WAIT:
            return False
        if head is Next.H11:
            return self._h11_start(out)
        status, reason = head.fields
        out.append(ResponseHead(pending.exchange, int(status), reason, head.headers))
        del self._held[: head.size]
        self._body = PlainBody(head.length)
        return True

    def _h11_start(self, out: list[HttpEvent]) -> bool:
        """Make h11's response parser for the oldest waiting request (it is handed held bytes as it reads)."""
        pending = self._waiting[0]
        try:
            self._resp = self._answering(pending.request())
        except h11.LocalProtocolError as exc:  # a request h11 parsed but will not send (rare)
            self.broken = True
            out.append(ParseError(False, f"cannot follow the response to this request: {exc}", pending.exchange))
            return False
        return True

    def _h11_step(self, out: list[HttpEvent], closing: bool) -> bool:
        """One h11 event of the response (`closing`: h11 has the server's FIN); False when h11 needs more
        bytes, the response side broke, or the connection switched protocols."""
        assert self._resp is not None
        pending = self._waiting[0]
        try:
            event = self._resp.next_event()
        except h11.RemoteProtocolError as exc:
            if closing:  # h11 had every held byte
                out.append(ResponseEnd(pending.exchange, complete=False, detail=str(exc)))
                self._waiting.popleft()
                self._resp = None
                self._held.clear()
                return False
            self.broken = True
            out.append(ParseError(False, f"bad response: {exc}", pending.exchange))
            return False
        if isinstance(event, h11.InformationalResponse):
            if event.status_code != 101:
                return True
            self.switched = (
                pending.head.headers,
                bytes(self._resp.conn.trailing_data[0]) + self._held[self._resp.fed :],
            )
            out.append(ResponseHead(pending.exchange, 101, text(event.reason), fields(event.headers)))
            return False
        if isinstance(event, h11.Response):
            reason = event.reason.decode("latin-1")
            out.append(ResponseHead(pending.exchange, event.status_code, reason, fields(event.headers)))
            length = plain_framing(pending.request().method, event) if self.plain and not closing else None
            if length is not None:
                self._body = PlainBody(length)
                self._let_go()
        elif isinstance(event, h11.Data):
            out.append(ResponseData(pending.exchange, bytes(body_data(event))))
        elif isinstance(event, h11.EndOfMessage):
            self._end_response(out)
        else:  # NEED_DATA, PAUSED, ConnectionClosed
            return False
        return True

    def _body_step(self, data: bytes | bytearray, out: list[HttpEvent]) -> bool:
        """Bytes of a plain response body (`_body`), `_held` or a segment's: its pieces, and its end, error or
        return to h11. What the body does not take is left in (or added to) `_held`."""
        assert self._body is not None
        pending = self._waiting[0]
        fed = self._body.feed(data)
        if data is self._held:
            del self._held[: fed.end]
        elif fed.end < len(data):
            self._held += data[fed.end :]
        for piece in fed.pieces:
            out.append(ResponseData(pending.exchange, piece))
        if fed.outcome is BodyOutcome.MORE:
            return False
        if fed.outcome is BodyOutcome.ERROR:
            self.broken = True
            out.append(ParseError(False, f"bad response: {fed.error}", pending.exchange))
            return False
        self._body = None
        if fed.outcome is BodyOutcome.H11:
            self._resp = self._answering(pending.request())
            chunked_parser(self._resp.conn)
        else:
            self._end_response(out)
        return True

    def _end_response(self, out: list[HttpEvent]) -> None:
        """The oldest waiting response ended: the bytes after it are held for the next one."""
        out.append(ResponseEnd(self._waiting.popleft().exchange))
        if self._resp is not None:
            self._let_go()

    def _answering(self, request: h11.Request) -> H11Reader:
        """h11 ready to read the response to REQUEST from the held bytes."""
        reader = h11_reader(h11.CLIENT, self._held)
        reader.conn.send(request)
        return reader

    def _let_go(self) -> None:
        """h11 is done with the response: the held bytes it did not consume are read next."""
        assert self._resp is not None
        self._resp.let_go()
        self._resp = None
