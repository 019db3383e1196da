"""An incremental `text/event-stream` parser over bytes (WHATWG HTML §9.2 "event stream interpretation").

Pure: no tshark, no I/O. Feed the de-chunked body of an SSE response as it arrives and get every
completed event block back, with the byte offsets (in that body) where it started and ended, so the
caller can tell which packet completed which event.

Differences from a browser's `EventSource`, on purpose, because we audit what was *sent*:

* every block that ends with a blank line is returned, even one a browser would not dispatch (no
  `data` field: a bare `id:` priming block, a `retry:`, a comment-only keep-alive). `SseEvent.data`
  is None when the block had no `data` field, and `""` when it had an empty one (the 2025-11-25 priming
  event: an id and an empty `data`);
* `id` is the value of the block's own `id` field (None when absent); `last_event_id` is the
  browser's running "last event ID" after this block;
* a block larger than `max_event_bytes` keeps its offsets but drops its data (`oversized` is True),
  so memory stays bounded whatever the server sends; `drop_pending` does the same to the block being
  received when the caller's budget over many streams (`buffered`) runs out.

Line endings `\\r\\n`, `\\r` and `\\n` are all accepted, also when a `\\r\\n` pair is split across two
`feed` calls. A UTF-8 BOM at the very start of the stream is skipped. Field values are decoded as
UTF-8 with replacement characters (the spec's decoding), so bad bytes never raise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from ...model import RequestId
from ...model.jsonrpc import decode_text

BOM: Final = b"\xef\xbb\xbf"
DEFAULT_MAX_EVENT_BYTES = 16 << 20
_SEPARATORS: Final = (b"\r", b"\n")


DISPATCHED: Final = "message"
"""The one event type MCP clients read: the SDKs' clients take the data of `message` events (and unnamed
ones, which are `message`) and drop every other type, as `EventSource.onmessage` does."""


@dataclass(slots=True, init=False, unsafe_hash=True)
class SseEvent:
    """One event block (the lines up to and including a blank line), built once per event: a `record` spelled
    out, as `model.records` says, for mypyc to compile."""

    start: Final[int]
    """Body offset of the block's first byte (after any blank lines before it)."""
    end: Final[int]
    """Body offset just past the blank line's line ending that ended the block (past the `\\r` of a
    `\\r\\n`: the block is complete there, the `\\n` may never come)."""
    event: Final[str]
    """The `event` field; "message" when absent or empty (what `EventSource` dispatches)."""
    data: Final[str | None]
    """The joined `data` lines (joined with "\\n"); None when the block had no `data` field."""
    id: Final[str | None]
    """This block's `id` field; None when absent (or when it contained NUL, which the spec ignores)."""
    last_event_id: Final[str]
    """The running last event id after this block (persists across blocks, as in a browser)."""
    retry: Final[int | None]
    """This block's `retry` field in milliseconds, when it was all ASCII digits."""
    comments: Final[tuple[str, ...]]
    """Comment lines (starting with `:`), without the colon."""
    oversized: Final[bool]
    """The block exceeded the size limit; its data was dropped (`data` is None)."""
    dropped: Final[bool]
    """Oversized because its content was forgotten on the caller's memory budget (`drop_pending`), which
    named it then, whatever its size."""

    def __init__(
        self,
        start: int,
        end: int,
        event: str,
        data: str | None,
        id: str | None,
        last_event_id: str,
        retry: int | None,
        comments: tuple[str, ...] = (),
        oversized: bool = False,
        dropped: bool = False,
    ) -> None:
        self.start, self.end, self.event, self.data = start, end, event, data
        self.id, self.last_event_id, self.retry, self.comments = id, last_event_id, retry, comments
        self.oversized, self.dropped = oversized, dropped

    def __reduce__(self) -> tuple[type[SseEvent], tuple[Any, ...]]:
        return SseEvent, (
            self.start,
            self.end,
            self.event,
            self.data,
            self.id,
            self.last_event_id,
            self.retry,
            self.comments,
            self.oversized,
            self.dropped,
        )

    def undispatched(self, where: str) -> tuple[str, RequestId | None, str | None]:
        """What to say of this event's data when its type is not `DISPATCHED`, and the id and method of
        the first message it holds (the request a result there would have answered)."""
        decoded = decode_text(self.data or "")
        first = decoded.messages[0] if decoded is not None and decoded.messages else None
        shown = (self.data or "")[:200]
        detail = f"{where}: an SSE event of type {self.event!r} carries data no MCP client reads: {shown!r}"
        return detail, first.id if first else None, first.method if first else None


@dataclass(slots=True)
class PartialEvent:
    """What was buffered when the stream ended without the blank line that completes a block."""

    start: int
    raw: bytes
    """The block's bytes so far (bounded by the size limit)."""
    data: str | None
    """The `data` lines seen so far (complete lines only), or None."""
    event: str
    id: str | None


@dataclass(slots=True, init=False)
class _Block:
    """The event block being read (one per event: its `__init__` is written out, which mypyc compiles, where
    the dataclass's own runs interpreted)."""

    start: int
    data: Final[list[str]]
    has_data: bool
    event: str
    id: str | None
    retry: int | None
    comments: Final[list[str]]
    size: int
    raw: bytearray
    dropped: bool
    """Its content was forgotten on the reader's memory budget (`drop_pending`): dispatched as oversized."""

    def __init__(self) -> None:
        self.start, self.data, self.has_data, self.event, self.id, self.retry = -1, [], False, "", None, None
        self.comments, self.size, self.raw, self.dropped = [], 0, bytearray(), False

    def empty(self) -> bool:
        return self.start < 0


class SseParser:
    """Feed bytes with `feed`; call `finish` at the end of the body (or of the capture)."""

    def __init__(self, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        self.max_event_bytes = max_event_bytes
        self.offset = 0
        """Body bytes consumed so far (including the BOM)."""
        self.last_event_id = ""
        self._line = bytearray()
        self._line_len = 0
        self._line_start = 0
        self._skip_lf = False
        self._bom_pending = True
        self._head = b""
        self._block = _Block()

    def feed(self, data: bytes) -> list[SseEvent]:
        """Parse `data` (the next body bytes); return the blocks it completed, in order."""
        out: list[SseEvent] = []
        if self._bom_pending:
            data = self._head + data
            if len(data) < len(BOM) and BOM.startswith(data):
                self._head = data
                return out
            self._bom_pending = False
            self._head = b""
            if data.startswith(BOM):
                self.offset += len(BOM)
                data = data[len(BOM) :]
            self._line_start = self.offset
        if data[-1:] == b"\n" and not (self._skip_lf or self._line_len) and self._block.empty():
            whole = self._whole_events(data)
            if whole is not None:
                return whole
        pos = 0
        n = len(data)
        while pos < n:
            if self._skip_lf:
                self._skip_lf = False
                if data[pos] == 0x0A:
                    pos += 1
                    self.offset += 1
                    self._line_start = self.offset
                    continue
            cr = data.find(b"\r", pos)
            lf = data.find(b"\n", pos)
            ends = [i for i in (cr, lf) if i >= 0]
            if not ends:
                self._take(data[pos:])
                self.offset += n - pos
                break
            eol = min(ends)
            self._take(data[pos:eol])
            self.offset += eol - pos + 1
            if data[eol] == 0x0D:
                self._skip_lf = True
            pos = eol + 1
            event = self._line_done()
            self._line_start = self.offset
            if event is not None:
                out.append(event)
        return out

    @property
    def buffered(self) -> int:
        """Bytes of the event being received that are held (its lines so far and the line being read)."""
        return len(self._line) + len(self._block.raw)

    def drop_pending(self) -> None:
        """Forget what the event being received holds; it is dispatched as oversized (and `dropped`)."""
        block = self._block
        if block.empty():
            block.start = self._line_start
        block.dropped = True
        block.raw.clear()
        block.data.clear()
        self._line.clear()

    def finish(self) -> PartialEvent | None:
        """The incomplete block at the end of the stream, if any (a browser discards it)."""
        block = self._block
        pending_line = bytes(self._line)
        if block.empty() and self._line_len == 0:
            return None
        start = block.start if not block.empty() else self._line_start
        data = "\n".join(block.data) if block.has_data else None
        if pending_line.startswith(b"data"):
            name, value = _split_field(pending_line)
            if name == "data":
                data = value if data is None else data + "\n" + value
        raw = bytes(block.raw) + pending_line
        self._block = _Block()
        self._line.clear()
        self._line_len = 0
        return PartialEvent(start, raw[: self.max_event_bytes], data, block.event or "message", block.id)

    # -- internals ---------------------------------------------------------------------------------

    def _whole_events(self, data: bytes) -> list[SseEvent] | None:
        """The events of DATA read at once when it holds only whole plain blocks, what the SDKs send in one
        piece (`event`, `id` and one `data` line, each `name: value`, one line ending throughout, each block
        ended by one blank line); None for anything else, which the line parser reads. Both give the same
        events (tests/test_sse_whole.py)."""
        eol = _line_end(data)
        if eol is None or len(data) > self.max_event_bytes:
            return None
        blocks = data.split(eol + eol)
        if blocks.pop():
            return None  # not ended by a blank line
        out: list[SseEvent] = []
        start, last_id = self.offset, self.last_event_id
        crlf = len(eol) - 1
        for block in blocks:
            value: bytes | None = None
            kind = b""
            event_id: str | None = None
            for line in block.split(eol):
                name, colon, field_value = line.partition(b": ")
                if name == b"data" and value is None and colon:
                    value = field_value
                elif name == b"event" and colon:
                    kind = field_value
                elif name == b"id" and colon and b"\x00" not in field_value:
                    event_id = last_id = field_value.decode("utf-8", "replace")
                else:
                    return None
            end = start + len(block) + crlf + 2  # past the blank line's first byte (`SseEvent.end`)
            data_text = None if value is None else value.decode("utf-8", "replace")
            out.append(
                SseEvent(start, end, kind.decode("utf-8", "replace") or DISPATCHED, data_text, event_id, last_id, None)
            )
            start = end + crlf
        self.offset = self._line_start = start
        self.last_event_id = last_id
        return out

    def _take(self, chunk: bytes) -> None:
        if not chunk:
            return
        block = self._block
        if block.empty():
            block.start = self._line_start
        room = 0 if block.dropped else self.max_event_bytes - block.size
        block.size += len(chunk)
        self._line_len += len(chunk)
        if room > 0:
            self._line += chunk[:room]

    def _line_done(self) -> SseEvent | None:
        line = bytes(self._line)
        blank = self._line_len == 0
        self._line.clear()
        self._line_len = 0
        block = self._block
        if blank:
            # a blank line: dispatch the block, if there is one
            if block.empty():
                return None
            return self._dispatch()
        block.size += 1
        if block.size > self.max_event_bytes or block.dropped:
            return None  # an oversized block: keep counting its bytes, drop its content
        block.raw += line + b"\n"
        if line.startswith(b":"):
            block.comments.append(line[1:].decode("utf-8", "replace").removeprefix(" "))
            return None
        name, value = _split_field(line)
        if name == "data":
            block.data.append(value)
            block.has_data = True
        elif name == "event":
            block.event = value
        elif name == "id":
            if "\x00" not in value:
                block.id = value
                self.last_event_id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            block.retry = int(value)
        return None

    def _dispatch(self) -> SseEvent:
        block = self._block
        oversized = block.size > self.max_event_bytes or block.dropped
        self._block = _Block()
        return SseEvent(
            start=block.start,
            end=self.offset,
            event=block.event or "message",
            data=None if oversized or not block.has_data else "\n".join(block.data),
            id=block.id,
            last_event_id=self.last_event_id,
            retry=block.retry,
            comments=tuple(block.comments),
            oversized=oversized,
            dropped=block.dropped,
        )


def _line_end(data: bytes) -> bytes | None:
    """The one line ending DATA uses throughout (`\\n` or `\\r\\n`), or None."""
    if b"\r" not in data:
        return b"\n"
    if data.count(b"\r\n") == data.count(b"\r") == data.count(b"\n"):
        return b"\r\n"
    return None


def _split_field(line: bytes) -> tuple[str, str]:
    colon = line.find(b":")
    if colon < 0:
        return line.decode("utf-8", "replace"), ""
    name = line[:colon].decode("utf-8", "replace")
    value = line[colon + 1 :]
    if value.startswith(b" "):
        value = value[1:]
    return name, value.decode("utf-8", "replace")
