"""HTTP/2 of one TCP connection of a capture, with the `h2` package, from the connection's two byte streams.

The caller (`capture_http2`) feeds the client→server and server→client bytes in TCP order, as for
HTTP/1.1 (`http1`), and gets back what each feed completed, in the same event types keyed by the
HTTP/2 stream id (`RequestHead` ... `ResponseEnd`, `ParseError`), plus what only HTTP/2 says:
`StreamReset` (RST_STREAM), `GoAway`, and `WindowExhausted` (the server may not send more on a
stream whose response is open: the client granted no more flow-control window). No I/O, no tshark.

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
from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.errors import ErrorCodes
from h2.exceptions import FrameTooLargeError, H2Error
from h2.settings import SettingCodes, Settings
from hpack import HPACKError
from hyperframe.exceptions import HyperframeError
from hyperframe.frame import FRAMES, DataFrame, HeadersFrame, PushPromiseFrame, SettingsFrame

from .http1 import (
    MAX_BODY_BYTES,
    Headers,
    HttpEvent,
    ParseError,
    RequestEnd,
    RequestHead,
    ResponseData,
    ResponseEnd,
    ResponseHead,
)

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
MAX_HEADER_LIST_BYTES = 64 << 10
MAX_HEADER_TABLE_BYTES = 64 << 10
MAX_FRAME_BYTES = 1 << 20
MAX_OPEN_STREAMS = 1000
MAX_IDLE_FRAMES = 10_000
"""Frames that carry no request or response (SETTINGS, PING, PRIORITY, WINDOW_UPDATE, RST_STREAM,
unknown types, DATA of fewer than `TINY_DATA` bytes) a direction may send beyond twice the connection's
HEADERS and DATA frames before it is a flood (as nghttp2 and Envoy bound them: CVE-2019-9512..9518)."""
TINY_DATA = 16
_MAX_WINDOW = 2**31 - 1
_DEFAULT_WINDOW = 65535
_MIRRORED = {
    SettingCodes.HEADER_TABLE_SIZE: MAX_HEADER_TABLE_BYTES,
    SettingCodes.MAX_FRAME_SIZE: MAX_FRAME_BYTES,
    SettingCodes.ENABLE_PUSH: 1,
    SettingCodes.ENABLE_CONNECT_PROTOCOL: 1,
}
"""The settings a mirror takes from its endpoint's SETTINGS, each capped at our bound."""
_LIBRARY_ERRORS = (H2Error, HPACKError, HyperframeError)


def looks_http2(data: bytes) -> bool:
    """The client's first bytes are the HTTP/2 connection preface (h2c prior knowledge, or h2 in TLS)."""
    return data.startswith(PREFACE[:14])


def looks_http2_server(data: bytes) -> bool:
    """The server's first bytes are its connection preface, a SETTINGS frame on stream 0 (a server may
    send it before it has read the client's preface)."""
    return len(data) >= 9 and data[3] == 0x4 and data[4] == 0 and data[5:9] == b"\0\0\0\0" and data[0] == 0


def error_name(code: int | None) -> str:
    """An HTTP/2 error code as RFC 9113 names it (CANCEL, NO_ERROR, ...), or its number."""
    if code is None:
        return "no code"
    try:
        return ErrorCodes(code).name
    except ValueError:
        return f"0x{code:x}"


@dataclass(frozen=True, slots=True)
class StreamReset:
    exchange: int
    """The stream id."""
    from_client: bool
    code: str
    """The RST_STREAM error code's name (CANCEL, ...)."""


@dataclass(frozen=True, slots=True)
class GoAway:
    from_client: bool
    last_stream: int
    """The highest stream id the sender processed (or may process)."""
    code: str


@dataclass(frozen=True, slots=True)
class WindowExhausted:
    exchange: int
    stream_window: int
    connection_window: int


@dataclass(frozen=True, slots=True)
class StreamError:
    """A frame broke HTTP/2's rules for one stream only (RFC 9113 5.4.2): the receiver resets that stream
    and the connection goes on (a window past 2^31-1, HEADERS on a closed stream, ...)."""

    exchange: int
    from_client: bool
    detail: str


@dataclass(frozen=True, slots=True)
class Flood:
    """A direction sent more frames that carry nothing than any real peer does: not read further."""

    from_client: bool
    detail: str


H2Event = HttpEvent | StreamReset | GoAway | WindowExhausted | StreamError | Flood


@dataclass(slots=True)
class _Stream:
    window: int
    """What the server may still send on the stream (flow control, as the client granted it)."""
    body: bytearray = field(default_factory=bytearray)
    body_size: int = 0
    request_ended: bool = False
    stalled: bool = False
    """Inside a window-exhausted episode (a grant ends it)."""


def _mirror(client_side: bool) -> H2Connection:
    config = H2Configuration(
        client_side=client_side,
        header_encoding=None,
        validate_inbound_headers=False,
        normalize_inbound_headers=False,
        validate_outbound_headers=False,
        normalize_outbound_headers=False,
    )
    conn = H2Connection(config)
    conn.local_settings = Settings(
        client=client_side,
        initial_values={
            SettingCodes.MAX_CONCURRENT_STREAMS: MAX_OPEN_STREAMS,
            SettingCodes.MAX_HEADER_LIST_SIZE: MAX_HEADER_LIST_BYTES,
            SettingCodes.INITIAL_WINDOW_SIZE: _MAX_WINDOW,
        },
    )
    conn.decoder.max_header_list_size = MAX_HEADER_LIST_BYTES
    conn.increment_flow_control_window(_MAX_WINDOW - _DEFAULT_WINDOW)
    conn.clear_outbound_data_buffer()
    return conn


class Http2Connection:
    """The HTTP/2 state of one TCP connection; exchanges are numbered by stream id."""

    def __init__(self) -> None:
        self._server = _mirror(client_side=False)
        """The server's view: reads the client's bytes."""
        self._client = _mirror(client_side=True)
        """The client's view: reads the server's bytes."""
        self.client_broken = False
        self.server_broken = False
        self._streams: dict[int, _Stream] = {}
        """Streams whose response has not ended (nor been reset by the server), by id."""
        self._initial_window = _DEFAULT_WINDOW
        """The client's SETTINGS_INITIAL_WINDOW_SIZE: each new stream's window."""
        self._conn_window = _DEFAULT_WINDOW
        """What the server may still send on the connection."""
        self._held_body = 0
        """Request body bytes kept for streams whose request has not ended (all streams: at most
        `MAX_BODY_BYTES`, so memory does not grow with the number of open streams)."""
        self._guard = _FloodGuard()

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
            out.append(ParseError(True, f"the upgrade's HTTP2-Settings header: {_why(exc)}", 1))
        return h2c, out

    def open_exchanges(self) -> list[int]:
        """Streams whose response has not ended, oldest first."""
        return sorted(self._streams)

    def feed_client(self, data: bytes) -> list[H2Event]:
        if self.client_broken or not data:
            return []
        out: list[H2Event] = []
        self.client_broken = not self._receive(self._server, data, True, out)
        return out

    def feed_server(self, data: bytes) -> list[H2Event]:
        if self.server_broken or not data:
            return []
        out: list[H2Event] = []
        self.server_broken = not self._receive(self._client, data, False, out)
        return out

    # -- frames ------------------------------------------------------------------------------------

    def _receive(self, conn: H2Connection, data: bytes, from_client: bool, out: list[H2Event]) -> bool:
        """Every whole frame of `data` through the mirror; False once the direction cannot be read.
        Frame by frame (h2's `_receive_frame`, what `receive_data` loops over) so that an error names
        the frame that caused it."""
        frame: Any = None
        buffer = conn.incoming_buffer
        guard = self._guard
        try:
            buffer.add_data(data)
            buffer.max_frame_size = conn.max_inbound_frame_size
            for frame in buffer:
                guard.count(frame, from_client)
                for event in conn._receive_frame(frame):
                    if isinstance(event, h2e.StreamReset) and not event.remote_reset:
                        why = f"{_named(frame)}: the stream must be reset ({error_name(event.error_code)})"
                        out.append(StreamError(event.stream_id, from_client, why))
                    else:
                        self._event(event, from_client, out)
                frame = None
                buffer.max_frame_size = conn.max_inbound_frame_size  # a SETTINGS ACK may change it
            _refuse_oversized(buffer._data, buffer.max_frame_size)
            _refuse_long_header_block(buffer._headers_buffer)
        except Flooded as exc:
            out.append(Flood(from_client, f"{_named(frame)}: {exc}"))
        except _LIBRARY_ERRORS as exc:
            where = _named(frame) if frame is not None else _pending(buffer._data)
            out.append(ParseError(from_client, f"{where}: {_why(exc)}", _stream_of(frame)))
        else:
            return True
        finally:
            conn.clear_outbound_data_buffer()  # what the mirror would answer goes nowhere
        buffer._data, buffer._headers_buffer = bytearray(), []  # not read further: nothing kept
        return False

    def _event(self, event: h2e.Event, from_client: bool, out: list[H2Event]) -> None:
        if from_client:
            self._client_event(event, out)
        else:
            self._server_event(event, out)

    # -- what the client sent ----------------------------------------------------------------------

    def _client_event(self, event: h2e.Event, out: list[H2Event]) -> None:
        if isinstance(event, h2e.RequestReceived):
            self._request(event, out)
        elif isinstance(event, h2e.DataReceived):
            self._server.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            stream = self._streams.get(event.stream_id)
            if stream is not None and not stream.request_ended:
                stream.body_size += len(event.data)
                room = MAX_BODY_BYTES - max(len(stream.body), self._held_body)
                if room > 0:
                    kept = event.data[:room]
                    stream.body += kept
                    self._held_body += len(kept)
        elif isinstance(event, h2e.StreamEnded):
            self._request_end(event.stream_id, out)
        elif isinstance(event, h2e.StreamReset):
            if event.stream_id in self._streams:
                out.append(StreamReset(event.stream_id, True, error_name(event.error_code)))
        elif isinstance(event, h2e.WindowUpdated):
            self._granted(event.stream_id, event.delta)
        elif isinstance(event, h2e.RemoteSettingsChanged):
            self._client_settings(event)
        elif isinstance(event, h2e.ConnectionTerminated):
            out.append(GoAway(True, event.last_stream_id or 0, error_name(event.error_code)))

    def _request(self, event: h2e.RequestReceived, out: list[H2Event]) -> None:
        sid = event.stream_id
        headers = _headers(event.headers)
        if len(self._streams) >= MAX_OPEN_STREAMS:
            raise LimitExceeded(f"more than {MAX_OPEN_STREAMS} streams open at once")
        self._streams[sid] = _Stream(self._initial_window)
        self._client.send_headers(sid, event.headers, end_stream=True)  # the client opened it
        method, path = _pseudo(headers, ":method"), _pseudo(headers, ":path")
        out.append(RequestHead(sid, method, path, headers, "2"))
        if event.stream_ended is not None:
            self._request_end(sid, out)

    def _request_end(self, sid: int, out: list[H2Event]) -> None:
        stream = self._streams.get(sid)
        if stream is None or stream.request_ended:
            return
        stream.request_ended = True
        cut = stream.body_size > len(stream.body)  # past the stream's or the connection's bound
        out.append(RequestEnd(sid, b"" if cut else bytes(stream.body), cut, stream.body_size))
        self._held_body -= len(stream.body)
        stream.body = bytearray()

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
        self._mirror_settings(self._client, changed)

    # -- what the server sent ----------------------------------------------------------------------

    def _server_event(self, event: h2e.Event, out: list[H2Event]) -> None:
        if isinstance(event, h2e.ResponseReceived):
            headers = _headers(event.headers)
            status = _pseudo(headers, ":status")
            if event.stream_id in self._streams:
                out.append(ResponseHead(event.stream_id, int(status) if status.isdigit() else 0, "", headers))
            if event.stream_ended is not None:
                self._response_end(event.stream_id, out)
        elif isinstance(event, h2e.DataReceived):
            self._client.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            self._response_data(event, out)
        elif isinstance(event, h2e.StreamEnded):
            self._response_end(event.stream_id, out)
        elif isinstance(event, h2e.StreamReset):
            if self._forget(event.stream_id):
                out.append(StreamReset(event.stream_id, False, error_name(event.error_code)))
                _close(self._server, event.stream_id)
        elif isinstance(event, h2e.RemoteSettingsChanged):
            self._mirror_settings(self._server, event.changed_settings)
            # the client mirror counts streams the real server forgot (client resets) as open
            self._client.remote_settings[SettingCodes.MAX_CONCURRENT_STREAMS] = MAX_OPEN_STREAMS
            self._client.remote_settings.acknowledge()
        elif isinstance(event, h2e.ConnectionTerminated):
            out.append(GoAway(False, event.last_stream_id or 0, error_name(event.error_code)))

    def _response_data(self, event: h2e.DataReceived, out: list[H2Event]) -> None:
        sid = event.stream_id
        stream = self._streams.get(sid)
        if stream is None:
            return
        size = event.flow_controlled_length
        stream.window -= size
        self._conn_window -= size
        if event.data:
            out.append(ResponseData(sid, bytes(event.data)))
        if event.stream_ended is None and not stream.stalled and min(stream.window, self._conn_window) <= 0:
            stream.stalled = True
            out.append(WindowExhausted(sid, stream.window, self._conn_window))

    def _response_end(self, sid: int, out: list[H2Event]) -> None:
        if not self._forget(sid):
            return
        out.append(ResponseEnd(sid))
        _close(self._server, sid)  # the server is done with it: its mirror closes it too

    # -- shared ------------------------------------------------------------------------------------

    def _forget(self, sid: int) -> bool:
        """The server is done with the stream: forget it (and any request body it still held)."""
        stream = self._streams.pop(sid, None)
        if stream is None:
            return False
        self._held_body -= len(stream.body)
        return True

    @staticmethod
    def _mirror_settings(conn: H2Connection, changed: dict[Any, Any]) -> None:
        """What an endpoint announced, on its own mirror (in force once the peer's ACK is read)."""
        values = {code: min(c.new_value, _MIRRORED[code]) for code, c in changed.items() if code in _MIRRORED}
        if values:
            conn.update_settings(values)


class LimitExceeded(H2Error):
    """One of our bounds was passed (read as a protocol error of the frame that passed it)."""


class Flooded(Exception):
    """A direction passed `MAX_IDLE_FRAMES` (see `_FloodGuard`)."""


_CONTENT = (HeadersFrame, PushPromiseFrame)


class _FloodGuard:
    """Counts, per direction, the frames that carry no request or response; the budget grows with the
    connection's HEADERS and DATA frames (a client reading a long SSE stream sends two WINDOW_UPDATEs
    per DATA frame it reads). One type check per frame: the hot path stays cheap."""

    __slots__ = ("content", "idle", "kinds")

    def __init__(self) -> None:
        self.content = 0
        self.idle = [0, 0]
        """Per direction: server→client, client→server."""
        self.kinds: tuple[dict[str, int], dict[str, int]] = ({}, {})

    def count(self, frame: Any, from_client: bool) -> None:
        kind = type(frame)
        if kind is DataFrame:
            if len(frame.data) >= TINY_DATA or "END_STREAM" in frame.flags:
                self.content += 1
                return
        elif kind in _CONTENT:
            self.content += 1
            return
        side = int(from_client)
        self.idle[side] += 1
        name = _label(frame)
        kinds = self.kinds[side]
        kinds[name] = kinds.get(name, 0) + 1
        if self.idle[side] > MAX_IDLE_FRAMES + 2 * self.content:
            counts = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items(), key=lambda kv: -kv[1]))
            raise Flooded(
                f"{self.idle[side]} frames that carry no request or response ({counts}) against "
                f"{self.content} HEADERS/DATA frames on the connection (limit {MAX_IDLE_FRAMES} more than twice that)"
            )


def _label(frame: Any) -> str:
    kind = type(frame)
    if kind is DataFrame:
        return f"DATA under {TINY_DATA} bytes"
    name = kind.__name__.removesuffix("Frame").upper()
    return name if name != "EXTENSION" else f"unknown type 0x{frame.type:x}"


def _named(frame: Any) -> str:
    return f"{type(frame).__name__} on stream {frame.stream_id}"


def _pending(data: bytes | bytearray) -> str:
    """The frame whose header starts `data`, when it is a known type (its body was refused), else framing."""
    if len(data) >= 9 and (kind := FRAMES.get(data[3])) is not None:
        return f"{kind.__name__} on stream {int.from_bytes(data[5:9], 'big') & 0x7FFFFFFF}"
    return "framing"


def _refuse_long_header_block(frames: list[Any]) -> None:
    """h2 keeps up to 64 CONTINUATION frames of a header block before it decodes it: their bytes are
    bounded like the decoded list, not by 64 frames of the largest size a peer announced."""
    if frames and (size := sum(len(f.data) for f in frames)) > MAX_HEADER_LIST_BYTES:
        raise LimitExceeded(
            f"a header block of {size} bytes in {len(frames)} frames without END_HEADERS "
            f"(limit {MAX_HEADER_LIST_BYTES} bytes)"
        )


def _refuse_oversized(pending: bytes | bytearray, limit: int) -> None:
    """h2 waits for a whole frame before it checks its length: a frame header announcing more than the
    limit (garbage, or another protocol) is refused at once instead of buffering up to 16 MiB first."""
    if len(pending) >= 9 and (length := int.from_bytes(pending[:3], "big")) > limit:
        raise FrameTooLargeError(f"Received overlong frame: length {length}, max {limit}")


def _close(conn: H2Connection, sid: int) -> None:
    """Close a stream on a mirror; one the client already reset is closed there already."""
    with contextlib.suppress(H2Error):
        conn.reset_stream(sid)


def _why(exc: Exception) -> str:
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if "oversized" in text.lower():
        text += f" (limit {MAX_HEADER_LIST_BYTES} bytes decoded)"
    return text


def _stream_of(frame: Any) -> int | None:
    sid = getattr(frame, "stream_id", 0)
    return sid if isinstance(sid, int) and sid > 0 else None


def _headers(raw: Any) -> Headers:
    return tuple((bytes(name).decode("latin-1").lower(), bytes(value).decode("latin-1")) for name, value in raw or ())


def _pseudo(headers: Headers, name: str) -> str:
    for key, value in headers:
        if key == name:
            return value
    return ""
