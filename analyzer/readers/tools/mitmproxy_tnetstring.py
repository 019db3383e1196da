"""Typed netstrings (tnetstrings), the encoding of mitmproxy's flow files, read within bounds.

A value is `LENGTH:DATA TAG`: LENGTH in ASCII digits, then exactly LENGTH bytes of DATA, then one TAG byte
saying its type: `,` bytes, `;` text (UTF-8; mitmproxy's own), `#` integer, `^` float, `!` `true`/`false`,
`~` null (no data), `]` a list (its elements one after another in DATA), `}` a dict (key, value, key,
value, ...). A flow file is one dict per flow, one after another, nothing between (mitmproxy's
`mitmproxy/io/tnetstring.py`, read to learn the format; this is written from the format, not from it).

Bounds: a top-level value (one flow) of at most `MAX_FLOW_BYTES`, read whole (mitmproxy writes a flow with
its bodies in it); nesting at most `MAX_DEPTH` deep (a flow is five); at most `MAX_VALUES` values in a flow;
an integer of at most `MAX_DIGITS` digits. Keys are read as text (mitmproxy's old files wrote them as bytes).
"""

from __future__ import annotations

from typing import Any

from ...errors import InputError
from ..inflate import ByteStream
from ..source import read_up_to

MAX_FLOW_BYTES = 64 << 20
"""One flow, bodies included, at most: larger is refused (the reading stops there, named)."""
MAX_DEPTH = 32
MAX_VALUES = 200_000
MAX_DIGITS = 40
_PREFIX_DIGITS = 10
"""Digits of a length prefix at most (`MAX_FLOW_BYTES` has 8)."""


class TnetError(ValueError):
    """What is wrong with a value, and where (a byte offset in the file)."""

    def __init__(self, what: str, offset: int) -> None:
        super().__init__(what)
        self.what = what
        self.offset = offset


def next_flow(stream: ByteStream, offset: int, name: str) -> bytes | None:
    """The next top-level value's bytes (prefix, data and tag), starting at `offset`; None at the end of the file.
    `TnetError` when its frame cannot be read (the file cannot be followed past it)."""
    prefix = read_up_to(stream, 1, name)
    if not prefix:
        return None
    while prefix[-1:].isdigit():
        if len(prefix) > _PREFIX_DIGITS:
            raise TnetError(f"a length prefix longer than {_PREFIX_DIGITS} digits", offset)
        more = read_up_to(stream, 1, name)
        if not more:
            raise TnetError("the file ends inside a length prefix (cut)", offset)
        prefix += more
    if prefix[-1:] != b":" or len(prefix) < 2:
        raise TnetError(f"not a tnetstring: {prefix[:12]!r} where a length prefix should be", offset)
    length = int(prefix[:-1])
    if length > MAX_FLOW_BYTES:
        raise TnetError(f"a flow that claims {length} bytes, past the {MAX_FLOW_BYTES >> 20} MiB read", offset)
    body = read_up_to(stream, length + 1, name)
    if len(body) < length + 1:
        raise TnetError(f"the file ends {length + 1 - len(body)} bytes into a flow of {length} (cut)", offset)
    return prefix + body


def parse(data: bytes, offset: int) -> Any:
    """The value `data` holds (one whole value, as `next_flow` gives it), or `TnetError`."""
    reader = _Tnet(data, offset)
    value, end = reader.value(0, len(data), 0)
    if end != len(data):
        raise TnetError("bytes after the value", offset + end)
    return value


class _Tnet:
    """One flow's bytes, parsed in place (slices of `data`, no copies of containers)."""

    def __init__(self, data: bytes, offset: int) -> None:
        self.data = data
        self.offset = offset
        self.values = 0

    def value(self, at: int, end: int, depth: int) -> tuple[Any, int]:
        """The value starting at `at` (its tag before `end`) and where the next one starts."""
        if depth > MAX_DEPTH:
            raise TnetError(f"nested deeper than {MAX_DEPTH} levels", self.offset + at)
        self.values += 1
        if self.values > MAX_VALUES:
            raise TnetError(f"more than {MAX_VALUES} values in one flow", self.offset + at)
        data = self.data
        colon = data.find(b":", at, min(end, at + _PREFIX_DIGITS + 1))
        digits = data[at:colon]
        if colon <= at or not digits.isdigit():
            raise TnetError("a value without its length prefix", self.offset + at)
        start = colon + 1
        stop = start + int(digits)
        if stop >= end:
            raise TnetError(f"a value of {int(digits)} bytes that runs past its container", self.offset + at)
        tag = data[stop]
        if tag == 0x2C:  # , bytes: the most common, read here
            return data[start:stop], stop + 1
        return self.typed(tag, start, stop, depth), stop + 1

    def typed(self, tag: int, start: int, stop: int, depth: int) -> Any:
        raw = self.data[start:stop] if tag not in (0x5D, 0x7D) else b""
        if tag == 0x3B:  # ;
            return raw.decode("utf-8", "replace")
        if tag in (0x23, 0x5E):  # # ^
            return self.number(raw, tag == 0x23, start)
        if tag == 0x21 and raw in (b"true", b"false"):  # !
            return raw == b"true"
        if tag == 0x7E and start == stop:  # ~
            return None
        if tag == 0x5D:  # ]
            items = []
            while start < stop:
                item, start = self.value(start, stop, depth + 1)
                items.append(item)
            return items
        if tag == 0x7D:  # }
            return self.mapping(start, stop, depth)
        raise TnetError(f"unknown type tag {chr(tag)!r} (or a bad literal)", self.offset + stop)

    def mapping(self, start: int, stop: int, depth: int) -> dict[str, Any]:
        table: dict[str, Any] = {}
        while start < stop:
            key, start = self.value(start, stop, depth + 1)
            if start >= stop:
                raise TnetError("a dict key without its value", self.offset + start)
            value, start = self.value(start, stop, depth + 1)
            if isinstance(key, bytes):
                key = key.decode("utf-8", "replace")
            if not isinstance(key, str):
                raise TnetError(f"a dict key that is a {type(key).__name__}, not text", self.offset + start)
            table[key] = value
        return table

    def number(self, raw: bytes, integer: bool, start: int) -> int | float:
        if len(raw) > MAX_DIGITS:
            raise TnetError(f"a number of more than {MAX_DIGITS} digits", self.offset + start)
        try:
            return int(raw) if integer else float(raw)
        except ValueError:
            raise TnetError(f"not a number: {raw[:20]!r}", self.offset + start) from None


def stopped(name: str, flow: int, exc: TnetError) -> InputError:
    """The error that ends a flow file whose frames cannot be followed past flow number `flow`."""
    return InputError(
        name,
        f"flow {flow} at byte {exc.offset}: {exc.what}; the flows after it are not read",
        "a flow file written by mitmdump -w, whole (one cut or damaged flow ends the reading)",
    )
