"""A trace of the session's requests beside a recording of its messages (`--merge` with an `otlp` input).

    trace (otlp) events ──┐  sessions paired by the requests both hold (method and id)
    recording events ─────┴▶ clock: requests and replies against span starts and ends ─▶ the recording's events
                                                                                          + handler facts

A trace holds no message content, so it is not merged message by message (`recordings.py`): the recording of the
messages is judged as it is, and the trace adds what no message says. A SERVER span ends when the server's
handler returned, raised or was cancelled; for a request the recording shows cancelled (a
`notifications/cancelled`, or the client's close or reset of its stream), the span's end on the recording's
clock says whether the handler stopped at the cancel or ran on after it (`merge.handler-ran-on`, CW508;
`merge.handler-stopped`, CW509; both name the cancelled call, whose outcome then cites the span).

"Ran on" needs the end beyond what the two recordings' positions and clocks leave open: the race window of the
recording's vantage (`rebuild.ordering.DEFAULT_RACE_WINDOWS`: the server may read a cancel that late after a
proxy relayed it), the clock fit's uncertainty and a log's latency. Within that, the handler stopped at the
cancel, as far as the two can tell.

Clock: a span starts after the recording nearer the client saw its request and, for a SERVER span, ends before
the reply is written: each answered request bounds the offset from both sides (`align.fit_clock`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field, replace

from ..model import (
    Anomaly,
    AnomalyName,
    Direction,
    Event,
    MessageEvent,
    MessageKind,
    Origin,
    SessionStart,
    Side,
    TransportEvent,
    TransportKind,
    Vantage,
)
from ..rebuild.ordering import DEFAULT_RACE_WINDOWS
from . import align
from .align import ClockFit, Contribution, Item, MergeSummary, Travel
from .facts import POSITION

__all__ = ["TRACE_FORMAT", "merge_trace"]

TRACE_FORMAT = "otlp"
LOG_LATENCY = 0.002
"""Seconds a recorded time may lag what it records (as `recordings.LOG_LATENCY`)."""
MIN_SHARED = 3
"""Requests a trace session and a recorded one must share, and half of the smaller one's, to be one session."""
MAX_FANOUT = 64
"""A request key held by more recorded sessions than this tells none of them apart."""
_CLOSES = frozenset({TransportKind.CLOSED_BY_CLIENT, TransportKind.RESET_BY_CLIENT})

Group = tuple[str, str, list[Event]]
Key = tuple[str, str]
"""A client request: its method and its id as text (a trace keeps no id's JSON type)."""


@dataclass(slots=True)
class _Traced:
    start: SessionStart | None = None
    events: list[Event] = field(default_factory=list)
    requests: dict[Key, int] = field(default_factory=dict)
    """Client request → index of its event."""
    replies: dict[str, int] = field(default_factory=dict)
    """A client request's id as text → index of its first reply."""

    @property
    def vantage(self) -> Vantage:
        return self.start.vantage if self.start is not None else Vantage.UNKNOWN


@dataclass(frozen=True, slots=True)
class _Cancel:
    index: int
    event: Event
    request_id: int | str
    method: str


def merge_trace(trace: Group, other: Group) -> tuple[list[Group], list[MergeSummary]]:
    """The groups to judge: the sessions both hold as the recording's events with the trace's handler facts,
    and everything else on its own; a summary per pair."""
    loose_t, traced = _split(trace[2])
    loose_o, recorded = _split(other[2])
    merged: list[Event] = []
    summaries = []
    for key_t, key_o in _pairs(traced, recorded):
        events, summary = _merge_pair(trace[0], traced.pop(key_t), other, recorded.pop(key_o))
        merged += events
        summaries.append(summary)
    if not summaries:
        merged.append(_no_common_session(trace[0], other))
    groups = [
        (trace[0], trace[1], loose_t + [e for s in traced.values() for e in s.events]),
        (other[0], other[1], loose_o + [e for s in recorded.values() for e in s.events]),
        (f"{other[0]} + {trace[0]}", f"{other[1]} + {trace[1]}", merged),
    ]
    return [g for g in groups if g[2]], summaries


def _split(events: Iterable[Event]) -> tuple[list[Event], dict[str, _Traced]]:
    loose: list[Event] = []
    sessions: dict[str, _Traced] = {}
    for event in events:
        if event.session_key is None:
            loose.append(event)
            continue
        session = sessions.setdefault(event.session_key, _Traced())
        index = len(session.events)
        session.events.append(event)
        if isinstance(event, SessionStart) and session.start is None:
            session.start = event
        elif isinstance(event, MessageEvent) and event.message.id is not None:
            m = event.message
            if event.direction is Direction.C2S and m.kind is MessageKind.REQUEST:
                session.requests.setdefault((m.method or "", str(m.id)), index)
            elif event.direction is Direction.S2C and m.kind in (MessageKind.RESULT, MessageKind.ERROR):
                session.replies.setdefault(str(m.id), index)
    return loose, sessions


def _pairs(traced: dict[str, _Traced], recorded: dict[str, _Traced]) -> list[tuple[str, str]]:
    """Greedily, the trace and recorded sessions sharing the most client requests (as `recordings._pair_sessions`),
    first those whose `mcp.session.id` names the recorded session (every session numbers its requests from 1)."""
    where: dict[Key, set[str]] = defaultdict(set)
    for key, session in recorded.items():
        for request in session.requests:
            where[request].add(key)
    scored = []
    for key_t, session in traced.items():
        counts: dict[str, int] = defaultdict(int)
        for request in session.requests:
            holders = where.get(request, set())
            for key_o in holders if len(holders) <= MAX_FANOUT else ():
                counts[key_o] += 1
        sid = _session_id(key_t)
        for key_o, count in counts.items():
            if count >= MIN_SHARED and 2 * count >= min(len(session.requests), len(recorded[key_o].requests)):
                named = sid is not None and key_o.endswith(f"#{sid}")  # the capture's `Mcp-Session-Id` session
                scored.append((named, count, key_t, key_o))
    pairs, used_t, used_o = [], set(), set()
    for _, _, key_t, key_o in sorted(scored, key=lambda s: (not s[0], -s[1])):
        if key_t not in used_t and key_o not in used_o:
            pairs.append((key_t, key_o))
            used_t.add(key_t)
            used_o.add(key_o)
    return pairs


def _session_id(key: str) -> str | None:
    """The `mcp.session.id` a trace session's key holds (`{source}#{vantage}-{id}#{n}`, readers/tools/otlp.py)."""
    parts = key.rsplit("#", 2)
    group = parts[-2] if len(parts) == 3 else ""
    vantage, _, sid = group.partition("-")
    return sid if sid and vantage in {v.value for v in Vantage} else None


def _merge_pair(name: str, trace: _Traced, other: Group, recorded: _Traced) -> tuple[list[Event], MergeSummary]:
    shared = [k for k in recorded.requests if k in trace.requests]
    clock = align.fit_clock(list(_sightings(trace, recorded, shared)))
    key = recorded.start.session_key if recorded.start is not None else str(recorded.events[0].session_key)
    facts: dict[int, Anomaly] = {}
    if clock is None:
        facts[len(recorded.events) - 1] = _unaligned(name, other[0], recorded, key)
    elif trace.vantage is Vantage.SERVER:
        window = DEFAULT_RACE_WINDOWS[recorded.vantage] + clock.uncertainty + LOG_LATENCY
        for cancel in _cancels(recorded):
            span = trace.requests.get((cancel.method, str(cancel.request_id)))
            fact = _handler(name, trace, span, cancel, clock, window, key) if span is not None else None
            if fact is not None:
                facts[cancel.index] = fact
    events: list[Event] = []
    for index, event in enumerate(recorded.events):
        events.append(replace(event, seq=len(events) + 1) if facts else event)
        fact = facts.get(index)
        if fact is not None:  # right after the cancel: before the call's timeline can end
            events.append(replace(fact, seq=len(events) + 1))
    contributions = (
        _contribution(other[0], other[1], recorded, "primary", len(shared)),
        _contribution(name, TRACE_FORMAT, trace, "secondary", len(shared)),
    )
    return events, MergeSummary(key, contributions, clock, lost=0, unrecorded=0, abandoned=0)


def _sightings(trace: _Traced, recorded: _Traced, shared: Sequence[Key]) -> Iterable[tuple[Item, Item]]:
    """(the trace's item, the recording's item) for each shared request's start and end: merge's A is the trace."""
    position_t, position_o = POSITION[trace.vantage], POSITION[recorded.vantage]
    if position_t == position_o:
        to_trace = from_trace = Travel.SAME
    else:  # a request reaches the one nearer the client first; its end, the one nearer the server
        to_trace = Travel.B_TO_A if position_t > position_o else Travel.A_TO_B
        from_trace = Travel.A_TO_B if to_trace is Travel.B_TO_A else Travel.B_TO_A
    for request in shared:
        exchange: Hashable = request
        t_start, o_start = trace.events[trace.requests[request]], recorded.events[recorded.requests[request]]
        yield Item(request, t_start.ts, to_trace, exchange), Item(request, o_start.ts, to_trace, exchange)
        t_end, o_end = trace.replies.get(request[1]), recorded.replies.get(request[1])
        if t_end is not None and o_end is not None:
            ends = (request, "end")
            yield (
                Item(ends, trace.events[t_end].ts, from_trace, exchange),
                Item(ends, recorded.events[o_end].ts, from_trace, exchange),
            )


def _cancels(recorded: _Traced) -> Iterable[_Cancel]:
    """The client's first cancel of each of its requests still unanswered then: a notification naming it, or
    its stream closed or reset by the client."""
    methods = {}
    streams: dict[str, tuple[int | str, str]] = {}
    seen: set[str] = set()
    for (method, _), index in recorded.requests.items():
        event = recorded.events[index]
        if isinstance(event, MessageEvent) and event.message.id is not None:
            methods[str(event.message.id)] = (event.message.id, method)
            if event.stream is not None:
                streams.setdefault(event.stream, (event.message.id, method))
    for index, event in enumerate(recorded.events):
        target: tuple[int | str, str] | None = None
        if isinstance(event, MessageEvent) and event.direction is Direction.C2S:
            if event.message.method == "notifications/cancelled":
                named = event.message.payload.get("requestId")
                target = methods.get(str(named)) if isinstance(named, int | str) else None
        elif isinstance(event, TransportEvent) and event.kind in _CLOSES and event.stream is not None:
            target = streams.get(event.stream)
        if target is None or str(target[0]) in seen:
            continue
        seen.add(str(target[0]))
        answered = recorded.replies.get(str(target[0]))
        if answered is None or answered > index:
            yield _Cancel(index, event, target[0], target[1])


def _handler(
    name: str, trace: _Traced, span: int, cancel: _Cancel, clock: ClockFit, window: float, key: str
) -> Anomaly | None:
    """What the server span of a cancelled request says of its handler: ran on past the cancel, or stopped."""
    request = trace.events[span]
    end_index = trace.replies.get(str(cancel.request_id))
    at = cancel.event.ts
    if end_index is None or at is None or trace.events[end_index].ts is None:
        return None
    end = trace.events[end_index]
    gap = clock.to_b(end.ts) - at  # type: ignore[arg-type]
    what = f"the server's span of {cancel.method} (id {cancel.request_id!r}, {request.origin.display()})"
    bound = f"the {window:.3f} s the recordings' positions and clocks leave open"
    # beyond the window, the order is proved (no `gap`: exact); within it, a stop at the cancel is inferred
    if gap > window:
        name_, gap_ = AnomalyName.MERGE_HANDLER_RAN_ON, None
        detail = f"{what} ended {gap:.3f} s after the cancel, beyond {bound}"
    else:
        name_, gap_ = AnomalyName.MERGE_HANDLER_STOPPED, gap
        when = f"{-gap:.3f} s before" if gap < 0 else f"{gap:.3f} s after"
        detail = f"{what} ended {when} the cancel, within {bound}"
    return Anomaly(
        seq=0,  # numbered where it is placed
        ts=at,
        origin=end.origin,
        session_key=key,
        name=name_,
        detail=detail,
        request_id=cancel.request_id,
        method=cancel.method,
        gap=gap_,
        requester=Side.CLIENT,
    )


def _contribution(source: str, reader: str, session: _Traced, role: str, matched: int) -> Contribution:
    start = session.start
    return Contribution(
        source=source,
        session_key=start.session_key if start is not None else "",
        input_format=reader,
        vantage=session.vantage.value,
        role=role,
        messages=len(session.requests),
        matched=matched,
        only_here=len(session.requests) - matched,
        transport_facts=0,
    )


def _unaligned(name: str, other: str, recorded: _Traced, key: str) -> Anomaly:
    return Anomaly(
        0,
        None,
        recorded.start.origin if recorded.start is not None else Origin(other),
        key,
        AnomalyName.MERGE_CLOCK_UNALIGNED,
        f"no request and reply seen by both {other} and {name} bound the clock offset from both sides: "
        "the trace's spans are not placed against the cancels",
    )


def _no_common_session(name: str, other: Group) -> Anomaly:
    first = next((e.origin for e in other[2]), Origin(other[0]))
    return Anomaly(
        0,
        None,
        first,
        None,
        AnomalyName.MERGE_NO_COMMON_SESSION,
        f"no session of {name} shares {MIN_SHARED} or more requests (method and id, and half its own) with one "
        f"of {other[0]}: each is judged on its own",
    )
