"""The otlp reader: OpenTelemetry traces (OTLP/JSON) as exchanges, alone and merged beside a recording of the same
session; what a trace cannot show; hostile spans. The samples are a real MCP Python SDK 2.3.0 session traced by the
OpenTelemetry SDK's OTLP JSON file exporter (sample_captures/otlp/README.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cancelwire.model import Anomaly, AnomalyName, Direction, MessageEvent, MessageKind, SessionStart, Vantage
from cancelwire.readers import InputSource, ReadOptions, choose_reader
from cancelwire.readers.tools.otlp import READER, UNRECORDED
from cancelwire.run.pipeline import AuditOptions, audit
from reader_audits import ROOT, findings_of, report_of

SAMPLE = ROOT / "sample_captures" / "otlp"
NAME = "sdk-stdio-cancel-handler-runs-on"
SERVER_TRACE = SAMPLE / f"{NAME}.server.otlp.jsonl"
CLIENT_TRACE = SAMPLE / f"{NAME}.client.otlp.jsonl"
TRANSCRIPT = SAMPLE / f"{NAME}.transcript.jsonl"
SERVER_LOG = SAMPLE / f"{NAME}.server.jsonl"
NOT_JUDGED = (
    "the recording cannot show cancel, cancel-answer, gave-up, progress, receive-window-zero, recording-ended, "
    "related-message, server-bytes, stream-closed-by-client, stream-closed-by-server, stream-opened, "
    "stream-reset-by-client, stream-reset-by-server, task-result, task-status, so not judged: response-after-cancel, "
    "progress-after-cancel, late-result-race, cancel-of-initialize, request-never-answered, task-result-after-cancel"
)
"""Over stdio: the rules only HTTP can raise (write-after-disconnect ...) are not listed."""
#: (id, method) of the session's requests, in the order the server started them
REQUESTS = [
    (1, "server/discover"),
    (2, "tools/list"),
    (3, "tools/call"),
    (4, "tools/call"),
    (5, "tools/call"),
    (6, "tools/call"),
    (7, "tools/call"),
    (8, "tools/list"),
    (9, "tools/list"),
    (10, "tools/list"),
]


def _events(path: Path) -> list[Any]:
    return list(READER.read(InputSource(path.name, path), ReadOptions()))


def _span(request_id: Any = "1", method: str = "tools/call", **fields: Any) -> dict[str, Any]:
    attributes = [{"key": "mcp.method.name", "value": {"stringValue": method}}]
    if request_id is not None:
        attributes.append({"key": "jsonrpc.request.id", "value": {"stringValue": request_id}})
    attributes += [{"key": k, "value": {"stringValue": v}} for k, v in fields.pop("attrs", {}).items()]
    span = {
        "traceId": "df62687c5e57c233ae53990fbd9287ff",
        "spanId": "9a25ee30e3e5450d",
        "name": method,
        "kind": 2,
        "startTimeUnixNano": "1796425137056062762",
        "endTimeUnixNano": "1796425137556062762",
        "attributes": attributes,
    }
    return span | fields


def _traces(*spans: Any, resource: list[Any] | None = None) -> dict[str, Any]:
    return {"resourceSpans": [{"resource": {"attributes": resource or []}, "scopeSpans": [{"spans": list(spans)}]}]}


def _write(tmp_path: Path, *lines: Any) -> Path:
    path = tmp_path / "trace.otlp.jsonl"
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines), encoding="utf-8")
    return path


# -- the real samples, alone ----------------------------------------------------------------------------------------


def test_the_server_trace_alone_is_its_requests_and_their_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    report = report_of(SERVER_TRACE, monkeypatch)
    assert findings_of(report) == [] and report["cancellations"] == []
    (session,) = report["sessions"]
    assert (session["format"], session["vantage"], session["transport"], session["protocol_version"]) == (
        "otlp",
        "server",
        "stdio",
        "2026-07-28",
    )
    assert report["unjudged"] == [f"{session['id']}: {NOT_JUDGED}"]
    events = _events(SERVER_TRACE)
    requests = [(e.message.id, e.message.method) for e in events if isinstance(e, MessageEvent) and e.message.method]
    assert requests == REQUESTS
    ends = [(e.origin.line, e.message.id, e.message.kind) for e in events if isinstance(e, MessageEvent)]
    assert [(line, i) for line, i, kind in ends if kind is MessageKind.RESULT] == [
        (1, 1),
        (2, 2),
        (3, 3),
        (4, 4),
        (5, 5),
        (7, 6),
        (8, 7),
        (10, 8),
        (11, 9),
        (12, 10),
    ]
    assert not [e for e in events if isinstance(e, Anomaly)]  # the two notifications/cancelled spans name no request


def test_the_request_and_its_end_are_the_spans_start_and_end() -> None:
    shielded = [e for e in _events(SERVER_TRACE) if isinstance(e, MessageEvent) and e.message.id == 6]
    assert [(e.direction, e.origin.line, e.ts) for e in shielded] == [
        (Direction.C2S, 7, 1796425207.8635364),
        (Direction.S2C, 7, 1796425209.8710284),
    ]
    assert shielded[0].message.payload == {
        "name": "shielded_append",
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"},
    }


def test_the_client_trace_is_the_clients_vantage() -> None:
    (start,) = [e for e in _events(CLIENT_TRACE) if isinstance(e, SessionStart)]
    assert (start.vantage, start.input_format, start.label, start.unrecorded) == (
        Vantage.CLIENT,
        "otlp",
        "cancelwire-sample-client",
        UNRECORDED,
    )


def test_sniffed_and_other_formats_are_not() -> None:
    for path in (SERVER_TRACE, CLIENT_TRACE):
        assert choose_reader(InputSource(path.name, path), None).name == "otlp"
    for path in (TRANSCRIPT, SERVER_LOG):
        assert choose_reader(InputSource(path.name, path), None).name != "otlp"


def test_one_whole_pretty_printed_document_is_read_with_each_spans_line(tmp_path: Path) -> None:
    spans = [_span(str(n), startTimeUnixNano=str(1796425137056062762 + n)) for n in (1, 2)]
    path = tmp_path / "export.json"
    path.write_text(json.dumps(_traces(*spans), indent=2), encoding="utf-8")
    lines = [(e.origin.line, e.message.id) for e in _events(path) if isinstance(e, MessageEvent)]
    text = path.read_text().splitlines()
    at = [n for n, line in enumerate(text, 1) if '"spanId"' in line]
    assert lines == [(at[0], 1), (at[1], 2), (at[0], 1), (at[1], 2)]


# -- spans ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "end"),
    [
        ({}, {"jsonrpc": "2.0", "id": 1, "result": {}}),
        ({"attrs": {"error.type": "tool_error"}, "status": {"code": 2}}, {"isError": True, "content": []}),
        (
            {"attrs": {"error.type": "-32602", "rpc.response.status_code": "-32602"}, "status": {"code": 2}},
            {"code": -32602, "message": "error.type '-32602'"},
        ),
        (
            {"attrs": {"error.type": "ValueError"}, "status": {"code": "STATUS_CODE_ERROR", "message": "bad x"}},
            {"code": -32603, "message": "bad x"},
        ),
    ],
)
def test_the_end_says_what_the_span_says(tmp_path: Path, fields: dict[str, Any], end: dict[str, Any]) -> None:
    events = _events(_write(tmp_path, _traces(_span(**fields))))
    (_, reply) = [e for e in events if isinstance(e, MessageEvent)]
    payload = dict(reply.message.payload)
    assert payload == end.get("result", end) if "jsonrpc" in end else payload == end


def test_kinds_by_name_and_a_server_request_turn_the_vantage(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        _traces(_span("1", kind="SPAN_KIND_CLIENT")),
        _traces(
            _span("2", "sampling/createMessage"), resource=[{"key": "service.name", "value": {"stringValue": "h"}}]
        ),
    )
    starts = [(e.vantage, e.label) for e in _events(path) if isinstance(e, SessionStart)]
    assert starts == [(Vantage.CLIENT, "trace"), (Vantage.CLIENT, "h")]
    sampling = [e.direction for e in _events(path) if isinstance(e, MessageEvent) and e.message.id == 2]
    assert sampling == [Direction.S2C, Direction.C2S]


def test_sessions_are_told_apart_by_mcp_session_id(tmp_path: Path) -> None:
    a, b = ({"mcp.session.id": sid} for sid in ("s-1", "s-2"))
    path = _write(tmp_path, _traces(_span("1", attrs=a), _span("1", attrs=b), _span("2", attrs=a)))
    starts = [(e.label, e.transport.value) for e in _events(path) if isinstance(e, SessionStart)]
    assert starts == [("trace s-1", "streamable-http"), ("trace s-2", "streamable-http")]


@pytest.mark.parametrize(
    ("line", "detail"),
    [
        ('{"resourceSpans": {}}', "an OTLP/JSON object without a resourceSpans list"),
        ("[1]", "not an OTLP/JSON TracesData object (not a JSON object)"),
        ('{"resourceSpans": [', "not an OTLP/JSON TracesData object: not JSON"),
        (json.dumps(_traces(_span(None))), "span '9a25ee30e3e5450d' (tools/call) has no jsonrpc.request.id: not read"),
        (json.dumps(_traces(_span(startTimeUnixNano="9" * 30))), "has no start time that is a clock reading"),
        (json.dumps(_traces(_span(startTimeUnixNano=True))), "has no start time that is a clock reading"),
        (json.dumps(_traces(_span(kind=[2]))), "has a kind that is not a number or a name"),
        (json.dumps(_traces("span")), "a span that is not a JSON object: not read"),
    ],
)
def test_a_bad_record_is_named_and_reading_goes_on(tmp_path: Path, line: str, detail: str) -> None:
    path = _write(tmp_path, line, _traces(_span("5")))
    events = _events(path)
    (anomaly,) = [e for e in events if isinstance(e, Anomaly)]
    assert (anomaly.name, anomaly.origin.line) == (AnomalyName.INPUT_BAD_RECORD, 1) and detail in anomaly.detail
    assert [(e.origin.line, e.message.id) for e in events if isinstance(e, MessageEvent)] == [(2, 5), (2, 5)]


def test_a_span_ending_before_it_starts_is_named_and_kept(tmp_path: Path) -> None:
    events = _events(_write(tmp_path, _traces(_span(endTimeUnixNano="1"))))
    (anomaly,) = [e for e in events if isinstance(e, Anomaly)]
    assert "ends before it starts: its end is taken at its start" in anomaly.detail
    assert len({e.ts for e in events if isinstance(e, MessageEvent)}) == 1


def test_a_trace_without_mcp_spans_says_so(tmp_path: Path) -> None:
    http = _span("1")
    http["attributes"] = [{"key": "http.method", "value": {"stringValue": "POST"}}]
    (anomaly,) = _events(_write(tmp_path, _traces(http)))
    assert anomaly.detail == (
        "no span of the trace (1 read) is an MCP request (mcp.method.name, jsonrpc.request.id): nothing to audit"
    )


def test_hostile_values_are_bounded_and_huge_numbers_are_no_ids_or_times(tmp_path: Path) -> None:
    huge = "9" * 400
    attrs = {"gen_ai.tool.name": "\x1b]0;pwned\x07" + "t" * 5000, "mcp.session.id": "s" * 9000}
    spans = [
        _span(huge, attrs=attrs),
        _span("2", attributes=[{"key": "mcp.method.name", "value": {"stringValue": "m" * 9000}}] * 300),
        _span({"n": [[[[1]]]]}),
    ]
    path = _write(tmp_path, _traces(*spans), {"resourceSpans": [[[[[[[[[[[[[]]]]]]]]]]]]]})
    events = _events(path)
    requests = [e.message for e in events if isinstance(e, MessageEvent) and e.message.method]
    assert [(m.id, len(m.method or ""), len(m.payload.get("name", ""))) for m in requests] == [("9" * 200, 10, 200)]
    (start,) = [e for e in events if isinstance(e, SessionStart)]
    assert len(start.session_key) < 80 and len(start.label or "") <= 300
    bad = [(e.origin.line, e.detail) for e in events if isinstance(e, Anomaly)]
    assert bad == [
        (1, "span '9a25ee30e3e5450d' (" + "m" * 60 + ") has no jsonrpc.request.id: not read"),
        (1, "span '9a25ee30e3e5450d' (tools/call) has no jsonrpc.request.id: not read"),
        (2, "1 resourceSpans or scopeSpans entry(ies) with no list of spans: not read"),
    ]


# -- merged beside a recording of the same session ------------------------------------------------------------------


def _merged(*paths: Path) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    result = audit([str(p.relative_to(ROOT)) for p in paths], AuditOptions(merge=True))
    findings = [
        (f.rule_id, f.request_id, f.severity.value, f.certainty.value, [o.display() for o in f.evidence])
        for f in result.findings
    ]
    calls = [(c.request_id, c.outcome.value, c.explanation) for c in result.cancellations]
    return findings, calls


def test_merged_with_the_transcript_the_spans_say_which_handler_ran_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    trace, transcript = "sample_captures/otlp/" + SERVER_TRACE.name, "sample_captures/otlp/" + TRANSCRIPT.name
    findings, calls = _merged(TRANSCRIPT, SERVER_TRACE)
    assert findings == [
        ("CW102", 6, "error", "inferred", [f"{transcript}:{n}" for n in (15, 16, 17)]),
        ("CW508", 6, "warning", "exact", [f"{trace}:7"]),
        ("CW509", 7, "info", "inferred", [f"{trace}:8"]),
    ]
    unverified = "no reply, {!r} has no annotations, and no later read checked what it did; the server's trace shows"
    assert calls == [
        (
            6,
            "outcome-unverified",
            unverified.format("shielded_append") + f" its handler ran on after the cancel (its span, {trace}:7)",
        ),
        (
            7,
            "outcome-unverified",
            unverified.format("append_ledger") + f" its handler stopped at the cancel (its span, {trace}:8)",
        ),
    ]
    assert _merged(SERVER_TRACE, TRANSCRIPT) == (findings, calls)  # in either order


def test_the_findings_give_the_gap_and_the_window(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    result = audit([str(p.relative_to(ROOT)) for p in (TRANSCRIPT, SERVER_TRACE)], AuditOptions(merge=True))
    trace = "sample_captures/otlp/" + SERVER_TRACE.name
    assert [f.message for f in result.findings if f.rule_id in ("CW508", "CW509")] == [
        "the server's handler for tools/call (id 6) ran on after the cancel: the server's span of tools/call (id 6, "
        f"{trace}:7) ended 1.499 s after the cancel, beyond the 0.053 s the recordings' positions and clocks leave "
        "open",
        "the server's handler for tools/call (id 7) stopped at the cancel: the server's span of tools/call (id 7, "
        f"{trace}:8) ended 0.001 s after the cancel, within the 0.053 s the recordings' positions and clocks leave "
        "open",
    ]
    (merge,) = result.merges
    assert [(r.role, r.input_format, r.vantage, r.messages, r.matched) for r in merge.recordings] == [
        ("primary", "cancelwire-transcript", "proxy", 10, 10),
        ("secondary", "otlp", "server", 10, 10),
    ]


def test_a_client_trace_adds_no_handler_facts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    findings, calls = _merged(TRANSCRIPT, CLIENT_TRACE)
    assert [f[0] for f in findings] == ["CW102"]
    assert [c[2].endswith("no later read checked what it did") for c in calls] == [True, True]


def test_a_trace_of_another_session_is_judged_on_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    other = _write(tmp_path, _traces(*(_span(str(n)) for n in range(20, 25))))
    result = audit([str(TRANSCRIPT.relative_to(ROOT)), str(other)], AuditOptions(merge=True))
    assert [f.rule_id for f in result.findings] == ["CW102", "CW505"] and not result.merges


def test_cancelwire_reads_its_own_otlp_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--format otlp` writes one span per request (CLIENT, `mcp.method.name`, `jsonrpc.request.id`) under a session
    span that names no method: read back, each session is one session again (by `cancelwire.session.key`)."""
    from cancelwire.api import audit as api_audit
    from cancelwire.ci.gates import Triage
    from cancelwire.reports.otlp import traces

    monkeypatch.chdir(ROOT)
    inputs = ["tests/fixtures/mcpsnoop/http-sdk-cancel-notification.jsonl", str(TRANSCRIPT.relative_to(ROOT))]
    path = tmp_path / "own.otlp.json"
    path.write_text(json.dumps(traces(Triage(api_audit(inputs)))) + "\n", encoding="utf-8")
    events = _events(path)
    starts = [(e.vantage, e.label) for e in events if isinstance(e, SessionStart)]
    assert starts == [(Vantage.CLIENT, "cancelwire"), (Vantage.CLIENT, "cancelwire")]
    by_session: dict[str, list[tuple[Any, Any]]] = {}
    for e in events:
        if isinstance(e, MessageEvent) and e.message.method:
            by_session.setdefault(e.session_key, []).append((e.message.id, e.message.method))
    assert list(by_session.values()) == [[(1, "initialize"), (2, "tools/list"), (3, "tools/call")], REQUESTS]
    assert not [e for e in events if isinstance(e, Anomaly)]


def test_a_request_id_without_a_method_is_named(tmp_path: Path) -> None:
    half = _span("3")
    half["attributes"] = half["attributes"][1:]  # jsonrpc.request.id alone: a damaged MCP span, not an HTTP one
    (anomaly, *_) = [e for e in _events(_write(tmp_path, _traces(half, _span("4")))) if isinstance(e, Anomaly)]
    assert (anomaly.origin.line, anomaly.detail) == (
        1,
        "a span with jsonrpc.request.id but no mcp.method.name: not read",
    )


def _recorded(key: str, vantage: Vantage, items: list[tuple[float, Any]]) -> list[Any]:
    """A session's events: (time, a JSON-RPC object sent by the client (`c2s`) or server, or a transport kind)."""
    from cancelwire.model import Message, Origin, Transport, TransportEvent, TransportKind
    from cancelwire.model.jsonrpc import classify_one

    events: list[Any] = [SessionStart(1, items[0][0], Origin(key, 1), key, Transport.STREAMABLE_HTTP, vantage, "x")]
    for n, (ts, item) in enumerate(items, 2):
        origin = Origin(key, n)
        if isinstance(item, TransportKind):
            events.append(TransportEvent(n, ts, origin, key, item, "s4"))  # the stream of request 4
            continue
        sender, value = item
        message = classify_one(value, json.dumps(value))
        assert isinstance(message, Message)
        direction = Direction.C2S if sender == "c2s" else Direction.S2C
        events.append(MessageEvent(n, ts, origin, key, direction, message, stream=f"s{value.get('id')}"))
    return events


def test_a_close_of_the_requests_stream_is_its_cancel() -> None:
    """Under 2026-07-28 on Streamable HTTP the client cancels by closing the request's stream (a capture's fact):
    the span of the request whose stream closed is placed against that close."""
    from cancelwire.merge.spans import merge_trace
    from cancelwire.model import TransportKind

    call = {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "w"}}
    wire, trace = [], []
    for n in (1, 2, 3):
        t = 100.0 + n
        wire += [(t, ("c2s", call | {"id": n})), (t + 0.01, ("s2c", {"jsonrpc": "2.0", "id": n, "result": {}}))]
        trace += [
            (t + 0.001, ("c2s", call | {"id": n})),
            (t + 0.009, ("s2c", {"jsonrpc": "2.0", "id": n, "result": {}})),
        ]
    wire += [(110.0, ("c2s", call | {"id": 3 + 1})), (110.5, TransportKind.CLOSED_BY_CLIENT)]
    trace += [(110.001, ("c2s", call | {"id": 4})), (112.5, ("s2c", {"jsonrpc": "2.0", "id": 4, "result": {}}))]
    groups, (summary,) = merge_trace(
        ("t.otlp", "otlp", _recorded("t.otlp#1", Vantage.SERVER, trace)),
        ("w.pcap", "pcap", _recorded("w.pcap#1", Vantage.WIRE, wire)),
    )
    ((name, reader, events),) = groups
    (fact,) = [e for e in events if isinstance(e, Anomaly)]
    assert (name, reader, fact.name, fact.request_id, fact.origin.display(), fact.session_key) == (
        "w.pcap + t.otlp",
        "pcap + otlp",
        AnomalyName.MERGE_HANDLER_RAN_ON,
        4,
        "t.otlp#1:9",
        "w.pcap#1",
    )
    assert fact.detail.startswith("the server's span of tools/call (id 4, t.otlp#1:8) ended 2.000 s after the cancel")
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert events[events.index(fact) - 1].origin.line == 9  # right after the close
    assert summary.clock is not None and abs(summary.clock.offset) < 0.002


def test_sessions_with_the_same_requests_are_paired_by_mcp_session_id() -> None:
    """Every Streamable HTTP session numbers its requests from 1: a trace's `mcp.session.id` (its session key) names
    the capture's session (`{source}#{Mcp-Session-Id}`) that holds the same requests."""
    from cancelwire.merge.spans import merge_trace

    def session(start: float) -> list[tuple[float, Any]]:
        call = {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "w"}}
        reply = {"jsonrpc": "2.0", "result": {}}
        pairs = [
            ((start + n, ("c2s", call | {"id": n})), (start + n + 0.01, ("s2c", reply | {"id": n}))) for n in (1, 2, 3)
        ]
        return [item for pair in pairs for item in pair]

    wire = _recorded("w.pcap#s-2", Vantage.WIRE, session(200.0)) + _recorded("w.pcap#s-1", Vantage.WIRE, session(100.0))
    trace = _recorded("t#server-s-1#1", Vantage.SERVER, session(100.0)) + _recorded(
        "t#server-s-2#1", Vantage.SERVER, session(200.0)
    )
    _, summaries = merge_trace(("t", "otlp", trace), ("w.pcap", "pcap", wire))
    paired = [(s.recordings[1].session_key, s.recordings[0].session_key) for s in summaries]
    assert paired == [("t#server-s-1#1", "w.pcap#s-1"), ("t#server-s-2#1", "w.pcap#s-2")]
    assert [round(s.clock.offset, 3) for s in summaries if s.clock is not None] == [0.0, 0.0]
