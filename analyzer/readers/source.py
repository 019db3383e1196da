"""One input as the readers see it: its name, and its bytes (inflated when gzip, without a UTF-8 BOM).

Opening never blocks: a path is opened with `O_NONBLOCK` and checked with `fstat`, so a FIFO with
no writer, a socket or a device is never waited on or read without end. Standard input and a FIFO
named on the command line (a process substitution such as `<(zcat x.gz)` is one) are read once
from start to end as a `Pipe`: the first bytes (what sniffing looked at) are kept and replayed to
the reader, so nothing needs a seek.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Protocol

from ..errors import InputError, SkippedInputError
from ..model import AnomalyName
from .inflate import DEFAULT_LIMITS, GZIP_MAGIC, ByteStream, InflateLimits, Inflater, InputProblem

HEAD_BYTES = 64 * 1024
"""Bytes a reader's `sniff` sees."""
UTF8_BOM = b"\xef\xbb\xbf"
KEEP_BYTES = 1 << 20
"""A pipe's first bytes kept for a second pass (sniffing reads `HEAD_BYTES` inflated bytes)."""
COPY_PIECE = 1 << 20
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC


@dataclass(frozen=True, slots=True)
class InputSource:
    """One input file. `name` is how the user named it (used in evidence)."""

    name: str
    path: Path | None
    """None for standard input."""
    walked: bool = False
    """Found by walking a directory (not named by the user): an unknown format is skipped, not an error."""
    pipe: Pipe | None = None
    """Standard input, or a FIFO named on the command line: read once (see `Pipe`)."""
    problem: InputError | None = None
    """Raised when the input is opened: a folder that could not be listed or holds no files, a
    FIFO, socket or device found by walking (skipped)."""

    @contextmanager
    def open_binary(self, limits: InflateLimits = DEFAULT_LIMITS) -> Iterator[InputStream]:
        """The input's bytes: inflated (within `limits`) when gzip, without a leading UTF-8 BOM."""
        with self._open_raw() as raw:
            start = read_up_to(raw, len(UTF8_BOM), self.name)
            if start.startswith(GZIP_MAGIC):
                raw.seek(0)
                yield InputStream(self.name, Inflater(raw, limits), skip_bom=True)
            else:
                raw.seek(len(UTF8_BOM) if start == UTF8_BOM else 0)
                yield InputStream(self.name, raw)

    @contextmanager
    def seekable(self) -> Iterator[tuple[Seekable, int] | None]:
        """The file and where its content starts (past a UTF-8 BOM), when it can be read at any offset: a
        regular file that is not gzip; None for a pipe or a compressed file."""
        if self.pipe is not None or self.path is None:
            yield None
            return
        with self._open_raw() as raw:
            start = read_up_to(raw, len(UTF8_BOM), self.name)
            yield None if start.startswith(GZIP_MAGIC) else (raw, len(UTF8_BOM) if start == UTF8_BOM else 0)

    def head(self) -> bytes:
        with self.open_binary() as stream:
            return read_up_to(stream, HEAD_BYTES, self.name)

    @contextmanager
    def local_file(self, limits: InflateLimits = DEFAULT_LIMITS) -> Iterator[Path]:
        """A plain file path for tools that need one (tshark): the file itself, or a temporary copy
        of its bytes (inflated, or read from a pipe) in a folder that is removed on every way out.

        The copy stops at `limits.max_bytes`. When it was cut short (damaged or capped), the tool
        still gets what was copied, and an `InputError` saying why is raised once it is done.
        """
        if self.pipe is None and self.path is not None and not self._compressed():
            yield self.path
            return
        with tempfile.TemporaryDirectory(prefix="cancelwire-") as tmp:
            target = Path(tmp) / "input"
            with self.open_binary(limits) as src, target.open("wb") as dst:
                problem = _copy(src, dst, limits.max_bytes)
            yield target
        if problem is not None:
            raise InputError(self.name, problem.detail)

    def _compressed(self) -> bool:
        with self._open_raw() as raw:
            return read_up_to(raw, len(GZIP_MAGIC), self.name) == GZIP_MAGIC

    @contextmanager
    def _open_raw(self) -> Iterator[Seekable]:
        if self.problem is not None:
            raise self.problem
        if self.pipe is not None:
            yield self.pipe.replay()
            return
        if self.path is None:  # pragma: no cover - standard input always has a pipe
            raise InputError(self.name, "no path and no pipe")
        fd = open_nonblocking(self.name, self.path)
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            os.close(fd)
            raise SkippedInputError(self.name, f"{describe(mode)}, not a regular file: not read")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb") as raw:
            yield raw


class Seekable(ByteStream, Protocol):
    def seek(self, offset: int, whence: int = 0, /) -> int: ...


class InputStream:
    """An input's bytes as a reader reads them: a read error is an `InputError` naming the input,
    and `problem` says why the bytes ended before the end of the file (damaged or capped gzip)."""

    def __init__(self, name: str, stream: ByteStream, *, skip_bom: bool = False) -> None:
        self.name = name
        self._stream = stream
        self._skip_bom = skip_bom

    def read(self, size: int = -1, /) -> bytes:
        try:
            data = self._stream.read(size)
        except OSError as exc:
            raise InputError(self.name, f"cannot read: {exc.strerror or exc}") from exc
        if self._skip_bom:
            self._skip_bom = False
            if data.startswith(UTF8_BOM):
                return data[len(UTF8_BOM) :] or self.read(size)
        return data

    @property
    def problem(self) -> InputProblem | None:
        return self._stream.problem if isinstance(self._stream, Inflater) else None


class Pipe:
    """A non-seekable input, read once from start to end. What is read before `KEEP_BYTES` is kept,
    so reading can start again from the first byte after sniffing; past that it cannot."""

    def __init__(self, name: str, path: Path | None) -> None:
        self.name = name
        self.path = path
        """None for standard input."""
        self._file: BinaryIO | None = None
        self.kept = bytearray()
        """Every byte read so far, while `keeping`."""
        self.keeping = True

    def replay(self) -> PipeReader:
        if not self.keeping:
            raise InputError(self.name, "a pipe can be read only once, and this one was already read")
        return PipeReader(self)

    def read_more(self, size: int) -> bytes:
        if self._file is None:
            self._file = self._open()
        try:
            data = self._file.read(size)
        except OSError as exc:
            raise InputError(self.name, f"cannot read: {exc.strerror or exc}") from exc
        if self.keeping:
            if len(self.kept) + len(data) <= KEEP_BYTES:
                self.kept += data
            else:
                self.keeping = False
                self.kept = bytearray()
        return data

    def _open(self) -> BinaryIO:
        if self.path is None:
            fd = os.dup(0)
        else:
            fd = open_nonblocking(self.name, self.path)
            os.set_blocking(fd, True)  # a FIFO with no writer reads as empty; a writer is waited for
        return os.fdopen(fd, "rb", buffering=0)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


class PipeReader:
    """One pass over a `Pipe` from its first byte: the kept bytes, then the pipe itself."""

    def __init__(self, pipe: Pipe) -> None:
        self.pipe = pipe
        self.pos = 0

    def read(self, size: int = -1, /) -> bytes:
        if size < 0:
            return b"".join(iter(lambda: self.read(COPY_PIECE), b""))
        kept = self.pipe.kept
        if self.pos < len(kept) and self.pipe.keeping:
            data = bytes(kept[self.pos : self.pos + size])
        else:
            data = self.pipe.read_more(size)
        self.pos += len(data)
        return data

    def seek(self, offset: int, whence: int = 0, /) -> int:
        """Back to a kept byte (only after reading the first few, to look for gzip or a BOM)."""
        if whence != 0 or not self.pipe.keeping or offset > len(self.pipe.kept):
            raise InputError(self.pipe.name, "a pipe cannot seek")
        self.pos = offset
        return offset


def open_nonblocking(name: str, path: Path) -> int:
    """A file descriptor for `path`, opened without waiting (a FIFO with no writer does not block)."""
    try:
        return os.open(path, _OPEN_FLAGS)
    except OSError as exc:
        raise InputError(name, f"cannot open: {exc.strerror}") from exc


def describe(mode: int) -> str:
    """What kind of file a mode is, for notes and errors."""
    for test, kind in (
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISDIR, "a folder"),
    ):
        if test(mode):
            return kind
    return "a regular file" if stat.S_ISREG(mode) else "a special file"


def read_up_to(stream: ByteStream, size: int, name: str) -> bytes:
    """`size` bytes, or fewer at the end: a pipe may return less than asked for on each read."""
    parts: list[bytes] = []
    got = 0
    while got < size:
        try:
            data = stream.read(size - got)
        except OSError as exc:
            raise InputError(name, f"cannot read: {exc.strerror or exc}") from exc
        if not data:
            break
        parts.append(data)
        got += len(data)
    return b"".join(parts)


def _copy(src: InputStream, dst: BinaryIO, max_bytes: int) -> InputProblem | None:
    """Copy at most `max_bytes`; why the copy is not the whole input, if it is not."""
    copied = 0
    while data := src.read(COPY_PIECE):
        if copied + len(data) > max_bytes:
            dst.write(data[: max_bytes - copied])
            return InputProblem(
                AnomalyName.INPUT_INFLATE_LIMIT,
                f"stopped after {max_bytes} bytes (the limit; raise it with --max-inflated)",
            )
        dst.write(data)
        copied += len(data)
    return src.problem
