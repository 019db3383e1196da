"""Write the hand-written task fixtures under tests/rules/ and tests/task_outcomes/ (no SDK peer commits
these violations, and none records these races on demand: each peer here is written by hand).

    .venv/bin/python scripts/make_task_fixtures.py

Each is a cancelwire transcript seen from a proxy, revision 2025-11-25 unless its name says 2026-07-28:
`tools/call` id 2 is task-augmented (`params.task`) and answered with a CreateTaskResult for task "t-1";
what follows differs per fixture. The rule fixtures (tests/rules/) start with initialize only; the outcome
fixtures (tests/task_outcomes/, one per outcome class of the cancelled task) also list the tools first, so
that `export` may have side effects and `lookup` is read-only.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
REVISION = "2025-11-25"

Step = tuple[str, dict[str, Any]]


def _task(status: str) -> dict[str, Any]:
    return {"taskId": "t-1", "status": status, "createdAt": "2026-12-03T10:00:00Z", "ttl": 60000}


START: list[Step] = [
    ("c2s", {"id": 0, "method": "initialize", "params": {"protocolVersion": REVISION, "capabilities": {}}}),
    ("s2c", {"id": 0, "result": {"protocolVersion": REVISION, "capabilities": {"tasks": {"cancel": {}}}}}),
    ("c2s", {"id": 2, "method": "tools/call", "params": {"name": "export", "arguments": {}, "task": {"ttl": 60000}}}),
    ("s2c", {"id": 2, "result": {"task": _task("working")}}),
]
CANCEL_TASK: Step = ("c2s", {"id": 3, "method": "tasks/cancel", "params": {"taskId": "t-1"}})
COMPLETED: Step = ("s2c", {"method": "notifications/tasks/status", "params": _task("completed")})

#: tasks/result (id 4) answered with what the tool call returned.
RESULT_READ: list[Step] = [
    ("c2s", {"id": 4, "method": "tasks/result", "params": {"taskId": "t-1"}}),
    (
        "s2c",
        {
            "id": 4,
            "result": {
                "content": [{"type": "text", "text": "exported 10 rows"}],
                "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "t-1"}},
            },
        },
    ),
]
FIXTURES: dict[str, list[Step]] = {
    "cancel-notification-for-task/triggers": [
        ("c2s", {"method": "notifications/cancelled", "params": {"requestId": 2, "reason": "user"}}),
    ],
    "cancel-notification-for-task/clean": [CANCEL_TASK, ("s2c", {"id": 3, "result": _task("cancelled")})],
    "task-status-after-cancel/triggers": [
        CANCEL_TASK,
        ("s2c", {"id": 3, "result": _task("cancelled")}),
        COMPLETED,
    ],
    "task-status-after-cancel/clean": [
        CANCEL_TASK,
        ("s2c", {"id": 3, "result": _task("cancelled")}),
        ("c2s", {"id": 4, "method": "tasks/get", "params": {"taskId": "t-1"}}),
        ("s2c", {"id": 4, "result": _task("cancelled")}),
    ],
    "tasks-cancel-final-not-rejected/triggers": [
        COMPLETED,
        CANCEL_TASK,
        ("s2c", {"id": 3, "result": _task("cancelled")}),
    ],
    "task-result-after-cancel/triggers": [CANCEL_TASK, ("s2c", {"id": 3, "result": _task("cancelled")}), *RESULT_READ],
    "task-result-after-cancel/clean": [
        CANCEL_TASK,
        ("s2c", {"id": 3, "error": {"code": -32602, "message": "task t-1 is already completed"}}),
        *RESULT_READ,
    ],
    "tasks-cancel-not-marked-cancelled/triggers": [CANCEL_TASK, ("s2c", {"id": 3, "result": {}})],
    "tasks-cancel-not-marked-cancelled/clean": [CANCEL_TASK, ("s2c", {"id": 3, "result": _task("cancelled")})],
    "tasks-cancel-final-not-rejected/clean": [
        COMPLETED,
        CANCEL_TASK,
        ("s2c", {"id": 3, "error": {"code": -32602, "message": "task t-1 is already completed"}}),
    ],
}


TOOLS: list[Step] = [
    ("c2s", {"id": 1, "method": "tools/list"}),
    (
        "s2c",
        {
            "id": 1,
            "result": {
                "tools": [
                    {"name": "export", "annotations": {"readOnlyHint": False, "destructiveHint": True}},
                    {"name": "lookup", "annotations": {"readOnlyHint": True}},
                ]
            },
        },
    ),
]
CANCELLED: Step = ("s2c", {"id": 3, "result": _task("cancelled")})
#: One fixture per outcome class of the cancelled task (tests/test_task_outcomes.py holds the expectations).
OUTCOMES: dict[str, list[Step]] = {
    # lookup is read-only: cancelled, and nothing more
    "clean": [CANCEL_TASK, CANCELLED],
    # the task had completed before the cancel was read: -32602
    "late-result-discarded": [
        CANCEL_TASK,
        ("s2c", {"id": 3, "error": {"code": -32602, "message": "task t-1 is already completed"}}),
        *RESULT_READ,
    ],
    # marked cancelled, then its result delivered all the same
    "late-result-violation": [CANCEL_TASK, CANCELLED, *RESULT_READ],
    # marked cancelled, and nothing checked what export did
    "outcome-unverified": [CANCEL_TASK, CANCELLED],
    # marked cancelled; a later read-only lookup succeeded
    "verified-by-read": [
        CANCEL_TASK,
        CANCELLED,
        ("c2s", {"id": 5, "method": "tools/call", "params": {"name": "lookup", "arguments": {}}}),
        ("s2c", {"id": 5, "result": {"content": [{"type": "text", "text": "10 rows"}]}}),
    ],
    # 2026-07-28 (the Tasks extension): tasks/cancel is acknowledged (an empty result) and the task completes
    # anyway; tasks/get carries the result inline (there is no tasks/result)
    "cooperative-2026-07-28": [
        CANCEL_TASK,
        ("s2c", {"id": 3, "result": {}}),
        ("c2s", {"id": 4, "method": "tasks/get", "params": {"taskId": "t-1"}}),
        (
            "s2c",
            {"id": 4, "result": {**_task("completed"), "result": {"content": [{"type": "text", "text": "exported"}]}}},
        ),
    ],
}


def _revision(name: str) -> str:
    return "2026-07-28" if name.endswith("2026-07-28") else REVISION


def write_outcome(name: str, steps: list[Step]) -> None:
    """An outcome fixture: initialize, tools/list, the task-augmented call of `lookup` for `clean`, else
    of `export`, then STEPS."""
    revision = _revision(name)
    start = json.loads(json.dumps([*START[:2], *TOOLS, *START[2:]]).replace(REVISION, revision))
    if name == "clean":
        start[4][1]["params"]["name"] = "lookup"
    _write(ROOT / "tests/task_outcomes" / f"{name}.jsonl", [*start, *steps])


def write(name: str, steps: list[Step]) -> None:
    _write(ROOT / "tests/rules" / f"{name}.jsonl", [*START, *steps])


def _write(path: Path, steps: list[Step]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"cancelwire_transcript": 1, "transport": "stdio", "vantage": "proxy"})]
    for n, (direction, message) in enumerate(steps):
        line = json.dumps({"jsonrpc": "2.0", **message}, separators=(",", ":"))
        lines.append(json.dumps({"ts": 1.0 + n / 10, "dir": direction, "line": line}))
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    for fixture, fixture_steps in FIXTURES.items():
        write(fixture, fixture_steps)
    for outcome, outcome_steps in OUTCOMES.items():
        write_outcome(outcome, outcome_steps)
