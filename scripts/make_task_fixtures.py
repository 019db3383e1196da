"""Write the hand-written task fixtures under tests/rules/ (no SDK peer commits these violations).

    .venv/bin/python scripts/make_task_fixtures.py

Each is a cancelwire transcript seen from a proxy, revision 2025-11-25: `tools/call` id 2 is task-augmented
(`params.task`) and answered with a CreateTaskResult for task "t-1"; what follows differs per fixture.
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
    "tasks-cancel-final-not-rejected/clean": [
        COMPLETED,
        CANCEL_TASK,
        ("s2c", {"id": 3, "error": {"code": -32602, "message": "task t-1 is already completed"}}),
    ],
}


def write(name: str, steps: list[Step]) -> None:
    path = ROOT / "tests/rules" / f"{name}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"cancelwire_transcript": 1, "transport": "stdio", "vantage": "proxy"})]
    for n, (direction, message) in enumerate([*START, *steps]):
        line = json.dumps({"jsonrpc": "2.0", **message}, separators=(",", ":"))
        lines.append(json.dumps({"ts": 1.0 + n / 10, "dir": direction, "line": line}))
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    for fixture, fixture_steps in FIXTURES.items():
        write(fixture, fixture_steps)
