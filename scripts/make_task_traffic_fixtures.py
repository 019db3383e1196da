"""Write the hand-written related-task tag fixtures under tests/rules/ (no SDK peer commits these violations).

    .venv/bin/python scripts/make_task_traffic_fixtures.py

Each is a cancelwire transcript seen from a proxy, revision 2025-11-25, starting as the task fixtures do
(scripts/make_task_fixtures.py START: `tools/call` id 2 answered with a CreateTaskResult for task "t-1",
lines 2-5); what follows differs per fixture. The progress fixtures (PROGRESS_FIXTURES) give that call the
progress token "p-2" (TOKEN_START), which lives until the task ends.
"""

from __future__ import annotations

from typing import Any

import make_task_fixtures
from make_task_fixtures import START, Step, _write, write

TAG = "io.modelcontextprotocol/related-task"


def tagged(value: dict[str, Any], task_id: str | None) -> dict[str, Any]:
    """`value` with a related-task tag for `task_id` in its `_meta` (None: as it is)."""
    return value if task_id is None else {**value, "_meta": {TAG: {"taskId": task_id}}}


def task(status: str, tag: str | None = None) -> dict[str, Any]:
    body = {"taskId": "t-1", "status": status, "createdAt": "2026-12-03T10:00:00Z", "ttl": 60000}
    return tagged(body, tag)


def status(value: str, tag: str | None = None) -> Step:
    return ("s2c", {"method": "notifications/tasks/status", "params": task(value, tag)})


def request(direction: str, request_id: int, method: str, params: dict[str, Any], tag: str | None = None) -> Step:
    return (direction, {"id": request_id, "method": method, "params": tagged(params, tag)})


def reply(direction: str, request_id: int, result: dict[str, Any], tag: str | None = None) -> Step:
    return (direction, {"id": request_id, "result": tagged(result, tag)})


TOOL_RESULT = {"content": [{"type": "text", "text": "exported 12 rows"}], "isError": False}
ELICIT = {
    "mode": "form",
    "message": "Which table?",
    "requestedSchema": {"type": "object", "properties": {"table": {"type": "string"}}},
}
ANSWER = {"action": "accept", "content": {"table": "orders"}}


def _input_round(answer_tag: str | None, result_tag: str | None) -> list[Step]:
    """The task needs input: the client fetches its result, the server asks (tagged), the client answers."""
    return [
        status("input_required"),
        request("c2s", 3, "tasks/result", {"taskId": "t-1"}),
        request("s2c", 1, "elicitation/create", ELICIT, tag="t-1"),
        reply("c2s", 1, ANSWER, tag=answer_tag),
        status("completed"),
        reply("s2c", 3, TOOL_RESULT, tag=result_tag),
    ]


def _poll_and_fetch(
    get_tag: str | None, get_result_tag: str | None, status_tag: str | None, result_tag: str
) -> list[Step]:
    """The client polls, the task completes, the client fetches its result."""
    return [
        request("c2s", 3, "tasks/get", {"taskId": "t-1"}, tag=get_tag),
        reply("s2c", 3, task("working", get_result_tag)),
        status("completed", status_tag),
        request("c2s", 4, "tasks/result", {"taskId": "t-1"}),
        reply("s2c", 4, TOOL_RESULT, tag=result_tag),
    ]


def progress(value: int, token: str = "p-2") -> Step:
    return ("s2c", {"method": "notifications/progress", "params": {"progressToken": token, "progress": value}})


#: START with a progress token on the task-augmented tools/call id 2 (its token lives until the task ends).
TOKEN_START: list[Step] = [
    *START[:2],
    (START[2][0], {**START[2][1], "params": {**START[2][1]["params"], "_meta": {"progressToken": "p-2"}}}),
    START[3],
]
CANCELLED: list[Step] = [
    request("c2s", 3, "tasks/cancel", {"taskId": "t-1"}),
    reply("s2c", 3, task("cancelled")),
]
#: Progress files: the steps after TOKEN_START (lines 2-5).
PROGRESS_FIXTURES: dict[str, list[Step]] = {
    "progress-after-cancel/triggers-task": [progress(1), *CANCELLED, progress(2), progress(3)],
    "progress-after-cancel/clean-task": [progress(1), progress(2), *CANCELLED],
    "progress-after-completion/triggers-task": [progress(1), status("completed"), progress(2)],
}

FIXTURES: dict[str, list[Step]] = {
    "related-task-tag-missing/triggers": _input_round(answer_tag=None, result_tag=None),
    "related-task-tag-missing/clean": _input_round(answer_tag="t-1", result_tag="t-1"),
    "related-task-tag-redundant/triggers": _poll_and_fetch("t-1", "t-1", "t-1", result_tag="t-1"),
    "related-task-tag-redundant/clean": _poll_and_fetch(None, None, None, result_tag="t-1"),
    "related-task-tag-mismatch/triggers": _poll_and_fetch("t-2", None, None, result_tag="t-2"),
    "related-task-tag-mismatch/clean": _poll_and_fetch(None, None, None, result_tag="t-1"),
}


def write_progress(name: str, steps: list[Step]) -> None:
    """A progress fixture: TOKEN_START, then STEPS."""
    _write(make_task_fixtures.ROOT / "tests/rules" / f"{name}.jsonl", [*TOKEN_START, *steps])


__all__ = [
    "FIXTURES",
    "PROGRESS_FIXTURES",
    "START",
    "TOKEN_START",
    "reply",
    "request",
    "status",
    "task",
    "write",
    "write_progress",
]

if __name__ == "__main__":
    for fixture, fixture_steps in FIXTURES.items():
        write(fixture, fixture_steps)
    for fixture, fixture_steps in PROGRESS_FIXTURES.items():
        write_progress(fixture, fixture_steps)
