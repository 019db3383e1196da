"""The client's half of the HTTP/1.1 reader hands h11 held bytes as it reads them (`http1_feed`): the same
events as h11 handed each segment whole, on either path, and work that grows with the requests, not with
their square."""

from __future__ import annotations

import h11
import pytest
from cancelwire.readers.http.http1 import Http1Connection, HttpEvent, ParseError, RequestEnd, RequestHead
from hypothesis import given, settings
from hypothesis import strategies as st
from test_http1_body import counting_h11, handed_about_once

BIG = bytes(range(32, 127)) * 60  # 5,700 bytes: more than a window (`WINDOW`), so h11 is handed it in turns
CHUNKED = b"POST /mcp HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
PIPELINED = [  # HAND-WRITTEN requests (real framing, odd and plain), pipelined in any order
    b'POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 9\r\n\r\n{"id": 1}',  # plain
    CHUNKED + b'9\r\n{"id": 2}\r\n0\r\n\r\n',  # a chunked request: h11 reads it
    CHUNKED + b'9;x=1\r\n{"id": 3}\r\n0\r\nX-T: 1\r\n\r\n',  # an extension, trailers
    b"GET /mcp HTTP/1.1\nHost: x\n\n",  # bare LF
    b"POST /mcp HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n{}",
    b"POST /mcp HTTP/1.1\r\nHost: x\r\nHost: y\r\nContent-Length: 2\r\n\r\n{}",  # two Hosts: h11's error
    b"POST /mcp HTTP/1.1\nHost: x\nContent-Length: %d\n\n%s" % (len(BIG), BIG),
    CHUNKED + b"%x;big=1\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n" % (len(BIG), BIG, len(BIG) // 2, BIG[: len(BIG) // 2]),
    CHUNKED + b"1;" + b"e=1;" * 5000 + b"\r\nx\r\n0\r\n\r\n",  # a 20 kB chunk-size line: longer than h11's 16 kB
    b"GET /mcp HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 20_000 + b"\r\n\r\n",  # a 20 kB head: h11's to refuse or not
    b"GET /mcp HTTP/1.0\r\n\r\n",  # HTTP/1.0: h11 reads it
    b"GET /mcp HTTP/2.0\r\nHost: x\r\n\r\n",  # not HTTP/1.x
    b"\r\nGET /mcp HTTP/1.1\r\nHost: x\r\n\r\n",  # an empty first line: h11's error
    b"GET /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: zz\r\n\r\n",  # a bad length: h11's error
]


def h11_requests(cuts: list[bytes], close: bool) -> list[HttpEvent]:
    """What h11 alone makes of the same client bytes, handed each segment whole as it comes (the reference;
    the reader once worked so, and gave h11 every held byte per request): a fresh h11 per request starts with
    the bytes the one before did not consume, and after the FIN each is given it."""
    conn = h11.Connection(h11.SERVER)
    out: list[HttpEvent] = []
    exchange, current, body = 0, None, b""
    for data in [*cuts, b""] if close else cuts:
        conn.receive_data(data)
        while True:
            try:
                event = conn.next_event()
            except h11.RemoteProtocolError as exc:
                return [*out, ParseError(True, f"bad request: {exc}", current)]
            if isinstance(event, h11.Request):
                version = event.http_version.decode()
                if not version.startswith("1."):
                    why = "HTTP/2 is read only on a connection that starts with its preface"
                    return [*out, ParseError(True, f"HTTP/{version} is not HTTP/1.x ({why})")]
                headers = tuple((k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in event.headers)
                out.append(RequestHead(exchange, event.method.decode(), event.target.decode(), headers, version))
                exchange, current, body = exchange + 1, exchange, b""
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                out.append(RequestEnd(exchange - 1, body, False, len(body)))
                current = None
                rest, closed = conn.trailing_data
                conn = h11.Connection(h11.SERVER)
                if rest:
                    conn.receive_data(rest)
                if closed:
                    conn.receive_data(b"")
            else:
                break
    return out


def ours(cuts: list[bytes], close: bool, plain: bool) -> list[HttpEvent]:
    """The client's events (no server byte is fed: a server-side error is about answering an HTTP/1.0
    request, h11's to refuse)."""
    conn = Http1Connection(plain=plain)
    out: list[HttpEvent] = []
    for data in cuts:
        out += conn.feed_client(data)
    if close:
        out += conn.close_client()
    return [e for e in out if not isinstance(e, ParseError) or e.from_client]


@settings(max_examples=400, deadline=None)
@given(
    kinds=st.lists(st.integers(0, len(PIPELINED) - 1), min_size=1, max_size=10),
    keep=st.integers(0, 1 << 17),
    cuts=st.lists(st.integers(1, 1 << 17), max_size=4),
    close=st.booleans(),
    plain=st.booleans(),
)
def test_pipelined_requests_cut_anywhere_give_h11s_events(
    kinds: list[int], keep: int, cuts: list[int], close: bool, plain: bool
) -> None:
    """The reader hands h11 held client bytes a window at a time (a head to its blank line, a body in growing
    turns): the same events as h11 handed each segment whole, on either path, wherever the stream stops."""
    stream = b"".join(PIPELINED[k] for k in kinds)[:keep]
    points = sorted({min(c, len(stream)) for c in cuts})
    segments = [stream[i:j] for i, j in zip([0, *points], [*points, len(stream)], strict=True) if j > i]
    assert ours(segments, close, plain) == h11_requests(segments, close)


def handed_to_h11(monkeypatch: pytest.MonkeyPatch, request: bytes, n: int, plain: bool) -> int:
    """Bytes h11 reading requests is handed and hands back (`trailing_data`) while reading N pipelined
    REQUESTs in one segment."""
    with counting_h11(monkeypatch, h11.SERVER) as counted:
        out = Http1Connection(plain=plain).feed_client(request * n)
    assert [e.exchange for e in out if isinstance(e, RequestEnd)] == list(range(n))
    return counted[0]


@pytest.mark.parametrize("plain", [True, False])
@pytest.mark.parametrize("kind", [1, 2, 3, 4, 10])  # PIPELINED's requests that h11 reads on either path
def test_h11s_work_grows_with_the_requests_not_their_square(
    monkeypatch: pytest.MonkeyPatch, kind: int, plain: bool
) -> None:
    """Many small pipelined requests h11 reads in one segment (up to 4,000 in 300 kB): h11 is handed each
    byte about once, not the rest of the segment per request (4x the requests: 4x the bytes, not 16x)."""
    request = PIPELINED[kind]
    handed_about_once(lambda n: handed_to_h11(monkeypatch, request, n, plain), request)
