"""HTTP/1.1 reassembly over h11, fed the two byte streams of a connection (no tshark)."""

from __future__ import annotations

import pytest
from cancelwire.readers.http.http1 import (
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

POST = (
    b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nMcp-Session-Id: s1\r\n"
    b"Content-Length: 2\r\n\r\n{}"
)
SSE_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def kinds(events: list[HttpEvent]) -> list[str]:
    return [type(e).__name__ for e in events]


def test_request_and_chunked_sse_response_piece_by_piece() -> None:
    conn = Http1Connection()
    out = conn.feed_client(POST)
    assert out[0] == RequestHead(
        0,
        "POST",
        "/mcp",
        (
            ("host", "x"),
            ("content-type", "application/json"),
            ("mcp-session-id", "s1"),
            ("content-length", "2"),
        ),
        "1.1",
    )
    assert out[1] == RequestEnd(0, b"{}", False, 2)
    assert header(out[0].headers, "Mcp-Session-Id") == "s1"
    assert conn.open_exchanges() == [0]
    head = conn.feed_server(SSE_HEAD)
    assert head == [
        ResponseHead(0, 200, "OK", (("content-type", "text/event-stream"), ("transfer-encoding", "chunked")))
    ]
    assert conn.feed_server(chunk(b"data: a\n\n")) == [ResponseData(0, b"data: a\n\n")]
    # a chunk split in the middle gives its bytes as they arrive
    body = chunk(b"data: b\n\n")
    assert conn.feed_server(body[:5]) == [ResponseData(0, b"da")]
    assert conn.feed_server(body[5:]) == [ResponseData(0, b"ta: b\n\n")]
    assert conn.feed_server(b"0\r\n\r\n") == [ResponseEnd(0)]
    assert conn.open_exchanges() == []


def test_keep_alive_and_pipelining() -> None:
    conn = Http1Connection()
    two = POST + POST.replace(b"{}", b"[]")
    out = conn.feed_client(two)
    assert kinds(out) == ["RequestHead", "RequestEnd", "RequestHead", "RequestEnd"]
    assert [e.exchange for e in out] == [0, 0, 1, 1]
    assert conn.open_exchanges() == [0, 1]
    json_resp = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 3\r\n\r\n[1]"
    accepted = b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n"
    out = conn.feed_server(json_resp + accepted)
    assert kinds(out) == ["ResponseHead", "ResponseData", "ResponseEnd", "ResponseHead", "ResponseEnd"]
    assert [e.exchange for e in out] == [0, 0, 0, 1, 1]
    assert out[3] == ResponseHead(1, 202, "Accepted", (("content-length", "0"),))
    # a third request on the same connection later
    out = conn.feed_client(b"DELETE /mcp HTTP/1.1\r\nHost: x\r\n\r\n")
    assert kinds(out) == ["RequestHead", "RequestEnd"] and out[0].exchange == 2


def test_response_split_across_requests_boundary_held_until_request() -> None:
    conn = Http1Connection()
    # server bytes before any request are held, then parsed once the request shows up
    assert conn.feed_server(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n") == []
    out = conn.feed_client(POST)
    assert kinds(out) == ["RequestHead", "ResponseHead", "ResponseEnd", "RequestEnd"]


def test_server_fin_mid_chunked_body_is_an_incomplete_end() -> None:
    conn = Http1Connection()
    conn.feed_client(POST)
    conn.feed_server(SSE_HEAD + chunk(b"data: a\n\n"))
    out = conn.close_server()
    assert len(out) == 1 and isinstance(out[0], ResponseEnd) and not out[0].complete


def test_read_until_close_body_ends_at_fin() -> None:
    conn = Http1Connection()
    conn.feed_client(POST)
    out = conn.feed_server(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\ndata: x\n\n"
    )
    assert kinds(out) == ["ResponseHead", "ResponseData"]
    assert conn.close_server() == [ResponseEnd(0)]


def test_head_response_has_no_body() -> None:
    conn = Http1Connection()
    conn.feed_client(b"HEAD /mcp HTTP/1.1\r\nHost: x\r\n\r\n")
    out = conn.feed_server(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n")
    assert kinds(out) == ["ResponseHead", "ResponseEnd"]


@pytest.mark.parametrize("garbage", [b"\x16\x03\x01\x00\xa5", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"])
def test_bad_request_is_reported_once_then_ignored(garbage: bytes) -> None:
    conn = Http1Connection()
    out = conn.feed_client(garbage + b"\r\n\r\n")
    assert len(out) == 1 and isinstance(out[0], ParseError) and out[0].from_client
    assert conn.feed_client(POST) == []


def test_bad_response() -> None:
    conn = Http1Connection()
    conn.feed_client(POST)
    out = conn.feed_server(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
    assert kinds(out) == ["ResponseHead", "ParseError"]
    assert isinstance(out[1], ParseError) and not out[1].from_client and out[1].exchange == 0


def test_client_fin_mid_request_body() -> None:
    conn = Http1Connection()
    out = conn.feed_client(POST[:-1])
    assert kinds(out) == ["RequestHead"]
    out = conn.close_client()
    assert kinds(out) == ["ParseError"]


def test_bad_response_is_reported_once_then_ignored() -> None:
    # h11 will not follow the response to an HTTP/1.0 request: that is said once, not again at every later
    # request head, and server bytes held from before are not read after it
    conn = Http1Connection()
    out = conn.feed_client(b"GET /a HTTP/1.0\r\n\r\n")
    assert kinds(out) == ["RequestHead", "ParseError", "RequestEnd"]
    assert isinstance(out[1], ParseError) and not out[1].from_client and out[1].exchange == 0
    assert conn.feed_server(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n") == []
    assert kinds(conn.feed_client(POST + POST)) == ["RequestHead", "RequestEnd"] * 2
    assert conn.close_server() == []
