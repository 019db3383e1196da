"""A server's message on a request's stream that a capture proves crossed the client's close (its segment's
acknowledgement does not cover the FIN) is a race, as a reply that crossed it is: CROSSING, exact, and no
write after the disconnect. `streams.on_note` took it as written after the close (CW102, CW201 errors)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
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
from cancelwire.rebuild.entrylog import EntryLog
from cancelwire.rebuild.reconstruct import ReconstructOptions, Reconstructor
from cancelwire.run.pipeline import AuditOptions, audit

CROSSING = Path(__file__).resolve().parent / "fixtures" / "crossing"
needs_tshark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")


def _verdicts(name: str) -> tuple[set[tuple[str, str, str, tuple[str, ...]]], list[tuple[Any, str, str, str]]]:
    result = audit([str(CROSSING / name)], AuditOptions())
    findings = {
        (f.rule_id, f.severity.value, f.certainty.value, tuple(o.display().split("/")[-1] for o in f.evidence))
        for f in result.findings
    }
    outcomes = [(c.request_id, c.mechanism.value, c.outcome.value, c.certainty.value) for c in result.cancellations]
    return findings, outcomes


@needs_tshark
def test_a_note_that_crossed_the_fin_is_a_race() -> None:
    """HAND-WRITTEN (scripts/make_crossing_fixtures.py): the log notification (frame 7) is captured after
    the client's FIN (frame 6) but acknowledges only the POST: written before the close reached the server."""
    findings, outcomes = _verdicts("note-before-fin.pcapng")
    assert findings == set()
    assert outcomes == [(2, "disconnect", "outcome-unverified", "exact")]


@needs_tshark
def test_a_note_written_after_the_fin_is_a_write_after_it() -> None:
    """The nearest miss: the same segment acknowledges the FIN."""
    findings, outcomes = _verdicts("note-after-fin.pcapng")
    evidence = ("note-after-fin.pcapng#6", "note-after-fin.pcapng#7")
    assert findings == {("CW102", "error", "exact", evidence), ("CW201", "error", "exact", evidence)}
    assert outcomes == [(2, "disconnect", "outcome-unverified", "exact")]


_KEY = "notes#1"
_NOTE = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}}


def _closed_stream(crossed_at: set[int]) -> list[Event]:
    """A 2026-07-28 call on stream 1 that its client closes (the cancel), then eight notes on the stream;
    the notes at the positions in CROSSED_AT carry the capture's proof that they crossed the close."""
    start = SessionStart(0, 100.0, Origin("n.pcapng", frame=1), _KEY, Transport.STREAMABLE_HTTP, Vantage.WIRE, "pcapng")
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t", "_meta": {}}}
    call["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = "2026-07-28"
    events: list[Event] = [start]

    def message(body: dict[str, Any], direction: Direction, crossed: bool = False) -> MessageEvent:
        seq = len(events)
        decoded = decode_text(json.dumps(body))
        assert decoded is not None
        origin = Origin("n.pcapng", frame=seq)
        ts = 100.0 + seq / 1000
        return MessageEvent(seq, ts, origin, _KEY, direction, decoded.messages[0], "1", None, crossed)

    def transport(kind: TransportKind) -> TransportEvent:
        seq = len(events)
        return TransportEvent(seq, 100.0 + seq / 1000, Origin("n.pcapng", frame=seq), _KEY, kind, "1")

    events.append(message(call, Direction.C2S))
    events.append(transport(TransportKind.STREAM_OPENED))
    events.append(transport(TransportKind.CLOSED_BY_CLIENT))
    for n in range(8):
        events.append(message(_NOTE, Direction.S2C, crossed=n in crossed_at))
    return events


def _runs(events: list[Event]) -> list[tuple[str, str | None, str, int]]:
    out = Reconstructor("n.pcapng", "pcapng", ReconstructOptions(max_entries=4)).run(events)
    (timeline,) = [o for o in out if isinstance(o, RequestTimeline)]
    return [(e.kind.value, e.relation and e.relation.value, e.certainty.value, e.repeats) for e in timeline.entries]


def test_a_crossed_note_is_tagged_alone_even_where_the_stream_counts_the_others(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past its entry limit (4) the request's log shares the stream's count of the notes after the close,
    all AFTER; the crossed one (the seventh) is taken out of that count and tagged CROSSING on its own, and
    the one after it goes back to the AFTER run."""
    events = _closed_stream({6})
    runs = _runs(events)
    assert runs == [
        ("request", None, "exact", 1),
        ("stream-opened", None, "exact", 1),
        ("stream-closed-by-client", None, "exact", 1),
        ("related-message", "after", "exact", 1),  # the last kept one by one (the entry limit)
        ("related-message", "after", "exact", 6),  # the others after the close, counted in one run
        ("related-message", "crossing", "exact", 1),
        ("recording-ended", "after", "exact", 1),
    ]
    monkeypatch.setattr(EntryLog, "share", lambda self, counter, entry: False)  # one by one: the same
    assert _runs(events) == runs
