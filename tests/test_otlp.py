"""`--format otlp`: OTLP/JSON traces that the official opentelemetry-proto classes parse as `TracesData`, with one
span per request, MCP semantic-convention attributes, the cancel and each finding as events, bounded and inert."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from cancelwire.api import audit
from cancelwire.ci.gates import Triage
from cancelwire.reports.otlp import MAX_VALUE_CHARS, traces
from google.protobuf import json_format
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status, TracesData
from test_cli import run

ROOT = Path(__file__).resolve().parents[1]
HTTP = "tests/fixtures/mcpsnoop/http-sdk-cancel-notification.jsonl"
STDIO = "sample_captures/stdio/handwritten-server-late-result-after-cancel.jsonl"


def parsed(document: dict[str, Any]) -> TracesData:
    """OTLP/JSON writes trace and span ids in hex (the OTLP specification); protobuf's JSON mapping reads bytes in
    base64: the ids are checked and converted, everything else is parsed as written."""
    converted = json.loads(json.dumps(document))
    for resource in converted["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for field, size in (("traceId", 16), ("spanId", 8), ("parentSpanId", 8)):
                    if field in span:
                        raw = bytes.fromhex(span[field])
                        assert len(raw) == size, (field, span[field])
                        span[field] = base64.b64encode(raw).decode()
    return json_format.ParseDict(converted, TracesData())


def _attributes(item: Any) -> dict[str, Any]:
    return {a.key: getattr(a.value, a.value.WhichOneof("value")) for a in item.attributes}


def _spans(data: TracesData) -> list[Span]:
    return [span for r in data.resource_spans for s in r.scope_spans for span in s.spans]


def _traces(path: str, monkeypatch: pytest.MonkeyPatch) -> TracesData:
    monkeypatch.chdir(ROOT)
    return parsed(traces(Triage(audit([path]))))


def test_http_session_as_traces(monkeypatch: pytest.MonkeyPatch) -> None:
    data = _traces(HTTP, monkeypatch)
    (resource,) = data.resource_spans
    assert _attributes(resource.resource) == {
        "service.name": "cancelwire",
        "cancelwire.input": HTTP,
        "cancelwire.spans.untimed": 0,
    }
    session, *requests = _spans(data)
    assert session.name == "mcp session http-ledger" and session.kind == Span.SPAN_KIND_INTERNAL
    assert [(s.name, s.parent_span_id == session.span_id, s.trace_id == session.trace_id) for s in requests] == [
        ("initialize", True, True),
        ("tools/list", True, True),
        ("tools/call slow_write", True, True),
    ]
    call = requests[2]
    assert _attributes(call) == {
        "mcp.method.name": "tools/call",
        "jsonrpc.request.id": "3",
        "cancelwire.requester": "client",
        "cancelwire.session.key": f"{HTTP}#3e8b6f1a0c2d4957#1",
        "mcp.protocol.version": "2025-11-25",
        "gen_ai.tool.name": "slow_write",
        "gen_ai.operation.name": "execute_tool",
        "network.transport": "tcp",
        "network.protocol.name": "http",
        "error.type": "-32800",
        "rpc.response.status_code": "-32800",
        "cancelwire.cancel.outcome": "late-result-violation",
        "cancelwire.cancel.certainty": "exact",
    }
    assert call.status.code == call.status.STATUS_CODE_ERROR
    span_ns = call.end_time_unix_nano - call.start_time_unix_nano  # 13.903119 s to 14.918449 s
    assert span_ns == pytest.approx(1_015_330_000, abs=2000)
    cancel, finding = sorted(call.events, key=lambda e: e.name)
    assert (cancel.name, _attributes(cancel)) == ("cancelwire.cancel", {"cancelwire.cancel.mechanism": "notification"})
    assert finding.name == "cancelwire.finding"
    assert {k: v for k, v in _attributes(finding).items() if k != "cancelwire.message"} == {
        "cancelwire.rule.id": "CW101",
        "cancelwire.rule.slug": "response-after-cancel",
        "cancelwire.rule.rev": 2,
        "cancelwire.severity": "warning",
        "cancelwire.certainty": "exact",
        "cancelwire.evidence": f"{HTTP}:8",
    }
    assert cancel.time_unix_nano < finding.time_unix_nano <= call.end_time_unix_nano


def test_ids_are_stable(monkeypatch: pytest.MonkeyPatch) -> None:
    first = [(s.trace_id, s.span_id) for s in _spans(_traces(STDIO, monkeypatch))]
    assert first == [(s.trace_id, s.span_id) for s in _spans(_traces(STDIO, monkeypatch))]
    assert len({span for _, span in first}) == len(first)


def test_findings_without_a_request_go_on_the_session_or_the_recording(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "snoop.jsonl"
    record = {"session_id": "s", "server_label": "x", "seq": 1, "ts": "2026-06-27T19:29:00Z", "transport": "stdio"}
    lines = [
        json.dumps(record | {"direction": "c2s", "raw": {"jsonrpc": "2.0", "id": 1, "method": "ping"}}),
        json.dumps(record | {"seq": 5, "direction": "s2c", "raw": {"jsonrpc": "2.0", "id": 1, "result": {}}}),
        "not json",
    ]
    log.write_text("\n".join(lines) + "\n")
    monkeypatch.chdir(tmp_path)
    data = parsed(traces(Triage(audit(["snoop.jsonl"]))))
    events = {e.name + ":" + str(_attributes(e)["cancelwire.rule.id"]) for s in _spans(data) for e in s.events}
    assert events == {"cancelwire.finding:CW950", "cancelwire.finding:CW901"}


def test_recorded_text_is_bounded_and_inert(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tool = "\x1b]0;pwned\x07" + "t" * 5000
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool}}
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"ts": 1.0, "dir": "c2s", "line": json.dumps(call)}) + "\n")
    monkeypatch.chdir(tmp_path)
    data = parsed(traces(Triage(audit(["t.jsonl"]))))
    span = _spans(data)[1]
    name = _attributes(span)["gen_ai.tool.name"]
    assert len(name) == MAX_VALUE_CHARS and name.startswith("\\x1b]0;pwned\\x07")
    assert "\x1b" not in span.name and len(span.name) < MAX_VALUE_CHARS + 20


def test_the_command_writes_otlp(tmp_path: Path) -> None:
    out = tmp_path / "traces.json"
    proc = run("audit", STDIO, "--report", f"otlp={out}", "--format", "otlp")
    assert proc.returncode == 0, proc.stderr
    from_stdout, from_file = json.loads(proc.stdout), json.loads(out.read_text())
    for document in (from_stdout, from_file):
        names = [s.name for s in _spans(parsed(document))]
        label = "/work/main/.venv/bin/python /work/main/scripts/peers/misbehaving_server.py late-result"
        assert names == [f"mcp session {label}", "initialize", "tools/call slow_write"]


CAPTURE = "sample_captures/http/sdk-http-cancel-notification.pcapng"
SESSION_ID = "f39ce014810e439fbe039ed91e035b9b"


def test_a_capture_gives_the_session_id_and_the_error_code(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Python SDK's server answers the cancelled call with -32800 (sample_captures/http/README.md), under
    the Mcp-Session-Id it gave on initialize: the conventions' attributes on every span, error ones on the call."""
    session, *requests = _spans(_traces(CAPTURE, monkeypatch))
    conventions = {
        "mcp.session.id": SESSION_ID,
        "mcp.protocol.version": "2025-11-25",
        "network.transport": "tcp",
        "network.protocol.name": "http",
    }
    assert {k: v for k, v in _attributes(session).items() if not k.startswith("cancelwire.")} == conventions
    assert [s.name for s in requests] == ["initialize", "tools/list", "tools/call slow_write"]
    for span in requests:
        assert span.kind == Span.SPAN_KIND_CLIENT
        assert _attributes(span).items() >= conventions.items()
    *fine, call = requests
    assert [(s.status.code, "error.type" in _attributes(s)) for s in fine] == [(Status.STATUS_CODE_UNSET, False)] * 2
    assert {k: v for k, v in _attributes(call).items() if k.startswith(("error", "rpc", "gen_ai"))} == {
        "error.type": "-32800",
        "rpc.response.status_code": "-32800",
        "gen_ai.tool.name": "slow_write",
        "gen_ai.operation.name": "execute_tool",
    }
    assert call.status.code == Status.STATUS_CODE_ERROR
    assert sorted(e.name for e in call.events) == ["cancelwire.cancel", "cancelwire.finding"]


def test_tool_errors_and_codes_without_a_number(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = [
        (1.0, "c2s", {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "w"}}),
        (1.5, "s2c", {"jsonrpc": "2.0", "id": 1, "result": {"content": [], "isError": True}}),
        (2.0, "c2s", {"jsonrpc": "2.0", "id": 2, "method": "ping"}),
        (2.5, "s2c", {"jsonrpc": "2.0", "id": 2, "error": {"code": 2**63, "message": "past 64 bits"}}),
    ]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps({"ts": ts, "dir": d, "line": json.dumps(m)}) + "\n" for ts, d, m in lines))
    monkeypatch.chdir(tmp_path)
    _, tool, ping = _spans(parsed(traces(Triage(audit(["t.jsonl"])))))
    assert [
        (s.name, s.status.code, {k: v for k, v in _attributes(s).items() if k.startswith(("error", "rpc", "net"))})
        for s in (tool, ping)
    ] == [
        ("tools/call w", Status.STATUS_CODE_ERROR, {"network.transport": "pipe", "error.type": "tool_error"}),
        ("ping", Status.STATUS_CODE_ERROR, {"network.transport": "pipe", "error.type": "_OTHER"}),
    ]
    assert "mcp.session.id" not in _attributes(tool)  # stdio has no session id
