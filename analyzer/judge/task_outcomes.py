"""What became of a task cancelled with `tasks/cancel`: the late-result half of its outcome.

A task-augmented request is answered at once with a `CreateTaskResult`; its task's own result comes later,
from `tasks/result`. Cancelling the task (`tasks/cancel`) cancels the call, and its outcome is one of the
five classes of every cancelled call (outcomes.py). What decides between them here, per revision
(shared/PROTOCOL.md §7; TSK-1, TSK-2):

* `tasks/cancel` answered -32602: the task was already final when the receiver read the cancel, so its
  result raced the cancel: late-result-discarded, exact (the answer is the receiver's own word).
* After the cancel, the task reported completed or failed, or `tasks/result` returned a result:
  * if it may have left before the receiver read the cancel (crossing): late-result-discarded;
  * 2025-11-25 (and an unknown revision): a cancelled task stays cancelled, and the receiver marks it
    cancelled before it answers: late-result-violation;
  * 2026-07-28 (Tasks extension): `tasks/cancel` is cooperative and only acknowledged, and the task may
    still complete: late-result-discarded, not a violation.
* Otherwise nothing of the task's result followed (`cancelled`, or silence): the call is judged like any
  silent cancelled call (tool annotations, a later read), in outcomes.py; `silence` says what the
  receiver answered, for its explanation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from ..model import EntryKind, Outcome, Relation, RequestTimeline, TimelineEntry
from ..model.jsonrpc import CANCEL_REJECTED, INVALID_PARAMS
from ..model.revisions import facts

#: Task statuses that say the work ran to its end.
_FINISHED: Final = frozenset({"completed", "failed"})


@dataclass(frozen=True, slots=True)
class Late:
    """The entry that shows the task's result came after the cancel, and what it makes of the call."""

    outcome: Outcome
    entry: TimelineEntry
    why: str


def late(timeline: RequestTimeline) -> Late | None:
    """The late-result outcome of a call cancelled by `tasks/cancel`, or None when no result followed."""
    cancel = timeline.cancel
    if cancel is None:
        return None
    after = [e for e in timeline.entries if e.seq > cancel.entry.seq and e.relation is not Relation.BEFORE]
    answer = next((e for e in after if e.kind is EntryKind.CANCEL_ANSWER), None)
    if answer is not None and answer.status == CANCEL_REJECTED:
        why = (
            f"tasks/cancel was answered {INVALID_PARAMS}: the task was already final when the receiver read the "
            "cancel, so its result raced the cancel; the canceller must discard it"
        )
        return Late(Outcome.LATE_RESULT_DISCARDED, answer, why)
    done = next((e for e in after if _finished(e)), None)
    if done is None:
        return None
    what = _what(done)
    if done.relation is Relation.CROSSING:
        why = f"{what} may have left before the receiver read tasks/cancel (a race); the canceller must discard it"
        return Late(Outcome.LATE_RESULT_DISCARDED, done, why)
    rules = facts(timeline.revision)
    if rules is not None and rules.task_cancel_cooperative:
        why = (
            f"{what} after tasks/cancel was {_answered(answer)}; in {timeline.revision} tasks/cancel is cooperative "
            "and a task may still complete, so the canceller discards the result"
        )
        return Late(Outcome.LATE_RESULT_DISCARDED, done, why)
    why = (
        f"{what} after tasks/cancel was {_answered(answer)}; a cancelled task must stay cancelled "
        f"({timeline.revision or 'tasks as of 2025-11-25'})"
    )
    return Late(Outcome.LATE_RESULT_VIOLATION, done, why)


def silence(timeline: RequestTimeline) -> str:
    """How a call cancelled by `tasks/cancel` with no late result begins its explanation."""
    cancel = timeline.cancel
    answer = next(
        (e for e in timeline.entries if e.kind is EntryKind.CANCEL_ANSWER and cancel and e.seq > cancel.entry.seq),
        None,
    )
    return f"no task result after tasks/cancel ({_answered(answer)})"


def _finished(entry: TimelineEntry) -> bool:
    if entry.kind is EntryKind.TASK_RESULT:
        return True
    return entry.kind in (EntryKind.TASK_STATUS, EntryKind.CANCEL_ANSWER) and entry.status in _FINISHED


def _what(entry: TimelineEntry) -> str:
    if entry.kind is EntryKind.TASK_RESULT:
        return "tasks/result returned the task's result"
    return f"the task was reported {entry.status} ({entry.method})"


def _answered(answer: TimelineEntry | None) -> str:
    if answer is None:
        return "not answered"
    if answer.status is None:
        return "acknowledged"
    if answer.status.startswith("error"):
        return f"answered {answer.status}"
    return f"answered {answer.status!r}"
