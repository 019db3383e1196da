"""A task cancelled with tasks/cancel is a cancelled call of the request that created it: exact outcomes
per class and revision, its timeline, its place in the reports and the gate.

Fixtures are hand-written by scripts/make_task_fixtures.py (tests/task_outcomes/; no SDK peer commits
these violations or races on demand)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jsonschema
import pytest
from cancelwire import audit
from cancelwire.model import CancelledCall, RequestTimeline
from cancelwire.reports.diagram import draw
from cancelwire.reports.document import build
from cancelwire.run import pipeline
from test_cli import run

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests/task_outcomes"
SCHEMA = json.loads((ROOT / "analyzer" / "report.schema.json").read_text())
sys.path.insert(0, str(ROOT / "scripts"))
from make_task_fixtures import OUTCOMES, write_outcome  # noqa: E402


def _calls(path: Path) -> tuple[list[CancelledCall], list[tuple[str, object]]]:
    with audit([str(path)]) as result:
        return list(result.cancellations), sorted((f.rule, f.request_id) for f in result.findings)


def _fixture(name: str, tmp_path: Path, *, revision: str | None = None) -> Path:
    text = (FIXTURES / f"{name}.jsonl").read_text()
    path = tmp_path / f"{name}.jsonl"
    path.write_text(text if revision is None else text.replace("2025-11-25", revision).replace("2026-07-28", revision))
    return path


def _lines(call: CancelledCall) -> list[int | None]:
    return [o.line for o in call.evidence]


@pytest.mark.parametrize("name", sorted(OUTCOMES))
def test_the_fixtures_are_what_the_script_writes(tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import make_task_fixtures

    monkeypatch.setattr(make_task_fixtures, "ROOT", tmp_path)
    write_outcome(name, OUTCOMES[name])
    assert (tmp_path / "tests/task_outcomes" / f"{name}.jsonl").read_text() == (FIXTURES / f"{name}.jsonl").read_text()


# (fixture, outcome, certainty, explanation, evidence lines, findings). Lines: 8 tasks/cancel, 9 its answer,
# 10/11 tasks/result and its answer (or a status, or the verifying read).
EXPECTED = [
    (
        "clean",
        "clean",
        "exact",
        "no task result after tasks/cancel (answered 'cancelled'); tools/list marked 'lookup' readOnlyHint "
        "(the server's claim)",
        [8],
        [],
    ),
    (
        "late-result-discarded",
        "late-result-discarded",
        "exact",
        "tasks/cancel was answered -32602: the task was already final when the receiver read the cancel, so "
        "its result raced the cancel; the canceller must discard it",
        [8, 9],
        [],
    ),
    (
        "late-result-violation",
        "late-result-violation",
        "exact",
        "tasks/result returned the task's result after tasks/cancel was answered 'cancelled'; a cancelled task "
        "must stay cancelled (2025-11-25)",
        [8, 11],
        [("task-result-after-cancel", 2)],
    ),
    (
        "outcome-unverified",
        "outcome-unverified",
        "exact",
        "no task result after tasks/cancel (answered 'cancelled'), 'export' may have side effects, and no later "
        "read checked what it did",
        [8],
        [],
    ),
    (
        "verified-by-read",
        "verified-by-read",
        "exact",
        "no task result after tasks/cancel (answered 'cancelled'); a later lookup succeeded and could have "
        "checked the effect",
        [8, 11],
        [],
    ),
    (
        "cooperative-2026-07-28",
        "late-result-discarded",
        "exact",
        "the task was reported completed (tasks/get) after tasks/cancel was acknowledged; in 2026-07-28 "
        "tasks/cancel is cooperative and a task may still complete, so the canceller discards the result",
        [8, 11],
        [],
    ),
]


@pytest.mark.parametrize(("name", "outcome", "certainty", "why", "lines", "findings"), EXPECTED, ids=lambda v: str(v))
def test_each_outcome_class_of_a_cancelled_task(
    name: str, outcome: str, certainty: str, why: str, lines: list[int], findings: list[tuple[str, object]]
) -> None:
    calls, found = _calls(FIXTURES / f"{name}.jsonl")
    [call] = calls
    assert (call.request_id, call.method, call.tool, call.mechanism) == (
        2,
        "tools/call",
        "lookup" if name == "clean" else "export",
        "tasks-cancel",
    )
    assert (call.outcome, call.certainty, call.explanation, _lines(call)) == (outcome, certainty, why, lines)
    assert found == findings


def test_the_cancelled_call_timeline_carries_what_was_said_of_the_task() -> None:
    [call], _ = _calls(FIXTURES / "cooperative-2026-07-28.jsonl")
    assert call.timeline is not None
    rows = [(e.kind, e.side, e.method, e.relation, e.certainty, e.status, e.origin.line) for e in call.timeline.entries]
    assert rows == [
        ("request", "client", "tools/call", None, "exact", None, 6),
        ("result", "server", None, None, "exact", None, 7),
        ("cancel", "client", "tasks/cancel", None, "exact", None, 8),
        ("cancel-answer", "server", "tasks/cancel", "after", "exact", None, 9),  # the empty acknowledgement
        ("task-status", "server", "tasks/get", "after", "exact", "completed", 11),  # its result inline
        ("recording-ended", None, None, "after", "exact", None, 11),
    ]


def test_in_2025_11_25_completing_after_the_cancel_is_a_violation(tmp_path: Path) -> None:
    """The cooperative fixture judged as 2025-11-25: the task completed after tasks/cancel. The empty
    acknowledgement did not mark it cancelled (CW115), so its completion is no status change (CW112)."""
    [call], found = _calls(_fixture("cooperative-2026-07-28", tmp_path, revision="2025-11-25"))
    assert (call.outcome, call.certainty, _lines(call)) == ("late-result-violation", "exact", [8, 11])
    assert call.explanation == (
        "the task was reported completed (tasks/get) after tasks/cancel was acknowledged; a cancelled task must "
        "stay cancelled (2025-11-25)"
    )
    assert found == [("tasks-cancel-not-marked-cancelled", 2)]


def test_in_2026_07_28_a_delivered_result_is_no_violation(tmp_path: Path) -> None:
    [call], found = _calls(_fixture("late-result-violation", tmp_path, revision="2026-07-28"))
    assert (call.outcome, call.certainty, _lines(call)) == ("late-result-discarded", "exact", [8, 11])
    assert found == []  # CW114 is not judged in 2026-07-28


def _transcript(tmp_path: Path, steps: list[tuple[float, str, dict[str, object]]], **header: str) -> Path:
    records: list[dict[str, object]] = [
        {"cancelwire_transcript": 1, "transport": "stdio", "vantage": "proxy", **header}
    ]
    for ts, direction, message in steps:
        records.append({"ts": ts, "dir": direction, "line": json.dumps({"jsonrpc": "2.0", **message})})
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _task(status: str) -> dict[str, object]:
    return {"taskId": "t-1", "status": status}


START: list[tuple[float, str, dict[str, object]]] = [
    (1.0, "c2s", {"id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}}),
    (1.1, "s2c", {"id": 0, "result": {"protocolVersion": "2025-11-25"}}),
    (1.2, "c2s", {"id": 2, "method": "tools/call", "params": {"name": "export", "task": {}}}),
    (1.3, "s2c", {"id": 2, "result": {"task": _task("working")}}),
    (2.0, "c2s", {"id": 3, "method": "tasks/cancel", "params": {"taskId": "t-1"}}),
]


def test_a_completion_crossing_the_cancel_is_the_race(tmp_path: Path) -> None:
    """Completed 20 ms after tasks/cancel was sent, before any answer (proxy window 50 ms): it may have left
    before the cancel was read. Inferred: only the timing says so."""
    path = _transcript(
        tmp_path, [*START, (2.02, "s2c", {"method": "notifications/tasks/status", "params": _task("completed")})]
    )
    [call], found = _calls(path)
    assert (call.outcome, call.certainty, _lines(call)) == ("late-result-discarded", "inferred", [6, 7])
    assert call.explanation == (
        "the task was reported completed (notifications/tasks/status) may have left before the receiver read "
        "tasks/cancel (a race); the canceller must discard it"
    )
    assert found == [("request-never-answered", 3)]  # the tasks/cancel itself


def test_a_cancelled_task_is_judged_when_its_hold_ends(tmp_path: Path) -> None:
    """Silent for longer than --hold: judged then (inferred), and the task's later completion, unjudged,
    is still CW112 (its status changed after it was cancelled)."""
    steps = [
        *START,
        (2.1, "s2c", {"id": 3, "result": _task("cancelled")}),
        (9.0, "c2s", {"method": "notifications/initialized"}),
        (9.1, "s2c", {"method": "notifications/tasks/status", "params": _task("completed")}),
    ]
    with audit([str(_transcript(tmp_path, steps))], hold=5.0) as result:
        [call] = result.cancellations
        found = sorted((f.rule, f.request_id) for f in result.findings)
    assert (call.outcome, call.certainty, _lines(call)) == ("outcome-unverified", "inferred", [6])
    assert call.explanation.endswith(
        "'export' has no annotations, and no later read checked what it did (judged when its hold ended, before "
        "the recording did)"
    )
    assert found == [("task-status-after-cancel", 2)]


def test_each_task_request_is_judged_once(tmp_path: Path) -> None:
    """The creating request's timeline is held while its task runs and handed on once: when the task ends
    uncancelled (id 2), or with its cancel (id 4), never twice."""
    steps = [
        *START[:4],
        (1.4, "c2s", {"id": 4, "method": "tools/call", "params": {"name": "export", "task": {}}}),
        (1.5, "s2c", {"id": 4, "result": {"task": {"taskId": "t-2", "status": "working"}}}),
        (1.6, "s2c", {"method": "notifications/tasks/status", "params": _task("completed")}),
        (1.7, "c2s", {"id": 5, "method": "tasks/cancel", "params": {"taskId": "t-2"}}),
        (1.8, "s2c", {"id": 5, "result": {"taskId": "t-2", "status": "cancelled"}}),
    ]
    path = _transcript(tmp_path, steps)
    timelines: list[RequestTimeline] = []
    pipeline.audit([str(path)], on_exchange=lambda timeline, _: timelines.append(timeline))
    judged = [(t.request_id, t.cancel.mechanism if t.cancel else None, [e.kind for e in t.entries]) for t in timelines]
    assert judged == [
        (0, None, ["request", "result"]),
        (2, None, ["request", "result", "task-status"]),  # judged when the task completed
        (5, None, ["request", "result"]),
        (4, "tasks-cancel", ["request", "result", "cancel", "cancel-answer", "recording-ended"]),
    ]


def test_closing_streams_is_no_task_cancel_and_a_task_cancel_leaves_no_stream_open(tmp_path: Path) -> None:
    """Over HTTP, tasks/cancel concerns no stream: CW202 (stream left open after a cancel) does not judge it,
    however long the recording goes on."""
    steps = [*START, (2.1, "s2c", {"id": 3, "result": _task("cancelled")}), (9.0, "c2s", {"method": "notifications/x"})]
    [call], found = _calls(_transcript(tmp_path, steps, transport="streamable-http"))
    assert (call.mechanism, call.outcome) == ("tasks-cancel", "outcome-unverified")
    assert found == []


def test_the_json_report_and_diagram_show_the_cancelled_task(tmp_path: Path) -> None:
    with audit([str(FIXTURES / "late-result-violation.jsonl")]) as result:
        report = build(result)
    jsonschema.validate(report, SCHEMA)
    [section] = report["cancellations"]
    assert {k: section[k] for k in ("request_id", "method", "tool", "mechanism", "outcome", "certainty")} == {
        "request_id": 2,
        "method": "tools/call",
        "tool": "export",
        "mechanism": "tasks-cancel",
        "outcome": "late-result-violation",
        "certainty": "exact",
    }
    shown = [
        (e["kind"], e["method"], e["relation"], e.get("status"), e["evidence"]["line"]) for e in section["timeline"]
    ]
    assert shown == [
        ("request", "tools/call", None, None, 6),
        ("result", None, None, None, 7),
        ("cancel", "tasks/cancel", "cancel", None, 8),
        ("cancel-answer", "tasks/cancel", "after", "cancelled", 9),
        ("task-result", "tasks/result", "after", "result", 11),
        ("recording-ended", None, "after", None, 11),
    ]
    assert [f["rule_id"] for f in section["timeline"][4]["findings"]] == ["CW114"]
    svg = draw(section)
    assert svg.count('data-kind="cancel"') == 2  # tasks/cancel and its answer, drawn as the cancel
    assert "tasks/cancel: cancelled" in svg
    assert "tasks/result: result" in svg


def test_the_text_report_lists_the_cancelled_task() -> None:
    proc = run("audit", "tests/task_outcomes/outcome-unverified.jsonl", "--format", "text")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    start = lines.index("Cancelled calls: 1 outcome-unverified")
    assert lines[start + 1 : start + 3] == [
        "  tests/task_outcomes/outcome-unverified.jsonl:8  id 2 tools/call export  by tasks-cancel  -> "
        "outcome-unverified [exact]",
        "      no task result after tasks/cancel (answered 'cancelled'), 'export' may have side effects, and no "
        "later read checked what it did",
    ]


@pytest.mark.parametrize(
    ("name", "args", "status"),
    [
        ("outcome-unverified", (), 0),  # gated a warning; --fail-on error by default
        ("outcome-unverified", ("--fail-on", "warning"), 1),
        ("outcome-unverified", ("--fail-on", "warning", "--gate", "outcome-unverified=off"), 0),
        ("late-result-violation", (), 1),  # through CW114 (error)
        ("late-result-violation", ("--ignore", "CW114"), 0),
        ("late-result-violation", ("--ignore", "CW114", "--gate", "late-result-violation=error"), 1),
        ("late-result-discarded", ("--fail-on", "info"), 0),
        ("late-result-discarded", ("--fail-on", "info", "--gate", "late-result-discarded=info"), 1),
        ("clean", ("--fail-on", "info"), 0),
    ],
)
def test_the_gate_judges_a_cancelled_task(name: str, args: tuple[str, ...], status: int) -> None:
    proc = run("audit", f"tests/task_outcomes/{name}.jsonl", *args)
    assert proc.returncode == status, proc.stdout + proc.stderr


def test_a_result_with_nothing_but_meta_delivers_nothing() -> None:
    """The Python SDK answers tasks/result for a cancelled task with `_meta` only (sample line 20): no late
    result; the work it went on with after the cancel (its stderr, lines 22-36) leaves the call unverified."""
    [call], found = _calls(ROOT / "sample_captures/tasks/sdk-py-task-cancel-working.jsonl")
    assert call.timeline is not None
    said = [
        (e.kind, e.method, e.status, e.origin.line)
        for e in call.timeline.entries
        if call.timeline.cancel and e.seq > call.timeline.cancel.entry.seq
    ]
    assert said[:5] == [
        ("cancel-answer", "tasks/cancel", "cancelled", 16),
        ("task-status", "tasks/get", "cancelled", 18),
        ("task-status", "tasks/result", "empty result", 20),
        ("progress", "notifications/progress", None, 21),  # the task's token lives until it ends
        ("task-status", "notifications/tasks/status", "cancelled", 23),
    ]
    assert (call.outcome, call.certainty, _lines(call)) == ("outcome-unverified", "exact", [15])
    assert found == [("progress-after-cancel", 2)]  # its progress for records 3-6
