"""What the host-log readers (claude_desktop, vscode, gosdk, ndjson) share: who sends which
method, which side wrote a one-sided log, and session numbering (`LogSessions`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ...model import (
    Anomaly,
    AnomalyName,
    Direction,
    EntryKind,
    Event,
    Message,
    MessageKind,
    SessionStart,
    Side,
    Transport,
    Vantage,
)
from ...model.jsonrpc import decode_text
from ...model.timestamps import plausible
from ..base import ReadOptions
from ..event_factory import EventFactory
from ..lines import RawLine
from ..source import InputSource

#: Methods only a client sends (requests and notifications), by the MCP method tables.
CLIENT_METHODS = frozenset(
    {
        "initialize",
        "tools/call",
        "tools/list",
        "resources/list",
        "resources/read",
        "resources/templates/list",
        "resources/subscribe",
        "resources/unsubscribe",
        "prompts/list",
        "prompts/get",
        "completion/complete",
        "logging/setLevel",
        "subscriptions/listen",
        "notifications/initialized",
        "notifications/roots/list_changed",
    }
)
#: Methods only a server sends. `notifications/progress` may come from either peer before
#: 2026-07-28, but in practice (and from 2026-07-28 always) it is the server's.
SERVER_METHODS = frozenset(
    {
        "sampling/createMessage",
        "elicitation/create",
        "roots/list",
        "notifications/message",
        "notifications/progress",
        "notifications/resources/updated",
        "notifications/resources/list_changed",
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
        "notifications/elicitation/complete",
        "notifications/subscriptions/acknowledged",
    }
)


MAX_SESSIONS = 10_000
"""Sessions read per input (restarts included). A host runs a few dozen servers a day; past this, a log
of a million server names or restarts would hold a million sessions' state, so the messages of every
later session are left out, each line named (`input.too-many-sessions`, CW932)."""


def too_many_sessions(factory: EventFactory, line: int, key: str) -> Anomaly:
    what = f"session {key} is past the first {MAX_SESSIONS} sessions of this input: its messages are not read"
    return factory.anomaly(line, None, key, AnomalyName.INPUT_TOO_MANY_SESSIONS, what)


def sender_by_shape(message: Message) -> Side | None:
    """Who sends a message of this shape, when its method (or an initialize result) says so."""
    if message.method is not None:
        if message.method in CLIENT_METHODS:
            return Side.CLIENT
        if message.method in SERVER_METHODS:
            return Side.SERVER
        return None
    payload = message.payload
    if message.kind is MessageKind.RESULT and "serverInfo" in payload and "protocolVersion" in payload:
        return Side.SERVER
    return None


def infer_recorder_side(samples: Iterable[tuple[bool, Message]]) -> Side | None:
    """The side that wrote a one-sided log, from `(written_by_recorder, message)` samples.

    An `initialize` request or result decides at once; otherwise the majority of messages whose
    shape names their sender. None when nothing (or a tie) decides.
    """
    votes = {Side.CLIENT: 0, Side.SERVER: 0}
    for written, message in samples:
        sender = sender_by_shape(message)
        if sender is None:
            continue
        side = sender if written else sender.other
        if message.method == "initialize" or message.kind is MessageKind.RESULT:
            return side
        votes[side] += 1
    if votes[Side.CLIENT] == votes[Side.SERVER]:
        return None
    return Side.CLIENT if votes[Side.CLIENT] > votes[Side.SERVER] else Side.SERVER


def direction_of(writer: Side) -> Direction:
    return Direction.C2S if writer is Side.CLIENT else Direction.S2C


def is_initialize_request(text: str) -> bool:
    """True when a JSON text is an `initialize` request (cheap unless the word appears)."""
    if '"initialize"' not in text:
        return False
    decoded = decode_text(text)
    return decoded is not None and any(
        m.kind is MessageKind.REQUEST and m.method == "initialize" for m in decoded.messages
    )


def side_of(vantage: Vantage | None) -> Side | None:
    """The side a `--vantage` names, for logs whose writer's side decides every direction."""
    if vantage is Vantage.CLIENT:
        return Side.CLIENT
    if vantage is Vantage.SERVER:
        return Side.SERVER
    return None


def vantage_of(side: Side) -> Vantage:
    return Vantage.CLIENT if side is Side.CLIENT else Vantage.SERVER


class LogSessions:
    """Session numbering for host logs: one session per group (a server name, or None for a
    one-server log), and a restart opens the group's next session.

    Nothing is emitted until a message needs it: `begin()` yields the group's `SessionStart`
    the first time a message arrives. `restart()` (a host's "Initializing server" line) and an
    `initialize` request in a session that already has messages make the next message open a
    new session. Memory grows with the number of groups, not with messages, and at most
    `MAX_SESSIONS` sessions are read: after `begin`, `refused` says the message's session is past them
    (`begin` then yielded the anomaly, and the caller skips the line). A host log is stdio as
    far as it can tell (VS Code logs HTTP servers' messages the same way) unless its reader knows
    better (`transport`).
    """

    def __init__(
        self,
        source: InputSource,
        input_format: str,
        options: ReadOptions,
        known: Vantage,
        *,
        timestamps: bool = True,
        transport: Transport = Transport.STDIO,
        unrecorded: frozenset[EntryKind] = frozenset(),
    ) -> None:
        self.factory = EventFactory(source.name)
        self.source = source.name
        self.input_format = input_format
        self.vantage = options.session_vantage(known)
        self.timestamps = timestamps
        self.transport = transport
        self.unrecorded = unrecorded
        """Entry kinds the format cannot record (`SessionStart.unrecorded`)."""
        self._state: dict[str | None, tuple[int, bool]] = {}
        self.labels: dict[str | None, str] = {}
        """Display label per group, when the log names the server (else the group itself)."""
        self.transports: dict[str | None, Transport] = {}
        """Transport per group, when the log says it per group (else `transport`)."""
        self.started = 0
        """Sessions begun so far (restarts included)."""
        self.refused = False
        """The last `begin` refused its session (past `MAX_SESSIONS`)."""
        self.note: tuple[AnomalyName, str] | None = None
        """An anomaly (name, detail) the first message read carries, once (`input.side-assumed`)."""

    def key(self, group: str | None) -> str:
        return self._key(group, self._state.get(group, (1, False))[0])

    def _key(self, group: str | None, number: int) -> str:
        return f"{self.source}#{number}" if group is None else f"{self.source}#{group}#{number}"

    def restart(self, group: str | None) -> None:
        number, started = self._state.get(group, (1, False))
        if started:
            self._state[group] = (number + 1, False)

    def begin(self, group: str | None, line: int, ts: float | None, *, initialize: bool = False) -> Iterator[Event]:
        """Call before a message of `group`; yields its session's `SessionStart` when due."""
        if initialize:
            self.restart(group)
        number, started = self._state.get(group, (1, False))
        self.refused = not started and self.started >= MAX_SESSIONS
        if started:
            return
        if self.refused:
            yield too_many_sessions(self.factory, line, self.key(group))
            return
        self.started += 1
        self._state[group] = (number, True)
        yield SessionStart(
            self.factory.next_seq(),
            ts if ts is not None and plausible(ts) else None,  # the message names a bad one
            self.factory.origin(line),
            self.key(group),
            self.transports.get(group, self.transport),
            self.vantage,
            self.input_format,
            label=self.labels.get(group, group),
            timestamps=self.timestamps,
            supersedes=self._key(group, number - 1) if number > 1 else None,
            unrecorded=self.unrecorded,
        )

    def message(
        self,
        group: str | None,
        raw: RawLine,
        ts: float | None,
        payload: str,
        direction: Direction,
        *,
        initialize: bool | None = None,
    ) -> Iterator[Event]:
        """The events of one logged message of GROUP: its session's start when due, the note once, then
        the message (nothing past `MAX_SESSIONS`). INITIALIZE: whether it is an `initialize` request
        (default: as its PAYLOAD looks)."""
        if initialize is None:
            initialize = is_initialize_request(payload)
        yield from self.begin(group, raw.number, ts, initialize=initialize)
        if self.refused:
            return
        key = self.key(group)
        if self.note is not None:
            name, detail = self.note
            self.note = None
            yield self.factory.anomaly(raw.number, ts, key, name, detail)
        yield from self.factory.messages(
            payload, line=raw.number, ts=ts, session_key=key, direction=direction, unterminated=raw.unterminated
        )
