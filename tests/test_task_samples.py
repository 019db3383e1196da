"""The task samples (sample_captures/tasks/, see its README.md): real task-augmented sessions of the MCP
Python SDK 1.30.0 client and server, over stdio (cancelwire record) and Streamable HTTP (tshark on
loopback, plus the server's own log), and of the TypeScript SDK 1.32.2 over stdio. What each SDK put on
the wire, message by message, and exactly what cancelwire finds and how it classifies every cancelled
call in each recording."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from cancelwire.model import MessageEvent, MessageKind
from cancelwire.readers import InputSource, ReadOptions, choose_reader
from cancelwire.reports.document import build
from cancelwire.run.pipeline import audit

ROOT = Path(__file__).resolve().parent.parent
TASKS = ROOT / "sample_captures" / "tasks"

HANDSHAKE = [
    "c2s 0 initialize",
    "s2c 0 result",
    "c2s - notifications/initialized",
    "c2s 1 tools/list",
    "s2c 1 result",
    "c2s 2 tools/call",
    "s2c 2 result working",  # the CreateTaskResult
]
CANCEL_WORKING = [
    *HANDSHAKE,
    "s2c - notifications/progress 1.0",
    "s2c - notifications/tasks/status working",
    "s2c - notifications/progress 2.0",
    "s2c - notifications/tasks/status working",
    "c2s 3 tasks/cancel",
    "s2c 3 result cancelled",
    "c2s 4 tasks/get",
    "s2c 4 result cancelled",
    "c2s 5 tasks/result",
    "s2c 5 result",  # no content: only the related-task _meta
    # The SDK's default tasks/cancel only marks the store: the work goes on, with progress.
    "s2c - notifications/progress 3.0",
    "s2c - notifications/tasks/status cancelled",
    "s2c - notifications/progress 4.0",
    "s2c - notifications/tasks/status cancelled",
    "s2c - notifications/progress 5.0",
    "s2c - notifications/tasks/status cancelled",
    "s2c - notifications/progress 6.0",
    "s2c - notifications/tasks/status cancelled",
    "c2s 6 tasks/get",
    "s2c 6 result cancelled",  # the status never left cancelled
]
CALLER_TIMEOUT = [
    *HANDSHAKE,
    "c2s 3 tasks/result",
    *[f"s2c - notifications/{kind}" for n in range(1, 7) for kind in (f"progress {n}.0", "tasks/status working")],
    "s2c - notifications/tasks/status completed",
    # The caller gave up on tasks/result after 0.8 s: no tasks/cancel, no notifications/cancelled.
    "s2c 3 result content",
]


def cancel_completed(*statuses: str) -> list[str]:
    """A one-step task polled to `completed`, its result fetched, then tasks/cancel of it: -32602."""
    return [
        *HANDSHAKE,
        "c2s 3 tasks/get",
        "s2c 3 result working",
        *statuses,
        "s2c - notifications/tasks/status completed",
        "c2s 4 tasks/get",
        "s2c 4 result completed",
        "c2s 5 tasks/result",
        "s2c 5 result content",
        "c2s 6 tasks/cancel",
        "s2c 6 error -32602",  # TSK-2 kept
    ]


TS_POLLS = [
    *HANDSHAKE,
    "c2s 3 tasks/get",  # callToolStream polls at the server's pollInterval
    "s2c 3 result working",
    "s2c - notifications/progress 1",
    "c2s 4 tasks/get",
    "s2c 4 result working",
    "s2c - notifications/progress 2",
]
TS_CALLER_ABORT = [
    *TS_POLLS,
    # The caller aborted: a cancel for the task's tools/call and for both answered polls; no tasks/cancel.
    "c2s - notifications/cancelled",
    "c2s - notifications/cancelled",
    "c2s - notifications/cancelled",
    *[f"s2c - notifications/progress {n}" for n in (3, 4, 5, 6)],
    "s2c - notifications/tasks/status completed",
]
SEQUENCES = {
    "sdk-py-task-cancel-working.jsonl": CANCEL_WORKING,
    "sdk-py-http-task-cancel-working.pcapng": CANCEL_WORKING,
    "sdk-py-http-task-cancel-working.server.jsonl": CANCEL_WORKING,
    # The Python SDK also tells the last `working` status message; the TypeScript one only the final status.
    "sdk-py-task-cancel-completed.jsonl": cancel_completed("s2c - notifications/tasks/status working"),
    "sdk-py-task-progress-completed.jsonl": [
        *HANDSHAKE,
        "c2s 3 tasks/result",
        "s2c - notifications/progress 1.0",
        "s2c - notifications/tasks/status working",
        "s2c - notifications/progress 2.0",
        "s2c - notifications/tasks/status working",
        "s2c - notifications/progress 3.0",
        "s2c - notifications/tasks/status working",
        "s2c - notifications/tasks/status completed",
        "s2c 3 result content",
    ],
    "sdk-py-task-caller-timeout.jsonl": CALLER_TIMEOUT,
    "sdk-py-http-task-caller-timeout.pcapng": CALLER_TIMEOUT,
    "sdk-py-http-task-caller-timeout.server.jsonl": CALLER_TIMEOUT,
    "sdk-ts-task-cancel-working.jsonl": [
        *TS_POLLS,
        "c2s 5 tasks/cancel",
        "s2c 5 result cancelled",
        "c2s 6 tasks/get",
        "s2c 6 result cancelled",  # the stream's last poll
        "c2s 7 tasks/get",
        "s2c 7 result cancelled",
        "c2s 8 tasks/result",
        "s2c 8 error -32603",  # "has no result stored"
        "c2s 9 tasks/get",
        "s2c 9 result cancelled",
    ],
    "sdk-ts-task-caller-abort.jsonl": TS_CALLER_ABORT,
    "sdk-ts-http-task-caller-abort.pcapng": TS_CALLER_ABORT,
    "sdk-ts-task-result-timeout.jsonl": [
        *HANDSHAKE,
        "c2s 3 tasks/result",
        # The SDK's 800 ms request timeout: a cancel of the tasks/result request (not of the task), which
        # the server honours (no reply to id 3); the task itself runs to its end.
        "c2s - notifications/cancelled",
        "s2c - notifications/tasks/status completed",
    ],
    "sdk-ts-task-cancel-completed.jsonl": cancel_completed(),
}


def _step(event: MessageEvent) -> str:
    """One message as `direction id what`, with the status or progress that tells the story."""
    message, payload = event.message, event.message.payload
    head = f"{event.direction.value} {'-' if message.id is None else message.id}"
    if message.kind is MessageKind.ERROR:
        return f"{head} error {payload.get('code')}"
    if message.kind is MessageKind.RESULT:
        status = payload.get("status") or (payload.get("task") or {}).get("status")
        return " ".join([head, "result", *([status] if status else []), *(["content"] if "content" in payload else [])])
    detail = payload.get("progress") if message.method == "notifications/progress" else payload.get("status")
    return " ".join([head, str(message.method), *([str(detail)] if detail is not None else [])])


def _steps(path: Path) -> list[str]:
    source = InputSource(path.name, path)
    events = choose_reader(source, None).read(source, ReadOptions())
    return [_step(e) for e in events if isinstance(e, MessageEvent)]


def test_every_sample_file_is_covered() -> None:
    assert sorted(SEQUENCES) == sorted(p.name for p in TASKS.iterdir() if p.name != "README.md")


@pytest.mark.parametrize("name", sorted(SEQUENCES))
def test_what_the_sdk_put_on_the_wire(name: str) -> None:
    assert _steps(TASKS / name) == SEQUENCES[name]


def _stderr(name: str) -> list[str]:
    lines = [json.loads(line) for line in (TASKS / name).read_text().splitlines()]
    return [line["line"].split("] ", 1)[1] for line in lines if line.get("dir") == "stderr"]


def test_the_ts_clients_abort_names_the_task_call_and_the_answered_polls() -> None:
    lines = [json.loads(line) for line in (TASKS / "sdk-ts-task-caller-abort.jsonl").read_text().splitlines()]
    cancels = [json.loads(r["line"]) for r in lines if "notifications/cancelled" in r.get("line", "")]
    assert [c["params"] for c in cancels] == [{"requestId": n, "reason": "the caller gave up"} for n in (2, 3, 4)]


def test_the_cancelled_task_went_on_exporting() -> None:
    """The server's own stderr, recorded with the transcript: records 3-6 were exported after the
    tasks/cancel that the SDK answered with `cancelled`; `is_cancelled` never turned true. (The
    context's own copy of the task says `cancelled` only from its next status update on.)"""
    stderr = _stderr("sdk-py-task-cancel-working.jsonl")
    said = [re.sub(r"task [0-9a-f]{32}:[0-9a-f-]{36} ", "task T ", line) for line in stderr]
    assert said == [
        *[f"export_ledger: task T exported record-{n} (status in its ServerTaskContext: working)" for n in (1, 2, 3)],
        *[f"export_ledger: task T exported record-{n} (status in its ServerTaskContext: cancelled)" for n in (4, 5, 6)],
        "export_ledger: task T work returns after 6 records",
        "side effects performed: ['record-1', 'record-2', 'record-3', 'record-4', 'record-5', 'record-6']",
    ]


def _audit(name: str) -> dict[str, Any]:
    return build(audit([str(TASKS / name)]))


def _findings(report: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(f["rule_id"], f["severity"], f["certainty"], f["request_id"], f["method"]) for f in report["findings"]]


def _cancels(report: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(c["request_id"], c["tool"], c["mechanism"], c["outcome"], c["certainty"]) for c in report["cancellations"]]


TS_ABORT_FINDINGS = [
    ("CW111", "error", "exact", 2, "tools/call"),  # the task cancelled with notifications/cancelled
    ("CW106", "info", "inferred", 3, "tasks/get"),
    ("CW106", "info", "inferred", 4, "tasks/get"),
]
# tasks/cancel of the working task cancels tools/call id 2: marked cancelled, no result delivered (the
# Python SDK's tasks/result is `_meta` only), the tool not read-only and nothing read it back
TASK_CANCELLED = [(2, "export_ledger", "tasks-cancel", "outcome-unverified", "exact")]
# the Python SDK's task goes on exporting records 3-6 and reporting progress for them after tasks/cancel was
# answered cancelled: progress after the cancel (PRG-3: a task's token lives until it ends)
PROGRESS_AFTER_TASKS_CANCEL = ("CW102", "warning", "exact", 2, "tools/call")
VERDICTS: dict[str, tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]] = {
    # name: (findings, cancelled calls)
    "sdk-py-task-cancel-working.jsonl": ([PROGRESS_AFTER_TASKS_CANCEL], TASK_CANCELLED),
    # the task's progress comes on the GET stream after the client closed the call's own stream, which
    # is not a cancel once the task handle was returned: no CW204 message-after-disconnect
    "sdk-py-http-task-cancel-working.pcapng": ([PROGRESS_AFTER_TASKS_CANCEL], TASK_CANCELLED),
    "sdk-py-http-task-cancel-working.server.jsonl": ([PROGRESS_AFTER_TASKS_CANCEL], TASK_CANCELLED),
    "sdk-py-task-cancel-completed.jsonl": ([], []),
    "sdk-py-task-progress-completed.jsonl": ([], []),
    "sdk-py-task-caller-timeout.jsonl": ([], []),
    "sdk-py-http-task-caller-timeout.pcapng": ([], []),
    "sdk-py-http-task-caller-timeout.server.jsonl": ([], []),
    "sdk-ts-task-cancel-working.jsonl": ([], TASK_CANCELLED),
    "sdk-ts-task-cancel-completed.jsonl": ([], []),
    "sdk-ts-task-caller-abort.jsonl": (TS_ABORT_FINDINGS, []),
    "sdk-ts-http-task-caller-abort.pcapng": (TS_ABORT_FINDINGS, []),
    # Cancelling tasks/result is an ordinary cancel (CW111 is for the task's own request): clean.
    "sdk-ts-task-result-timeout.jsonl": ([], [(3, None, "notification", "clean", "exact")]),
}


@pytest.mark.parametrize("name", sorted(VERDICTS))
def test_findings_and_cancelled_calls(name: str) -> None:
    report = _audit(name)
    assert [(s["protocol_version"], s["revision_basis"]) for s in report["sessions"]] == [("2025-11-25", "negotiated")]
    assert (_findings(report), _cancels(report)) == VERDICTS[name]
