"""The data model shared by every stage: events from readers, timelines, findings, outcomes.

Data flows one way: readers yield `Event`s, `reconstruct` turns them into `Session`s and
`RequestTimeline`s, the `engine` turns timelines and anomalies into `Finding`s, `outcomes`
classifies every cancelled call, and `report` renders an `AuditResult`.

Ordering is by `seq` (position in the source), never by `ts`: host logs can lack timestamps
(go-sdk) or run backwards (Claude Desktop). Timestamps are float epoch seconds (UTC) or None.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, TypeVar, dataclass_transform

# The closed sets live in `kinds`; every stage imports them from here, with the records.
from .kinds import (
    CancelMechanism,
    Certainty,
    Direction,
    EntryKind,
    Level,
    MessageKind,
    Outcome,
    Relation,
    RevisionBasis,
    Severity,
    Side,
    ToolEffect,
    Transport,
    TransportKind,
    Vantage,
)

__all__ = [
    "REVISIONS",
    "Anomaly",
    "CancelInfo",
    "CancelMechanism",
    "CancelledCall",
    "Certainty",
    "Direction",
    "EntryKind",
    "Event",
    "Finding",
    "Level",
    "Mark",
    "Message",
    "MessageEvent",
    "MessageKind",
    "Origin",
    "Outcome",
    "Relation",
    "RequestId",
    "RequestTimeline",
    "Revision",
    "RevisionBasis",
    "Session",
    "SessionStart",
    "Severity",
    "Side",
    "TimelineEntry",
    "ToolEffect",
    "Transport",
    "TransportEvent",
    "TransportKind",
    "Vantage",
    "record",
]

RequestId = int | str
Revision = str

T = TypeVar("T")


@dataclass_transform(frozen_default=True)
def record(cls: type[T]) -> type[T]:
    """A slotted dataclass that mypy treats as frozen (assigning a field is a type error).

    Not frozen at run time: a frozen dataclass sets each field through `object.__setattr__`, which
    makes building one about three times slower (Message: 300 -> 115 ns), and the pipeline builds
    several per message. `mypy --strict` (run by the test suite) keeps the records immutable;
    `unsafe_hash` keeps them hashable by value, as frozen ones are. They pickle as (class, field
    values), which reads back about 3x faster than slot by slot (cancelled calls are spooled to disk).
    """
    built = dataclass(slots=True, unsafe_hash=True)(cls)
    values = operator.attrgetter(*(f.name for f in fields(built)))  # type: ignore[arg-type]

    def reduce(self: T) -> tuple[type[T], tuple[Any, ...]]:
        return (built, values(self))

    built.__reduce__ = reduce  # type: ignore[assignment,method-assign]
    return built


#: Protocol revisions we know, oldest first.
REVISIONS: tuple[Revision, ...] = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")


@record
class Origin:
    """Where an event was read: a file and either a line (text inputs) or a frame (captures)."""

    source: str
    """Path of the input as given on the command line."""
    line: int | None = None
    """1-based line number in a text input."""
    frame: int | None = None
    """Frame number in a capture (what Wireshark shows)."""

    def display(self) -> str:
        if self.frame is not None:
            return f"{self.source}#{self.frame}"
        if self.line is not None:
            return f"{self.source}:{self.line}"
        return self.source


@record
class Message:
    """One JSON-RPC message, already classified."""

    kind: MessageKind
    """Request, notification, result or error."""
    id: RequestId | None
    """The id; None for notifications and for an error whose request id could not be read."""
    method: str | None
    """Method of a request or notification; None for results and errors."""
    payload: Mapping[str, Any]
    """`params` of a request/notification, `result` of a result, `error` of an error."""
    excerpt: str
    """Bounded raw text for evidence; escaped only at render time."""
    null_id: bool = False
    """True when the message carried `"id": null` (a request or a reply that names no request)."""


@record
class SessionStart:
    """A reader saying what it knows about a session before (or when) its first message arrives.

    Readers that cannot tell leave fields None; reconstruction infers or assumes them.
    """

    seq: int
    """Position in the source (the ordering key)."""
    ts: float | None
    """Epoch seconds (UTC), if the source has times."""
    origin: Origin
    """Where the session's first trace was read."""
    session_key: str
    """Key shared by every event of the session."""
    transport: Transport
    """How the peers talked."""
    vantage: Vantage
    """Where the recording was made."""
    input_format: str
    """Reader that read it."""
    label: str | None = None
    """Human name, e.g. the server name in a host log."""
    revision: Revision | None = None
    """A revision declared by the recording itself (transcript header), if any."""
    timestamps: bool = True
    """False when the format carries no timestamps (go-sdk): ordering only."""
    supersedes: str | None = None
    """Key of the session this one replaces (the same server restarted, in a host log): it has ended."""
    unrecorded: frozenset[EntryKind] = frozenset()
    """Timeline entry kinds the format cannot record (a HAR keeps no stream resets): rules whose
    condition names one are not judged on the session, and the report says so."""
    crossed: frozenset[int] = frozenset()
    """Positions (`seq`) of messages a second recording proves crossed their request's cancel in flight:
    the receiver wrote them before it read the cancel, the canceller's side saw them after it sent it
    (`--merge`, merged_crossing.py). They are CROSSING, and EXACT."""


@record
class MessageEvent:
    """One JSON-RPC message as recorded."""

    seq: int
    """Position in the source (the ordering key)."""
    ts: float | None
    """Epoch seconds (UTC), if the source has times."""
    origin: Origin
    """Where it was read."""
    session_key: str
    """Its session."""
    direction: Direction
    """Client to server, server to client, or unknown (the reader named that)."""
    message: Message
    """The classified message."""
    stream: str | None = None
    """HTTP exchange (request/response stream) id on captures; None on stdio."""
    revision_hint: Revision | None = None
    """`MCP-Protocol-Version` header of the HTTP request that carried or answered this message."""


@record
class TransportEvent:
    """A transport fact (a stream opened, closed or reset; bytes; the recording's end)."""

    seq: int
    """Position in the source (the ordering key)."""
    ts: float | None
    """Epoch seconds (UTC), if the source has times."""
    origin: Origin
    """Where it was read (a frame, on captures)."""
    session_key: str
    """Its session."""
    kind: TransportKind
    """What happened."""
    stream: str | None = None
    """HTTP exchange it concerns; None for session-level facts."""
    detail: str = ""
    """Short evidence text (e.g. the bytes written)."""


@record
class Anomaly:
    """A named problem found by a reader or by reconstruction; a catalogue rule gives it meaning."""

    seq: int
    """Position in the source (the ordering key)."""
    ts: float | None
    """Epoch seconds (UTC), if known."""
    origin: Origin
    """Where the problem was seen."""
    session_key: str | None
    """Its session; None for problems of the input as a whole."""
    name: str
    """Stable dotted name, e.g. `input.non-json-line`; every name has a rule in `rules/`."""
    detail: str
    """What exactly is wrong, for the finding's message."""
    request_id: RequestId | None = None
    """The request it concerns, if any."""
    method: str | None = None
    """That request's method, if known."""
    revision: Revision | None = None
    """Filled by reconstruction: the revision in force in the anomaly's session, if known."""
    transport: Transport | None = None
    """Filled by reconstruction from the anomaly's session."""
    gap: float | None = None
    """Seconds between the two events an anomaly relates (e.g. a reply and a late cancel), if known."""
    requester: Side | None = None
    """Whose id space `request_id` is in (the two peers number their requests separately)."""


Event = SessionStart | MessageEvent | TransportEvent | Anomaly


# ---------------------------------------------------------------------------------------------
# Reconstruction output


@record
class TimelineEntry:
    """One message or transport fact on a request's timeline."""

    kind: EntryKind
    """What it is."""
    side: Side | None
    """Who sent it; None for recording-level entries."""
    seq: int
    """Position in the source (the ordering key)."""
    ts: float | None
    """Epoch seconds (UTC), if the source has times."""
    origin: Origin
    """Where it was read (the evidence)."""
    stream: str | None = None
    """HTTP exchange that carried it; None on stdio."""
    method: str | None = None
    """Method of a message entry (a verifying read: the read's tool); None for replies and transport facts."""
    relation: Relation | None = None
    """Relative to the timeline's cancel; None when the request was not cancelled."""
    certainty: Certainty = Certainty.EXACT
    """How sure `relation` is: EXACT from an ordering proof or the vantage, INFERRED from timing."""
    excerpt: str = ""
    """Bounded raw text of the message, for evidence."""
    repeats: int = 1
    """How many messages or events this entry stands for. Past a request's entry limit, like entries
    (same kind, side, relation and certainty) are counted in one entry: its origin and time are the
    first one's, and the others may interleave with later entries."""
    status: str | None = None
    """What a task entry reports: the task's status (`cancelled`, `completed`, ...; None for an empty
    acknowledgement), `result` for a `tasks/result` answered with content, `empty result` for one answered
    with nothing but `_meta`, or `error CODE`."""


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


@record
class RequestTimeline:
    """Everything seen for one request, in source order.

    A timeline can have both a result and a cancel; which came first is in `entries` order and each
    entry's `relation`.
    """

    session_key: str
    """Its session."""
    requester: Side
    """Who sent the request (the two peers number their requests separately)."""
    request_id: RequestId
    """The request's id, in the requester's id space."""
    method: str
    """The request's method."""
    tool: str | None
    """Tool name for `tools/call`, else None."""
    tool_effect: ToolEffect
    """What the tool may do (from `tools/list` annotations); `none` for non-tools."""
    progress_token: str | int | None
    """`params._meta.progressToken`, if the request asked for progress."""
    revision: Revision | None
    """Revision in force for this exchange (per request in 2026-07-28)."""
    revision_basis: RevisionBasis
    """How that revision was established."""
    transport: Transport
    """The session's transport."""
    vantage: Vantage
    """Where the recording was made (decides what ordering it can prove)."""
    stream: str | None
    """HTTP exchange that carried the request; None on stdio."""
    entries: tuple[TimelineEntry, ...]
    """Everything seen for the request, in source order (bounded; see `TimelineEntry.repeats`)."""
    cancel: CancelInfo | None
    """The cancel in force, if any; a request can have both a reply and a cancel."""
    verified_by: TimelineEntry | None = None
    """For a cancelled side-effecting call: the later read's reply that could have checked the effect."""
    ended_by_recording: bool = False
    """True when the timeline was still open when the recording ended (absence rules apply only then)."""
    unrecorded: frozenset[EntryKind] = frozenset()
    """Entry kinds its recording cannot show (`SessionStart.unrecorded`)."""


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
    requests_seen: tuple[tuple[str, float | None], ...] = ()
    """The earliest requests judged (a key of who sent it, id, method and params; and when), for telling
    that two inputs hold the same session (`same_session`); not in the report."""


@record
class Finding:
    """One rule's verdict on one request (or session, or input)."""

    rule_id: str
    """Stable id, e.g. `CW101`."""
    rule: str
    """The rule's slug, e.g. `response-after-cancel`."""
    rule_rev: int
    """The rule's revision number (bumped when its condition or severity changes)."""
    severity: Severity
    """From the rule's level under the revision in force."""
    certainty: Certainty
    """EXACT when the order is proven; INFERRED when it leans on timing."""
    session_key: str | None
    """Its session; None for input-level problems."""
    request_id: RequestId | None
    """The request it concerns, if any."""
    method: str | None
    """That request's method, if known."""
    ts: float | None
    """Time of the first event that proves it."""
    message: str
    """The rendered finding text."""
    evidence: tuple[Origin, ...]
    """The first origins that prove it, bounded; `more_evidence` counts the rest."""
    revision: Revision | None
    """Revision the rule was judged under."""
    level: Level | None = None
    """The spec level (MUST/SHOULD/MAY) the rule has under that revision."""
    more_evidence: int = 0
    """Origins that prove it beyond those in `evidence`."""
    tool: str | None = None
    """Tool name when the finding is about a `tools/call` (baseline fingerprints use it)."""
    streams: tuple[str, ...] = ()
    """The HTTP exchanges that carried the evidence (`tcp3/0`, `tcp3/h2s5`), for the Wireshark filter."""


@record
class Mark:
    """A finding about one entry of a cancelled call's timeline (its diagram marks the message with it)."""

    seq: int
    """The entry's `seq`."""
    kind: EntryKind
    """The entry's kind (a packet's bytes and the message they carried share a `seq`)."""
    rule_id: str
    """The rule's id, e.g. `CW101`."""
    rule: str
    """The rule's slug."""
    severity: Severity
    """The finding's severity."""
    certainty: Certainty
    """The finding's certainty."""


@record
class CancelledCall:
    """What became of one cancelled request, as far as the recording can tell."""

    session_key: str
    """Its session."""
    request_id: RequestId
    """The cancelled request's id."""
    method: str
    """The cancelled request's method."""
    tool: str | None
    """Tool name for `tools/call`, else None."""
    mechanism: CancelMechanism
    """How it was cancelled."""
    outcome: Outcome
    """The verdict."""
    certainty: Certainty
    """EXACT when the recording proves the order (or the end of the recording proves silence)."""
    explanation: str
    """One sentence saying why this outcome (which annotation or read it relied on)."""
    evidence: tuple[Origin, ...]
    """The cancel, and the reply or the verifying read when there is one."""
    verified_by: Origin | None = None
    """The later read that could have checked the effect (`verified-by-read`)."""
    timeline: RequestTimeline | None = None
    """The request plus the entries around its cancel (bounded), for the report."""
    left_out: tuple[int, int] = (0, 0)
    """Messages of the request not kept in `timeline`, before and after the kept entries."""
    marks: tuple[Mark, ...] = ()
    """The findings on entries of `timeline`, in finding order (for its diagram)."""
