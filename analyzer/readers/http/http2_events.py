"""What the HTTP/2 layer of the capture reader tells its caller, beyond HTTP/1.1's events (`http1`).

`Http2Connection` and `JoinedHttp2Connection` (`http2`, `http2_joined`) hand `capture_http2` the HTTP/1.1
event types keyed by the HTTP/2 stream id, plus what only HTTP/2 says: a stream reset (RST_STREAM), a
GOAWAY, a server stalled by flow control, a stream error, a flood, and what a capture that joined the
connection late cannot show. Plain frozen values; no h2 state.
"""

from __future__ import annotations

from dataclasses import dataclass

from h2.errors import ErrorCodes

from .http1 import HttpEvent


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


@dataclass(frozen=True, slots=True)
class Joined:
    """What a capture that starts mid-connection cannot show: said once at its start, and for each
    header block that refers to HPACK entries from before it."""

    exchange: int | None
    from_client: bool
    detail: str


H2Event = HttpEvent | StreamReset | GoAway | WindowExhausted | StreamError | Flood | Joined
