"""What readers yield: the events of one input (`Event`), each with its `Origin`.

Ordering is by `seq` (position in the source), never by `ts`: host logs can lack timestamps
(go-sdk) or run backwards (Claude Desktop). Timestamps are float epoch seconds (UTC) or None.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .anomalies import AnomalyName
from .kinds import Direction, EntryKind, MessageKind, Side, Transport, TransportKind, Vantage
from .records import RequestId, Revision, record


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
    crossed: bool = False
    """The recording proves its sender wrote it before the peer's close of its stream reached the sender: a
    capture where its TCP acknowledgement does not cover the client's FIN, or it was captured after the
    client's RST (a TCP that has taken a RST has nothing left to send on). CROSSING and EXACT."""


@record
class TransportEvent:
    """A transport fact (a stream opened, closed or reset; bytes; the recording's end), or a peer library's
    own end of a call for its caller (`GAVE_UP_BY_*`: in a peer's log, never on the wire)."""

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
    request_id: RequestId | None = None
    """The request a `GAVE_UP_BY_*` fact ends for its caller; None for the others."""


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
