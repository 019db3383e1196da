"""The closed sets of the data model (`StrEnum`s): directions, sides, vantages, severities, outcomes,
message and entry kinds. `model` holds the records built from them and re-exports these, so every stage
imports both from `model`."""

from __future__ import annotations

from enum import StrEnum


class Direction(StrEnum):
    C2S = "c2s"
    S2C = "s2c"
    NONE = "none"


class Side(StrEnum):
    CLIENT = "client"
    SERVER = "server"

    @property
    def other(self) -> Side:
        return _OTHER_SIDE[self]


_OTHER_SIDE = {Side.CLIENT: Side.SERVER, Side.SERVER: Side.CLIENT}
"""A dict, not `Side.SERVER if ...`: on Python 3.11 reading a member off its class runs `EnumType.__getattr__`'s
hook (about 150 ns), and `other` is read for every reply and every rule's side check."""


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
    """Transport facts a capture (or a process recorder) can see, per HTTP exchange or process, and the
    one fact a peer's own log adds that no wire carries: its library gave the caller up on a request."""

    STREAM_OPENED = "stream-opened"
    CLOSED_BY_CLIENT = "closed-by-client"
    CLOSED_BY_SERVER = "closed-by-server"
    RESET_BY_CLIENT = "reset-by-client"
    RESET_BY_SERVER = "reset-by-server"
    RECEIVE_WINDOW_ZERO = "receive-window-zero"
    SERVER_BYTES = "server-bytes"
    PROCESS_EXITED = "process-exited"
    RECORDING_ENDED = "recording-ended"
    GAVE_UP_BY_CLIENT = "gave-up-by-client"
    """The client's library ended a call for its caller (a timeout error it made itself, `"local": true` in
    its log); `TransportEvent.request_id` names the call. Nothing was sent."""
    GAVE_UP_BY_SERVER = "gave-up-by-server"
    """The same for a request the server sent (sampling, elicitation, roots)."""
    REPLIES_UNREAD = "replies-unread"
    """The reader no longer reads the server→client direction the exchange's replies come on (a TCP gap the
    peer's ACK covers, an unparsable response, an HTTP/2 flood or malformed frame): its replies and the server's
    end of its stream may be in the recording, unread. No timeline entry: its requests are judged as with
    `Anomaly.reply_unread`. With no stream: every open client request of the session (an HTTP+SSE session,
    whose replies all come on its GET stream)."""


class CancelMechanism(StrEnum):
    NOTIFICATION = "notification"
    DISCONNECT = "disconnect"
    TASKS_CANCEL = "tasks-cancel"
    """A `tasks/cancel` request for the task a task-augmented request created (its only cancel)."""


class RevisionBasis(StrEnum):
    """How the revision in force was established."""

    NEGOTIATED = "negotiated"
    """From the initialize result's `protocolVersion`."""
    DECLARED = "declared"
    """Declared by the recording (transcript header) or the request (`_meta`, version header)."""
    OVERRIDDEN = "overridden"
    """`--protocol` on the command line."""
    ASSUMED = "assumed"
    """Nothing said: no revision-specific rule applies."""


class ToolEffect(StrEnum):
    """What a tool may do, from its `tools/list` annotations (hints are the server's claim)."""

    READ_ONLY = "read-only"
    """`readOnlyHint: true`."""
    SIDE_EFFECTING = "side-effecting"
    """Annotated, but not read-only."""
    UNKNOWN = "unknown"
    """No annotations (or a tool `tools/list` never named): possibly destructive."""
    NONE = "none"
    """Not a tool call."""


class EntryKind(StrEnum):
    """What a timeline entry is; the vocabulary of rule selectors (`event = ...`)."""

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
    GAVE_UP = "gave-up"
    """The requester's own library ended the call for its caller (a local timeout error): the call's end
    for the caller, never on the wire; the receiver may still work and answer."""
    CANCEL_ANSWER = "cancel-answer"
    """The receiver's answer to a `tasks/cancel` of the request's task (`TimelineEntry.status` says what)."""
    TASK_STATUS = "task-status"
    """The task's status as its receiver reported it (a `tasks/get` result, `notifications/tasks/status`),
    or an answer to `tasks/get` or `tasks/result` that delivers no result: an error, or a result with
    nothing but `_meta` (`TimelineEntry.status` says which)."""
    TASK_RESULT = "task-result"
    """`tasks/result` answered with a result that has content: the request's own result, delivered."""


#: What a recording of HTTP messages rather than of TCP (a HAR, a proxy's or a client's own log) cannot show.
TCP_ONLY_KINDS = frozenset(
    {
        EntryKind.STREAM_RESET_BY_CLIENT,
        EntryKind.STREAM_RESET_BY_SERVER,
        EntryKind.RECEIVE_WINDOW_ZERO,
        EntryKind.SERVER_BYTES,
    }
)
#: The transport's own entries: streams opened, closed and reset, and what TCP shows besides.
TRANSPORT_KINDS = TCP_ONLY_KINDS | {
    EntryKind.STREAM_OPENED,
    EntryKind.STREAM_CLOSED_BY_CLIENT,
    EntryKind.STREAM_CLOSED_BY_SERVER,
}


class Relation(StrEnum):
    """Where an entry stands relative to the cancel, decided once in reconstruction."""

    BEFORE = "before"
    CROSSING = "crossing"
    """It may have left before the cancel reached its receiver (a race)."""
    AFTER = "after"
    """It left after the cancel reached its receiver."""
