"""Shared line handling for every text reader: bounded lines, numbering, JSON → events.

Memory stays bounded: a line longer than `max_line_bytes` is skipped while it streams past
(an `input.line-too-long` anomaly), never held whole.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import BinaryIO, TypeVar

from orjson import JSONDecodeError
from orjson import loads as _loads

from ..jsonrpc import EXCERPT_CHARS, _classify_one, decode_text, excerpt
from ..model import (
    Anomaly,
    Direction,
    Event,
    Message,
    MessageEvent,
    MessageKind,
    Origin,
    RequestId,
    SessionStart,
    Side,
    Transport,
    Vantage,
)

T = TypeVar("T")
CHUNK = 1 << 20
DEFAULT_MAX_LINE_BYTES = 16 << 20


@dataclass(frozen=True, slots=True)
class RawLine:
    number: int
    data: bytes
    """The line without its line ending; empty when `too_long`."""
    too_long: int = 0
    """Length in bytes of a line that was skipped for its size, else 0."""
    unterminated: bool = False
    """The last line of the input had no newline (the input may have been cut)."""


def iter_line_batches(
    stream: BinaryIO, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> Iterator[tuple[int, list[bytes | RawLine]]]:
    """The lines of `stream` in batches (one per chunk read): `(number of the first line, items)`.

    An item is the line's bytes (without its line ending), or a `RawLine` for the unusual lines
    (`too_long`, or the `unterminated` last line), which carries its own number. Item `i` of a
    batch is line `first + i`. The fast path for readers that handle millions of lines: no object
    per ordinary line, and the splitting is done in C.
    """
    number = 0  # lines emitted so far
    buf = b""
    skipping = 0  # > 0 while discarding an overlong line: bytes discarded so far
    while True:
        chunk = stream.read(CHUNK)
        if not chunk:
            break
        if skipping:
            nl = chunk.find(b"\n")
            if nl < 0:
                skipping += len(chunk)
                continue
            number += 1
            yield number, [RawLine(number, b"", too_long=skipping + nl)]
            skipping = 0
            chunk = chunk[nl + 1 :]
        data = buf + chunk if buf else chunk
        lines = data.split(b"\n")
        rest = lines.pop()
        buf = b""
        if lines:
            if b"\r" in data:
                lines = [line[:-1] if line.endswith(b"\r") else line for line in lines]
            items: list[bytes | RawLine] = lines  # type: ignore[assignment]  # list is invariant; only read
            if len(data) > max_line_bytes:  # only then can a complete line be over the limit
                items = [
                    RawLine(number + 1 + i, b"", too_long=len(line)) if len(line) > max_line_bytes else line
                    for i, line in enumerate(lines)
                ]
            yield number + 1, items
            number += len(lines)
        if len(rest) > max_line_bytes:
            skipping = len(rest)
        else:
            buf = rest
    if skipping:
        yield number + 1, [RawLine(number + 1, b"", too_long=skipping, unterminated=True)]
    elif buf:
        line = buf[:-1] if buf.endswith(b"\r") else buf
        yield number + 1, [RawLine(number + 1, line, unterminated=True)]


def iter_lines(stream: BinaryIO, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> Iterator[RawLine]:
    for first, items in iter_line_batches(stream, max_line_bytes):
        number = first
        for item in items:
            yield item if isinstance(item, RawLine) else RawLine(number, item)
            number += 1


class EventFactory:
    """Numbers events in source order and turns JSON text into message events or anomalies."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.seq = 0

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def origin(self, line: int) -> Origin:
        return Origin(self.source, line=line)

    def anomaly(
        self,
        line: int,
        ts: float | None,
        session_key: str | None,
        name: str,
        detail: str,
        request_id: RequestId | None = None,
    ) -> Anomaly:
        return Anomaly(self.next_seq(), ts, self.origin(line), session_key, name, detail, request_id)

    def line_problems(self, raw: RawLine, session_key: str | None) -> Iterator[Anomaly]:
        """Anomalies every text format shares: size; the caller skips the line when one is yielded."""
        if raw.too_long:
            yield self.anomaly(
                raw.number,
                None,
                session_key,
                "input.line-too-long",
                f"line of {raw.too_long} bytes skipped (limit {DEFAULT_MAX_LINE_BYTES} bytes)",
            )

    def text_of(self, raw: RawLine, session_key: str | None) -> tuple[str | None, list[Anomaly]]:
        """A line's text, and the anomalies to report for it; no text when the line is skipped (size)."""
        problems = list(self.line_problems(raw, session_key))
        if problems:
            return None, problems
        text, bad_utf8 = self.decode_utf8(raw, None, session_key)
        return text, [bad_utf8] if bad_utf8 is not None else []

    def decode_utf8(self, raw: RawLine, ts: float | None, session_key: str | None) -> tuple[str, Anomaly | None]:
        try:
            return raw.data.decode("utf-8"), None
        except UnicodeDecodeError as exc:
            text = raw.data.decode("utf-8", "replace")
            return text, self.anomaly(
                raw.number,
                ts,
                session_key,
                "input.invalid-utf8",
                f"invalid UTF-8 at byte {exc.start}; decoded with replacement characters",
            )

    def simple_message(
        self, text: str, line: int, ts: float | None, session_key: str, direction: Direction
    ) -> MessageEvent | None:
        """The common case on the hot path: `text` is one valid JSON-RPC object (parsed once).
        None for anything else, which `messages` then handles and names."""
        try:
            value = _loads(text)
        except JSONDecodeError:
            return None
        if value.__class__ is not dict:
            return None
        one = _classify_one(value, text if len(text) <= EXCERPT_CHARS else excerpt(text))
        if one.__class__ is not Message:
            return None
        self.seq += 1
        return MessageEvent(self.seq, ts, Origin(self.source, line), session_key, direction, one)

    def messages(
        self,
        text: str | bytes,
        *,
        line: int,
        ts: float | None,
        session_key: str,
        direction: Direction,
        unterminated: bool = False,
        not_json_name: str = "input.non-json-line",
    ) -> Iterator[Event]:
        """Events for one JSON-RPC text: messages, or anomalies naming what is wrong."""
        if text.__class__ is str:
            event = self.simple_message(text, line, ts, session_key, direction)
            if event is not None:
                yield event
                return
        decoded = decode_text(text)
        if decoded is None:
            shown = text if isinstance(text, str) else text.decode("utf-8", "replace")
            if unterminated:
                yield self.anomaly(
                    line,
                    ts,
                    session_key,
                    "input.truncated-line",
                    f"last line has no newline and is not complete JSON (input cut?): {shown[:80]!r}",
                )
            else:
                yield self.anomaly(line, ts, session_key, not_json_name, f"not JSON: {shown[:120]!r}")
            return
        if decoded.batch:
            yield self.anomaly(
                line,
                ts,
                session_key,
                "jsonrpc.batch",
                f"a JSON array of {len(decoded.messages) + len(decoded.problems)} messages (a batch)",
            )
        for problem in decoded.problems:
            yield self.anomaly(line, ts, session_key, problem.name, problem.detail)
        for message in decoded.messages:
            yield MessageEvent(self.next_seq(), ts, self.origin(line), session_key, direction, message)


# ---------------------------------------------------------------------------------------------
# Helpers shared by the host-log readers (claude_desktop, vscode, gosdk, ndjson)

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

LOOKAHEAD_LINES = 1000
LOOKAHEAD_BYTES = 4 << 20


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


def peek_lines(
    lines: Iterator[RawLine], max_lines: int = LOOKAHEAD_LINES, max_bytes: int = LOOKAHEAD_BYTES
) -> tuple[list[RawLine], Iterator[RawLine]]:
    """The first lines (at most `max_lines`, stopping once `max_bytes` are held) and an iterator
    over all lines again from the first, so a reader can decide something before it streams."""
    head: list[RawLine] = []
    held = 0
    for raw in lines:
        head.append(raw)
        held += len(raw.data)
        if len(head) >= max_lines or held >= max_bytes:
            break
    return head, itertools.chain(head, lines)


def is_initialize_request(text: str) -> bool:
    """True when a JSON text is an `initialize` request (cheap unless the word appears)."""
    if '"initialize"' not in text:
        return False
    decoded = decode_text(text)
    return decoded is not None and any(
        m.kind is MessageKind.REQUEST and m.method == "initialize" for m in decoded.messages
    )


class LogSessions:
    """Session numbering for host logs: one session per group (a server name, or None for a
    one-server log), and a restart opens the group's next session.

    Nothing is emitted until a message needs it: `begin()` yields the group's `SessionStart`
    the first time a message arrives. `restart()` (a host's "Initializing server" line) and an
    `initialize` request in a session that already has messages make the next message open a
    new session. Memory grows with the number of groups, not with messages.
    """

    def __init__(
        self,
        factory: EventFactory,
        source: str,
        input_format: str,
        transport: Transport,
        vantage: Vantage,
        *,
        timestamps: bool = True,
    ) -> None:
        self.factory = factory
        self.source = source
        self.input_format = input_format
        self.transport = transport
        self.vantage = vantage
        self.timestamps = timestamps
        self._state: dict[str | None, tuple[int, bool]] = {}
        self.labels: dict[str | None, str] = {}
        """Display label per group, when the log names the server (else the group itself)."""

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
        if started:
            return
        self._state[group] = (number, True)
        yield SessionStart(
            self.factory.next_seq(),
            ts,
            self.factory.origin(line),
            self.key(group),
            self.transport,
            self.vantage,
            self.input_format,
            label=self.labels.get(group, group),
            timestamps=self.timestamps,
            supersedes=self._key(group, number - 1) if number > 1 else None,
        )
