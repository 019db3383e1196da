"""Task traffic: progress while and after a task runs (PRG-3), and the related-task tag (TSK-3).

A task-augmented request's progress token lives until its task ends (2025-11-25): reconstruction asks
`progress_owner` about progress whose token names no open request. Progress for a task that still runs
(or whose `tasks/cancel` is still held) goes on the creating request's kept timeline (tasks.py keeps it),
so it is judged like any progress: increasing, and after the cancel CW102 with the cancel's ordering
certainty. Progress once the task is over (its call judged: completed, failed, or cancelled and its hold
over) is `progress.after-completion`, as is any progress after the CreateTaskResult in 2026-07-28,
whose Tasks extension supports no progress on tasks.

The related-task tag (2025-11-25 Tasks):

`_meta["io.modelcontextprotocol/related-task"] = {"taskId": ...}` ties a message to a task. The
`tasks/result` result must carry it (its body has no task id), and so must every request, notification
and reply related to a task: a request tagged for a task is answered with the same tag, and a request
the task's receiver sends on the HTTP stream of an open `tasks/result` belongs to that task. Messages
whose params or body already name the task (`tasks/get`, `tasks/result`, `tasks/cancel`, `tasks/list`
requests; `tasks/get`, `tasks/list`, `tasks/cancel` results; `notifications/tasks/status`) should not
carry it; a tag naming another task than the one the message is about contradicts it. The 2026-07-28
Tasks extension has no `tasks/result` and no tag, so the rules cite 2025-11-25 only.

Nothing here runs until a session has a task (or a `tasks/*` request): a session without tasks pays one
attribute test per request. What waits for a reply, and the token of each task, are bounded by MAX_TASKS;
a token is forgotten with its task.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from ..model import Anomaly, AnomalyName, Message, MessageEvent, MessageKind, RequestId, Side, revisions
from .pending import SessionState
from .request import PendingRequest
from .task_memory import Expected, TaskToken, TaskTraffic

TAG: Final = "io.modelcontextprotocol/related-task"
#: Requests whose params name their task: the tag is redundant there (tasks/list names none).
NAMED_BY_PARAMS: Final = frozenset({"tasks/get", "tasks/result", "tasks/cancel", "tasks/list"})
#: Their results that should not carry the tag; the tasks/result result must.
UNTAGGED_RESULTS: Final = frozenset({"tasks/get", "tasks/cancel", "tasks/list"})


@dataclass(frozen=True, slots=True)
class Tag:
    """A related-task tag found on a message."""

    task_id: str | None
    """The task it names; None when the tag is not an object with a string `taskId`."""


def progress_owner(session: SessionState, event: MessageEvent, token: str | int) -> PendingRequest | Anomaly | None:
    """Progress whose token names no open request: the kept call of the token's task (the progress goes
    on its timeline), `progress.after-completion` when the task is over or has no progress, or None when
    the token is no known task's (the finished requests judge it)."""
    traffic = session.task_traffic
    owner = traffic.tokens.get(token) if traffic is not None else None
    tasks = session.tasks
    task = tasks.by_id.get(owner.task_id) if owner is not None and tasks is not None else None
    if owner is None or task is None:
        if traffic is not None and owner is not None:
            del traffic.tokens[token]  # its task was forgotten (MAX_TASKS): so is the token
        return None
    facts = revisions.facts(owner.revision)
    if facts is not None and not facts.task_progress:
        why = f"in {owner.revision} a task has no progress: its request ended with the CreateTaskResult"
    elif task.call is not None:
        return task.call
    else:
        why = f"the task was over ({task.status})"
    what = f"progress for token {token!r} of task {owner.task_id!r} ({task.method} id {task.request_id!r}): {why}"
    return session.anomaly(
        event, AnomalyName.PROGRESS_AFTER_COMPLETION, what, task.request_id, task.method, requester=task.requester
    )


def tag_of(value: Mapping[str, Any]) -> Tag | None:
    """The related-task tag in a params or result object's `_meta`, if any."""
    meta = value.get("_meta")
    if not isinstance(meta, dict) or TAG not in meta:
        return None
    tag = meta[TAG]
    task_id = tag.get("taskId") if isinstance(tag, dict) else None
    return Tag(task_id if isinstance(task_id, str) else None)


def on_request(
    session: SessionState,
    event: MessageEvent,
    sender: Side,
    request_id: RequestId,
    method: str,
    params: Mapping[str, Any],
) -> Iterator[Anomaly]:
    """A request in a session with tasks: its own tag, and what its reply should carry."""
    traffic = _traffic(session)
    tag = tag_of(params)
    key = (sender, request_id)
    if method in NAMED_BY_PARAMS:
        named = params.get("taskId")
        task_id = named if isinstance(named, str) else None
        if tag is not None:
            yield _unwanted(session, event, tag, task_id, f"{method} request", request_id, method, sender)
        if method == "tasks/result" and task_id is not None:
            traffic.expect(key, Expected(task_id, method, True, f"the result of tasks/result for task {task_id!r}"))
        elif method in UNTAGGED_RESULTS:
            traffic.expect(key, Expected(task_id, method, False, f"the {method} result"))
        return
    if tag is not None:
        if tag.task_id is not None:
            why = f"the reply to {method} id {request_id!r} (tagged for task {tag.task_id!r})"
            traffic.expect(key, Expected(tag.task_id, method, True, why))
        return
    fetching = _fetching_on_stream(session, event, sender)
    if fetching is not None:
        what = f"{method} id {request_id!r} on the stream of tasks/result for task {fetching!r} carries no {TAG} tag"
        yield session.anomaly(event, AnomalyName.TASK_RELATED_TASK_MISSING, what, request_id, method, requester=sender)
        traffic.expect(key, Expected(fetching, method, True, f"the reply to {method} id {request_id!r}"))


def on_reply(session: SessionState, event: MessageEvent, item: PendingRequest, message: Message) -> Iterator[Anomaly]:
    """The first reply to a task-augmented request (its token now follows the task), or to a request
    whose reply is judged for the tag (errors have no `_meta`)."""
    if item.is_task and item.progress_token is not None:
        _follow_token(session, item)
    traffic = session.task_traffic
    expected = traffic.replies.pop(item.key, None) if traffic is not None else None
    if expected is None or message.kind is not MessageKind.RESULT:
        return
    tag = tag_of(message.payload)
    if not expected.tagged:
        if tag is not None:
            yield _unwanted(
                session, event, tag, expected.task_id, expected.why, item.request_id, item.method, item.requester
            )
        return
    if tag is None or tag.task_id is None:
        lacks = "carries no" if tag is None else "carries a malformed"
        what = f"{expected.why} {lacks} {TAG} tag"
        yield session.anomaly(
            event, AnomalyName.TASK_RELATED_TASK_MISSING, what, item.request_id, item.method, requester=item.requester
        )
    elif tag.task_id != expected.task_id:
        what = f"{expected.why} is tagged for task {tag.task_id!r}"
        yield session.anomaly(
            event, AnomalyName.TASK_RELATED_TASK_MISMATCH, what, item.request_id, item.method, requester=item.requester
        )


def on_status(session: SessionState, event: MessageEvent, params: Mapping[str, Any]) -> Iterator[Anomaly]:
    """A `notifications/tasks/status`: its params name the task, so a tag is redundant or contradicts."""
    tag = tag_of(params)
    if tag is not None:
        named = params.get("taskId")
        task_id = named if isinstance(named, str) else None
        yield _unwanted(session, event, tag, task_id, "notifications/tasks/status", None, None)


def _unwanted(
    session: SessionState,
    event: MessageEvent,
    tag: Tag,
    task_id: str | None,
    what: str,
    request_id: RequestId | None,
    method: str | None,
    requester: Side | None = None,
) -> Anomaly:
    """A tag where the message already names its task: a contradiction when it names another."""
    if tag.task_id is not None and task_id is not None and tag.task_id != task_id:
        detail = f"{what} for task {task_id!r} is tagged for task {tag.task_id!r}"
        return session.anomaly(
            event, AnomalyName.TASK_RELATED_TASK_MISMATCH, detail, request_id, method, requester=requester
        )
    named = f" for task {task_id!r}" if task_id is not None else ""
    detail = f"{what}{named} carries an {TAG} tag, which its task id already makes redundant"
    return session.anomaly(
        event, AnomalyName.TASK_RELATED_TASK_REDUNDANT, detail, request_id, method, requester=requester
    )


def _fetching_on_stream(session: SessionState, event: MessageEvent, sender: Side) -> str | None:
    """The task whose open `tasks/result` (sent to `sender`) owns the HTTP stream `event` came on."""
    traffic = session.task_traffic
    if event.stream is None or traffic is None:
        return None
    for key in session.streams.get(event.stream, ()):
        expected = traffic.replies.get(key)
        if expected is not None and expected.method == "tasks/result" and key[0] is sender.other:
            return expected.task_id
    return None


def _follow_token(session: SessionState, item: PendingRequest) -> None:
    """The CreateTaskResult made a task: the request's progress token now belongs to it."""
    tasks = session.tasks
    task_id = tasks.by_request.get(item.key) if tasks is not None else None
    if task_id is not None and item.progress_token is not None:
        revision = session.revision_for(item.declared_revision)[0]
        _traffic(session).remember_token(item.progress_token, TaskToken(task_id, revision))


def _traffic(session: SessionState) -> TaskTraffic:
    if session.task_traffic is None:
        session.task_traffic = TaskTraffic()
    return session.task_traffic
