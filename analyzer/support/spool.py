"""A list that keeps only its newest items in memory and the rest on disk, in order.

Cancelled calls carry the timeline around their cancel for the report, so a recording with many
cancellations would otherwise hold them all; with a spool, memory follows `in_memory`, not input size.
"""

from __future__ import annotations

import pickle
import tempfile
from collections.abc import Iterator
from typing import IO, Generic, TypeVar

T = TypeVar("T")


class Spool(Generic[T]):
    def __init__(self, in_memory: int = 256) -> None:
        self.in_memory = in_memory
        self._items: list[T] = []
        self._file: IO[bytes] | None = None
        self._spilled = 0

    def append(self, item: T) -> None:
        self._items.append(item)
        if len(self._items) >= self.in_memory:
            self._flush()

    def extend_pickled(self, batch: bytes, count: int) -> None:
        """COUNT items that another process pickled as one list (`pickle.dumps`), after those appended
        so far: written to disk as they are, never unpickled here until read."""
        self._flush()
        self._write(batch, count)

    def _flush(self) -> None:
        if self._items:
            self._write(pickle.dumps(self._items, protocol=pickle.HIGHEST_PROTOCOL), len(self._items))
            self._items = []

    def _write(self, batch: bytes, count: int) -> None:
        if self._file is None:
            # lives as long as the spool; closed by close() (or when the process ends)
            self._file = tempfile.TemporaryFile(prefix="cancelwire-spool-")  # noqa: SIM115
        self._file.seek(0, 2)
        self._file.write(batch)
        self._spilled += count

    def __len__(self) -> int:
        return self._spilled + len(self._items)

    def __iter__(self) -> Iterator[T]:
        if self._file is not None:
            self._file.seek(0)
            read = 0
            while read < self._spilled:
                batch: list[T] = pickle.load(self._file)  # our own temp file, written above
                read += len(batch)
                yield from batch
        yield from self._items

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


K = TypeVar("K")


class SortedSpool(Generic[K, T]):
    """Items filed under sortable keys, each key's items in a `Spool` of their own: iterated key by
    key in key order, each key's items in the order they were added."""

    def __init__(self, in_memory_per_key: int = 16) -> None:
        self.in_memory_per_key = in_memory_per_key
        self._spools: dict[K, Spool[T]] = {}

    def append(self, key: K, item: T) -> None:
        spool = self._spools.get(key)
        if spool is None:
            spool = self._spools[key] = Spool(self.in_memory_per_key)
        spool.append(item)

    def __len__(self) -> int:
        return sum(len(spool) for spool in self._spools.values())

    def __iter__(self) -> Iterator[T]:
        for key in sorted(self._spools):  # type: ignore[type-var]  # keys are sortable by contract
            yield from self._spools[key]

    def close(self) -> None:
        for spool in self._spools.values():
            spool.close()
