"""Two recordings of one session as one event stream (`--merge`), with what each contributed.

    recording A events ─┐  sessions paired by shared messages   ┌─▶ merged session's events ─▶ reconstruct
    recording B events ─┴▶ align.match per pair (clock, pairs) ─┴─▶ anomalies: lost, unrecorded, never cancelled

Where the two recorders stand between client and server decides what each proves. The one nearer the
server is the *primary*: its order of events is the merged order and its vantage the merged session's,
because the server is where a cancel is read (a late reply the client's log can only call inferred is
exact in the server's log). The other recording adds what the primary cannot see: its transport facts
(a capture's closes and resets, on the primary's streams), the messages that never reached the
primary (lost or never sent: reported, not placed on the timeline), and the client's own record that
it gave up on a call (a cancel it logged, or an error it made itself) when nothing reached the server.

Matched messages are one event (the primary's). The secondary's events are placed between the matched
messages around them, by the aligned clock within that span, and take the primary's clock.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import orjson

from ..model import (
    Anomaly,
    AnomalyName,
    Direction,
    Event,
    MessageEvent,
    Origin,
    SessionStart,
    Transport,
    TransportEvent,
    Vantage,
)
from . import align, crossing, spans
from .align import Contribution, Item, MergeSummary, Travel
from .facts import POSITION, Evidence, abandoned_calls, missing_messages, primary_streams

__all__ = ["MAX_EVENTS", "MergedRecordings", "Recording", "merge_recordings"]

MAX_EVENTS = 2_000_000
"""Events read per recording for a merge (both must be held to align them); past it, no merge."""
LOG_LATENCY = 0.002
"""Seconds a log line's time may lag the read or write it records (added to the clock's uncertainty
before the secondary's time puts one of its events ahead of the primary's)."""
MIN_SHARED = 3
"""Messages two sessions must share, and at least half of the smaller one's, to be one session."""
MAX_FANOUT = 64
"""A message held by more sessions of the other recording than this tells none of them apart."""
ROUND_TRIP_MARGIN = 0.01
"""Seconds by which one recording's fastest round trip must beat the other's for the two, declaring the
same vantage, to stand apart (a recorder's own scheduling varies by a few milliseconds)."""
EXACT_ORDER = frozenset({"cancelwire-transcript"})
"""Formats whose order on stdio is exact: `cancelwire record` writes both directions under one lock, each
line before it relays it (recorder.py), so what is in its file before a cancel passed it before the cancel."""


@dataclass(slots=True)
class Recording:
    """One input read whole."""

    name: str
    reader: str
    events: list[Event]


@dataclass(slots=True)
class _Session:
    start: SessionStart | None = None
    events: list[Event] = field(default_factory=list)
    keys: list[Hashable | None] = field(default_factory=list)
    """Per event: the content key of a placed message, else None."""


@dataclass(slots=True)
class MergedRecordings:
    """What `merge_recordings` produced: event groups to judge (source name, reader name, events)."""

    groups: list[tuple[str, str, list[Event]]]
    summaries: list[MergeSummary]


def merge_recordings(first: Recording, second: Recording) -> MergedRecordings:
    """Pair the sessions both recordings hold and merge each pair; the rest is judged on its own. A trace
    beside a recording of messages adds its spans' facts to that recording (`spans.merge_trace`)."""
    if (first.reader == spans.TRACE_FORMAT) != (second.reader == spans.TRACE_FORMAT):
        trace, other = (first, second) if first.reader == spans.TRACE_FORMAT else (second, first)
        groups, found = spans.merge_trace(
            (trace.name, trace.reader, trace.events), (other.name, other.reader, other.events)
        )
        return MergedRecordings(groups, found)
    loose_a, sessions_a = _split(first.events)
    loose_b, sessions_b = _split(second.events)
    pairs, ambiguous = _pair_sessions(sessions_a, sessions_b)
    merged: list[Event] = []
    summaries: list[MergeSummary] = []
    if ambiguous:
        merged.append(_ambiguous(first, second, [sessions_a[k] for k in ambiguous]))
    for key_a, key_b in pairs:
        events, summary = _merge_pair(first, sessions_a.pop(key_a), second, sessions_b.pop(key_b))
        merged.extend(events)
        summaries.append(summary)
    if not pairs and not ambiguous:
        merged.append(_no_common_session(first, second))
    groups = [
        (first.name, first.reader, loose_a + [e for s in sessions_a.values() for e in s.events]),
        (second.name, second.reader, loose_b + [e for s in sessions_b.values() for e in s.events]),
        (f"{first.name} + {second.name}", f"{first.reader} + {second.reader}", merged),
    ]
    return MergedRecordings([(name, reader, events) for name, reader, events in groups if events], summaries)


def _split(events: Iterable[Event]) -> tuple[list[Event], dict[str, _Session]]:
    loose: list[Event] = []
    sessions: dict[str, _Session] = {}
    for event in events:
        key = event.session_key
        if key is None:
            loose.append(event)
            continue
        session = sessions.setdefault(key, _Session())
        if isinstance(event, SessionStart) and session.start is None:
            session.start = event
        session.events.append(event)
        session.keys.append(content_key(event) if isinstance(event, MessageEvent) else None)
    return loose, sessions


def content_key(event: MessageEvent) -> Hashable | None:
    """Direction, kind, id, method and a digest of the content: equal for one message in any recording."""
    if event.direction is Direction.NONE:
        return None
    m = event.message
    try:
        body = orjson.dumps(m.payload, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # a payload orjson cannot write (an integer past 64 bits): its text decides
        body = repr(sorted(m.payload.items())).encode("utf-8", "replace")
    digest = hashlib.blake2b(body, digest_size=12).digest()
    return (event.direction.value, m.kind.value, m.id, m.method, digest)


def _pair_sessions(a: dict[str, _Session], b: dict[str, _Session]) -> tuple[list[tuple[str, str]], list[str]]:
    """Greedily, the pairs of sessions sharing the most messages (at least `MIN_SHARED` and half the
    smaller one's); each session joins one pair at most. Also the sessions of A that cannot be told
    apart: only messages held by more than `MAX_FANOUT` sessions of B (every run's identical
    `initialize`) are counted, so the work is bounded by A's messages times `MAX_FANOUT`, never A's
    sessions times B's; a session with no rarer message gets no candidate and is named."""
    where: dict[Hashable, set[str]] = defaultdict(set)
    for key_b, session in b.items():
        for k in session.keys:
            if k is not None:
                where[k].add(key_b)
    distinct_b = {key: {k for k in s.keys if k is not None} for key, s in b.items()}
    scored: list[tuple[int, str, str]] = []
    ambiguous: list[str] = []
    for key_a, session in a.items():
        distinct = {k for k in session.keys if k is not None}
        candidates = {key_b for k in distinct if len(where.get(k, ())) <= MAX_FANOUT for key_b in where.get(k, ())}
        if not candidates and any(len(where.get(k, ())) > MAX_FANOUT for k in distinct):
            ambiguous.append(key_a)
        for key_b in candidates:
            count = len(distinct & distinct_b[key_b])
            if count >= MIN_SHARED and 2 * count >= min(len(distinct), len(distinct_b[key_b])):
                scored.append((count, key_a, key_b))
    pairs: list[tuple[str, str]] = []
    used_a: set[str] = set()
    used_b: set[str] = set()
    for _, key_a, key_b in sorted(scored, key=lambda s: -s[0]):
        if key_a not in used_a and key_b not in used_b:
            pairs.append((key_a, key_b))
            used_a.add(key_a)
            used_b.add(key_b)
    order = {key: n for n, key in enumerate(a)}
    return sorted(pairs, key=lambda p: order[p[0]]), ambiguous


def _vantage(session: _Session) -> Vantage:
    return session.start.vantage if session.start is not None else Vantage.UNKNOWN


def _merge_pair(rec_x: Recording, x: _Session, rec_y: Recording, y: _Session) -> tuple[list[Event], MergeSummary]:
    """One session recorded twice: the primary (nearer the server; the first input on a tie) and the
    secondary, aligned with the client-side recording as merge's A."""
    same_place = POSITION[_vantage(x)] == POSITION[_vantage(y)]
    apart = same_place and _apart(x, y)
    if POSITION[_vantage(y)] > POSITION[_vantage(x)] or apart is y:
        rec_x, x, rec_y, y = rec_y, y, rec_x, x
    primary, secondary = x, y
    same_place = same_place and apart is None
    p_msgs = [i for i, k in enumerate(primary.keys) if k is not None]
    s_msgs = [i for i, k in enumerate(secondary.keys) if k is not None]
    # merge's A is the recording nearer the client: the secondary (or, on a tie, itself)
    items_s = [_item(secondary, i, same_place) for i in s_msgs]
    items_p = [_item(primary, i, same_place) for i in p_msgs]
    found = align.match(items_s, items_p)
    pairs = [(s_msgs[i], p_msgs[j]) for i, j in found.pairs]
    anchors = [(s_msgs[i], p_msgs[j]) for i, j in found.pairs if i in found.anchors]
    key = primary.start.session_key if primary.start is not None else next(iter(primary.events)).session_key or ""
    evidence = Evidence(
        key=key,
        primary=primary.events,
        secondary=secondary.events,
        pairs=pairs,
        clock=found.clock,
        same_place=same_place,
        client_side_secondary=_vantage(secondary) is Vantage.CLIENT,
        secondary_name=rec_y.name,
        primary_name=rec_x.name,
    )
    problems = list(missing_messages(evidence)) + list(abandoned_calls(evidence))
    if found.clock is None:
        problems.append(_unaligned(evidence))
    events, facts = _weave(evidence, anchors, problems)
    lost = sum(1 for p in problems if p.name is AnomalyName.MERGE_MESSAGE_LOST)
    summary = MergeSummary(
        session_key=key,
        recordings=(
            _contribution(rec_x, primary, "primary", len(p_msgs), len(pairs), 0),
            _contribution(rec_y, secondary, "secondary", len(s_msgs), len(pairs), facts),
        ),
        clock=found.clock,
        lost=lost,
        unrecorded=sum(1 for p in problems if p.name is AnomalyName.MERGE_MESSAGE_UNRECORDED),
        abandoned=len({p.request_id for p in problems if p.name is AnomalyName.MERGE_CANCEL_NEVER_SENT}),
    )
    return events, summary


def _apart(x: _Session, y: _Session) -> _Session | None:
    """Of two recordings declaring the same vantage, the one nearer the server, when they prove they stand
    apart: the client's requests are answered faster at one (by more than `ROUND_TRIP_MARGIN`: a slow
    link lies between them) and one of them has an exact order (`EXACT_ORDER`), which then decides what
    crossed a cancel, over any clock estimate. None when they may stand at one place."""
    if not ({_format(x), _format(y)} & EXACT_ORDER):
        return None
    rx, ry = fastest_round_trip(x.events), fastest_round_trip(y.events)
    if rx is None or ry is None or abs(rx - ry) <= ROUND_TRIP_MARGIN:
        return None
    return x if rx < ry else y


def _format(session: _Session) -> str | None:
    start = session.start
    return start.input_format if start is not None and start.transport is Transport.STDIO else None


def fastest_round_trip(events: Iterable[Event]) -> float | None:
    """The fastest time from a client's request to its reply that the recording shows (seconds)."""
    sent: dict[Hashable, float] = {}
    fastest: float | None = None
    for event in events:
        if not isinstance(event, MessageEvent) or event.ts is None or event.message.id is None:
            continue
        m = event.message
        if event.direction is Direction.C2S and m.method is not None:
            sent.setdefault(m.id, event.ts)
        elif event.direction is Direction.S2C and m.method is None and m.id in sent:
            taken = event.ts - sent.pop(m.id)
            if taken >= 0 and (fastest is None or taken < fastest):
                fastest = taken
    return fastest


def _item(session: _Session, index: int, same_place: bool) -> Item:
    event = session.events[index]
    if not isinstance(event, MessageEvent):  # only message events have keys
        raise TypeError(event)
    flow = Travel.SAME if same_place else Travel.A_TO_B if event.direction is Direction.C2S else Travel.B_TO_A
    m = event.message
    exchange: Hashable | None = None
    if m.id is not None and m.method is None:  # a reply: its request is the requester's
        exchange = ("c2s" if event.direction is Direction.S2C else "s2c", m.id)
    elif m.id is not None:
        exchange = (event.direction.value, m.id)
    return Item(session.keys[index], event.ts, flow, exchange)


def _contribution(
    rec: Recording, session: _Session, role: str, messages: int, matched: int, facts: int
) -> Contribution:
    start = session.start
    return Contribution(
        source=rec.name,
        session_key=start.session_key if start is not None else "",
        input_format=rec.reader,
        vantage=_vantage(session).value,
        role=role,
        messages=messages,
        matched=matched,
        only_here=messages - matched,
        transport_facts=facts,
    )


def _weave(evidence: Evidence, anchors: list[tuple[int, int]], problems: list[Anomaly]) -> tuple[list[Event], int]:
    """The primary's events, with the secondary's transport facts (and, from a recorder at the same
    place, the messages the primary missed) between the matched messages around them; then the
    merge's own anomalies. Everything takes the merged session's key; times take the primary's clock."""
    fill = primary_streams(evidence)
    primary = [_on_stream(e, fill.get(i)) for i, e in enumerate(evidence.primary)]
    secondary = evidence.secondary
    after_anchor = {s: p for s, p in anchors}
    streams = _stream_map(evidence)
    out: list[Event] = []
    pending: list[Event] = []  # secondary events waiting for the next anchor
    facts = 0
    paired_s = {s for s, _ in evidence.pairs}
    cursor = 0
    margin = LOG_LATENCY + (evidence.clock.uncertainty if evidence.clock is not None else 0.0)
    for s_index, event in enumerate(secondary):
        if s_index in after_anchor:
            if _orders(evidence, event):
                stop = after_anchor[s_index]
                out.extend(_by_time(primary[cursor:stop], pending, margin))
                pending = []
                cursor = stop
            continue
        taken = _take(event, s_index in paired_s, evidence, streams)
        if taken is not None:
            facts += isinstance(taken, TransportEvent)
            pending.append(taken)
    out.extend(_by_time(primary[cursor:], pending, margin))
    out, crossed = crossing.placed(out, primary, crossing.crossings(evidence), evidence)
    out.extend(problems)
    start = evidence.primary_start()
    if start is not None and crossed:
        start = replace(start, crossed=frozenset(n for n, e in enumerate(out, 1) if id(e) in crossed))
    return [_renumber(e, n, evidence.key, start) for n, e in enumerate(out, 1)], facts


def _orders(evidence: Evidence, anchor: Event) -> bool:
    """Whether what the secondary saw before this matched message happened before the primary saw it too: when
    the message reached the secondary first (it flowed from the client's side, the primary standing nearer the
    server), or the two stand at one place, or there is no clock to place anything by. A message the primary saw
    first (a reply the server's log wrote before the wire carried it) orders nothing: a close the capture saw
    before the reply's segment left may have come after the server wrote it, and the clock places it."""
    if evidence.same_place or evidence.clock is None or not isinstance(anchor, MessageEvent):
        return True
    return anchor.direction is not Direction.S2C


def _on_stream(event: Event, stream: str | None) -> Event:
    if stream is None or not isinstance(event, MessageEvent) or event.stream == stream:
        return event
    return replace(event, stream=stream)


def _take(event: Event, paired: bool, evidence: Evidence, streams: Mapping[str, str]) -> Event | None:
    """A secondary event the merged stream needs, on the primary's clock and streams; None to leave out."""
    if isinstance(event, SessionStart) or paired:
        return None
    if isinstance(event, MessageEvent) and not evidence.same_place:
        return None  # it never passed the primary's point: reported by missing_messages
    ts = evidence.to_primary(event.ts)
    if isinstance(event, TransportEvent | MessageEvent) and event.stream is not None:
        return replace(event, ts=ts, stream=streams.get(event.stream, f"{evidence.secondary_name}:{event.stream}"))
    return replace(event, ts=ts)


def _stream_map(evidence: Evidence) -> dict[str, str]:
    """Secondary stream → primary stream, from matched messages (a primary without streams takes the
    secondary's: a server log beside a capture)."""
    found: dict[str, str] = {}
    for s, p in evidence.pairs:
        ev_s, ev_p = evidence.secondary[s], evidence.primary[p]
        if isinstance(ev_s, MessageEvent) and isinstance(ev_p, MessageEvent) and ev_s.stream is not None:
            found.setdefault(ev_s.stream, ev_p.stream if ev_p.stream is not None else ev_s.stream)
    return found


def _by_time(primary: Sequence[Event], extra: list[Event], margin: float) -> list[Event]:
    """PRIMARY in its order with EXTRA (in its own order) slotted in by time; untimed extras go last.

    An extra goes before a primary event only when it is earlier by more than MARGIN (the clock's
    uncertainty plus log latency): where the clocks cannot order them, the extra goes after, so a
    close from the secondary never makes a write of the primary "after" it on a guess."""
    if not extra:
        return list(primary)
    out: list[Event] = []
    i = 0
    for event in primary:
        while i < len(extra) and _before(extra[i], event, margin):
            out.append(extra[i])
            i += 1
        out.append(event)
    out.extend(extra[i:])
    return out


def _before(extra: Event, event: Event, margin: float) -> bool:
    return extra.ts is not None and event.ts is not None and extra.ts + margin < event.ts


def _renumber(event: Event, seq: int, key: str, start: SessionStart | None) -> Event:
    """The event at position SEQ of the merged session KEY (the primary's start stands for both)."""
    if isinstance(event, SessionStart) and start is not None:
        event = start
    return replace(event, seq=seq, session_key=key)


def _unaligned(evidence: Evidence) -> Anomaly:
    return Anomaly(
        0,
        None,
        evidence.primary_origin(),
        evidence.key,
        AnomalyName.MERGE_CLOCK_UNALIGNED,
        f"no request and reply seen by both {evidence.primary_name} and {evidence.secondary_name} bound the "
        "clock offset from both sides: the recordings are merged by message order only",
    )


def _ambiguous(first: Recording, second: Recording, sessions: list[_Session]) -> Anomaly:
    start = sessions[0].start
    names = ", ".join(s.start.session_key for s in sessions[:3] if s.start is not None)
    more = f" and {len(sessions) - 3} more" if len(sessions) > 3 else ""
    return Anomaly(
        0,
        None,
        start.origin if start is not None else Origin(first.name),
        None,
        AnomalyName.MERGE_SESSIONS_AMBIGUOUS,
        f"{len(sessions)} session(s) of {first.name} ({names}{more}) hold only messages that more than "
        f"{MAX_FANOUT} sessions of {second.name} hold too: which of them is the same session cannot be told, "
        "so they are not merged and each is judged on its own",
    )


def _no_common_session(first: Recording, second: Recording) -> Anomaly:
    return Anomaly(
        0,
        None,
        next((e.origin for e in first.events), Origin(first.name)),
        None,
        AnomalyName.MERGE_NO_COMMON_SESSION,
        f"no session of {first.name} shares {MIN_SHARED} or more messages (and half its own) with one of "
        f"{second.name}: each is judged on its own",
    )
