"""Task-augmented requests: which revisions the task rules judge, and the task table's bounds."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from cancelwire import audit
from cancelwire.rebuild.task_memory import MAX_TASKS

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from make_task_fixtures import FIXTURES, START, write  # noqa: E402


def _run(tmp_path: Path, name: str, *, revision: str | None = None) -> list[tuple[str, object]]:
    source = ROOT / "tests/rules" / f"{name}.jsonl"
    text = source.read_text()
    if revision is not None:
        text = text.replace("2025-11-25", revision)
    path = tmp_path / "t.jsonl"
    path.write_text(text)
    with audit([str(path)]) as result:
        return sorted((f.rule, f.request_id) for f in result.findings)


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_the_fixtures_are_what_the_script_writes(tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import make_task_fixtures

    monkeypatch.setattr(make_task_fixtures, "ROOT", tmp_path)
    write(name, FIXTURES[name])
    assert (tmp_path / "tests/rules" / f"{name}.jsonl").read_text() == (
        ROOT / "tests/rules" / f"{name}.jsonl"
    ).read_text()


def test_all_task_rules_judge_2025_11_25(tmp_path: Path) -> None:
    assert _run(tmp_path, "cancel-notification-for-task/triggers") == [("cancel-notification-for-task", 2)]
    assert _run(tmp_path, "task-status-after-cancel/triggers") == [("task-status-after-cancel", 2)]
    assert _run(tmp_path, "tasks-cancel-final-not-rejected/triggers") == [("tasks-cancel-final-not-rejected", 2)]


def test_in_2026_07_28_tasks_cancel_is_cooperative(tmp_path: Path) -> None:
    """The Tasks extension: a task may complete after tasks/cancel, which gets an acknowledgement; only
    the notification cancel of a task is still wrong."""
    assert _run(tmp_path, "cancel-notification-for-task/triggers", revision="2026-07-28") == [
        ("cancel-notification-for-task", 2)
    ]
    assert _run(tmp_path, "task-status-after-cancel/triggers", revision="2026-07-28") == []
    assert _run(tmp_path, "tasks-cancel-final-not-rejected/triggers", revision="2026-07-28") == []


def test_the_task_table_is_bounded_and_hostile_ids_are_ignored(tmp_path: Path) -> None:
    records = [{"cancelwire_transcript": 1, "transport": "stdio", "vantage": "proxy"}]
    steps = list(START[:2])
    for n in range(MAX_TASKS + 50):  # 11 hostile ids (every 1000th): 10,039 tasks, the oldest 39 forgotten
        task_id: object = f"t-{n}" if n % 1000 else {"not": "a string"}
        steps.append(("c2s", {"id": 10 + n, "method": "tools/call", "params": {"name": "x", "task": {}}}))
        steps.append(("s2c", {"id": 10 + n, "result": {"task": {"taskId": task_id, "status": "working"}}}))
    steps.append(("c2s", {"method": "notifications/cancelled", "params": {"requestId": 11}}))  # t-1: forgotten
    steps.append(("c2s", {"method": "notifications/cancelled", "params": {"requestId": 10 + MAX_TASKS + 3}}))
    for n, (direction, message) in enumerate(steps):
        records.append({"ts": 1 + n / 1000, "dir": direction, "line": json.dumps({"jsonrpc": "2.0", **message})})
    path = tmp_path / "many.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    with audit([str(path)]) as result:
        found = sorted((f.rule, f.request_id) for f in result.findings)
    assert found == [("cancel-after-completion", 11), ("cancel-notification-for-task", 10 + MAX_TASKS + 3)]


def test_a_tasks_poll_carrying_params_task_creates_no_task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The TypeScript SDK 1.32 sends `tasks/get` with `params.task` (sample_captures/tasks/sdk-ts-*): the poll
    is about task t-1, not a new task, so a completed status in its reply after the cancel is still CW112."""
    import make_task_fixtures

    monkeypatch.setattr(make_task_fixtures, "ROOT", tmp_path)
    completed = {"taskId": "t-1", "status": "completed", "createdAt": "2026-12-03T10:00:00Z", "ttl": 60000}
    write(
        "poll",
        [
            *FIXTURES["task-status-after-cancel/clean"][:2],
            ("c2s", {"id": 4, "method": "tasks/get", "params": {"taskId": "t-1", "task": {"ttl": 60000}}}),
            ("s2c", {"id": 4, "result": completed}),
        ],
    )
    with audit([str(tmp_path / "tests/rules/poll.jsonl")]) as result:
        assert sorted((f.rule, f.request_id) for f in result.findings) == [("task-status-after-cancel", 2)]
