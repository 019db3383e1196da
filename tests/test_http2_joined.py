"""A capture that joins an HTTP/2 connection after its preface (`readers/http2_joined.py`): real h2
endpoints talk, the reader sees only what came after a point, and says what it cannot read (never a
wrong header): blocks that use HPACK entries from before, streams begun before; bodies whose head is
unknown are read by their first bytes; resets, GOAWAY and stream ends still count. Whole captures cut
with editcap are in tests/test_http2_captures.py and tests/rules/http2-capture-joined-mid-connection/."""

from __future__ import annotations

from typing import Any

import pytest
from cancelwire.readers.http import http2_joined
from cancelwire.readers.http.http1 import ParseError, RequestEnd, RequestHead, ResponseEnd, ResponseHead
from cancelwire.readers.http.http2_events import GoAway, Joined, StreamReset
from cancelwire.readers.http.http2_joined import JoinedHttp2Connection, starts_with_frames
from h2.errors import ErrorCodes
from hyperframe.frame import DataFrame, GoAwayFrame, PingFrame, SettingsFrame
from hypothesis import given, settings
from hypothesis import strategies as st
from test_http2 import BODY, REQUEST, SSE, Wire, kinds

EVENT = b'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{}}\n\n'
START = Joined(None, True, "the capture starts in the middle of an HTTP/2 connection")


def _joined_after_first_call() -> tuple[Wire, JoinedHttp2Connection]:
    """Stream 1 answered in full (HPACK entries added both ways), then a reader joins."""
    wire = Wire()
    wire.post(1, headers=REQUEST)
    wire.respond(1, EVENT, end=True)
    return wire, JoinedHttp2Connection()


def _adopted(sid: int, frame: str) -> list[Any]:
    """What a server frame on a stream begun before the capture gives first: its unknown request, named."""
    why = f"{frame} on stream {sid}: the stream began before the capture (its request is not in it): its bodies"
    why += " are not read"
    return [RequestHead(sid, "", "", (), "2"), RequestEnd(sid, b"", False, 0), Joined(sid, False, why)]


def _feed(reader: JoinedHttp2Connection, wire: Wire) -> list[Any]:
    up, down = wire.client.data_to_send(), wire.server.data_to_send()
    wire.server.receive_data(up)
    wire.client.receive_data(down)
    return reader.feed_client(up) + reader.feed_server(down)


@pytest.mark.parametrize(
    ("data", "frames"),
    [
        (SettingsFrame(0, {3: 100}).serialize() + PingFrame(0, b"12345678").serialize(), True),
        (DataFrame(1, b"x" * 100).serialize(), True),  # one frame that fills the segment
        (DataFrame(1, b"x" * 100).serialize()[:50], False),  # one frame cut by the segment's end
        (DataFrame(1, b"x").serialize() + DataFrame(3, b"y" * 40).serialize()[:20], True),  # two, the last cut
        (b"POST /mcp HTTP/1.1\r\nHost: x\r\n\r\n", False),
        (b"\x17\x03\x03\x00\x20" + b"\x00" * 32, False),  # TLS application data
        (b'{"jsonrpc":"2.0"}', False),
        (b"\x00\x00\x08\x06\x00\x00\x00\x00\x01" + b"\x00" * 8, False),  # PING on a stream
        (b"\x00\x00\x04\x03\x00\x00\x00\x00\x00" + b"\x00" * 4, False),  # RST_STREAM on the connection
    ],
)
def test_a_segment_that_starts_with_whole_frames_is_told_from_other_bytes(data: bytes, frames: bool) -> None:
    assert starts_with_frames(data) is frames


def test_a_request_whose_block_uses_older_entries_is_named_and_its_body_still_read() -> None:
    wire, reader = _joined_after_first_call()
    wire.client.send_headers(3, REQUEST)
    wire.client.send_data(3, BODY, end_stream=True)
    out = _feed(reader, wire)
    assert out[0] == START
    assert isinstance(out[1], Joined) and out[1].exchange == 3 and out[1].from_client
    assert out[1].detail.startswith("HeadersFrame on stream 3: its header block refers to HPACK entries from before")
    assert out[2:] == [RequestHead(3, "", "", (), "2"), RequestEnd(3, BODY, False, len(BODY))]


def test_entries_added_after_the_join_decode_exactly() -> None:
    """A block of static entries and new literals decodes, and the next block that indexes them does too."""
    wire, reader = _joined_after_first_call()
    fresh = [(":method", "POST"), (":scheme", "http"), (":authority", "other.test"), (":path", "/other")]
    wire.client.send_headers(3, fresh, end_stream=True)
    _feed(reader, wire)
    wire.client.send_headers(5, fresh, end_stream=True)
    out = _feed(reader, wire)
    assert out[0] == RequestHead(5, "POST", "/other", tuple(fresh), "2")


def test_a_response_whose_head_is_unknown_is_read_by_its_first_bytes() -> None:
    wire, reader = _joined_after_first_call()
    wire.client.send_headers(3, REQUEST)
    wire.client.send_data(3, BODY, end_stream=True)
    _feed(reader, wire)
    wire.server.send_headers(3, SSE)  # the same head as stream 1's: all from the table
    wire.server.send_data(3, EVENT, end_stream=True)
    out = _feed(reader, wire)
    assert kinds(out) == [("Joined", 3), ("ResponseHead", 3), ("ResponseData", 3), ("ResponseEnd", 3)]
    assert out[1] == ResponseHead(3, 200, "", ((":status", "200"), ("content-type", "text/event-stream")))


def test_a_stream_begun_before_the_capture_is_named_its_body_unread_and_its_reset_counted() -> None:
    wire, reader = _joined_after_first_call()
    wire.client.send_headers(3, REQUEST, end_stream=True)
    wire.pump()  # before the capture
    wire.server.send_headers(3, SSE)
    wire.pump()
    wire.server.send_data(3, EVENT)
    assert reader.feed_server(wire.server.data_to_send()) == [
        Joined(None, False, "the capture starts in the middle of an HTTP/2 connection"),
        *_adopted(3, "DataFrame"),
    ]
    wire.client.reset_stream(3, ErrorCodes.CANCEL)
    assert reader.feed_client(wire.client.data_to_send()) == [StreamReset(3, True, "CANCEL")]


def test_server_frames_of_a_stream_begun_before_end_it_without_reading_it() -> None:
    wire, reader = _joined_after_first_call()
    wire.client.send_headers(3, REQUEST, end_stream=True)
    wire.server.receive_data(wire.client.data_to_send())
    wire.server.send_headers(3, SSE)
    wire.server.send_data(3, EVENT, end_stream=True)
    out = reader.feed_server(wire.server.data_to_send())
    assert out == [
        Joined(None, False, "the capture starts in the middle of an HTTP/2 connection"),
        Joined(
            3,
            False,
            "HeadersFrame on stream 3: its header block refers to HPACK entries from before the capture "
            "(Invalid table index 62)",
        ),
        *_adopted(3, "HeadersFrame"),
        ResponseEnd(3),
    ]
    assert reader.feed_server(DataFrame(3, EVENT).serialize()) == []  # it ended: nothing reopens it


def test_goaway_counts_and_settings_and_pings_are_only_counted() -> None:
    reader = JoinedHttp2Connection()
    goaway = GoAwayFrame(0, last_stream_id=7, error_code=0).serialize()
    assert reader.feed_server(
        SettingsFrame(0, {4: 1}).serialize() + PingFrame(0, b"12345678").serialize() + goaway
    ) == [
        Joined(None, False, "the capture starts in the middle of an HTTP/2 connection"),
        GoAway(False, 7, "NO_ERROR"),
    ]


def test_a_direction_that_starts_mid_frame_waits_for_a_segment_that_starts_with_frames(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(http2_joined, "MAX_UNSYNCED_BYTES", 100)
    reader = JoinedHttp2Connection()
    assert reader.feed_server(b"tail of an earlier DATA frame") == [
        Joined(None, False, "the capture starts in the middle of an HTTP/2 connection")
    ]
    assert reader.feed_server(DataFrame(1, EVENT).serialize())[0] == Joined(
        None, False, "29 bytes skipped before the first segment that starts with a frame"
    )
    assert reader.feed_client(b"z" * 101) == [
        ParseError(True, "framing: no segment starts with whole HTTP/2 frames in the first 101 bytes")
    ]
    assert reader.client_broken


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=400), st.binary(max_size=400), st.integers(0, 2000), st.integers(1, 255))
def test_any_bytes_from_anywhere_in_a_recording_give_only_events(up: bytes, down: bytes, at: int, xor: int) -> None:
    """Arbitrary bytes, and a real recording joined at any byte with one byte changed: only events, at
    most one connection error per direction, never an exception."""
    wire, _ = _joined_after_first_call()
    wire.post(3)
    wire.respond(3, EVENT, end=True)
    recorded = bytearray(wire.down)
    if recorded:
        recorded[at % len(recorded)] ^= xor
    reader = JoinedHttp2Connection()
    out = reader.feed_client(up) + reader.feed_server(down) + reader.feed_server(bytes(recorded[at % 200 :]))
    assert sum(isinstance(e, ParseError) for e in out) <= 2
    assert all(not isinstance(e, Exception) for e in out)
