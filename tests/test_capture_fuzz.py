"""The capture reader above tshark under hostile segment streams: only events come out, never an
exception (a traceback on a capture is a bug). No tshark needed: frames are fed to the reader's per-frame
step directly, as `tshark_fields.parse_line` would produce them."""

from __future__ import annotations

import gzip
import itertools
from pathlib import Path

from cancelwire.model import Anomaly, MessageEvent, SessionStart, TransportEvent, TransportKind
from cancelwire.readers import InputSource, ReadOptions
from cancelwire.readers.capture.capture_pass import CapturePass
from cancelwire.readers.capture.frames import Frame
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

C, S = ("10.0.0.1", 40000), ("10.0.0.2", 8000)
PIECES = [
    b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n",
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call"}',
    b"GET /sse HTTP/1.1\r\nHost: x\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n",
    b'2c\r\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\n\n\r\n',
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 99\r\n\r\n{}",
    b"0\r\n\r\n",
    b"HTTP/1.1 101 Switching\r\n\r\n",
    b"\x16\x03\x01\x00",
    # Content-Encoding (issue 18): encoded heads, gzip whole, cut, and a small bomb (4 MiB of zeros in 4 KB)
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: 56\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: deflate, br\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\n\r\n",
    b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\nContent-Length: 56\r\n\r\n",
    gzip.compress(b'{"jsonrpc":"2.0","id":1,"result":{}}', mtime=0),
    gzip.compress(b'data: {"jsonrpc":"2.0","id":1,"result":{}}\n\n', mtime=0)[:30],
    gzip.compress(b"\0" * (4 << 20), mtime=0),
]

segments = st.lists(
    st.tuples(
        st.booleans(),  # from the client
        st.integers(0, 400),  # sequence offset
        st.integers(0, 400),  # ack offset
        st.sampled_from([0x10, 0x18, 0x02, 0x12, 0x11, 0x14, 0x04, 0x19]),
        st.one_of(st.sampled_from(PIECES), st.binary(max_size=60), st.just(b"")),
        st.integers(-1, 3),  # window
        st.integers(0, 80),  # extra tcp.len beyond the captured payload (snaplen)
        st.integers(0, 2),  # tcp stream
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(segments, st.sampled_from([(), (8000,)]))
def test_any_segment_stream_gives_only_events(stream: list[tuple], http_ports: tuple[int, ...]) -> None:  # type: ignore[type-arg]
    path = Path("fuzz.pcapng")
    run = CapturePass(InputSource(path.name, path), ReadOptions(http_ports=http_ports))
    out = run.sessions.out
    for number, (from_client, seq, ack, flags, payload, window, extra, tcp_stream) in enumerate(stream, 1):
        src, dst = (C, S) if from_client else (S, C)
        base, other = (1000, 5000) if from_client else (5000, 1000)
        frame = Frame(
            number=number,
            ts=float(number),
            stream=tcp_stream,
            src=src[0],
            dst=dst[0],
            sport=src[1],
            dport=dst[1],
            seq=(base + seq) & 0xFFFFFFFF,
            ack=(other + ack) & 0xFFFFFFFF,
            flags=flags,
            window=window,
            payload=payload,
            length=len(payload) + extra,
            decrypted=(),
        )
        run.sessions.frame, run.sessions.ts = number, frame.ts
        run._frame(frame)
    run._finish()
    assert all(isinstance(e, SessionStart | MessageEvent | TransportEvent | Anomaly) for e in out)
    assert [e.seq for e in out] == sorted(e.seq for e in out)


# -- a direction no longer read, connections at rest (issue 19) ------------------------------------------


def _keepalive_frames(calls: int, cut: list[int], lost: int | None) -> list[Frame]:
    """One HTTP/1.1 keep-alive connection: `calls` tools/call POSTs, each answered as JSON, the answer cut
    into pieces at `cut`; piece `lost` of the whole server byte stream (if any) is missing from the capture,
    and the client's ACK after the next piece covers it."""
    frames: list[Frame] = []
    seq = {True: 1000, False: 5000}

    def segment(from_client: bool, payload: bytes, flags: int = 0x18, *, captured: bool = True) -> None:
        src, dst = (C, S) if from_client else (S, C)
        if captured:
            number = len(frames) + 1
            frames.append(
                Frame(
                    number,
                    float(number),
                    0,
                    src[0],
                    dst[0],
                    src[1],
                    dst[1],
                    seq[from_client],
                    seq[not from_client],
                    flags,
                    65535,
                    payload,
                    len(payload),
                    (),
                )
            )
        seq[from_client] = (seq[from_client] + len(payload) + (1 if flags & 0x02 else 0)) & 0xFFFFFFFF

    segment(True, b"", 0x02)
    segment(False, b"", 0x12)
    piece = 0
    for n in range(1, calls + 1):
        body = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"x"}}' % n
        segment(True, b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        reply = b'{"jsonrpc":"2.0","id":%d,"result":{}}' % n
        answer = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
            len(reply),
            reply,
        )
        bounds = sorted({0, len(answer), *(c % len(answer) for c in cut)})
        for start, end in itertools.pairwise(bounds):
            segment(False, answer[start:end], captured=piece != lost)
            piece += 1
        segment(True, b"", 0x10)  # the client's ACK of everything so far
    return frames


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 4), st.lists(st.integers(0, 200), max_size=3), st.one_of(st.none(), st.integers(0, 15)))
def test_every_request_is_answered_or_its_reply_direction_said_unread(
    calls: int, cut: list[int], lost: int | None
) -> None:
    """Whatever segment of the server's bytes the capture lost, and wherever the answers were cut (the
    connection rests between calls), each request's reply is read, or its exchange is said REPLIES_UNREAD after
    it: silence the reader made is never left to be judged as the server's."""
    path = Path("fuzz.pcapng")
    run = CapturePass(InputSource(path.name, path), ReadOptions())
    for frame in _keepalive_frames(calls, cut, lost):
        run.sessions.frame, run.sessions.ts = frame.number, frame.ts
        run._frame(frame)
    run._finish()
    requests: dict[object, str | None] = {}
    for e in run.sessions.out:
        if isinstance(e, MessageEvent) and e.message.method == "tools/call":
            requests[e.message.id] = e.stream
        elif isinstance(e, MessageEvent) and e.message.method is None:
            requests.pop(e.message.id, None)
        elif isinstance(e, TransportEvent) and e.kind is TransportKind.REPLIES_UNREAD:
            requests = {k: v for k, v in requests.items() if v != e.stream}
    assert requests == {}
    if lost is None:
        assert not any(
            isinstance(e, TransportEvent) and e.kind is TransportKind.REPLIES_UNREAD for e in run.sessions.out
        )
