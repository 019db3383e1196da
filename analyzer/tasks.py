"""Task-augmented requests (2025-11-25; the Tasks extension in 2026-07-28) and what is checked of them.

Once a task-augmented request is answered with its `CreateTaskResult`, the work goes on as a task with
its own id: only `tasks/cancel` cancels it, so a `notifications/cancelled` for the request is a finding
(CAN-8); `tasks/cancel` on a task already in a final state is answered -32602 (TSK-2); and a cancelled
task's status never changes again (TSK-1). Status comes from `tasks/get` and `tasks/cancel` results and
`notifications/tasks/status` (shared/PROTOCOL.md §7). State lives per session only once a task appears,
and is bounded: past MAX_TASKS the oldest tasks are forgotten.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from .model import Anomaly, Message, MessageEvent, MessageKind, RequestId, Side
from .pending import MAX_TASKS, PendingRequest, SessionState, SessionTasks, TaskState

FINAL = frozenset({"completed", "failed", "cancelled"})
INVALID_PARAMS = -32602


def on_request(
    session: SessionState, sender: Side, request_id: RequestId, method: str, params: Mapping[str, Any]
) -> None:
    """A `tasks/*` request: remember which task it names, for its reply."""
    task_id = params.get("taskId")
    if not method.startswith("tasks/") or not isinstance(task_id, str):
        return
    tasks = _tasks(session)
    tasks.addressed[(sender, request_id)] = task_id
    if len(tasks.addressed) > MAX_TASKS:
        tasks.addressed.popitem(last=False)


def on_reply(session: SessionState, item: PendingRequest, event: MessageEvent, message: Message) -> Iterator[Anomaly]:
    """The reply to a task-augmented request (its CreateTaskResult) or to a `tasks/*` request."""
    payload = message.payload
    if item.is_task and message.kind is MessageKind.RESULT:
        task = payload.get("task")
        if isinstance(task, dict) and isinstance(task.get("taskId"), str):
            state = TaskState(item.requester, item.request_id, item.method, _status(task) or "working")
            _tasks(session).remember(task["taskId"], state)
        return
    tasks = session.tasks
    task_id = tasks.addressed.pop((item.requester, item.request_id), None) if tasks is not None else None
    if tasks is None or task_id is None or task_id not in tasks.by_id:
        return
    task = tasks.by_id[task_id]
    if item.method == "tasks/cancel" and task.status in FINAL and not _rejected(message):
        what = (
            f"tasks/cancel for task {task_id!r} (of {task.method} id {task.request_id!r}), already {task.status}, "
            f"was answered {_answer(message)} instead of error {INVALID_PARAMS}"
        )
        yield session.anomaly(event, "task.cancel-final-not-rejected", what, task.request_id, task.method)
    if message.kind is MessageKind.RESULT:
        yield from _status_seen(session, event, task_id, task, _status(payload))


def on_status(session: SessionState, event: MessageEvent, params: Mapping[str, Any]) -> Iterator[Anomaly]:
    """A `notifications/tasks/status`."""
    task_id = params.get("taskId")
    tasks = session.tasks
    if tasks is None or not isinstance(task_id, str) or task_id not in tasks.by_id:
        return
    yield from _status_seen(session, event, task_id, tasks.by_id[task_id], _status(params))


def notification_cancel(session: SessionState, event: MessageEvent, sender: Side, target: RequestId) -> Anomaly | None:
    """A `notifications/cancelled` naming a request that became a task: only tasks/cancel cancels it."""
    tasks = session.tasks
    task_id = tasks.by_request.get((sender, target)) if tasks is not None else None
    if tasks is None or task_id is None:
        return None
    task = tasks.by_id[task_id]
    what = (
        f"{sender} sent notifications/cancelled for {task.method} id {target!r}, which runs as task {task_id!r} "
        f"({task.status}): a task is cancelled with tasks/cancel"
    )
    return session.anomaly(event, "cancel.task-by-notification", what, target, task.method, requester=sender)


def _status_seen(
    session: SessionState, event: MessageEvent, task_id: str, task: TaskState, status: str | None
) -> Iterator[Anomaly]:
    if status is None or status == task.status:
        return
    if task.status == "cancelled":
        what = f"task {task_id!r} (of {task.method} id {task.request_id!r}) was cancelled, then reported {status!r}"
        yield session.anomaly(event, "task.status-after-cancel", what, task.request_id, task.method)
        return  # once said; the task stays cancelled for what follows
    task.status = status


def _tasks(session: SessionState) -> SessionTasks:
    if session.tasks is None:
        session.tasks = SessionTasks()
    return session.tasks


def _status(value: Mapping[str, Any]) -> str | None:
    status = value.get("status")
    return status if isinstance(status, str) else None


def _rejected(message: Message) -> bool:
    return message.kind is MessageKind.ERROR and message.payload.get("code") == INVALID_PARAMS


def _answer(message: Message) -> str:
    if message.kind is MessageKind.ERROR:
        return f"error {message.payload.get('code')}"
    status = _status(message.payload)
    return f"with a result (status {status!r})" if status else "with a result"
