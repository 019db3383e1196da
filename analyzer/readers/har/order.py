"""Where each entry of a HAR file is, and when it started: to read the entries in the order they started.

Writers order entries differently: browsers by when a request started, mitmproxy by when its flow finished, so
a long call's entry can come tens of thousands of entries after the cancel that names it, and a buffer that puts
events in time order as they stream past would have to hold everything between. A HAR on disk can be read twice:
a first pass (the same bounded scan) notes each entry's `startedDateTime`, offset and size; the second reads the
entries by start time, seeking to each. An entry's events all come at or after its start (the request at the end
of `send`, replies later), so once an entry is read, every held event no later than the next entry's start can
go, in exact time order: what stays held are the events of entries still open at that time (their replies), not
the file. A gzip HAR or a pipe cannot be read so; it is read in one pass, within the reorder buffer's bound.

Memory: 40 bytes per entry (four numbers, and its place in the order), not the entries themselves: 1.2 MB for a
30 MB HAR of 30,000 entries.
"""

from __future__ import annotations

import math
import re
from array import array

from .entry import EntryProblem, started
from .scan import Piece

_STARTED = re.compile(rb'"startedDateTime"\s*:\s*"([^"\\]{1,80})"')


class EntryIndex:
    """The readable entries of one HAR file, in file order: number, start, offset, size and line of each."""

    def __init__(self) -> None:
        self.numbers: array[int] = array("q")
        self.starts: array[float] = array("d")
        self.offsets: array[int] = array("q")
        self.sizes: array[int] = array("q")
        self.lines: array[int] = array("q")

    def add(self, piece: Piece) -> None:
        """An entry the scan cut out (its bytes are not kept: the second pass reads them again)."""
        assert piece.data is not None
        self.numbers.append(piece.index)
        self.starts.append(_start(piece.data))
        self.offsets.append(piece.offset)
        self.sizes.append(len(piece.data))
        self.lines.append(piece.line)

    def by_start(self) -> array[int]:
        """Positions in start order (file order among equal starts)."""
        return array("q", sorted(range(len(self.starts)), key=self.starts.__getitem__))

    def next_start(self, order: array[int], n: int) -> float:
        """When the entry after the `n`-th in start order starts (inf after the last): nothing earlier is to come."""
        return self.starts[order[n + 1]] if n + 1 < len(order) else math.inf


def _start(data: bytes) -> float:
    """The entry's `startedDateTime` (-inf when it has none readable: read first, so it holds nothing back)."""
    found = _STARTED.search(data)
    if found is None:
        return -math.inf
    try:
        return started(found.group(1).decode("utf-8", "replace"))
    except EntryProblem:
        return -math.inf
