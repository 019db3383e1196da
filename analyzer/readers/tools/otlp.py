"""OpenTelemetry traces (`otlp`): OTLP/JSON as the OpenTelemetry file exporters and collectors write it.

One `TracesData` object per line (the OpenTelemetry SDKs' OTLP JSON file exporter, the collector's file exporter),
or one whole object, pretty-printed (a back end's export):

    {"resourceSpans": [{"resource": {"attributes": [...]}, "scopeSpans": [{"scope": {...}, "spans": [
        {"traceId": "...", "spanId": "...", "parentSpanId": "...", "name": "tools/call add", "kind": 2,
         "startTimeUnixNano": "1796425137095649200", "endTimeUnixNano": "...",
         "attributes": [{"key": "mcp.method.name", "value": {"stringValue": "tools/call"}}, ...],
         "status": {"code": 2, "message": "..."}}]}]}]}

Spans named by the semantic conventions for MCP (`model/semconv.py`): `mcp.method.name`, `jsonrpc.request.id`,
`mcp.session.id`, `gen_ai.tool.name`, `rpc.response.status_code` and `error.type`. The MCP Python SDK 2.x makes a
SERVER span for every request it handles (from its dispatch to its handler's return, error or cancellation) and
a CLIENT span for every request it sends (from the send to the reply, error or the caller giving up).

Each request span becomes one exchange: the request at the span's start and its end at the span's end, an error
where the span's status or attributes say so (`error.type` `tool_error` is a result with `isError`). Spans with no
`mcp.method.name` (HTTP, database) are not MCP and are passed over, as are notification spans (no request id: a
`notifications/cancelled` span names no request). A SERVER span is recorded where the request is handled, a
CLIENT span where it is sent: the session's vantage. One session per (vantage, `service.name`,
`service.instance.id`, `mcp.session.id`), or `cancelwire.session.key` in cancelwire's own `--format otlp`
(whose `mcp.cancel` events and findings are not read back). Exporters write a span when it ends, so events are
put in time order within the last `MAX_HELD` spans read. An id is read as an integer when it is written as one or
as decimal digits (the conventions make it a string: its JSON type is not recorded).

What a trace cannot show (`UNRECORDED`, not judged, and the report says so): any cancel (a cancel notification's
span names no request), progress and other messages, the transport's closes and resets, and whether a reply
was sent at all (a handler the SDK cancelled ends its span and sends nothing). With `--merge` beside a transcript
or a capture of the same session, a SERVER span says when the handler stopped (`merge/spans.py`).
"""

from __future__ import annotations

import hashlib
import heapq
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ...errors import InputError
from ...model import Anomaly, AnomalyName, Direction, EntryKind, Event, Transport, Vantage, semconv
from ...model.jsonrpc import dumps, loads_any
from ...model.revisions import META_VERSION_KEY
from ...model.timestamps import plausible
from ..base import InputSource, ReadOptions
from ..event_factory import EventFactory
from ..lines import RawLine, source_lines
from ..source import read_up_to
from ..text.hostlog import SERVER_METHODS, LogSessions

SAFE_SESSION_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")
"""An `mcp.session.id` kept as it is in the session's key (`Mcp-Session-Id` values are visible ASCII)."""
OWN_SESSION_KEY = "cancelwire.session.key"
"""The session a span of cancelwire's own `--format otlp` belongs to (its spans carry no `mcp.session.id`)."""
UNRECORDED = frozenset(EntryKind) - {EntryKind.REQUEST, EntryKind.RESULT, EntryKind.ERROR_RESULT}
"""What a trace cannot show: everything but requests and their ends (a span's end stands for its reply)."""
MAX_HELD = 4096
"""Spans whose events wait to be put in time order (an exporter writes each span when it ends)."""
MAX_DOCUMENT_BYTES = 64 << 20
"""A whole (pretty-printed) trace larger than this is refused; a JSON Lines trace is read line by line."""
MAX_ATTRIBUTES = 256
"""Attributes read per span or resource (the conventions set about ten)."""
TEXT_CHARS = 200
_SNIFF = re.compile(rb'\A\s*\{\s*"resource_?[sS]pans"\s*:')
_SPAN_ID_KEY = re.compile(rb'"spanId"\s*:')
_HEX = re.compile(r"[0-9a-fA-F]{1,32}")
_INTEGER = re.compile(r"0|-?[1-9][0-9]{0,14}")
_TRANSPORTS = {"pipe": Transport.STDIO, "tcp": Transport.STREAMABLE_HTTP, "quic": Transport.STREAMABLE_HTTP}
_VANTAGE = {  # (span kind, the requester is the client) -> where the span was recorded
    (semconv.SPAN_KIND_SERVER, True): Vantage.SERVER,
    (semconv.SPAN_KIND_CLIENT, True): Vantage.CLIENT,
    (semconv.SPAN_KIND_SERVER, False): Vantage.CLIENT,
    (semconv.SPAN_KIND_CLIENT, False): Vantage.SERVER,
}
Make = Callable[[], Iterator[Event]]
_OTHER = {Direction.C2S: Direction.S2C, Direction.S2C: Direction.C2S}


class OtlpReader:
    name = "otlp"

    def sniff(self, head: bytes) -> bool:
        return _SNIFF.match(head) is not None

    def read(self, source: InputSource, options: ReadOptions) -> Iterator[Event]:
        trace = _Trace(source, options, self.name)
        for line, value in _documents(source, options, trace.factory):
            if isinstance(value, Anomaly):
                yield value
            elif isinstance(value, str):
                yield trace.factory.anomaly(line, None, None, AnomalyName.INPUT_BAD_RECORD, value)
            else:
                yield from trace.document(line, value)
            yield from trace.due()
        yield from trace.finish()


def _documents(
    source: InputSource, options: ReadOptions, factory: EventFactory
) -> Iterator[tuple[int, Spans | Anomaly | str]]:
    """(line, its spans) per TracesData document; (line, what is wrong) for one that is not, or the anomaly of a
    line that could not be read (its size, its bytes)."""
    head = source.head()
    first = next((line.strip() for line in head.split(b"\n") if line.strip()), b"")
    if first == b"{":
        yield from _whole(source, options)
        return
    for raw in source_lines(source, options.inflate):
        yield from _line(raw, factory)


def _line(raw: RawLine, factory: EventFactory) -> Iterator[tuple[int, Spans | Anomaly | str]]:
    text, problems = factory.text_of(raw, None)
    for problem in problems:
        yield raw.number, problem
    if text is None or not text.strip():
        return
    ok, value = loads_any(text)
    if not ok:
        cut = " (the last line has no newline: the input was cut?)" if raw.unterminated else ""
        yield raw.number, f"not an OTLP/JSON TracesData object: not JSON{cut}: {text[:80]!r}"
    else:
        yield raw.number, _traces_data(value)


def _whole(source: InputSource, options: ReadOptions) -> Iterator[tuple[int, Spans | Anomaly | str]]:
    """One pretty-printed TracesData: each span's line is where its `"spanId"` key is."""
    with source.open_binary(options.inflate) as stream:
        data = read_up_to(stream, MAX_DOCUMENT_BYTES + 1, source.name)
    if len(data) > MAX_DOCUMENT_BYTES:
        raise InputError(
            source.name,
            f"an OTLP/JSON document larger than {MAX_DOCUMENT_BYTES >> 20} MiB: not read",
            "export it as JSON Lines (one TracesData a line), as the OpenTelemetry file exporters do",
        )
    ok, value = loads_any(data)
    if not ok:
        yield 1, f"not an OTLP/JSON TracesData object: not JSON (cut or damaged?): {data[:60]!r}"
        return
    lines = [data.count(b"\n", 0, m.start()) + 1 for m in _SPAN_ID_KEY.finditer(data)]
    yield 1, _traces_data(value, lines)


@dataclass(slots=True)
class Spans:
    """The span objects of one TracesData, each with its resource's attributes, and the line of each when known."""

    spans: list[tuple[dict[str, Any], Any]] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    skipped: int = 0
    """resourceSpans or scopeSpans entries that are not objects, or hold no list where their spans are."""


def _traces_data(value: Any, lines: list[int] | None = None) -> Spans | str:
    if not isinstance(value, dict):
        return "not an OTLP/JSON TracesData object (not a JSON object)"
    resources = value.get("resourceSpans", value.get("resource_spans"))
    if not isinstance(resources, list):
        return "an OTLP/JSON object without a resourceSpans list"
    found = Spans()
    for resource_spans in resources:
        scopes = _object(resource_spans).get("scopeSpans", _object(resource_spans).get("instrumentationLibrarySpans"))
        if not isinstance(scopes, list):
            found.skipped += 1
            continue
        resource = _attributes(_object(resource_spans.get("resource")).get("attributes"))
        for scope in scopes:
            spans = _object(scope).get("spans")
            if not isinstance(spans, list):
                found.skipped += 1
                continue
            found.spans.extend((resource, span) for span in spans)
    found.lines = lines if lines is not None and len(lines) == len(found.spans) else []
    return found


class _Trace:
    """The reading of one trace: sessions per vantage, and the events waiting to be put in time order."""

    def __init__(self, source: InputSource, options: ReadOptions, name: str) -> None:
        self.source = source
        self.options = options
        self.name = name
        self.factory = EventFactory(source.name)
        self.sessions: dict[Vantage, LogSessions] = {}
        self.held: list[tuple[float, int, Make]] = []
        self.order = 0
        self.read = 0
        """MCP request spans read."""
        self.spans = 0

    def document(self, line: int, spans: Spans) -> Iterator[Event]:
        if spans.skipped:
            what = f"{spans.skipped} resourceSpans or scopeSpans entry(ies) with no list of spans: not read"
            yield self.factory.anomaly(line, None, None, AnomalyName.INPUT_BAD_RECORD, what)
        for index, (resource, span) in enumerate(spans.spans):
            self.spans += 1
            at = spans.lines[index] if spans.lines else line
            found = _Span.of(span, resource)
            if isinstance(found, str):
                yield self.factory.anomaly(at, None, None, AnomalyName.INPUT_BAD_RECORD, found)
            elif found is not None:
                yield from self.span(at, found)

    def span(self, line: int, span: _Span) -> Iterator[Event]:
        known = _VANTAGE.get((span.kind, span.requester is Direction.C2S), Vantage.UNKNOWN)
        sessions = self.sessions.get(known)
        if sessions is None:
            sessions = self.sessions[known] = LogSessions(
                self.source, self.name, self.options, known, unrecorded=UNRECORDED
            )
            sessions.factory = self.factory  # one numbering of the input's events, whatever the vantage
        group = span.group(known)
        if group not in sessions.labels:
            sessions.labels[group] = span.label
            sessions.transports[group] = span.transport
        yield from sessions.begin(group, line, span.start)
        if sessions.refused:
            return
        key = sessions.key(group)
        if span.end_before_start:
            what = f"span {span.span_id!r} ({span.method}) ends before it starts: its end is taken at its start"
            yield self.factory.anomaly(line, span.start, key, AnomalyName.INPUT_BAD_RECORD, what)
        self.read += 1
        request, end = span.texts()
        self._hold(span.start, lambda: self._messages(request, line, span.start, key, span.requester))
        self._hold(span.end, lambda: self._messages(end, line, span.end, key, _OTHER[span.requester]))

    def _messages(self, text: str, line: int, ts: float, key: str, direction: Direction) -> Iterator[Event]:
        return self.factory.messages(text, line=line, ts=ts, session_key=key, direction=direction)

    def _hold(self, ts: float, make: Make) -> None:
        self.order += 1
        heapq.heappush(self.held, (ts, self.order, make))

    def due(self) -> Iterator[Event]:
        while len(self.held) > MAX_HELD:
            yield from heapq.heappop(self.held)[2]()

    def finish(self) -> Iterator[Event]:
        while self.held:
            yield from heapq.heappop(self.held)[2]()
        if not self.read:
            what = f"no span of the trace ({self.spans} read) is an MCP request (mcp.method.name, jsonrpc.request.id)"
            yield self.factory.anomaly(1, None, None, AnomalyName.INPUT_BAD_RECORD, what + ": nothing to audit")


class _Span:
    """One MCP request span, checked."""

    __slots__ = (
        "attributes",
        "end",
        "end_before_start",
        "kind",
        "method",
        "request_id",
        "requester",
        "resource",
        "span_id",
        "start",
        "status",
        "status_message",
    )

    def __init__(self, value: dict[str, Any], resource: dict[str, Any], attributes: dict[str, Any]) -> None:
        self.resource = resource
        self.attributes = attributes
        self.method: str = attributes[semconv.METHOD][:TEXT_CHARS]
        self.request_id: int | str = _request_id(attributes[semconv.REQUEST_ID])
        self.requester = Direction.S2C if self.method in SERVER_METHODS else Direction.C2S
        kind: int | str = value.get("kind", 0)  # checked by `of` (OTLP/JSON leaves out a kind of 0)
        self.kind = semconv.SPAN_KINDS.get(kind, 0) if isinstance(kind, str) else kind
        span_id = value.get("spanId")
        self.span_id = span_id if isinstance(span_id, str) and _HEX.fullmatch(span_id) else "?"
        self.start: float = _seconds(value.get("startTimeUnixNano"))  # type: ignore[assignment]
        end = _seconds(value.get("endTimeUnixNano"))
        self.end_before_start = end is None or end < self.start
        self.end: float = self.start if end is None or end < self.start else end
        status = _object(value.get("status"))
        code = status.get("code")
        self.status = (
            semconv.STATUS_CODES.get(code, 0) if isinstance(code, str) else code if isinstance(code, int) else 0
        )
        message = status.get("message")
        self.status_message = message[:TEXT_CHARS] if isinstance(message, str) else ""

    @classmethod
    def of(cls, value: Any, resource: dict[str, Any]) -> _Span | str | None:
        """The span; None for one that is no MCP request (passed over); what is wrong with a bad one."""
        if not isinstance(value, dict):
            return "a span that is not a JSON object: not read"
        attributes = _attributes(value.get("attributes"))
        method, request_id = attributes.get(semconv.METHOD), attributes.get(semconv.REQUEST_ID)
        if not isinstance(method, str):  # no MCP span (HTTP, a database), unless it names a JSON-RPC request
            return None if request_id is None else f"a span with {semconv.REQUEST_ID} but no {semconv.METHOD}: not read"
        if request_id is None and method.startswith("notifications/"):
            return None
        name = f"span {str(value.get('spanId'))[:40]!r} ({method[:60]})"
        if not isinstance(request_id, str | int) or isinstance(request_id, bool):
            return f"{name} has no {semconv.REQUEST_ID}: not read"
        start = _seconds(value.get("startTimeUnixNano"))
        if start is None:
            shown = str(value.get("startTimeUnixNano"))[:40]
            return f"{name} has no start time that is a clock reading ({shown!r}): not read"
        kind = value.get("kind", 0)
        if not (isinstance(kind, int) and not isinstance(kind, bool)) and not isinstance(kind, str):
            return f"{name} has a kind that is not a number or a name ({str(kind)[:40]!r}): not read"
        return cls(value, resource, attributes)

    def group(self, vantage: Vantage) -> str:
        """The session the span belongs to: `{vantage}-{mcp.session.id}` when that is a plain id (`SESSION_GROUP`:
        what `--merge` pairs with a capture's `{source}#{Mcp-Session-Id}` session), else a short digest (recorded
        names are any text)."""
        sid = self.attributes.get(semconv.SESSION_ID)
        if isinstance(sid, str) and SAFE_SESSION_ID.fullmatch(sid):
            return f"{vantage.value}-{sid}"
        names = [self.resource.get(semconv.SERVICE_NAME), self.resource.get(semconv.SERVICE_INSTANCE)]
        session = sid if sid is not None else self.attributes.get(OWN_SESSION_KEY)
        parts = [vantage.value, *map(str, names), str(session)]
        return "trace-" + hashlib.sha256("\n".join(parts).encode("utf-8", "replace")).hexdigest()[:16]

    @property
    def label(self) -> str:
        service = self.resource.get(semconv.SERVICE_NAME)
        label = service[:TEXT_CHARS] if isinstance(service, str) and service else "trace"
        session = self.attributes.get(semconv.SESSION_ID)
        return f"{label} {str(session)[:60]}" if session is not None else label

    @property
    def transport(self) -> Transport:
        said = self.attributes.get(semconv.NETWORK_TRANSPORT)
        if isinstance(said, str) and said in _TRANSPORTS:
            return _TRANSPORTS[said]
        return Transport.STREAMABLE_HTTP if semconv.SESSION_ID in self.attributes else Transport.STDIO

    def texts(self) -> tuple[str, str]:
        """The request, and the end the span records (its JSON-RPC text)."""
        params: dict[str, Any] = {}
        target = self.attributes.get(semconv.TOOL_NAME) or self.attributes.get(semconv.PROMPT_NAME)
        if isinstance(target, str):
            params["name"] = target[:TEXT_CHARS]
        version = self.attributes.get(semconv.PROTOCOL_VERSION)
        if isinstance(version, str):  # the revision of the request (2026-07-28 declares it per request)
            params["_meta"] = {META_VERSION_KEY: version[:TEXT_CHARS]}
        request = {"jsonrpc": "2.0", "id": self.request_id, "method": self.method, "params": params}
        end: dict[str, Any] = {"jsonrpc": "2.0", "id": self.request_id}
        error = self.attributes.get(semconv.ERROR_TYPE)
        if error == semconv.TOOL_ERROR:
            end["result"] = {"isError": True, "content": []}
        elif error is not None or self.status == semconv.STATUS_ERROR:
            code = _code(self.attributes.get(semconv.STATUS_CODE), error)
            said = self.status_message or f"{semconv.ERROR_TYPE} {str(error)[:60]!r}"
            end["error"] = {"code": code, "message": said}
        else:
            end["result"] = {}
        return dumps(request).decode(), dumps(end).decode()


def _attributes(value: Any) -> dict[str, Any]:
    """An OTLP attribute list as {key: scalar} (the first `MAX_ATTRIBUTES`; arrays and maps are left out)."""
    found: dict[str, Any] = {}
    for item in value[:MAX_ATTRIBUTES] if isinstance(value, list) else ():
        item = _object(item)
        key, typed = item.get("key"), _object(item.get("value"))
        if not isinstance(key, str) or len(typed) != 1:
            continue
        ((kind, scalar),) = typed.items()
        if kind == "stringValue" and isinstance(scalar, str):
            found[key] = scalar
        elif kind == "intValue" and isinstance(scalar, str | int) and not isinstance(scalar, bool):
            number = str(scalar)
            if _INTEGER.fullmatch(number):
                found[key] = int(number)
        elif kind == "boolValue" and isinstance(scalar, bool):
            found[key] = scalar
    return found


def _request_id(value: str | int) -> int | str:
    if isinstance(value, int):
        return value
    return int(value) if _INTEGER.fullmatch(value) else value[:TEXT_CHARS]


def _code(status_code: Any, error: Any) -> int:
    """The JSON-RPC error code the span names (`rpc.response.status_code`, or an `error.type` that is one);
    -32603 (internal error) when it names none (an exception's type)."""
    for said in (status_code, error):
        text = str(said) if isinstance(said, str | int) and not isinstance(said, bool) else ""
        if _INTEGER.fullmatch(text):
            return int(text)
    return -32603


def _seconds(value: Any) -> float | None:
    """A `*TimeUnixNano` (a decimal string, or a number) as epoch seconds; None when it is no clock reading."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        return None
    text = str(value)
    if not text.isdigit() or len(text) > 20 or int(text) == 0:
        return None
    seconds = int(text) / 1e9
    return seconds if plausible(seconds) else None


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


READER = OtlpReader()
