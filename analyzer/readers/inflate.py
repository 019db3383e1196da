"""gzip inputs inflated in small pieces, bounded, keeping every byte that decompresses.

A gzip file is read `PIECE` compressed bytes at a time and inflated at most `size` bytes per
`read`, so nothing is buffered beyond one piece and one read: when the data is damaged, every
byte before the damage has already been handed on (the standard `gzip` module loses up to its
buffer). Damage (corrupt deflate data, a checksum mismatch, data cut short, bytes after the last
member that are not gzip) ends the stream and is kept in `problem` as an `input.compression-damaged`
anomaly naming the offsets. Past `InflateLimits` the stream ends too, with `input.inflate-limit`:
a small file that inflates to gigabytes (a "gzip bomb", or a log of one repeated line) cannot make
an audit run for hours or fill the disk.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass
from typing import Protocol

from ..errors import CancelwireError
from ..model import AnomalyName

GZIP_MAGIC = b"\x1f\x8b"
PIECE = 16 * 1024
"""Compressed bytes fed to zlib at a time (at most about 16 MiB inflated from one piece)."""
GZIP_WBITS = 16 + zlib.MAX_WBITS


class ByteStream(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


def ratio_of(value: float) -> float:
    """A ratio limit: a finite number, at least 1 (the command line checks `--max-inflate-ratio` with it)."""
    if not math.isfinite(value) or value < 1:
        raise ValueError(f"must be a finite number >= 1, not {value:g}")
    return value


@dataclass(frozen=True, slots=True)
class InflateLimits:
    """How far a compressed input is inflated (`--max-inflated`, `--max-inflate-ratio`)."""

    max_bytes: int = 16 << 30
    """Inflated bytes read from one input at most (16 GiB); also caps the temporary copy of a
    compressed capture (or one read from a pipe) that tshark reads."""
    max_ratio: float = 200.0
    """Inflated bytes per compressed byte at most, once `ratio_after` bytes are inflated. JSON
    logs compress 5-25x (the benchmark transcript 23x); deflate's ceiling is about 1032x."""
    ratio_after: int = 64 << 20
    """The ratio is not checked before this many inflated bytes (64 MiB), so a small input of one
    repeated character (a test fixture, a log of identical lines) is read whole."""

    def __post_init__(self) -> None:
        try:
            ratio_of(self.max_ratio)
            if self.max_bytes < 1 or self.ratio_after < 0:
                raise ValueError(f"must be at least 1 byte, not {self.max_bytes}")
        except ValueError as exc:
            raise CancelwireError(f"inflate limits: {exc}") from None

    @classmethod
    def given(cls, max_bytes: int | None, max_ratio: float | None) -> InflateLimits:
        """The defaults, with what the command line gave instead."""
        default = DEFAULT_LIMITS
        return cls(
            default.max_bytes if max_bytes is None else max_bytes,
            default.max_ratio if max_ratio is None else max_ratio,
        )


DEFAULT_LIMITS = InflateLimits()


@dataclass(frozen=True, slots=True)
class InputProblem:
    """Why an input's bytes ended before the end of the file; becomes an `Anomaly`."""

    name: AnomalyName
    detail: str


class Inflater:
    """The inflated bytes of a gzip stream (one or more members), read like a file."""

    def __init__(self, raw: ByteStream, limits: InflateLimits) -> None:
        self.raw = raw
        self.limits = limits
        self.problem: InputProblem | None = None
        self.inflated = 0
        """Inflated bytes handed on so far."""
        self._zlib: zlib._Decompress | None = zlib.decompressobj(GZIP_WBITS)
        self._pending = b""
        """Compressed bytes read but not yet given to zlib."""
        self._offset = 0
        """Compressed bytes before `_pending` (given to zlib, or skipped padding)."""
        self._done = False
        self._salvaged = b""
        """What a damaged piece inflated to before the damage, still to be handed on."""

    def read(self, size: int = -1, /) -> bytes:
        if size < 0:
            return b"".join(iter(lambda: self.read(1 << 20), b""))
        while True:
            if self._salvaged:
                out, self._salvaged = self._salvaged[:size], self._salvaged[size:]
                return self._within_limits(out)
            if self._done:
                return b""
            out = self._inflate(min(size, self._room()))
            if out:
                return self._within_limits(out)

    def _room(self) -> int:
        return max(self.limits.max_bytes - self.inflated, 1)

    def _inflate(self, size: int) -> bytes:
        """Up to `size` inflated bytes; b"" while between members or at the end (then `_done`)."""
        if not self._pending and not self._fill():
            return b""
        if self._zlib is None:  # between members
            self._next_member()
            return b""
        given = self._pending
        before = self._zlib.copy()  # a few dozen KiB, copied once per read: what a damaged piece needs
        try:
            out = self._zlib.decompress(given, size)
        except zlib.error as exc:
            return self._salvage(before, given, exc)
        if self._zlib.eof:
            self._pending = self._zlib.unused_data
            self._zlib = None
        else:
            self._pending = self._zlib.unconsumed_tail
        self._offset += len(given) - len(self._pending)
        return out

    def _salvage(self, before: zlib._Decompress, given: bytes, exc: zlib.error) -> bytes:
        """Inflate the damaged piece again byte by byte from the state before it, keeping every byte
        that comes out before the damage, which is then named at its exact compressed offset."""
        parts: list[bytes] = []
        at = 0
        try:
            for at in range(len(given)):
                parts.append(before.decompress(given[at : at + 1]))
        except zlib.error as again:
            exc = again
        self._salvaged = b"".join(parts)
        return self._stop(
            AnomalyName.INPUT_COMPRESSION_DAMAGED,
            f"damaged gzip data at compressed byte {self._offset + at} ({exc}); "
            f"the {self.inflated + len(self._salvaged)} bytes inflated before it were read",
        )

    def _fill(self) -> bool:
        """Read the next compressed piece; at the end of the file, end the stream (cut short or not)."""
        self._pending = self.raw.read(PIECE)
        if self._pending:
            return True
        if self._zlib is not None:
            self._stop(
                AnomalyName.INPUT_COMPRESSION_DAMAGED,
                f"the gzip data is cut short after {self._offset} compressed bytes; "
                f"the {self.inflated} bytes inflated before it were read",
            )
        self._done = True
        return False

    def _next_member(self) -> None:
        """After a member: another member, zero padding (allowed, as `gzip` allows it), or junk."""
        stripped = self._pending.lstrip(b"\0")
        self._offset += len(self._pending) - len(stripped)
        self._pending = stripped
        if not stripped:
            return
        if len(stripped) < len(GZIP_MAGIC):
            more = self.raw.read(PIECE)
            self._pending = stripped + more
            if more:
                return
        if self._pending.startswith(GZIP_MAGIC):
            self._zlib = zlib.decompressobj(GZIP_WBITS)
            return
        self._stop(
            AnomalyName.INPUT_COMPRESSION_DAMAGED,
            f"bytes after the end of the gzip data at compressed byte {self._offset} are not gzip; "
            f"ignored after the {self.inflated} bytes inflated before them",
        )

    def _within_limits(self, out: bytes) -> bytes:
        limits = self.limits
        if self.inflated + len(out) > limits.max_bytes:
            out = out[: limits.max_bytes - self.inflated]
            self._stop(
                AnomalyName.INPUT_INFLATE_LIMIT,
                f"stopped after {limits.max_bytes} inflated bytes (the limit; raise it with --max-inflated)",
            )
        self.inflated += len(out)
        compressed = max(self._offset, 1)
        if self.inflated > limits.ratio_after and self.inflated > limits.max_ratio * compressed:
            self._stop(
                AnomalyName.INPUT_INFLATE_LIMIT,
                f"stopped after {self.inflated} inflated bytes from {self._offset} compressed bytes: "
                f"more than {limits.max_ratio:g}x (the limit; raise it with --max-inflate-ratio)",
            )
        return out

    def _stop(self, name: AnomalyName, detail: str) -> bytes:
        if self.problem is None:
            self.problem = InputProblem(name, detail)
        self._done = True
        return b""
