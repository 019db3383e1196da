"""Times of exported entries and putting their events in time order (the Inspector's exports)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

from ...model import Event
from ...model.timestamps import plausible

Make = Callable[[], Iterator[Event]]
"""Makes one timed item's events when its turn comes (so `seq` follows time order)."""


def timestamp(value: Any) -> float | None:
    """An ISO 8601 time with a zone (what `Date.toJSON` writes) as epoch seconds; None otherwise (also for a time
    that is no clock reading: model/timestamps.py)."""
    if not isinstance(value, str) or len(value) > 64:
        return None
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        return None
    if when.tzinfo is None:
        return None
    ts = when.timestamp()
    return ts if plausible(ts) else None


def later(ts: float | None, duration: Any) -> float | None:
    """`ts` plus a duration in milliseconds, when both are known."""
    if ts is None or not isinstance(duration, int | float) or isinstance(duration, bool) or not 0 <= duration < 1e12:
        return None
    return ts + duration / 1000


class Timed:
    """Items to emit in time order: (time, entry order, maker); an item without a time takes the last one's,
    so it keeps its place in the file. Held whole: an export is read whole (bounded by its size)."""

    def __init__(self) -> None:
        self.items: list[tuple[float, float, int, Make]] = []
        self.last = 0.0

    def add(self, ts: float | None, index: float, make: Make) -> None:
        at = self.last if ts is None else ts
        self.last = at
        self.items.append((at, index, len(self.items), make))

    def events(self) -> Iterator[Event]:
        for _, _, _, make in sorted(self.items, key=lambda item: item[:3]):
            yield from make()


class Unreadable(str):
    """An entry of a damaged export that is not JSON: what is wrong with it (bounded)."""
