"""Two inputs that seem to hold the same session: a hint to audit them together with `--merge`.

Each input is audited on its own, so the comparison runs on what its sessions keep: the earliest
`MAX_REQUESTS` requests of each (who sent them, id, method, a digest of the params, and when), filled in
by `pipeline.judge` from the timelines it judges. Two sessions of different inputs are the same when
they share at least `MIN_SHARED` of those requests and nearly all of both sessions', at one time
offset (two clocks, one session) or without times. A named anomaly (`merge.same-session`) that
rule CW506 turns into an info finding.
"""

from __future__ import annotations

import hashlib
import heapq
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence

import orjson

from ..model import Anomaly, AnomalyName, Origin, RequestTimeline, Session

MAX_REQUESTS = 32
"""Requests remembered per session (the earliest in the recording)."""
MIN_SHARED = 3
MATCH = 0.8
"""Share of the requests that must be alike, and of their time offsets that must agree."""
TRANSIT = 0.05
"""Seconds the offset between the two recordings' times of one request may stray from the typical one."""
COMMON = 50
"""A request seen in more sessions than this (an `initialize` every run sends) identifies none."""

Seen = tuple[tuple[str, float | None], ...]


class Requests:
    """Per session, the earliest requests judged so far (bounded)."""

    def __init__(self) -> None:
        self._heaps: dict[str, list[tuple[int, str, float | None]]] = defaultdict(list)

    def add(self, timeline: RequestTimeline) -> None:
        first = timeline.entries[0] if timeline.entries else None
        if first is None:
            return
        heap = self._heaps[timeline.session_key]
        if len(heap) >= MAX_REQUESTS and -first.seq <= heap[0][0]:
            return  # later than every request kept: no key to compute (one comparison per request)
        item = (-first.seq, _key(timeline, first.excerpt), first.ts)  # a max-heap on position
        if len(heap) < MAX_REQUESTS:
            heapq.heappush(heap, item)
        else:
            heapq.heapreplace(heap, item)

    def pop(self, session_key: str) -> Seen:
        heap = self._heaps.pop(session_key, [])
        return tuple((key, ts) for _, key, ts in sorted(heap, reverse=True))


def _key(timeline: RequestTimeline, excerpt: str) -> str:
    try:
        value = orjson.loads(excerpt)
        params = value.get("params") if isinstance(value, dict) else None
        body = orjson.dumps(params, option=orjson.OPT_SORT_KEYS)
    except (orjson.JSONDecodeError, TypeError):  # an excerpt cut short: the method and id still count
        body = b"?"
    digest = hashlib.blake2b(body, digest_size=8).hexdigest()
    return f"{timeline.requester.value}|{timeline.request_id!r}|{timeline.method}|{digest}"


def same_sessions(sessions: Sequence[Session]) -> Iterator[Anomaly]:
    """One anomaly per pair of sessions of different inputs that look like one session recorded twice."""
    holders: dict[str, list[int]] = defaultdict(list)
    for index, session in enumerate(sessions):
        for key, _ in session.requests_seen:
            holders[key].append(index)
    for a, session in enumerate(sessions):
        shared: Counter[int] = Counter(
            b for key, _ in session.requests_seen if len(holders[key]) <= COMMON for b in holders[key] if b > a
        )
        for b, count in sorted(shared.items()):
            other = sessions[b]
            if other.source != session.source and _alike(session, other, count):
                yield _hint(session, other, count)


def _alike(a: Session, b: Session, count: int) -> bool:
    """Nearly the same requests (`MATCH` of the larger set), at one time offset for nearly all of them:
    one session's requests are seen by both recorders a transit apart (the first may wait for a server
    to start); two runs of one script drift apart by their own timing."""
    if count < MIN_SHARED or count < MATCH * max(len(a.requests_seen), len(b.requests_seen)):
        return False
    times = dict(b.requests_seen)
    offsets = sorted(
        ts_b - ts_a for key, ts_a in a.requests_seen if ts_a is not None and (ts_b := times.get(key)) is not None
    )
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
