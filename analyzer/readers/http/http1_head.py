"""Plain HTTP/1.1 message heads read without h11 (`http1`), for the unambiguous case only.

A head is *plain* when h11 would parse it without a question and the rest of `http1` needs nothing
h11 keeps about it: `METHOD SP target SP HTTP/1.1` (the method not CONNECT) or `HTTP/1.1 SP 3DIGIT
[SP reason]` with a final status, then `token ":" OWS value OWS` fields of visible ASCII, every line
ended by CRLF, no obs-fold, no empty first line, at most `MAX_HEAD` bytes; a request names one Host
and no Expect or Upgrade; the framing fields are one Content-Length of 1 to 20 digits, or (response
only) `Transfer-Encoding: chunked` alone. On that domain h11 gives the same fields (lower-case names,
values without the OWS), the same framing and the same keep-alive state, so reading it here changes
nothing but the cost (tests/test_http1_head.py compares with h11 alone on every cut).

Everything else is `H11`: the caller hands h11 the bytes from the start of that head, and h11 does
what it always did, its errors in its own words. `WAIT` is said only while h11 would say NEED_DATA
too (no blank line yet, a first byte that can start a line, fewer than h11's 16 kB buffered).
"""

from __future__ import annotations

import enum
import re
from typing import Final, Literal

MAX_HEAD: Final = 16 * 1024
"""h11's `max_incomplete_event_size`: a head that is not complete by then is h11's error to report."""

_TOKEN: Final = r"[-!#$%&'*+.^_`|~0-9a-zA-Z]+"
_VALUE: Final = (
    r"[\x21-\x7e]++(?:[ \t]++[\x21-\x7e]++)*+"  # possessive, no backtracking: no run can start what follows it
)
_REQUEST_LINE: Final = re.compile(rf"({_TOKEN}) ([\x21-\x7e]+) HTTP/1\.1")
_STATUS_LINE: Final = re.compile(r"HTTP/1\.1 ([0-9]{3})(?: ([ \t\x21-\x7e]*))?")
_FIELDS: Final = re.compile(rf"(?:{_TOKEN}:[ \t]*+(?:{_VALUE})?[ \t]*+\r\n)*+")
_LENGTH: Final = re.compile(r"[0-9]{1,20}")
BLANK_LINE: Final = re.compile(rb"\n\r?\n")
"""Where h11 ends a head (`h11._receivebuffer.blank_line_regex`)."""


class Next(enum.Enum):
    WAIT = "wait"
    """No complete head yet, and h11 would wait too: feed more bytes."""
    H11 = "h11"
    """Not plain: h11 reads this message from its first byte."""


class Head:
    """A plain head: its first line's fields, its header fields as `http1` reports them, its size in
    bytes and its body's framing (a `PlainBody` length: bytes, -1 for chunked)."""

    __slots__ = ("fields", "headers", "length", "size")

    def __init__(
        self, *, fields: tuple[str, str], headers: tuple[tuple[str, str], ...], length: int, size: int
    ) -> None:
        self.fields = fields
        self.headers = headers
        self.length = length
        self.size = size


def read_request(buf: bytes | bytearray) -> Head | Next:
    """The request head at the start of `buf`: `fields` is (method, target), `length` its body's."""
    head = _split(buf, _REQUEST_LINE)
    if isinstance(head, Next):
        return head
    first, headers, size = head
    if first[1].upper() == "CONNECT":
        return Next.H11
    hosts = 0
    for name, _value in headers:
        if name in ("expect", "upgrade", "transfer-encoding"):
            return Next.H11
        hosts += name == "host"
    length = _framing(headers)
    if hosts != 1 or length is Next.H11:
        return Next.H11
    return Head(fields=(first[1], first[2]), headers=headers, length=length or 0, size=size)


def read_response(buf: bytes | bytearray) -> Head | Next:
    """The final response head at the start of `buf`, answering a plain request other than HEAD:
    `fields` is (status, reason), `length` its body's (-1 for chunked)."""
    head = _split(buf, _STATUS_LINE)
    if isinstance(head, Next):
        return head
    first, headers, size = head
    if int(first[1]) < 200:
        return Next.H11
    length = _framing(headers)
    if length is Next.H11:
        return Next.H11
    if first[1] in ("204", "304"):  # no body, whatever the fields say
        length = 0
    elif length is None:  # read until the server closes: h11's
        return Next.H11
    return Head(fields=(first[1], first[2] or ""), headers=headers, length=length, size=size)


def _split(
    buf: bytes | bytearray, first_line: re.Pattern[str]
) -> tuple[re.Match[str], tuple[tuple[str, str], ...], int] | Next:
    """The head at the start of BUF as its first line (matched by FIRST_LINE), its fields and its size with
    the blank line; `Next` when it is not complete yet, or not plain."""
    text = _head_text(buf)
    if not isinstance(text, str):
        return text
    line, _, rest = text.partition("\r\n")
    first = first_line.fullmatch(line)
    headers = _fields(rest)
    if first is None or headers is None:
        return Next.H11
    return first, headers, len(text) + 4


def _head_text(buf: bytes | bytearray) -> str | Next:
    """The head before its blank line, decoded; or what to do without one. The search stops at the first
    blank line h11 would end a head at, and never looks past `MAX_HEAD` bytes (the bytes after a head may
    be many more messages)."""
    blank = BLANK_LINE.search(buf, 0, MAX_HEAD)
    if blank is None:
        if not buf:
            return Next.WAIT
        return Next.H11 if buf[0] < 0x21 or len(buf) > MAX_HEAD else Next.WAIT
    end = blank.start() - 1
    if end < 0 or blank.end() - blank.start() != 3 or buf[end] != 0x0D:  # a bare LF ends it
        return Next.H11
    return buf[:end].decode("latin-1")


def _fields(block: str) -> tuple[tuple[str, str], ...] | None:
    """The header fields of a head (lower-case names), or None when one is not plain."""
    if not block:
        return ()
    if _FIELDS.fullmatch(block + "\r\n") is None:
        return None
    fields = []
    for line in block.split("\r\n"):  # a name has no colon, a value no OWS at either end but that one
        name, _, value = line.partition(":")
        fields.append((name.lower(), value.strip(" \t")))
    return tuple(fields)


def _framing(headers: tuple[tuple[str, str], ...]) -> int | Literal[Next.H11] | None:
    """The framing h11 gives a head with these fields: Content-Length's bytes, -1 for chunked, None
    when neither is said; `Next.H11` for more than one framing field or one that is not plain."""
    framing = [(name, value) for name, value in headers if name in ("content-length", "transfer-encoding")]
    if not framing:
        return None
    if len(framing) > 1:
        return Next.H11
    name, value = framing[0]
    if name == "transfer-encoding":
        return -1 if value == "chunked" else Next.H11
    return int(value) if _LENGTH.fullmatch(value) else Next.H11
