"""A request's timeline entries, bounded: past a limit, like entries are counted in one.

A request that streams progress for hours must cost bounded memory. The first `limit` entries are
kept as they come; after that the first entry of each kind (kind, side, relation to the cancel,
certainty) starts a run and the others of that kind only add to its count (`TimelineEntry.repeats`).
The relation is part of the key, so what came after a cancel is never counted with what came before.

`message_entry` is the entry a JSON-RPC message puts on a timeline.
"""

from __future__ import annotations

from dataclasses import replace

from ..model import Certainty, EntryKind, MessageEvent, Relation, Side, TimelineEntry

_RunKey = tuple[EntryKind, Side | None, Relation | None, Certainty]


class EntryLog:
    """One request's entries. A plain slotted class: one is built per request, and a dataclass with
    default factories costs about twice as much to build (measured 1.4 vs 0.7 µs on a loaded machine)."""

    __slots__ = ("entries", "extra", "last_counted", "limit", "runs")

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

    @property
    def newest(self) -> TimelineEntry:
        """The newest entry seen, kept or counted."""
        last = self.entries[-1]
        counted = self.last_counted
        return counted if counted is not None and counted.seq > last.seq else last

    def freeze(self) -> tuple[TimelineEntry, ...]:
        """The entries for a finalised timeline, each run's first entry carrying its count."""
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
        Certainty.EXACT,
        message.excerpt,
    )
