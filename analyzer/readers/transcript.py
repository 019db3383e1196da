"""cancelwire transcripts (JSON Lines), as written by `cancelwire record`.

{"cancelwire_transcript": 1, "transport": "stdio", "vantage": "proxy", "command": [...]}   optional header
{"ts": 1764690000.123, "dir": "c2s", "line": "<exact line the client wrote>"}
{"ts": 1764690000.456, "dir": "s2c", "line": "<exact line the server wrote>"}
{"ts": 1764690000.789, "dir": "stderr", "line": "<server stderr line>"}
{"ts": 1764690001.000, "event": "process-exited", "status": 0}
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TypeVar

import orjson

from analyzer.errors import InputError
from analyzer.model import (
    Direction,
    Event,
    SessionStart,
    Transport,
    TransportEvent,
    TransportKind,
    Vantage,
)
from analyzer.readers import InputSource, ReadOptions
from analyzer.readers._lines import EventFactory, iter_lines

FORMAT_VERSION = 1
E = TypeVar("E", Vantage, Transport)
DIRECTIONS = {"c2s": Direction.C2S, "s2c": Direction.S2C}


class TranscriptReader:
    name = "cancelwire-transcript"

    def sniff(self, head: bytes) -> bool:
        first = head.split(b"\n", 1)[0].strip()
        if not first.startswith(b"{"):
            return False
        try:
            value = orjson.loads(first)
        except orjson.JSONDecodeError:
            return b'"cancelwire_transcript"' in first
        return isinstance(value, dict) and ("cancelwire_transcript" in value or ("dir" in value and "line" in value))

    def read(self, source: InputSource, options: ReadOptions) -> Iterator[Event]:
        factory = EventFactory(source.name)
        key = source.name
        started = False
        with source.open_binary() as stream:
            for raw in iter_lines(stream):
                problems = list(factory.line_problems(raw, key))
                if problems:
                    yield from problems
                    continue
                if not raw.data.strip():
                    continue
                try:
                    record = orjson.loads(raw.data)
                except orjson.JSONDecodeError:
                    name = "input.truncated-line" if raw.unterminated else "input.non-json-line"
                    yield factory.anomaly(raw.number, None, key, name, "transcript record is not JSON")
                    continue
                if not isinstance(record, dict):
                    yield factory.anomaly(raw.number, None, key, "input.bad-record", "record is not an object")
                    continue
                if "cancelwire_transcript" in record:
                    if started:
                        yield factory.anomaly(raw.number, None, key, "input.bad-record", "header after records")
                        continue
                    yield self._session_start(source, factory, raw.number, record, options)
                    started = True
                    continue
                if not started:
                    yield self._session_start(source, factory, raw.number, {}, options)
                    started = True
                yield from self._record(factory, key, raw.number, raw.unterminated, record)

    def _session_start(
        self, source: InputSource, factory: EventFactory, line: int, header: dict[str, Any], options: ReadOptions
    ) -> SessionStart:
        version = header.get("cancelwire_transcript", FORMAT_VERSION)
        if not isinstance(version, int) or version > FORMAT_VERSION:
            raise InputError(
                f"{source.name}:{line}",
                f"transcript format version {version!r} is newer than this cancelwire reads ({FORMAT_VERSION})",
                "upgrade cancelwire",
            )
        vantage = options.vantage or _enum(Vantage, header.get("vantage"), Vantage.UNKNOWN)
        transport = _enum(Transport, header.get("transport"), Transport.STDIO)
        label = header.get("label") or (
            " ".join(header["command"]) if isinstance(header.get("command"), list) else None
        )
        revision = header.get("revision") if isinstance(header.get("revision"), str) else None
        return SessionStart(
            factory.next_seq(),
            _ts(header.get("ts")),
            factory.origin(line),
            source.name,
            transport,
            vantage,
            self.name,
            label=label,
            revision=revision,
        )

    def _record(
        self, factory: EventFactory, key: str, line: int, unterminated: bool, record: dict[str, Any]
    ) -> Iterator[Event]:
        ts = _ts(record.get("ts"))
        if "event" in record:
            if record["event"] == "process-exited":
                yield TransportEvent(
                    factory.next_seq(),
                    ts,
                    factory.origin(line),
                    key,
                    TransportKind.PROCESS_EXITED,
                    detail=f"status {record.get('status')}",
                )
            else:
                yield factory.anomaly(line, ts, key, "input.bad-record", f"unknown event {record['event']!r:.40}")
            return
        direction = record.get("dir")
        text = record.get("line")
        if direction == "stderr":
            return  # stderr is never protocol (it may hold logs); kept in the transcript for people
        if direction not in DIRECTIONS or not isinstance(text, str):
            yield factory.anomaly(
                line, ts, key, "input.bad-record", 'record needs "dir" (c2s, s2c or stderr) and a string "line"'
            )
            return
        yield from factory.messages(
            text,
            line=line,
            ts=ts,
            session_key=key,
            direction=DIRECTIONS[direction],
            unterminated=unterminated,
            not_json_name="stdio.non-json-line",
        )


def _ts(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _enum(enum: type[E], value: Any, default: E) -> E:
    try:
        return enum(value)
    except ValueError:
        return default


READER = TranscriptReader()
