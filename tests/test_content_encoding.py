"""Content-Encoding on captured HTTP bodies (`readers/http/encoding.py`, issue 18 class 7): the real SDK behind
Starlette's GZipMiddleware (sample_captures/http*/sdk-*-gzip-*), the decoder's bounds, and bodies it must name."""

from __future__ import annotations

import base64
import gzip
import zlib
from pathlib import Path
from typing import Any

import pytest
from cancelwire.model import Anomaly, AnomalyName, MessageEvent, Vantage
from cancelwire.readers import InputSource, ReadOptions
from cancelwire.readers.capture.conn import Conn, ConnKind
from cancelwire.readers.capture.over_http1 import HttpCapture
from cancelwire.readers.capture.reader import READER
from cancelwire.readers.capture.sessions import Sessions
from cancelwire.readers.capture.tcp import Closed, TcpConnection
from cancelwire.readers.har.entry import EntryProblem
from cancelwire.readers.har.entry import parse as har_parse
from cancelwire.readers.http.encoding import PIECE, RATIO_AFTER, BodyDecoder, codings
from cancelwire.readers.inflate import InflateLimits
from cancelwire.reports.document import build
from cancelwire.run.pipeline import audit

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_captures"
FIXTURES = ROOT / "tests" / "fixtures" / "encoding"


def _report(path: Path) -> dict[str, Any]:
    return build(audit([str(path)]))


def _findings(report: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (f["rule_id"], f["severity"], f["certainty"], f["request_id"], [e["frame"] for e in f["evidence"]])
        for f in report["findings"]
    ]


def _cancels(report: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(c["request_id"], c["tool"], c["mechanism"], c["outcome"], c["certainty"]) for c in report["cancellations"]]


def _replies(path: Path) -> list[tuple[int | None, Any]]:
    """(frame, id) of every reply the reader read from the server."""
    events = READER.read(InputSource(path.name, path), ReadOptions())
    return [
        (e.origin.frame, e.message.id)
        for e in events
        if isinstance(e, MessageEvent) and e.message.method is None and e.direction.value == "s2c"
    ]


@pytest.mark.parametrize(
    ("sample", "cancel", "reply", "replies"),
    [
        # tools/list (35) and echo (42) gzip; initialize (10) and the -32800 (61) too small to compress
        ("http/sdk-http-gzip-json-cancel", 52, 61, [(10, 1), (35, 2), (42, 3), (61, 4)]),
        # every SSE stream gzip, flushed per event
        ("http/sdk-http-gzip-sse-cancel", 80, 89, [(10, 1), (41, 2), (59, 3), (89, 4)]),
        ("http2/sdk-h2c-gzip-json-cancel", 48, 56, [(17, 1), (32, 2), (40, 3), (56, 4)]),
        ("http2/sdk-h2c-gzip-sse-cancel", 56, 62, [(18, 1), (33, 2), (41, 3), (62, 4)]),
    ],
)
def test_sdk_behind_gzip_middleware_is_judged_as_without_it(
    sample: str, cancel: int, reply: int, replies: list[tuple[int, int]]
) -> None:
    """The verdict of the uncompressed samples (sdk-http-cancel-notification): the SDK server's -32800 after the
    cancel. Before decoding, the same captures gave invalid-jsonrpc-message (error), request-never-answered
    [exact] for tools/list and echo, a cancel of initialize, and an SSE event cut at byte 0."""
    path = SAMPLES / f"{sample}.pcapng"
    report = _report(path)
    assert _findings(report) == [("CW101", "warning", "exact", 4, [cancel, reply])]
    assert _cancels(report) == [(4, "slow_write", "notification", "late-result-violation", "exact")]
    assert _replies(path) == replies


@pytest.mark.parametrize(
    ("fixture", "detail"),
    [
        (
            "bomb",
            "tcp0/1: response body: gzip body: stopped after 6553600 decoded bytes from 32710 encoded bytes: "
            "more than 200x (the limit; raise it with --max-inflate-ratio)",
        ),
        (
            "damaged",
            "tcp0/1: response body: gzip body after 91 encoded bytes (0 decoded) does not inflate "
            "(Error -3 while decompressing data: incorrect data check)",
        ),
    ],
)
def test_a_bomb_or_damaged_gzip_reply_is_named_unread_not_unanswered(fixture: str, detail: str) -> None:
    """HAND-WRITTEN server (scripts/synth_capture.py h1-encoded): the result of tools/call id 2 (frame 10) is 33 KB
    of gzip inflating to 32 MiB of JSON white space, or gzip with a byte flipped. The bomb stops at the ratio
    (6.5 MB inflated, not 32 MiB); either is CW941 with the call's reply unread: the cancel's outcome is
    unverified, and nothing is called unanswered."""
    path = FIXTURES / f"{fixture}.pcapng"
    report = _report(path)
    assert _findings(report) == [("CW941", "warning", "exact", 2, [10])]
    assert report["findings"][0]["message"] == f"an encoded HTTP body was not read: {detail}"
    assert _cancels(report) == [(2, "export", "notification", "outcome-unverified", "inferred")]


def test_the_ratio_is_the_users() -> None:
    """--max-inflate-ratio 2000 lets the bomb's 32 MiB through: it is then only a 16 MiB body too large."""
    path = FIXTURES / "bomb.pcapng"
    events = READER.read(InputSource(path.name, path), ReadOptions(inflate=InflateLimits.given(None, 2000)))
    names = [e.name for e in events if isinstance(e, Anomaly)]
    assert names == [AnomalyName.HTTP_BODY_TOO_LARGE]


# -- the decoder ------------------------------------------------------------------------------------------


def _decode(coding: str, data: bytes, step: int = 7) -> tuple[bytes, Any]:
    decoder = BodyDecoder(codings(coding), 200.0)
    out = b"".join(piece for at in range(0, len(data), step) for piece in decoder.feed(data[at : at + step]))
    decoder.finish()
    return out, decoder.problem


BODY = b'{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"' + b"abc" * 400 + b'"}]}}'


def test_gzip_members_and_both_deflates_decode_fed_a_few_bytes_at_a_time() -> None:
    half = len(BODY) // 2
    members = gzip.compress(BODY[:half]) + gzip.compress(BODY[half:])
    raw = zlib.compressobj(9, zlib.DEFLATED, -15)
    assert _decode("gzip", members) == (BODY, None)
    assert _decode("x-gzip, identity", gzip.compress(BODY), step=1) == (BODY, None)
    assert _decode("deflate", zlib.compress(BODY)) == (BODY, None)  # RFC 9110: zlib-wrapped
    assert _decode("Deflate", raw.compress(BODY) + raw.flush()) == (BODY, None)  # what some servers send


def test_what_is_not_read_is_named_with_why() -> None:
    def named(coding: str, data: bytes) -> tuple[str, str]:
        out, problem = _decode(coding, data)
        assert out == b"" or BODY.startswith(out)
        return problem.name.value, problem.detail

    packed = gzip.compress(BODY)
    assert named("br", b"\x0b\x02\x80") == (
        "http.body-not-decoded",
        "Content-Encoding 'br': the 'br' coding is not read (cancelwire reads gzip and deflate)",
    )
    assert named("gzip, gzip", gzip.compress(packed)) == (
        "http.body-not-decoded",
        "Content-Encoding 'gzip, gzip': a chain of codings is not read (cancelwire reads gzip and deflate)",
    )
    assert named("gzip", BODY) == (
        "http.body-decode-failed",
        "gzip body after 7 encoded bytes (0 decoded) is not gzip data",
    )
    assert named("gzip", packed[:-4]) == (
        "http.body-decode-failed",
        f"gzip body after {len(packed) - 4} encoded bytes ({len(BODY)} decoded) ends before its gzip data does",
    )
    assert named("gzip", packed + b"junk")[0] == "http.body-decode-failed"
    assert named("deflate", zlib.compress(BODY) + b"xy") == (
        "http.body-decode-failed",
        "2 bytes after the end of the deflate data",
    )


def test_a_bomb_stops_at_the_ratio_a_piece_at_a_time() -> None:
    """64 MiB of zeros in 64 KB of gzip: stopped once past RATIO_AFTER and 200x, never more than a piece held."""
    bomb = gzip.compress(b"\0" * (64 << 20), compresslevel=9)
    decoder = BodyDecoder(("gzip",), 200.0)
    sizes = [len(piece) for piece in decoder.feed(bomb)]
    assert max(sizes) <= PIECE
    assert decoder.problem is not None and decoder.problem.name is AnomalyName.HTTP_BODY_INFLATE_LIMIT
    assert RATIO_AFTER < decoder.decoded <= 200 * len(bomb) + PIECE
    assert list(decoder.feed(bomb)) == []  # stopped: later bytes are ignored


# -- bodies through the capture's HTTP layer ----------------------------------------------------------------


def _exchange(request: bytes, response: bytes) -> list[tuple[Any, ...]]:
    sessions = Sessions("cap.pcapng", Vantage.WIRE)
    http = HttpCapture(sessions)
    conn = Conn(0, TcpConnection(("10.0.0.1", 50000), ("10.0.0.2", 80)))
    conn.kind = ConnKind.HTTP
    for frame, (from_client, data) in enumerate(
        [(True, request), *((False, response[at : at + 40]) for at in range(0, len(response), 40))]
    ):
        sessions.frame = frame + 1
        http.bytes(conn, from_client, data)
    out: list[tuple[Any, ...]] = []
    for e in [*sessions.out, *sessions.waiting()]:
        if isinstance(e, MessageEvent):
            out.append((e.origin.frame, e.message.kind.value, e.message.id))
        elif isinstance(e, Anomaly):
            out.append((e.origin.frame, e.name.value, e.request_id, e.reply_unread))
    return out


CALL = b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{}}}'


def _post(body: bytes, coding: str | None = None) -> bytes:
    head = b"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nMcp-Session-Id: s1\r\n"
    head += f"Content-Encoding: {coding}\r\n".encode() if coding else b""
    return head + f"Content-Length: {len(body)}\r\n\r\n".encode() + body


def _sse(stream: bytes, coding: str) -> bytes:
    head = f"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: {coding}\r\n"
    return head.encode() + f"Content-Length: {len(stream)}\r\n\r\n".encode() + stream


def test_an_sse_stream_flushed_per_event_is_read_event_by_event() -> None:
    progress = b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}'
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    stream = packer.compress(b"data: " + progress + b"\n\n") + packer.flush(zlib.Z_SYNC_FLUSH)
    stream += packer.compress(b"data: " + BODY + b"\n\n") + packer.flush()
    # the response in 40-byte frames from 2: the 97-byte head ends in frame 4, the first event's 99 gzip bytes
    # (flushed) in frame 6, the last event's 70 in frame 8: each read at the frame that completes it
    assert _exchange(_post(CALL), _sse(stream, "gzip")) == [
        (1, "request", 2),
        (6, "notification", None),
        (8, "result", 2),
    ]


def test_an_unread_sse_coding_blinds_the_reply_and_nothing_else() -> None:
    assert _exchange(_post(CALL), _sse(b"\x1b\x00\x00", "zstd")) == [
        (1, "request", 2),
        (4, "http.body-not-decoded", 2, True),  # at the head: no sse.partial-event for bytes never decoded
    ]


def test_a_gzip_request_body_is_decoded_and_an_unreadable_one_named() -> None:
    reply = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 38\r\n\r\n"
    reply += b'{"jsonrpc":"2.0","id":2,"result":{}}  '
    assert _exchange(_post(gzip.compress(CALL), "gzip"), reply) == [(1, "request", 2), (4, "result", 2)]
    assert _exchange(_post(b"\x28\xb5\x2f\xfd", "zstd"), reply) == [(1, "http.body-not-decoded", None, False)]


def test_a_har_body_kept_still_gzip_is_inflated_and_a_broken_one_named() -> None:
    """An exporter without the decoder keeps the bytes as they came (base64); text that is already decoded
    (every browser, mitmproxy) is left as it is whatever the header says."""
    reply = b'{"jsonrpc":"2.0","id":2,"result":{}}'
    content = {"mimeType": "application/json", "encoding": "base64"}
    response = {"status": 200, "headers": [{"name": "Content-Encoding", "value": "gzip"}], "content": content}
    entry = {"startedDateTime": "2026-01-01T00:00:00Z", "request": {"method": "POST", "url": "http://h/mcp"}}
    entry["response"] = response
    content["text"] = base64.b64encode(gzip.compress(reply)).decode()
    assert har_parse(entry, 0, 1).response_body == reply.decode()
    content["text"] = base64.b64encode(reply).decode()
    assert har_parse(entry, 0, 1).response_body == reply.decode()
    content["text"] = base64.b64encode(gzip.compress(reply)[:-3]).decode()
    with pytest.raises(EntryProblem, match="ends before its gzip data does"):
        har_parse(entry, 0, 1)


def test_a_gzip_body_cut_by_the_server_says_both_counts() -> None:
    """Content-Length counts the encoded bytes: a cut names the decoded bytes and the encoded ones."""
    body = gzip.compress(BODY)
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
    sessions = Sessions("cap.pcapng", Vantage.WIRE)
    http = HttpCapture(sessions)
    conn = Conn(0, TcpConnection(("10.0.0.1", 50000), ("10.0.0.2", 80)))
    conn.kind = ConnKind.HTTP
    http.bytes(conn, True, _post(CALL))
    http.bytes(conn, False, head + f"Content-Length: {len(body)}\r\n\r\n".encode() + body[:40])
    http.tcp(conn, [Closed(False, 3, None)])
    (cut,) = [e for e in sessions.out if isinstance(e, Anomaly)]
    assert (cut.name, cut.request_id, cut.reply_unread) == (AnomalyName.HTTP_BODY_TRUNCATED, 2, True)
    assert cut.detail.startswith("tcp0/0: the server closed the connection after ")
    assert cut.detail.endswith(
        f" response body bytes (decoded from 40 of the {len(body)} announced encoded); its JSON-RPC reply is lost"
    )
