"""Plain response bodies read without h11 (`http1_body`) give exactly h11's events: the same pieces per
feed, the same ends, the same errors in the same words, however the bytes are cut into segments."""

from __future__ import annotations

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


def h11_events(cuts: list[bytes], close: bool) -> list[HttpEvent]:
    """What h11 alone makes of the same response bytes, fed the same way (the reference)."""
    conn = answering()
    out: list[HttpEvent] = []
    exchange = 0
    for n, data in enumerate([*cuts, b""] if close else cuts):
        closing = n == len(cuts)
        conn.receive_data(data)
        while True:
            try:
                event = conn.next_event()
            except h11.RemoteProtocolError as exc:
                cut = ResponseEnd(exchange, complete=False, detail=str(exc))
                out.append(cut if closing else ParseError(False, f"bad response: {exc}", exchange))
                return out
            if isinstance(event, h11.Response):
                headers = tuple((k.decode().lower(), v.decode()) for k, v in event.headers)
                out.append(ResponseHead(exchange, event.status_code, event.reason.decode(), headers))
            elif isinstance(event, h11.Data):
                out.append(ResponseData(exchange, bytes(event.data)))
            elif isinstance(event, h11.EndOfMessage):
                out.append(ResponseEnd(exchange))
                rest = conn.trailing_data[0]
                exchange += 1
                if exchange == 2:  # both requests answered
                    return out
                conn = answering()
                if rest:
                    conn.receive_data(rest)
            else:
                break
    return out


def ours(cuts: list[bytes], close: bool) -> list[HttpEvent]:
    conn = Http1Connection()
    conn.feed_client(POST + POST)
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
