"""Two inputs that seem to hold the same session: a hint to audit them together with `--merge`.

Each input is audited on its own, so the comparison runs on what its sessions keep: the earliest
`MAX_REQUESTS` requests of each (who sent them, id, method, a digest of the params, when, and a digest
of the reply), filled in by `pipeline.judge` from the timelines it judges. Two sessions of different
inputs are the same when they share at least `MIN_SHARED` of those requests and nearly all of both
sessions', at one time offset (two clocks, one session) or without times, the replies both recorded
say the same, and the transport's session ids (when both have one) are one. Two runs of one client
script send the same requests, but the servers' replies differ somewhere (a time, an id, the text).
A named anomaly (`merge.same-session`) that rule CW506 turns into an info finding.
"""

from __future__ import annotations

import hashlib
import heapq
import struct
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from typing import Final

import orjson

from ..model import Anomaly, AnomalyName, EntryKind, Origin, RequestTimeline, Session, Vantage

MAX_REQUESTS = 32
"""Requests remembered per session (the earliest in the recording)."""
MIN_SHARED = 3
MATCH = 0.8
"""Share of the requests that must be alike, and of their time offsets that must agree."""
TRANSIT = 0.05
"""Seconds the offset between the two recordings' times of one request may stray from the typical one."""
COMMON = 50
"""A request seen in more sessions than this (an `initialize` every run sends) identifies none."""

REPLIES: Final = frozenset({EntryKind.RESULT, EntryKind.ERROR_RESULT})
ON_PATH: Final = frozenset({Vantage.WIRE, Vantage.PROXY})
"""Recorders that see the transport itself (a peer's own log may not say which it was)."""

Seen = tuple[bytes, ...]
"""A session's requests remembered, each packed as `_ENTRY` (`_unpacked` reads one)."""

_ENTRY: Final = struct.Struct(">QQdQdB")
"""Per request: the latest position minus its position (big-endian first, so that the bytes sort as the
heap needs), a digest of its key (who sent it, id, method, a digest of the params), when it was sent, a
digest of the reply, when the reply was seen, and which of the last three were recorded (`_TS`, `_SAID`,
`_GOT`). 74 B a request, where a tuple of strings and floats took about 270 (issue 20: 603 sessions of
the big capture kept 32 each to its end)."""
_LATEST: Final = (1 << 64) - 1
_TS: Final = 1
_SAID: Final = 2
_GOT: Final = 4


class Requests:
    """Per session, the earliest requests judged so far (bounded)."""

    def __init__(self, *, keep: bool = True) -> None:
        self._heaps: dict[str, list[bytes]] = defaultdict(list)
        """A min-heap of packed entries: the latest request kept first."""
        self._keep = keep
        """False when the audit has one input: there is nothing to compare with, and nothing is kept."""

    def add(self, timeline: RequestTimeline) -> None:
        first = timeline.entries[0] if timeline.entries else None
        if first is None or not self._keep:
            return
        heap = self._heaps[timeline.session_key]
        rank = _LATEST - first.seq
        if len(heap) >= MAX_REQUESTS and rank.to_bytes(8, "big") <= heap[0][:8]:
            return  # later than every request kept: no key to compute (one comparison per request)
        said, got = _reply(timeline)
        present = (first.ts is not None) * _TS | (said is not None) * _SAID | (got is not None) * _GOT
        item = _ENTRY.pack(rank, _key(timeline, first.excerpt), first.ts or 0.0, said or 0, got or 0.0, present)
        if len(heap) < MAX_REQUESTS:
            heapq.heappush(heap, item)
        else:
            heapq.heapreplace(heap, item)

    def pop(self, session_key: str) -> Seen:
        return tuple(sorted(self._heaps.pop(session_key, []), reverse=True))


def _unpacked(entry: bytes) -> tuple[int, float | None, int | None, float | None]:
    """A remembered request: its key's digest, when it was sent, its reply's digest, when that was seen."""
    _, key, ts, said, got, present = _ENTRY.unpack(entry)
    return (
        key,
        ts if present & _TS else None,
        said if present & _SAID else None,
        got if present & _GOT else None,
    )


def _key(timeline: RequestTimeline, excerpt: str) -> int:
    message = _parsed(excerpt)  # an excerpt cut short: the method and id still count
    params = b"?" if message is None else _digest(message.get("params")).to_bytes(8, "big")
    key = f"{timeline.requester.value}|{timeline.request_id!r}|{timeline.method}|".encode() + params
    return _hash(key)


def _reply(timeline: RequestTimeline) -> tuple[int | None, float | None]:
    """A digest of what the first reply says (its parsed `result` or `error`, so two serialisations of one
    reply agree; None when no reply was recorded whole), and when it was seen."""
    reply = next((entry for entry in timeline.entries if entry.kind in REPLIES), None)
    if reply is None:
        return None, None
    message = _parsed(reply.excerpt)
    said = {name: value for name, value in (message or {}).items() if name in ("result", "error")}
    return (None if message is None else _digest(said)), reply.ts


def _parsed(excerpt: str) -> dict[str, object] | None:
    try:
        value = orjson.loads(excerpt)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _digest(value: object) -> int:
    try:
        body = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # an integer past 64 bits
        body = b"?"
    return _hash(body)


def _hash(body: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(body, digest_size=8).digest(), "big")


def same_sessions(sessions: Sequence[Session]) -> Iterator[Anomaly]:
    """One anomaly per pair of sessions of different inputs that look like one session recorded twice."""
    holders: dict[int, list[int]] = defaultdict(list)
    for index, session in enumerate(sessions):
        for key, *_ in map(_unpacked, session.requests_seen):
            holders[key].append(index)
    for a, session in enumerate(sessions):
        shared: Counter[int] = Counter(
            b
            for key, *_ in map(_unpacked, session.requests_seen)
            if len(holders[key]) <= COMMON
            for b in holders[key]
            if b > a
        )
        for b, count in sorted(shared.items()):
            other = sessions[b]
            if other.source != session.source and _alike(session, other, count):
                yield _hint(session, other, count)


def _alike(a: Session, b: Session, count: int) -> bool:
    """Nearly the same requests (`MATCH` of the larger set), at one time offset for nearly all of them, and
    their replies at one offset too (a slow link delays requests and replies in opposite directions): one
    session's messages are seen by both recorders a transit apart (the first may wait for a server to
    start); two runs of one script drift apart by their own timing. And nothing says two sessions: no two
    transport session ids, no two transports both seen on the path, no two replies to one request that say
    different things."""
    if count < MIN_SHARED or count < MATCH * max(len(a.requests_seen), len(b.requests_seen)):
        return False
    if a.session_id is not None and b.session_id is not None and a.session_id != b.session_id:
        return False
    if a.vantage in ON_PATH and b.vantage in ON_PATH and a.transport != b.transport:
        return False
    seen = {key: (sent, said, got) for key, sent, said, got in map(_unpacked, b.requests_seen)}
    pairs = [(sent, said, got, *seen[key]) for key, sent, said, got in map(_unpacked, a.requests_seen) if key in seen]
    if any(said_a is not None and said_b is not None and said_a != said_b for _, said_a, _, _, said_b, _ in pairs):
        return False
    requests = [(sent_a, sent_b) for sent_a, _, _, sent_b, _, _ in pairs]
    return _one_offset(requests) and _one_offset([(got_a, got_b) for _, _, got_a, _, _, got_b in pairs])


def _one_offset(times: list[tuple[float | None, float | None]]) -> bool:
    """Nearly all of the two recordings' times of the same messages a near-constant offset apart (or no times)."""
    offsets = sorted(b - a for a, b in times if a is not None and b is not None)
    if not offsets:
        return True
    middle = offsets[len(offsets) // 2]
    return sum(abs(o - middle) <= TRANSIT for o in offsets) >= MATCH * len(offsets)


def _hint(a: Session, b: Session, count: int) -> Anomaly:
    detail = (
        f"{a.source} and {b.source} seem to record the same session ({count} of its first requests alike, "
        f"{b.key} against {a.key}): audit them together with --merge for one verdict from the best vantage"
    )
    return Anomaly(0, a.first_ts, Origin(a.source), a.key, AnomalyName.MERGE_SAME_SESSION, detail, revision=a.revision)
