"""VS Code's MCP output channel ("MCP: NAME", saved from the Output view or the logs folder).

Two line shapes, both read. Builds from about April 2025 on (modelled on the channel quoted in
github.com/rsclarke/mcp-taskfile-server/issues/134, 2026-07-23, and VS Code's
`McpServerRequestHandler`, which logs every message it sends and reads):

    2025-06-18 10:00:00.123 [info] Starting server my-server
    2025-06-18 10:00:00.124 [info] Connection state: Running
    2025-06-18 10:00:00.200 [debug] [editor -> server] {json}
    2025-06-18 10:00:00.300 [debug] [server -> editor] {json}
    2025-06-18 10:00:00.350 [warning] [server stderr] text the server wrote to stderr

`[editor -> server]` is a message the editor (the client) wrote, `[server -> editor]` one it
read; message lines only appear at the channel's debug/trace log level (or the level set for
requests: `[info]` in some builds). `[server stderr]` lines and the editor's own lines are not
protocol and are skipped.

The first builds with MCP (March 2025; modelled on the channel quoted in
github.com/microsoft/vscode/issues/244377, 2025-03-23, and that build's extension-host stdio
launcher) wrote what went down the server's stdin and every line read from its stdout, at info
level, and its stderr lines with no marker:

    2025-03-23 16:38:00.970 [info] [Client Says] {json}
    2025-03-23 16:38:00.989 [info] [Server Says] {json}

`[Server Says]` is every stdout line, so a server that prints to stdout shows here as a line
that is not JSON (a finding, as on any stdio channel).

Lines without a timestamp prefix (continuations of multi-line entries) are skipped, and so are
prefixed lines without a marker, unless they hold a JSON-RPC message: that is an
`input.unrecognized-line` (a damaged marker or prefix), never a silent skip.

Timestamps are the editor's *local* time with no zone. They are read as if they were UTC, so
absolute times can be off by the UTC offset of the machine; gaps between lines are right.
The channel holds one server: "Starting server NAME" or a new `initialize` request after
messages starts its next session (keys `FILE#N`, label = server name when the log names it).
Vantage is the client's unless `--vantage` says otherwise. Transport is recorded as stdio; the
channel does not say (HTTP servers log the same message lines).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from datetime import UTC, datetime

from ...model import Direction, Event, Vantage
from ..base import InputSource, ReadOptions
from ..event_factory import holds_jsonrpc
from ..lines import source_lines
from .hostlog import LogSessions

_PREFIX = re.compile(r"\s*(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?) \[(\w+)\] ?(.*)", re.S)
_SNIFF = re.compile(
    rb"^\s*\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[\w+\] "
    rb"(?:\[editor -> server\]|\[server -> editor\]|\[Client Says\]|\[Server Says\]|\[server stderr\]"
    rb"|Connection state: |Starting server )",
    re.M,
)
DIRECTIONS = {
    "[editor -> server]": Direction.C2S,
    "[server -> editor]": Direction.S2C,
    "[Client Says]": Direction.C2S,
    "[Server Says]": Direction.S2C,
}
_STARTING = "Starting server "
_STDERR = "[server stderr]"


class VSCodeReader:
    name = "vscode"

    def sniff(self, head: bytes) -> bool:
        return _SNIFF.search(head) is not None

    def read(self, source: InputSource, options: ReadOptions) -> Iterator[Event]:
        sessions = LogSessions(source, self.name, options, Vantage.CLIENT)
        factory = sessions.factory
        for raw in source_lines(source, options.inflate):
            text, problems = factory.text_of(raw, sessions.key(None))
            yield from problems
            if text is None:
                continue
            match = _PREFIX.match(text)
            ts = _epoch(match.group(1)) if match else None
            if match is None:
                if any(marker in text for marker in DIRECTIONS) or holds_jsonrpc(text):
                    yield factory.unread_message(
                        raw.number, sessions.key(None), text, "a message line without a readable timestamp/level prefix"
                    )
                continue
            body = match.group(3)
            marker = body[: body.find("]") + 1] if body.startswith("[") else ""
            if marker not in DIRECTIONS:
                if body.startswith(_STARTING) and not body.startswith(_STARTING + "from "):
                    sessions.restart(None)
                    sessions.labels[None] = body[len(_STARTING) :].strip()
                elif marker != _STDERR and holds_jsonrpc(body):
                    yield factory.unread_message(
                        raw.number, sessions.key(None), text, "a JSON-RPC message after an unknown marker"
                    )
                continue
            payload = body[len(marker) :].strip()
            yield from sessions.message(None, raw, ts, payload, DIRECTIONS[marker])


def _epoch(stamp: str) -> float:
    """Local time without a zone, read as UTC (see the module docstring); NaN when the stamp is not a
    date (month 13, year 0), which the message factory names as no clock reading."""
    try:
        return datetime.fromisoformat(stamp).replace(tzinfo=UTC).timestamp()
    except ValueError:
        return math.nan


READER = VSCodeReader()
