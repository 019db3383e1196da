"""VS Code's MCP output channel ("MCP: NAME", saved from the Output view or the logs folder).

    2025-06-18 10:00:00.123 [info] Starting server my-server
    2025-06-18 10:00:00.124 [info] Connection state: Running
    2025-06-18 10:00:00.200 [debug] [editor -> server] {json}
    2025-06-18 10:00:00.300 [debug] [server -> editor] {json}
    2025-06-18 10:00:00.350 [warning] [server stderr] text the server wrote to stderr

`[editor -> server]` is a message the editor (the client) wrote, `[server -> editor]` one it
read; message lines only appear at the channel's debug/trace log level. `[server stderr]` lines
and the editor's own lines are not protocol and are skipped. Lines without a timestamp prefix
(continuations of multi-line entries) are skipped too, unless they carry a message marker.

Timestamps are the editor's *local* time with no zone. They are read as if they were UTC, so
absolute times can be off by the UTC offset of the machine; gaps between lines are right.
The channel holds one server: "Starting server NAME" or a new `initialize` request after
messages starts its next session (keys `FILE#N`, label = server name when the log names it).
Vantage is the client's unless `--vantage` says otherwise. Transport is recorded as stdio; the
channel does not say (HTTP servers log the same message lines).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime

from ..model import Direction, Event, Vantage
from .base import InputSource, ReadOptions
from .hostlog_sessions import LogSessions, is_initialize_request
from .lines import source_lines

_PREFIX = re.compile(r"\s*(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?) \[(\w+)\] ?(.*)", re.S)
_SNIFF = re.compile(
    rb"^\s*\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[\w+\] "
    rb"(?:\[editor -> server\]|\[server -> editor\]|\[server stderr\]|Connection state: |Starting server )",
    re.M,
)
DIRECTIONS = {"[editor -> server]": Direction.C2S, "[server -> editor]": Direction.S2C}
_STARTING = "Starting server "


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
                if any(marker in text for marker in DIRECTIONS):
                    yield factory.anomaly(
                        raw.number,
                        None,
                        sessions.key(None),
                        "input.unrecognized-line",
                        f"a message line without a readable timestamp/level prefix: {text[:80]!r}",
                    )
                continue
            body = match.group(3)
            marker = body[:18]
            if marker not in DIRECTIONS:
                if body.startswith(_STARTING) and not body.startswith(_STARTING + "from "):
                    sessions.restart(None)
                    sessions.labels[None] = body[len(_STARTING) :].strip()
                continue
            payload = body[18:].strip()
            yield from sessions.begin(None, raw.number, ts, initialize=is_initialize_request(payload))
            yield from factory.messages(
                payload,
                line=raw.number,
                ts=ts,
                session_key=sessions.key(None),
                direction=DIRECTIONS[marker],
                unterminated=raw.unterminated,
            )


def _epoch(stamp: str) -> float | None:
    """Local time without a zone, read as UTC (see the module docstring)."""
    try:
        return datetime.fromisoformat(stamp).replace(tzinfo=UTC).timestamp()
    except ValueError:
        return None


READER = VSCodeReader()
