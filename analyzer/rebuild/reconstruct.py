"""Sessions and per-request timelines from one input's events, with bounded state.

The rooms: `pending` holds per-session state (the pending table keyed by requester side and id, the
revision in force); `entrylog` bounds one request's entries; `finished` remembers finalised requests
(tombstones) for late cancels, replies and progress; `holds` decides when a cancelled request may be
finalised and what later messages prove about it; `cancels`, `progress_notifications`, `streams` and
`tasks` judge what one kind of message or transport event means. This module dispatches events to them.

A timeline is finalised (and handed to the rules) as soon as nothing later can change its verdicts:
answered on stdio; answered with its stream ended on HTTP. A cancelled request that got no reply is
held for `hold_seconds` of recording time (a late reply or a verifying read may still come); an HTTP
request whose client disconnected is held while its stream is open. Memory follows open requests and
held cancels, not input size.

Where each entry stands relative to the cancel (BEFORE / CROSSING / AFTER, exact or inferred) is
decided once per entry, with `ordering.relate`; rules and outcomes only read the tag.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Final

from mypy_extensions import mypyc_attr

from ..model import (
    Anomaly,
    AnomalyName,
    CancelInfo,
    CancelMechanism,
    Direction,
    EntryKind,
    Event,
    Message,
    MessageEvent,
    MessageKind,
    Origin,
    RequestTimeline,
    Revision,
    RevisionBasis,
    Session,
    SessionStart,
    Side,
    TimelineEntry,
    Transport,
    TransportEvent,
    TransportKind,
    Vantage,
    revisions,
)
from . import cancels, gave_up, holds, progress, streams, task_traffic, tasks
from .cancel_words import tagged
from .entrylog import EntryLog, message_entry, reply_entry
from .finished import FinishedRequests
from .params import declared_revision_of, peer_info, progress_token_of, tool_of, valid_token
from .pending import SessionState
from .request import PendingRequest

DEFAULT_MAX_OPEN = 10_000
# Read per message, so bound once: on Python 3.11 reading an enum member off its class (`Side.CLIENT`)
# runs `EnumType.__getattr__`'s hook, about 150 ns against 20 for a global (docs/benchmark.md).
_CLIENT: Final = Side.CLIENT
_SERVER: Final = Side.SERVER
_C2S: Final = Direction.C2S
_NO_DIRECTION: Final = Direction.NONE
_NOTIFICATION: Final = MessageKind.NOTIFICATION
_REQUEST: Final = MessageKind.REQUEST
_RESULT: Final = MessageKind.RESULT
_REQUEST_ENTRY: Final = EntryKind.REQUEST
_RESULT_ENTRY: Final = EntryKind.RESULT
_ERROR_ENTRY: Final = EntryKind.ERROR_RESULT


@mypyc_attr(native_class=False)  # pickled across processes: mypyc's own frozen classes cannot be unpickled
@dataclass(frozen=True, slots=True)
class ReconstructOptions:
    protocol: Revision | None = None
    """`--protocol`: judge every exchange under this revision."""
    race_window: float | None = None
    """`--race-window`: one window for every vantage, instead of `ordering.DEFAULT_RACE_WINDOWS`."""
    max_open: int = DEFAULT_MAX_OPEN
    """Open requests per session before the oldest is flushed (`reconstruct.too-many-open-requests`)."""
    max_tombstones: int = 50_000
    """Finished requests (and their progress tokens) remembered per input, across its sessions, for
    late cancels, replies and progress; the oldest are forgotten first. Requests judged unanswered at
    the end of their hold are remembered apart, as many again (`finished.FinishedRequests`)."""
    hold_seconds: float = 300.0
    """How long a silent cancelled request is kept open for a late reply or a verifying read."""
    max_entries: int = 256
    """Entries kept per request; past it, like entries are counted in one (`TimelineEntry.repeats`),
    so a request that streams progress for hours costs bounded memory."""
    max_tools: int = 10_000
    """Tool names whose annotations are remembered per session; past it the least recently listed are
    forgotten (`reconstruct.tools-forgotten`, once per session), and a call of one reads as a call of a
    tool with no annotations."""
    verifying_reads: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Tool name → the tools (or `resources/read`) whose later success verifies its effect."""


Output = RequestTimeline | Anomaly | Session


class Reconstructor:
    """Feeds one input's events; yields finalised timelines, anomalies and, at the end, sessions."""

    def __init__(self, source: str, input_format: str, options: ReconstructOptions) -> None:
        self.source = source
        self.input_format = input_format
        self.options = options
        self.sessions: dict[str, SessionState] = {}
        self._out: list[Output] = []
        """What the event being fed completed, handed on by `run` (no generator per event)."""
        self.last_origin = Origin(source)
        """Where the input ended (the last event read): the evidence for `recording-ended`."""
        self.finished = FinishedRequests(options.max_tombstones)
        """Finished requests of every session: memory is bounded per input, not per session."""

    def run(self, events: Iterable[Event]) -> Iterator[Output]:
        out = self._out
        last_seq = 0
        for event in events:
            last_seq = event.seq
            self.last_origin = event.origin
            self.feed(event)
            if out:
                yield from out
                out.clear()
        self.finish(last_seq)
        yield from out
        out.clear()

    # -- dispatch ----------------------------------------------------------------------------

    def feed(self, event: Event) -> None:
        """Take one event; what it completes is appended to the output buffer `run` hands on."""
        if isinstance(event, SessionStart):
            ended = self.sessions.pop(event.supersedes, None) if event.supersedes else None
            if ended is not None:
                self._end(ended, event.seq, event.origin)
            if event.session_key not in self.sessions:
                self._new_session(event)
            return
        if isinstance(event, Anomaly):
            if event.reply_unread and event.session_key in self.sessions:
                self.sessions[event.session_key].reply_unread(event)
            self._out.append(self._contextualise(event))
            return
        session = self.sessions.get(event.session_key) or self._session(event)
        ts = event.ts
        if ts is not None:
            # time tracking, inline: this runs once per event
            session.any_ts = True
            last = session.last_ts
            if last is None:
                session.first_ts = session.last_ts = ts
            elif ts < last:
                session.ordered = False
            else:
                session.last_ts = ts
            if session.held and ts >= session.next_expiry_check:
                for item in holds.expired(session, ts, self.options.hold_seconds):
                    self._finalise(session, item, ended=False)
        if isinstance(event, MessageEvent):
            self._message(session, event)
        else:
            self._transport(session, event)

    def finish(self, last_seq: int) -> None:
        for session in self.sessions.values():
            self._end(session, last_seq + 1, self.last_origin)
        self.sessions.clear()

    def _end(self, session: SessionState, seq: int, origin: Origin) -> None:
        """The recording of a session ended (the input did, or its server restarted): what is still
        open is judged as never finished, and the session's state is freed."""
        for item in [*session.open.values(), *tasks.release(session)]:
            session.add_entry(item, TimelineEntry(EntryKind.RECORDING_ENDED, None, seq, session.last_ts, origin))
            self._finalise(session, item, ended=True)
        self._out.append(session.summary(self.source))

    # -- sessions ----------------------------------------------------------------------------

    def _new_session(self, start: SessionStart) -> SessionState:
        state = SessionState(start, race_window=self.options.race_window, max_tools=self.options.max_tools)
        if self.options.protocol:
            state.learn_revision(self.options.protocol, RevisionBasis.OVERRIDDEN)
        elif start.revision:
            state.learn_revision(start.revision, RevisionBasis.DECLARED)
        self.sessions[start.session_key] = state
        return state

    def _session(self, event: MessageEvent | TransportEvent) -> SessionState:
        """A session the reader did not announce: stdio, from an unknown vantage."""
        return self._new_session(
            SessionStart(
                seq=event.seq,
                ts=event.ts,
                origin=event.origin,
                session_key=event.session_key,
                transport=Transport.STDIO,
                vantage=Vantage.UNKNOWN,
                input_format=self.input_format,
            )
        )

    def _contextualise(self, anomaly: Anomaly) -> Anomaly:
        session = self.sessions.get(anomaly.session_key or "")
        if session is None:
            return anomaly
        return replace(anomaly, revision=session.revision, transport=session.start.transport)

    # -- messages ----------------------------------------------------------------------------

    def _message(self, session: SessionState, event: MessageEvent) -> None:
        if event.direction is _NO_DIRECTION:
            return  # the reader named it (input.direction-unknown); it cannot be placed on a timeline
        session.messages += 1
        sender = _CLIENT if event.direction is _C2S else _SERVER
        message = event.message
        kind = message.kind
        if kind is _NOTIFICATION:
            method = message.method
            if method == "notifications/progress":
                progress.on_progress(session, self.finished, event, sender, message, self._out.append)
            elif method == "notifications/cancelled":
                self._cancel(session, event, sender, message)
            else:
                if method == "notifications/tasks/status":
                    self._out.extend(tasks.on_status(session, event, sender, message.payload))
                    self._out.extend(task_traffic.on_status(session, event, message.payload))
                self._notification(session, event, sender)
        elif kind is _REQUEST:
            self._request(session, event, sender, message)
        else:
            self._reply(session, event, sender, message)

    def _request(self, session: SessionState, event: MessageEvent, sender: Side, message: Message) -> None:
        method = message.method or ""
        request_id = message.id
        if message.null_id or request_id is None:
            what = f"{method} request with a null id"
            self._out.append(session.anomaly(event, AnomalyName.JSONRPC_NULL_ID, what, method=method))
            return
        payload = message.payload
        declared = declared_revision_of(payload) or event.revision_hint
        if declared:
            session.learn_revision(declared, RevisionBasis.DECLARED)
        if (sender, request_id) in session.open or self.finished.request(session.key, sender, request_id):
            self._check_id(session, event, sender, request_id, method, declared)
        if sender is _CLIENT and session.client_info is None:
            # initialize params up to 2025-11-25; every request's _meta from 2026-07-28
            session.client_info = peer_info(payload, "clientInfo")
        item = PendingRequest(
            requester=sender,
            request_id=request_id,
            method=method,
            seq=event.seq,
            tool=tool_of(method, payload),
            progress_token=progress_token_of(payload),
            is_task="task" in payload and not method.startswith("tasks/"),  # a poll may carry it; it creates no task
            stream=event.stream,
            declared_revision=declared,
            log=EntryLog(self.options.max_entries),
        )
        session.add_open(item)
        session.add_entry(item, message_entry(_REQUEST_ENTRY, sender, event))
        named_task = method.startswith("tasks/")
        if named_task:
            tasks.on_request(session, event, sender, request_id, payload)
        if named_task or session.tasks is not None:
            self._out.extend(task_traffic.on_request(session, event, sender, request_id, method, payload))
        if len(session.open) > self.options.max_open:
            self._overflow(session, event)

    def _check_id(
        self,
        session: SessionState,
        event: MessageEvent,
        sender: Side,
        request_id: int | str,
        method: str,
        declared: Revision | None,
    ) -> None:
        """A request id still in flight is superseded; one used before is reused where ids are unique."""
        previous = session.open.get((sender, request_id))
        if previous is not None:
            what = f"{sender} reused id {request_id!r} while its {previous.method} was still unanswered"
            self._out.append(
                session.anomaly(
                    event, AnomalyName.JSONRPC_DUPLICATE_IN_FLIGHT_ID, what, request_id, method, requester=sender
                )
            )
            self._finalise(session, previous, ended=False, judged=False)
            return
        earlier = self.finished.request(session.key, sender, request_id)
        if earlier is None:
            return
        facts = session.facts_for(declared)
        if facts is None or facts.unique_ids_per_session:
            what = f"{sender} reused id {request_id!r} of an earlier {earlier.method}"
            self._out.append(
                session.anomaly(event, AnomalyName.JSONRPC_ID_REUSED, what, request_id, method, requester=sender)
            )

    def _overflow(self, session: SessionState, event: MessageEvent) -> None:
        """Too many open requests: judge the oldest cancelled one early, else flush the oldest unjudged."""
        if session.held:
            oldest = next(iter(session.held.values()))
            what, judged = "judged the oldest cancelled request early", True
        else:
            oldest = next(iter(session.open.values()))
            what, judged = "flushed the oldest unjudged", False
        detail = f"more than {self.options.max_open} open requests; {what} ({oldest.method} id {oldest.request_id!r})"
        self._out.append(
            session.anomaly(
                event,
                AnomalyName.RECONSTRUCT_TOO_MANY_OPEN_REQUESTS,
                detail,
                oldest.request_id,
                oldest.method,
                requester=oldest.requester,
            )
        )
        self._finalise(session, oldest, ended=False, judged=judged)

    def _notification(self, session: SessionState, event: MessageEvent, sender: Side) -> None:
        """Any other notification: on HTTP, a server's message on a request's stream is tied to it."""
        if event.stream is not None and sender is Side.SERVER:
            streams.on_note(session, event)

    # -- cancels -----------------------------------------------------------------------------

    def _cancel(self, session: SessionState, event: MessageEvent, sender: Side, message: Message) -> None:
        target = message.payload.get("requestId")
        if not valid_token(target):
            self._out.append(
                session.anomaly(event, AnomalyName.CANCEL_UNKNOWN_REQUEST, "cancel without a valid requestId")
            )
            return
        own = session.open.get((sender, target))
        if own is None:
            other = session.open.get((sender.other, target))
            if other is not None and sender is Side.SERVER and other.method == "subscriptions/listen":
                # 2026-07-28: the server ends a client's listen with a cancel (Subscriptions page)
                session.add_entry(other, message_entry(EntryKind.RELATED_MESSAGE, sender, event))
            else:
                stray = tasks.notification_cancel(session, event, sender, target)
                stray = stray or cancels.stray_cancel(session, self.finished, event, sender, target, other)
                self._out.append(stray)
            return
        self._out.extend(cancels.cancel_problems(session, event, sender, own))
        own.unposted_close = None  # the cancel POSTed after the client closed the stream: no mismatch
        entry = message_entry(EntryKind.CANCEL, sender, event)
        if own.cancel is None and not cancels.may_be_ignored(session, sender, own):
            reason = message.payload.get("reason")
            own.cancel = CancelInfo(CancelMechanism.NOTIFICATION, entry, reason if isinstance(reason, str) else None)
            holds.hold(session, own)
        session.add_entry(own, entry)

    # -- replies -----------------------------------------------------------------------------

    def _reply(self, session: SessionState, event: MessageEvent, sender: Side, message: Message) -> None:
        kind = _RESULT_ENTRY if message.kind is _RESULT else _ERROR_ENTRY
        if message.null_id or message.id is None:
            if not _null_id_allowed(message, session.revision):
                self._out.append(session.anomaly(event, AnomalyName.JSONRPC_NULL_ID, f"{message.kind} with a null id"))
            return
        item = session.open.get((sender.other, message.id))
        if item is None:
            late = self.finished.late_reply(session, event, sender, message.id)
            if late is not None:
                self._out.append(late)
            return
        entry, names_cancel = tagged(reply_entry(kind, sender, event, item.method), message)
        session.add_entry(item, entry, names_cancel=names_cancel, crossed=event.crossed)
        session.time_reply(item, event.ts)
        first_reply = not item.replied
        item.replied = True
        if first_reply and (item.is_task or session.tasks is not None):
            self._out.extend(tasks.on_reply(session, item, event, message))
        if item.is_task or session.task_traffic is not None:
            self._out.extend(task_traffic.on_reply(session, event, item, message))
        if first_reply and kind is _RESULT_ENTRY:
            self._learn(session, event, item, entry)
        if session.awaiting_proof:
            holds.prove_order(session, item, event.seq)
        if holds.settled(session, item):
            self._finalise(session, item, ended=False)

    def _learn(self, session: SessionState, event: MessageEvent, item: PendingRequest, entry: TimelineEntry) -> None:
        """What a request's first result teaches the session, and what it may verify."""
        forgotten = session.tools_forgotten
        invalid = session.learn(item.method, event.message.payload)
        if invalid is not None:  # like every invalid message (CW302, once per input): of no request
            self._out.append(session.anomaly(event, AnomalyName.JSONRPC_INVALID_MESSAGE, invalid))
        if session.tools_forgotten and not forgotten:  # once per session
            self._out.append(_tools_forgotten(session, event, self.options.max_tools))
        if session.awaiting_read and event.message.payload.get("isError") is not True:  # a failed read checked nothing
            holds.verify_reads(session, item, entry, self.options.verifying_reads)

    # -- transport ---------------------------------------------------------------------------

    def _transport(self, session: SessionState, event: TransportEvent) -> None:
        if event.request_id is not None and gave_up.on_gave_up(session, event):
            return
        if event.kind is TransportKind.REPLIES_UNREAD:
            session.replies_unread(event.stream)
            return
        for item in streams.on_transport(session, event):
            self._finalise(session, item, ended=False)

    # -- timelines ---------------------------------------------------------------------------

    def _finalise(self, session: SessionState, item: PendingRequest, *, ended: bool, judged: bool = True) -> None:
        """Close a timeline; an unjudged one (flushed, superseded) leaves a tombstone but meets no rule."""
        item.log.catch_up()  # its share of its stream's messages, before anything reads its log
        if judged and item.gave_up is not None:
            self._out.extend(gave_up.unsent_cancel(session, item, ended=ended))
        if (mismatch := cancels.unmatched_mechanism(session, item, ended=ended)) is not None:
            self._out.append(mismatch)
        own_token = session.remove_open(item)
        forgotten = self.finished.retire(session, item, judged=judged, own_token=own_token, ended=ended)
        if forgotten is not None:
            self._out.append(forgotten)
        if judged and not (item.is_task and tasks.keeps(session, item)):  # a task's call stays open while it runs
            self._out.append(session.timeline(item, ended=ended))


def _tools_forgotten(session: SessionState, event: MessageEvent, limit: int) -> Anomaly:
    what = (
        f"more than {limit} tool names listed in this session; the annotations of the least recently listed "
        f"({session.tools_forgotten} so far) are forgotten, so a call of one is judged as of a tool with no "
        "annotations (unknown effect)"
    )
    return session.anomaly(event, AnomalyName.RECONSTRUCT_TOOLS_FORGOTTEN, what)


def _null_id_allowed(message: Message, revision: Revision | None) -> bool:
    """Whether `revision` lets this message carry a null id. With no known revision (none, or one this
    version does not know), give it the benefit of the doubt."""
    known = revisions.facts(revision)
    return message.kind is MessageKind.ERROR and (known is None or known.null_id_error)
