"""Sessions and per-request timelines from one input's events, with bounded state.

Per session: a pending table keyed by (requester side, request id), since the two senders have
separate id spaces; progress tokens linked to their request; HTTP exchange streams linked to the
requests they carry. Finished requests leave tombstones (late cancels, replies and progress), bounded
per input across its sessions; a request keeps at most `max_entries` entries, then counts like ones.

A timeline is finalised (and handed to the rules) as soon as nothing later can change its verdicts:
answered on stdio; answered with its stream ended on HTTP. A cancelled request that got no reply is
held for `hold_seconds` of recording time (a late reply or a verifying read may still come); an HTTP
request whose client disconnected is held while its stream is open. Memory follows open requests and
held cancels, not input size.

Where each entry stands relative to the cancel (BEFORE / CROSSING / AFTER, exact or inferred) is
decided once per entry, with `ordering.relate`; rules and outcomes only read the tag.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeGuard

from . import revisions
from .model import (
    Anomaly,
    CancelInfo,
    CancelMechanism,
    Certainty,
    Direction,
    EntryKind,
    Event,
    Message,
    MessageEvent,
    MessageKind,
    Origin,
    Relation,
    RequestId,
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
)
from .ordering import relate, says_cancelled

_TRANSPORT_ENTRY: Mapping[TransportKind, tuple[EntryKind, Side | None]] = {
    TransportKind.STREAM_OPENED: (EntryKind.STREAM_OPENED, Side.SERVER),
    TransportKind.CLOSED_BY_CLIENT: (EntryKind.STREAM_CLOSED_BY_CLIENT, Side.CLIENT),
    TransportKind.CLOSED_BY_SERVER: (EntryKind.STREAM_CLOSED_BY_SERVER, Side.SERVER),
    TransportKind.RESET_BY_CLIENT: (EntryKind.STREAM_RESET_BY_CLIENT, Side.CLIENT),
    TransportKind.RESET_BY_SERVER: (EntryKind.STREAM_RESET_BY_SERVER, Side.SERVER),
    TransportKind.RECEIVE_WINDOW_ZERO: (EntryKind.RECEIVE_WINDOW_ZERO, Side.CLIENT),
    TransportKind.SERVER_BYTES: (EntryKind.SERVER_BYTES, Side.SERVER),
    TransportKind.RECORDING_ENDED: (EntryKind.RECORDING_ENDED, None),
}
_CLIENT_DISCONNECTS = (TransportKind.CLOSED_BY_CLIENT, TransportKind.RESET_BY_CLIENT)
_STREAM_ENDS = (
    TransportKind.CLOSED_BY_CLIENT,
    TransportKind.CLOSED_BY_SERVER,
    TransportKind.RESET_BY_CLIENT,
    TransportKind.RESET_BY_SERVER,
)


DEFAULT_MAX_OPEN = 10_000


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
    late cancels, replies and progress; the oldest are forgotten first."""
    hold_seconds: float = 300.0
    """How long a silent cancelled request is kept open for a late reply or a verifying read."""
    max_entries: int = 256
    """Entries kept per request; past it, like entries are counted in one (`TimelineEntry.repeats`),
    so a request that streams progress for hours costs bounded memory."""
    verifying_reads: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Tool name → the tools (or `resources/read`) whose later success verifies its effect."""


Output = RequestTimeline | Anomaly | Session


@dataclass(slots=True)
class _Open:
    requester: Side
    request_id: RequestId
    method: str
    seq: int
    tool: str | None
    """Tool name of a `tools/call`, else None."""
    progress_token: str | int | None
    is_task: bool
    """Task-augmented (`params.task`): its progress may go on after its CreateTaskResult."""
    stream: str | None
    declared_revision: Revision | None
    entries: list[TimelineEntry] = field(default_factory=list)
    cancel: CancelInfo | None = None
    replied: bool = False
    sse: bool = False
    """Its reply comes on an SSE stream, which should end after the reply."""
    stream_ended: bool = False
    disconnected: bool = False
    proof_seq: int | None = None
    """Seq from which the receiver provably had read the cancel (stdio ordering proof)."""
    last_progress: float | None = None
    verified_by: TimelineEntry | None = None
    runs: dict[tuple[EntryKind, Side | None, Relation | None, Certainty], int] | None = None
    """Past `max_entries`: the index in `entries` of the run each kind of entry is counted in."""
    run_extra: dict[int, int] = field(default_factory=dict)
    """Index of a run's first entry -> how many more it stands for."""
    last_counted: TimelineEntry | None = None
    """The newest entry counted in a run (the newest of all when it is newer than `entries[-1]`)."""

    @property
    def key(self) -> tuple[Side, RequestId]:
        return (self.requester, self.request_id)

    @property
    def held(self) -> bool:
        """Kept open past its reply: late messages and verifying reads still matter."""
        return self.cancel is not None or self.disconnected


@dataclass(slots=True)
class _Tombstone:
    method: str
    seq: int
    ts: float | None
    judged: bool = True
    """False for a request flushed or superseded unanswered: a later reply to it is no anomaly."""


@dataclass(slots=True)
class _SessionState:
    start: SessionStart
    revision: Revision | None = None
    revision_basis: RevisionBasis = RevisionBasis.ASSUMED
    client_info: Mapping[str, Any] | None = None
    server_info: Mapping[str, Any] | None = None
    tool_effects: dict[str, str] = field(default_factory=dict)
    open: dict[tuple[Side, RequestId], _Open] = field(default_factory=dict)
    tokens: dict[str | int, tuple[Side, RequestId]] = field(default_factory=dict)
    streams: dict[str, list[tuple[Side, RequestId]]] = field(default_factory=dict)
    held: dict[tuple[Side, RequestId], _Open] = field(default_factory=dict)
    """Cancelled or disconnected requests still open, oldest cancel first (bounded by `hold_seconds`)."""
    awaiting_proof: dict[tuple[Side, RequestId], _Open] = field(default_factory=dict)
    """stdio cancels not yet proven read by the receiver, in cancel order."""
    awaiting_read: dict[tuple[Side, RequestId], _Open] = field(default_factory=dict)
    """Cancelled tool calls no later read has verified yet."""
    first_ts: float | None = None
    last_ts: float | None = None
    any_ts: bool = False
    ordered: bool = True
    requests: int = 0
    messages: int = 0
    next_expiry_check: float = float("-inf")
    """Recording time before which no held request can expire (saves a look per event)."""


def tool_effect_from_annotations(tool: Mapping[str, Any]) -> str:
    """`read-only`, `side-effecting` or `unknown` from a `tools/list` entry (Tool annotations)."""
    annotations = tool.get("annotations")
    if not isinstance(annotations, dict):
        return "unknown"
    if annotations.get("readOnlyHint") is True:
        return "read-only"
    return "side-effecting"


class Reconstructor:
    """Feeds one input's events; yields finalised timelines, anomalies and, at the end, sessions."""

    def __init__(self, source: str, input_format: str, options: ReconstructOptions) -> None:
        self.source = source
        self.input_format = input_format
        self.options = options
        self.sessions: dict[str, _SessionState] = {}
        self._out: list[Output] = []
        """What the event being fed completed, handed on by `run` (no generator per event)."""
        self.last_origin = Origin(source)
        """Where the input ended (the last event read): the evidence for `recording-ended`."""
        # Finished requests of every session, oldest first: memory is bounded per input, not per session.
        self._tombstones: OrderedDict[tuple[str, Side, RequestId], _Tombstone] = OrderedDict()
        self._finished_tokens: OrderedDict[tuple[str, str | int], str] = OrderedDict()
        self._task_tokens: OrderedDict[tuple[str, str | int], str] = OrderedDict()
        """Tokens of finished task-augmented or unjudged requests: later progress for them is no anomaly."""
        self._forgetting = False

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
                self._expire_held(session, ts)
        if isinstance(event, MessageEvent):
            self._message(session, event)
        else:
            self._transport(session, event)

    def finish(self, last_seq: int) -> None:
        for session in self.sessions.values():
            self._end(session, last_seq + 1, self.last_origin)
        self.sessions.clear()

    def _end(self, session: _SessionState, seq: int, origin: Origin) -> None:
        """The recording of a session ended (the input did, or its server restarted): what is still
        open is judged as never finished, and the session's state is freed."""
        for item in list(session.open.values()):
            self._add(session, item, TimelineEntry(EntryKind.RECORDING_ENDED, None, seq, session.last_ts, origin))
            self._finalise(session, item, ended=True)
        self._out.append(self._session_summary(session))

    # -- sessions ----------------------------------------------------------------------------

    def _new_session(self, start: SessionStart) -> _SessionState:
        state = _SessionState(start)
        if self.options.protocol:
            state.revision, state.revision_basis = self.options.protocol, RevisionBasis.OVERRIDDEN
        elif start.revision:
            state.revision, state.revision_basis = start.revision, RevisionBasis.DECLARED
        self.sessions[start.session_key] = state
        return state

    def _session(self, event: MessageEvent | TransportEvent) -> _SessionState:
        """A session the reader did not announce: stdio, from an unknown vantage."""
        return self._new_session(
            SessionStart(
                event.seq,
                event.ts,
                event.origin,
                event.session_key,
                Transport.STDIO,
                Vantage.UNKNOWN,
                self.input_format,
            )
        )

    def _anomaly(
        self,
        session: _SessionState,
        event: MessageEvent | TransportEvent,
        name: str,
        detail: str,
        request_id: RequestId | None = None,
        method: str | None = None,
        gap: float | None = None,
        requester: Side | None = None,
    ) -> None:
        self._out.append(
            Anomaly(
                event.seq,
                event.ts,
                event.origin,
                session.start.session_key,
                name,
                detail,
                request_id,
                method,
                session.revision,
                session.start.transport,
                gap,
                requester,
            )
        )

    def _contextualise(self, anomaly: Anomaly) -> Anomaly:
        session = self.sessions.get(anomaly.session_key or "")
        if session is None:
            return anomaly
        return replace(anomaly, revision=session.revision, transport=session.start.transport)

    def _session_summary(self, s: _SessionState) -> Session:
        return Session(
            key=s.start.session_key,
            source=self.source,
            input_format=s.start.input_format,
            transport=s.start.transport,
            vantage=s.start.vantage,
            revision=s.revision,
            revision_basis=s.revision_basis,
            label=s.start.label,
            client_info=s.client_info,
            server_info=s.server_info,
            tool_effects=dict(s.tool_effects),
            first_ts=s.first_ts,
            last_ts=s.last_ts,
            timestamps=s.start.timestamps and s.any_ts,
            timestamps_ordered=s.ordered,
            requests=s.requests,
            messages=s.messages,
        )

    # -- messages ----------------------------------------------------------------------------

    def _message(self, session: _SessionState, event: MessageEvent) -> None:
        if event.direction is Direction.NONE:
            return  # the reader named it (input.direction-unknown); it cannot be placed on a timeline
        session.messages += 1
        sender = Side.CLIENT if event.direction is Direction.C2S else Side.SERVER
        message = event.message
        kind = message.kind
        if kind is MessageKind.NOTIFICATION:
            method = message.method
            if method == "notifications/progress":
                self._progress(session, event, sender, message)
            elif method == "notifications/cancelled":
                self._cancel(session, event, sender, message)
            else:
                self._notification(session, event, sender)
        elif kind is MessageKind.REQUEST:
            self._request(session, event, sender, message)
        else:
            self._reply(session, event, sender, message)

    def _request(self, session: _SessionState, event: MessageEvent, sender: Side, message: Message) -> None:
        method = message.method or ""
        if message.null_id or message.id is None:
            self._anomaly(session, event, "jsonrpc.null-id", f"{method} request with a null id", method=method)
            return
        key = (sender, message.id)
        declared = _declared_revision(message.payload) or event.revision_hint
        if declared and not self.options.protocol and session.revision_basis is RevisionBasis.ASSUMED:
            session.revision, session.revision_basis = declared, RevisionBasis.DECLARED
        previous = session.open.get(key)
        if previous is not None:
            self._anomaly(
                session,
                event,
                "jsonrpc.duplicate-in-flight-id",
                f"{sender} reused id {message.id!r} while its {previous.method} was still unanswered",
                message.id,
                method,
                requester=sender,
            )
            self._finalise(session, previous, ended=False, judged=False)
        elif (earlier := self._tombstones.get((session.start.session_key, *key))) is not None:
            facts = revisions.facts(declared or session.revision)
            if facts is None or facts.unique_ids_per_session:
                self._anomaly(
                    session,
                    event,
                    "jsonrpc.id-reused",
                    f"{sender} reused id {message.id!r} of an earlier {earlier.method}",
                    message.id,
                    method,
                    requester=sender,
                )
        if sender is Side.CLIENT and session.client_info is None:
            # initialize params up to 2025-11-25; every request's _meta from 2026-07-28
            session.client_info = _info(message.payload, "clientInfo")
        item = _Open(
            sender,
            message.id,
            method,
            event.seq,
            _tool(method, message.payload),
            _progress_token(message.payload),
            "task" in message.payload,
            event.stream,
            declared,
        )
        session.open[key] = item
        session.requests += 1
        if event.stream is not None:
            session.streams.setdefault(event.stream, []).append(key)
        token = item.progress_token
        if token is not None:
            session.tokens[token] = key
        self._add(session, item, self._entry(EntryKind.REQUEST, sender, event))
        if len(session.open) > self.options.max_open:
            self._overflow(session, event)

    def _overflow(self, session: _SessionState, event: MessageEvent) -> None:
        """Too many open requests: judge the oldest cancelled one early, else flush the oldest unjudged."""
        if session.held:
            oldest = next(iter(session.held.values()))
            what, judged = "judged the oldest cancelled request early", True
        else:
            oldest = next(iter(session.open.values()))
            what, judged = "flushed the oldest unjudged", False
        self._anomaly(
            session,
            event,
            "reconstruct.too-many-open-requests",
            f"more than {self.options.max_open} open requests; {what} ({oldest.method} id {oldest.request_id!r})",
            oldest.request_id,
            oldest.method,
            requester=oldest.requester,
        )
        self._finalise(session, oldest, ended=False, judged=judged)

    def _notification(self, session: _SessionState, event: MessageEvent, sender: Side) -> None:
        """Any other notification: on HTTP, a server's message on a request's stream is tied to it."""
        if event.stream is not None and sender is Side.SERVER:
            for key in session.streams.get(event.stream, ()):
                item = session.open.get(key)
                if item is not None and item.requester is Side.CLIENT:
                    self._add(session, item, self._entry(EntryKind.RELATED_MESSAGE, sender, event))

    def _progress(self, session: _SessionState, event: MessageEvent, sender: Side, message: Message) -> None:
        payload = message.payload
        token = payload.get("progressToken")
        if not _valid_token(token):
            self._anomaly(session, event, "jsonrpc.invalid-message", "progress without a valid progressToken")
            return
        key = session.tokens.get(token)
        item = session.open.get(key) if key else None
        if item is None:
            token_key = (session.start.session_key, token)
            if token_key in self._task_tokens:
                return
            finished = self._finished_tokens.get(token_key)
            if finished is not None:
                self._anomaly(
                    session,
                    event,
                    "progress.after-completion",
                    f"progress for token {token!r} after its {finished} finished",
                    method=finished,
                )
            else:
                self._anomaly(session, event, "progress.unknown-token", f"progress for unknown token {token!r}")
            return
        self._add(session, item, self._entry(EntryKind.PROGRESS, sender, event))
        value = payload.get("progress")
        if isinstance(value, int | float) and not isinstance(value, bool):
            if item.last_progress is not None and value <= item.last_progress:
                self._anomaly(
                    session,
                    event,
                    "progress.not-increasing",
                    f"progress went from {item.last_progress} to {value}",
                    item.request_id,
                    item.method,
                    requester=item.requester,
                )
            item.last_progress = float(value)

    def _cancel(self, session: _SessionState, event: MessageEvent, sender: Side, message: Message) -> None:
        target = message.payload.get("requestId")
        if not _valid_token(target):
            self._anomaly(session, event, "cancel.unknown-request", "cancel without a valid requestId")
            return
        reason = message.payload.get("reason")
        facts = revisions.facts(session.revision)
        own = session.open.get((sender, target))
        other = session.open.get((sender.other, target))
        if own is None and other is not None and sender is Side.SERVER and other.method == "subscriptions/listen":
            self._add(session, other, self._entry(EntryKind.RELATED_MESSAGE, sender, event))
            return  # 2026-07-28: the server ends a client's listen with a cancel (Subscriptions page)
        if own is None:
            tomb = self._tombstones.get((session.start.session_key, sender, target))
            if tomb is not None:
                gap = event.ts - tomb.ts if event.ts is not None and tomb.ts is not None else None
                self._anomaly(
                    session,
                    event,
                    "cancel.after-completion",
                    f"{sender} cancelled id {target!r} ({tomb.method}) after it was answered",
                    target,
                    tomb.method,
                    gap,
                    requester=sender,
                )
            elif other is not None:
                self._anomaly(
                    session,
                    event,
                    "cancel.unknown-request",
                    f"{sender} cancelled id {target!r}, which is a request the {sender.other} sent",
                    target,
                    other.method,
                    requester=sender.other,
                )
            else:
                self._anomaly(
                    session,
                    event,
                    "cancel.unknown-request",
                    f"{sender} cancelled id {target!r}, never sent",
                    target,
                    requester=sender,
                )
            return
        if sender is Side.SERVER and facts is not None and not facts.server_may_cancel:
            self._anomaly(
                session,
                event,
                "cancel.unknown-request",
                f"the server cancelled its own id {target!r}; in {session.revision} only the client cancels",
                target,
                own.method,
                requester=sender,
            )
        revision = own.declared_revision or session.revision
        own_facts = revisions.facts(revision)
        if (
            session.start.transport is Transport.STREAMABLE_HTTP
            and own_facts
            and not own_facts.http_notification_is_cancel
        ):
            self._anomaly(
                session,
                event,
                "cancel.mechanism-mismatch",
                f"notifications/cancelled POSTed for id {target!r}; in {revision} the client cancels by "
                "closing the request's SSE stream",
                target,
                own.method,
                requester=sender,
            )
        entry = self._entry(EntryKind.CANCEL, sender, event)
        if own.cancel is None:
            own.cancel = CancelInfo(CancelMechanism.NOTIFICATION, entry, reason if isinstance(reason, str) else None)
            self._hold(session, own)
        self._add(session, own, entry)

    def _reply(self, session: _SessionState, event: MessageEvent, sender: Side, message: Message) -> None:
        kind = EntryKind.RESULT if message.kind is MessageKind.RESULT else EntryKind.ERROR_RESULT
        if message.null_id or message.id is None:
            if not _null_id_allowed(message, session.revision):
                self._anomaly(session, event, "jsonrpc.null-id", f"{message.kind} with a null id")
            return
        key = (sender.other, message.id)
        item = session.open.get(key)
        if item is None:
            tomb = self._tombstones.get((session.start.session_key, *key))
            if tomb is not None and not tomb.judged:
                return  # the reply to a request we flushed unjudged (reported when it was flushed)
            why = f"already answered ({tomb.method})" if tomb else "never requested"
            self._anomaly(
                session,
                event,
                "jsonrpc.response-to-unknown-id",
                f"{sender} replied to id {message.id!r}: {why}",
                message.id,
                tomb.method if tomb else None,
                requester=sender.other,
            )
            return
        entry = self._entry(kind, sender, event)
        self._add(session, item, entry, names_cancel=says_cancelled(message))
        first_reply = not item.replied
        item.replied = True
        if first_reply and kind is EntryKind.RESULT:
            self._learn(session, item, message.payload)
            if session.awaiting_read:
                self._verify_reads(session, item, entry)
        if session.awaiting_proof:
            self._prove_order(session, item, event.seq)
        if self._settled(session, item):
            self._finalise(session, item, ended=False)

    def _learn(self, session: _SessionState, item: _Open, result: Mapping[str, Any]) -> None:
        """Facts a result teaches: the negotiated revision, peer info, tool annotations."""
        if item.method == "initialize":
            version = result.get("protocolVersion")
            if isinstance(version, str) and not self.options.protocol:
                session.revision, session.revision_basis = version, RevisionBasis.NEGOTIATED
        if session.server_info is None:
            session.server_info = _info(result, "serverInfo")
        if item.method == "tools/list":
            for tool in result.get("tools") or ():
                if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                    session.tool_effects[tool["name"]] = tool_effect_from_annotations(tool)

    def _verify_reads(self, session: _SessionState, read: _Open, reply: TimelineEntry) -> None:
        """A successful later read may have checked what a cancelled side-effecting call did."""
        read_name = "resources/read" if read.method == "resources/read" else read.tool
        if read_name is None:
            return
        is_read = read.method == "resources/read" or session.tool_effects.get(read_name) == "read-only"
        for key, item in list(session.awaiting_read.items()):
            if item.cancel is None or item.cancel.entry.seq > read.seq or item is read or item.tool is None:
                continue
            mapped = self.options.verifying_reads.get(item.tool)
            if (mapped is not None and read_name in mapped) or (mapped is None and is_read):
                item.verified_by = replace(reply, method=read_name)
                del session.awaiting_read[key]

    def _prove_order(self, session: _SessionState, answered: _Open, reply_seq: int) -> None:
        """stdio: a reply to a request sent after a cancel proves the cancel was read (in-order pipes)."""
        for key, item in list(session.awaiting_proof.items()):
            assert item.cancel is not None  # only cancelled requests wait for a proof
            if item.cancel.entry.seq >= answered.seq:
                break  # in cancel order: no later cancel is proven by this reply either
            if item.requester is answered.requester:
                item.proof_seq = reply_seq
                del session.awaiting_proof[key]

    # -- transport ---------------------------------------------------------------------------

    def _transport(self, session: _SessionState, event: TransportEvent) -> None:
        mapped = _TRANSPORT_ENTRY.get(event.kind)
        if mapped is None or event.stream is None:
            return  # process exit and session-level closes: facts about the session, not a request
        entry_kind, side = mapped
        for key in list(session.streams.get(event.stream, ())):
            item = session.open.get(key)
            if item is None:
                continue
            entry = TimelineEntry(
                entry_kind, side, event.seq, event.ts, event.origin, event.stream, excerpt=event.detail
            )
            if event.kind is TransportKind.STREAM_OPENED:
                item.sse = True
            if event.kind in _CLIENT_DISCONNECTS and not item.replied and not item.disconnected:
                item.disconnected = True
                session.held.setdefault(key, item)
                self._disconnect(session, item, entry, event)
            self._add(session, item, entry)
            if event.kind in _STREAM_ENDS:
                item.stream_ended = True
                if self._settled(session, item):
                    self._finalise(session, item, ended=False)

    def _disconnect(self, session: _SessionState, item: _Open, entry: TimelineEntry, event: TransportEvent) -> None:
        revision = item.declared_revision or session.revision
        facts = revisions.facts(revision)
        if facts is None or facts.http_disconnect_is_cancel:
            if item.cancel is None:
                item.cancel = CancelInfo(CancelMechanism.DISCONNECT, entry)
                self._hold(session, item)
        elif facts.http_disconnect_is_cancel is False and item.cancel is None:
            self._anomaly(
                session,
                event,
                "cancel.mechanism-mismatch",
                f"the client closed the stream of id {item.request_id!r} before its reply without POSTing "
                f"notifications/cancelled; in {revision} a disconnect is not a cancel",
                item.request_id,
                item.method,
                requester=item.requester,
            )

    # -- timeline helpers --------------------------------------------------------------------

    @staticmethod
    def _entry(kind: EntryKind, side: Side, event: MessageEvent) -> TimelineEntry:
        message = event.message
        return TimelineEntry(
            kind,
            side,
            event.seq,
            event.ts,
            event.origin,
            event.stream,
            message.method,
            None,
            Certainty.EXACT,
            message.excerpt,
        )

    def _add(self, session: _SessionState, item: _Open, entry: TimelineEntry, *, names_cancel: bool = False) -> None:
        cancel = item.cancel
        if cancel is not None and entry is not cancel.entry:
            relation, certainty = relate(
                cancel,
                item.requester,
                entry,
                vantage=session.start.vantage,
                proof_seq=item.proof_seq,
                names_cancel=names_cancel,
                race_window=self.options.race_window,
            )
            entry = replace(entry, relation=relation, certainty=certainty)
        if len(item.entries) < self.options.max_entries and item.runs is None:
            item.entries.append(entry)
        else:
            self._count_in_run(item, entry)

    @staticmethod
    def _count_in_run(item: _Open, entry: TimelineEntry) -> None:
        """Past the entry limit: the first entry of each kind starts a run, the others are counted in it.

        The relation to the cancel is part of the run's key, so what came after a cancel is never
        counted with what came before it."""
        runs = item.runs if item.runs is not None else {}
        item.runs = runs
        key = (entry.kind, entry.side, entry.relation, entry.certainty)
        index = runs.get(key)
        if index is None:
            runs[key] = len(item.entries)
            item.entries.append(entry)
        else:
            item.run_extra[index] = item.run_extra.get(index, 0) + 1
            item.last_counted = entry

    def _hold(self, session: _SessionState, item: _Open) -> None:
        """A cancelled request stays open: a late reply or a verifying read can still come."""
        session.held.setdefault(item.key, item)
        if session.start.transport is Transport.STDIO:
            session.awaiting_proof[item.key] = item
        if item.tool is not None:
            session.awaiting_read[item.key] = item

    @staticmethod
    def _settled(session: _SessionState, item: _Open) -> bool:
        """Nothing later can change this timeline's verdicts: finalise it now and free it.

        Answered on stdio; answered with its stream ended on HTTP, unless cancelled or disconnected,
        which stay open for what the server may still write (bounded by open streams)."""
        if not item.replied:
            return False
        if session.start.transport is Transport.STDIO:
            return True
        return not item.held and (not item.sse or item.stream_ended)

    def _expire_held(self, session: _SessionState, now: float) -> None:
        """Silent cancelled requests are judged `hold_seconds` after their cancel (bounded memory)."""
        while session.held:
            item = next(iter(session.held.values()))
            cancelled_at = item.cancel.entry.ts if item.cancel else item.entries[-1].ts
            if cancelled_at is None or now - cancelled_at <= self.options.hold_seconds:
                # nothing expires before the oldest does: look again only then (or a second from now)
                session.next_expiry_check = (
                    now + 1.0 if cancelled_at is None else cancelled_at + self.options.hold_seconds
                )
                return
            if session.start.transport is not Transport.STDIO and not item.stream_ended:
                return  # an open HTTP stream is still watched (bounded by open connections)
            self._finalise(session, item, ended=False)

    def _finalise(self, session: _SessionState, item: _Open, *, ended: bool, judged: bool = True) -> None:
        """Close a timeline; an unjudged one (flushed, superseded) leaves a tombstone but meets no rule."""
        key = item.key
        session.open.pop(key, None)
        if item.held:
            for waiting in (session.held, session.awaiting_proof, session.awaiting_read):
                waiting.pop(key, None)
        last = item.entries[-1]
        if item.last_counted is not None and item.last_counted.seq > last.seq:
            last = item.last_counted
        tombstones = self._tombstones
        session_key = session.start.session_key
        tomb_key = (session_key, *key)
        if tomb_key in tombstones:
            del tombstones[tomb_key]  # an id used again: its newest use goes to the end
        tombstones[tomb_key] = _Tombstone(item.method, last.seq, last.ts, judged)
        if len(tombstones) > self.options.max_tombstones:
            tombstones.popitem(last=False)
            if not self._forgetting:
                self._forgetting = True
                self._out.append(
                    Anomaly(
                        last.seq,
                        last.ts,
                        last.origin,
                        session.start.session_key,
                        "reconstruct.tombstones-forgotten",
                        f"more than {self.options.max_tombstones} finished requests in this input; the oldest are "
                        "forgotten, so a very late cancel, reply or progress for them reads as one for an unknown id",
                        revision=session.revision,
                        transport=session.start.transport,
                    )
                )
        token = item.progress_token
        if token is not None and session.tokens.get(token) == item.key:
            del session.tokens[token]
            # a task's progress goes on after its CreateTaskResult (Progress, 2025-11-25)
            finished = self._task_tokens if item.is_task or not judged else self._finished_tokens
            finished[(session_key, token)] = item.method
            if len(finished) > self.options.max_tombstones:
                finished.popitem(last=False)
        if item.stream is not None:
            keys = session.streams.get(item.stream)
            if keys is not None and item.key in keys:
                keys.remove(item.key)
                if not keys:
                    del session.streams[item.stream]
        if judged:
            self._out.append(self._timeline(session, item, ended))

    def _timeline(self, session: _SessionState, item: _Open, ended: bool) -> RequestTimeline:
        revision, basis = session.revision, session.revision_basis
        if self.options.protocol:
            revision, basis = self.options.protocol, RevisionBasis.OVERRIDDEN
        elif item.declared_revision:
            revision, basis = item.declared_revision, RevisionBasis.DECLARED
        tool = item.tool
        effect = "none" if tool is None else session.tool_effects.get(tool, "unknown")
        start = session.start
        return RequestTimeline(  # RequestTimeline's fields, in order
            start.session_key,
            item.requester,
            item.request_id,
            item.method,
            tool,
            effect,
            item.progress_token,
            revision,
            basis,
            start.transport,
            start.vantage,
            item.stream,
            self._entries(item),
            item.cancel,
            item.verified_by,
            ended,
        )

    @staticmethod
    def _entries(item: _Open) -> tuple[TimelineEntry, ...]:
        entries = item.entries
        for index, extra in item.run_extra.items():
            entries[index] = replace(entries[index], repeats=1 + extra)
        return tuple(entries)


def _null_id_allowed(message: Message, revision: Revision | None) -> bool:
    """An error answering a request whose id could not be read may carry a null id (JSON-RPC 2.0;
    the MCP schema allows it from 2025-11-25). With no known revision, give it the benefit of the doubt."""
    return message.kind is MessageKind.ERROR and (revision is None or revision >= "2025-11-25")


def _info(payload: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    """`clientInfo`/`serverInfo` from initialize, or from `_meta` (2026-07-28)."""
    meta = payload.get("_meta")
    for value in (payload.get(name), meta.get(f"io.modelcontextprotocol/{name}") if isinstance(meta, dict) else None):
        if isinstance(value, dict):
            return value
    return None


def _tool(method: str, params: Mapping[str, Any]) -> str | None:
    name = params.get("name") if method == "tools/call" else None
    return name if isinstance(name, str) else None


def _valid_token(token: Any) -> TypeGuard[str | int]:
    """A progress token or request id: a string or an integer (not a bool)."""
    return isinstance(token, str | int) and not isinstance(token, bool)


def _progress_token(params: Mapping[str, Any]) -> str | int | None:
    meta = params.get("_meta")
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    return token if _valid_token(token) else None


def _declared_revision(params: Mapping[str, Any]) -> Revision | None:
    meta = params.get("_meta")
    version = meta.get(revisions.META_VERSION_KEY) if isinstance(meta, dict) else None
    return version if isinstance(version, str) else None
