"""Hostile HTTP/2 through the passive reader (`readers/http2.py`): floods, HPACK bombs, CONTINUATION
floods, oversized frames, window overflows, stream ids reused or going backwards, bad padding. Each
gives one bounded event naming the HTTP/2 frame (a connection error stops that direction, a stream
error only names the stream, a flood stops the direction), never an exception, and what h2 resets by
itself is never taken for the peer's RST_STREAM."""

from __future__ import annotations

import time
from typing import Any

import h2.connection
import pytest
from cancelwire.readers.http import http2, http2_bounds
from cancelwire.readers.http.http1 import ParseError, RequestEnd, RequestHead, ResponseData
from cancelwire.readers.http.http2 import Http2Connection
from cancelwire.readers.http.http2_events import Flood, StreamError
from h2.config import H2Configuration
from hpack import Encoder
from hyperframe import frame as hf
from test_http2 import BODY, REQUEST, SSE, Wire, kinds


def _preface() -> bytes:
    client = h2.connection.H2Connection(H2Configuration(client_side=True))
    client.initiate_connection()
    return client.data_to_send()


def _headers(sid: int, end_stream: bool = True, block: bytes | None = None) -> bytes:
    frame = hf.HeadersFrame(sid, block if block is not None else Encoder().encode(REQUEST))
    frame.flags.add("END_HEADERS")
    if end_stream:
        frame.flags.add("END_STREAM")
    return frame.serialize()


def _ping() -> bytes:
    return hf.PingFrame(0, b"12345678").serialize()


def _settings() -> bytes:
    return hf.SettingsFrame(0, {hf.SettingsFrame.INITIAL_WINDOW_SIZE: 100}).serialize()


def _priority() -> bytes:
    return hf.PriorityFrame(1, depends_on=0, stream_weight=16).serialize()


def _window(sid: int, delta: int = 1) -> bytes:
    return hf.WindowUpdateFrame(sid, window_increment=delta).serialize()


def _client(data: bytes) -> list[Any]:
    return Http2Connection().feed_client(_preface() + data)


@pytest.mark.parametrize(
    ("frame", "label"),
    [(_ping, "PING"), (_settings, "SETTINGS"), (_priority, "PRIORITY"), (lambda: _window(0), "WINDOWUPDATE")],
)
def test_a_control_frame_flood_is_one_flood_event_and_the_direction_stops(
    frame: Any, label: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(http2_bounds, "MAX_IDLE_FRAMES", 20)
    reader = Http2Connection()
    kind = {"PING": "PingFrame", "SETTINGS": "SettingsFrame", "PRIORITY": "PriorityFrame"}.get(
        label, "WindowUpdateFrame"
    )
    sid = 1 if label == "PRIORITY" else 0
    counts = "21 SETTINGS" if label == "SETTINGS" else f"20 {label}, 1 SETTINGS"  # the preface's SETTINGS counts
    assert reader.feed_client(_preface() + frame() * 100) == [
        Flood(
            True,
            f"{kind} on stream {sid}: 21 frames that carry no request or response ({counts}) against 0 "
            "HEADERS/DATA frames on the connection (limit 20 more than twice that, and 330 more a second)",
        )
    ]
    assert reader.client_broken
    assert reader.feed_client(_headers(1)) == []  # not read further


def test_a_million_pings_are_refused_after_the_bound_in_bounded_time() -> None:
    """The default bound (10 000 idle frames) on a flood of a million PINGs in 64 KiB pieces, as TCP
    delivers them: one event, and the rest costs nothing (generous bound: a loaded 2-core machine)."""
    reader = Http2Connection()
    flood = _ping() * 3855  # 65535 bytes
    started = time.process_time()
    out = reader.feed_client(_preface())
    for _ in range(260):
        out += reader.feed_client(flood)
    assert kinds(out) == [("Flood", None)]
    assert out[0].detail.startswith("PingFrame on stream 0: 10001 frames that carry no request or response (10000 PING")
    assert time.process_time() - started < 20


def test_a_client_reading_a_long_stream_with_window_updates_is_no_flood(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two WINDOW_UPDATEs per DATA frame read (stream and connection), as h2 clients send them."""
    monkeypatch.setattr(http2_bounds, "MAX_IDLE_FRAMES", 10)
    wire = Wire()
    wire.post(1)
    wire.respond(1)
    for i in range(100):
        wire.server.send_data(1, b"data: %d %s\n\n" % (i, b"x" * 20))
        wire.pump()
        wire.client.increment_flow_control_window(40)
        wire.client.increment_flow_control_window(40, 1)
        wire.pump()
    assert not any(isinstance(e, Flood) for e in wire.seen)
    assert sum(isinstance(e, ResponseData) for e in wire.seen) == 100


def test_a_stream_of_tiny_data_frames_is_a_flood(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http2_bounds, "MAX_IDLE_FRAMES", 50)
    wire = Wire()
    wire.post(1)
    wire.respond(1)
    out = wire.reader.feed_server(hf.DataFrame(1, b"x").serialize() * 1000)
    assert kinds(out) == [("ResponseData", 1)] * 54 + [("Flood", None)]
    assert out[-1].detail == (
        "DataFrame on stream 1: 57 frames that carry no request or response (55 DATA under 16 bytes, 2 SETTINGS) "
        "against 3 HEADERS/DATA frames on the connection (limit 50 more than twice that, and 330 more a second)"
    )


def test_empty_data_frames_count_as_a_flood(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http2_bounds, "MAX_IDLE_FRAMES", 30)
    out = _client(_headers(1, end_stream=False) + hf.DataFrame(1, b"").serialize() * 100)
    assert kinds(out) == [("RequestHead", 1), ("Flood", None)]


def test_a_continuation_flood_is_refused_by_h2_after_64_frames() -> None:
    out = _client(hf.HeadersFrame(1, b"\x83").serialize() + hf.ContinuationFrame(1, b"").serialize() * 100)
    assert out == [
        ParseError(True, "ContinuationFrame on stream 1: ProtocolError: Too many continuation frames received.")
    ]


def test_a_header_block_spread_over_continuations_is_bounded_in_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Frames of a large announced size, each under it, never ending the block: refused once their bytes
    pass the decoded-list bound, not after 64 frames of up to 1 MiB each."""
    monkeypatch.setattr(http2_bounds, "MAX_HEADER_LIST_BYTES", 1000)
    pieces = hf.HeadersFrame(1, b"\x00" * 400).serialize() + hf.ContinuationFrame(1, b"\x00" * 400).serialize() * 2
    assert _client(pieces) == [
        ParseError(
            True,
            "framing: LimitExceeded: a header block of 1200 bytes in 3 frames without END_HEADERS (limit 1000 bytes)",
        )
    ]


def test_an_hpack_bomb_of_one_large_entry_referenced_many_times_is_refused() -> None:
    """A 3000-byte value indexed once, then referenced 30 times: 90 KB decoded from 40 bytes."""
    encoder = Encoder()
    first = encoder.encode([*REQUEST, ("x-bomb", "b" * 3000)])
    bomb = encoder.encode([*REQUEST, *[("x-bomb", "b" * 3000)] * 30])
    assert len(bomb) < 50
    out = _client(_headers(1, block=first) + _headers(3, block=bomb))
    assert kinds(out) == [("RequestHead", 1), ("RequestEnd", 1), ("ParseError", 3)]
    assert out[-1].detail == (
        "HeadersFrame on stream 3: DenialOfServiceError: Oversized header block: A header list larger than "
        f"{http2_bounds.MAX_HEADER_LIST_BYTES} has been received "
        f"(limit {http2_bounds.MAX_HEADER_LIST_BYTES} bytes decoded)"
    )


def test_a_dynamic_table_size_update_past_the_setting_is_refused() -> None:
    """The encoder may not grow the table past what the decoder's side allowed (4096 by default)."""
    update = b"\x3f\xe1\xff\x03"  # dynamic table size update to 65536
    out = _client(_headers(1, block=update + Encoder().encode(REQUEST)))
    assert out == [
        ParseError(
            True,
            "HeadersFrame on stream 1: ProtocolError: Error decoding header block: Encoder exceeded max "
            "allowable table size",
            1,
        )
    ]


def test_a_frame_over_the_max_size_is_named_before_its_body_arrives() -> None:
    announced = (2 << 20).to_bytes(3, "big") + b"\x00\x00\x00\x00\x00\x01"  # DATA, 2 MiB, stream 1
    assert _client(_headers(1, end_stream=False) + announced) == [
        RequestHead(1, "POST", "/mcp", tuple(REQUEST), "2"),
        ParseError(
            True, "DataFrame on stream 1: FrameTooLargeError: Received overlong frame: length 2097152, max 16384"
        ),
    ]


def test_a_stream_window_past_the_maximum_is_a_stream_error_and_the_connection_goes_on() -> None:
    wire = Wire()
    wire.client.send_headers(1, REQUEST)
    wire.pump()
    out = wire.reader.feed_client(_window(1, 2**31 - 1) * 2)
    assert out == [StreamError(1, True, "WindowUpdateFrame on stream 1: the stream must be reset (FLOW_CONTROL_ERROR)")]
    assert wire.post(3) == [RequestHead(3, "POST", "/mcp", tuple(REQUEST), "2"), RequestEnd(3, BODY, False, len(BODY))]


def test_the_connection_window_past_the_maximum_is_a_connection_error() -> None:
    assert _client(_window(0, 2**31 - 1) * 2) == [
        ParseError(
            True,
            "WindowUpdateFrame on stream 0: FlowControlError: May not increment flow control window past 2147483647",
        )
    ]


def test_a_stream_id_going_backwards_is_a_connection_error() -> None:
    out = _client(_headers(5) + _headers(3))
    assert kinds(out) == [("RequestHead", 5), ("RequestEnd", 5), ("ParseError", 3)]
    assert out[-1].detail == "HeadersFrame on stream 3: StreamIDTooLowError: StreamIDTooLowError: 3 is lower than 5"


def test_a_stream_id_reused_is_a_stream_error_not_the_clients_reset() -> None:
    out = _client(_headers(1) + _headers(1))
    assert out[2:] == [StreamError(1, True, "HeadersFrame on stream 1: the stream must be reset (STREAM_CLOSED)")]


def test_invalid_padding_names_the_data_frame() -> None:
    bad = b"\x00\x00\x02\x00\x08\x00\x00\x00\x01\x05x"  # DATA, PADDED, pad length 5 in a 2-byte frame
    assert _client(_headers(1, end_stream=False) + bad)[-1] == ParseError(
        True, "DataFrame on stream 1: InvalidPaddingError: Padding is too long."
    )


def test_request_bodies_held_at_once_are_bounded_per_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    """Memory grows with open streams only up to one body's bound: a stream past it is cut (and said)."""
    monkeypatch.setattr(http2, "MAX_BODY_BYTES", 100)
    wire = Wire()
    for sid in (1, 3):
        wire.client.send_headers(sid, REQUEST)
        wire.client.send_data(sid, b"a" * 80)
    wire.client.end_stream(3)
    wire.client.end_stream(1)
    out = [e for e in wire.pump() if isinstance(e, RequestEnd)]
    assert out == [RequestEnd(3, b"", True, 80), RequestEnd(1, b"a" * 80, False, 80)]
    wire.post(5, b"b" * 90)  # both released: room again
    assert wire.seen[-1] == RequestEnd(5, b"b" * 90, False, 90)


def test_a_server_that_never_reads_does_not_keep_bodies_of_streams_it_ended(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http2, "MAX_BODY_BYTES", 100)
    wire = Wire()
    wire.client.send_headers(1, REQUEST)
    wire.client.send_data(1, b"a" * 80)
    wire.pump()
    wire.server.send_headers(1, SSE, end_stream=True)  # answered (and ended) before the request ended
    wire.pump()
    wire.post(3, b"b" * 90)
    assert wire.seen[-1] == RequestEnd(3, b"b" * 90, False, 90)
