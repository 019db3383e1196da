"""Plain response bodies read without h11 (`http1_body`) give exactly h11's events: the same pieces per
feed, the same ends, the same errors in the same words, however the bytes are cut into segments."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import h11
import pytest
from cancelwire.readers.http.http1 import (
    Http1Connection,
    HttpEvent,
    ParseError,
    ResponseData,
    ResponseEnd,
    ResponseHead,
)
from cancelwire.readers.http.http1_feed import WINDOW
from hypothesis import given, settings
from hypothesis import strategies as st

POST = b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
CHUNKED = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
SIZED = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n"

RESPONSES = {
    "chunks": CHUNKED + b"9\r\ndata: a\n\n\r\nA\r\ndata: bc\n\n\r\n0\r\n\r\n",
    "chunk extension": CHUNKED + b"9\r\ndata: a\n\n\r\n9;x=1\r\ndata: b\n\n\r\n0\r\n\r\n",
    "whitespace after the size": CHUNKED + b"9 \r\ndata: a\n\n\r\n0\r\n\r\n",
    "trailers": CHUNKED + b"9\r\ndata: a\n\n\r\n0\r\nX-T: 1\r\n\r\n",
    "bad size": CHUNKED + b"9\r\ndata: a\n\n\r\nzz\r\ndata: b\n\n\r\n",
    "bad footer": CHUNKED + b"9\r\ndata: a\n\nXY9\r\ndata: b\n\n\r\n",
    "half a footer": CHUNKED + b"9\r\ndata: a\n\n\rY",
    "cut chunk": CHUNKED + b"9\r\ndata: a\n\n\r\n10\r\ndata",
    "cut size line": CHUNKED + b"9\r\ndata: a\n\n\r\n1",  # the FIN here: h11's words for bytes it cannot read
    "long size line": CHUNKED + b"9\r\ndata: a\n\n\r\n" + b"0" * 100 + b"9\r\ndata: b\n\n\r\n0\r\n\r\n",
    "sized": SIZED + b'{"id": 1}\r\n',
    "sized, cut": SIZED + b'{"id"',
    "empty": b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
    "two in a row": SIZED + b'{"id": 1}\r\n' + CHUNKED + b"2\r\nab\r\n0\r\n\r\n",
}


def answering() -> h11.Connection:
    conn = h11.Connection(h11.CLIENT)
    conn.send(h11.Request(method="POST", target="/mcp", headers=[("Host", "x"), ("Content-Length", "2")]))
    return conn


def h11_events(cuts: list[bytes], close: bool, n: int = 2) -> list[HttpEvent]:
    """What h11 alone makes of the same response bytes to N requests, handed each segment whole as it comes
    (the reference; the reader once worked so, and gave h11 every held byte per response): a fresh h11 per
    response starts with the bytes the one before did not consume, and after the FIN each is given it."""
    conn = answering()
    out: list[HttpEvent] = []
    exchange = 0
    for data in [*cuts, b""] if close else cuts:
        closing = not data
        conn.receive_data(data)
        while True:
            try:
                event = conn.next_event()
            except h11.RemoteProtocolError as exc:
                cut = ResponseEnd(exchange, complete=False, detail=str(exc))
                out.append(cut if closing else ParseError(False, f"bad response: {exc}", exchange))
                return out
            if isinstance(event, h11.InformationalResponse):
                continue
            if isinstance(event, h11.Response):
                headers = tuple((k.decode().lower(), v.decode()) for k, v in event.headers)
                out.append(ResponseHead(exchange, event.status_code, event.reason.decode(), headers))
            elif isinstance(event, h11.Data):
                out.append(ResponseData(exchange, bytes(event.data)))
            elif isinstance(event, h11.EndOfMessage):
                out.append(ResponseEnd(exchange))
                rest = conn.trailing_data[0]
                exchange += 1
                if exchange == n:  # every request answered
                    return out
                conn = answering()
                if rest:
                    conn.receive_data(rest)
                if closing:
                    conn.receive_data(b"")
            else:
                break
    return out


def ours(cuts: list[bytes], close: bool, n: int = 2, plain: bool = True) -> list[HttpEvent]:
    conn = Http1Connection(plain=plain)
    conn.feed_client(POST * n)
    out: list[HttpEvent] = []
    for data in cuts:
        out += conn.feed_server(data)
    if close:
        out += conn.close_server()
    return out


@pytest.mark.parametrize("name", sorted(RESPONSES))
@pytest.mark.parametrize("close", [False, True])
def test_every_cut_in_two_and_three_gives_h11s_events(name: str, close: bool) -> None:
    data = RESPONSES[name]
    cuttings = [[data]]
    cuttings += [[data[:i], data[i:]] for i in range(1, len(data))]
    cuttings += [[data[:i], data[i : i + 3], data[i + 3 :]] for i in range(1, len(data) - 3)]
    for cuts in cuttings:
        assert ours(cuts, close) == h11_events(cuts, close), cuts


# -- many pipelined responses, h11 handed held bytes a window at a time ------------------------------------------

BIG = bytes(range(32, 127)) * 60  # 5,700 bytes: more than a window (`WINDOW`), so h11 is handed it in turns
PIPELINED = [  # HAND-WRITTEN responses (real framing, odd and plain), pipelined in any order
    SIZED + b'{"id": 1}\r\n',
    CHUNKED + b"9\r\ndata: a\n\n\r\n0\r\n\r\n",
    CHUNKED + b"9;x=1\r\ndata: a\n\n\r\n0\r\n\r\n",  # h11 reads the body from the extension on
    CHUNKED + b"9\r\ndata: a\n\n\r\n0\r\nX-T: 1\r\n\r\n",  # trailers
    b"HTTP/1.1 200 OK\nContent-Length: 2\n\n{}",  # bare LF: h11 reads the head
    b"HTTP/1.1 100 Continue\r\n\r\n" + SIZED + b'{"id": 2}\r\n',
    b"HTTP/1.1 204 No Content\r\n\r\n",
    b"HTTP/1.1 200 OK\nContent-Length: %d\n\n%s" % (len(BIG), BIG),
    CHUNKED + b"%x;big=1\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n" % (len(BIG), BIG, len(BIG) // 2, BIG[: len(BIG) // 2]),
    CHUNKED + b"1;" + b"e=1;" * 5000 + b"\r\nx\r\n0\r\n\r\n",  # a 20 kB chunk-size line: longer than h11's 16 kB
    SIZED.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n") + b'{"id": 3}\r\n',
]
UNTIL_CLOSE = b"HTTP/1.1 200 OK\nContent-Type: text/event-stream\n\n" + BIG


@settings(max_examples=400, deadline=None)
@given(
    kinds=st.lists(st.integers(0, len(PIPELINED) - 1), min_size=1, max_size=10),
    until_close=st.booleans(),
    keep=st.integers(0, 1 << 17),
    cuts=st.lists(st.integers(1, 1 << 17), max_size=4),
    close=st.booleans(),
    plain=st.booleans(),
)
def test_pipelined_responses_cut_anywhere_give_h11s_events(
    kinds: list[int], until_close: bool, keep: int, cuts: list[int], close: bool, plain: bool
) -> None:
    """The reader hands h11 held bytes a window at a time (a head to its blank line, a body in growing
    turns): the same events as h11 handed each segment whole, on either path, wherever the stream stops."""
    stream = b"".join(PIPELINED[k] for k in kinds) + (UNTIL_CLOSE if until_close else b"")
    stream = stream[:keep]
    points = sorted({min(c, len(stream)) for c in cuts})
    segments = [stream[i:j] for i, j in zip([0, *points], [*points, len(stream)], strict=True) if j > i]
    n = len(kinds) + until_close
    assert ours(segments, close, n, plain) == h11_events(segments, close, n)


@contextmanager
def counting_h11(monkeypatch: pytest.MonkeyPatch, role: type[h11.CLIENT] | type[h11.SERVER]) -> Iterator[list[int]]:
    """Counts (in the list's one item) the bytes h11 in ROLE is handed and hands back (`trailing_data`)."""
    counted = [0]
    receive, trailing = h11.Connection.receive_data, h11.Connection.trailing_data

    def counting_receive(conn: h11.Connection, data: bytes) -> None:
        counted[0] += len(data) if conn.our_role is role else 0
        receive(conn, data)

    def counting_trailing(conn: h11.Connection) -> tuple[bytes, bool]:
        held: tuple[bytes, bool] = trailing.fget(conn)
        counted[0] += len(held[0]) if conn.our_role is role else 0
        return held

    with monkeypatch.context() as patch:
        patch.setattr(h11.Connection, "receive_data", counting_receive)
        patch.setattr(h11.Connection, "trailing_data", property(counting_trailing))
        yield counted


def handed_to_h11(monkeypatch: pytest.MonkeyPatch, response: bytes, n: int, plain: bool) -> int:
    """Bytes h11 reading responses is handed and hands back while reading N pipelined RESPONSEs in one
    segment (h11 reading requests is not counted: `plain=False` reads the requests too)."""
    with counting_h11(monkeypatch, h11.CLIENT) as counted:
        conn = Http1Connection(plain=plain)
        conn.feed_client(POST * n)
        out = conn.feed_server(response * n)
    assert [e for e in out if isinstance(e, ResponseEnd)] == [ResponseEnd(k) for k in range(n)]
    return counted[0]


H11_READ = {  # name: (response, plain) for each way h11 reads a part of a response (`plain`: only that part)
    "chunk extension": (PIPELINED[2], True),
    "bare LF head": (PIPELINED[4], True),
    "interim": (PIPELINED[5], True),
    "chunked, h11 only": (PIPELINED[1], False),
    "sized, h11 only": (PIPELINED[0], False),
    "chunk extension, h11 only": (PIPELINED[2], False),
    "bare LF head, h11 only": (PIPELINED[4], False),
    "no content, h11 only": (PIPELINED[6], False),
}


@pytest.mark.parametrize("name", list(H11_READ))
def test_h11s_work_grows_with_the_responses_not_their_square(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Many small pipelined responses in one segment (up to 4,000 in 64 kB): h11 is handed each byte about
    once, not the rest of the segment per response (4x the responses: 4x the bytes, not 16x)."""
    response, plain = H11_READ[name]
    handed_about_once(lambda n: handed_to_h11(monkeypatch, response, n, plain), response)


def handed_about_once(handed: Callable[[int], int], message: bytes) -> None:
    """HANDED(n), the bytes h11 is handed reading N pipelined MESSAGEs in one segment, for 1,000 and 4,000:
    4x, not 16x (before, h11 was handed the rest of the segment per message), about each byte once."""
    few, many = handed(1000), handed(4000)
    assert few > 0 and many <= 4.2 * few
    assert many <= 4000 * (3 * len(message) + 2 * WINDOW)
