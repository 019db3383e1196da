"""Newline-delimited JSON-RPC (`ndjson`), bare or wrapped by a recorder. One record per line:

    {"jsonrpc": "2.0", ...}                              a bare message (or a batch array): no
                                                         direction, no time; both are inferred
    {"ts": 1.5, "dir": "client->server", "msg": {...}}   a two-pipe recorder (a proxy): `dir` is
                                                         "client->server" / "server->client" (or
                                                         "c2s" / "s2c"); `ts` epoch seconds, optional
    {"direction": "send", "message": {...}}             a one-sided recorder: "send" is a message
                                                         (or `dir` for `direction`)
                                                         the recording side wrote, "recv" one it read
                                                         ("sent"/"outgoing", "received"/"incoming"
                                                         too); `ts` optional. `msg`/`message` may
                                                         also be the JSON text as a string.
    {"dir": "recv", "local": true, "message": {...}}     a record the recording side's own library
                                                         made, never on the wire: its error (or
                                                         result) for a request of the side it goes
                                                         to is the call's end for that caller (a
                                                         timeout it gave up on), read as a
                                                         `GAVE_UP_BY_*` fact, not as the peer's reply

Bare messages get their direction per line from their shape: methods only a client sends
(`initialize`, `tools/call`, `notifications/initialized`, …) are client→server, methods only a
server sends (`notifications/progress`, `notifications/message`, `sampling/createMessage`,
`elicitation/create`, `roots/list`, …) server→client; `notifications/cancelled` goes the way of
the request it names, progress the other way from the request that owns its token, and a
response the other way from its request. What stays undecidable (`ping`, unknown methods, a
response to an id both sides have open) is still emitted, with direction `none`, plus an
`input.direction-unknown` anomaly naming the line. The table of open requests is bounded
(`MAX_PENDING`, oldest forgotten first), so memory does not grow with the file.

For "send"/"recv" records the recording side is inferred as for go-sdk logs (first lines only,
`--vantage client|server` overrides, `input.side-assumed` once when nothing decides). The vantage
is that side for such files and `unknown` otherwise (unless `--vantage`). A new `initialize`
request after messages starts the next session (keys `FILE#N`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import orjson

from ...model import Anomaly, AnomalyName, Direction, Event, Message, MessageKind, RequestId, Side, Vantage
from ...model.jsonrpc import classify_text, decode_text
from ...model.transcript_format import HEADER_KEY
from ..base import InputSource, ReadOptions
from ..event_factory import EventFactory
from ..lines import RawLine, peek_lines, source_lines
from .hostlog import (
    LogSessions,
    direction_of,
    infer_recorder_side,
    sender_by_shape,
    side_of,
    vantage_of,
)

MAX_PENDING = 10_000
DIRS = {
    "client->server": Direction.C2S,
    "c2s": Direction.C2S,
    "server->client": Direction.S2C,
    "s2c": Direction.S2C,
}
WRITTEN = {"send": True, "sent": True, "outgoing": True, "recv": False, "received": False, "incoming": False}
_OPPOSITE = {Direction.C2S: Direction.S2C, Direction.S2C: Direction.C2S, Direction.NONE: Direction.NONE}


class NdjsonReader:
    name = "ndjson"

    def sniff(self, head: bytes) -> bool:
        first = next((line.strip() for line in head.split(b"\n") if line.strip()), b"")
        if not first.startswith((b"{", b"[")):
            return False
        try:
            value = orjson.loads(first)
        except orjson.JSONDecodeError:  # the first line may be longer than the head
            start = first[:4096]
            return start.startswith(b"{") and b'"jsonrpc"' in start and HEADER_KEY.encode() not in start
        if isinstance(value, list):
            return bool(value) and all(isinstance(item, dict) and "jsonrpc" in item for item in value)
        return isinstance(value, dict) and _shape(value) is not None and HEADER_KEY not in value

    def read(self, source: InputSource, options: ReadOptions) -> Iterator[Event]:
        head, lines = peek_lines(source_lines(source, options.inflate))
        has_ts, one_sided, side = _look_ahead(head, options.vantage)
        del head
        assumed = one_sided and side is None
        side = side or Side.CLIENT
        known = vantage_of(side) if one_sided else Vantage.UNKNOWN
        sessions = LogSessions(source, self.name, options, known, timestamps=has_ts)
        factory = sessions.factory
        inference = _Directions()
        for raw in lines:
            key = sessions.key(None)
            text, problems = factory.text_of(raw, key)
            yield from problems
            if text is None:
                continue
            if not text.strip():
                continue
            value = _loads(text)
            record = _record(value)
            if record is None:
                record = _Record(text, None, None, None)
                decoded = None if value is _NOT_JSON else classify_text(value, text)
            else:
                decoded = decode_text(record.text)
            if decoded is None:  # not JSON: the factory names it
                yield from factory.messages(
                    record.text,
                    line=raw.number,
                    ts=record.ts,
                    session_key=key,
                    direction=Direction.NONE,
                    unterminated=raw.unterminated,
                )
                continue
            initialize = any(m.kind is MessageKind.REQUEST and m.method == "initialize" for m in decoded.messages)
            started = list(sessions.begin(None, raw.number, record.ts, initialize=initialize))
            if sessions.refused:
                yield from started
                continue
            if started:  # a new session: a new pair of id spaces
                inference = _Directions()
                key = sessions.key(None)
            yield from started
            if assumed and record.written is not None:
                assumed = False
                yield _side_assumed(factory, raw.number, record.ts, key)
            if record.written is not None:
                direction = direction_of(side if record.written else side.other)
            else:
                direction = record.direction or inference.decide(decoded.messages)
            if direction is Direction.NONE and decoded.messages:
                yield _direction_unknown(factory, raw.number, record.ts, key, decoded.messages[0])
            if record.local:
                yield from factory.local_replies(raw.number, record.ts, key, direction, decoded.messages)
                continue
            yield from factory.messages(
                record.text,
                line=raw.number,
                ts=record.ts,
                session_key=key,
                direction=direction,
                unterminated=raw.unterminated,
            )


def _side_assumed(factory: EventFactory, line: int, ts: float | None, key: str) -> Anomaly:
    return factory.anomaly(
        line,
        ts,
        key,
        AnomalyName.INPUT_SIDE_ASSUMED,
        'no record in the first lines shows which side wrote the "send" records; '
        "assumed the client (override with --vantage server)",
    )


def _direction_unknown(factory: EventFactory, line: int, ts: float | None, key: str, first: Message) -> Anomaly:
    what = f"({first.method})" if first.method else f"(id {first.id!r})"
    return factory.anomaly(
        line,
        ts,
        key,
        AnomalyName.INPUT_DIRECTION_UNKNOWN,
        f"cannot tell who sent this {first.kind.value} {what}",
        request_id=first.id,
    )


def _look_ahead(head: list[RawLine], vantage: Vantage | None) -> tuple[bool, bool, Side | None]:
    """From the first lines: any timestamps? any send/recv records? and the recording side."""
    samples: list[tuple[bool, Message]] = []
    has_ts = one_sided = False
    for raw in head:
        record = _record(_loads(raw.data))
        if record is None:
            continue
        has_ts = has_ts or record.ts is not None
        if record.written is not None:
            one_sided = True
            decoded = decode_text(record.text)
            if decoded is not None:
                samples.extend((record.written, message) for message in decoded.messages)
    side = side_of(vantage)
    if side is None and one_sided:
        side = infer_recorder_side(samples)
    return has_ts, one_sided, side


class _Record:
    __slots__ = ("direction", "local", "text", "ts", "written")

    def __init__(
        self,
        text: str | bytes,
        ts: float | None,
        direction: Direction | None,
        written: bool | None,
        local: bool = False,
    ) -> None:
        self.text = text
        self.ts = ts
        self.direction = direction
        """Stated by the record (None: infer from the message)."""
        self.written = written
        """For send/recv records: True when the recording side wrote it."""
        self.local = local
        """`"local": true`: the recording side's own library made it; it was never on the wire."""


def _shape(value: dict[str, Any]) -> str | None:
    if "jsonrpc" in value:
        return "bare"
    if "msg" in value and "dir" in value and "line" not in value:
        return "dir"
    if "message" in value and ("direction" in value or str(value.get("dir")).lower() in WRITTEN):
        return "sendrecv"  # `dir` too: a server-side log, as sample_captures/http/*.server.jsonl
    return None


def _record(value: Any) -> _Record | None:
    """The record a decoded line holds; None when it is no shape we know (read it as bare)."""
    if not isinstance(value, dict):
        return None
    shape = _shape(value)
    if shape in (None, "bare"):
        return None
    ts = value.get("ts", value.get("timestamp"))
    ts = float(ts) if isinstance(ts, int | float) and not isinstance(ts, bool) else None
    inner = value["msg"] if shape == "dir" else value["message"]
    text = inner if isinstance(inner, str) else orjson.dumps(inner)
    local = value.get("local") is True
    if shape == "dir":
        return _Record(text, ts, DIRS.get(str(value["dir"]).lower(), Direction.NONE), None, local)
    written = WRITTEN.get(str(value.get("direction", value.get("dir"))).lower())
    return _Record(text, ts, None if written is not None else Direction.NONE, written, local)


class _Directions:
    """Direction of bare messages from their shapes, with a bounded table of open requests."""

    def __init__(self) -> None:
        self.pending: dict[tuple[Direction, RequestId], str | int | None] = {}
        self.tokens: dict[str | int, Direction] = {}

    def decide(self, messages: Sequence[Message]) -> Direction:
        direction = Direction.NONE
        for message in messages:
            direction = self._one(message)
            if direction is not Direction.NONE:
                break
        for message in messages:
            self._note(message, direction)
        return direction

    def _requester(self, request_id: Any) -> Direction:
        found = [d for d in (Direction.C2S, Direction.S2C, Direction.NONE) if (d, request_id) in self.pending]
        return found[0] if len(found) == 1 else Direction.NONE

    def _one(self, message: Message) -> Direction:
        if message.method == "notifications/cancelled":
            target = message.payload.get("requestId")
            if isinstance(target, str | int) and not isinstance(target, bool):
                return self._requester(target)  # a peer cancels only its own requests
            return Direction.NONE
        if message.method == "notifications/progress":
            token = message.payload.get("progressToken")
            if isinstance(token, str | int) and token in self.tokens:
                return _OPPOSITE[self.tokens[token]]
        if message.kind in (MessageKind.REQUEST, MessageKind.NOTIFICATION):
            side = sender_by_shape(message)
            return direction_of(side) if side is not None else Direction.NONE
        if message.id is None:
            return Direction.NONE
        return _OPPOSITE[self._requester(message.id)]

    def _note(self, message: Message, direction: Direction) -> None:
        if message.id is None:
            return
        if message.kind is MessageKind.REQUEST:
            meta = message.payload.get("_meta")
            token = meta.get("progressToken") if isinstance(meta, dict) else None
            token = token if isinstance(token, str | int) and not isinstance(token, bool) else None
            self.pending[(direction, message.id)] = token
            if token is not None:
                self.tokens[token] = direction
            if len(self.pending) > MAX_PENDING:
                self._forget(next(iter(self.pending)))
        elif direction is not Direction.NONE:
            self._forget((_OPPOSITE[direction], message.id))

    def _forget(self, key: tuple[Direction, RequestId]) -> None:
        token = self.pending.pop(key, None)
        if token is not None and self.tokens.get(token) is key[0]:
            del self.tokens[token]


_NOT_JSON = object()


def _loads(data: bytes | str) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return _NOT_JSON


READER = NdjsonReader()
