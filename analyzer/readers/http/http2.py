"""HTTP/2 of one TCP connection of a capture, with the `h2` package, from the connection's two byte streams.

The caller (`capture_http2`) feeds the client→server and server→client bytes in TCP order, as for
HTTP/1.1 (`http1`), and gets back what each feed completed, in the same event types keyed by the
HTTP/2 stream id (`RequestHead` ... `ResponseEnd`, `ParseError`), plus what only HTTP/2 says
(`http2_events`): `StreamReset` (RST_STREAM), `GoAway`, and `WindowExhausted` (the server may not send
more on a stream whose response is open: the client granted no more flow-control window). No I/O, no tshark.

How h2 is used. h2 is a protocol *participant*, so each direction is parsed by the endpoint that
receives it: a server-side `H2Connection` reads the client's bytes (it checks the client preface,
decodes the requests' HPACK) and a client-side one reads the server's bytes. Each mirror is told what
its own endpoint did, so that its state machine follows the real one:

* the requests the client opened (`send_headers` on the client-side mirror), or it would refuse
  the responses on them;
* the streams the server finished or reset (`reset_stream` on the server-side mirror), so the open
  stream count stays true and late client frames on them are ignored as h2 ignores them;
* the SETTINGS each side sent (`update_settings` on its own mirror), which take effect when the
  peer's ACK is read, as they do between the real endpoints: HPACK table size and frame size.

Validation relaxed for a passive observer: flow control is not enforced by the mirrors (their receive
windows are opened to the maximum and every DATA frame is acknowledged at once); the windows the real
peers granted are tracked here instead, which is how a stall is seen. A client reset is *not*
mirrored: the server's frames after it are what the capture must show. Bounds: a header list of at
most `MAX_HEADER_LIST_BYTES` decoded, an HPACK table of at most `MAX_HEADER_TABLE_BYTES`, frames of
at most `MAX_FRAME_BYTES` whatever a peer advertised, `MAX_OPEN_STREAMS` streams at once, request
bodies kept up to `MAX_BODY_BYTES`. Anything h2, HPACK or hyperframe refuses is a `ParseError` naming
the frame, and that direction is not read further (HPACK state is connection-wide).
"""

from __future__ import annotations

import base64
import contextlib
from dataclasses import dataclass, field
from typing import Any

from h2 import events as h2e
from h2.connection import H2Connection
from h2.exceptions import H2Error
from h2.frame_buffer import FrameBuffer
from h2.settings import SettingCodes
from hpack import HPACKError
from hyperframe.exceptions import HyperframeError
from hyperframe.frame import SettingsFrame

from .http1 import (
    MAX_BODY_BYTES,
    Headers,
    ParseError,
    RequestEnd,
    RequestHead,
    ResponseData,
    ResponseEnd,
    ResponseHead,
)
from .http2_bounds import (
    MAX_OPEN_STREAMS,
    Flooded,
    FloodGuard,
    LimitExceeded,
    named,
    pending,
    refuse_long_header_block,
    refuse_oversized,
    stream_of,
    why,
)
from .http2_events import Flood, GoAway, H2Event, StreamError, StreamReset, WindowExhausted, error_name
from .http2_mirror import DEFAULT_WINDOW, mirror, mirror_settings

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
_LIBRARY_ERRORS = (H2Error, HPACKError, HyperframeError)


def looks_http2(data: bytes) -> bool:
    """The client's first bytes are the HTTP/2 connection preface (h2c prior knowledge, or h2 in TLS)."""
    return data.startswith(PREFACE[:14])


def looks_http2_server(data: bytes) -> bool:
    """The server's first bytes are its connection preface, a SETTINGS frame on stream 0 (a server may
    send it before it has read the client's preface)."""
    return len(data) >= 9 and data[3] == 0x4 and data[4] == 0 and data[5:9] == b"\0\0\0\0" and data[0] == 0


@dataclass(slots=True)
class _Stream:
    window: int
    """What the server may still send on the stream (flow control, as the client granted it)."""
    body: bytearray = field(default_factory=bytearray)
    body_size: int = 0
    request_ended: bool = False
    stalled: bool = False
    """Inside a window-exhausted episode (a grant ends it)."""
    started_before: bool = False
    """A capture that joined the connection late saw the stream first by a frame after its request
    HEADERS (`http2_joined`): its request body, if any, is not read."""


class Http2Connection:
    """The HTTP/2 state of one TCP connection; exchanges are numbered by stream id."""

    def __init__(self) -> None:
        self._server = mirror(client_side=False, max_streams=MAX_OPEN_STREAMS)
        """The server's view: reads the client's bytes."""
        self._client = mirror(client_side=True, max_streams=MAX_OPEN_STREAMS)
        """The client's view: reads the server's bytes."""
        self.client_broken = False
        self.server_broken = False
        self._streams: dict[int, _Stream] = {}
        """Streams whose response has not ended (nor been reset by the server), by id."""
        self._initial_window = DEFAULT_WINDOW
        """The client's SETTINGS_INITIAL_WINDOW_SIZE: each new stream's window."""
        self._conn_window = DEFAULT_WINDOW
        """What the server may still send on the connection."""
        self._held_body = 0
        """Request body bytes kept for streams whose request has not ended (all streams: at most
        `MAX_BODY_BYTES`, so memory does not grow with the number of open streams)."""
        self._guard = FloodGuard()

    @classmethod
    def upgraded(cls, settings: str) -> tuple[Http2Connection, list[H2Event]]:
        """The connection after an HTTP/1.1 `Upgrade: h2c` answered 101: stream 1 is the upgraded request,
        complete; `settings` is its HTTP2-Settings header (base64url SETTINGS payload, the client's first
        settings). The client's preface follows on the wire. A settings header that does not decode is a
        ParseError: the client's settings (HPACK table, windows) are unknown, so its direction is not read."""
        h2c = cls()
        h2c._server.initiate_upgrade_connection()
        h2c._client.initiate_upgrade_connection()
        h2c._server.clear_outbound_data_buffer()
        h2c._client.clear_outbound_data_buffer()
        h2c._streams[1] = _Stream(h2c._initial_window, request_ended=True)
        out: list[H2Event] = []
        try:
            frame = SettingsFrame(0)
            frame.parse_body(memoryview(base64.urlsafe_b64decode(settings + "=" * (-len(settings) % 4))))
            for event in h2c._server._receive_frame(frame):
                h2c._client_event(event, out)
        except (*_LIBRARY_ERRORS, ValueError) as exc:
            h2c.client_broken = True
            out.append(ParseError(True, f"the upgrade's HTTP2-Settings header: {why(exc)}", 1))
        return h2c, out

    def open_exchanges(self) -> list[int]:
        """Streams whose response has not ended, oldest first."""
        return sorted(self._streams)

    def feed_client(self, data: bytes, at: float | None = None) -> list[H2Event]:
        """The client's next bytes; `at`: their capture time (the flood guard counts a rate)."""
        if self.client_broken or not data:
            return []
        out: list[H2Event] = []
        self._guard.now = at
        self.client_broken = not self._receive(self._server, data, True, out)
        return out

    def feed_server(self, data: bytes, at: float | None = None) -> list[H2Event]:
        """The server's next bytes; `at` as for `feed_client`."""
        if self.server_broken or not data:
            return []
        out: list[H2Event] = []
        self._guard.now = at
        self.server_broken = not self._receive(self._client, data, False, out)
        return out

    # -- frames ------------------------------------------------------------------------------------

    def _receive(self, conn: H2Connection, data: bytes, from_client: bool, out: list[H2Event]) -> bool:
        """Every whole frame of `data`, one by one (h2's `_receive_frame`, what `receive_data` loops
        over) so that an error names the frame that caused it; False once the direction cannot be read."""
        frame: Any = None
        buffer = self._buffer(conn, from_client)
        guard = self._guard
        try:
            buffer.add_data(data)
            buffer.max_frame_size = self._max_frame(conn)
            for frame in buffer:
                guard.count(frame, from_client)
                self._dispatch(conn, frame, from_client, out)
                frame = None
                buffer.max_frame_size = self._max_frame(conn)  # a SETTINGS ACK may change it
            refuse_oversized(buffer._data, buffer.max_frame_size)
            refuse_long_header_block(buffer._headers_buffer)
        except Flooded as exc:
            out.append(Flood(from_client, f"{named(frame)}: {exc}"))
        except _LIBRARY_ERRORS as exc:
            where = named(frame) if frame is not None else pending(buffer._data)
            out.append(ParseError(from_client, f"{where}: {why(exc)}", stream_of(frame)))
        else:
            return True
        finally:
            conn.clear_outbound_data_buffer()  # what the mirror would answer goes nowhere
        buffer._data, buffer._headers_buffer = bytearray(), []  # not read further: nothing kept
        return False

    def _buffer(self, conn: H2Connection, from_client: bool) -> FrameBuffer:
        """Where a direction's bytes wait for whole frames: the mirror's own buffer (it checks the preface)."""
        return conn.incoming_buffer

    def _max_frame(self, conn: H2Connection) -> int:
        return conn.max_inbound_frame_size

    def _dispatch(self, conn: H2Connection, frame: Any, from_client: bool, out: list[H2Event]) -> None:
        """One frame through the mirror; what h2 resets by itself is a stream error, not the peer's reset."""
        for event in conn._receive_frame(frame):
            if isinstance(event, h2e.StreamReset) and not event.remote_reset:
                detail = f"{named(frame)}: the stream must be reset ({error_name(event.error_code)})"
                out.append(StreamError(event.stream_id, from_client, detail))
            elif from_client:
                self._client_event(event, out)
            else:
                self._server_event(event, out)

    # -- what the client sent ----------------------------------------------------------------------

    def _client_event(self, event: h2e.Event, out: list[H2Event]) -> None:
        if isinstance(event, h2e.RequestReceived):
            self._request(event.stream_id, event.headers, event.stream_ended is not None, out)
            self._client.send_headers(event.stream_id, event.headers, end_stream=True)  # the client opened it
        elif isinstance(event, h2e.DataReceived):
            self._server.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            self._request_data(event.stream_id, event.data)
        elif isinstance(event, h2e.StreamEnded):
            self._request_end(event.stream_id, out)
        elif isinstance(event, h2e.StreamReset):
            self._client_reset(event.stream_id, event.error_code, out)
        elif isinstance(event, h2e.WindowUpdated):
            self._granted(event.stream_id, event.delta)
        elif isinstance(event, h2e.RemoteSettingsChanged):
            self._client_settings(event)
        elif isinstance(event, h2e.ConnectionTerminated):
            out.append(GoAway(True, event.last_stream_id or 0, error_name(event.error_code)))

    def _request(self, sid: int, raw: Any, ended: bool, out: list[H2Event]) -> None:
        headers = _headers(raw)
        if len(self._streams) >= MAX_OPEN_STREAMS:
            raise LimitExceeded(f"more than {MAX_OPEN_STREAMS} streams open at once")
        self._streams[sid] = _Stream(self._initial_window)
        out.append(RequestHead(sid, _pseudo(headers, ":method"), _pseudo(headers, ":path"), headers, "2"))
        if ended:
            self._request_end(sid, out)

    def _request_data(self, sid: int, data: bytes) -> None:
        stream = self._streams.get(sid)
        if stream is None or stream.request_ended or stream.started_before:
            return
        stream.body_size += len(data)
        room = MAX_BODY_BYTES - max(len(stream.body), self._held_body)
        if room > 0:
            kept = data[:room]
            stream.body += kept
            self._held_body += len(kept)

    def _request_end(self, sid: int, out: list[H2Event]) -> None:
        stream = self._streams.get(sid)
        if stream is None or stream.request_ended:
            return
        stream.request_ended = True
        cut = stream.body_size > len(stream.body)  # past the stream's or the connection's bound
        out.append(RequestEnd(sid, b"" if cut else bytes(stream.body), cut, stream.body_size))
        self._held_body -= len(stream.body)
        stream.body = bytearray()

    def _client_reset(self, sid: int, code: int, out: list[H2Event]) -> None:
        if sid in self._streams:
            out.append(StreamReset(sid, True, error_name(code)))

    def _granted(self, sid: int, delta: int) -> None:
        """The client opened the server's window: a stall ends once both windows are open again."""
        if sid == 0:
            self._conn_window += delta
            for open_stream in self._streams.values():
                open_stream.stalled = open_stream.stalled and min(open_stream.window, self._conn_window) <= 0
            return
        stream = self._streams.get(sid)
        if stream is not None:
            stream.window += delta
            stream.stalled = stream.stalled and min(stream.window, self._conn_window) <= 0

    def _client_settings(self, event: h2e.RemoteSettingsChanged) -> None:
        changed = event.changed_settings
        window = changed.get(SettingCodes.INITIAL_WINDOW_SIZE)
        if window is not None:  # applies to every open stream at once (RFC 9113 6.9.2)
            delta = window.new_value - self._initial_window
            self._initial_window = window.new_value
            for stream in self._streams.values():
                stream.window += delta
        mirror_settings(self._client, changed)

    # -- what the server sent ----------------------------------------------------------------------

    def _server_event(self, event: h2e.Event, out: list[H2Event]) -> None:
        if isinstance(event, h2e.ResponseReceived):
            self._response_head(event.stream_id, event.headers, out)
            if event.stream_ended is not None:
                self._response_end(event.stream_id, out)
        elif isinstance(event, h2e.DataReceived):
            self._client.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            ended = event.stream_ended is not None
            self._response_data(event.stream_id, event.data, event.flow_controlled_length, ended, out)
        elif isinstance(event, h2e.StreamEnded):
            self._response_end(event.stream_id, out)
        elif isinstance(event, h2e.StreamReset):
            self._server_reset(event.stream_id, event.error_code, out)
        elif isinstance(event, h2e.RemoteSettingsChanged):
            mirror_settings(self._server, event.changed_settings)
            # the client mirror counts streams the real server forgot (client resets) as open
            self._client.remote_settings[SettingCodes.MAX_CONCURRENT_STREAMS] = MAX_OPEN_STREAMS
            self._client.remote_settings.acknowledge()
        elif isinstance(event, h2e.ConnectionTerminated):
            out.append(GoAway(False, event.last_stream_id or 0, error_name(event.error_code)))

    def _response_head(self, sid: int, raw: Any, out: list[H2Event]) -> None:
        if sid in self._streams:
            headers = _headers(raw)
            status = _pseudo(headers, ":status")
            out.append(ResponseHead(sid, int(status) if status.isdigit() else 0, "", headers))

    def _response_data(self, sid: int, data: bytes, size: int, ended: bool, out: list[H2Event]) -> None:
        stream = self._streams.get(sid)
        if stream is None:
            return
        stream.window -= size
        self._conn_window -= size
        if data:
            out.append(ResponseData(sid, bytes(data)))
        if not ended and not stream.stalled and min(stream.window, self._conn_window) <= 0:
            stream.stalled = True
            out.append(WindowExhausted(sid, stream.window, self._conn_window))

    def _response_end(self, sid: int, out: list[H2Event]) -> None:
        if self._forget(sid):
            out.append(ResponseEnd(sid))

    def _server_reset(self, sid: int, code: int, out: list[H2Event]) -> None:
        if self._forget(sid):
            out.append(StreamReset(sid, False, error_name(code)))

    # -- shared ------------------------------------------------------------------------------------

    def _forget(self, sid: int) -> bool:
        """The server is done with the stream (ended or reset it): forget it, and any request body it held."""
        stream = self._streams.pop(sid, None)
        if stream is None:
            return False
        self._held_body -= len(stream.body)
        self._closed(sid)
        return True

    def _closed(self, sid: int) -> None:
        """The server's mirror closes the stream too (one the client reset is closed there already)."""
        with contextlib.suppress(H2Error):
            self._server.reset_stream(sid)


def _headers(raw: Any) -> Headers:
    return tuple((bytes(name).decode("latin-1").lower(), bytes(value).decode("latin-1")) for name, value in raw or ())


def _pseudo(headers: Headers, name: str) -> str:
    for key, value in headers:
        if key == name:
            return value
    return ""
