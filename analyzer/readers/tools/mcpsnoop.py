"""mcpsnoop session logs (`mcpsnoop`): the JSON Lines a recording proxy writes, one record per frame.

mcpsnoop (github.com/kerlenton/mcpsnoop) wraps a stdio server command, or sits as a reverse proxy in
front of a Streamable HTTP server, and writes every frame it forwards as one JSON object per line
(`~/.local/state/mcpsnoop/sessions/<session_id>.jsonl`), its `Envelope` (internal/proxy/frame.go):

    {"session_id": "...", "server_label": "...", "seq": 7, "ts": "2026-06-27T19:29:00.123456789+02:00",
     "direction": "c2s", "transport": "stdio", "raw": {...JSON-RPC...}}

`direction` is `c2s` | `s2c` (a frame), `stderr` (a line the server wrote to stderr, in `text`) or `meta`
(the wrapped command, first); `transport` is `stdio` | `http`; `raw` is the message as forwarded, `text`
a line that was not JSON; `truncated` marks a copy cut at mcpsnoop's frame cap (the peer got it whole);
`status` is the HTTP status of the response a frame came on (a status-only frame: an empty body, a 202,
a 502); `batch` marks one element of an HTTP batch; `conn_id` the client's TCP connection; `seq` counts
the session's records from 1, and a jump in it is where mcpsnoop dropped records (its queue was full).

One session per `session_id` (one proxy process), with a new one at each `initialize` (an HTTP proxy
carries one client after another); several clients at once through one HTTP proxy are one session, as
mcpsnoop records no `Mcp-Session-Id`. The vantage is a proxy's.

What mcpsnoop does not record, and so is not judged (`UNRECORDED`): any close or reset, the process's
exit, a client that stops reading, and which HTTP request or stream a frame belongs to. On stdio a
cancel is a notification and is seen; on Streamable HTTP a client's disconnect (the cancel itself from
2026-07-28) leaves no record at all.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import orjson

from ...model import TRANSPORT_KINDS, AnomalyName, Direction, Event, Message, MessageEvent, Transport, Vantage
from ...model.jsonrpc import EXCERPT_CHARS, INEXACT, classify_one, dumps, excerpt, loads_any
from ...model.timestamps import plausible
from ..base import InputSource, ReadOptions
from ..lines import RawLine, source_lines
from ..text.hostlog import MAX_SESSIONS, LogSessions, is_initialize_request

UNRECORDED = TRANSPORT_KINDS
"""What an mcpsnoop log cannot show: it records frames, never a close, reset or stall."""
DIRECTIONS = {"c2s": Direction.C2S, "s2c": Direction.S2C, "stderr": None, "meta": None}
TRANSPORTS = {"stdio": Transport.STDIO, "http": Transport.STREAMABLE_HTTP}
LABEL_CHARS = 200
_SAFE_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")
_SNIFF_START = re.compile(rb'\A\{"session_id":"[^"\\]{0,200}","server_label":"(?:[^"\\]|\\.){0,4096}","seq":\d')


class McpsnoopReader:
    name = "mcpsnoop"

    def sniff(self, head: bytes) -> bool:
        first = next((line.strip() for line in head.split(b"\n") if line.strip()), b"")
        try:
            value = orjson.loads(first)
        except orjson.JSONDecodeError:  # a first line longer than the head: mcpsnoop writes its keys in order
            return _SNIFF_START.match(first) is not None
        return (
            isinstance(value, dict)
            and isinstance(value.get("session_id"), str)
            and isinstance(value.get("seq"), int)
            and _named(value.get("direction"), DIRECTIONS)
            and _named(value.get("transport"), TRANSPORTS)
        )

    def read(self, source: InputSource, options: ReadOptions) -> Iterator[Event]:
        log = _Log(source, options, self.name)
        for raw in source_lines(source, options.inflate):
            yield from log.line(raw)


class _Log:
    """The reading of one log: sessions, and each session's last `seq` (bounded by the sessions)."""

    def __init__(self, source: InputSource, options: ReadOptions, name: str) -> None:
        self.sessions = LogSessions(source, name, options, Vantage.PROXY, unrecorded=UNRECORDED)
        self.factory = self.sessions.factory
        self.last_seq: dict[str, int] = {}
        """Per session id (at most `MAX_SESSIONS`): its last `seq`, 0 before its first record."""
        self.begun: dict[str, str] = {}
        """Per session id: the key of its session, once begun."""
        self.last_key: str | None = None
        """The session of the last record read: where an unreadable line is reported."""
        self.in_batch = False
        self.line_text = ""
        """The line being read (its frame is read again from it, exactly, when an id may be past 64 bits)."""

    def line(self, raw: RawLine) -> Iterator[Event]:
        factory = self.factory
        text, problems = factory.text_of(raw, self.last_key)
        yield from problems
        if text is None or not text.strip():
            return
        value = _loads(text)
        self.line_text = text
        if value is _NOT_JSON:
            name = AnomalyName.INPUT_TRUNCATED_LINE if raw.unterminated else AnomalyName.INPUT_NON_JSON_LINE
            yield factory.anomaly(raw.number, None, self.last_key, name, f"not an mcpsnoop record: {text[:80]!r}")
            return
        record = _Envelope.of(value)
        if isinstance(record, str):
            yield factory.anomaly(raw.number, None, self.last_key, AnomalyName.INPUT_BAD_RECORD, record)
            return
        yield from self.record(raw, record)

    def record(self, raw: RawLine, record: _Envelope) -> Iterator[Event]:
        group, line = record.group, raw.number
        if group not in self.last_seq and len(self.last_seq) < MAX_SESSIONS:  # bounded, as sessions are
            self.last_seq[group] = 0
            self.sessions.labels[group] = record.label
            self.sessions.transports[group] = record.transport
        gap = self.seq_gap(group, record.seq)
        direction = record.direction
        if direction is None:  # stderr and meta: never protocol
            if gap is not None:
                yield self.factory.anomaly(
                    line, record.ts, self.begun.get(group), AnomalyName.INPUT_RECORDS_MISSING, gap
                )
            return
        text = record.payload_text()
        initialize = direction is Direction.C2S and text is not None and is_initialize_request(text)
        yield from self.sessions.begin(group, line, record.ts, initialize=initialize)
        if self.sessions.refused:
            return
        key = self.last_key = self.begun[group] = self.sessions.key(group)
        if gap is not None:
            yield self.factory.anomaly(line, record.ts, key, AnomalyName.INPUT_RECORDS_MISSING, gap)
        if record.bad_ts is not None:
            what = f"the record's ts {record.bad_ts[:60]!r} is not an RFC 3339 time; its messages are kept without one"
            yield self.factory.anomaly(line, None, key, AnomalyName.INPUT_BAD_RECORD, what)
        yield from self.frame(raw, key, record, direction, text)

    def frame(
        self, raw: RawLine, key: str, record: _Envelope, direction: Direction, text: str | None
    ) -> Iterator[Event]:
        factory, line, ts = self.factory, raw.number, record.ts
        continued = record.batch and self.in_batch
        self.in_batch = record.batch
        if record.status >= 400 and not continued:
            what = f"HTTP {record.status} on the response this frame came on (connection {record.conn[:60]!r})"
            yield factory.anomaly(line, ts, key, AnomalyName.HTTP_ERROR_STATUS, what)
        if record.truncated:
            what = "mcpsnoop kept only a cut copy of this frame (past its frame-size cap; the peer got it whole)"
            yield factory.anomaly(line, ts, key, AnomalyName.INPUT_TRUNCATED_LINE, what + "; not read")
            return
        if record.batch and not continued:
            what = "a JSON-RPC batch, recorded by mcpsnoop one element per record from here"
            yield factory.anomaly(line, ts, key, AnomalyName.JSONRPC_BATCH, what)
        if text is None:
            if not record.status:
                yield factory.anomaly(line, ts, key, AnomalyName.INPUT_BAD_RECORD, "a frame with neither raw nor text")
            return  # a status-only frame: an empty body (a 202, a 401, a 502)
        if record.raw.__class__ is dict and (ts is None or plausible(ts)):
            # the common case: `raw` is one message, parsed with its envelope (the line is parsed once)
            one = classify_one(record.raw, text if len(text) <= EXCERPT_CHARS else excerpt(text))
            if one.__class__ is Message:
                yield MessageEvent(factory.next_seq(), ts, factory.origin(line), key, direction, one)
                return
            if one is INEXACT:  # orjson read an integer past 64 bits as a float: the frame's text was cut too
                text = _exact_raw(self.line_text) or text
        # anything else (a batch, a problem, an id past 64 bits, `text`, a time that is no clock reading)
        # is read from its text, as every text format reads it, and named
        not_json = AnomalyName.STDIO_NON_JSON_LINE
        if record.transport is Transport.STREAMABLE_HTTP:
            not_json = AnomalyName.HTTP_NON_JSON_BODY
        yield from factory.messages(
            text, line=line, ts=ts, session_key=key, direction=direction, not_json_name=not_json
        )

    def seq_gap(self, group: str, seq: int) -> str | None:
        """What a record's `seq` says was lost before it, if anything (groups past `MAX_SESSIONS` are not followed)."""
        last = self.last_seq.get(group)
        if last is None:
            return None
        self.last_seq[group] = max(seq, last)
        if seq == last + 1:
            return None
        if seq > last + 1:
            return f"mcpsnoop's records {last + 1}..{seq - 1} are missing (it drops frames when its queue is full)"
        return f"record {seq} comes after record {last}: out of order or repeated"


class _Envelope:
    """One envelope, checked: every field has its type, or the line is a bad record."""

    __slots__ = (
        "bad_ts",
        "batch",
        "conn",
        "direction",
        "group",
        "label",
        "raw",
        "seq",
        "status",
        "text",
        "transport",
        "truncated",
        "ts",
    )

    def __init__(self, value: dict[str, Any]) -> None:
        sid: str = value["session_id"]
        self.group = (
            sid if _SAFE_ID.fullmatch(sid) else "sid-" + hashlib.sha256(sid.encode("utf-8", "replace")).hexdigest()[:16]
        )
        label = value.get("server_label")
        self.label = label[:LABEL_CHARS] if isinstance(label, str) and label else self.group
        self.seq: int = value["seq"]
        self.direction: Direction | None = DIRECTIONS[value["direction"]]
        self.transport: Transport = TRANSPORTS[value["transport"]]
        self.raw = value.get("raw")
        text = value.get("text")
        self.text = text if isinstance(text, str) else None
        self.truncated = value.get("truncated") is True
        self.batch = value.get("batch") is True
        status = value.get("status")
        self.status = status if isinstance(status, int) and not isinstance(status, bool) else 0
        conn = value.get("conn_id")
        self.conn = conn if isinstance(conn, str) else ""
        self.ts, self.bad_ts = _time(value.get("ts"))

    @classmethod
    def of(cls, value: Any) -> _Envelope | str:
        """The record, or what is wrong with it."""
        if not isinstance(value, dict):
            return "not an mcpsnoop record (not a JSON object)"
        sid, seq = value.get("session_id"), value.get("seq")
        if not isinstance(sid, str) or not sid:
            return "an mcpsnoop record without a session_id"
        if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
            return f"an mcpsnoop record whose seq is not a count: {str(seq)[:40]!r}"
        if not _named(value.get("direction"), DIRECTIONS):
            return f"unknown direction {str(value.get('direction'))[:40]!r} (c2s, s2c, stderr or meta)"
        if not _named(value.get("transport"), TRANSPORTS):
            return f"unknown transport {str(value.get('transport'))[:40]!r} (stdio or http)"
        return cls(value)

    def payload_text(self) -> str | None:
        """The frame's JSON-RPC text: `raw` as JSON, else the non-JSON line in `text`."""
        if self.raw is not None:
            return dumps(self.raw).decode("utf-8", "replace")
        return self.text


_NOT_JSON = object()


def _named(value: Any, table: dict[str, Any]) -> bool:
    """True when VALUE is a string naming a key of TABLE (a recorded value may be any JSON)."""
    return isinstance(value, str) and value in table


def _loads(text: str) -> Any:
    """A line's JSON (an id past 64 bits and lone surrogates too); `_NOT_JSON` when it is not JSON."""
    ok, value = loads_any(text)
    return value if ok else _NOT_JSON


def _exact_raw(line: str) -> str | None:
    """A record's `raw` as JSON text with its integers exact (the standard library's reading of its line)."""
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return None
    raw = value.get("raw") if isinstance(value, dict) else None
    return None if raw is None else dumps(raw).decode("utf-8", "replace")


def _time(value: Any) -> tuple[float | None, str | None]:
    """(epoch seconds, None), or (None, the value) when it is no RFC 3339 time with a zone."""
    if value is None:
        return None, None
    if isinstance(value, str) and len(value) <= 64:
        try:
            when = datetime.fromisoformat(value)
        except ValueError:
            pass
        else:
            if when.tzinfo is not None:
                return when.timestamp(), None
    return None, str(value)


READER = McpsnoopReader()
