"""Logs of the MCP go-sdk's `LoggingTransport` (github.com/modelcontextprotocol/go-sdk, mcp package).

    write: {json}        a message this side wrote
    read: {json}         a message this side read
    read error: EOF      (and `write error: …`) transport errors, skipped

No timestamps (`ts` is None, `SessionStart.timestamps` is False) and no statement of which side
wrote the log. The side is inferred from message shapes in the first lines (at most
`LOOKAHEAD_LINES` lines / `LOOKAHEAD_BYTES` bytes are held, then the reader streams): the side
that writes `initialize`, `tools/call`, `notifications/initialized`, … is the client; the side
that writes `initialize` results, `notifications/progress`, `sampling/createMessage`, … is the
server. `--vantage client|server` overrides. When nothing decides, the client is assumed and an
`input.side-assumed` anomaly says so once. Other lines (the program's own stderr output) are
skipped. A new `initialize` request after messages starts the next session (keys `FILE#N`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ...model import AnomalyName, Event, Message, Side
from ...model.jsonrpc import decode_text
from ..base import InputSource, ReadOptions
from ..event_factory import holds_jsonrpc
from ..lines import RawLine, peek_lines, source_lines
from .hostlog import (
    LogSessions,
    direction_of,
    infer_recorder_side,
    side_of,
    vantage_of,
)

_LINE = re.compile(r"(read|write): (.*)", re.S)
_SNIFF_MESSAGE = re.compile(rb"^(?:read|write): [\[{]", re.M)
_SNIFF_OTHER_LOG = re.compile(rb"^\s*\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?Z? \[", re.M)
_MARSHAL_FAILED = "LoggingTransport: failed to marshal:"
SNIFF_LINES = 50


class GoSdkReader:
    name = "go-sdk"

    def sniff(self, head: bytes) -> bool:
        lines = [line for line in head.split(b"\n")[:SNIFF_LINES] if line.strip()]
        sample = b"\n".join(lines)
        return _SNIFF_MESSAGE.search(sample) is not None and _SNIFF_OTHER_LOG.search(sample) is None

    def read(self, source: InputSource, options: ReadOptions) -> Iterator[Event]:
        head, lines = peek_lines(source_lines(source, options.inflate))
        side = side_of(options.vantage) or infer_recorder_side(_samples(head))
        assumed = side is None
        side = side or Side.CLIENT
        sessions = LogSessions(source, self.name, options, vantage_of(side), timestamps=False)
        if assumed:
            sessions.note = (
                AnomalyName.INPUT_SIDE_ASSUMED,
                "no message in the first lines shows which side wrote this log; "
                "assumed the client (override with --vantage server)",
            )
        factory = sessions.factory
        directions = {"write": direction_of(side), "read": direction_of(side.other)}
        for raw in lines:
            text, problems = factory.text_of(raw, sessions.key(None))
            yield from problems
            if text is None:
                continue
            match = _LINE.match(text)
            if match is None:
                if text.startswith(_MARSHAL_FAILED):
                    yield factory.anomaly(
                        raw.number,
                        None,
                        sessions.key(None),
                        AnomalyName.INPUT_UNRECOGNIZED_LINE,
                        "LoggingTransport could not marshal a message; the line holds no message",
                    )
                elif holds_jsonrpc(text):
                    yield factory.unread_message(
                        raw.number, sessions.key(None), text, "a JSON-RPC message without a readable 'read:'/'write:'"
                    )
                continue
            verb, payload = match.groups()
            yield from sessions.message(None, raw, None, payload, directions[verb])


def _samples(head: list[RawLine]) -> Iterator[tuple[bool, Message]]:
    for raw in head:
        if not raw.data.startswith((b"read: ", b"write: ")):
            continue
        verb, _, payload = raw.data.partition(b": ")
        decoded = decode_text(payload)
        if decoded is not None:
            for message in decoded.messages:
                yield verb == b"write", message


READER = GoSdkReader()
