"""The data model shared by every stage: events from readers, timelines, findings, outcomes.

Data flows one way: readers yield `Event`s, `reconstruct` turns them into `Session`s and
`RequestTimeline`s, the `engine` turns timelines and anomalies into `Finding`s, `outcomes`
classifies every cancelled call, and `report` renders an `AuditResult`.

Ordering is by `seq` (position in the source), never by `ts`: host logs can lack timestamps
(go-sdk) or run backwards (Claude Desktop). Timestamps are float epoch seconds (UTC) or None.
"""

from __future__ import annotations

import hashlib
import operator
from collections.abc import Mapping
from dataclasses import dataclass, fields
from enum import StrEnum
from typing import Any, TypeVar, dataclass_transform

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


class Direction(StrEnum):
    C2S = "c2s"
    S2C = "s2c"
    NONE = "none"


class Side(StrEnum):
    CLIENT = "client"
    SERVER = "server"

    @property
    def other(self) -> Side:
        return Side.SERVER if self is Side.CLIENT else Side.CLIENT


class Vantage(StrEnum):
    """Where the recording was made; decides what ordering the recording can prove."""

    CLIENT = "client"
    SERVER = "server"
    PROXY = "proxy"
    WIRE = "wire"
    UNKNOWN = "unknown"


class Transport(StrEnum):
    STDIO = "stdio"
    STREAMABLE_HTTP = "streamable-http"
    HTTP_SSE = "http-sse"


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"error": 3, "warning": 2, "info": 1}[self.value]


class Level(StrEnum):
    MUST = "MUST"
    SHOULD = "SHOULD"
    MAY = "MAY"


class Certainty(StrEnum):
    EXACT = "exact"
    INFERRED = "inferred"


class Outcome(StrEnum):
    CLEAN = "clean"
    LATE_RESULT_DISCARDED = "late-result-discarded"
    LATE_RESULT_VIOLATION = "late-result-violation"
    OUTCOME_UNVERIFIED = "outcome-unverified"
    VERIFIED_BY_READ = "verified-by-read"


class MessageKind(StrEnum):
    REQUEST = "request"
    NOTIFICATION = "notification"
    RESULT = "result"
    ERROR = "error"


class TransportKind(StrEnum):
    """Transport facts a capture (or a process recorder) can see, per HTTP exchange or process."""

    STREAM_OPENED = "stream-opened"
    CLOSED_BY_CLIENT = "closed-by-client"
    CLOSED_BY_SERVER = "closed-by-server"
    RESET_BY_CLIENT = "reset-by-client"
    RESET_BY_SERVER = "reset-by-server"
    RECEIVE_WINDOW_ZERO = "receive-window-zero"
    SERVER_BYTES = "server-bytes"
    PROCESS_EXITED = "process-exited"
    RECORDING_ENDED = "recording-ended"


class CancelMechanism(StrEnum):
    NOTIFICATION = "notification"
    DISCONNECT = "disconnect"


class RevisionBasis(StrEnum):
    NEGOTIATED = "negotiated"
    DECLARED = "declared"
    OVERRIDDEN = "overridden"
    ASSUMED = "assumed"


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
    ts: float | None
    origin: Origin
    session_key: str
    transport: Transport
    vantage: Vantage
    input_format: str
    label: str | None = None
    """Human name, e.g. the server name in a host log."""
    revision: Revision | None = None
    """A revision declared by the recording itself (transcript header), if any."""
    timestamps: bool = True
    """False when the format carries no timestamps (go-sdk): ordering only."""
    supersedes: str | None = None
    """Key of the session this one replaces (the same server restarted, in a host log): it has ended."""


@record
class MessageEvent:
    seq: int
    ts: float | None
    origin: Origin
    session_key: str
    direction: Direction
    message: Message
    stream: str | None = None
    """HTTP exchange (request/response stream) id on captures; None on stdio."""
    revision_hint: Revision | None = None
    """`MCP-Protocol-Version` header of the HTTP request that carried or answered this message."""


@record
class TransportEvent:
    seq: int
    ts: float | None
    origin: Origin
    session_key: str
    kind: TransportKind
    stream: str | None = None
    detail: str = ""


@record
class Anomaly:
    """A named problem found by a reader or by reconstruction; a catalogue rule gives it meaning."""

    seq: int
    ts: float | None
    origin: Origin
    session_key: str | None
    name: str
    """Stable dotted name, e.g. `input.non-json-line`; every name has a rule in `rules/`."""
    detail: str
    request_id: RequestId | None = None
    method: str | None = None
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


class EntryKind(StrEnum):
    REQUEST = "request"
    PROGRESS = "progress"
    RELATED_MESSAGE = "related-message"
    """A message tied to the request other than progress or its reply (a log, a server request)."""
    RESULT = "result"
    ERROR_RESULT = "error-result"
    CANCEL = "cancel"
    STREAM_OPENED = "stream-opened"
    STREAM_CLOSED_BY_CLIENT = "stream-closed-by-client"
    STREAM_CLOSED_BY_SERVER = "stream-closed-by-server"
    STREAM_RESET_BY_CLIENT = "stream-reset-by-client"
    STREAM_RESET_BY_SERVER = "stream-reset-by-server"
    RECEIVE_WINDOW_ZERO = "receive-window-zero"
    SERVER_BYTES = "server-bytes"
    RECORDING_ENDED = "recording-ended"


class Relation(StrEnum):
    """Where an entry stands relative to the cancel, decided once in reconstruction."""

    BEFORE = "before"
    CROSSING = "crossing"
    """It may have left before the cancel reached its receiver (a race)."""
    AFTER = "after"
    """It left after the cancel reached its receiver."""


@record
class TimelineEntry:
    kind: EntryKind
    side: Side | None
    """Who sent it; None for recording-level entries."""
    seq: int
    ts: float | None
    origin: Origin
    stream: str | None = None
    method: str | None = None
    relation: Relation | None = None
    """Relative to the timeline's cancel; None when the request was not cancelled."""
    certainty: Certainty = Certainty.EXACT
    """How sure `relation` is: EXACT from an ordering proof or the vantage, INFERRED from timing."""
    excerpt: str = ""
    repeats: int = 1
    """How many messages or events this entry stands for. Past a request's entry limit, like entries
    (same kind, side, relation and certainty) are counted in one entry: its origin and time are the
    first one's, and the others may interleave with later entries."""


@record
class CancelInfo:
    mechanism: CancelMechanism
    entry: TimelineEntry
    """The cancel itself (the notification, or the client's close/reset of the stream)."""
    reason: str | None = None


@record
class RequestTimeline:
    """Everything seen for one request, in source order.

    A timeline can have both a result and a cancel; which came first is in `entries` order and each
    entry's `relation`.
    """

    session_key: str
    requester: Side
    request_id: RequestId
    method: str
    tool: str | None
    """Tool name for `tools/call`, else None."""
    tool_effect: str
    """`read-only`, `side-effecting` or `unknown` (from `tools/list` annotations); `none` for non-tools."""
    progress_token: str | int | None
    revision: Revision | None
    """Revision in force for this exchange (per request in 2026-07-28)."""
    revision_basis: RevisionBasis
    transport: Transport
    vantage: Vantage
    stream: str | None
    entries: tuple[TimelineEntry, ...]
    cancel: CancelInfo | None
    verified_by: TimelineEntry | None = None
    """For a cancelled side-effecting call: the later read's reply that could have checked the effect."""
    ended_by_recording: bool = False
    """True when the timeline was still open when the recording ended (absence rules apply only then)."""


@record
class Session:
    key: str
    source: str
    input_format: str
    transport: Transport
    vantage: Vantage
    revision: Revision | None
    revision_basis: RevisionBasis
    label: str | None
    client_info: Mapping[str, Any] | None
    server_info: Mapping[str, Any] | None
    tool_effects: Mapping[str, str]
    first_ts: float | None
    last_ts: float | None
    timestamps: bool
    """False when the input had no timestamps at all (ordering only)."""
    timestamps_ordered: bool
    """False when timestamps went backwards somewhere (log time, not wire time)."""
    requests: int
    messages: int


@record
class Finding:
    rule_id: str
    rule: str
    rule_rev: int
    severity: Severity
    certainty: Certainty
    session_key: str | None
    request_id: RequestId | None
    method: str | None
    ts: float | None
    message: str
    evidence: tuple[Origin, ...]
    """The first origins that prove it, bounded; `more_evidence` counts the rest."""
    revision: Revision | None
    level: Level | None = None
    more_evidence: int = 0
    tool: str | None = None
    """Tool name when the finding is about a `tools/call` (baseline fingerprints use it)."""

    @property
    def fingerprint(self) -> str:
        """Stable across runs and versions (no timestamps), for baselines."""
        key = "\x1f".join([self.rule_id, self.session_key or "", repr(self.request_id), self.method or ""])
        return hashlib.sha256(key.encode()).hexdigest()[:16]


@record
class CancelledCall:
    session_key: str
    request_id: RequestId
    method: str
    tool: str | None
    mechanism: CancelMechanism
    outcome: Outcome
    certainty: Certainty
    explanation: str
    """One sentence saying why this outcome (which annotation or read it relied on)."""
    evidence: tuple[Origin, ...]
    verified_by: Origin | None = None
    timeline: RequestTimeline | None = None
