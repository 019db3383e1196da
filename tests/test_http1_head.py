"""Plain HTTP/1.1 heads read without h11 (`http1_head`) give exactly what h11 alone gives: the same
events (heads, bodies, ends, errors in h11's words) and the same connection state, on real heads from
the sample captures, on hostile ones, and however the two byte streams are cut into segments.

The reference is `Http1Connection(plain=False)`: h11 reads every head and every body."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from cancelwire.readers.http.http1 import Http1Connection, HttpEvent
from cancelwire.readers.http.http1_head import MAX_HEAD, Head, Next, read_request, read_response
from hypothesis import given, settings
from hypothesis import strategies as st

# Real heads, as the official SDKs send them (tests/samples captures: Python httpx/uvicorn, TypeScript).
PY_POST = (
    b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nAccept: application/json, text/event-stream\r\n"
    b"Accept-Encoding: gzip, deflate\r\nConnection: keep-alive\r\nUser-Agent: python-httpx/0.28.1\r\n"
    b"mcp-protocol-version: 2025-06-18\r\nmcp-session-id: 5b2a\r\ncontent-type: application/json\r\n"
    b'Content-Length: 36\r\n\r\n{"jsonrpc":"2.0","id":1,"method":"x"}'[:-1]
)
TS_POST = (
    b"POST /mcp HTTP/1.1\r\nhost: localhost:3000\r\nconnection: keep-alive\r\ncontent-type: application/json\r\n"
    b"accept: application/json, text/event-stream\r\naccept-language: *\r\nsec-fetch-mode: cors\r\n"
    b"user-agent: node\r\naccept-encoding: gzip, deflate\r\ncontent-length: 2\r\n\r\n{}"
)
GET = b"GET /mcp HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n"
SSE = (
    b"HTTP/1.1 200 OK\r\ndate: Sat, 05 Dec 2026 01:00:00 GMT\r\nserver: uvicorn\r\ncache-control: no-store\r\n"
    b"connection: keep-alive\r\ncontent-type: text/event-stream\r\nmcp-session-id: 5b2a\r\n"
    b"x-accel-buffering: no\r\nTransfer-Encoding: chunked\r\n\r\n9\r\ndata: a\n\n\r\n0\r\n\r\n"
)
JSON = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nVary: Origin\r\n\r\n{}"
ACCEPTED = b"HTTP/1.1 202 Accepted\r\ndate: x\r\nserver: uvicorn\r\ncontent-length: 0\r\n\r\n"


def post(*fields: bytes, body: bytes = b"{}", line: bytes = b"POST /mcp HTTP/1.1") -> bytes:
    return line + b"\r\n" + b"".join(f + b"\r\n" for f in fields) + b"\r\n" + body


def response(*fields: bytes, body: bytes = b"{}", line: bytes = b"HTTP/1.1 200 OK") -> bytes:
    return line + b"\r\n" + b"".join(f + b"\r\n" for f in fields) + b"\r\n" + body


HOST, CL = b"Host: x", b"Content-Length: 2"
SHORT = post(HOST, CL)
REQUESTS = {
    "python sdk": PY_POST,
    "typescript sdk": TS_POST,
    "get": GET,
    "pipelined": TS_POST + GET + PY_POST,
    "no body": post(HOST, body=b""),
    "chunked": post(HOST, b"Transfer-Encoding: chunked", body=b"2\r\n{}\r\n0\r\n\r\n"),
    "expect": post(HOST, CL, b"Expect: 100-continue"),
    "upgrade": post(HOST, CL, b"Upgrade: websocket", b"Connection: upgrade"),
    "connect": b"CONNECT x:443 HTTP/1.1\r\nHost: x:443\r\n\r\nTUNNEL",
    "connect, lower case": b"connect x:443 HTTP/1.1\r\nHost: x:443\r\n\r\n",
    "head": b"HEAD /mcp HTTP/1.1\r\nHost: x\r\n\r\n",
    "http/1.0": post(CL, line=b"POST /mcp HTTP/1.0"),
    "http/1.0, host": post(HOST, CL, line=b"POST /mcp HTTP/1.0"),
    "http/2.0": post(HOST, CL, line=b"POST /mcp HTTP/2.0"),
    "no host": post(CL),
    "two hosts": post(HOST, HOST, CL),
    "same length twice": post(HOST, CL, CL),
    "conflicting lengths": post(HOST, CL, b"Content-Length: 3"),
    "listed length": post(HOST, b"Content-Length: 2, 2"),
    "length and chunked": post(HOST, CL, b"Transfer-Encoding: chunked", body=b"2\r\n{}\r\n0\r\n\r\n"),
    "gzip": post(HOST, b"Transfer-Encoding: gzip"),
    "signed length": post(HOST, b"Content-Length: +2"),
    "21-digit length": post(HOST, b"Content-Length: " + b"0" * 19 + b"02"),
    "obs-fold": post(HOST, CL, b"X-A: 1", b" 2"),
    "space before colon": post(HOST, CL, b"X-A : 1"),
    "empty value": post(HOST, CL, b"X-A:", b"X-B: \t"),
    "tabs around value": post(HOST, CL, b"X-A:\t 1 \t2\t "),
    "bare lf": b"POST /mcp HTTP/1.1\nHost: x\nContent-Length: 2\n\n{}",
    "bare lf at the end": b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\n{}",
    "bare cr": post(HOST, CL, b"X-A: 1\r2"),
    "non-ascii value": post(HOST, CL, b"X-A: caf\xe9"),
    "control in value": post(HOST, CL, b"X-A: a\x01b"),
    "nul in value": post(HOST, CL, b"X-A: a\x00b"),
    "non-ascii target": post(HOST, CL, line=b"POST /caf\xe9 HTTP/1.1"),
    "two spaces": post(HOST, CL, line=b"POST  /mcp HTTP/1.1"),
    "leading blank line": b"\r\n" + TS_POST,
    "leading space": b" " + TS_POST,
    "absolute form": post(HOST, CL, line=b"POST http://x/mcp HTTP/1.1"),
    "cut body": post(HOST, b"Content-Length: 9"),
    "garbage": b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
}
RESPONSES = {
    "sse": SSE,
    "json": JSON,
    "accepted": ACCEPTED,
    "in a row": ACCEPTED + SSE + JSON,
    "no reason": response(CL, line=b"HTTP/1.1 200"),
    "empty reason": response(CL, line=b"HTTP/1.1 200 "),
    "reason with tab": response(CL, line=b"HTTP/1.1 200 O\tK"),
    "non-ascii reason": response(CL, line=b"HTTP/1.1 200 \xe9"),
    "no content": response(body=b"", line=b"HTTP/1.1 204 No Content") + JSON,
    "no content, chunked": response(b"Transfer-Encoding: chunked", line=b"HTTP/1.1 204 No Content") + JSON,
    "not modified with length": response(b"Content-Length: 5", line=b"HTTP/1.1 304 Not Modified") + JSON,
    "no content, bad length": response(b"Content-Length: x", line=b"HTTP/1.1 204 No Content"),
    "until close": response(b"Content-Type: application/json"),
    "continue first": b"HTTP/1.1 100 Continue\r\n\r\n" + JSON,
    "switching": b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\nFRAMES",
    "status 099": response(CL, line=b"HTTP/1.1 099 Odd"),
    "http/1.0": response(CL, line=b"HTTP/1.0 200 OK"),
    "bad status": response(CL, line=b"HTTP/1.1 20 OK"),
    "connection close": response(CL, b"Connection: close") + JSON,
    "same length twice": response(CL, CL) + JSON,
    "conflicting lengths": response(CL, b"Content-Length: 3"),
    "length and chunked": response(CL, b"Transfer-Encoding: chunked", body=b"2\r\n{}\r\n0\r\n\r\n") + JSON,
    "chunked, capital": response(b"Transfer-Encoding: Chunked", body=b"2\r\n{}\r\n0\r\n\r\n"),
    "chunked twice": response(b"Transfer-Encoding: chunked", b"Transfer-Encoding: chunked"),
    "chunked, gzip": response(b"Transfer-Encoding: gzip, chunked"),
    "obs-fold": response(CL, b"X-A: 1", b"\t2"),
    "space before colon": response(CL, b"X-A : 1"),
    "bare lf": b"HTTP/1.1 200 OK\nContent-Length: 2\n\n{}",
    "non-ascii value": response(CL, b"X-A: \xff"),
    "leading blank line": b"\r\n" + JSON,
    "cut head": b"HTTP/1.1 200 OK\r\nContent-Len",
    "cut body": response(b"Content-Length: 9"),
    "garbage": b"\x00\x01\x02",
}


def run(
    client: list[bytes], server: list[bytes], *, plain: bool, server_first: bool, close: bool, fin_first: bool = False
) -> object:
    """Everything a connection says fed these segments, and the state it is left in (`fin_first`: the
    server's FIN comes before the client's bytes)."""
    conn = Http1Connection(plain=plain)
    out: list[HttpEvent] = []
    feeds = [(conn.feed_server, server), (conn.feed_client, client)]
    for feed, cuts in feeds if server_first else feeds[::-1]:
        for data in cuts:
            out += feed(data)
        if fin_first and feed == conn.feed_server:
            out += conn.close_server()
    if close:
        out += conn.close_client() + conn.close_server()
    state = (conn.exchanges, conn.open_exchanges(), conn.at_rest, conn.upgraded, conn.switched)
    return out, state, conn.client_broken, conn.server_broken


def cuttings(data: bytes) -> Iterator[list[bytes]]:
    """The stream whole, cut in two at every byte, and in three around every 3 bytes."""
    yield [data]
    for i in range(1, len(data)):
        yield [data[:i], data[i:]]
    for i in range(1, len(data) - 3):
        yield [data[:i], data[i : i + 3], data[i + 3 :]]


def same(client: list[bytes], server: list[bytes]) -> None:
    for server_first in (False, True):
        for close in (False, True):
            ours = run(client, server, plain=True, server_first=server_first, close=close)
            assert ours == run(client, server, plain=False, server_first=server_first, close=close), (client, server)


@pytest.mark.parametrize("name", sorted(REQUESTS))
def test_requests_cut_anywhere_give_h11s_events(name: str) -> None:
    for cuts in cuttings(REQUESTS[name]):
        same(cuts, [JSON + ACCEPTED + JSON])


@pytest.mark.parametrize("name", sorted(RESPONSES))
def test_responses_cut_anywhere_give_h11s_events(name: str) -> None:
    for cuts in cuttings(RESPONSES[name]):
        same([SHORT + GET + SHORT], cuts)


@pytest.mark.parametrize("size", [MAX_HEAD - 40, MAX_HEAD - 4, MAX_HEAD, MAX_HEAD + 1, 3 * MAX_HEAD])
def test_huge_heads_give_h11s_events(size: int) -> None:
    big = b"X-Big: " + b"a" * (size - 60)
    request, answer = post(HOST, CL, big), response(CL, big)
    for at in (1, 100, size - 80, size - 3, size, size + 2):
        same([request[:at], request[at:]], [JSON])
        same([TS_POST], [answer[:at], answer[at:]])


def test_plain_heads_are_read_without_h11() -> None:
    """The fast path really is taken for the real heads (the tests above would pass without it)."""
    for data in (PY_POST, TS_POST, GET):
        assert isinstance(read_request(data), Head)
    for data in (SSE, JSON, ACCEPTED):
        assert isinstance(read_response(data), Head)
    head = read_response(SSE)
    assert isinstance(head, Head)
    assert (head.fields, head.length, head.size) == (("200", "OK"), -1, SSE.index(b"\r\n\r\n") + 4)
    assert read_request(TS_POST[:40]) is Next.WAIT
    assert read_request(REQUESTS["obs-fold"]) is Next.H11


FIELD_BITS = [b"Host: x", b"Content-Length: 2", b"Content-Length: 0", b"Transfer-Encoding: chunked", b"X-A: 1"]
FIELD_BITS += [b"X-A:", b" 1", b"X-A : 1", b"Connection: close", b"Expect: 100-continue", b"\xe9: 1", b"Upgrade: h2"]
BODY_BITS = [b"{}", b"2\r\n{}\r\n0\r\n\r\n", b"", b"\r\n", b"\n"]
SEPARATORS = [b"\r\n", b"\n", b"\r"]


@st.composite
def messages(draw: st.DrawFn, first_lines: list[bytes]) -> bytes:
    """A message made of real and hostile bits: a first line, fields, a blank line, a body."""
    parts = [draw(st.sampled_from(first_lines))]
    for _ in range(draw(st.integers(0, 4))):
        parts.append(draw(st.sampled_from(SEPARATORS)) + draw(st.sampled_from(FIELD_BITS)))
    parts.append(b"\r\n\r\n" if draw(st.booleans()) else draw(st.sampled_from(SEPARATORS)) * 2)
    return b"".join(parts) + draw(st.sampled_from(BODY_BITS))


def cut(data: bytes, at: list[int]) -> list[bytes]:
    points = sorted({min(a, len(data)) for a in at})
    return [data[i:j] for i, j in zip([0, *points], [*points, len(data)], strict=True) if j > i]


REQUEST_LINES = [b"POST /mcp HTTP/1.1", b"GET / HTTP/1.1", b"HEAD / HTTP/1.1", b"POST / HTTP/1.0", b"post /x HTTP/1.1"]
STATUS_LINES = [b"HTTP/1.1 200 OK", b"HTTP/1.1 202", b"HTTP/1.1 204 No", b"HTTP/1.1 100 Go", b"HTTP/1.0 200 OK"]


@settings(max_examples=300, deadline=None)
@given(
    requests=st.lists(messages(REQUEST_LINES), min_size=1, max_size=3),
    responses=st.lists(messages(STATUS_LINES), min_size=1, max_size=3),
    client_cuts=st.lists(st.integers(1, 400), max_size=3),
    server_cuts=st.lists(st.integers(1, 400), max_size=3),
)
def test_generated_conversations_give_h11s_events(
    requests: list[bytes], responses: list[bytes], client_cuts: list[int], server_cuts: list[int]
) -> None:
    client, server = cut(b"".join(requests), client_cuts), cut(b"".join(responses), server_cuts)
    same(client, server)
    ours = run(client, server, plain=True, server_first=True, close=True, fin_first=True)
    assert ours == run(client, server, plain=False, server_first=True, close=True, fin_first=True)
