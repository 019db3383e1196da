"""The MCP Python SDK server's own debug log (Python `logging` at DEBUG), legacy HTTP+SSE transport.

At DEBUG the SDK's SSE transport logs every message a client POSTs, and sse-starlette every event
it writes to the stream; with only the `mcp` loggers at DEBUG the writes appear as the SDK's repr:

    2026-12-03 09:09:16,354 - mcp.server.sse - DEBUG - Received JSON: b'{"jsonrpc":"2.0","id":3,...}'
    2026-12-03 09:09:16,356 - mcp.server.sse - DEBUG - Sending message via SSE: SessionMessage(message=...)
    2026-12-03 09:09:16,356 - sse_starlette.sse - DEBUG - chunk: b'event: message\\r\\ndata: {...}\\r\\n\\r\\n'

Modelled on the logs posted in github.com/danny-avila/LibreChat/issues/6602 (2025-03-28:
`DEBUG:mcp.server.sse:Received JSON: b'...'`, `logging.basicConfig`'s format, no time) and
github.com/rldiao/mealie-mcp-server/pull/4 (2025-10-09: `chunk: b'event: ...'` lines, and the
1.x SDK's `Received JSON: {'method': ...}`, a dict repr), and checked against what `mcp` 2.3.0 and
sse-starlette 3.7 log (`mcp/server/sse.py`, `sse_starlette/sse.py`): the fixture
`pysdk-sse-server-debug.log` is such a server's real log.

The markers are found anywhere in a line, so any logging format is read; the time is the first
`YYYY-MM-DD HH:MM:SS[,.fff]` before the marker (Python's `asctime`: local time without a zone,
read as UTC like VS Code's). A log without times (`LEVEL:name:message`, or the SDK's own
`%(message)s`) is read in order only, and its sessions say so. `Received JSON` is client→server;
`chunk:` events of type `message` are server→client (the endpoint event and pings are not
messages); `Sending message via SSE:` reprs are read only when the first lines hold no `chunk:`
line (both are logged for one write when every logger is at DEBUG). The log is the server's
(vantage server unless `--vantage`), over HTTP+SSE. The chunk lines name no session, so clients
served at the same time cannot be told apart: a new `initialize` starts the next session. Rich's
handler wraps long lines: a wrapped message is not whole and is named, not guessed. The
Streamable HTTP transport logs no received messages, so its logs are not read here.
"""

from __future__ import annotations

import ast
import math
import re
import warnings
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import orjson

from ...model import Direction, Event, Transport, Vantage
from ..base import InputSource, ReadOptions
from ..event_factory import holds_jsonrpc
from ..http.sse import SseParser
from ..lines import RawLine, peek_lines, source_lines
from .hostlog import LogSessions, is_initialize_request

_MARKER = re.compile(r"(Received JSON|chunk|Sending message via SSE): ")
_SNIFF = re.compile(rb"(?:Received JSON: (?:b['\"]|\{)|chunk: b'event: message\\r\\n)")
_TIME = re.compile(r"(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d)(?:[.,](\d{1,6}))?")
_ECHO = re.compile(r"(?:Validated client message|Sending (?:session )?message to writer|Received message): ")
"""The SDK's other lines that show a message (what it parsed, what it hands on): not new messages."""
_REPR_MESSAGE = "jsonrpc='2.0'"
_SKIPPED = {"Sending message via SSE": True, "chunk": False}
"""A marker read only when the log has (True) / has no (False) `chunk:` lines in its first lines."""
_REPR_LIMIT = 1 << 20
"""Longest repr parsed with `ast` (bigger is named, not read): parsing costs memory per node."""


class PySdkReader:
    name = "python-sdk-log"

    def sniff(self, head: bytes) -> bool:
        return _SNIFF.search(head) is not None

    def read(self, source: InputSource, options: ReadOptions) -> Iterator[Event]:
        head, lines = peek_lines(source_lines(source, options.inflate))
        chunks = any(b"chunk: b'event: message" in raw.data for raw in head)
        timed = any(_line_time(raw) is not None for raw in head if _SNIFF.search(raw.data))
        sessions = LogSessions(
            source, self.name, options, Vantage.SERVER, timestamps=timed, transport=Transport.HTTP_SSE
        )
        del head
        factory = sessions.factory
        for raw in lines:
            text, problems = factory.text_of(raw, sessions.key(None))
            yield from problems
            if text is None:
                continue
            match = _MARKER.search(text)
            if match is None:
                if (holds_jsonrpc(text) or _REPR_MESSAGE in text) and _ECHO.search(text) is None:
                    yield factory.unread_message(raw.number, sessions.key(None), text, "no known marker before it")
                continue
            if _SKIPPED.get(match.group(1)) is chunks:
                continue
            ts = _epoch(text[: match.start()])
            payload, direction = _payload(match.group(1), text[match.end() :])
            if payload == "":
                continue  # the endpoint event, a ping, a comment: not a message
            shown = payload if payload is not None else text[match.start() :]
            yield from sessions.message(
                None, raw, ts, shown, direction, initialize=is_initialize_request(payload or "")
            )


def _payload(marker: str, rest: str) -> tuple[str | None, Direction]:
    """The JSON text a marker's value holds ("" when it holds no message, None when unreadable)."""
    if marker == "Received JSON":
        return _literal_json(rest), Direction.C2S
    if marker == "chunk":
        raw = _literal(rest)
        if not isinstance(raw, bytes):
            return None, Direction.S2C
        events = SseParser().feed(raw if raw.endswith((b"\n\n", b"\r\n\r\n")) else raw + b"\n\n")
        data = [e.data for e in events if e.event == "message" and e.data]
        return ("\n".join(data) if data else ""), Direction.S2C
    return _repr_json(rest), Direction.S2C


def _literal(text: str) -> Any:
    """A Python literal (a bytes or dict repr) without running anything; None when it is not one."""
    if len(text) > _REPR_LIMIT:
        return None
    try:
        with warnings.catch_warnings():  # an invalid escape warns (a SyntaxError in later Pythons)
            warnings.simplefilter("ignore")
            return ast.literal_eval(text.strip())
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _literal_json(text: str) -> str | None:
    value = _literal(text)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, dict):  # the 1.x SDK logged the parsed body
        return _dumps(value)
    return None


def _repr_json(text: str) -> str | None:
    """`SessionMessage(message=JSONRPCResponse(jsonrpc='2.0', id=1, result={...}), metadata=None)` as
    JSON: each model call becomes an object of its keyword arguments (a 1.x `JSONRPCMessage(root=...)`
    wrapper is unwrapped); a member whose value is None was unset and is left out."""
    if len(text) > _REPR_LIMIT:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            node = ast.parse(text.strip(), mode="eval").body
            value = _model(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    if isinstance(value, dict):
        value = value.get("message", value)
        while isinstance(value, dict) and set(value) == {"root"}:
            value = value["root"]
    return _dumps(value) if isinstance(value, dict) else None


def _model(node: ast.expr) -> Any:
    if isinstance(node, ast.Call):
        return {k.arg: v for k in node.keywords if k.arg and (v := _model(k.value)) is not None}
    return ast.literal_eval(node)


def _dumps(value: dict[Any, Any]) -> str | None:
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    except (TypeError, orjson.JSONEncodeError):
        return None


def _line_time(raw: RawLine) -> float | None:
    return _epoch(raw.data[:200].decode("utf-8", "replace"))


def _epoch(prefix: str) -> float | None:
    """The first date and time in the text before the marker, as UTC (see the module docstring)."""
    match = _TIME.search(prefix)
    if match is None:
        return None
    day, clock, fraction = match.groups()
    try:
        stamp = datetime.fromisoformat(f"{day}T{clock}").replace(tzinfo=UTC).timestamp()
    except ValueError:
        return math.nan  # a stamp that is not a date: the message factory names it
    return round(stamp + (int(fraction) / 10 ** len(fraction) if fraction else 0.0), 6)


READER = PySdkReader()
