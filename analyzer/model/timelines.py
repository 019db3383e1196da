"""What reconstruction hands on: each request's timeline (`RequestTimeline` of `TimelineEntry`s, with
the `CancelInfo` in force) and each `Session`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from .events import Origin
from .kinds import (
    CancelMechanism,
    Certainty,
    EntryKind,
    Relation,
    RevisionBasis,
    Side,
    ToolEffect,
    Transport,
    Vantage,
)
from .records import RequestId, Revision, record


@dataclass(slots=True, init=False, unsafe_hash=True)
class TimelineEntry:
    """One message or transport fact on a request's timeline."""

    kind: Final[EntryKind]
    """What it is."""
    side: Final[Side | None]
    """Who sent it; None for recording-level entries."""
    seq: Final[int]
    """Position in the source (the ordering key)."""
    ts: Final[float | None]
    """Epoch seconds (UTC), if the source has times."""
    origin: Final[Origin]
    """Where it was read (the evidence)."""
    stream: Final[str | None]
    """HTTP exchange that carried it; None on stdio."""
    method: Final[str | None]
    """Method of a message entry (a verifying read: the read's tool); None for replies and transport facts."""
    relation: Final[Relation | None]
    """Relative to the timeline's cancel; None when the request was not cancelled."""
    certainty: Final[Certainty]
    """How sure `relation` is: EXACT from an ordering proof or the vantage, INFERRED from timing."""
    excerpt: Final[str]
    """Bounded raw text of the message, for evidence."""
    repeats: Final[int]
    """How many messages or events this entry stands for. Past a request's entry limit, like entries
    (same kind, side, relation and certainty) are counted in one entry: its origin and time are the
    first one's, and the others may interleave with later entries."""
    said_cancelled: Final[str | None]
    """A reply whose own content says its request was cancelled: what it said, in the words of
    `rebuild.cancel_words` (never the reply's text), the proof that it was written after the cancel."""
    status: Final[str | None]
    """What a task entry reports: the task's status (`cancelled`, `completed`, ...; None for an empty
    acknowledgement), `result` for a `tasks/result` answered with content, `empty result` for one answered
    with nothing but `_meta`, or `error CODE`."""
    error_code: Final[int | None]
    """An error reply's JSON-RPC error code (`jsonrpc.error_code`); None for every other entry."""
    tool_error: Final[bool]
    """A `tools/call` result that says the tool failed (`isError` true)."""

    def __init__(
        self,
        kind: EntryKind,
        side: Side | None,
        seq: int,
        ts: float | None,
        origin: Origin,
        stream: str | None = None,
        method: str | None = None,
        relation: Relation | None = None,
        certainty: Certainty = Certainty.EXACT,
        excerpt: str = "",
        repeats: int = 1,
        said_cancelled: str | None = None,
        status: str | None = None,
        error_code: int | None = None,
        tool_error: bool = False,
    ) -> None:
        self.kind, self.side, self.seq, self.ts = kind, side, seq, ts
        self.origin, self.stream, self.method, self.relation = origin, stream, method, relation
        self.certainty, self.excerpt, self.repeats, self.said_cancelled = certainty, excerpt, repeats, said_cancelled
        self.status, self.error_code, self.tool_error = status, error_code, tool_error

    def __reduce__(self) -> tuple[type[TimelineEntry], tuple[Any, ...]]:
        return TimelineEntry, (
            self.kind,
            self.side,
            self.seq,
            self.ts,
            self.origin,
            self.stream,
            self.method,
            self.relation,
            self.certainty,
            self.excerpt,
            self.repeats,
            self.said_cancelled,
            self.status,
            self.error_code,
            self.tool_error,
        )


@record
class CancelInfo:
    """The cancel in force for a request (the first one its receiver had to act on)."""

    mechanism: CancelMechanism
    """A `notifications/cancelled`, the client's disconnect where the revision makes that the cancel, or a
    `tasks/cancel` of the task a task-augmented request created."""
    entry: TimelineEntry
    """The cancel itself (the notification, the client's close/reset of the stream, or the `tasks/cancel`)."""
    reason: str | None = None
    """The notification's `reason`, if it gave a string."""


@dataclass(slots=True, init=False, unsafe_hash=True)
class RequestTimeline:
    """Everything seen for one request, in source order.

    A timeline can have both a result and a cancel; which came first is in `entries` order and each
    entry's `relation`.
    """

    session_key: Final[str]
    """Its session."""
    requester: Final[Side]
    """Who sent the request (the two peers number their requests separately)."""
    request_id: Final[RequestId]
    """The request's id, in the requester's id space."""
    method: Final[str]
    """The request's method."""
    tool: Final[str | None]
    """Tool name for `tools/call`, else None."""
    tool_effect: Final[ToolEffect]
    """What the tool may do (from `tools/list` annotations); `none` for non-tools."""
    progress_token: Final[str | int | None]
    """`params._meta.progressToken`, if the request asked for progress."""
    revision: Final[Revision | None]
    """Revision in force for this exchange (per request in 2026-07-28)."""
    revision_basis: Final[RevisionBasis]
    """How that revision was established."""
    transport: Final[Transport]
    """The session's transport."""
    vantage: Final[Vantage]
    """Where the recording was made (decides what ordering it can prove)."""
    stream: Final[str | None]
    """HTTP exchange that carried the request; None on stdio."""
    entries: Final[tuple[TimelineEntry, ...]]
    """Everything seen for the request, in source order (bounded; see `TimelineEntry.repeats`)."""
    cancel: Final[CancelInfo | None]
    """The cancel in force, if any; a request can have both a reply and a cancel."""
    verified_by: Final[TimelineEntry | None]
    """For a cancelled side-effecting call: the later read's reply that could have checked the effect."""
    ended_by_recording: Final[bool]
    """True when the timeline was still open when the recording ended (absence rules apply only then)."""
    unrecorded: Final[frozenset[EntryKind]]
    """Entry kinds its recording cannot show (`SessionStart.unrecorded`; a reply recorded but unread adds the
    replies)."""
    reply_unread: Final[bool]
    """A response to it was recorded but could not be read (`Anomaly.reply_unread`), and no reply was read."""
    measured_window: Final[float | None]
    """The race window (seconds) its entries after the cancel were judged with, when the round trips the
    recording itself shows set it above the vantage's default; None when the default or `--race-window` did."""
    session_id: Final[str | None]
    """The id the transport gave its session (`Session.session_id`)."""

    def __init__(
        self,
        session_key: str,
        requester: Side,
        request_id: RequestId,
        method: str,
        tool: str | None,
        tool_effect: ToolEffect,
        progress_token: str | int | None,
        revision: Revision | None,
        revision_basis: RevisionBasis,
        transport: Transport,
        vantage: Vantage,
        stream: str | None,
        entries: tuple[TimelineEntry, ...],
        cancel: CancelInfo | None,
        verified_by: TimelineEntry | None = None,
        ended_by_recording: bool = False,
        unrecorded: frozenset[EntryKind] = frozenset(),
        reply_unread: bool = False,
        measured_window: float | None = None,
        session_id: str | None = None,
    ) -> None:
        self.session_key, self.requester, self.request_id, self.method = session_key, requester, request_id, method
        self.tool, self.tool_effect, self.progress_token, self.revision = tool, tool_effect, progress_token, revision
        self.revision_basis, self.transport, self.vantage, self.stream = revision_basis, transport, vantage, stream
        self.entries, self.cancel, self.verified_by, self.ended_by_recording = (
            entries,
            cancel,
            verified_by,
            ended_by_recording,
        )
        self.unrecorded, self.reply_unread, self.measured_window, self.session_id = (
            unrecorded,
            reply_unread,
            measured_window,
            session_id,
        )

    def __reduce__(self) -> tuple[type[RequestTimeline], tuple[Any, ...]]:
        return RequestTimeline, (
            self.session_key,
            self.requester,
            self.request_id,
            self.method,
            self.tool,
            self.tool_effect,
            self.progress_token,
            self.revision,
            self.revision_basis,
            self.transport,
            self.vantage,
            self.stream,
            self.entries,
            self.cancel,
            self.verified_by,
            self.ended_by_recording,
            self.unrecorded,
            self.reply_unread,
            self.measured_window,
            self.session_id,
        )


@record
class Session:
    """One recorded session between a client and a server, as reconstruction saw it."""

    key: str
    """Unique within the audit."""
    source: str
    """The input it was read from."""
    input_format: str
    """Reader that read it."""
    transport: Transport
    """How the peers talked."""
    vantage: Vantage
    """Where the recording was made."""
    revision: Revision | None
    """The session's revision (2026-07-28 exchanges may each declare their own)."""
    revision_basis: RevisionBasis
    """How the revision was established."""
    label: str | None
    """Human name, e.g. the server name in a host log."""
    client_info: Mapping[str, Any] | None
    """The client's `clientInfo`, if it sent one."""
    server_info: Mapping[str, Any] | None
    """The server's `serverInfo`, if it sent one."""
    tool_effects: Mapping[str, ToolEffect]
    """Tool name -> what `tools/list` annotations say it may do."""
    first_ts: float | None
    """Time of the first timed event."""
    last_ts: float | None
    """Latest time seen."""
    timestamps: bool
    """False when the input had no timestamps at all (ordering only)."""
    timestamps_ordered: bool
    """False when timestamps went backwards somewhere (log time, not wire time)."""
    requests: int
    """Requests seen (both peers)."""
    messages: int
    """Messages placed on the session (both directions)."""
    requests_seen: tuple[bytes, ...] = ()
    """The earliest requests judged, each packed (a digest of who sent it, id, method and params; when; a
    digest of the reply's parsed value, none when none was recorded whole; and when the reply was seen:
    `merge.same_session`), for telling that two inputs hold the same session; not in the report."""
    session_id: str | None = None
    """The id the transport gave the session (`SessionStart.session_id`); None when none was recorded."""
    transport_assumed: bool = False
    """The recording does not say the transport: `transport` is the reader's guess (`SessionStart`)."""
