"""Classify every cancelled call: what became of it, as far as the recording can tell.

Only the reply decides between the late-result outcomes; other messages after the cancel are
findings, not outcomes. Silence is judged by what the call may have done (tool annotations from
`tools/list`, the server's own claim) and whether a later read could have checked it.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import replace
from typing import Final

from ..model import (
    Anomaly,
    AnomalyName,
    CancelledCall,
    CancelMechanism,
    Certainty,
    EntryKind,
    Finding,
    Mark,
    Outcome,
    Relation,
    RequestTimeline,
    TimelineEntry,
    ToolEffect,
)
from . import task_outcomes

_REPLIES: Final = (EntryKind.RESULT, EntryKind.ERROR_RESULT)
#: Timeline entries a cancelled call keeps for its report: the request and those around the cancel.
TIMELINE_CONTEXT = 12


def around_cancel(timeline: RequestTimeline) -> tuple[RequestTimeline, tuple[int, int]]:
    """The request plus the entries around its cancel, so memory per cancelled call is bounded, and how
    many messages (counting each entry's repeats) were left out before and after them. A long timeline
    has its runs of like entries folded first, so a flood after the cancel keeps the late reply."""
    entries = timeline.entries
    if timeline.cancel is None or len(entries) <= TIMELINE_CONTEXT + 1:
        return timeline, (0, 0)
    entries = _folded(entries)
    if len(entries) <= TIMELINE_CONTEXT + 1:
        return replace(timeline, entries=entries), (0, 0)
    at = next(i for i, e in enumerate(entries) if e.seq >= timeline.cancel.entry.seq)
    start = max(1, min(at - TIMELINE_CONTEXT // 2, len(entries) - TIMELINE_CONTEXT))
    end = start + TIMELINE_CONTEXT
    left_out = (sum(e.repeats for e in entries[1:start]), sum(e.repeats for e in entries[end:]))
    return replace(timeline, entries=(entries[0], *entries[start:end])), left_out


def _folded(entries: tuple[TimelineEntry, ...]) -> tuple[TimelineEntry, ...]:
    """Each run of three or more like entries (kind, sender, method, relation, certainty) as its first,
    standing for all but the last (`repeats`), and its last: the run keeps its time span in two entries."""
    out: list[TimelineEntry] = []
    for _, group in itertools.groupby(entries, lambda e: (e.kind, e.side, e.method, e.relation, e.certainty)):
        run = list(group)
        if len(run) < 3:
            out += run
        else:
            out += [replace(run[0], repeats=sum(e.repeats for e in run[:-1])), run[-1]]
    return tuple(out)


def _silence(timeline: RequestTimeline, mechanism: CancelMechanism) -> tuple[str, str, Certainty]:
    """The words for a cancelled call with no late reply (long, short), and how sure that silence is."""
    if timeline.reply_unread:  # a capture holds a response it could not read (dropped over a limit, or cut)
        unread = "a response was recorded but could not be read"
        return unread, unread, Certainty.INFERRED
    if EntryKind.RESULT in timeline.unrecorded:  # an HTTP+SSE session's HAR: replies are on a stream it lacks
        return "the recording cannot show its reply", "the recording cannot show its reply", Certainty.INFERRED
    # silence is exact only up to the end of the recording; judged when the hold ended, a reply may follow
    certainty = Certainty.EXACT if timeline.ended_by_recording else Certainty.INFERRED
    if mechanism is CancelMechanism.TASKS_CANCEL:  # a task's words say what its tasks/cancel was answered
        words = task_outcomes.silence(timeline)
        return words, words, certainty
    return "no reply after the cancel", "no reply", certainty


def classify(timeline: RequestTimeline) -> CancelledCall | None:
    cancel = timeline.cancel
    if cancel is None:
        return None
    late = _late(timeline)
    evidence = [cancel.entry.origin]
    silent, short, certainty = _silence(timeline, cancel.mechanism)
    verified_by = None
    if late is not None:
        evidence.append(late.entry.origin)
        certainty = late.entry.certainty
        outcome, why = late.outcome, late.why
    elif timeline.method != "tools/call":
        outcome = Outcome.CLEAN
        why = f"{silent}, and {timeline.method} is not a tool call"
    elif timeline.tool_effect is ToolEffect.READ_ONLY:
        outcome = Outcome.CLEAN
        why = f"{silent}; tools/list marked {timeline.tool!r} readOnlyHint (the server's claim)"
    elif timeline.verified_by is not None:
        outcome = Outcome.VERIFIED_BY_READ
        verified_by = timeline.verified_by.origin
        evidence.append(verified_by)
        why = f"{short}; a later {timeline.verified_by.method} succeeded and could have checked the effect"
    else:
        outcome = Outcome.OUTCOME_UNVERIFIED
        effect = "has no annotations" if timeline.tool_effect is ToolEffect.UNKNOWN else "may have side effects"
        why = f"{short}, {timeline.tool!r} {effect}, and no later read checked what it did"
    if late is None and not timeline.ended_by_recording:
        why += " (judged when its hold ended, before the recording did)"
    kept, left_out = around_cancel(timeline)
    return CancelledCall(
        session_key=timeline.session_key,
        request_id=timeline.request_id,
        method=timeline.method,
        tool=timeline.tool,
        mechanism=cancel.mechanism,
        outcome=outcome,
        certainty=certainty,
        explanation=why,
        evidence=tuple(evidence),
        verified_by=verified_by,
        timeline=kept,
        left_out=left_out,
    )


def _late(timeline: RequestTimeline) -> task_outcomes.Late | None:
    """The reply (or, for a task, the result) that came after the cancel, and what it makes of the call."""
    if timeline.cancel is not None and timeline.cancel.mechanism is CancelMechanism.TASKS_CANCEL:
        return task_outcomes.late(timeline)
    reply = next(
        (e for e in timeline.entries if e.kind in _REPLIES and e.relation in (Relation.CROSSING, Relation.AFTER)),
        None,
    )
    if reply is None:
        return None
    if reply.relation is Relation.AFTER:
        why = "the reply left after the cancel reached the receiver"
        if reply.said_cancelled is not None:
            why += f": it says itself that the request was cancelled ({reply.said_cancelled})"
        return task_outcomes.Late(Outcome.LATE_RESULT_VIOLATION, reply, why)
    why = "the reply crossed the cancel in flight; the canceller must discard it"
    return task_outcomes.Late(Outcome.LATE_RESULT_DISCARDED, reply, why)


#: What a server's trace says of a cancelled call's handler (`merge/spans.py`), in an outcome's words.
HANDLER_WORDS = {
    AnomalyName.MERGE_HANDLER_RAN_ON: "the server's trace shows its handler ran on after the cancel",
    AnomalyName.MERGE_HANDLER_STOPPED: "the server's trace shows its handler stopped at the cancel",
}


def with_handler(call: CancelledCall, fact: Anomaly | None) -> CancelledCall:
    """CALL with what the server's span of it says (a `HANDLER_WORDS` anomaly of the same request): the
    explanation says it, and the span is evidence. The outcome stays what the messages make it: a handler that
    ran on may or may not have done its work, and one that stopped may have done part of it."""
    if fact is None or fact.name not in HANDLER_WORDS:
        return call
    why = f"{call.explanation}; {HANDLER_WORDS[fact.name]} (its span, {fact.origin.display()})"
    return replace(call, explanation=why, evidence=(*call.evidence, fact.origin))


def marked(call: CancelledCall, judged: Sequence[tuple[Finding, Sequence[TimelineEntry]]]) -> CancelledCall:
    """`call` with the findings on the entries its (bounded) timeline kept, for its diagram."""
    if not judged or call.timeline is None:
        return call
    kept = {(e.seq, e.kind) for e in call.timeline.entries}
    marks = tuple(
        Mark(seq=e.seq, kind=e.kind, rule_id=f.rule_id, rule=f.rule, severity=f.severity, certainty=f.certainty)
        for f, entries in judged
        for e in entries
        if (e.seq, e.kind) in kept
    )
    return replace(call, marks=marks) if marks else call
