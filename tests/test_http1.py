"""HTTP/1.1 reassembly over h11, fed the two byte streams of a connection (no tshark).

Thousands of pipelined responses in one buffer are read in one loop, never a call per response
(`Http1Connection` once recursed per response: a hostile peer's one segment raised RecursionError)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import synth_pcap as sp
from cancelwire.cli.main import main
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


LATE = {  # HAND-WRITTEN: a response cut by the server's FIN before its request shows up (no peer was recorded doing it)
    "plain head, length": b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc",
    "bare-LF head, length": b"HTTP/1.1 200 OK\nContent-Length: 9\n\nabc",
    "interim, then length": b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc",
}


@pytest.mark.parametrize("plain", [True, False], ids=["plain", "h11-only"])
@pytest.mark.parametrize("name", list(LATE))
def test_a_body_the_fin_cut_before_its_request_came_ends_incomplete(name: str, plain: bool) -> None:
    """The FIN came first, so h11 reads the head (`plain`: then hands the body to `http1_body`): the body
    ends when the request shows up, cut, as a body the FIN cuts after its request does (h11's words)."""
    conn = Http1Connection(plain=plain)
    assert conn.feed_server(LATE[name]) == [] and conn.close_server() == []
    out = conn.feed_client(POST + POST)
    cut = "peer closed connection without sending complete message body (received 3 bytes, expected 9)"
    assert out[1:4] == [
        ResponseHead(0, 200, "OK", (("content-length", "9"),)),
        ResponseData(0, b"abc"),
        ResponseEnd(0, complete=False, detail=cut),
    ]
    kept = ["RequestHead", "ResponseHead", "ResponseData", "ResponseEnd", "RequestEnd", "RequestHead", "RequestEnd"]
    assert kinds(out) == kept
    assert conn.open_exchanges() == [1]  # no byte of its response: left open, as before
    # the same bytes with the request first: the same end
    conn = Http1Connection(plain=plain)
    conn.feed_client(POST)
    assert conn.feed_server(LATE[name])[-1] == ResponseData(0, b"abc")
    assert conn.close_server() == [ResponseEnd(0, complete=False, detail=cut)]


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


# -- thousands of pipelined responses in one buffer --------------------------------------------------------------

N = 5000
JSON = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
CHUNKED = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"
)
RESPONSES: dict[str, list[tuple[bytes, int, bytes]]] = {  # kind: the responses taken in turn (bytes, status, body)
    "content-length": [(JSON, 200, b"{}")],
    "chunked": [(CHUNKED, 200, b"{}")],
    "mixed": [
        (JSON, 200, b"{}"),
        (CHUNKED, 200, b"{}"),
        (CHUNKED.replace(b"2\r\n{}", b"2;x=1\r\n{}"), 200, b"{}"),  # a chunk extension: h11 reads on from there
        (JSON.replace(b"\r\n", b"\n"), 200, b"{}"),  # bare LF: h11 reads the head
        (b"HTTP/1.1 100 Continue\r\n\r\n" + JSON, 200, b"{}"),  # an interim response first
        (b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n", 202, b""),
    ],
}


def _responses(kind: str, n: int) -> list[tuple[bytes, int, bytes]]:
    cycle = RESPONSES[kind]
    return [cycle[k % len(cycle)] for k in range(n)]


@pytest.mark.parametrize("plain", [True, False], ids=["plain", "h11-only"])
@pytest.mark.parametrize("kind", list(RESPONSES))
@pytest.mark.parametrize("requests_first", [True, False], ids=["requests-first", "responses-first"])
def test_thousands_of_pipelined_responses_in_one_buffer(kind: str, plain: bool, requests_first: bool) -> None:
    conn = Http1Connection(plain=plain)
    expected = _responses(kind, N)
    requests, responses = POST * N, b"".join(raw for raw, _, _ in expected)
    if requests_first:  # all read in the server's one feed
        out = conn.feed_client(requests) + conn.feed_server(responses)
    else:  # the first 60 kB held, then read as the request heads arrive
        out = conn.feed_server(responses[:60_000]) + conn.feed_client(requests) + conn.feed_server(responses[60_000:])
    assert not any(isinstance(e, ParseError) for e in out)
    assert [e.exchange for e in out if isinstance(e, RequestHead)] == list(range(N))
    assert [e.exchange for e in out if isinstance(e, RequestEnd)] == list(range(N))
    heads = [(e.exchange, e.status) for e in out if isinstance(e, ResponseHead)]
    assert heads == [(k, status) for k, (_, status, _) in enumerate(expected)]
    assert [e for e in out if isinstance(e, ResponseEnd)] == [ResponseEnd(k) for k in range(N)]
    bodies = [b"".join(e.data for e in out if isinstance(e, ResponseData) and e.exchange == k) for k in (0, 1, N - 1)]
    assert bodies == [expected[k][2] for k in (0, 1, N - 1)]
    assert b"".join(e.data for e in out if isinstance(e, ResponseData)) == b"".join(body for _, _, body in expected)
    assert conn.open_exchanges() == [] and conn.at_rest


@pytest.mark.parametrize("plain", [True, False], ids=["plain", "h11-only"])
def test_thousands_of_responses_then_a_read_until_close_one_ended_by_the_fin(plain: bool) -> None:
    conn = Http1Connection(plain=plain)
    conn.feed_client(POST * (N + 1))
    out = conn.feed_server(
        b"".join(raw for raw, _, _ in _responses("mixed", N))
        + b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: x\n\n"
    )
    assert [e.exchange for e in out if isinstance(e, ResponseEnd)] == list(range(N))
    assert kinds(out)[-2:] == ["ResponseHead", "ResponseData"] and out[-1].exchange == N
    assert conn.close_server() == [ResponseEnd(N)]


# -- end to end: a hand-built capture through the CLI -----------------------------------------------------------

C, S = "10.0.0.1", "10.0.0.2"
PINGS, NOTIFICATIONS = 20, 1750
"""Exchanges pipelined on one connection, all answered in one server segment (36 bytes a 202: at most 65,495)."""


def _post(body: bytes) -> bytes:
    return b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
        len(body),
        body,
    )


def _pipelined_capture() -> bytes:
    """HAND-BUILT (tests/synth_pcap.py, no peer behaves this way): a client that pipelines PINGS pings and
    NOTIFICATIONS `notifications/roots/list_changed` in 60 kB segments, and a server that answers every one
    in a single segment (a JSON result per ping, `202` per notification), in order."""
    pings = [_post(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}' % k) for k in range(PINGS)]
    notice = _post(b'{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}')
    client = b"".join(pings) + notice * NOTIFICATIONS
    results = [b'{"jsonrpc":"2.0","id":%d,"result":{}}' % k for k in range(PINGS)]
    server = b"".join(
        b"HTTP/1.1 200 \r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(r), r)
        for r in results
    )
    server += b"HTTP/1.1 202 \r\nContent-Length: 0\r\n\r\n" * NOTIFICATIONS
    assert len(server) <= 65_495
    packets = [sp.ipv4(C, S, sp.tcp(40000, 8000, 100, 0, 0x02)), sp.ipv4(S, C, sp.tcp(8000, 40000, 900, 101, 0x12))]
    seq = 101
    for start in range(0, len(client), 60_000):
        part = client[start : start + 60_000]
        packets.append(sp.ipv4(C, S, sp.tcp(40000, 8000, seq, 901, 0x18, part)))
        seq += len(part)
    packets.append(sp.ipv4(S, C, sp.tcp(8000, 40000, 901, seq, 0x18, server)))
    packets.append(sp.ipv4(C, S, sp.tcp(40000, 8000, seq, 901 + len(server), 0x11)))
    packets.append(sp.ipv4(S, C, sp.tcp(8000, 40000, 901 + len(server), seq + 1, 0x11)))
    return sp.pcap([(1_733_300_000, k, p) for k, p in enumerate(packets)], linktype=sp.RAW)


def test_a_capture_with_thousands_of_responses_in_one_segment_is_read_whole(tmp_path: Path) -> None:
    path, report = tmp_path / "pipelined.pcap", tmp_path / "report.json"
    path.write_bytes(_pipelined_capture())
    argv = [str(path), "--capture-reader", "direct", "--format", "json", "-o", str(report)]
    assert main(["audit", *argv]) in (0, 1)  # findings or none; never 3 (a bug)
    (session,) = json.loads(report.read_text())["sessions"]
    assert (session["requests"], session["messages"]) == (PINGS, 2 * PINGS + NOTIFICATIONS)
