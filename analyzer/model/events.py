"""What readers yield: the events of one input (`Event`), each with its `Origin`.

Ordering is by `seq` (position in the source), never by `ts`: host logs can lack timestamps
(go-sdk) or run backwards (Claude Desktop). Timestamps are float epoch seconds (UTC) or None.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from .anomalies import AnomalyName
from .kinds import Direction, EntryKind, MessageKind, Side, Transport, TransportKind, Vantage
from .records import RequestId, Revision, record


@dataclass(slots=True, init=False, unsafe_hash=True)
class Origin:
    """Where an event was read: a file and either a line (text inputs) or a frame (captures)."""

    source: Final[str]
    """Path of the input as given on the command line."""
    line: Final[int | None]
    """1-based line number in a text input."""
    frame: Final[int | None]
    """Frame number in a capture (what Wireshark shows)."""

    def __init__(
        self,
        source: str,
        line: int | None = None,
        frame: int | None = None,
    ) -> None:
        self.source, self.line, self.frame = source, line, frame

    def __reduce__(self) -> tuple[type[Origin], tuple[Any, ...]]:
        return Origin, (self.source, self.line, self.frame)

    def display(self) -> str:
        if self.frame is not None:
            return f"{self.source}#{self.frame}"
        if self.line is not None:
            return f"{self.source}:{self.line}"
        return self.source


@dataclass(slots=True, init=False, unsafe_hash=True)
class Message:
    """One JSON-RPC message, already classified."""

    kind: Final[MessageKind]
    """Request, notification, result or error."""
    id: Final[RequestId | None]
    """The id; None for notifications and for an error whose request id could not be read."""
    method: Final[str | None]
    """Method of a request or notification; None for results and errors."""
    payload: Final[Mapping[str, Any]]
    """`params` of a request/notification, `result` of a result, `error` of an error."""
    excerpt: Final[str]
    """Bounded raw text for evidence; escaped only at render time."""
    null_id: Final[bool]
    """True when the message carried `"id": null` (a request or a reply that names no request)."""

    def __init__(
        self,
        kind: MessageKind,
        id: RequestId | None,
        method: str | None,
        payload: Mapping[str, Any],
        excerpt: str,
        null_id: bool = False,
    ) -> None:
        self.kind, self.id, self.method, self.payload = kind, id, method, payload
        self.excerpt, self.null_id = excerpt, null_id

    def __reduce__(self) -> tuple[type[Message], tuple[Any, ...]]:
        return Message, (self.kind, self.id, self.method, self.payload, self.excerpt, self.null_id)


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
    transport_assumed: bool = False
    """The recording does not say how the peers talked (an MCP Inspector protocol history): `transport` is the
    reader's guess, and a verdict that the transport decides is not made (see `judge.engine`)."""
    crossed: frozenset[int] = frozenset()
    """Positions (`seq`) of messages a second recording proves crossed their request's cancel in flight:
    the receiver wrote them before it read the cancel, the canceller's side saw them after it sent it
    (`--merge`, merge/crossing.py). They are CROSSING, and EXACT."""
    session_id: str | None = None
    """The id the transport gave the session: its `Mcp-Session-Id`, or a legacy HTTP+SSE endpoint's
    `sessionId`; None on stdio, and when the recording does not show one (it is then keyed otherwise)."""


@dataclass(slots=True, init=False, unsafe_hash=True)
class MessageEvent:
    """One JSON-RPC message as recorded."""

    seq: Final[int]
    """Position in the source (the ordering key)."""
    ts: Final[float | None]
    """Epoch seconds (UTC), if the source has times."""
    origin: Final[Origin]
    """Where it was read."""
    session_key: Final[str]
    """Its session."""
    direction: Final[Direction]
    """Client to server, server to client, or unknown (the reader named that)."""
    message: Final[Message]
    """The classified message."""
    stream: Final[str | None]
    """HTTP exchange (request/response stream) id on captures; None on stdio."""
    revision_hint: Final[Revision | None]
    """`MCP-Protocol-Version` header of the HTTP request that carried or answered this message."""
    crossed: Final[bool]
    """The recording proves its sender wrote it before the peer's close of its stream reached the sender: a
    capture where its TCP acknowledgement does not cover the client's FIN, or it was captured after the
    client's RST (a TCP that has taken a RST has nothing left to send on). CROSSING and EXACT."""

    def __init__(
        self,
        seq: int,
        ts: float | None,
        origin: Origin,
        session_key: str,
        direction: Direction,
        message: Message,
        stream: str | None = None,
        revision_hint: Revision | None = None,
        crossed: bool = False,
    ) -> None:
        self.seq, self.ts, self.origin, self.session_key = seq, ts, origin, session_key
        self.direction, self.message, self.stream, self.revision_hint = direction, message, stream, revision_hint
        self.crossed = crossed

    def __reduce__(self) -> tuple[type[MessageEvent], tuple[Any, ...]]:
        return MessageEvent, (
            self.seq,
            self.ts,
            self.origin,
            self.session_key,
            self.direction,
            self.message,
            self.stream,
            self.revision_hint,
            self.crossed,
        )


@dataclass(slots=True, init=False, unsafe_hash=True)
class TransportEvent:
    """A transport fact (a stream opened, closed or reset; bytes; the recording's end), or a peer library's
    own end of a call for its caller (`GAVE_UP_BY_*`: in a peer's log, never on the wire)."""

    seq: Final[int]
    """Position in the source (the ordering key)."""
    ts: Final[float | None]
    """Epoch seconds (UTC), if the source has times."""
    origin: Final[Origin]
    """Where it was read (a frame, on captures)."""
    session_key: Final[str]
    """Its session."""
    kind: Final[TransportKind]
    """What happened."""
    stream: Final[str | None]
    """HTTP exchange it concerns; None for session-level facts."""
    detail: Final[str]
    """Short evidence text (e.g. the bytes written)."""
    request_id: Final[RequestId | None]
    """The request a `GAVE_UP_BY_*` fact ends for its caller; None for the others."""

    def __init__(
        self,
        seq: int,
        ts: float | None,
        origin: Origin,
        session_key: str,
        kind: TransportKind,
        stream: str | None = None,
        detail: str = "",
        request_id: RequestId | None = None,
    ) -> None:
        self.seq, self.ts, self.origin, self.session_key = seq, ts, origin, session_key
        self.kind, self.stream, self.detail, self.request_id = kind, stream, detail, request_id

    def __reduce__(self) -> tuple[type[TransportEvent], tuple[Any, ...]]:
        return TransportEvent, (
            self.seq,
            self.ts,
            self.origin,
            self.session_key,
            self.kind,
            self.stream,
            self.detail,
            self.request_id,
        )


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
    name: AnomalyName
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
    reply_unread: bool = False
    """The recording holds a response to the client's request `request_id` that could not be read (dropped
    over a budget or a size limit, or cut): its reply may be in it, so silence is no longer proof of none.
    Without a `request_id`: the reader stopped reading where replies come (an over-long line, a client→server
    direction of a connection): every request of `requester` open now (of both peers when None) is judged so."""


Event = SessionStart | MessageEvent | TransportEvent | Anomaly
