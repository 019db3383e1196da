"""`--format otlp`: the audit as OpenTelemetry traces in OTLP/JSON, for a tracing back end.

One resource per recording (input file), one trace per MCP session: a root span for the session from its first
to its last message, and under it one span per request from its first to its last message, named and
attributed by the OpenTelemetry semantic conventions for MCP (`{mcp.method.name} {target}` names, kind CLIENT,
`mcp.method.name`, `jsonrpc.request.id`, `mcp.session.id`, `mcp.protocol.version`, `network.transport`,
`network.protocol.name`, `gen_ai.tool.name` and `gen_ai.operation.name`; on an error reply `error.type` and
`rpc.response.status_code` the JSON-RPC error code, on a tool's `isError` result `error.type` `tool_error`, and
the status ERROR). What the conventions do not name is under `cancelwire.`: a cancelled request's span has a
`cancelwire.cancel` event at the cancel with its mechanism, and the call's outcome as attributes; each finding
is a `cancelwire.finding` event (rule id, slug, severity, certainty, message) on its request's span, or on the
session's when it names no request.

Ids are derived from the session key and request (SHA-256), so a report of the same recording has the same
trace and span ids. In OTLP/JSON `traceId` and `spanId` are hex strings and enums and 64-bit integers are
written as numbers and strings, as the OTLP specification says. Every recorded string (method, tool, label,
message) is made inert for a one-line display (`inert.terminal`) and cut at `MAX_VALUE_CHARS`.

Requests come from the exchange table (`AuditResult.exchanges`, kept when this format or `--otlp-endpoint` is
asked for); a request without any time (a go-sdk log) has no span and is counted on its resource
(`cancelwire.spans.untimed`). An error reply whose code is not a 64-bit integer has `error.type` `_OTHER`.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import defaultdict
from typing import Any, TextIO

from .._version import __version__
from ..ci.gates import Triage
from ..model import Finding, Session
from ..support import inert
from .formats import WriteOptions

MAX_VALUE_CHARS = 256
"""Longest attribute string (a finding's message may be longer: `MAX_MESSAGE_CHARS`)."""
MAX_MESSAGE_CHARS = 1024
SPAN_KIND_INTERNAL, SPAN_KIND_CLIENT = 1, 3
STATUS_UNSET, STATUS_ERROR = 0, 2
_TARGETS = {"tools/call": "gen_ai.tool.name"}
_TRANSPORT = {"stdio": "pipe", "streamable-http": "tcp", "http-sse": "tcp"}
_HTTP = frozenset({"streamable-http", "http-sse"})
ERROR_OTHER, TOOL_ERROR = "_OTHER", "tool_error"
"""`error.type` of an error reply without a usable code, and of a tool's result that says it failed."""
_Key = tuple[str | None, str, str | None]
"""(session key, request id as text, method) a finding is about; '' and None when it names no request."""


def write_format(triage: Triage, out: TextIO, fmt: str, options: WriteOptions) -> None:
    out.write(inert.json_text(json.dumps(traces(triage), ensure_ascii=False)))
    out.write("\n")


def traces(triage: Triage) -> dict[str, Any]:
    """The OTLP/JSON `TracesData` document of an audit."""
    result = triage.result
    events = _finding_events(result.findings)
    outcomes = {(c.session_key, str(c.request_id), c.method): c for c in result.cancellations}
    spans: dict[str, list[dict[str, Any]]] = defaultdict(list)
    untimed: dict[str, int] = defaultdict(int)
    sessions = {s.key: s for s in result.sessions}
    for row in result.exchanges or ():
        session = sessions.get(row["session"])
        if session is None:
            continue
        found = events.pop((row["session"], row["request_id"], row["method"]), [])
        span = _request_span(row, session, [event for _, event in found])
        if span is None:
            untimed[session.source] += 1
            continue
        call = outcomes.get((row["session"], row["request_id"], row["method"]))
        if call is not None:
            span["attributes"] += _attributes(
                {"cancelwire.cancel.outcome": call.outcome.value, "cancelwire.cancel.certainty": call.certainty.value}
            )
        spans[session.source].append(span)
    for session in result.sessions:
        left = [e for (key, _, _), found in events.items() if key == session.key for _, e in found]
        spans[session.source].insert(0, _session_span(session, left))
    for source, about in _input_events(events, sessions).items():
        spans[source].insert(0, _input_span(source, about))
    resources = [
        {
            "resource": {
                "attributes": _attributes(
                    {
                        "service.name": "cancelwire",
                        "cancelwire.input": source,
                        "cancelwire.spans.untimed": untimed[source],
                    }
                )
            },
            "scopeSpans": [{"scope": {"name": "cancelwire", "version": __version__}, "spans": found}],
        }
        for source, found in spans.items()
    ]
    return {"resourceSpans": resources}


def _request_span(row: dict[str, Any], session: Session, found: list[dict[str, Any]]) -> dict[str, Any] | None:
    start, end = row["request_ts"], row["last_ts"]
    if not _timed(start):
        return None
    end = end if _timed(end) and end >= start else start
    method, tool = _text(row["method"]), _text(row["tool"])
    attributes: dict[str, Any] = {
        "mcp.method.name": method,
        "jsonrpc.request.id": _text(row["request_id"]),
        "cancelwire.requester": row["requester"],
        "cancelwire.session.key": _text(session.key),
        **_session_attributes(row["session_id"], row["revision"] or session.revision, row["transport"]),
    }
    if tool and method in _TARGETS:
        attributes[_TARGETS[method]] = tool
        attributes["gen_ai.operation.name"] = "execute_tool"
    attributes.update(_error_attributes(row))
    events = list(found)
    if row["cancelled"]:
        cancel_at = row["cancel_ts"] if _timed(row["cancel_ts"]) else start
        events.append(_event("cancelwire.cancel", cancel_at, {"cancelwire.cancel.mechanism": row["mechanism"]}))
    span = {
        "traceId": _id(session.key, 16),
        "spanId": _id(f"{session.key}\n{row['requester']}\n{row['request_id']}\n{row['method']}", 8),
        "parentSpanId": _session_span_id(session.key),
        "name": f"{method} {tool}" if tool and method in _TARGETS else method,
        "kind": SPAN_KIND_CLIENT,
        "startTimeUnixNano": _nanos(start),
        "endTimeUnixNano": _nanos(end),
        "attributes": _attributes(attributes),
        "events": sorted(events, key=lambda e: int(e["timeUnixNano"])),
        "status": {"code": STATUS_ERROR if "error.type" in attributes else STATUS_UNSET},
    }
    return span


def _session_attributes(session_id: str, revision: str | None, transport: str) -> dict[str, str]:
    """The conventions' session and network attributes of a span (on each request's, as they ask, and the
    session's)."""
    attributes = {"mcp.session.id": _text(session_id)} if session_id else {}
    if revision:
        attributes["mcp.protocol.version"] = _text(revision)
    attributes["network.transport"] = _TRANSPORT.get(transport, "unknown")
    if transport in _HTTP:
        attributes["network.protocol.name"] = "http"
    return attributes


def _error_attributes(row: dict[str, Any]) -> dict[str, str]:
    """`error.type` and `rpc.response.status_code`: the JSON-RPC error code as text (the conventions), `_OTHER`
    for an error without a usable one, `tool_error` for a tool's result that says it failed."""
    if row["reply"] == "error-result":
        code = row["error_code"]
        if isinstance(code, int) and not isinstance(code, bool):
            return {"error.type": str(code), "rpc.response.status_code": str(code)}
        return {"error.type": ERROR_OTHER}
    if row["tool_error"]:
        return {"error.type": TOOL_ERROR}
    return {}


def _session_span(session: Session, found: list[dict[str, Any]]) -> dict[str, Any]:
    start = session.first_ts if session.first_ts is not None and _timed(session.first_ts) else 0.0
    end = session.last_ts if session.last_ts is not None and _timed(session.last_ts) else start
    end = max(start, end)
    label = _text(session.label or session.key)
    attributes = {
        "cancelwire.session.key": _text(session.key),
        "cancelwire.input.format": session.input_format,
        "cancelwire.vantage": session.vantage.value,
        "cancelwire.transport": session.transport.value,
        **_session_attributes(session.session_id or "", session.revision, session.transport.value),
    }
    return {
        "traceId": _id(session.key, 16),
        "spanId": _session_span_id(session.key),
        "name": f"mcp session {label}",
        "kind": SPAN_KIND_INTERNAL,
        "startTimeUnixNano": _nanos(start),
        "endTimeUnixNano": _nanos(end),
        "attributes": _attributes(attributes),
        "events": sorted(found, key=lambda e: int(e["timeUnixNano"])),
        "status": {"code": STATUS_UNSET},
    }


def _input_events(
    events: dict[_Key, list[tuple[str, dict[str, Any]]]], sessions: dict[str, Session]
) -> dict[str, list[dict[str, Any]]]:
    """The events of findings about an input as a whole (no session, or one the result does not hold), by input."""
    by_input: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for (key, _, _), found in events.items():
        if key is None or key not in sessions:
            for source, event in found:
                by_input[source].append(event)
    return by_input


def _input_span(source: str, found: list[dict[str, Any]]) -> dict[str, Any]:
    """A span for the findings about a recording as a whole (an unreadable line, a capture without MCP)."""
    at = min((int(e["timeUnixNano"]) for e in found), default=0)
    return {
        "traceId": _id(f"input\n{source}", 16),
        "spanId": _id(f"input\n{source}", 8),
        "name": "recording " + _text(source),
        "kind": SPAN_KIND_INTERNAL,
        "startTimeUnixNano": str(at),
        "endTimeUnixNano": str(at),
        "attributes": _attributes({"cancelwire.input": _text(source)}),
        "events": sorted(found, key=lambda e: int(e["timeUnixNano"])),
        "status": {"code": STATUS_UNSET},
    }


def _finding_events(findings: Any) -> dict[_Key, list[tuple[str, dict[str, Any]]]]:
    """Each finding as an event with the input it cites, by (session, request id, method); '' for a finding that
    names no request."""
    events: dict[_Key, list[tuple[str, dict[str, Any]]]] = defaultdict(list)
    for finding in findings:
        key = _finding_key(finding)
        attributes = {
            "cancelwire.rule.id": finding.rule_id,
            "cancelwire.rule.slug": finding.rule,
            "cancelwire.rule.rev": finding.rule_rev,
            "cancelwire.severity": finding.severity.value,
            "cancelwire.certainty": finding.certainty.value,
            "cancelwire.message": _text(finding.message, MAX_MESSAGE_CHARS),
        }
        if finding.evidence:
            attributes["cancelwire.evidence"] = _text(finding.evidence[0].display())
        source = finding.evidence[0].source if finding.evidence else ""
        events[key].append((source, _event("cancelwire.finding", finding.ts or 0.0, attributes)))
    return events


def _finding_key(finding: Finding) -> _Key:
    if finding.request_id is None:
        return finding.session_key, "", None
    return finding.session_key, str(finding.request_id), finding.method


def _event(name: str, ts: float, attributes: dict[str, Any]) -> dict[str, Any]:
    return {"timeUnixNano": _nanos(ts), "name": name, "attributes": _attributes(attributes)}


def _attributes(values: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for key, value in values.items():
        if isinstance(value, bool):
            typed: dict[str, Any] = {"boolValue": value}
        elif isinstance(value, int):
            typed = {"intValue": str(value)}
        else:
            typed = {"stringValue": str(value)}
        out.append({"key": key, "value": typed})
    return out


def _text(value: Any, limit: int = MAX_VALUE_CHARS) -> str:
    """Recorded text for an attribute: inert on one line, and bounded."""
    text = inert.terminal(str(value))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _timed(ts: Any) -> bool:
    return isinstance(ts, float | int) and not isinstance(ts, bool) and math.isfinite(ts) and ts >= 0


def _nanos(ts: float) -> str:
    return str(round(ts * 1e9)) if _timed(ts) else "0"


def _session_span_id(key: str) -> str:
    return _id(f"session\n{key}", 8)


def _id(key: str, size: int) -> str:
    return hashlib.sha256(key.encode("utf-8", "replace")).hexdigest()[: size * 2]
