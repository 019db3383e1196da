"""Bounded line splitting with line numbers, for every text reader.

Memory stays bounded: a line longer than `max_line_bytes` is skipped while it streams past (the
caller reports it from `RawLine.too_long`), never held whole. Lines end in LF or CRLF; a file
whose first line ends in a lone CR (classic Mac OS) is split on CR, LF and CRLF alike (decided
once per input, so LF files pay nothing for it).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

from .inflate import ByteStream, InflateLimits, InputProblem
from .source import InputSource, InputStream

CHUNK = 1 << 20
DEFAULT_MAX_LINE_BYTES = 16 << 20


@dataclass(frozen=True, slots=True)
class RawLine:
    number: int
    data: bytes
    """The line without its line ending; empty when `too_long`."""
    too_long: int = 0
    """Length in bytes of a line that was skipped for its size, else 0."""
    unterminated: bool = False
    """The last line of the input had no newline (the input may have been cut)."""
    problem: InputProblem | None = None
    """Set on an extra item after the last line when the input's bytes ended early (damaged or
    capped gzip); `number` is then the last line's."""


def iter_line_batches(
    stream: ByteStream, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> Iterator[tuple[int, list[bytes | RawLine]]]:
    """The lines of `stream` in batches (one per chunk read): `(number of the first line, items)`.

    An item is the line's bytes (without its line ending), or a `RawLine` for the unusual lines
    (`too_long`, or the `unterminated` last line), which carries its own number. Item `i` of a
    batch is line `first + i`. The fast path for readers that handle millions of lines: no object
    per ordinary line, and the splitting is done in C.
    """
    number = 0  # lines emitted so far
    buf = b""
    skipping = 0  # > 0 while discarding an overlong line: bytes discarded so far
    for chunk in _chunks(stream):
        if skipping:
            nl = chunk.find(b"\n")
            if nl < 0:
                skipping += len(chunk)
                continue
            number += 1
            yield number, [RawLine(number, b"", too_long=skipping + nl)]
            skipping = 0
            chunk = chunk[nl + 1 :]
        data = buf + chunk if buf else chunk
        lines = data.split(b"\n")
        rest = lines.pop()
        buf = b""
        if lines:
            if b"\r" in data:
                lines = [line[:-1] if line.endswith(b"\r") else line for line in lines]
            items: list[bytes | RawLine] = lines  # type: ignore[assignment]  # list is invariant; only read
            if len(data) > max_line_bytes:  # only then can a complete line be over the limit
                items = [
                    RawLine(number + 1 + i, b"", too_long=len(line)) if len(line) > max_line_bytes else line
                    for i, line in enumerate(lines)
                ]
            yield number + 1, items
            number += len(lines)
        if len(rest) > max_line_bytes:
            skipping = len(rest)
        else:
            buf = rest
    if skipping:
        number += 1
        yield number, [RawLine(number, b"", too_long=skipping, unterminated=True)]
    elif buf:
        line = buf[:-1] if buf.endswith(b"\r") else buf
        number += 1
        yield number, [RawLine(number, line, unterminated=True)]
    if isinstance(stream, InputStream) and stream.problem is not None:
        yield max(number, 1), [RawLine(max(number, 1), b"", problem=stream.problem)]


def _chunks(stream: ByteStream) -> Iterator[bytes]:
    """The stream in pieces of about `CHUNK` bytes; CR line endings made LF when the first line
    ends in a lone CR."""
    chunk = stream.read(CHUNK)
    while chunk and len(chunk) < CHUNK and b"\n" not in chunk and b"\r" not in chunk[:-1]:
        more = stream.read(CHUNK)  # a pipe may hand over less than the first line: read on to its end
        if not more:
            break
        chunk += more
    if not _cr_only(chunk):
        while chunk:
            yield chunk
            chunk = stream.read(CHUNK)
        return
    held = b""  # a CR at the end of a piece may be the first half of a CRLF
    while chunk:
        data = held + chunk
        held = b"\r" if data.endswith(b"\r") else b""
        if held:
            data = data[:-1]
        if data:
            yield data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        chunk = stream.read(CHUNK)
    if held:
        yield b"\n"


def _cr_only(first: bytes) -> bool:
    """True when the first line ending of the input is a lone CR."""
    cr = first.find(b"\r")
    if cr < 0:
        return False
    lf = first.find(b"\n", 0, cr + 2)
    return lf < 0


def iter_lines(stream: ByteStream, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> Iterator[RawLine]:
    for first, items in iter_line_batches(stream, max_line_bytes):
        number = first
        for item in items:
            yield item if isinstance(item, RawLine) else RawLine(number, item)
            number += 1


def source_lines(source: InputSource, limits: InflateLimits) -> Iterator[RawLine]:
    """The lines of an input, opened and closed here."""
    with source.open_binary(limits) as stream:
        yield from iter_lines(stream)


LOOKAHEAD_LINES = 1000
LOOKAHEAD_BYTES = 4 << 20


def peek_lines(
    lines: Iterator[RawLine], max_lines: int = LOOKAHEAD_LINES, max_bytes: int = LOOKAHEAD_BYTES
) -> tuple[list[RawLine], Iterator[RawLine]]:
    """The first lines (at most `max_lines`, stopping once `max_bytes` are held) and an iterator
    over all lines again from the first, so a reader can decide something before it streams."""
    head: list[RawLine] = []
    held = 0
    for raw in lines:
        head.append(raw)
        held += len(raw.data)
        if len(head) >= max_lines or held >= max_bytes:
            break
    return head, itertools.chain(head, lines)
