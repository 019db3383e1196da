"""Claude Desktop MCP logs: `mcp.log` (every server) and `mcp-server-NAME.log` (one server).

    2025-06-18T10:00:00.123Z [server-name] [info] Initializing server... { metadata: undefined }
    2025-06-18T10:00:00.456Z [server-name] [info] Message from client: {json} { metadata: undefined }
    2025-06-18T10:00:00.789Z [info] [server-name] Message from server: {json}
    Some line the server wrote to its stderr

Level and server name come in either order; the trailing ` { metadata: … }` is optional.
Unprefixed lines are the server's stderr (or the continuation of a multi-line host message) and
are never protocol: they are skipped. Other host lines ("Server started and connected
successfully", "Client transport closed", …) are skipped too.

Sessions: one per server name; "Initializing server" or a new `initialize` request for a server
that already has messages starts its next session (a restart). Keys are `FILE#SERVER#N`.
Timestamps are the host's log time (UTC, `Z`), not wire time, and can go backwards: order is by
line. The host wrote the log, so the vantage is the client's unless `--vantage` says otherwise.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from datetime import datetime

from ...model import Direction, Event, Vantage
from ..base import InputSource, ReadOptions
from ..event_factory import EventFactory, holds_jsonrpc
from ..lines import RawLine, source_lines
from .hostlog import LogSessions

_PREFIX = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z) \[([^\]\n]*)\] \[([^\]\n]*)\] ?(.*)", re.S)
_SNIFF = re.compile(rb"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z \[[^\]\n]*\] \[[^\]\n]*\]", re.M)
_MESSAGE = re.compile(r"Message from (client|server): ?(.*)", re.S)
_MARKERS = ("Message from client:", "Message from server:")
METADATA = "{ metadata: undefined }"
LEVELS = frozenset({"info", "warn", "warning", "error", "debug", "trace", "verbose", "log", "fatal", "notice"})
DIRECTIONS = {"client": Direction.C2S, "server": Direction.S2C}
_JSON_TOKEN = re.compile(r'\\.|["\[\]{}]', re.S)
"""What moves a scan for the end of a JSON value: an escape, a quote, or a bracket."""


class ClaudeDesktopReader:
    name = "claude-desktop"

    def sniff(self, head: bytes) -> bool:
        return _SNIFF.search(head) is not None

    def read(self, source: InputSource, options: ReadOptions) -> Iterator[Event]:
        sessions = LogSessions(source, self.name, options, Vantage.CLIENT)
        factory = sessions.factory
        for raw in source_lines(source, options.inflate):
            problems = list(factory.line_problems(raw, None))
            if problems:
                yield from problems
                continue
            try:
                text = raw.data.decode("utf-8")
                bad_utf8 = False
            except UnicodeDecodeError:
                text = raw.data.decode("utf-8", "replace")
                bad_utf8 = True
            match = _PREFIX.match(text)
            if match is None:
                if bad_utf8:
                    yield from _utf8_problem(factory, raw, None, None)
                if any(marker in text for marker in _MARKERS) or holds_jsonrpc(text):
                    yield factory.unread_message(
                        raw.number, None, text, "a message line without a readable timestamp/server prefix"
                    )
                continue  # server stderr or a continuation line: not protocol
            stamp, first, second, body = match.groups()
            server = first if second.lower() in LEVELS or first.lower() not in LEVELS else second
            ts = _epoch(stamp)
            if bad_utf8:
                yield from _utf8_problem(factory, raw, ts, sessions.key(server))
            message = _MESSAGE.match(body)
            if message is None:
                if body.startswith("Initializing server"):
                    sessions.restart(server)
                elif holds_jsonrpc(body):
                    yield factory.unread_message(
                        raw.number,
                        sessions.key(server),
                        text,
                        "a JSON-RPC message after something other than "
                        "'Message from client:' / 'Message from server:' (a damaged line?)",
                    )
                continue
            side, payload = message.groups()
            payload = _strip_metadata(payload)
            yield from sessions.message(server, raw, ts, payload, DIRECTIONS[side])


def _utf8_problem(factory: EventFactory, raw: RawLine, ts: float | None, key: str | None) -> Iterator[Event]:
    _, anomaly = factory.decode_utf8(raw, ts, key)
    if anomaly is not None:
        yield anomaly


def _strip_metadata(payload: str) -> str:
    """The JSON text of a message line without the host's trailing `{ metadata: … }`."""
    body = payload.rstrip()
    if body.endswith(METADATA):
        return body[: -len(METADATA)].rstrip()
    if "{ metadata:" in body or not body.endswith(("}", "]")):
        end = _json_end(body)
        return body if end is None else body[:end]
    return body


def _json_end(text: str) -> int | None:
    """Where the JSON object or array that starts `text` ends, by matching brackets outside
    strings: no recursion, so nesting depth cannot exhaust the stack (the JSON parser that reads
    the value later bounds its depth itself). None when `text` does not start one or it never ends."""
    if not text.startswith(("{", "[")):
        return None
    depth = 0
    in_string = False
    for token in _JSON_TOKEN.finditer(text):
        char = token.group()
        if char == '"':
            in_string = not in_string
        elif in_string or len(char) == 2:
            continue
        elif char in "[{":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return token.end()
    return None


def _epoch(stamp: str) -> float:
    """NaN when the stamp is not a date (month 13): the message factory names it as no clock reading."""
    try:
        return datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return math.nan


READER = ClaudeDesktopReader()
