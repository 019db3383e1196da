"""Per-session reconstruction state: the open requests, their indexes, and what the session has learnt.

The pending table is keyed by (requester side, request id), since the two senders number their
requests separately. Progress tokens and HTTP exchange streams index into it. The revision that
judges an exchange is decided here, in `SessionState.revision_for`, and nowhere else.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from itertools import islice
from typing import Any, Final

from ..model import (
    Anomaly,
    AnomalyName,
    Certainty,
    EntryKind,
    MessageEvent,
    RequestId,
    RequestTimeline,
    Revision,
    RevisionBasis,
    Session,
    SessionStart,
    Side,
    TimelineEntry,
    ToolEffect,
    Transport,
    TransportEvent,
    revisions,
)
from ..model.jsonrpc import json_kind
from .entrylog import StreamCount
from .ordering import DEFAULT_RACE_WINDOWS, race_window, relate
from .params import peer_info, tool_effect_from_annotations
from .request import PendingRequest, RequestKey
from .task_memory import MAX_TASKS, TaskTraffic

# Read per message, so bound once: an enum member read off its class is an attribute look-up on Python 3.11
_STDIO: Final = Transport.STDIO
_CLIENT: Final = Side.CLIENT
_OVERRIDDEN: Final = RevisionBasis.OVERRIDDEN
_DECLARED: Final = RevisionBasis.DECLARED

#: What a timeline cannot show when a response to its request was recorded but not read.
_REPLIES: Final = frozenset({EntryKind.RESULT, EntryKind.ERROR_RESULT})
#: ... when the server→client direction of its exchange is no longer read.
_SERVER_DIRECTION: Final = _REPLIES | {EntryKind.STREAM_CLOSED_BY_SERVER, EntryKind.STREAM_RESET_BY_SERVER}
#: How strongly a basis establishes a session's revision; a stronger one replaces a weaker one.
_BASIS_RANK: Final = {
    RevisionBasis.ASSUMED: 0,
    RevisionBasis.DECLARED: 1,
    RevisionBasis.NEGOTIATED: 2,
    RevisionBasis.OVERRIDDEN: 3,
}


@dataclass(slots=True)
class TaskState:
    """A task seen in a session (tasks.py checks what is said of it)."""

    requester: Side
    """Who sent the request that created it."""
    request_id: RequestId
    """The task-augmented request that created it."""
    method: str
    """That request's method."""
    status: str
    """The last status seen."""
    call: PendingRequest | None = None
    """The creating request while its timeline is kept open for the task (task_outcomes.py): until the
    task ends, or, once `tasks/cancel` cancelled it, like any cancelled call. None once it is judged."""


@dataclass(slots=True)
class SessionTasks:
    """A session's tasks by id, the requests that created them, and the task each tasks/* request names."""

    by_id: OrderedDict[str, TaskState] = field(default_factory=OrderedDict)
    by_request: dict[tuple[Side, RequestId], str] = field(default_factory=dict)
    addressed: OrderedDict[tuple[Side, RequestId], str] = field(default_factory=OrderedDict)

    def remember(self, task_id: str, task: TaskState) -> TaskState | None:
        """Add a task; the oldest one it pushed out past MAX_TASKS (its kept call is judged now)."""
        self.by_id[task_id] = task
        self.by_request[(task.requester, task.request_id)] = task_id
        if len(self.by_id) <= MAX_TASKS:
            return None
        old_id, old = self.by_id.popitem(last=False)
        if self.by_request.get((old.requester, old.request_id)) == old_id:  # not a newer task of a reused id
            del self.by_request[(old.requester, old.request_id)]
        return old


@dataclass(slots=True, init=False)
class StreamNotes:
    """The server's messages on one HTTP stream, put on every client request it carries (`streams.on_note`)."""

    counter: Final[StreamCount]
    """Counts them once for the requests whose logs share it (`EntryLog.share`)."""
    eager: Final[dict[int, PendingRequest]]
    """The requests (by `seq`) whose logs take each one as it comes: the others share `counter`."""

    def __init__(self) -> None:
        self.counter, self.eager = StreamCount(), {}


@dataclass(slots=True)
class SessionState:
    start: SessionStart
    """What the reader said about the session (its vantage includes `--vantage`)."""
    race_window: float | None = None
    """`--race-window`, or None for the vantage's default (`ordering.DEFAULT_RACE_WINDOWS`) widened to the
    round trips the recording shows (`ordering.race_window`)."""
    round_trips: dict[Side, float] = field(default_factory=dict)
    """Per requester, the fastest request→reply (seconds) the recording showed before any cancel."""
    repliers: set[Side] = field(default_factory=set)
    """The sides whose first reply was seen (on stdio that one is not timed, see `time_reply`)."""
    max_tools: int = 10_000
    """Tool names whose annotations are remembered; past it the least recently listed are forgotten."""
    tools_forgotten: int = 0
    """Tool names forgotten so far (a call of one is judged as of a tool with no annotations)."""
    revision: Revision | None = None
    revision_basis: RevisionBasis = RevisionBasis.ASSUMED
    client_info: Mapping[str, Any] | None = None
    server_info: Mapping[str, Any] | None = None
    tool_effects: dict[str, ToolEffect] = field(default_factory=dict)
    """Tool name -> what its annotations say, least recently listed first (bounded by `max_tools`)."""
    open: dict[RequestKey, PendingRequest] = field(default_factory=dict)
    tokens: dict[str | int, RequestKey] = field(default_factory=dict)
    streams: dict[str, dict[RequestKey, None]] = field(default_factory=dict)
    """Per HTTP stream, the requests open on it, in request order (a dict: removing one costs one look-up)."""
    stream_notes: dict[str, StreamNotes] = field(default_factory=dict)
    """Per stream with a client request open on it: where the server's messages on it go."""
    held: dict[int, PendingRequest] = field(default_factory=dict)
    """Cancelled or disconnected requests still open, oldest cancel first (bounded by `hold_seconds`). Keyed
    by the request's `seq`, not its id: a hostile sender may reuse the id of a task's call held for its
    tasks/cancel, and both requests must keep their own hold."""
    awaiting_proof: dict[Side, dict[int, PendingRequest]] = field(default_factory=dict)
    """stdio cancels not yet proven read by the receiver, per requester (only a reply to a request of
    the same requester proves one), each in cancel order (by request `seq`); a requester with none
    waiting has no entry, so the session's dict is empty when nothing waits."""
    awaiting_read: dict[int, PendingRequest] = field(default_factory=dict)
    """Cancelled tool calls no later read has verified yet."""
    first_ts: float | None = None
    last_ts: float | None = None
    any_ts: bool = False
    ordered: bool = True
    requests: int = 0
    messages: int = 0
    next_expiry_check: float = float("-inf")
    """Recording time before which no held request can expire (saves a look per event)."""
    tasks: SessionTasks | None = None
    """Task-augmented requests' tasks (tasks.py), once the session has one."""
    task_traffic: TaskTraffic | None = None
    """Requests whose replies are judged for the related-task tag (task_traffic.py), once there are any."""
    key: str = field(init=False)
    """The session key (`start.session_key`), looked up on every request."""

    def __post_init__(self) -> None:
        self.key = self.start.session_key

    # -- the revision in force -------------------------------------------------------------

    def learn_revision(self, revision: Revision, basis: RevisionBasis) -> None:
        """A stronger basis replaces a weaker one (`--protocol` beats a negotiation, which beats a
        declaration); a later negotiation (a second initialize) replaces an earlier one."""
        current = self.revision_basis
        if _BASIS_RANK[basis] > _BASIS_RANK[current] or basis is current is RevisionBasis.NEGOTIATED:
            self.revision, self.revision_basis = revision, basis

    def revision_for(self, declared: Revision | None) -> tuple[Revision | None, RevisionBasis]:
        """The revision that judges one exchange: `--protocol`, else what the request declared itself
        (per request in 2026-07-28), else the session's."""
        if declared and self.revision_basis is not _OVERRIDDEN:
            return declared, _DECLARED
        return self.revision, self.revision_basis

    def facts_for(self, declared: Revision | None) -> revisions.RevisionFacts | None:
        return revisions.facts(self.revision_for(declared)[0])

    # -- the pending table -----------------------------------------------------------------

    def add_entry(
        self,
        item: PendingRequest,
        entry: TimelineEntry,
        *,
        names_cancel: Certainty | None = None,
        crossed: bool = False,
    ) -> TimelineEntry:
        """Add an entry to a request's timeline, tagged once with where it stands relative to the cancel
        (`names_cancel`: how surely its own content says it answers a cancelled request; `crossed`: its
        recording proves it crossed the close, `MessageEvent.crossed`); returns it as tagged."""
        log = item.log
        if log.shared is not None and item.stream is not None:
            # it has its own entry now: the stream's later messages are taken one by one again, and
            # tagged against what it says (a cancel is set before its entry is added)
            log.catch_up()
            self.stream_notes[item.stream].eager[item.seq] = item
        cancel = item.cancel
        if cancel is not None and entry is not cancel.entry:
            if item.window is None:
                item.window = self.window_for(item.requester)
            relation, certainty = relate(
                cancel,
                item.requester,
                entry,
                vantage=self.start.vantage,
                proof_seq=item.proof_seq,
                names_cancel=names_cancel,
                race_window=item.window,
                crossed=crossed or entry.seq in self.start.crossed,
            )
            entry = replace(entry, relation=relation, certainty=certainty)
        # `EntryLog.add` inline: once per message, and the call cost 1.4 % of a stdio audit (A/B)
        if log.runs is None and len(log.entries) < log.limit:
            log.entries.append(entry)
        else:
            log.count(entry)
        return entry

    def window_for(self, requester: Side) -> float:
        """The race window for a cancel REQUESTER sends now (`ordering.race_window`)."""
        return race_window(self.start.vantage, override=self.race_window, round_trip=self.round_trips.get(requester))

    def time_reply(self, item: PendingRequest, ts: float | None) -> None:
        """The round trip of a first reply to a request not cancelled: what the recording shows of the link."""
        request_ts = item.log.entries[0].ts if item.log.entries else None
        if ts is None or request_ts is None:
            return
        # The replier's first reply on stdio is not timed: the server starts with the session and the first
        # request waits in its pipe until the process reads it, so that round trip is mostly start-up
        # (0.5 to 2 s for a Node or Python server), not the link.
        first = item.requester.other not in self.repliers
        self.repliers.add(item.requester.other)
        if (first and self.start.transport is _STDIO) or item.replied or item.held:
            return
        taken = ts - request_ts
        fastest = self.round_trips.get(item.requester)
        if taken >= 0 and (fastest is None or taken < fastest):
            self.round_trips[item.requester] = taken

    def measured_window(self, item: PendingRequest) -> float | None:
        """The window ITEM was judged with, when the recording's round trips widened it past the default."""
        window = item.window
        if window is None or self.race_window is not None or window <= DEFAULT_RACE_WINDOWS[self.start.vantage]:
            return None
        return window

    def add_open(self, item: PendingRequest) -> None:
        key = item.key
        self.open[key] = item
        self.requests += 1
        if item.stream is not None:
            self.streams.setdefault(item.stream, {})[key] = None
            if item.requester is _CLIENT:
                notes = self.stream_notes.get(item.stream)
                if notes is None:
                    notes = self.stream_notes[item.stream] = StreamNotes()
                notes.eager[item.seq] = item
        if item.progress_token is not None:
            self.tokens[item.progress_token] = key

    def remove_open(self, item: PendingRequest) -> bool:
        """Drop a finalised request from every index; True when its progress token was still its own."""
        key = item.key
        if self.open.get(key) is item:  # a task's call, judged late, may share its key with a newer request
            del self.open[key]
        if item.held:
            self.held.pop(item.seq, None)
            self.awaiting_read.pop(item.seq, None)
            self.stop_awaiting_proof(item)
        if item.stream is not None:
            item.log.catch_up()
            notes = self.stream_notes.get(item.stream)
            if notes is not None:
                notes.eager.pop(item.seq, None)
            keys = self.streams.get(item.stream)
            if keys is not None and keys.pop(key, False) is None and not keys:  # None: it was there
                del self.streams[item.stream]
                self.stream_notes.pop(item.stream, None)
        token = item.progress_token
        if token is not None and self.tokens.get(token) == key:
            del self.tokens[token]
            return True
        return False

    def stop_awaiting_proof(self, item: PendingRequest) -> None:
        """`item` no longer waits for an ordering proof (finalised, or a task's call whose task took over)."""
        waiting = self.awaiting_proof.get(item.requester)
        if waiting is not None and waiting.pop(item.seq, None) is not None and not waiting:
            del self.awaiting_proof[item.requester]

    def learn(self, method: str, result: Mapping[str, Any]) -> str | None:
        """Facts the first result of a request teaches: the negotiated revision, peer info, tool annotations.
        A member of the wrong type teaches nothing; what is wrong with a `tools/list` result is returned,
        to be reported as an invalid message."""
        if method == "initialize":
            version = result.get("protocolVersion")
            if isinstance(version, str):
                self.learn_revision(version, RevisionBasis.NEGOTIATED)
        if self.server_info is None:
            self.server_info = peer_info(result, "serverInfo")
        if method == "tools/list" and "tools" in result:
            return self.learn_tools(result["tools"])
        return None

    def learn_tools(self, tools: Any) -> str | None:
        """The tool annotations of a `tools/list` result's `tools`; what is wrong with it, if anything."""
        if not isinstance(tools, list):
            return f"the tools/list result's tools is {json_kind(tools)}, not an array"
        unnamed = 0
        effects = self.tool_effects
        for tool in tools:
            name = tool.get("name") if isinstance(tool, dict) else None
            if isinstance(name, str):
                effects.pop(name, None)  # listed again: now the most recently listed
                effects[name] = tool_effect_from_annotations(tool)
            else:
                unnamed += 1
        excess = len(effects) - self.max_tools
        if excess > 0:
            for old in list(islice(effects, excess)):  # the least recently listed
                del effects[old]
            self.tools_forgotten += excess
        if unnamed:
            return f"{unnamed} of the {len(tools)} tools of a tools/list result are not objects with a string name"
        return None

    # -- output ------------------------------------------------------------------------------

    def reply_unread(self, anomaly: Anomaly) -> None:
        """A reader names a response to an open request that it could not read: the request's reply may be
        in it, so its timeline must not judge its silence as proof of no reply. Without a request id, the
        reader stopped reading where the replies of `requester`'s open requests (both peers' when None) come."""
        if anomaly.request_id is not None:
            item = self.open.get((anomaly.requester or Side.CLIENT, anomaly.request_id))
            if item is not None and not item.replied:
                item.reply_unread |= _REPLIES
            return
        for item in self.open.values():
            if not item.replied and anomaly.requester in (None, item.requester):
                item.reply_unread |= _REPLIES

    def replies_unread(self, stream: str | None) -> None:
        """The server→client direction of an exchange is no longer read (`TransportKind.REPLIES_UNREAD`):
        the client requests it carries (every open one of the session when `stream` is None: an HTTP+SSE
        session's replies all come on its GET stream) may be answered, and their stream ended, unseen."""
        keys = self.streams.get(stream, ()) if stream is not None else [k for k in self.open if k[0] is Side.CLIENT]
        for key in keys:
            item = self.open.get(key)
            if item is not None and item.requester is Side.CLIENT and not item.replied:
                item.reply_unread |= _SERVER_DIRECTION

    def timeline(self, item: PendingRequest, *, ended: bool) -> RequestTimeline:
        """The finalised timeline of `item` (its entry log is frozen into it)."""
        revision, basis = self.revision_for(item.declared_revision)
        tool = item.tool
        start = self.start
        unread = bool(item.reply_unread) and not item.replied
        # Positional, in field order (tests/test_reconstruct_units.py pins it): one is built per request, and
        # sixteen keywords made reconstruction 5 % slower (Reconstructor alone, interleaved A/B, 40 rounds).
        return RequestTimeline(
            start.session_key,
            item.requester,
            item.request_id,
            item.method,
            tool,
            ToolEffect.NONE if tool is None else self.tool_effects.get(tool, ToolEffect.UNKNOWN),
            item.progress_token,
            revision,
            basis,
            start.transport,
            start.vantage,
            item.stream,
            item.log.freeze(),
            item.cancel,
            item.verified_by,
            ended,
            start.unrecorded | item.reply_unread if unread else start.unrecorded,
            unread,
            self.measured_window(item),
            start.session_id,
        )

    def anomaly(
        self,
        event: MessageEvent | TransportEvent,
        name: AnomalyName,
        detail: str,
        request_id: RequestId | None = None,
        method: str | None = None,
        gap: float | None = None,
        requester: Side | None = None,
    ) -> Anomaly:
        return Anomaly(
            seq=event.seq,
            ts=event.ts,
            origin=event.origin,
            session_key=self.start.session_key,
            name=name,
            detail=detail,
            request_id=request_id,
            method=method,
            revision=self.revision,
            transport=self.start.transport,
            gap=gap,
            requester=requester,
        )

    def summary(self, source: str) -> Session:
        start = self.start
        return Session(
            key=start.session_key,
            source=source,
            input_format=start.input_format,
            transport=start.transport,
            vantage=start.vantage,
            revision=self.revision,
            revision_basis=self.revision_basis,
            label=start.label,
            client_info=self.client_info,
            server_info=self.server_info,
            tool_effects=dict(self.tool_effects),
            first_ts=self.first_ts,
            last_ts=self.last_ts,
            timestamps=start.timestamps and self.any_ts,
            timestamps_ordered=self.ordered,
            requests=self.requests,
            messages=self.messages,
            session_id=start.session_id,
            transport_assumed=start.transport_assumed,
        )
