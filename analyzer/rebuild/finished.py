"""What reconstruction remembers of requests it has finalised, bounded per input.

A late cancel, reply or progress notification names a request whose timeline is already gone. A small
tombstone per finished request (method, time of its last entry) tells "after completion" from "never
sent"; a finished progress token tells late progress from progress for an unknown token. A cancelled
request judged unanswered at the end of its hold keeps its cancel, so a reply that comes later still is
linked to it and judged against that cancel; those are remembered apart, so that the requests that
finish after it (a busy session answers thousands in a hold) do not push it out. Memory is bounded per
input across its sessions (each memory to `limit`): the oldest are forgotten first, and the first time
that happens the `reconstruct.tombstones-forgotten` anomaly says so.

A finished request and its token leave a kind (method, judged, task) and a time, kept in arrays per session
(and side) by `remembered.KindMemory`, the held ones their objects (`remembered.Memory`): about 80 B a
finished call with its token (issue 20: a dict per session of tombstone objects took about 290 B, one ordered
dict keyed by (session, side, id) tuples about 450 B).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple

from ..model import (
    Anomaly,
    AnomalyName,
    CancelInfo,
    Certainty,
    EntryKind,
    MessageEvent,
    Relation,
    RequestId,
    Side,
    TimelineEntry,
)
from .ordering import relate
from .pending import SessionState
from .remembered import KindMemory, Kinds, Memory
from .request import PendingRequest


class Tombstone(NamedTuple):
    """A finished request: what a late cancel, reply or reuse of its id is told."""

    method: str
    """Method of the finished request."""
    ts: float | None
    """Time of its last entry, if known."""
    judged: bool
    """False for a request flushed or superseded unanswered: a later reply to it is no anomaly."""
    task: bool
    """A task-augmented request: its progress goes on after its CreateTaskResult (Progress, 2025-11-25)."""


@dataclass(slots=True)
class HeldTombstone:
    """A cancelled request judged at the end of its hold with no reply yet: a later reply is judged
    against its cancel, with the position from which the receiver provably had read it."""

    method: str
    ts: float | None
    unanswered_cancel: CancelInfo | None
    """None once a reply came (a second one is a reply to an answered request)."""
    proof_seq: int | None
    task: bool
    judged: bool = True


class TokenState(StrEnum):
    """What a progress token that names no open request belonged to."""

    FINISHED = "finished"
    """A request that finished: later progress for it is late."""
    QUIET = "quiet"
    """A task-augmented request (its progress goes on after its CreateTaskResult, Progress 2025-11-25)
    or one flushed unjudged: later progress for it is no anomaly."""


_Finished = Tombstone | HeldTombstone


class FinishedRequests:
    """Tombstones and finished progress tokens of one input's sessions, oldest first."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        """Finished requests (and, apart, their tokens) remembered before the oldest are forgotten."""
        self._kinds = kinds = Kinds()
        self._requests = KindMemory(limit, kinds)
        """Every other finished request: its tombstone's kind and time."""
        self._held: Memory[RequestId, HeldTombstone] = Memory(limit)
        """Requests judged unanswered at the end of their hold, apart."""
        self._tokens = KindMemory(limit, kinds)
        """The progress token of a finished request that still owned it: its tombstone's kind."""
        self._forgetting = False

    def request(self, session_key: str, requester: Side, request_id: RequestId) -> _Finished | None:
        store = (session_key, requester)
        found = self._requests.get(store, request_id)
        if found is None:
            return self._held.get(store, request_id)
        kind, ts = found
        return Tombstone(kind.method, ts, kind.judged, kind.task)

    def token(self, session_key: str, token: str | int) -> tuple[str, TokenState] | None:
        """The method of the finished request that carried `token`, and what later progress means."""
        found = self._tokens.get(session_key, token)
        if found is None:
            return None
        kind = found[0]
        return kind.method, TokenState.QUIET if kind.task or not kind.judged else TokenState.FINISHED

    def retire(
        self, session: SessionState, item: PendingRequest, *, judged: bool, own_token: bool, ended: bool = False
    ) -> Anomaly | None:
        """Remember a finalised request (and its progress token when it still owned it); the
        `reconstruct.tombstones-forgotten` anomaly the first time an old tombstone had to go."""
        last = item.log.newest
        store, request_id = (session.key, item.requester), item.request_id
        # one copy of each method name for all of them (the parser gives every message its own)
        method = sys.intern(item.method)
        held = item.cancel if judged and not ended and not item.replied else None
        kind = (method, True if held is not None else judged, item.is_task)  # a held one is judged
        number = self._kinds.number(kind)
        # an id used again: its newest use goes to the end (`put`), and out of the other memory
        if held is not None:
            tomb = HeldTombstone(method, last.ts, _bare(held), item.proof_seq, item.is_task)
            self._requests.pop(store, request_id)
            forgot = self._held.put(store, request_id, tomb)
        else:
            self._held.pop(store, request_id)
            forgot = self._requests.put(store, request_id, kind, last.ts, number)
        if own_token and item.progress_token is not None:  # a token used again goes to the end
            self._tokens.put(session.key, item.progress_token, kind, None, number)
        if not forgot or self._forgetting:
            return None
        self._forgetting = True
        return self._forgotten_anomaly(session, last)

    def late_reply(
        self, session: SessionState, event: MessageEvent, sender: Side, request_id: RequestId
    ) -> Anomaly | None:
        """A reply whose request is not open: already answered, or never sent."""
        tomb = self.request(session.key, sender.other, request_id)
        if tomb is not None and not tomb.judged:
            return None  # the reply to a request we flushed unjudged (reported when it was flushed)
        if isinstance(tomb, HeldTombstone) and tomb.unanswered_cancel is not None:
            cancel, tomb.unanswered_cancel = tomb.unanswered_cancel, None  # a second reply: already answered
            return _reply_after_hold(session, event, sender, request_id, tomb, cancel)
        why = f"already answered ({tomb.method})" if tomb else "never requested"
        what = f"{sender} replied to id {request_id!r}: {why}"
        method = tomb.method if tomb else None
        return session.anomaly(
            event, AnomalyName.JSONRPC_RESPONSE_TO_UNKNOWN_ID, what, request_id, method, requester=sender.other
        )

    def late_progress(self, session: SessionState, event: MessageEvent, token: str | int) -> Anomaly | None:
        """Progress whose token names no open request: late, or for an unknown token."""
        finished = self.token(session.key, token)
        if finished is None:
            return session.anomaly(event, AnomalyName.PROGRESS_UNKNOWN_TOKEN, f"progress for unknown token {token!r}")
        method, state = finished
        if state is TokenState.QUIET:
            return None
        what = f"progress for token {token!r} after its {method} finished"
        return session.anomaly(event, AnomalyName.PROGRESS_AFTER_COMPLETION, what, method=method)

    def _forgotten_anomaly(self, session: SessionState, last: TimelineEntry) -> Anomaly:
        return Anomaly(
            seq=last.seq,
            ts=last.ts,
            origin=last.origin,
            session_key=session.key,
            name=AnomalyName.RECONSTRUCT_TOMBSTONES_FORGOTTEN,
            detail=f"more than {self.limit} finished requests in this input; the oldest are forgotten, so a very "
            "late cancel, reply or progress for them reads as one for an unknown id",
            revision=session.revision,
            transport=session.start.transport,
        )


def _bare(cancel: CancelInfo) -> CancelInfo:
    """What a reply after the hold is judged against: the cancel's mechanism, sender, position and time.
    Without its text (excerpt, method, reason: the call's report has them), which was most of what a
    held tombstone kept; as many as `limit` are kept (issue 20: memory grew with them, 1.3 kB each)."""
    entry = cancel.entry
    return CancelInfo(cancel.mechanism, TimelineEntry(entry.kind, entry.side, entry.seq, entry.ts, entry.origin))


def _reply_after_hold(
    session: SessionState,
    event: MessageEvent,
    sender: Side,
    request_id: RequestId,
    tomb: HeldTombstone,
    cancel: CancelInfo,
) -> Anomaly:
    """A reply to a cancelled request judged unanswered when its hold ended: related to its cancel
    as any reply is (exact from the vantage or an ordering proof, else inferred from the gap)."""
    reply = TimelineEntry(EntryKind.RESULT, sender, event.seq, event.ts, event.origin)
    relation, certainty = relate(
        cancel,
        sender.other,
        reply,
        vantage=session.start.vantage,
        proof_seq=tomb.proof_seq,
        names_cancel=None,
        race_window=session.window_for(sender.other),
    )
    # the cancel's time read first, not inside the condition: there, mypyc 2.4.1 let go of `cancel.entry` on a path
    # that never read it (a crash; gcc's maybe-uninitialized warning under mypyc's -Werror named it)
    cancel_ts = cancel.entry.ts
    gap = None if event.ts is None or cancel_ts is None else event.ts - cancel_ts
    after = f"{gap:.3f} s after its cancel" if gap is not None else "after its cancel"
    crossed = (
        ""
        if relation is Relation.AFTER
        else " (it may have crossed the cancel: the hold was shorter than the race window)"
    )
    what = (
        f"{sender} replied to {tomb.method} (id {request_id!r}) {after}, once the call had been judged "
        f"unanswered at the end of its hold{crossed}; raise --hold to judge the call with its reply"
    )
    return session.anomaly(
        event,
        AnomalyName.CANCEL_REPLY_AFTER_HOLD,
        what,
        request_id,
        tomb.method,
        gap=None if certainty is Certainty.EXACT else gap,
        requester=sender.other,
    )
