"""Task-augmented requests (2025-11-25; the Tasks extension in 2026-07-28): what is checked of them, and
the timeline of the request that created a task.

Once a task-augmented request is answered with its `CreateTaskResult`, the work goes on as a task with
its own id: only `tasks/cancel` cancels it, so a `notifications/cancelled` for the request is a finding
(CAN-8); `tasks/cancel` on a task already in a final state is answered -32602 (TSK-2); and a cancelled
task's status never changes again (TSK-1). Status comes from `tasks/get` and `tasks/cancel` results and
`notifications/tasks/status` (shared/PROTOCOL.md §7).

The creating request's timeline stays open while its task runs (`keeps`): what is said of the task
(the answers to `tasks/get`, `tasks/cancel` and `tasks/result`, status notifications) goes on it, so a
`tasks/cancel` from the requester is the request's cancel (`CancelMechanism.TASKS_CANCEL`) and the call
is held and judged like any cancelled call (task_outcomes.py classifies it). A task that ends without a
cancel has its timeline judged then. State lives per session only once a task appears, and is bounded:
past MAX_TASKS the oldest tasks are forgotten, and a call still kept for one is judged at once.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any, Final

from ..model import (
    Anomaly,
    AnomalyName,
    CancelInfo,
    CancelMechanism,
    Certainty,
    EntryKind,
    Message,
    MessageEvent,
    MessageKind,
    RequestId,
    RequestTimeline,
    Side,
    TimelineEntry,
)
from ..model.jsonrpc import INVALID_PARAMS, error_status
from . import holds
from .entrylog import message_entry
from .pending import SessionState, SessionTasks, TaskState
from .request import PendingRequest
from .task_memory import MAX_TASKS

FINAL: Final = frozenset({"completed", "failed", "cancelled"})
#: What the answer to each `tasks/*` request is on the creating request's timeline.
_ANSWER_KINDS: Final = {
    "tasks/cancel": EntryKind.CANCEL_ANSWER,
    "tasks/get": EntryKind.TASK_STATUS,
    "tasks/result": EntryKind.TASK_RESULT,
}

Output = Anomaly | RequestTimeline


def on_request(
    session: SessionState, event: MessageEvent, sender: Side, request_id: RequestId, params: Mapping[str, Any]
) -> None:
    """A `tasks/*` request: remember which task it names, for its reply; a `tasks/cancel` from the task's
    requester cancels the call that created it."""
    task_id = params.get("taskId")
    if not isinstance(task_id, str):
        return
    tasks = _tasks(session)
    tasks.addressed[(sender, request_id)] = task_id
    if len(tasks.addressed) > MAX_TASKS:
        tasks.addressed.popitem(last=False)
    task = tasks.by_id.get(task_id)
    call = task.call if task is not None else None
    if event.message.method != "tasks/cancel" or call is None or sender is not call.requester:
        return
    entry = _entry(EntryKind.CANCEL, sender, event, "tasks/cancel")
    if call.cancel is None:
        call.cancel = CancelInfo(CancelMechanism.TASKS_CANCEL, entry)
        holds.hold(session, call)
    session.add_entry(call, entry)


def on_reply(session: SessionState, item: PendingRequest, event: MessageEvent, message: Message) -> Iterator[Output]:
    """The reply to a task-augmented request (its CreateTaskResult) or to a `tasks/*` request."""
    payload = message.payload
    if item.is_task and message.kind is MessageKind.RESULT:
        task = payload.get("task")
        if isinstance(task, dict) and isinstance(task.get("taskId"), str):
            state = TaskState(item.requester, item.request_id, item.method, _status(task) or "working", item)
            forgotten = _tasks(session).remember(task["taskId"], state)
            if forgotten is not None:
                yield from _judge(session, forgotten)
        return
    tasks = session.tasks
    task_id = tasks.addressed.pop((item.requester, item.request_id), None) if tasks is not None else None
    if tasks is None or task_id is None or task_id not in tasks.by_id:
        return
    task = tasks.by_id[task_id]
    status = _status(payload) if message.kind is MessageKind.RESULT else None
    if item.method == "tasks/cancel":
        yield from _cancel_answered(session, event, task_id, task, message, status)
    _on_call(session, task, item, event, message)
    if status is not None:
        yield from _status_seen(session, event, task_id, task, status)
    if item.method == "tasks/result":
        yield from _ended(session, task)  # tasks/result answers only once the task is final


def on_status(session: SessionState, event: MessageEvent, sender: Side, params: Mapping[str, Any]) -> Iterator[Output]:
    """A `notifications/tasks/status`."""
    task_id = params.get("taskId")
    tasks = session.tasks
    if tasks is None or not isinstance(task_id, str) or task_id not in tasks.by_id:
        return
    task = tasks.by_id[task_id]
    status = _status(params)
    call = task.call
    if call is not None and sender is not call.requester:
        session.add_entry(call, _entry(EntryKind.TASK_STATUS, sender, event, event.message.method, status))
    yield from _status_seen(session, event, task_id, task, status)


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
    return session.anomaly(event, AnomalyName.CANCEL_TASK_BY_NOTIFICATION, what, target, task.method, requester=sender)


# -- the creating request's timeline -----------------------------------------------------------


def keeps(session: SessionState, item: PendingRequest) -> bool:
    """As a judged request is finalised: True when it created a task that still runs uncancelled, so its
    timeline stays open (the task's traffic and a `tasks/cancel` go on it); it is judged when the task
    ends, when its cancel's hold does, or when the recording does (`release`)."""
    tasks = session.tasks
    task_id = tasks.by_request.get(item.key) if tasks is not None else None
    task = tasks.by_id.get(task_id) if tasks is not None and task_id is not None else None
    if task is None or task.call is not item:
        return False
    if item.cancel is None and task.status not in FINAL:
        item.stream_ended = True  # its own exchange is over: the task goes on without it
        return True
    task.call = None
    return False


def release(session: SessionState) -> list[PendingRequest]:
    """The recording of the session ended: every call kept for a task, to be judged now (those still
    open are judged with the other open requests)."""
    if session.tasks is None:
        return []
    released = []
    for task in session.tasks.by_id.values():
        call, task.call = task.call, None
        if call is not None and session.open.get(call.key) is not call:
            released.append(call)
    return released


def _on_call(
    session: SessionState, task: TaskState, item: PendingRequest, event: MessageEvent, message: Message
) -> None:
    """The answer to a `tasks/*` request from the task's requester, on the creating request's timeline."""
    call = task.call
    kind = _ANSWER_KINDS.get(item.method)
    if call is None or kind is None or item.requester is not call.requester:
        return
    if message.kind is MessageKind.ERROR:
        # an error from tasks/result is the request's error, no result: said of the task like a status
        kind = EntryKind.TASK_STATUS if kind is EntryKind.TASK_RESULT else kind
        status: str | None = error_status(_code(message))
    elif kind is EntryKind.TASK_RESULT:
        # a result with nothing but `_meta` (the Python SDK's for a cancelled task) delivers nothing
        delivered = any(key != "_meta" for key in message.payload)
        kind, status = (kind, "result") if delivered else (EntryKind.TASK_STATUS, "empty result")
    else:
        status = _status(message.payload)
    answers_cancel = call.cancel is not None and call.cancel.entry.seq == item.seq
    entry = _entry(kind, call.requester.other, event, item.method, status)
    session.add_entry(call, entry, names_cancel=Certainty.EXACT if answers_cancel else None)
    if answers_cancel and call.proof_seq is None:
        # written after the receiver read the cancel: what it says later is after the cancel, for sure
        call.proof_seq = event.seq
        session.stop_awaiting_proof(call)


def _ended(session: SessionState, task: TaskState) -> Iterator[Output]:
    """The task ended: an uncancelled call kept for it is judged now (a cancelled one waits for its hold)."""
    call = task.call
    if call is None or call.cancel is not None or session.open.get(call.key) is call:
        return
    task.call = None
    yield session.timeline(call, ended=False)


def _judge(session: SessionState, task: TaskState) -> Iterator[Output]:
    """A task forgotten past MAX_TASKS: the call kept for it is judged at once."""
    call, task.call = task.call, None
    if call is None or session.open.get(call.key) is call:
        return
    session.remove_open(call)
    yield session.timeline(call, ended=False)


def _cancel_answered(
    session: SessionState, event: MessageEvent, task_id: str, task: TaskState, message: Message, status: str | None
) -> Iterator[Anomaly]:
    """The answer to `tasks/cancel`: -32602 for a final task (TSK-2), else the task marked cancelled."""
    whose = f"tasks/cancel for task {task_id!r} (of {task.method} id {task.request_id!r})"
    if task.status in FINAL and not _rejected(message):
        what = f"{whose}, already {task.status}, was answered {_answer(message)} instead of error {INVALID_PARAMS}"
        yield session.anomaly(event, AnomalyName.TASK_CANCEL_FINAL_NOT_REJECTED, what, task.request_id, task.method)
    elif task.status not in FINAL and message.kind is MessageKind.RESULT and status != "cancelled":
        what = f"{whose}, {task.status}, was answered {_answer(message)}, not with the task marked cancelled"
        yield session.anomaly(event, AnomalyName.TASK_CANCEL_NOT_MARKED_CANCELLED, what, task.request_id, task.method)


def _status_seen(
    session: SessionState, event: MessageEvent, task_id: str, task: TaskState, status: str | None
) -> Iterator[Output]:
    if status is None or status == task.status:
        return
    if task.status == "cancelled":
        what = f"task {task_id!r} (of {task.method} id {task.request_id!r}) was cancelled, then reported {status!r}"
        yield session.anomaly(event, AnomalyName.TASK_STATUS_AFTER_CANCEL, what, task.request_id, task.method)
        return  # once said; the task stays cancelled for what follows
    task.status = status
    if status in FINAL:
        yield from _ended(session, task)


def _entry(
    kind: EntryKind, side: Side, event: MessageEvent, method: str | None, status: str | None = None
) -> TimelineEntry:
    """A task message's entry: a message's, with the method it concerns (a reply carries none) and the
    status it reports."""
    return replace(message_entry(kind, side, event), method=method, status=status)


def _tasks(session: SessionState) -> SessionTasks:
    if session.tasks is None:
        session.tasks = SessionTasks()
    return session.tasks


def _status(value: Mapping[str, Any]) -> str | None:
    status = value.get("status")
    return status[:40] if isinstance(status, str) else None


def _rejected(message: Message) -> bool:
    return message.kind is MessageKind.ERROR and message.payload.get("code") == INVALID_PARAMS


def _code(message: Message) -> str:
    code = message.payload.get("code")
    return str(code) if isinstance(code, int) and not isinstance(code, bool) and abs(code) < 10**9 else "?"


def _answer(message: Message) -> str:
    if message.kind is MessageKind.ERROR:
        return f"error {_code(message)}"
    status = _status(message.payload)
    return f"with a result (status {status!r})" if status else "with a result"
