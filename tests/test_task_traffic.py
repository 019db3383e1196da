"""Task traffic: the related-task tag (CW117-CW119) and progress while and after a task runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from cancelwire import audit
from cancelwire.model import Anomaly, Direction, MessageEvent, Origin, SessionStart, Transport, Vantage
from cancelwire.model.jsonrpc import classify_text
from cancelwire.rebuild.reconstruct import ReconstructOptions, Reconstructor
from cancelwire.rebuild.task_memory import MAX_TASKS

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import make_task_fixtures  # noqa: E402
from make_task_traffic_fixtures import (  # noqa: E402
    FIXTURES,
    PROGRESS_FIXTURES,
    START,
    TOKEN_START,
    progress,
    reply,
    request,
    status,
    task,
    write_progress,
)

HEADER = {"cancelwire_transcript": 1, "transport": "stdio", "vantage": "proxy"}
Found = list[tuple[str, object, str, list[int]]]


def _audit(path: Path) -> Found:
    with audit([str(path)]) as result:
        return sorted(
            (f.rule, f.request_id, f.certainty.value, [o.line or 0 for o in f.evidence]) for f in result.findings
        )


def _fixture(tmp_path: Path, name: str, revision: str = "2025-11-25") -> Found:
    text = (ROOT / "tests/rules" / f"{name}.jsonl").read_text().replace("2025-11-25", revision)
    path = tmp_path / "t.jsonl"
    path.write_text(text)
    return _audit(path)


def _transcript(tmp_path: Path, steps: list[Any], revision: str = "2025-11-25", start: list[Any] = START) -> Found:
    lines = [json.dumps(HEADER)]
    for n, (direction, message) in enumerate([*start, *steps]):
        line = json.dumps({"jsonrpc": "2.0", **message}).replace("2025-11-25", revision)
        lines.append(json.dumps({"ts": 1.0 + n / 10, "dir": direction, "line": line}))
    path = tmp_path / "steps.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return _audit(path)


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_the_fixtures_are_what_the_script_writes(tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(make_task_fixtures, "ROOT", tmp_path)
    make_task_fixtures.write(name, FIXTURES[name])
    written = (tmp_path / "tests/rules" / f"{name}.jsonl").read_text()
    assert written == (ROOT / "tests/rules" / f"{name}.jsonl").read_text()


@pytest.mark.parametrize("name", sorted(PROGRESS_FIXTURES))
def test_the_progress_fixtures_are_what_the_script_writes(
    tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(make_task_fixtures, "ROOT", tmp_path)
    write_progress(name, PROGRESS_FIXTURES[name])
    written = (tmp_path / "tests/rules" / f"{name}.jsonl").read_text()
    assert written == (ROOT / "tests/rules" / f"{name}.jsonl").read_text()


# -- progress while and after a task runs ------------------------------------------------------------


def _progress(tmp_path: Path, steps: list[Any], revision: str = "2025-11-25") -> Found:
    return _transcript(tmp_path, steps, revision, start=TOKEN_START)


def test_a_long_running_task_reports_progress_legally(tmp_path: Path) -> None:
    """Progress on the task's token after its CreateTaskResult, between polls, until it completes."""
    steps = [
        progress(1),
        request("c2s", 3, "tasks/get", {"taskId": "t-1"}),
        reply("s2c", 3, task("working")),
        progress(2),
        progress(3),
        status("completed"),
        request("c2s", 4, "tasks/result", {"taskId": "t-1"}),
        reply("s2c", 4, {"content": []}, tag="t-1"),
    ]
    assert _progress(tmp_path, steps) == []


def test_progress_after_the_task_was_cancelled_is_progress_after_cancel(tmp_path: Path) -> None:
    assert _fixture(tmp_path, "progress-after-cancel/triggers-task") == [
        ("progress-after-cancel", 2, "exact", [7, 9, 10])
    ]
    assert _fixture(tmp_path, "progress-after-cancel/clean-task") == []


@pytest.mark.parametrize(
    ("ending", "line"),
    [
        ([status("completed")], 8),
        ([status("failed")], 8),
        ([request("c2s", 3, "tasks/get", {"taskId": "t-1"}), reply("s2c", 3, task("completed"))], 9),
        ([request("c2s", 3, "tasks/result", {"taskId": "t-1"}), reply("s2c", 3, {"content": []}, tag="t-1")], 9),
    ],
    ids=["status-completed", "status-failed", "tasks-get-completed", "tasks-result-answered"],
)
def test_progress_after_the_task_ended_is_progress_after_completion(
    tmp_path: Path, ending: list[Any], line: int
) -> None:
    found = _progress(tmp_path, [progress(1), *ending, progress(2)])
    assert found == [("progress-after-completion", 2, "exact", [line])]


def test_a_task_s_progress_must_increase(tmp_path: Path) -> None:
    found = _progress(tmp_path, [progress(2), progress(1)])
    assert found == [("progress-not-increasing", 2, "exact", [7])]


@pytest.mark.parametrize(
    ("name", "lines"),
    [
        ("progress-after-cancel/triggers-task", [6, 9, 10]),
        ("progress-after-cancel/clean-task", [6, 7]),
        ("progress-after-completion/triggers-task", [6, 8]),
    ],
)
def test_in_2026_07_28_a_task_has_no_progress(tmp_path: Path, name: str, lines: list[int]) -> None:
    """The Tasks extension: progress is not supported on tasks, so the token ends with the CreateTaskResult."""
    assert _fixture(tmp_path, name, revision="2026-07-28") == [("progress-after-completion", 2, "exact", lines)]


def test_a_task_s_token_is_forgotten_with_its_task(tmp_path: Path) -> None:
    """Past MAX_TASKS the oldest task is forgotten, and its token with it: its late progress is not judged."""
    steps: list[Any] = [status("completed")]
    for n in range(MAX_TASKS):
        params = {"name": "x", "task": {}, "_meta": {"progressToken": f"q-{n}"}}
        steps.append(("c2s", {"id": 10 + n, "method": "tools/call", "params": params}))
        steps.append(("s2c", {"id": 10 + n, "result": {"task": {"taskId": f"u-{n}", "status": "completed"}}}))
    steps += [progress(2), progress(1, token="q-0")]
    assert _progress(tmp_path, steps) == [("progress-after-completion", 10, "exact", [7 + 2 * MAX_TASKS + 1])]


# -- the related-task tag ------------------------------------------------------------------------


def test_every_tag_fixture_with_every_rule_in_2025_11_25(tmp_path: Path) -> None:
    missing = "related-task-tag-missing"
    mismatch = "related-task-tag-mismatch"
    assert _fixture(tmp_path, f"{missing}/triggers") == [(missing, 1, "exact", [9]), (missing, 3, "exact", [11])]
    assert _fixture(tmp_path, "related-task-tag-redundant/triggers") == [
        ("related-task-tag-redundant", 3, "exact", [6, 7, 8])
    ]
    assert _fixture(tmp_path, f"{mismatch}/triggers") == [(mismatch, 3, "exact", [6]), (mismatch, 4, "exact", [10])]
    for slug in (missing, "related-task-tag-redundant", mismatch):
        assert _fixture(tmp_path, f"{slug}/clean") == []


@pytest.mark.parametrize("name", sorted(n for n in FIXTURES if n.endswith("/triggers")))
def test_the_tag_is_not_judged_in_2026_07_28(tmp_path: Path, name: str) -> None:
    """The Tasks extension has no tasks/result and never mentions the tag."""
    assert _fixture(tmp_path, name, revision="2026-07-28") == []


def test_a_status_notification_tagged_for_another_task(tmp_path: Path) -> None:
    found = _transcript(tmp_path, [status("completed", tag="t-9")])
    assert found == [("related-task-tag-mismatch", None, "exact", [6])]


def test_a_malformed_tag_on_the_tasks_result_result_is_missing(tmp_path: Path) -> None:
    bad = ("s2c", {"id": 3, "result": {"content": [], "_meta": {"io.modelcontextprotocol/related-task": "t-1"}}})
    found = _transcript(tmp_path, [request("c2s", 3, "tasks/result", {"taskId": "t-1"}), bad])
    assert found == [("related-task-tag-missing", 3, "exact", [7])]


def test_an_error_reply_to_tasks_result_needs_no_tag(tmp_path: Path) -> None:
    error = ("s2c", {"id": 3, "error": {"code": -32603, "message": "the export failed"}})
    assert _transcript(tmp_path, [request("c2s", 3, "tasks/result", {"taskId": "t-1"}), error]) == []


def test_a_reply_to_a_request_tagged_for_one_task_tagged_for_another(tmp_path: Path) -> None:
    steps = [
        request("s2c", 1, "sampling/createMessage", {"messages": [], "maxTokens": 5}, tag="t-1"),
        reply("c2s", 1, {"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "m"}, tag="t-2"),
    ]
    assert _transcript(tmp_path, steps) == [("related-task-tag-mismatch", 1, "exact", [7])]


def test_a_session_without_tasks_is_not_judged(tmp_path: Path) -> None:
    """A tag on a request in a session that never saw a task ties it to nothing we know."""
    steps = [
        ("c2s", {"id": 5, "method": "tools/call", "params": {"name": "x", "_meta": {"x": 1}}}),
        ("s2c", {"id": 5, "result": {"content": []}}),
    ]
    lines = [json.dumps(HEADER)]
    for n, (direction, message) in enumerate([*START[:2], *steps]):
        lines.append(json.dumps({"ts": 1.0 + n, "dir": direction, "line": json.dumps({"jsonrpc": "2.0", **message})}))
    path = tmp_path / "plain.jsonl"
    path.write_text("\n".join(lines) + "\n")
    assert _audit(path) == []


def _http_events(messages: list[tuple[str, str, dict[str, Any]]]) -> list[Any]:
    """Events of one Streamable HTTP session: (direction, HTTP exchange, JSON-RPC message)."""
    start = SessionStart(
        seq=0,
        ts=0.0,
        origin=Origin("h.pcapng", frame=1),
        session_key="s",
        transport=Transport.STREAMABLE_HTTP,
        vantage=Vantage.WIRE,
        input_format="pcap",
    )
    events: list[Any] = [start]
    for n, (direction, stream, message) in enumerate(messages, start=1):
        text = json.dumps({"jsonrpc": "2.0", **message})
        (decoded,) = classify_text(json.loads(text), text).messages
        events.append(
            MessageEvent(
                seq=n,
                ts=float(n),
                origin=Origin("h.pcapng", frame=n + 1),
                session_key="s",
                direction=Direction(direction),
                message=decoded,
                stream=stream,
            )
        )
    return events


def test_on_http_a_request_on_the_tasks_result_stream_belongs_to_its_task() -> None:
    """The server's elicitation on the SSE stream of tasks/result (exchange 3) is the task's: untagged,
    it and the client's untagged answer (its own POST) are findings; one on another stream is not judged."""
    messages = [
        ("c2s", "e1", START[0][1]),
        ("s2c", "e1", START[1][1]),
        ("c2s", "e2", START[2][1]),
        ("s2c", "e2", START[3][1]),
        ("c2s", "e3", {"id": 3, "method": "tasks/result", "params": {"taskId": "t-1"}}),
        ("s2c", "e3", {"id": 1, "method": "elicitation/create", "params": {"message": "Which table?"}}),
        ("s2c", "e0", {"id": 2, "method": "roots/list", "params": {}}),
        ("c2s", "e4", {"id": 1, "result": {"action": "decline"}}),
        ("c2s", "e5", {"id": 2, "result": {"roots": []}}),
    ]
    anomalies = [
        (o.name, o.request_id, o.origin.frame)
        for o in Reconstructor("h.pcapng", "pcap", ReconstructOptions()).run(_http_events(messages))
        if isinstance(o, Anomaly)
    ]
    assert anomalies == [("task.related-task-missing", 1, 7), ("task.related-task-missing", 1, 9)]


def test_what_waits_for_a_reply_is_bounded(tmp_path: Path) -> None:
    """MAX_TASKS tagged requests unanswered, then one more: the oldest is forgotten, not judged."""
    steps: list[Any] = []
    for n in range(MAX_TASKS + 1):
        steps.append(request("s2c", 100 + n, "elicitation/create", {"message": "?"}, tag="t-1"))
    steps.append(reply("c2s", 100, {"action": "decline"}))  # forgotten: not judged
    steps.append(reply("c2s", 101, {"action": "decline"}))  # still remembered: judged
    found = _transcript(tmp_path, steps)
    assert [f[:2] for f in found if f[0].startswith("related-task")] == [("related-task-tag-missing", 101)]
