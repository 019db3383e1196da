"""Input readers: find the inputs, detect each one's format from its bytes, yield `Event`s.

Each reader module has one format. `READERS` is tried in order; the first whose `sniff` claims
the head of the input wins, unless `--input-format` names one. The readers import `base` and
`source`, never this module.
"""

from __future__ import annotations

from ..errors import InputError, UnknownFormatError
from .base import Reader, ReadOptions
from .capture import reader as capture_reader
from .har import reader as har_reader
from .source import InputSource
from .text import claude_desktop, gosdk, ndjson, pysdk, transcript, unreadable, vscode
from .tools import inspector, mcpsnoop, mitmproxy, otlp
from .walk import expand_inputs

__all__ = ["READERS", "InputSource", "ReadOptions", "Reader", "choose_reader", "expand_inputs", "reader_names"]

READERS: tuple[Reader, ...] = (
    transcript.READER,
    capture_reader.READER,
    har_reader.READER,
    mcpsnoop.READER,
    inspector.READER,
    mitmproxy.READER,
    otlp.READER,
    claude_desktop.READER,
    vscode.READER,
    pysdk.READER,
    gosdk.READER,
    ndjson.READER,
)
"""Every reader, in sniffing order (most specific first)."""


def reader_names() -> list[str]:
    return [reader.name for reader in READERS]


def choose_reader(source: InputSource, forced: str | None) -> Reader:
    if forced:
        for reader in READERS:
            if reader.name == forced:
                return reader
        raise InputError(source.name, f"unknown input format {forced!r}", f"one of: {', '.join(reader_names())}")
    head = source.head()
    if not head:
        raise InputError(source.name, "the input is empty")
    for reader in READERS:
        if reader.sniff(head):
            return reader
    known = unreadable.recognise(head)
    if known is not None:
        raise UnknownFormatError(source.name, *known)
    raise UnknownFormatError(
        source.name,
        "cannot tell the input format from its content",
        f"force one with --input-format ({', '.join(reader_names())})",
    )
