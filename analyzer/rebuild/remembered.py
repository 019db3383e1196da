"""The memories of finished requests (`finished.FinishedRequests`): values by (store, key), at most `limit` of
them, the oldest forgotten first; a key put again goes to the end.

`Memory` keeps any value, one plain dict per store (a session, or a session's side): for the few requests
kept with their cancel. `KindMemory` keeps what nearly every finished request leaves, a time and a `Kind`
(method, judged, task), in arrays: an input may have 50,000 of them (`max_tombstones`), twice (the request and
its progress token). Issue 20: a dict per store of `NamedTuple`s with their own id and time objects, and a
queue of three slots per entry, took about 290 B a call for both on the big capture; these take about 80 B
(`tests/test_finished_memory.py`).
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections import deque
from collections.abc import Hashable, Iterator
from typing import Any, Final, Generic, NamedTuple, TypeVar

_K = TypeVar("_K", bound=Hashable)
_V = TypeVar("_V")


class Memory(Generic[_K, _V]):
    """Values by (store, key), at most `limit` of them, oldest forgotten first; a key put again goes to
    the end. One plain dict per store keyed by the bare key, and a queue of dict, key and value, three
    slots each (no tuple per entry), in the order they came: an entry whose dict no longer holds that very
    value was put again or removed since, and is skipped (and dropped when the queue gets long)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._stores: dict[Hashable, dict[_K, _V]] = {}
        self._queue: deque[Any] = deque()
        self._size = 0

    def get(self, store: Hashable, key: _K) -> _V | None:
        found = self._stores.get(store)
        return None if found is None else found.get(key)

    def pop(self, store: Hashable, key: _K) -> None:
        found = self._stores.get(store)
        if found and found.pop(key, None) is not None:
            self._size -= 1

    def put(self, store: Hashable, key: _K, value: _V) -> bool:
        """Remember `value`; True when the oldest had to be forgotten for it."""
        found = self._stores.get(store)
        if found is None:
            found = self._stores[store] = {}
        if found.pop(key, None) is None:
            self._size += 1
        found[key] = value
        queue = self._queue
        queue.extend((found, key, value))
        forgot = self._size > self.limit
        while self._size > self.limit:
            old, old_key, old_value = queue.popleft(), queue.popleft(), queue.popleft()
            if old.get(old_key) is old_value:
                del old[old_key]
                self._size -= 1
        if len(queue) > 3 * (2 * self._size + 16) or len(self._stores) > 2 * self._size + 16:
            self._compact()
        return forgot

    def _compact(self) -> None:
        """Drop the queue's stale entries and the stores emptied: both bounded by what is remembered."""
        old, self._queue = self._queue, deque()
        while old:
            found, key, value = old.popleft(), old.popleft(), old.popleft()
            if found.get(key) is value:
                self._queue.extend((found, key, value))
        self._stores = {store: found for store, found in self._stores.items() if found}


class Kind(NamedTuple):
    """What a finished request leaves besides its time."""

    method: str
    judged: bool
    """False for a request flushed or superseded unanswered: a later reply to it is no anomaly."""
    task: bool
    """A task-augmented request: its progress goes on after its CreateTaskResult (Progress, 2025-11-25)."""


MAX_KINDS = 4096
"""Kinds numbered per input; an entry of a further kind (a hostile input's thousands of methods) is kept
whole in its store's `others`."""
GONE: Final = 0
OTHER: Final = 1
"""`_Store.codes` besides a kind's number (from 2): an entry removed or put again since (skipped when it
comes up to be forgotten), and one kept in `others`."""
WIDE: Final = 1 << 62
"""Integer ids beyond this either way are kept in `others` (the arrays hold 64-bit integers)."""
NO_TIME: Final = float("nan")
"""The time of an entry without one (a timestamp is never NaN)."""
BELOW_ALL: Final = -(1 << 63)
"""What `_Store.ids` says before the first id in order."""


class _Store:
    """One store's entries, in the order they were put: the time, kind number and id of each, in arrays
    indexed by position - `first`, from `head` on (those before were forgotten). Nearly every id is an
    integer above those put before it (ids are counted up, and requests finish about in order): `ids` then
    holds it, and stays sorted, so it is found by bisection (no object per entry). Any other entry (an id
    put out of order, a string, a huge integer, a kind not numbered) is kept whole in `others`, and its id
    by position in `other_ids`; `ids` holds a copy of the id before it (sorted still)."""

    __slots__ = ("codes", "first", "head", "ids", "other_ids", "others", "times")

    def __init__(self) -> None:
        self.first = 0
        self.head = 0
        self.times: array[float] = array("d")
        """`NO_TIME` for none."""
        self.codes: array[int] = array("H")
        self.ids: array[int] = array("q")
        self.others: dict[Hashable, tuple[int, Kind, float | None]] = {}
        self.other_ids: dict[int, Hashable] = {}

    def find(self, key: Hashable) -> int | None:
        """The position of KEY's entry, if it has one."""
        ids = self.ids
        if type(key) is int and ids and key <= ids[-1]:  # a new id is above them all: no search
            at = bisect_left(ids, key, self.head)
            if at < len(ids) and ids[at] == key and self.codes[at] > OTHER:
                return self.first + at
        found = self.others.get(key)
        return None if found is None else found[0]

    def get(self, key: Hashable, kinds: list[Kind]) -> tuple[Kind, float | None] | None:
        position = self.find(key)
        if position is None:
            return None
        at = position - self.first
        code = self.codes[at]
        if code == OTHER:
            _, kind, ts = self.others[key]
            return kind, ts
        return kinds[code - 2], _time(self.times[at])

    def put(self, key: Hashable, code: int, kind: tuple[str, bool, bool], ts: float | None) -> bool:
        """Append an entry for KEY, its earlier one (if any) removed; True when KEY had none."""
        position = self.find(key)
        if position is not None:
            self.drop(position)
        self.add(key, code, kind, ts)
        return position is None

    def add(self, key: Hashable, code: int, kind: tuple[str, bool, bool], ts: float | None) -> None:
        """Append an entry (KEY has none: `drop` it first); CODE is KIND's number, or OTHER."""
        ids = self.ids
        last = ids[-1] if ids else BELOW_ALL
        if code != OTHER and type(key) is int and last < key < WIDE:
            ids.append(key)
        else:
            position = self.first + len(self.codes)
            code = OTHER
            self.others[key] = (position, Kind(*kind), ts)
            self.other_ids[position] = key
            ids.append(last)
        self.codes.append(code)
        self.times.append(NO_TIME if ts is None else ts)

    def drop(self, position: int) -> None:
        """Remove the entry at POSITION (it stays in the order, as GONE, until it comes up)."""
        at = position - self.first
        if self.codes[at] == OTHER:
            del self.others[self.other_ids.pop(position)]
        self.codes[at] = GONE

    def forget_oldest(self) -> bool:
        """Let the oldest entry go; True when it was still remembered (not removed or put again since)."""
        at = self.head
        self.head += 1
        live = self.codes[at] != GONE
        if live:
            self.drop(self.first + at)
        if self.head > 64 and 2 * self.head > len(self.codes):
            head = self.head  # let the forgotten positions go
            del self.codes[:head], self.times[:head], self.ids[:head]
            self.first += head
            self.head = 0
        return live

    def take(self, at: int, kinds: list[Kind]) -> tuple[Hashable, int, Kind, float | None] | None:
        """The entry at index AT (key, code, kind, time), None when it was removed."""
        code = self.codes[at]
        if code == GONE:
            return None
        if code == OTHER:
            key = self.other_ids[self.first + at]
            _, kind, ts = self.others[key]
            return key, code, kind, ts
        return self.ids[at], code, kinds[code - 2], _time(self.times[at])


class Kinds:
    """The kinds of finished request an input has, each kept once and named by a small number (from 2), at
    most `MAX_KINDS` (a further one is OTHER); shared by its memories."""

    def __init__(self) -> None:
        self.kinds: list[Kind] = []
        """By number - 2."""
        self._numbers: dict[tuple[str, bool, bool], int] = {}

    def number(self, kind: tuple[str, bool, bool]) -> int:
        number = self._numbers.get(kind)
        if number is None:
            if len(self.kinds) >= MAX_KINDS:
                return OTHER
            number = self._numbers[kind] = len(self.kinds) + 2
            self.kinds.append(Kind(*kind))
        return number


class KindMemory:
    """Kinds and times by (store, key), at most `limit`, oldest forgotten first; a key put again goes to the
    end: what `Memory` does, in `_Store`s, with a queue of the store each entry went to (entries of one store
    come up in its own order)."""

    def __init__(self, limit: int, kinds: Kinds) -> None:
        self.limit = limit
        self.kinds = kinds
        self._stores: dict[Hashable, _Store] = {}
        self._queue: deque[_Store] = deque()
        self._size = 0

    def get(self, store: Hashable, key: Hashable) -> tuple[Kind, float | None] | None:
        found = self._stores.get(store)
        return None if found is None else found.get(key if type(key) is int else _plain(key), self.kinds.kinds)

    def pop(self, store: Hashable, key: Hashable) -> None:
        found = self._stores.get(store)
        key = _plain(key)
        position = None if found is None else found.find(key)
        if found is not None and position is not None:
            found.drop(position)
            self._size -= 1

    def put(self, store: Hashable, key: Hashable, kind: tuple[str, bool, bool], ts: float | None, number: int) -> bool:
        """Remember KIND (method, judged, task) and TS; NUMBER is `kinds.number(kind)` (the caller's, one
        look-up for the memories it puts it in). True when the oldest had to be forgotten for it."""
        found = self._stores.get(store)
        if found is None:
            found = self._stores[store] = _Store()
        self._size += found.put(key if type(key) is int else _plain(key), number, kind, ts)
        queue = self._queue
        queue.append(found)
        forgot = self._size > self.limit
        while self._size > self.limit:
            self._size -= queue.popleft().forget_oldest()
        if len(queue) > 2 * self._size + 16 or len(self._stores) > 2 * self._size + 16:
            self._compact()
        return forgot

    def _compact(self) -> None:
        """Put what is remembered into new stores, in the same order, without the entries removed or put
        again and the stores emptied: both bounded by what is remembered."""
        names = {id(found): store for store, found in self._stores.items()}
        old, self._stores, self._queue = self._queue, {}, deque()
        for found, at in _positions(old):
            entry = found.take(at, self.kinds.kinds)
            if entry is None:
                continue
            key, code, kind, ts = entry
            store = names[id(found)]
            fresh = self._stores.get(store)
            if fresh is None:
                fresh = self._stores[store] = _Store()
            fresh.add(key, code, kind, ts)
            self._queue.append(fresh)


def _positions(queue: deque[_Store]) -> Iterator[tuple[_Store, int]]:
    """Each entry of QUEUE's stores, in the order they were put: (store, index in its arrays)."""
    nexts: dict[int, int] = {}
    for found in queue:
        at = nexts.get(id(found), found.head)
        nexts[id(found)] = at + 1
        yield found, at


def _time(ts: float) -> float | None:
    return None if ts != ts else ts  # NO_TIME is the only value not equal to itself


def _plain(key: Hashable) -> Hashable:
    """KEY as a dict tells it from others: `True` and `1.0` are the key `1` (invalid ids, but ids as recorded)."""
    if type(key) is not int and (type(key) is bool or (type(key) is float and key.is_integer())):
        return int(key)
    return key
