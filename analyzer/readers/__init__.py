"""Input readers: find the inputs, detect each one's format from its bytes, yield `Event`s.

Each reader module has one format. `READERS` is tried in order; the first whose `sniff` claims
the head of the input wins, unless `--input-format` names one.
"""

from __future__ import annotations

import gzip
import os
import shutil
import sys
import tempfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Protocol

from ..errors import InputError, UnknownFormatError
from ..model import Event, Vantage

HEAD_BYTES = 64 * 1024
GZIP_MAGIC = b"\x1f\x8b"


@dataclass(frozen=True, slots=True)
class ReadOptions:
    """Reader settings from the command line; every reader gets the same object."""

    vantage: Vantage | None = None
    """Overrides the side a format records from (or what we infer for go-sdk / plain NDJSON)."""
    http_ports: tuple[int, ...] = ()
    """Captures: TCP ports to decode as HTTP whatever their content looks like."""
    keylog: Path | None = None
    """Captures: an SSLKEYLOGFILE to decrypt TLS."""
    extra: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class InputSource:
    """One input file. `name` is how the user named it (used in evidence)."""

    name: str
    path: Path | None
    """None for standard input."""
    walked: bool = False
    """Found by walking a directory (not named by the user): an unknown format is skipped, not an error."""
    spool: BinaryIO | None = None
    """Standard input, copied to a temporary file so it can be sniffed and then read."""

    @property
    def compressed(self) -> bool:
        return self.path is not None and _is_gzip(self.path)

    @contextmanager
    def open_binary(self) -> Iterator[BinaryIO]:
        """The decompressed bytes of the input."""
        if self.spool is not None:
            self.spool.seek(0)
            yield self.spool
            return
        assert self.path is not None  # only standard input has no path, and it is spooled
        try:
            raw = self.path.open("rb")
        except OSError as exc:
            raise InputError(self.name, f"cannot open: {exc.strerror}") from exc
        with raw:
            if raw.read(2) == GZIP_MAGIC:
                raw.seek(0)
                with gzip.open(raw, "rb") as unzipped:
                    yield _CheckedGzip(self.name, unzipped)  # type: ignore[misc]
            else:
                raw.seek(0)
                yield raw

    def head(self) -> bytes:
        with self.open_binary() as stream:
            try:
                return stream.read(HEAD_BYTES)
            except (OSError, EOFError) as exc:
                raise InputError(self.name, f"cannot read: {exc}") from exc

    @contextmanager
    def local_file(self) -> Iterator[Path]:
        """A plain file path for tools that need one (tshark); decompresses .gz to a temp file."""
        if self.path is not None and not self.compressed:
            yield self.path
            return
        with tempfile.TemporaryDirectory(prefix="cancelwire-") as tmp:
            target = Path(tmp) / "input"
            with self.open_binary() as src, target.open("wb") as dst:
                shutil.copyfileobj(src, dst)
            yield target


class _CheckedGzip:
    """A gzip stream whose damage (cut short, bad CRC) is an `InputError` naming the file."""

    def __init__(self, name: str, stream: gzip.GzipFile) -> None:
        self.name = name
        self.stream = stream

    def read(self, size: int = -1) -> bytes:
        try:
            return self.stream.read(size)
        except (EOFError, OSError, zlib.error) as exc:
            raise InputError(self.name, f"the gzip data is damaged or cut short ({exc})") from exc


def _is_gzip(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return fh.read(2) == GZIP_MAGIC
    except OSError:
        return False


class Reader(Protocol):
    name: str
    """Format name shown in reports and accepted by `--input-format`."""

    def sniff(self, head: bytes) -> bool:
        """True when the first bytes look like this format."""
        ...

    def read(self, source: InputSource, options: ReadOptions) -> Iterator[Event]:
        """Every event of the input in source order. Bad lines/frames become `Anomaly`s;
        only `InputError` is raised, for an input that cannot be read at all."""
        ...


def all_readers() -> tuple[Reader, ...]:
    """Every reader, in sniffing order (most specific first)."""
    from . import claude_desktop, gosdk, ndjson, pcap, transcript, vscode

    return (transcript.READER, pcap.READER, claude_desktop.READER, vscode.READER, gosdk.READER, ndjson.READER)


def reader_names() -> list[str]:
    return [reader.name for reader in all_readers()]


def choose_reader(source: InputSource, forced: str | None) -> Reader:
    readers = all_readers()
    if forced:
        for reader in readers:
            if reader.name == forced:
                return reader
        raise InputError(source.name, f"unknown input format {forced!r}", f"one of: {', '.join(reader_names())}")
    head = source.head()
    if not head:
        raise InputError(source.name, "the input is empty")
    for reader in readers:
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
