"""The HTTP/2 layer of the capture reader (`readers/http2.py`) on crafted frames: real h2 endpoints write
the bytes (as a client and a server would put them on the wire), the passive reader reads them, and
hostile bytes (no preface, bad HPACK, huge header blocks, garbage, too many streams) become one
ParseError naming the frame, never an exception."""

from __future__ import annotations

from typing import Any

import h2.connection
import h2.events
import pytest
from cancelwire.readers.http import http2, http2_bounds
from cancelwire.readers.http.http1 import ParseError, RequestEnd, RequestHead, ResponseData, ResponseEnd, ResponseHead
from cancelwire.readers.http.http2 import Http2Connection
from cancelwire.readers.http.http2_events import GoAway, StreamReset, WindowExhausted
from h2.config import H2Configuration
from h2.errors import ErrorCodes
from h2.settings import SettingCodes
from hypothesis import given, settings
from hypothesis import strategies as st

REQUEST = [(":method", "POST"), (":scheme", "http"), (":authority", "mcp.test"), (":path", "/mcp")]
SSE = [(":status", "200"), ("content-type", "text/event-stream")]
BODY = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}}'


class Wire:
    """A real h2 client and server talking through the passive reader, which sees every byte."""

    def __init__(self, client_settings: dict[int, int] | None = None) -> None:
        self.client = h2.connection.H2Connection(H2Configuration(client_side=True))
        self.server = h2.connection.H2Connection(H2Configuration(client_side=False))
        self.reader = Http2Connection()
        self.client.initiate_connection()
        if client_settings:
            self.client.update_settings(client_settings)
        self.server.initiate_connection()
        self.seen: list[Any] = []
        self.up, self.down = bytearray(), bytearray()
        """Every byte each way, as recorded."""
        self.pump()

    def pump(self) -> list[Any]:
        """Deliver what both endpoints have to send until neither has anything; what the reader said."""
        out: list[Any] = []
        while True:
            up, down = self.client.data_to_send(), self.server.data_to_send()
            if not up and not down:
                break
            self.up += up
            self.down += down
            if up:
                out += self.reader.feed_client(up)
                for event in self.server.receive_data(up):
                    if isinstance(event, h2.events.DataReceived):
                        self.server.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            if down:
                out += self.reader.feed_server(down)
                self.client.receive_data(down)
        self.seen += out
        return out

    def post(self, sid: int, body: bytes = BODY, headers: list[tuple[str, str]] | None = None) -> list[Any]:
        self.client.send_headers(sid, headers or REQUEST)
        self.client.send_data(sid, body, end_stream=True)
        return self.pump()

    def respond(self, sid: int, data: bytes = b"", end: bool = False) -> list[Any]:
        self.server.send_headers(sid, SSE)
        if data or end:
            self.server.send_data(sid, data, end_stream=end)
        return self.pump()


def kinds(events: list[Any]) -> list[tuple[str, int | None]]:
    return [(type(e).__name__, getattr(e, "exchange", None)) for e in events]


def test_a_request_and_its_sse_response_read_as_http_events() -> None:
    wire = Wire()
    assert wire.post(1) == [
        RequestHead(1, "POST", "/mcp", tuple(REQUEST), "2"),
        RequestEnd(1, BODY, False, len(BODY)),
    ]
    event = b'event: message\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\n\n'
    assert wire.respond(1, event, end=True) == [
        ResponseHead(1, 200, "", tuple(SSE)),
        ResponseData(1, event),
        ResponseEnd(1),
    ]
    assert wire.reader.open_exchanges() == []


def test_interleaved_streams_keep_their_own_bodies() -> None:
    wire = Wire()
    wire.client.send_headers(1, REQUEST)
    wire.client.send_headers(3, REQUEST)
    wire.client.send_data(3, b'{"b":', end_stream=False)
    wire.client.send_data(1, b'{"a":1}', end_stream=True)
    wire.client.send_data(3, b"3}", end_stream=True)
    out = wire.pump()
    assert [e for e in out if isinstance(e, RequestEnd)] == [
        RequestEnd(1, b'{"a":1}', False, 7),
        RequestEnd(3, b'{"b":3}', False, 7),
    ]
    wire.server.send_headers(3, SSE)
    wire.server.send_headers(1, SSE)
    wire.server.send_data(1, b"one", end_stream=False)
    wire.server.send_data(3, b"three", end_stream=True)
    wire.server.send_data(1, b"!", end_stream=True)
    assert kinds(wire.pump()) == [
        ("ResponseHead", 3),
        ("ResponseHead", 1),
        ("ResponseData", 1),
        ("ResponseData", 3),
        ("ResponseEnd", 3),
        ("ResponseData", 1),
        ("ResponseEnd", 1),
    ]


def test_a_client_reset_is_named_and_the_servers_frames_after_it_are_still_read() -> None:
    wire = Wire()
    wire.post(1)
    wire.respond(1, b"data: 1\n\n")
    wire.client.reset_stream(1, ErrorCodes.CANCEL)
    assert wire.pump() == [StreamReset(1, True, "CANCEL")]
    # a server that ignores the reset: the frame is on the wire (its h2 would refuse, so raw bytes)
    from hyperframe.frame import DataFrame

    late = DataFrame(1, b"data: 2\n\n")
    late.flags.add("END_STREAM")
    assert wire.reader.feed_server(late.serialize()) == [ResponseData(1, b"data: 2\n\n"), ResponseEnd(1)]


def test_a_server_reset_ends_the_exchange() -> None:
    wire = Wire()
    wire.post(1)
    wire.server.reset_stream(1, ErrorCodes.INTERNAL_ERROR)
    assert wire.pump() == [StreamReset(1, False, "INTERNAL_ERROR")]
    assert wire.reader.open_exchanges() == []


def test_goaway_is_named_with_its_code_and_last_stream() -> None:
    wire = Wire()
    wire.post(1)
    wire.server.close_connection(ErrorCodes.NO_ERROR, last_stream_id=1)
    assert wire.pump() == [GoAway(False, 1, "NO_ERROR")]
    wire.client.close_connection(ErrorCodes.CANCEL)
    assert wire.pump() == [GoAway(True, 0, "CANCEL")]


def test_a_client_that_stops_granting_window_stalls_the_stream_once_per_episode() -> None:
    wire = Wire({SettingCodes.INITIAL_WINDOW_SIZE: 100})
    wire.post(1)
    wire.respond(1)
    wire.server.send_data(1, b"x" * 60)
    assert kinds(wire.pump()) == [("ResponseData", 1)]
    wire.server.send_data(1, b"y" * 40)
    assert wire.pump() == [ResponseData(1, b"y" * 40), WindowExhausted(1, 0, 65535 - 100)]
    wire.client.increment_flow_control_window(10, 1)  # the client reads a little
    assert wire.pump() == []
    wire.server.send_data(1, b"z" * 10)
    assert wire.pump() == [ResponseData(1, b"z" * 10), WindowExhausted(1, 0, 65535 - 110)]


def test_data_that_ends_the_stream_on_the_last_byte_of_the_window_is_no_stall() -> None:
    wire = Wire({SettingCodes.INITIAL_WINDOW_SIZE: 100})
    wire.post(1)
    wire.respond(1)
    wire.server.send_data(1, b"x" * 100, end_stream=True)
    assert kinds(wire.pump()) == [("ResponseData", 1), ("ResponseEnd", 1)]


def test_missing_preface_is_one_parse_error_and_that_direction_stops() -> None:
    reader = Http2Connection()
    client = h2.connection.H2Connection(H2Configuration(client_side=True))
    client.initiate_connection()
    client.send_headers(1, REQUEST, end_stream=True)
    without = client.data_to_send()[len(http2.PREFACE) :]
    assert reader.feed_client(without) == [ParseError(True, "framing: ProtocolError: Invalid HTTP/2 preamble.")]
    assert reader.client_broken
    assert reader.feed_client(http2.PREFACE) == []


def test_bad_hpack_names_the_headers_frame_and_its_stream() -> None:
    wire = Wire()
    wire.post(1)
    from hyperframe.frame import HeadersFrame

    bad = HeadersFrame(1, b"\xff\xff\x0f")  # indexed field 2174: no table holds it
    bad.flags.add("END_HEADERS")
    out = wire.reader.feed_server(bad.serialize())
    assert out == [
        ParseError(
            False,
            "HeadersFrame on stream 1: ProtocolError: Error decoding header block: Invalid table index 2174",
            1,
        )
    ]
    assert wire.reader.server_broken and not wire.reader.client_broken


def test_a_header_block_past_the_limit_is_refused_not_decoded() -> None:
    wire = Wire()
    huge = [*REQUEST, ("x-padding", "p" * (http2_bounds.MAX_HEADER_LIST_BYTES + 1))]
    wire.client.send_headers(1, huge, end_stream=True)
    out = wire.reader.feed_client(wire.client.data_to_send())
    assert len(out) == 1 and isinstance(out[0], ParseError)
    assert out[0].detail.startswith("HeadersFrame on stream 1: DenialOfServiceError: Oversized header block")
    assert out[0].detail.endswith(f"(limit {http2_bounds.MAX_HEADER_LIST_BYTES} bytes decoded)")


def test_garbage_instead_of_frames_is_a_parse_error() -> None:
    wire = Wire()
    out = wire.reader.feed_server(b"HTTP/1.1 200 OK\r\n\r\n")
    assert out == [ParseError(False, "framing: FrameTooLargeError: Received overlong frame: length 4740180, max 16384")]


def test_more_open_streams_than_the_bound_is_a_parse_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http2, "MAX_OPEN_STREAMS", 2)
    wire = Wire()
    for sid in (1, 3, 5):
        wire.client.send_headers(sid, REQUEST, end_stream=True)
    out = wire.reader.feed_client(wire.client.data_to_send())
    assert kinds(out) == [
        ("RequestHead", 1),
        ("RequestEnd", 1),
        ("RequestHead", 3),
        ("RequestEnd", 3),
        ("ParseError", 5),
    ]
    assert out[-1].detail == "HeadersFrame on stream 5: TooManyStreamsError: Max inbound streams is 2, 2 open"


def test_streams_the_client_reset_count_until_the_server_ends_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server may go on writing a reset stream, so it stays open here (not in the server's mirror):
    our own bound catches a client that resets streams the server never ends."""
    monkeypatch.setattr(http2, "MAX_OPEN_STREAMS", 2)
    wire = Wire()
    for sid in (1, 3):
        wire.client.send_headers(sid, REQUEST, end_stream=True)
        wire.client.reset_stream(sid, ErrorCodes.CANCEL)
    wire.client.send_headers(5, REQUEST, end_stream=True)
    out = wire.reader.feed_client(wire.client.data_to_send())
    assert out[-1] == ParseError(True, "HeadersFrame on stream 5: LimitExceeded: more than 2 streams open at once", 5)
    assert wire.reader.open_exchanges() == [1, 3]


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=400), st.binary(max_size=400))
def test_arbitrary_bytes_give_only_events(up: bytes, down: bytes) -> None:
    reader = Http2Connection()
    out = reader.feed_client(http2.PREFACE + up) + reader.feed_server(down) + reader.feed_client(up)
    allowed = (
        RequestHead,
        RequestEnd,
        ResponseHead,
        ResponseData,
        ResponseEnd,
        ParseError,
        StreamReset,
        GoAway,
        WindowExhausted,
    )
    assert all(isinstance(e, allowed) for e in out)
    assert sum(isinstance(e, ParseError) for e in out) <= 2  # at most one per direction


def _recorded() -> tuple[bytes, bytes]:
    """The two byte streams of a whole exchange (request, SSE reply, a reset, GOAWAY) as h2 wrote them."""
    wire = Wire({SettingCodes.HEADER_TABLE_SIZE: 8192})
    wire.post(1)
    wire.respond(1, b"data: 1\n\n")
    wire.client.reset_stream(1, ErrorCodes.CANCEL)
    wire.post(3)
    wire.respond(3, end=True)
    wire.client.close_connection()
    wire.pump()
    return bytes(wire.up), bytes(wire.down)


UP, DOWN = _recorded()


@settings(max_examples=200, deadline=None)
@given(st.integers(0, len(UP) - 1), st.integers(0, len(DOWN) - 1), st.integers(1, 255), st.integers(1, 64))
def test_real_frames_with_one_byte_changed_give_only_events(at_up: int, at_down: int, xor: int, cut: int) -> None:
    up = bytearray(UP)
    up[at_up] ^= xor
    down = bytearray(DOWN)
    down[at_down] ^= xor
    reader = Http2Connection()
    out = []
    for i in range(0, max(len(up), len(down)), cut):  # in pieces of any size, interleaved
        out += reader.feed_client(bytes(up[i : i + cut])) + reader.feed_server(bytes(down[i : i + cut]))
    assert sum(isinstance(e, ParseError) for e in out) <= 2
    assert all(not isinstance(e, Exception) for e in out)
