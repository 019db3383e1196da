"""The rooms of reconstruction on their own: the entry log, the finished-requests memory, the revision
in force, and the positional timeline constructor on the hot path."""

from __future__ import annotations

import tracemalloc
from dataclasses import fields

import pytest
from cancelwire.model import (
    CancelInfo,
    CancelMechanism,
    Certainty,
    EntryKind,
    Origin,
    Relation,
    RevisionBasis,
    SessionStart,
    Side,
    TimelineEntry,
    ToolEffect,
    Transport,
    Vantage,
)
from cancelwire.rebuild.entrylog import EntryLog
from cancelwire.rebuild.finished import FinishedRequests, TokenState
from cancelwire.rebuild.pending import SessionState
from cancelwire.rebuild.remembered import Memory
from cancelwire.rebuild.request import PendingRequest


def _entry(seq: int, kind: EntryKind = EntryKind.PROGRESS, relation: Relation | None = None) -> TimelineEntry:
    return TimelineEntry(kind, Side.SERVER, seq, float(seq), Origin("f", line=seq), relation=relation)


def _session(transport: Transport = Transport.STDIO, session_id: str | None = None) -> SessionState:
    start = SessionStart(
        seq=0,
        ts=0.0,
        origin=Origin("f", line=1),
        session_key="s",
        transport=transport,
        vantage=Vantage.PROXY,
        input_format="cancelwire-transcript",
        session_id=session_id,
    )
    return SessionState(start)


def _request(
    request_id: int = 1,
    *,
    declared: str | None = None,
    limit: int = 256,
    progress_token: str | int = "tok",
    is_task: bool = False,
) -> PendingRequest:
    return PendingRequest(
        requester=Side.CLIENT,
        request_id=request_id,
        method="tools/call",
        seq=1,
        tool="write",
        progress_token=progress_token,
        is_task=is_task,
        stream="exchange-3",
        declared_revision=declared,
        log=EntryLog(limit),
    )


def test_entry_log_keeps_the_first_entries_then_counts_like_ones_in_runs() -> None:
    log = EntryLog(3)
    for seq in range(1, 4):
        log.add(_entry(seq))
    for seq in range(4, 8):  # before the cancel: one run
        log.add(_entry(seq))
    log.add(_entry(8, EntryKind.CANCEL))
    for seq in range(9, 12):  # after the cancel: a run of its own, never merged with the one before
        log.add(_entry(seq, relation=Relation.AFTER))
    frozen = log.freeze()
    assert [(e.seq, e.kind, e.relation, e.repeats) for e in frozen] == [
        (1, EntryKind.PROGRESS, None, 1),
        (2, EntryKind.PROGRESS, None, 1),
        (3, EntryKind.PROGRESS, None, 1),
        (4, EntryKind.PROGRESS, None, 4),
        (8, EntryKind.CANCEL, None, 1),
        (9, EntryKind.PROGRESS, Relation.AFTER, 3),
    ]
    assert log.newest.seq == 11  # the newest counted entry, though the last kept one is older


def test_finished_requests_forget_the_oldest_and_say_so_once_per_input() -> None:
    finished = FinishedRequests(limit=2)
    session = _session()
    said = []
    for request_id in range(1, 5):
        item = _request(request_id)
        item.log.add(_entry(request_id))
        said.append(finished.retire(session, item, judged=True, own_token=False))
    assert [a.name if a else None for a in said] == [None, None, "reconstruct.tombstones-forgotten", None]
    assert [finished.request("s", Side.CLIENT, i) is not None for i in range(1, 5)] == [False, False, True, True]


def test_finished_tokens_of_tasks_and_unjudged_requests_are_quiet() -> None:
    finished = FinishedRequests(limit=10)
    session = _session()
    for request_id, (is_task, judged) in enumerate([(False, True), (True, True), (False, False)], start=1):
        item = _request(request_id, progress_token=f"t{request_id}", is_task=is_task)
        item.log.add(_entry(request_id))
        finished.retire(session, item, judged=judged, own_token=True)
    states = [finished.token("s", f"t{i}") for i in (1, 2, 3)]
    assert states == [
        ("tools/call", TokenState.FINISHED),
        ("tools/call", TokenState.QUIET),
        ("tools/call", TokenState.QUIET),
    ]


@pytest.mark.parametrize(
    ("steps", "declared", "expected"),
    [
        ([], None, (None, RevisionBasis.ASSUMED)),
        ([("2025-06-18", RevisionBasis.DECLARED)], None, ("2025-06-18", RevisionBasis.DECLARED)),
        # a negotiation beats a declaration, a later declaration does not replace it
        (
            [("2025-06-18", RevisionBasis.DECLARED), ("2025-11-25", RevisionBasis.NEGOTIATED)],
            None,
            ("2025-11-25", RevisionBasis.NEGOTIATED),
        ),
        (
            [("2025-11-25", RevisionBasis.NEGOTIATED), ("2025-06-18", RevisionBasis.DECLARED)],
            None,
            ("2025-11-25", RevisionBasis.NEGOTIATED),
        ),
        # a second initialize renegotiates
        (
            [("2025-06-18", RevisionBasis.NEGOTIATED), ("2025-11-25", RevisionBasis.NEGOTIATED)],
            None,
            ("2025-11-25", RevisionBasis.NEGOTIATED),
        ),
        # a request's own declaration (2026-07-28 _meta) judges its exchange ...
        ([("2025-11-25", RevisionBasis.NEGOTIATED)], "2026-07-28", ("2026-07-28", RevisionBasis.DECLARED)),
        # ... unless --protocol overrides everything
        (
            [("2025-03-26", RevisionBasis.OVERRIDDEN), ("2025-11-25", RevisionBasis.NEGOTIATED)],
            "2026-07-28",
            ("2025-03-26", RevisionBasis.OVERRIDDEN),
        ),
    ],
)
def test_the_revision_in_force_is_decided_in_one_place(
    steps: list[tuple[str, RevisionBasis]], declared: str | None, expected: tuple[str | None, RevisionBasis]
) -> None:
    session = _session()
    for revision, basis in steps:
        session.learn_revision(revision, basis)
    assert session.revision_for(declared) == expected


def test_the_positional_timeline_constructor_puts_every_field_in_its_place() -> None:
    session = _session(Transport.STREAMABLE_HTTP, "sid-1")
    session.learn_revision("2025-06-18", RevisionBasis.NEGOTIATED)
    session.tool_effects["write"] = ToolEffect.SIDE_EFFECTING
    item = _request(7, declared="2025-11-25")
    request = _entry(1, EntryKind.REQUEST)
    item.log.add(request)
    item.cancel = CancelInfo(CancelMechanism.NOTIFICATION, _entry(2, EntryKind.CANCEL), "user")
    item.verified_by = _entry(3, EntryKind.RESULT)
    item.reply_unread = frozenset({EntryKind.RESULT, EntryKind.ERROR_RESULT})
    item.window = 0.25  # the recording's round trips set it above the proxy's 0.05 s
    timeline = session.timeline(item, ended=True)
    assert {f.name: getattr(timeline, f.name) for f in fields(timeline)} == {
        "session_key": "s",
        "requester": Side.CLIENT,
        "request_id": 7,
        "method": "tools/call",
        "tool": "write",
        "tool_effect": ToolEffect.SIDE_EFFECTING,
        "progress_token": "tok",
        "revision": "2025-11-25",
        "revision_basis": RevisionBasis.DECLARED,
        "transport": Transport.STREAMABLE_HTTP,
        "vantage": Vantage.PROXY,
        "stream": "exchange-3",
        "entries": (request,),
        "cancel": item.cancel,
        "verified_by": item.verified_by,
        "ended_by_recording": True,
        "unrecorded": frozenset({EntryKind.RESULT, EntryKind.ERROR_RESULT}),
        "reply_unread": True,
        "measured_window": 0.25,
        "session_id": "sid-1",
    }


def test_add_entry_tags_entries_after_the_cancel_once() -> None:
    session = _session()
    item = _request()
    session.add_entry(item, _entry(1, EntryKind.REQUEST))
    cancel = TimelineEntry(EntryKind.CANCEL, Side.CLIENT, 2, 2.0, Origin("f", line=2))
    item.cancel = CancelInfo(CancelMechanism.NOTIFICATION, cancel)
    session.add_entry(item, cancel)
    session.add_entry(item, _entry(3, EntryKind.RESULT))
    assert [(e.relation, e.certainty) for e in item.log.entries] == [
        (None, Certainty.EXACT),
        (None, Certainty.EXACT),
        (Relation.AFTER, Certainty.INFERRED),  # a second later, seen from a proxy: past its 50 ms window
    ]


def test_a_finished_call_and_its_token_are_remembered_in_little_memory() -> None:
    """Issue 20: as many as `max_tombstones` (50,000) finished calls are remembered per input, so each
    must cost little. Traced memory for 4,000 calls with their progress tokens, besides their ids,
    tokens and times (made before): 203 B a call; 426 B with an ordered dict of objects keyed by tuples."""
    calls = 4_000
    session = _session()
    items = []
    for request_id in range(1_000, 1_000 + calls):
        item = _request(request_id, progress_token=request_id + 10_000)
        item.log.add(_entry(request_id))
        items.append(item)
    finished = FinishedRequests(limit=calls)
    tracemalloc.start()
    try:
        for item in items:
            finished.retire(session, item, judged=True, own_token=True)
        per_call = tracemalloc.get_traced_memory()[0] / calls
    finally:
        tracemalloc.stop()
    assert finished.request("s", Side.CLIENT, 1_000) is not None
    assert finished.token("s", 11_000) == ("tools/call", TokenState.FINISHED)
    assert per_call <= 250, per_call


def test_finished_memory_puts_a_key_used_again_last_and_stays_bounded() -> None:
    memory: Memory[int, tuple[str]] = Memory(limit=2)
    said = [memory.put("s", key, (name,)) for key, name in [(1, "a"), (2, "b"), (1, "a again"), (3, "c")]]
    assert said == [False, False, False, True]
    assert [memory.get("s", key) for key in (1, 2, 3)] == [("a again",), None, ("c",)]
    for round_ in range(1_000):  # one id used again and again: the queue and the stores stay small
        memory.put(f"s{round_ % 3}", 7, (str(round_),))
        memory.pop("s", 3)
    assert [memory.get(store, key) for store, key in [("s", 1), ("s", 3), ("s1", 7)]] == [None, None, None]
    assert (memory.get("s2", 7), memory.get("s0", 7)) == (("998",), ("999",))
    assert len(memory._queue) <= 3 * (2 * 2 + 16) and len(memory._stores) <= 2 * 2 + 16
