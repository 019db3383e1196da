"""A plain HTTP/1.1 response body read without stepping h11 for every TCP segment (`http1`).

h11 parses each response head and decides its framing; when that framing is Content-Length or
`Transfer-Encoding: chunked` (the common JSON and SSE responses), the body is read here: the same
`ResponseData` pieces as h11's `Data` events (one per chunk per feed, never empty), the same errors
with h11's wording. A chunked body that turns unusual at a chunk boundary (a chunk extension,
whitespace, trailers, a size line cut by a segment and longer than `MAX_HELD`, the final chunk's
CRLF not there yet) goes back to h11 from that boundary (`BodyOutcome.H11`): h11 then does everything it
would have done from there.
"""

from __future__ import annotations

import enum
import re
from typing import Final

import h11

MAX_HELD = 64
"""Bytes of a chunk-size line cut by a segment left to be fed again with the next (h11 allows 16 kB: more goes
to h11)."""
PLAIN_SIZE: Final = re.compile(rb"[0-9A-Fa-f]{1,16}")
FINAL_CHUNK: Final = b"0\r\n\r\n"


class BodyOutcome(enum.Enum):
    MORE = "more"
    """The body goes on: feed the next bytes."""
    END = "end"
    """The body ended: the bytes from `Feed.end` on belong to the next response."""
    H11 = "h11"
    """Unusual chunked framing: the bytes from `Feed.end` on are the body from a chunk boundary on, for h11
    (`chunked_parser`)."""
    ERROR = "error"
    """Not valid HTTP/1.1: `Feed.error` says why, in h11's words."""


class Feed:
    """What one feed read: the body's pieces, how it ends, and where in the bytes fed the body's stop (`end`;
    with `MORE`, the bytes from there are a chunk-size line not complete yet, to feed again with the next)."""

    __slots__ = ("end", "error", "outcome", "pieces")

    def __init__(self, pieces: list[bytes], outcome: BodyOutcome, end: int, error: str = "") -> None:
        self.pieces = pieces
        self.outcome = outcome
        self.end = end
        self.error = error


def plain_framing(method: bytes, response: h11.Response) -> int | None:
    """The body's length for Content-Length framing, -1 for chunked, None when h11 should read it (no
    body by rule, read until close, or a request whose response h11 frames its own way). h11 has already
    validated the header values (a single Content-Length of digits, Transfer-Encoding only `chunked`)."""
    if method in (b"HEAD", b"CONNECT") or response.status_code in (204, 304):
        return None
    length = None
    for name, value in response.headers:
        if name == b"transfer-encoding":
            return -1
        if name == b"content-length":
            length = int(value)
    return length


class PlainBody:
    """The framing state of one plain body: bytes left in the body (Content-Length) or in the current
    chunk, and the chunk's CRLF still expected."""

    __slots__ = ("chunked", "footer", "length", "remaining")

    def __init__(self, length: int) -> None:
        self.chunked = length < 0
        self.length = max(length, 0)
        self.remaining = self.length
        self.footer = b""

    def feed(self, data: bytes | bytearray) -> Feed:
        """Read the body's bytes at the start of DATA (each piece copied out once, the rest left in place)."""
        if not self.chunked:
            end = min(len(data), self.remaining)
            self.remaining -= end
            pieces = [bytes(data[:end])] if end else []
            return Feed(pieces, BodyOutcome.MORE if self.remaining else BodyOutcome.END, end)
        return self._chunks(data)

    def eof_error(self, left: bool = False) -> str:
        """h11's words for a body the server's FIN cut (`left`: with a chunk-size line not complete)."""
        if left:
            return "peer unexpectedly closed connection"
        if self.chunked:
            return "peer closed connection without sending complete message body (incomplete chunked read)"
        received = self.length - self.remaining
        return (
            "peer closed connection without sending complete message body "
            f"(received {received} bytes, expected {self.length})"
        )

    def _chunks(self, data: bytes | bytearray) -> Feed:
        pieces: list[bytes] = []
        pos = 0
        while True:
            if self.remaining:
                piece = bytes(data[pos : pos + self.remaining])
                if not piece:
                    return Feed(pieces, BodyOutcome.MORE, pos)
                pieces.append(piece)
                pos += len(piece)
                self.remaining -= len(piece)
                if self.remaining:
                    return Feed(pieces, BodyOutcome.MORE, pos)
                self.footer = b"\r\n"
            if self.footer:
                got = data[pos : pos + len(self.footer)]
                if not got:
                    return Feed(pieces, BodyOutcome.MORE, pos)
                if got != self.footer[: len(got)]:
                    why = f"malformed chunk footer: {bytearray(got)!r} (expected {self.footer!r})"
                    return Feed(pieces, BodyOutcome.ERROR, pos, error=why)
                pos += len(got)
                self.footer = self.footer[len(got) :]
                if self.footer:
                    return Feed(pieces, BodyOutcome.MORE, pos)
            boundary = self._size_line(data, pos, pieces)
            if isinstance(boundary, Feed):
                return boundary
            pos = boundary

    def _size_line(self, data: bytes | bytearray, pos: int, pieces: list[bytes]) -> Feed | int:
        """At a chunk boundary: where the chunk's data starts, or how the feed ends (a size line not complete
        yet is left to be fed again)."""
        end = data.find(b"\r\n", pos)
        if end < 0:
            return Feed(pieces, BodyOutcome.H11 if len(data) - pos > MAX_HELD else BodyOutcome.MORE, pos)
        line = data[pos:end]
        if PLAIN_SIZE.fullmatch(line) is None:
            return Feed(pieces, BodyOutcome.H11, pos)
        self.remaining = int(line, 16)
        if self.remaining:
            return end + 2
        if data.startswith(FINAL_CHUNK, pos):
            return Feed(pieces, BodyOutcome.END, pos + len(FINAL_CHUNK))
        return Feed(pieces, BodyOutcome.H11, pos)


def chunked_parser(conn: h11.Connection) -> h11.Connection:
    """CONN (h11 answering a request, sent) made to stand at the start of a chunked body, as h11 would be
    at any chunk boundary of one: its framing is all that h11 keeps of the response head."""
    conn.receive_data(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
    conn.next_event()  # that head: already reported from the real one
    return conn
