"""HTTP/2 of a TCP connection whose capture starts in the middle: after its preface and SETTINGS, with
streams already open and HPACK tables already filled (the capture was started late, or cut with
`editcap`). The events are those of `Http2Connection`, with what can still be judged:

* frames are read with hyperframe (through h2's `FrameBuffer`, which joins CONTINUATION frames), each
  direction from the first segment that starts with whole frames (`starts_with_frames`);
* header blocks are decoded with hpack, the tables starting empty. HPACK indexes count from the newest
  entry, so an entry added since the capture began decodes right; a block that refers to one from
  before fails (never silently decodes wrong), is named (`Joined`), and the table is emptied again, so
  that what it holds is always the newest entries of the real table;
* a response whose head did not decode is read as SSE or JSON when its first bytes say so (an SSE
  field or a JSON bracket), else its body is not read;
* a stream first seen by a frame other than its request HEADERS began before the capture, and its
  request is not in it (RequestHead with no method or target): its bodies are not read, since their
  progress and replies would answer a request nobody can see; it counts by its resets and closes;
* RST_STREAM, GOAWAY, END_STREAM and the connection's closes count as on a whole capture;
* flow-control windows granted before the capture are unknown: no stall is judged, SETTINGS are not
  applied (the frame-size bound is `MAX_FRAME_BYTES`).

No h2 state machine: it would refuse every frame of a stream it did not see opening.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from h2.connection import H2Connection
from h2.frame_buffer import FrameBuffer
from hpack import Decoder
from hpack.exceptions import InvalidTableIndexError
from hpack.table import HeaderTable
from hyperframe.frame import DataFrame, GoAwayFrame, HeadersFrame, PushPromiseFrame, RstStreamFrame

from .http1 import ParseError
from .http2 import Http2Connection
from .http2_bounds import MAX_FRAME_BYTES, MAX_HEADER_LIST_BYTES, MAX_HEADER_TABLE_BYTES, MAX_OPEN_STREAMS, named
from .http2_events import GoAway, H2Event, Joined, error_name

MAX_UNSYNCED_BYTES = 256 << 10
"""Bytes of a direction skipped while looking for a segment that starts with whole frames."""
MAX_NAMED_FRAMES = 10
"""Frames named one by one per connection (undecodable header blocks, streams begun before the capture):
HPACK entries from before the capture can fail every block for a while."""
_UNKNOWN_WINDOW = 1 << 62
"""Windows granted before the capture are unknown: large enough never to be used up."""
_SSE_START = (b"event:", b"data:", b"id:", b"retry:", b":")
_KNOWN_TYPES = range(10)


def starts_with_frames(data: bytes, limit: int = 16384) -> bool:
    """`data` is one or more whole HTTP/2 frames (the last may be cut by the segment's end): each of a
    known type, at most `limit` long, with the length and stream id its type requires. Another protocol
    or the middle of a frame passes this by chance only rarely; two frames or one that fills the segment
    exactly are required."""
    at, frames = 0, 0
    while len(data) - at >= 9:
        length, kind, sid = int.from_bytes(data[at : at + 3], "big"), data[at + 3], data[at + 5 : at + 9]
        if kind not in _KNOWN_TYPES or length > limit or sid[0] & 0x80 or not _fits(kind, length, sid):
            return False
        at += 9 + length
        frames += 1
    return frames >= 2 or (frames == 1 and at == len(data))


def _fits(kind: int, length: int, sid: bytes) -> bool:
    on_connection = sid == b"\0\0\0\0"
    if kind in (4, 6, 7):  # SETTINGS, PING, GOAWAY: connection-wide
        return on_connection and (length % 6 == 0 if kind == 4 else length == 8 if kind == 6 else length >= 8)
    if kind in (3, 8):  # RST_STREAM, WINDOW_UPDATE: 4 bytes
        return length == 4 and (kind == 8 or not on_connection)
    return not on_connection and (kind != 2 or length == 5)


def _sniffed(data: bytes) -> str | None:
    """The media type a body's first bytes show (SSE field, or JSON), when its head is unknown."""
    start = bytes(data[:16]).lstrip()
    if start.startswith(_SSE_START):
        return "text/event-stream"
    if start.startswith((b"{", b"[")):
        return "application/json"
    return None


def _decoder() -> Decoder:
    decoder = Decoder(max_header_list_size=MAX_HEADER_LIST_BYTES)
    decoder.max_allowed_table_size = MAX_HEADER_TABLE_BYTES
    decoder.header_table.maxsize = MAX_HEADER_TABLE_BYTES
    return decoder


class JoinedHttp2Connection(Http2Connection):
    """The HTTP/2 state of a connection the capture joined after it started (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self._initial_window = self._conn_window = _UNKNOWN_WINDOW
        self._buffers = (FrameBuffer(server=False), FrameBuffer(server=False))
        """Per direction: server→client, client→server."""
        self._decoders = (_decoder(), _decoder())
        self._synced = [False, False]
        self._skipped = [0, 0]
        self._said = False
        self._unknown = 0
        self._answered: set[int] = set()
        """Open streams whose response head went by (decoded or not)."""
        self._headless: set[int] = set()
        """Open streams whose response head is unknown: the body's first bytes decide how it is read."""
        self._gone: deque[int] = deque(maxlen=MAX_OPEN_STREAMS)
        """Streams that ended in the capture (late frames on them open nothing)."""

    # -- the hooks of Http2Connection --------------------------------------------------------------

    def _receive(self, conn: H2Connection, data: bytes, from_client: bool, out: list[H2Event]) -> bool:
        side = int(from_client)
        if not self._said:
            self._said = True
            out.append(Joined(None, from_client, "the capture starts in the middle of an HTTP/2 connection"))
        if not self._synced[side]:
            if not starts_with_frames(data):
                self._skipped[side] += len(data)
                if self._skipped[side] <= MAX_UNSYNCED_BYTES:
                    return True
                why = f"framing: no segment starts with whole HTTP/2 frames in the first {self._skipped[side]} bytes"
                out.append(ParseError(from_client, why))
                return False
            self._synced[side] = True
            if self._skipped[side]:
                detail = f"{self._skipped[side]} bytes skipped before the first segment that starts with a frame"
                out.append(Joined(None, from_client, detail))
        return super()._receive(conn, data, from_client, out)

    def _buffer(self, conn: H2Connection, from_client: bool) -> FrameBuffer:
        return self._buffers[int(from_client)]

    def _max_frame(self, conn: H2Connection) -> int:
        return MAX_FRAME_BYTES

    def _closed(self, sid: int) -> None:
        self._answered.discard(sid)
        self._headless.discard(sid)
        self._gone.append(sid)

    def _dispatch(self, conn: H2Connection, frame: Any, from_client: bool, out: list[H2Event]) -> None:
        kind = type(frame)
        if kind is DataFrame:
            self._data(frame, from_client, out)
        elif kind is HeadersFrame:
            self._headers_frame(frame, from_client, out)
        elif kind is RstStreamFrame:
            reset = self._client_reset if from_client else self._server_reset
            reset(frame.stream_id, frame.error_code, out)
        elif kind is GoAwayFrame:
            out.append(GoAway(from_client, frame.last_stream_id, error_name(frame.error_code)))
        elif kind is PushPromiseFrame:
            self._decode(frame, from_client, out)  # keeps the table in step; nothing to judge
        # SETTINGS, PING, PRIORITY, WINDOW_UPDATE: windows and settings before the capture are unknown

    # -- frames ------------------------------------------------------------------------------------

    def _headers_frame(self, frame: Any, from_client: bool, out: list[H2Event]) -> None:
        sid, ended = frame.stream_id, "END_STREAM" in frame.flags
        raw = self._decode(frame, from_client, out)
        if from_client:
            if sid in self._streams:  # trailers
                if ended:
                    self._request_end(sid, out)
            elif sid not in self._gone:
                self._request(sid, raw or [], ended, out)
            return
        self._adopt(frame, False, out)
        stream = self._streams.get(sid)
        if stream is None:
            return
        if sid not in self._answered:
            self._answered.add(sid)
            if raw is None or stream.started_before:
                self._headless.add(sid)
            else:
                self._response_head(sid, raw, out)
        if ended:
            self._response_end(sid, out)

    def _data(self, frame: Any, from_client: bool, out: list[H2Event]) -> None:
        sid, ended = frame.stream_id, "END_STREAM" in frame.flags
        self._adopt(frame, from_client, out)
        stream = self._streams.get(sid)
        if stream is None:
            return
        if from_client:
            self._request_data(sid, frame.data)
            if ended:
                self._request_end(sid, out)
            return
        if sid not in self._answered:  # its head was sent before the capture
            self._answered.add(sid)
            self._headless.add(sid)
        if sid in self._headless and not stream.started_before and (media := _sniffed(frame.data)) is not None:
            self._headless.discard(sid)
            self._response_head(sid, [(b":status", b"200"), (b"content-type", media.encode())], out)
        if sid not in self._headless:
            self._response_data(sid, frame.data, frame.flow_controlled_length, ended, out)
        if ended:
            self._response_end(sid, out)

    def _adopt(self, frame: Any, from_client: bool, out: list[H2Event]) -> None:
        """A frame on a client stream never seen opening: it began before the capture, and its request is
        not in it. Its messages would answer a request nobody can see (a progress token or an id no
        request carried): its bodies are not read; its resets and closes still count."""
        sid = frame.stream_id
        if sid in self._streams or sid in self._gone or not sid % 2:
            return
        self._request(sid, [], not from_client, out)  # a server frame: the request is complete
        self._streams[sid].started_before = True
        why = "the stream began before the capture (its request is not in it): its bodies are not read"
        self._name(frame, from_client, why, out)

    def _name(self, frame: Any, from_client: bool, what: str, out: list[H2Event]) -> None:
        """A frame the capture cannot read whole, named (the first `MAX_NAMED_FRAMES` of the connection)."""
        self._unknown += 1
        if self._unknown <= MAX_NAMED_FRAMES:
            more = "; later ones on this connection are not named" if self._unknown == MAX_NAMED_FRAMES else ""
            out.append(Joined(frame.stream_id, from_client, f"{named(frame)}: {what}{more}"))

    def _decode(self, frame: Any, from_client: bool, out: list[H2Event]) -> list[tuple[bytes, bytes]] | None:
        """The header block, or None when it refers to HPACK entries from before the capture (the table is
        then emptied: entries the block added after that point are unknown too)."""
        decoder = self._decoders[int(from_client)]
        try:
            return list(decoder.decode(frame.data, raw=True))
        except InvalidTableIndexError as exc:
            decoder.header_table = HeaderTable()
            decoder.header_table.maxsize = MAX_HEADER_TABLE_BYTES
            self._name(
                frame, from_client, f"its header block refers to HPACK entries from before the capture ({exc})", out
            )
            return None
