"""The bounds of the HTTP/2 capture reader (`http2`, `http2_joined`): every peer is hostile, so frames,
header blocks, open streams and frames that carry nothing are bounded, and what passes a bound is named
by the frame that passed it."""

from __future__ import annotations

from typing import Any

from h2.exceptions import FrameTooLargeError, H2Error
from hyperframe.frame import FRAMES, DataFrame, HeadersFrame, PushPromiseFrame

MAX_HEADER_LIST_BYTES = 64 << 10
MAX_HEADER_TABLE_BYTES = 64 << 10
MAX_FRAME_BYTES = 1 << 20
MAX_OPEN_STREAMS = 1000
MAX_IDLE_FRAMES = 10_000
"""Frames that carry no request or response (SETTINGS, PING, PRIORITY, WINDOW_UPDATE, RST_STREAM,
unknown types, DATA of fewer than `TINY_DATA` bytes) a direction may send at once, beyond twice the
connection's HEADERS and DATA frames, before it is a flood (CVE-2019-9512..9518)."""
IDLE_FRAMES_PER_SECOND = 330
"""How fast that allowance comes back (capture time): a flood is a rate, as servers count it. nghttp2 bounds
such "glitches" with a token bucket of 10 000 at once and 330 a second (`nghttp2_option_set_glitch_rate_limit`,
its defaults); an SSE stream's keep-alive comment once a second, for hours, is far within it."""
TINY_DATA = 16


class LimitExceeded(H2Error):
    """One of our bounds was passed (read as a protocol error of the frame that passed it)."""


class Flooded(Exception):
    """A direction passed `MAX_IDLE_FRAMES` (see `FloodGuard`)."""


_CONTENT = (HeadersFrame, PushPromiseFrame)


class FloodGuard:
    """Counts, per direction, the frames that carry no request or response, as a token bucket: each costs
    one, `MAX_IDLE_FRAMES` at most are in the bucket, `IDLE_FRAMES_PER_SECOND` come back with capture time
    (`now`, set by the reader per segment; none without times). Each HEADERS or DATA frame of the connection
    pays for two first (a client reading a long SSE stream sends two WINDOW_UPDATEs per DATA frame it reads).
    One type check per frame: the hot path stays cheap."""

    __slots__ = ("_credit_used", "_first", "_since", "_tokens", "content", "idle", "kinds", "now")

    def __init__(self) -> None:
        self.content = 0
        self.idle = [0, 0]
        """Per direction: server→client, client→server."""
        self.kinds: tuple[dict[str, int], dict[str, int]] = ({}, {})
        self.now: float | None = None
        """The capture time of the bytes being read (None: unknown, nothing comes back)."""
        self._credit_used = [0, 0]
        """Idle frames paid for by HEADERS/DATA frames, per direction."""
        self._tokens = [float(MAX_IDLE_FRAMES), float(MAX_IDLE_FRAMES)]
        self._since: list[float | None] = [None, None]
        """When each bucket was last topped up."""
        self._first: list[float | None] = [None, None]
        """The capture time of each direction's first frame the bucket paid for (the flood's start, as said)."""

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
        name = label(frame)
        kinds = self.kinds[side]
        kinds[name] = kinds.get(name, 0) + 1
        if self._credit_used[side] < 2 * self.content:
            self._credit_used[side] += 1
        elif self._take(side) < 0:
            counts = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items(), key=lambda kv: -kv[1]))
            first, now = self._first[side], self.now
            within = f" in {now - first:.3f} s" if first is not None and now is not None else ""
            raise Flooded(
                f"{self.idle[side]} frames that carry no request or response ({counts}){within} against "
                f"{self.content} HEADERS/DATA frames on the connection (limit {MAX_IDLE_FRAMES} more than twice "
                f"that, and {IDLE_FRAMES_PER_SECOND} more a second)"
            )

    def _take(self, side: int) -> float:
        """One token of the direction's bucket, after what capture time gave back; what is left."""
        now, since = self.now, self._since[side]
        if now is not None:
            if since is not None and now > since:
                self._tokens[side] = min(
                    float(MAX_IDLE_FRAMES), self._tokens[side] + (now - since) * IDLE_FRAMES_PER_SECOND
                )
            if since is None or now > since:
                self._since[side] = now
            if self._first[side] is None:
                self._first[side] = now
        self._tokens[side] -= 1
        return self._tokens[side]


def label(frame: Any) -> str:
    kind = type(frame)
    if kind is DataFrame:
        return f"DATA under {TINY_DATA} bytes"
    name = kind.__name__.removesuffix("Frame").upper()
    return name if name != "EXTENSION" else f"unknown type 0x{frame.type:x}"


def named(frame: Any) -> str:
    return f"{type(frame).__name__} on stream {frame.stream_id}"


def pending(data: bytes | bytearray) -> str:
    """The frame whose header starts `data`, when it is a known type (its body was refused), else framing."""
    if len(data) >= 9 and (kind := FRAMES.get(data[3])) is not None:
        return f"{kind.__name__} on stream {int.from_bytes(data[5:9], 'big') & 0x7FFFFFFF}"
    return "framing"


def refuse_long_header_block(frames: list[Any]) -> None:
    """h2 keeps up to 64 CONTINUATION frames of a header block before it decodes it: their bytes are
    bounded like the decoded list, not by 64 frames of the largest size a peer announced."""
    if frames and (size := sum(len(f.data) for f in frames)) > MAX_HEADER_LIST_BYTES:
        raise LimitExceeded(
            f"a header block of {size} bytes in {len(frames)} frames without END_HEADERS "
            f"(limit {MAX_HEADER_LIST_BYTES} bytes)"
        )


def refuse_oversized(pending: bytes | bytearray, limit: int) -> None:
    """h2 waits for a whole frame before it checks its length: a frame header announcing more than the
    limit (garbage, or another protocol) is refused at once instead of buffering up to 16 MiB first."""
    if len(pending) >= 9 and (length := int.from_bytes(pending[:3], "big")) > limit:
        raise FrameTooLargeError(f"Received overlong frame: length {length}, max {limit}")


def why(exc: Exception) -> str:
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if "oversized" in text.lower():
        text += f" (limit {MAX_HEADER_LIST_BYTES} bytes decoded)"
    return text


def stream_of(frame: Any) -> int | None:
    sid = getattr(frame, "stream_id", 0)
    return sid if isinstance(sid, int) and sid > 0 else None
