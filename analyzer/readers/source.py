"""One input as the readers see it: its name, and its bytes (decompressed when gzip)."""

from __future__ import annotations

import gzip
import shutil
import tempfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ..errors import InputError

HEAD_BYTES = 64 * 1024
GZIP_MAGIC = b"\x1f\x8b"


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
