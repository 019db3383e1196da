"""A request's timeline entries, bounded: past a limit, like entries are counted in one.

A request that streams progress for hours must cost bounded memory. The first `limit` entries are
kept as they come; after that the first entry of each kind (kind, side, relation to the cancel,
certainty) starts a run and the others of that kind only add to its count (`TimelineEntry.repeats`).
The relation is part of the key, so what came after a cancel is never counted with what came before.

A message the server sends on an HTTP stream is put on the timeline of every request the stream carries
(a batch POST carries up to `--max-open`). Once a request's log counts such notes in a run, a stream-wide
`StreamCount` counts them once for all of them (`EntryLog.share`), and each log takes its share when it
is next read or added to (`catch_up`): a note costs one count, not one per request.

`message_entry` is the entry a JSON-RPC message puts on a timeline (`reply_entry` a reply's).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from ..model import Certainty, EntryKind, MessageEvent, Relation, Side, TimelineEntry
from ..model.jsonrpc import error_code

_EXACT: Final = Certainty.EXACT
_ERROR_ENTRY: Final = EntryKind.ERROR_RESULT
"""Bound once: on Python 3.11 reading an enum member off its class runs the metaclass's attribute hook
(docs/benchmark.md)."""
_RunKey = tuple[EntryKind, Side | None, Relation | None, Certainty]


class StreamCount:
    """Messages counted once for every request of one HTTP stream whose log counts them in a run."""

    __slots__ = ("count", "last")

    def __init__(self) -> None:
        self.count = 0
        """Messages counted so far."""
        self.last: TimelineEntry | None = None
        """The newest one."""

    def add(self, entry: TimelineEntry) -> None:
        self.count += 1
        self.last = entry


class EntryLog:
    """One request's entries. A plain slotted class: one is built per request, and a dataclass with
    default factories costs about twice as much to build (measured 1.4 vs 0.7 µs on a loaded machine)."""

    __slots__ = ("entries", "extra", "last_counted", "limit", "runs", "shared")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        """Entries kept one by one; past it, like entries are counted in runs."""
        self.entries: list[TimelineEntry] = []
        """Kept entries in source order; a run sits where its first entry was."""
        self.runs: dict[_RunKey, int] | None = None
        """Past the limit: the index in `entries` of the run each kind of entry is counted in."""
        self.extra: dict[int, int] = {}
        """Index of a run's first entry -> how many more entries it stands for."""
        self.last_counted: TimelineEntry | None = None
        """The newest entry counted in a run (newer than `entries[-1]` when runs went on after it)."""
        self.shared: tuple[StreamCount, int, int] | None = None
        """A stream's count this log takes its share of: the count, its value when the share began, and
        the index of the run the share goes to. None when nothing is counted for it elsewhere."""

    def add(self, entry: TimelineEntry) -> None:
        entries = self.entries
        if self.runs is None and len(entries) < self.limit:
            entries.append(entry)
            return
        self.count(entry)

    def count(self, entry: TimelineEntry) -> None:
        """Past the limit: the first entry of each kind starts a run, the others are counted in it."""
        entries = self.entries
        runs = self.runs if self.runs is not None else {}
        self.runs = runs
        key = (entry.kind, entry.side, entry.relation, entry.certainty)
        index = runs.get(key)
        if index is None:
            runs[key] = len(entries)
            entries.append(entry)
        else:
            self.extra[index] = self.extra.get(index, 0) + 1
            self.last_counted = entry

    def share(self, counter: StreamCount, entry: TimelineEntry) -> bool:
        """From now on, let `counter` count the entries like `entry` (just counted in a run); False
        when this log keeps entries one by one still (they cannot be counted elsewhere)."""
        runs = self.runs
        if runs is None:
            return False
        self.shared = (counter, counter.count, runs[(entry.kind, entry.side, entry.relation, entry.certainty)])
        return True

    def catch_up(self) -> None:
        """Take the share of the stream's count since it began, and stop sharing."""
        shared = self.shared
        if shared is None:
            return
        counter, start, index = shared
        self.shared = None
        if counter.count > start:
            self.extra[index] = self.extra.get(index, 0) + counter.count - start
            self.last_counted = counter.last

    @property
    def newest(self) -> TimelineEntry:
        """The newest entry seen, kept or counted."""
        self.catch_up()
        last = self.entries[-1]
        counted = self.last_counted
        return counted if counted is not None and counted.seq > last.seq else last

    def freeze(self) -> tuple[TimelineEntry, ...]:
        """The entries for a finalised timeline, each run's first entry carrying its count."""
        self.catch_up()
        entries = self.entries
        for index, extra in self.extra.items():
            entries[index] = replace(entries[index], repeats=1 + extra)
        return tuple(entries)


def message_entry(kind: EntryKind, side: Side, event: MessageEvent) -> TimelineEntry:
    """A message's timeline entry. Positional: built once per message (a keyword call costs more)."""
    message = event.message
    return TimelineEntry(
        kind,
        side,
        event.seq,
        event.ts,
        event.origin,
        event.stream,
        message.method,
        None,
        _EXACT,
        message.excerpt,
    )


def reply_entry(kind: EntryKind, side: Side, event: MessageEvent, method: str) -> TimelineEntry:
    """A reply's entry to a METHOD request, with its JSON-RPC error code, or whether a tool's result says the
    tool failed (the exchange table's `error_code` and `tool_error`)."""
    entry = message_entry(kind, side, event)
    payload = event.message.payload
    if kind is _ERROR_ENTRY:
        return replace(entry, error_code=error_code(payload))
    if method == "tools/call" and payload.get("isError") is True:
        return replace(entry, tool_error=True)
    return entry
