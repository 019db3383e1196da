"""Content-Encoding of an HTTP body (RFC 9110 8.4): gzip and deflate decoded as the bytes come, bounded.

A client that sends `Accept-Encoding: gzip` (httpx does by default) to a server behind Starlette's
`GZipMiddleware` or nginx's `gzip` gets gzip bodies, and gzip SSE streams flushed per event. Every body
with a Content-Encoding goes through a `BodyDecoder` before JSON and SSE parsing:

* `gzip` (also `x-gzip`, several members allowed) and `deflate` (zlib-wrapped as RFC 9110 says, or the raw
  deflate some servers send, told apart by the first two bytes) are inflated at most `PIECE` bytes at a
  time, so a chunk of compressed bytes never becomes more than one piece in memory;
* past `RATIO_AFTER` decoded bytes, a body that inflates more than `--max-inflate-ratio` times its
  compressed size (default 200; deflate's ceiling is about 1032) stops there (`http.body-inflate-limit`):
  a gzip bomb costs a megabyte of inflating, not gigabytes;
* data that does not inflate, or that ends before its coding does, stops the body
  (`http.body-decode-failed`), keeping what was decoded before it;
* any other coding (`br`, `zstd`, `compress`, a chain of two) is not read (`http.body-not-decoded`): no
  decoder for it ships with the Python standard library cancelwire relies on, and a body that is not
  read is named, never taken for a silent server.

No I/O: the caller feeds the body's bytes and reads `problem` after each feed.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass

from ...model import AnomalyName

PIECE = 64 << 10
"""Decoded bytes produced per step (the most one compressed chunk holds in memory at a time)."""
RATIO_AFTER = 1 << 20
"""The ratio is checked once this many bytes are decoded from one body (a small body of repeated
spaces is read whole)."""
_GZIP = frozenset({"gzip", "x-gzip"})
_READ = _GZIP | {"deflate"}
_GZIP_MAGIC = b"\x1f\x8b"
_MAX_SHOWN = 60


@dataclass(frozen=True, slots=True)
class DecodeProblem:
    """Why a body's decoded bytes stop (or never start); becomes an anomaly naming the body."""

    name: AnomalyName
    detail: str


def codings(value: str | None) -> tuple[str, ...]:
    """The codings a Content-Encoding value lists, in the order applied (lower case, `identity` left out)."""
    if not value:
        return ()
    return tuple(c for c in (part.strip().lower() for part in value.split(",")) if c and c != "identity")


def decoder_for(value: str | None, max_ratio: float) -> BodyDecoder | None:
    """A decoder for a body whose Content-Encoding is `value`; None when the body is not encoded."""
    found = codings(value)
    return BodyDecoder(found, max_ratio) if found else None


class BodyDecoder:
    """The decoded bytes of one body, fed as its encoded bytes arrive."""

    def __init__(self, applied: tuple[str, ...], max_ratio: float) -> None:
        self.coding = ", ".join(applied)
        """The Content-Encoding as read (for details)."""
        self.max_ratio = max_ratio
        self.compressed = 0
        """Encoded bytes fed so far."""
        self.decoded = 0
        """Decoded bytes handed on so far."""
        self.problem: DecodeProblem | None = None
        """Set once the body stops being decoded (or cannot be); later bytes are ignored."""
        self._zlib: zlib._Decompress | None = None
        self._gzip = applied[0] in _GZIP if len(applied) == 1 else False
        self._ended = False
        """The coding's end (the last gzip member's trailer, the deflate stream's last block) was read."""
        if len(applied) != 1 or applied[0] not in _READ:
            what = "a chain of codings" if len(applied) > 1 else f"the {_shown(applied[0])} coding"
            self._stop(
                AnomalyName.HTTP_BODY_NOT_DECODED,
                f"Content-Encoding {_shown(self.coding)}: {what} is not read (cancelwire reads gzip and deflate)",
            )

    def feed(self, data: bytes) -> Iterator[bytes]:
        """The decoded pieces `data` completes (each at most `PIECE` bytes); stops at the first problem."""
        if self.problem is not None or not data:
            return
        self.compressed += len(data)
        pending = data
        while pending and self.problem is None:
            if self._zlib is None and not self._start(pending):
                return
            assert self._zlib is not None
            try:
                out = self._zlib.decompress(pending, PIECE)
            except zlib.error as exc:
                self._stop(AnomalyName.HTTP_BODY_DECODE_FAILED, f"{self._where()} does not inflate ({exc})")
                return
            pending = self._zlib.unconsumed_tail
            if self._zlib.eof:
                pending = self._member_ended()
            if out:
                self.decoded += len(out)
                if self.decoded > RATIO_AFTER and self.decoded > self.max_ratio * self.compressed:
                    self._stop(
                        AnomalyName.HTTP_BODY_INFLATE_LIMIT,
                        f"{self.coding} body: stopped after {self.decoded} decoded bytes from {self.compressed} "
                        f"encoded bytes: more than {self.max_ratio:g}x (the limit; raise it with --max-inflate-ratio)",
                    )
                    return
                yield out

    def finish(self) -> None:
        """The body ended whole (by its framing): a coding that has not ended was cut short."""
        if self.problem is None and not self._ended and (self.compressed or self._zlib is not None):
            self._stop(AnomalyName.HTTP_BODY_DECODE_FAILED, f"{self._where()} ends before its {self.coding} data does")

    def _start(self, data: bytes) -> bool:
        """A new member (gzip) or the stream (deflate: zlib-wrapped when its header checks, else raw)."""
        if self._gzip:
            if not data.startswith(_GZIP_MAGIC[: len(data)]):
                self._stop(AnomalyName.HTTP_BODY_DECODE_FAILED, f"{self._where()} is not gzip data")
                return False
            self._zlib = zlib.decompressobj(16 + zlib.MAX_WBITS)
        else:
            wrapped = len(data) < 2 or (data[0] & 0x0F == 8 and ((data[0] << 8) | data[1]) % 31 == 0)
            self._zlib = zlib.decompressobj(zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS)
        self._ended = False
        return True

    def _member_ended(self) -> bytes:
        """After a gzip member (or the deflate stream): what follows, or a problem for junk."""
        assert self._zlib is not None
        rest = self._zlib.unused_data
        self._zlib, self._ended = None, True
        if rest and not self._gzip:
            self._stop(AnomalyName.HTTP_BODY_DECODE_FAILED, f"{len(rest)} bytes after the end of the deflate data")
            return b""
        return rest

    def _where(self) -> str:
        return f"{self.coding} body after {self.compressed} encoded bytes ({self.decoded} decoded)"

    def _stop(self, name: AnomalyName, detail: str) -> None:
        if self.problem is None:
            self.problem = DecodeProblem(name, detail)


def _shown(value: str) -> str:
    return repr(value[:_MAX_SHOWN] + ("..." if len(value) > _MAX_SHOWN else ""))
