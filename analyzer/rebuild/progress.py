"""`notifications/progress` in reconstruction: which request a progress notification belongs to, and
what is wrong with it.

Its token names an open request (the entry goes on that request's timeline), a running task's creating
request (`task_traffic.progress_owner`), or a finished one (`FinishedRequests.late_progress`: late, or
an unknown token). Progress must be a JSON number (as must a total, when there is one) and must
increase per request; each problem is a named anomaly handed to `emit`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from ..model import Anomaly, AnomalyName, EntryKind, Message, MessageEvent, Side
from . import task_traffic
from .entrylog import message_entry
from .finished import FinishedRequests
from .params import valid_token
from .pending import SessionState
from .request import PendingRequest

_NUMBERS: Final = (int, float)
_PROGRESS: Final = EntryKind.PROGRESS
"""Bound once: on Python 3.11 `EntryKind.PROGRESS` runs the enum metaclass's attribute hook (docs/benchmark.md)."""
_ABSENT: Final[Any] = object()


def on_progress(
    session: SessionState,
    finished: FinishedRequests,
    event: MessageEvent,
    sender: Side,
    message: Message,
    emit: Callable[[Anomaly], None],
) -> None:
    """Put the progress on its request's timeline; what is wrong with it goes to `emit`."""
    payload = message.payload
    token = payload.get("progressToken")
    if not valid_token(token):
        what = "progress without a valid progressToken"
        emit(session.anomaly(event, AnomalyName.JSONRPC_INVALID_MESSAGE, what))
        return
    key = session.tokens.get(token)
    item = session.open.get(key) if key else None
    late: Anomaly | None = None
    if item is None and session.task_traffic is not None:  # a task's token lives until the task ends
        owner = task_traffic.progress_owner(session, event, token)
        if isinstance(owner, Anomaly):
            late = owner
        else:
            item = owner
    value: Any = payload.get("progress")
    numeric = value.__class__ is int or value.__class__ is float  # not bool, whose class is bool
    if not numeric or payload.get("total", 0).__class__ not in _NUMBERS:
        emit(_not_a_number(session, event, payload, item))
    if item is None:
        late = late or finished.late_progress(session, event, token)
        if late is not None:
            emit(late)
        return
    session.add_entry(item, message_entry(_PROGRESS, sender, event), crossed=event.crossed)
    if numeric:
        if item.last_progress is not None and value <= item.last_progress:
            emit(
                session.anomaly(
                    event,
                    AnomalyName.PROGRESS_NOT_INCREASING,
                    f"progress went from {item.last_progress} to {value}",
                    item.request_id,
                    item.method,
                    requester=item.requester,
                )
            )
        item.last_progress = float(value)


def _not_a_number(
    session: SessionState, event: MessageEvent, payload: Mapping[str, Any], item: PendingRequest | None
) -> Anomaly:
    """The anomaly for progress (or a total) that is missing or not a JSON number."""
    what = []
    for name in ("progress", "total"):
        value = payload.get(name, _ABSENT)
        if value.__class__ in _NUMBERS or (value is _ABSENT and name == "total"):
            continue
        what.append(f"{name} is {_describe(value)}")
    detail = "; ".join(what)
    if item is None:
        return session.anomaly(event, AnomalyName.PROGRESS_NOT_A_NUMBER, detail)
    return session.anomaly(
        event, AnomalyName.PROGRESS_NOT_A_NUMBER, detail, item.request_id, item.method, requester=item.requester
    )


def _describe(value: Any) -> str:
    """A JSON value in a few words, bounded (never the repr of a hostile container)."""
    if value is _ABSENT:
        return "missing"
    if isinstance(value, str):
        shown = repr(value[:40]) + ("…" if len(value) > 40 else "")
        return f"{shown}, a string"
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    return "an object" if isinstance(value, dict) else "an array"
