"""A bounded, streaming scan of a HAR file: `log.creator` and each `log.entries[i]` as its own bytes.

A HAR is one JSON document, often hundreds of megabytes (bodies are strings inside it). Parsing it
whole would make memory follow the file size; this scanner walks the document's structure a chunk at
a time and cuts out only the values the reader needs (`log.creator` and every element of
`log.entries`), each at most `MAX_ENTRY_BYTES`, so memory follows the largest entry, not the file.
The cut-out bytes are parsed by orjson; the rest is checked for balanced structure only.

It tracks line numbers (an entry's evidence is the line where it starts) and byte offsets (a syntax
error names both), and nesting depth: a HAR is about six levels deep (bodies are strings), so an
entry deeper than `MAX_DEPTH` is skipped and a document deeper than `MAX_SCAN_DEPTH` is refused.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

CHUNK = 1 << 20
MAX_ENTRY_BYTES = 64 << 20
"""An entry larger than this is skipped (named); the bodies of MCP traffic are far smaller."""
MAX_DEPTH = 64
"""Nesting a HAR never needs; an entry deeper than this is skipped, anything else deeper is refused."""
MAX_SCAN_DEPTH = 100_000
"""Open containers tracked while skipping a too-deep entry (one byte each); deeper stops the scan."""
MAX_KEY_BYTES = 64

_STRUCTURE = re.compile(rb'["{}\[\]:,]')
_STRING_END = re.compile(rb'["\\]')
_SPACE = frozenset(b" \t\r\n")
_OBJECT, _ARRAY, _QUOTE, _BACKSLASH = 0x7B, 0x5B, 0x22, 0x5C
_CLOSER = {0x7D: _OBJECT, 0x5D: _ARRAY}


class Part(StrEnum):
    CREATOR = "creator"
    ENTRY = "entry"


@dataclass(frozen=True, slots=True)
class Piece:
    """One value cut out of the document."""

    part: Part
    index: int
    """Entry number from 0 (0 for the creator)."""
    line: int
    """1-based line where the value starts."""
    offset: int
    """Byte offset where the value starts."""
    data: bytes | None
    """The value's bytes; None when `problem` says why it was not kept."""
    problem: str | None = None


class HarSyntaxError(Exception):
    """The document is not well-formed at `offset` (line `line`); nothing after it can be read."""

    def __init__(self, line: int, offset: int, what: str) -> None:
        super().__init__(f"line {line}, byte {offset}: {what}")
        self.line = line
        self.offset = offset
        self.what = what


class ByteReader(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


@dataclass(slots=True)
class _Capture:
    part: Part
    index: int
    line: int
    offset: int
    depth: int
    """Stack depth outside the value: it ends when the stack is back to this."""
    data: bytearray | None
    """None once the value is known to be skipped (`problem`)."""
    start: int
    """Where in the current chunk the bytes not yet copied begin."""
    problem: str | None = None


class Scanner:
    """Walks one HAR document, yielding `Piece`s in document order."""

    def __init__(self, stream: ByteReader, *, max_entry: int = MAX_ENTRY_BYTES) -> None:
        self._stream = stream
        self._max_entry = max_entry
        self._stack = bytearray()
        """Open containers, `{` or `[`."""
        self._path: list[bytes | None] = []
        """For the first three open containers: the key each is the value of (None for the root)."""
        self._key: bytes | None = None
        """The last key read in the current object, while its value is pending."""
        self._key_parts: bytearray | None = None
        """A key being read (only in the root and `log` objects, where keys matter)."""
        self._expect_key = False
        self._in_string = False
        self._escape = False
        """A backslash ended the last chunk: the next byte is escaped."""
        self._capture: _Capture | None = None
        self._base = 0
        """File offset of the current chunk's first byte."""
        self._lines = 1
        """Line number at the current chunk's first byte."""
        self._counted = (0, 1)
        """(position in the current chunk, its line): lines are counted on from there, never again
        from the chunk's start, or a chunk of many small entries costs its size once per entry."""
        self.entries = 0
        self._element_named = False
        """The current element of `log.entries` was already yielded (as a value that is no entry)."""
        self.seen_root = False
        self.seen_entries = False
        """A `log.entries` array was found."""

    def pieces(self) -> Iterator[Piece]:
        chunk = b""
        while data := self._stream.read(CHUNK):
            self._advance(chunk)
            chunk = data
            yield from self._chunk(chunk)
            self._keep_rest(chunk)
        self._advance(chunk)
        self._finish()

    @property
    def line(self) -> int:
        """The line reached (the last one, once the scan is over)."""
        return self._lines

    def _advance(self, chunk: bytes) -> None:
        self._base += len(chunk)
        self._lines += chunk.count(b"\n")
        self._counted = (0, self._lines)

    def _line_at(self, chunk: bytes, at: int) -> int:
        """The line of `chunk[at]`; positions asked for only grow within a chunk."""
        pos, line = self._counted
        if at < pos:
            pos, line = 0, self._lines
        line += chunk.count(b"\n", pos, at)
        self._counted = (at, line)
        return line

    def _chunk(self, chunk: bytes) -> Iterator[Piece]:
        pos, size = 0, len(chunk)
        while pos < size:
            if self._in_string:
                pos = self._string(chunk, pos)
                continue
            found = _STRUCTURE.search(chunk, pos)
            end = found.start() if found is not None else size
            if not self._stack and pos < end:
                self._outside(chunk, pos, end)
            elif pos < end and self._in_entries() and chunk[pos:end].strip():
                piece = self._scalar_entry(chunk, pos)
                if piece is not None:
                    yield piece
            if found is None:
                return
            pos = end + 1
            piece = self._char(chunk, end, chunk[end])
            if piece is not None:
                yield piece

    def _in_entries(self) -> bool:
        """Directly inside the `log.entries` array (where only entry objects belong)."""
        path = self._path
        return len(self._stack) == 3 and self._capture is None and path[2] == b"entries" and path[1] == b"log"

    def _scalar_entry(self, chunk: bytes, at: int) -> Piece | None:
        """An element of `log.entries` that is a string, number or literal: named once, skipped."""
        if self._element_named:
            return None
        self._element_named = True
        self.entries += 1
        line = self._line_at(chunk, at)
        return Piece(Part.ENTRY, self.entries - 1, line, self._base + at, None, "an entry must be an object")

    def _char(self, chunk: bytes, at: int, char: int) -> Piece | None:
        """One structural character (outside strings); a value cut out when it closes one."""
        if char == _QUOTE:
            if not self._stack:
                self._fail(chunk, at, "text after the document" if self.seen_root else "a string before the document")
            self._in_string = True
            if self._in_entries():
                return self._scalar_entry(chunk, at)
            if self._expect_key and len(self._stack) <= 2:
                self._key_parts = bytearray()
        elif char in (_OBJECT, _ARRAY):
            self._open(chunk, at, char)
        elif char in _CLOSER:
            return self._close(chunk, at, char)
        elif not self._stack:
            self._fail(chunk, at, f"{chr(char)!r} outside the document")
        elif char == 0x2C:  # ','
            self._expect_key = self._stack[-1] == _OBJECT
            self._element_named = False
        elif self._stack[-1] != _OBJECT:
            self._fail(chunk, at, "':' in an array")
        return None

    def _string(self, chunk: bytes, pos: int) -> int:
        """Past the string's closing quote, or the chunk's end while still inside it."""
        if self._escape:
            self._escape = False
            pos += 1
        start = pos
        while True:
            found = _STRING_END.search(chunk, pos)
            if found is None:
                self._key_bytes(chunk, start, len(chunk))
                return len(chunk)
            at = found.start()
            if chunk[at] == _BACKSLASH:
                if at + 1 == len(chunk):
                    self._escape = True
                    self._key_bytes(chunk, start, len(chunk))
                    return len(chunk)
                pos = at + 2
                continue
            self._key_bytes(chunk, start, at)
            self._in_string = False
            if self._key_parts is not None:
                self._key = bytes(self._key_parts)
                self._key_parts = None
            self._expect_key = False
            return at + 1

    def _key_bytes(self, chunk: bytes, start: int, end: int) -> None:
        if self._key_parts is not None:
            self._key_parts += chunk[start : min(end, start + MAX_KEY_BYTES)]

    # -- structure -----------------------------------------------------------------------------

    def _open(self, chunk: bytes, at: int, char: int) -> None:
        depth = len(self._stack)
        if depth == 0:
            if self.seen_root:
                self._fail(chunk, at, "a second JSON value after the document")
            if char != _OBJECT:
                self._fail(chunk, at, "a HAR file is one JSON object, not an array")
            self.seen_root = True
        capture = self._capture
        if capture is not None:
            if depth - capture.depth >= MAX_DEPTH and capture.problem is None:
                capture.problem, capture.data = f"nested deeper than {MAX_DEPTH} levels", None
            if depth >= MAX_SCAN_DEPTH:
                self._fail(chunk, at, f"nesting deeper than {MAX_SCAN_DEPTH} levels")
        elif depth >= MAX_DEPTH:
            self._fail(chunk, at, f"nesting deeper than {MAX_DEPTH} levels")
        if depth < 3:
            self._path.append(self._key)
        self._stack.append(char)
        if capture is None:
            self._maybe_capture(chunk, at, depth, char)
        self._key = None
        self._expect_key = char == _OBJECT

    def _maybe_capture(self, chunk: bytes, at: int, depth: int, char: int) -> None:
        path = self._path
        if depth == 2 and path[1] == b"log" and char == _OBJECT and path[2] == b"creator":
            self._start(chunk, at, Part.CREATOR, 0)
        elif depth == 2 and path[1] == b"log" and char == _ARRAY and path[2] == b"entries":
            self.seen_entries = True
        elif depth == 3 and path[1] == b"log" and path[2] == b"entries" and self._stack[2] == _ARRAY:
            self._start(chunk, at, Part.ENTRY, self.entries)
            self.entries += 1

    def _close(self, chunk: bytes, at: int, char: int) -> Piece | None:
        if not self._stack or self._stack[-1] != _CLOSER[char]:
            self._fail(chunk, at, f"unexpected {chr(char)!r}")
        self._stack.pop()
        if len(self._stack) < 3:
            self._path.pop()
        self._key = None
        self._expect_key = False
        capture = self._capture
        if capture is None or len(self._stack) != capture.depth:
            return None
        self._capture = None
        if capture.data is not None:
            capture.data += chunk[capture.start : at + 1]
            if len(capture.data) > self._max_entry:
                capture.data, capture.problem = None, f"larger than {self._max_entry} bytes"
        data = bytes(capture.data) if capture.data is not None else None
        return Piece(capture.part, capture.index, capture.line, capture.offset, data, capture.problem)

    # -- cutting values out ----------------------------------------------------------------------

    def _start(self, chunk: bytes, at: int, part: Part, index: int) -> None:
        line = self._line_at(chunk, at)
        self._capture = _Capture(part, index, line, self._base + at, len(self._stack) - 1, bytearray(), at)

    def _keep_rest(self, chunk: bytes) -> None:
        """At a chunk's end: copy what the open value holds of it (or give up past the size limit)."""
        capture = self._capture
        if capture is None:
            return
        if capture.data is not None:
            capture.data += chunk[capture.start :]
            if len(capture.data) > self._max_entry:
                capture.data, capture.problem = None, f"larger than {self._max_entry} bytes"
        capture.start = 0

    # -- errors ----------------------------------------------------------------------------------

    def _outside(self, chunk: bytes, pos: int, end: int) -> None:
        """Outside the document only white space may appear."""
        for i in range(pos, end):
            if chunk[i] not in _SPACE:
                what = "text after the document" if self.seen_root else "the file does not start with a JSON object"
                self._fail(chunk, i, what)

    def _fail(self, chunk: bytes, at: int, what: str) -> None:
        raise HarSyntaxError(self._line_at(chunk, at), self._base + at, what)

    def _finish(self) -> None:
        if self._in_string or self._stack:
            where = "a string" if self._in_string else "the document"
            raise HarSyntaxError(self._lines, self._base, f"the file ends inside {where} (cut short?)")
        if not self.seen_root:
            raise HarSyntaxError(self._lines, self._base, "the file holds no JSON object")
