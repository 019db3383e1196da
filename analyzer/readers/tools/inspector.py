"""MCP Inspector exports (`inspector`): the Protocol and Network panes' "Export" files of the Inspector 2.x.

Both are one JSON array, `JSON.stringify(entries, null, 2)` (clients/web in @modelcontextprotocol/inspector
2.12.0, read from its npm package):

* the **protocol history**: one entry per message the Inspector's client sent or received,
  `{"id", "timestamp": ISO 8601, "direction": "request"|"response"|"notification", "origin": "client"|"server",
  "message": {...}}`; a request's reply is folded into the request's entry as `"response": {...}` with
  `"duration"` (ms from the request to the reply), and a request the client gave up on (a timeout, an
  abort) carries `"clientError"` and the `"duration"` to that moment; a reply that matched no pending
  request is its own `response` entry;
* the **network log**: one entry per HTTP fetch the client made (`readers/tools/inspector_network.py`).

The Inspector is the client: the vantage is the client's. Each entry's evidence is the line it starts on
(each starts on a line of its own in the Inspector's pretty-printed files, else line 1). Events are put
in time order (a reply folded into its request's entry comes at the request's time plus its duration).
An export is at most 1,000 messages (the Inspector's cap) and read whole, up to `MAX_EXPORT_BYTES`.

What a protocol history cannot show (`FRAMES_ONLY`, not judged): any stream or process event, and the
transport (read as stdio, `transport_assumed`: the export does not say; the network log of an HTTP session
says more). So a call the client gave up on with no `notifications/cancelled` is CW507 up to 2025-11-25,
where the notification is the cancel on every transport, and not judged in 2026-07-28, where it is the
cancel on stdio only: on Streamable HTTP the client cancels by closing the request's stream (the SDK client
under the Inspector sends no notification there), which a history never shows.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ...errors import InputError
from ...model import (
    AnomalyName,
    Direction,
    Event,
    Origin,
    SessionStart,
    Transport,
    TransportEvent,
    TransportKind,
    Vantage,
)
from ...model.jsonrpc import dumps, loads_any
from ..base import InputSource, ReadOptions
from ..event_factory import EventFactory
from ..source import read_up_to
from . import inspector_network
from .mcpsnoop import UNRECORDED as FRAMES_ONLY
from .timing import Make, Timed, Unreadable, later, timestamp

MAX_EXPORT_BYTES = 64 << 20
"""An export larger than this is refused: the Inspector keeps at most 1,000 messages of at most 64 KiB."""
_SNIFF = re.compile(
    rb'\A\s*\[\s*\{\s*"id"\s*:\s*"[^"\\]{0,200}"\s*,\s*"timestamp"\s*:\s*"[^"\\]{0,64}"\s*,\s*"(?:direction|method)"'
)
_ENTRY_START = re.compile(rb"\n  \{\n")
"""Where an entry starts in the Inspector's pretty-printed files (`JSON.stringify(entries, null, 2)`)."""
_FROM = {"client": Direction.C2S, "server": Direction.S2C}
_OTHER = {Direction.C2S: Direction.S2C, Direction.S2C: Direction.C2S}


class InspectorReader:
    name = "inspector"

    def sniff(self, head: bytes) -> bool:
        return _SNIFF.match(head) is not None

    def read(self, source: InputSource, options: ReadOptions) -> Iterator[Event]:
        entries, lines = _load(source, options)
        factory = EventFactory(source.name)
        vantage = options.session_vantage(Vantage.CLIENT)
        first = next((entry for entry in entries if isinstance(entry, dict)), None)
        if first is not None and "url" in first:
            yield from inspector_network.events(entries, lines, factory, vantage, Timed())
            return
        history = _History(factory, vantage)
        for index, entry in enumerate(entries):
            history.entry(index, lines[index] if index < len(lines) else 1, entry)
        yield from history.finish()


def _load(source: InputSource, options: ReadOptions) -> tuple[list[Any], list[int]]:
    """The export's entries and the line each starts on. A damaged export the Inspector pretty-printed is read
    entry by entry: an entry that is not JSON becomes an `Unreadable` (named), the others are read."""
    with source.open_binary(options.inflate) as stream:
        data = read_up_to(stream, MAX_EXPORT_BYTES + 1, source.name)
        problem = stream.problem
    hint = "export it again from the Inspector's Protocol or Network pane"
    if len(data) > MAX_EXPORT_BYTES:
        raise InputError(source.name, f"an Inspector export larger than {MAX_EXPORT_BYTES >> 20} MiB: not read", hint)
    starts = [m.start() + 1 for m in _ENTRY_START.finditer(data)]
    lines = [data.count(b"\n", 0, at) + 1 for at in starts]
    ok, value = loads_any(data)
    if ok and isinstance(value, list):
        return value, lines if len(lines) == len(value) else [1] * len(value)
    if not starts:
        why = f" ({problem.detail})" if problem is not None else ""
        raise InputError(source.name, f"not a readable Inspector export: not a whole JSON array{why}", hint)
    entries: list[Any] = []
    if data[: starts[0]].strip() not in (b"[", b""):  # the first entry's start is damaged
        entries.append(Unreadable(f"not JSON (the export is damaged or cut): {data[: starts[0]][:60]!r}"))
        lines.insert(0, 1)
    for start, end in zip(starts, [*starts[1:], len(data)], strict=True):
        piece = data[start:end].rstrip().removesuffix(b"]").rstrip().removesuffix(b",")
        ok, entry = loads_any(piece)
        entries.append(entry if ok else Unreadable(f"not JSON (the export is damaged or cut): {piece[:60]!r}"))
    return entries, lines


class _History:
    """Protocol history entries → one session's events."""

    def __init__(self, factory: EventFactory, vantage: Vantage) -> None:
        self.factory = factory
        self.vantage = vantage
        self.key = f"{factory.source}#1"
        self.timed = Timed()
        self.first: tuple[int, float | None] | None = None

    def entry(self, index: int, line: int, entry: Any) -> None:
        problem = _problem(entry)
        if problem is not None:
            what = f"entry {index} skipped: {problem}"
            self.timed.add(None, index, lambda: iter([self._bad(line, what)]))
            return
        ts = timestamp(entry.get("timestamp"))
        if self.first is None:
            self.first = (line, ts)
        sender = _FROM[entry["origin"]]
        self.timed.add(ts, index, self._messages(line, ts, sender, entry["message"]))
        reply, error = entry.get("response"), entry.get("clientError")
        ended = later(ts, entry.get("duration"))
        if isinstance(reply, dict):
            self.timed.add(ended or ts, index, self._messages(line, ended, _OTHER[sender], reply))
        elif isinstance(error, str) and entry["direction"] == "request":
            self.timed.add(ended or ts, index, self._gave_up(line, ended, sender, entry["message"], error))

    def finish(self) -> Iterator[Event]:
        if self.first is None:
            yield self._bad(1, "the export holds no message")
            return
        line, ts = self.first
        yield SessionStart(
            self.factory.next_seq(),
            ts,
            Origin(self.factory.source, line=line),
            self.key,
            Transport.STDIO,
            self.vantage,
            "inspector",
            label="MCP Inspector",
            unrecorded=FRAMES_ONLY,
            transport_assumed=True,
        )
        yield from self.timed.events()

    def _messages(self, line: int, ts: float | None, direction: Direction, message: dict[str, Any]) -> Make:
        text = dumps(message).decode("utf-8", "replace")
        return lambda: self.factory.messages(text, line=line, ts=ts, session_key=self.key, direction=direction)

    def _gave_up(self, line: int, ts: float | None, sender: Direction, message: dict[str, Any], error: str) -> Make:
        """The Inspector's client gave its caller up on its request (`clientError`): the call's end for the caller."""
        request_id = message.get("id")
        kind = TransportKind.GAVE_UP_BY_CLIENT if sender is Direction.C2S else TransportKind.GAVE_UP_BY_SERVER
        detail = f"the Inspector's client gave up: {error[:80]!r}"

        def make() -> Iterator[Event]:
            if not isinstance(request_id, str | int) or isinstance(request_id, bool):
                return
            origin = Origin(self.factory.source, line=line)
            yield TransportEvent(
                self.factory.next_seq(), ts, origin, self.key, kind, None, detail, request_id=request_id
            )

        return make

    def _bad(self, line: int, what: str) -> Event:
        return self.factory.anomaly(line, None, self.key if self.first else None, AnomalyName.INPUT_BAD_RECORD, what)


def _problem(entry: Any) -> str | None:
    """What makes a history entry unreadable, if anything."""
    if isinstance(entry, Unreadable):
        return str(entry)
    if not isinstance(entry, dict):
        return "not an object"
    if entry.get("direction") not in ("request", "response", "notification"):
        return f"unknown direction {str(entry.get('direction'))[:40]!r}"
    if not isinstance(entry.get("origin"), str) or entry["origin"] not in _FROM:
        return f"unknown origin {str(entry.get('origin'))[:40]!r} (client or server)"
    if not isinstance(entry.get("message"), dict):
        return "no message object"
    return None


READER = InspectorReader()
