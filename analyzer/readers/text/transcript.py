"""cancelwire transcripts, as written by `cancelwire record` (the format: `transcript_format`).

Stderr records are kept in the transcript for people and never read as protocol. The header's
`vantage` (unless `--vantage`) and `transport` become the session's.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final, TypeVar

import orjson

from ...errors import InputError
from ...model import (
    AnomalyName,
    Direction,
    Event,
    SessionStart,
    Transport,
    TransportEvent,
    TransportKind,
    Vantage,
)
from ...model.timestamps import EARLIEST, LATEST, plausible
from ...model.transcript_format import FORMAT_VERSION, HEADER_KEY
from ..base import InputSource, ReadOptions
from ..event_factory import EventFactory
from ..lines import RawLine, iter_line_batches

E = TypeVar("E", Vantage, Transport)
DIRECTIONS: Final = {"c2s": Direction.C2S, "s2c": Direction.S2C}
_NOT_JSON: Final = AnomalyName.STDIO_NON_JSON_LINE
"""Looked up once: a member lookup costs about 0.2 µs in Python 3.11, and a wire line is read in 8."""


class TranscriptReader:
    name = "cancelwire-transcript"

    def sniff(self, head: bytes) -> bool:
        first = head.split(b"\n", 1)[0].strip()
        if not first.startswith(b"{"):
            return False
        try:
            value = orjson.loads(first)
        except orjson.JSONDecodeError:
            return f'"{HEADER_KEY}"'.encode() in first
        return isinstance(value, dict) and (HEADER_KEY in value or ("dir" in value and "line" in value))

    def read(self, source: InputSource, options: ReadOptions) -> Iterator[Event]:  # noqa: C901
        # The stdio benchmark's hot loop, kept in one function on purpose: per-record work stays inline,
        # since a call per message shows in `scripts/bench.py stdio` (docs/benchmark.md).
        factory = EventFactory(source.name)
        key = source.name
        started = False
        loads = orjson.loads
        decode_error = orjson.JSONDecodeError
        directions = DIRECTIONS
        simple = factory.simple_message
        header_key = HEADER_KEY
        earliest, latest = EARLIEST, LATEST
        with source.open_binary(options.inflate) as stream:
            # Hot path: one orjson parse of the record and one of its `line`, then straight to the
            # message event. Anything unusual (a special line, a header, an event record, a line that
            # is not one JSON-RPC object) goes through the general `_line` / `_record` path.
            for first, items in iter_line_batches(stream):
                number = first - 1
                for data in items:
                    number += 1
                    if isinstance(data, RawLine):
                        for event in self._line(source, factory, key, data, started, options):
                            if event.__class__ is SessionStart:
                                started = True
                            yield event
                        continue
                    try:
                        record = loads(data)
                    except decode_error:
                        if data.strip():
                            yield from self._line(source, factory, key, RawLine(number, data), started, options)
                        continue
                    if record.__class__ is dict and started and "event" not in record and "b64" not in record:
                        direction = record.get("dir")
                        text = record.get("line")
                        if direction.__class__ is str and text.__class__ is str:
                            side = directions.get(direction)
                            if side is not None and header_key not in record:
                                ts = record.get("ts")
                                if ts.__class__ is not float:
                                    ts = _ts(ts)
                                # a time no clock reads (year 9999, negative) takes the general path, which names it
                                if ts is None or earliest <= ts < latest:
                                    simple_event = simple(text, number, ts, key, side)
                                    if simple_event is not None:
                                        yield simple_event
                                        continue
                    for event in self._parsed(source, factory, key, number, False, record, started, options):
                        if event.__class__ is SessionStart:
                            started = True
                        yield event

    def _line(
        self,
        source: InputSource,
        factory: EventFactory,
        key: str,
        raw: RawLine,
        started: bool,
        options: ReadOptions,
    ) -> Iterator[Event]:
        """A line as `iter_lines` gives it (the general path)."""
        problems = list(factory.line_problems(raw, key))
        if problems:
            yield from problems
            return
        if not raw.data.strip():
            return
        try:
            record = orjson.loads(raw.data)
        except orjson.JSONDecodeError as exc:
            # a recorder that wrote raw bytes: the record may still be JSON once decoded leniently
            why = exc.msg  # orjson's own words, ASCII: nested too deep, a number past a double, a surrogate
            text, bad_utf8 = factory.decode_utf8(raw, None, key)
            try:
                record = orjson.loads(text) if bad_utf8 else None
            except orjson.JSONDecodeError:
                record = None
            if record is None:
                name = AnomalyName.INPUT_TRUNCATED_LINE if raw.unterminated else AnomalyName.INPUT_NON_JSON_LINE
                yield factory.anomaly(raw.number, None, key, name, f"transcript record is not JSON ({why:.80})")
                return
            assert bad_utf8 is not None  # record parsed only after a lenient decode
            yield bad_utf8
        yield from self._parsed(source, factory, key, raw.number, raw.unterminated, record, started, options)

    def _parsed(
        self,
        source: InputSource,
        factory: EventFactory,
        key: str,
        line: int,
        unterminated: bool,
        record: Any,
        started: bool,
        options: ReadOptions,
    ) -> Iterator[Event]:
        """A parsed record (the general path); yields a `SessionStart` when it starts the session."""
        if not isinstance(record, dict):
            yield factory.anomaly(line, None, key, AnomalyName.INPUT_BAD_RECORD, "record is not an object")
            return
        if HEADER_KEY in record:
            if started:
                yield factory.anomaly(line, None, key, AnomalyName.INPUT_BAD_RECORD, "header after records")
                return
            yield from self._session_start(source, factory, line, record, options)
            return
        if not started:
            yield from self._session_start(source, factory, line, {}, options)
        yield from self._record(factory, key, line, unterminated, record)

    def _session_start(
        self, source: InputSource, factory: EventFactory, line: int, header: dict[str, Any], options: ReadOptions
    ) -> Iterator[Event]:
        """The session's start from the header (or from none), then an anomaly per header value
        that is not used because it has the wrong type or an unknown value."""
        version = header.get(HEADER_KEY, FORMAT_VERSION)
        if version.__class__ is not int:
            raise InputError(f"{source.name}:{line}", f"transcript format version {version!r:.40} is not an integer")
        if version > FORMAT_VERSION:
            raise InputError(
                f"{source.name}:{line}",
                f"transcript format version {version!r} is newer than this cancelwire reads ({FORMAT_VERSION})",
                "upgrade cancelwire",
            )
        problems: list[str] = []
        vantage = _enum(Vantage, header, "vantage", Vantage.UNKNOWN, problems)
        transport = _enum(Transport, header, "transport", Transport.STDIO, problems)
        command = header.get("command")
        if command is not None and not (isinstance(command, list) and all(isinstance(c, str) for c in command)):
            problems.append("header: command must be a list of strings; not used")
            command = None
        label = _text(header, "label", problems) or (" ".join(command) if command else None)
        ts = _ts(header.get("ts"))
        yield SessionStart(
            factory.next_seq(),
            ts if ts is None or plausible(ts) else None,
            factory.origin(line),
            source.name,
            transport,
            options.session_vantage(vantage),
            self.name,
            label=label,
            revision=_text(header, "revision", problems),
        )
        if ts is not None and not plausible(ts):
            yield factory.implausible_time(line, source.name, ts)
        for problem in problems:
            yield factory.anomaly(line, None, source.name, AnomalyName.INPUT_BAD_RECORD, problem)

    def _record(
        self, factory: EventFactory, key: str, line: int, unterminated: bool, record: dict[str, Any]
    ) -> Iterator[Event]:
        ts = _ts(record.get("ts"))
        if "event" in record:
            if ts is not None and not plausible(ts):
                yield factory.implausible_time(line, key, ts)
                ts = None
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
                yield factory.anomaly(
                    line, ts, key, AnomalyName.INPUT_BAD_RECORD, f"unknown event {record['event']!r:.40}"
                )
            return
        direction = record.get("dir")
        text = record.get("line")
        if direction == "stderr":
            return  # stderr is never protocol (it may hold logs); kept in the transcript for people
        if not isinstance(direction, str) or direction not in DIRECTIONS or not isinstance(text, str):
            yield factory.anomaly(
                line,
                ts,
                key,
                AnomalyName.INPUT_BAD_RECORD,
                'record needs "dir" (c2s, s2c or stderr) and a string "line"',
            )
            return
        if "b64" in record:  # the recorder saw bytes that are not UTF-8; `line` holds replacements
            yield factory.anomaly(
                line, ts, key, AnomalyName.INPUT_INVALID_UTF8, "the wire line was not valid UTF-8 (b64 kept)"
            )
        yield from factory.messages(
            text,
            line=line,
            ts=ts,
            session_key=key,
            direction=DIRECTIONS[direction],
            unterminated=unterminated or record.get("eol") is False,
            not_json_name=_NOT_JSON,
        )


def _ts(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _enum(enum: type[E], header: dict[str, Any], key: str, default: E, problems: list[str]) -> E:
    """A header value from a closed set; an unknown one is named in `problems` and `default` used."""
    value = header.get(key)
    if value is None:
        return default
    try:
        return enum(value)
    except ValueError:
        known = ", ".join(member.value for member in enum)
        problems.append(f"header: unknown {key} {value!r:.40} (one of {known}); read as {default.value}")
        return default


def _text(header: dict[str, Any], key: str, problems: list[str]) -> str | None:
    value = header.get(key)
    if value is None or isinstance(value, str):
        return value
    problems.append(f"header: {key} must be a string; not used")
    return None


READER = TranscriptReader()
