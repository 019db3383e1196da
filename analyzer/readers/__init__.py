"""Input readers: find the inputs, detect each one's format from its bytes, yield `Event`s.

Each reader module has one format. `READERS` is tried in order; the first whose `sniff` claims
the head of the input wins, unless `--input-format` names one. The readers import `base` and
`source`, never this module.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from ..errors import InputError, UnknownFormatError
from . import claude_desktop, gosdk, ndjson, pcap, transcript, vscode
from .base import Reader, ReadOptions
from .source import InputSource

__all__ = ["READERS", "InputSource", "ReadOptions", "Reader", "choose_reader", "expand_inputs", "reader_names"]

READERS: tuple[Reader, ...] = (
    transcript.READER,
    pcap.READER,
    claude_desktop.READER,
    vscode.READER,
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
    raise UnknownFormatError(
        source.name,
        "cannot tell the input format from its content",
        f"force one with --input-format ({', '.join(reader_names())})",
    )


def expand_inputs(paths: list[str]) -> Iterator[InputSource]:
    """Inputs in a stable order; a directory is walked (hidden files skipped). Missing paths raise."""
    for given in paths:
        if given == "-":
            with tempfile.TemporaryFile(prefix="cancelwire-stdin-") as spool:
                shutil.copyfileobj(sys.stdin.buffer, spool)
                yield InputSource("<stdin>", None, spool=spool)
            continue
        path = Path(given)
        if path.is_dir():
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in sorted(files):
                    if not name.startswith("."):
                        full = Path(root) / name
                        yield InputSource(str(full), full, walked=True)
        else:
            yield InputSource(given, path)
