"""A request's timeline keeps at most `max_entries` entries; past it, like entries are counted in runs.

Memory then follows open requests, not how long one of them streams. What a user sees must not change:
the same findings with the same evidence counts, the same outcome, the same exchange-table counts.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cancelwire.model import CancelledCall, EntryKind, Relation, RequestTimeline
from cancelwire.rebuild.reconstruct import ReconstructOptions
from cancelwire.run.pipeline import AuditOptions, audit
from cancelwire.tables.exchanges import row
from fuzzing import fuzz_settings, simple_steps, timed
from hypothesis import given
from transcripts import write_transcript

PROGRESS_BEFORE = 300
PROGRESS_AFTER = 120


def _progress(ts: float, value: int) -> tuple[float, str, dict[str, object]]:
    params = {"progressToken": "t", "progress": value}
    return (ts, "s2c", {"jsonrpc": "2.0", "method": "notifications/progress", "params": params})


def _long_call(tmp_path: Path) -> Path:
    """A tools/call that streams progress, is cancelled, streams on (a violation), then answers."""
    call = {"name": "write", "_meta": {"progressToken": "t"}}
    lines = [
        (1.0, "c2s", {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}}),
        (1.1, "s2c", {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-11-25"}}),
        (2.0, "c2s", {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}),
        *(_progress(2.1 + i * 0.001, i + 1) for i in range(PROGRESS_BEFORE)),
        (3.0, "c2s", {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}),
        # the first few cross the cancel (within the proxy's 50 ms race window), the rest are late
        *(_progress(3.01 + i * 0.01, PROGRESS_BEFORE + i + 1) for i in range(PROGRESS_AFTER)),
        (9.0, "s2c", {"jsonrpc": "2.0", "id": 1, "result": {"content": []}}),
    ]
    return write_transcript(tmp_path / "long.jsonl", lines)


def _audit(path: Path, max_entries: int) -> tuple[list[tuple[object, ...]], list[CancelledCall], RequestTimeline]:
    calls: list[RequestTimeline] = []

    def keep(timeline: RequestTimeline, cancelled: CancelledCall | None) -> None:
        if timeline.method == "tools/call":
            calls.append(timeline)

    options = AuditOptions(reconstruct=ReconstructOptions(max_entries=max_entries))
    result = audit([str(path)], options, on_exchange=keep)
    # a run cites its first message only, so compare the first two places and the total count cited
    findings = [
        (f.rule, f.certainty, f.ts, f.message, f.evidence[:2], len(f.evidence) + f.more_evidence)
        for f in result.findings
    ]
    (timeline,) = calls
    return findings, list(result.cancellations), timeline


def test_runs_change_no_finding_outcome_or_count(tmp_path: Path) -> None:
    path = _long_call(tmp_path)
    findings, cancellations, timeline = _audit(path, max_entries=40)
    all_findings, all_cancellations, full = _audit(path, max_entries=10_000)

    assert len(full.entries) == 1 + PROGRESS_BEFORE + 1 + PROGRESS_AFTER + 1
    assert findings == all_findings
    rules = [f[0] for f in findings]
    assert rules == ["response-after-cancel", "progress-after-cancel"]
    late_progress = sum(1 for e in full.entries if e.kind is EntryKind.PROGRESS and e.relation is Relation.AFTER)
    assert findings[1][5] == 1 + late_progress  # the cancel, then each late progress notification
    assert [c.outcome for c in cancellations] == [c.outcome for c in all_cancellations]
    assert row(timeline, cancellations[0]) | {"entries": 0} == row(full, all_cancellations[0]) | {"entries": 0}
    assert row(timeline, cancellations[0])["progress"] == PROGRESS_BEFORE + PROGRESS_AFTER
    assert row(timeline, cancellations[0])["entries"] == len(full.entries)


def test_timeline_is_bounded_and_runs_keep_their_side_of_the_cancel(tmp_path: Path) -> None:
    path = _long_call(tmp_path)
    _, cancellations, timeline = _audit(path, max_entries=40)
    _, _, full = _audit(path, max_entries=10_000)

    assert len(timeline.entries) == 40 + 5  # the first 40, three runs, the cancel and the reply
    assert sum(e.repeats for e in timeline.entries) == len(full.entries)
    crossing = sum(1 for e in full.entries if e.relation is Relation.CROSSING and e.kind is EntryKind.PROGRESS)
    assert 0 < crossing < PROGRESS_AFTER
    runs = [(e.kind, e.relation, e.repeats) for e in timeline.entries[40:]]
    assert runs == [
        (EntryKind.PROGRESS, None, PROGRESS_BEFORE - 39),
        (EntryKind.CANCEL, None, 1),
        (EntryKind.PROGRESS, Relation.CROSSING, crossing),
        (EntryKind.PROGRESS, Relation.AFTER, PROGRESS_AFTER - crossing),
        (EntryKind.RESULT, Relation.AFTER, 1),
    ]
    seqs = [e.seq for e in timeline.entries]
    assert seqs == sorted(seqs)  # a run sits where its first message was
    # the report's timeline around the cancel shows the runs with their counts
    shown = cancellations[0].timeline
    assert shown is not None
    assert [e.repeats for e in shown.entries[-4:]] == [1, crossing, PROGRESS_AFTER - crossing, 1]


@fuzz_settings(60)
@given(simple_steps)
def test_any_sequence_reports_the_same_with_a_tiny_entry_limit(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, dict[str, object], float]]
) -> None:
    path = write_transcript(tmp_path_factory.mktemp("seq") / "x.jsonl", timed(steps))

    def summary(max_entries: int) -> tuple[object, ...]:
        timelines: list[RequestTimeline] = []
        options = AuditOptions(reconstruct=ReconstructOptions(max_entries=max_entries))
        result = audit([str(path)], options, on_exchange=lambda t, c: timelines.append(t))
        for t in timelines:
            assert [e.seq for e in t.entries] == sorted(e.seq for e in t.entries)
        return (
            sorted((f.rule, str(f.request_id), f.ts, len(f.evidence) + f.more_evidence) for f in result.findings),
            [(c.request_id, c.outcome) for c in result.cancellations],
            [sum(e.repeats for e in t.entries) for t in timelines],
        )

    assert summary(2) == summary(10_000)
