"""A server's message on an HTTP stream goes on every request the stream carries (issue 19): with a batch
POST of many requests and many such messages, each message was tagged and counted once per request. Once
a request's log counts them in a run whose relation to its cancel cannot change, the stream counts them
once for all (`entrylog.StreamCount`). The timelines and findings must be the same as one by one."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from cancelwire.model import (
    Direction,
    Event,
    MessageEvent,
    Origin,
    RequestTimeline,
    SessionStart,
    Transport,
    TransportEvent,
    TransportKind,
    Vantage,
)
from cancelwire.model.jsonrpc import decode_text
from cancelwire.rebuild import pending
from cancelwire.rebuild.entrylog import EntryLog
from cancelwire.rebuild.reconstruct import ReconstructOptions, Reconstructor
from hypothesis import given, settings
from hypothesis import strategies as st

_KEY = "cost#s"


@dataclass
class _Events:
    vantage: Vantage
    seq: int = 0
    ts: float = 100.0

    def start(self, crossed: frozenset[int] = frozenset()) -> SessionStart:
        return SessionStart(
            seq=0,
            ts=self.ts,
            origin=Origin("cost.pcapng", frame=1),
            session_key=_KEY,
            transport=Transport.STREAMABLE_HTTP,
            vantage=self.vantage,
            input_format="pcapng",
            revision="2025-11-25",
            crossed=crossed,
        )

    def _next(self, dt: float | None) -> tuple[int, float | None]:
        self.seq += 1
        if dt is None:
            return self.seq, None
        self.ts += dt
        return self.seq, self.ts

    def message(self, direction: Direction, body: dict[str, Any], stream: str, dt: float | None = 0.001) -> Event:
        seq, ts = self._next(dt)
        decoded = decode_text(json.dumps({"jsonrpc": "2.0", **body}))
        assert decoded is not None
        return MessageEvent(seq, ts, Origin("cost.pcapng", frame=seq), _KEY, direction, decoded.messages[0], stream)

    def transport(self, kind: TransportKind, stream: str) -> Event:
        seq, ts = self._next(0.001)
        return TransportEvent(seq, ts, Origin("cost.pcapng", frame=seq), _KEY, kind, stream)


def _batch(events: _Events, requests: int, notes: int) -> Iterator[Event]:
    """A batch POST of `requests` tools/calls on stream 1, `notes` log notifications on it, a cancel of
    id 1 (POSTed on stream 2) after the first half of them, then every reply."""
    yield events.start()
    for i in range(1, requests + 1):
        yield events.message(Direction.C2S, {"id": i, "method": "tools/call", "params": {"name": "t"}}, "1")
    yield events.transport(TransportKind.STREAM_OPENED, "1")
    log = {"method": "notifications/message", "params": {"level": "info", "data": "working"}}
    for n in range(notes):
        if n == notes // 2:
            cancel = {"method": "notifications/cancelled", "params": {"requestId": 1}}
            yield events.message(Direction.C2S, cancel, "2")
        yield events.message(Direction.S2C, log, "1", dt=0.004)
    for i in range(1, requests + 1):
        yield events.message(Direction.S2C, {"id": i, "result": {"content": []}}, "1")
    yield events.transport(TransportKind.CLOSED_BY_SERVER, "1")


def _timelines(events: list[Event], max_entries: int = 4) -> list[RequestTimeline]:
    options = ReconstructOptions(max_entries=max_entries)
    out = Reconstructor("cost.pcapng", "pcapng", options).run(events)
    return [o for o in out if isinstance(o, RequestTimeline)]


def _one_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every log takes every message itself (what reconstruction did before the shared count)."""
    monkeypatch.setattr(EntryLog, "share", lambda self, counter, entry: False)


def test_the_batch_timelines_count_every_message() -> None:
    *others, first = _timelines(list(_batch(_Events(Vantage.WIRE), requests=3, notes=10)), max_entries=4)
    runs = [(e.kind.value, e.relation and e.relation.value, e.certainty.value, e.repeats) for e in first.entries]
    assert first.request_id == 1  # judged last: held after its cancel
    assert runs == [
        ("request", None, "exact", 1),
        ("stream-opened", None, "exact", 1),
        ("related-message", None, "exact", 1),
        ("related-message", None, "exact", 1),
        ("related-message", None, "exact", 3),  # the 3rd to 5th, before the cancel: counted in one run
        ("cancel", None, "exact", 1),
        ("related-message", "crossing", "inferred", 2),  # 4 and 8 ms later: within a capture's 10 ms window
        ("related-message", "after", "inferred", 3),
        ("result", "after", "inferred", 1),
        ("stream-closed-by-server", "after", "inferred", 1),
        ("recording-ended", "after", "exact", 1),
    ]
    for other in others:  # not cancelled: the ten messages are all theirs
        assert sum(e.repeats for e in other.entries if e.kind.value == "related-message") == 10


def test_shared_counts_read_as_one_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    events = list(_batch(_Events(Vantage.WIRE), requests=5, notes=40))
    shared = _timelines(events)
    _one_by_one(monkeypatch)
    assert _timelines(events) == shared


def _note_work(monkeypatch: pytest.MonkeyPatch, requests: int, notes: int) -> int:
    """Entries the messages put on timelines one by one (`SessionState.add_entry` calls)."""
    calls = 0
    add_entry = pending.SessionState.add_entry

    def counted(self: pending.SessionState, *args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        return add_entry(self, *args, **kwargs)

    monkeypatch.setattr(pending.SessionState, "add_entry", counted)
    _timelines(list(_batch(_Events(Vantage.WIRE), requests, notes)))
    monkeypatch.undo()
    return calls


@pytest.mark.sources  # counts calls to a patched `SessionState.add_entry` (conftest.py)
def test_a_message_costs_one_count_not_one_per_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """n vs 4n messages on a stream of 100 requests: each request takes its first few one by one (its
    entry limit), then the stream counts the rest once. (One by one: 2,000 more entries per 20 messages.)"""
    small, large = _note_work(monkeypatch, 100, 40), _note_work(monkeypatch, 100, 160)
    assert large - small <= 120 + 10  # the 120 more messages, plus the cancelled request's own
    _one_by_one(monkeypatch)
    assert _note_work(monkeypatch, 100, 160) - _note_work(monkeypatch, 100, 40) >= 100 * 120


_VANTAGES = st.sampled_from([Vantage.WIRE, Vantage.SERVER, Vantage.CLIENT, Vantage.PROXY])
_STEP = st.one_of(
    st.tuples(st.just("note"), st.sampled_from(["1", "2"]), st.sampled_from([0.0, 0.001, 0.2, -0.5, None])),
    st.tuples(st.just("cancel"), st.integers(1, 4), st.sampled_from([0.001, None])),
    st.tuples(st.just("reply"), st.integers(1, 4), st.sampled_from([0.001, 0.3])),
    st.tuples(st.just("progress"), st.integers(1, 4), st.just(0.001)),
    st.tuples(st.sampled_from(["close", "reset", "server-close"]), st.sampled_from(["1", "2"]), st.just(0.001)),
)
_TRANSPORT = {
    "close": TransportKind.CLOSED_BY_CLIENT,
    "reset": TransportKind.RESET_BY_CLIENT,
    "server-close": TransportKind.CLOSED_BY_SERVER,
}


def _steps(vantage: Vantage, steps: list[tuple[str, Any, float | None]], crossed: bool) -> list[Event]:
    events = _Events(vantage)
    out: list[Event] = [events.start(frozenset({8, 9, 12}) if crossed else frozenset())]
    for i in range(1, 5):  # ids 1-3 in a batch on stream 1, id 4 alone on stream 2
        params = {"name": "t", "_meta": {"progressToken": i}}
        out.append(
            events.message(Direction.C2S, {"id": i, "method": "tools/call", "params": params}, "1" if i < 4 else "2")
        )
    for what, arg, dt in steps:
        if what == "note":
            out.append(events.message(Direction.S2C, {"method": "notifications/message", "params": {}}, arg, dt))
        elif what == "cancel":
            out.append(
                events.message(
                    Direction.C2S, {"method": "notifications/cancelled", "params": {"requestId": arg}}, "c", dt
                )
            )
        elif what == "reply":
            out.append(events.message(Direction.S2C, {"id": arg, "result": {}}, "1" if arg < 4 else "2", dt))
        elif what == "progress":
            body = {"method": "notifications/progress", "params": {"progressToken": arg, "progress": 1}}
            out.append(events.message(Direction.S2C, body, "1" if arg < 4 else "2", dt))
        else:
            out.append(events.transport(_TRANSPORT[what], arg))
    return out


@settings(max_examples=150, deadline=None)
@given(_VANTAGES, st.lists(_STEP, max_size=40), st.booleans(), st.integers(1, 4))
def test_fuzzed_streams_read_the_same_shared_or_one_by_one(
    vantage: Vantage, steps: list[tuple[str, Any, float | None]], crossed: bool, limit: int
) -> None:
    events = _steps(vantage, steps, crossed)
    shared = _timelines(events, max_entries=limit)
    with pytest.MonkeyPatch.context() as patch:
        _one_by_one(patch)
        assert _timelines(events, max_entries=limit) == shared
