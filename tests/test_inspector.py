"""The MCP Inspector reader: exact verdicts on its two exports, what each cannot show, damaged and hostile files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cancelwire.errors import InputError
from cancelwire.model import (
    Anomaly,
    AnomalyName,
    Direction,
    MessageEvent,
    SessionStart,
    Transport,
    TransportEvent,
    TransportKind,
    Vantage,
)
from cancelwire.readers import InputSource, ReadOptions, choose_reader
from cancelwire.readers.tools.inspector import READER
from cancelwire.reports.document import build
from cancelwire.run.pipeline import audit
from reader_audits import findings_of, report_of

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "inspector"
CALL = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "w"}}
T0 = "2026-07-24T09:30:00.000Z"
NOT_JUDGED = (
    "{name}#1: the recording cannot show receive-window-zero, server-bytes, stream-closed-by-client, "
    "stream-closed-by-server, stream-opened, stream-reset-by-client, stream-reset-by-server, so not judged: "
    "write-after-disconnect, stream-left-open-after-abandon, capture-ended-with-stream-open, message-after-disconnect"
)


def _events(path: Path) -> list[Any]:
    return list(READER.read(InputSource(path.name, path), ReadOptions()))


def _write(tmp_path: Path, entries: list[Any]) -> Path:
    path = tmp_path / "export.json"
    path.write_text(json.dumps(entries, indent=2), encoding="utf-8")
    return path


def _entry(direction: str, origin: str, message: dict[str, Any], at: str = T0, **extra: Any) -> dict[str, Any]:
    return {"id": "e", "timestamp": at, "direction": direction, "origin": origin, "message": message} | extra


# -- the fixtures -------------------------------------------------------------------------------------


def test_history_late_result(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Inspector's client gave the call up (clientError) and cancelled it; the reply came later, as an entry of
    its own. A client's vantage: the first progress after the cancel is within its race window."""
    report = report_of(FIXTURES / "history-late-result-after-cancel.json", monkeypatch)
    assert findings_of(report) == [
        ("CW101", "warning", "inferred", 2, [84, 130]),
        ("CW102", "warning", "inferred", 2, [84, 114]),
    ]
    (call,) = report["cancellations"]
    assert (call["request_id"], call["mechanism"], call["outcome"]) == (2, "notification", "late-result-violation")
    (session,) = report["sessions"]
    assert (session["format"], session["vantage"], session["transport"]) == ("inspector", "client", "stdio")


def test_history_sdk_cancel_is_clean(monkeypatch: pytest.MonkeyPatch) -> None:
    report = report_of(FIXTURES / "history-sdk-cancel-slow-tool.json", monkeypatch)
    assert findings_of(report) == []
    (call,) = report["cancellations"]
    assert (call["request_id"], call["mechanism"], call["outcome"]) == (3, "notification", "outcome-unverified")
    gave_up = [e for e in _events(FIXTURES / "history-sdk-cancel-slow-tool.json") if isinstance(e, TransportEvent)]
    assert [(e.kind, e.request_id) for e in gave_up] == [(TransportKind.GAVE_UP_BY_CLIENT, 3)]


def test_network_reply_after_the_cancel(monkeypatch: pytest.MonkeyPatch) -> None:
    """The call's SSE reply has no time in the log; its client POSTed a cancel for it (line 154), so it had no
    reply then: the reply is placed after that cancel."""
    report = report_of(FIXTURES / "network-sdk-cancel-notification.json", monkeypatch)
    assert findings_of(report) == [("CW101", "warning", "exact", 3, [154, 122])]
    (session,) = report["sessions"]
    assert (session["transport"], session["protocol_version"]) == ("streamable-http", "2025-11-25")


def test_network_missing_body_is_the_clients_close(monkeypatch: pytest.MonkeyPatch) -> None:
    report = report_of(FIXTURES / "network-sdk-cancel-close-stream.json", monkeypatch)
    assert findings_of(report) == []
    (call,) = report["cancellations"]
    assert (call["request_id"], call["mechanism"], call["outcome"]) == (2, "disconnect", "outcome-unverified")
    closes = [e for e in _events(FIXTURES / "network-sdk-cancel-close-stream.json") if isinstance(e, TransportEvent)]
    assert [(e.kind, e.ts, e.stream) for e in closes] == [(TransportKind.CLOSED_BY_CLIENT, None, "fetch1")]


def test_sniffed() -> None:
    for path in sorted(FIXTURES.glob("*.json")):
        assert choose_reader(InputSource(path.name, path), None).name == "inspector"


# -- history entries ----------------------------------------------------------------------------------


def test_a_folded_reply_comes_at_its_duration(tmp_path: Path) -> None:
    reply = {"jsonrpc": "2.0", "id": 7, "result": {}}
    path = _write(tmp_path, [_entry("request", "client", CALL, response=reply, duration=1500)])
    events = _events(path)
    (start,) = [e for e in events if isinstance(e, SessionStart)]
    assert (start.transport, start.vantage, start.input_format) == (Transport.STDIO, Vantage.CLIENT, "inspector")
    messages = [(e.origin.line, e.direction, e.message.id, e.ts) for e in events if isinstance(e, MessageEvent)]
    assert messages == [(2, Direction.C2S, 7, 1784885400.0), (2, Direction.S2C, 7, 1784885401.5)]


def test_a_rejected_reply_is_no_give_up(tmp_path: Path) -> None:
    reply = {"jsonrpc": "2.0", "id": 7, "result": {}}
    path = _write(tmp_path, [_entry("request", "client", CALL, response=reply, duration=5, clientError="bad schema")])
    assert not [e for e in _events(path) if isinstance(e, TransportEvent)]


@pytest.mark.parametrize(
    ("entry", "detail"),
    [
        ("text", "not an object"),
        (
            {"id": "e", "timestamp": T0, "direction": "sideways", "origin": "client", "message": CALL},
            "unknown direction",
        ),
        ({"id": "e", "timestamp": T0, "direction": "request", "origin": ["x"], "message": CALL}, "unknown origin"),
        ({"id": "e", "timestamp": T0, "direction": "request", "origin": "client", "message": 5}, "no message object"),
    ],
)
def test_a_bad_entry_is_named_and_the_rest_read(tmp_path: Path, entry: Any, detail: str) -> None:
    path = _write(tmp_path, [_entry("request", "client", CALL), entry])
    events = _events(path)
    (anomaly,) = [e for e in events if isinstance(e, Anomaly)]
    assert anomaly.name is AnomalyName.INPUT_BAD_RECORD and detail in anomaly.detail
    assert [e.message.id for e in events if isinstance(e, MessageEvent)] == [7]


def test_a_cut_export_is_read_up_to_the_cut(tmp_path: Path) -> None:
    notice = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    path = _write(tmp_path, [_entry("notification", "client", notice), _entry("request", "client", CALL)])
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 40])  # the second entry cut in half
    events = _events(path)
    assert [e.message.method for e in events if isinstance(e, MessageEvent)] == ["notifications/initialized"]
    (cut,) = [e for e in events if isinstance(e, Anomaly)]
    assert cut.origin.line == 12 and "not JSON (the export is damaged or cut)" in cut.detail


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"[1, 2", "not a readable Inspector export: not a whole JSON array"),
        (b'{"log": 1}', "not a readable Inspector export: not a whole JSON array"),
    ],
)
def test_an_unreadable_export_is_an_input_error(tmp_path: Path, data: bytes, message: str) -> None:
    path = tmp_path / "export.json"
    path.write_bytes(data)
    with pytest.raises(InputError, match=message):
        _events(path)


# -- network entries ----------------------------------------------------------------------------------


def _fetch(body: Any = None, **fields: Any) -> dict[str, Any]:
    entry = {"id": "1-a", "timestamp": T0, "method": "POST", "url": "http://127.0.0.1:9/mcp", "requestHeaders": {}}
    if body is not None:
        entry["requestBody"] = json.dumps(body)
    return entry | fields


def test_fetch_outcomes(tmp_path: Path) -> None:
    json_reply = {"responseStatus": 200, "responseHeaders": {"content-type": "application/json"}}
    path = _write(
        tmp_path,
        [
            _fetch(CALL, error="signal is aborted without reason", duration=300),
            _fetch(CALL | {"id": 8}, error="fetch failed", duration=5),
            _fetch(CALL | {"id": 9}, responseStatus=500, responseHeaders={}, duration=5),
            _fetch(CALL | {"id": 10}, **json_reply, responseBody='{"jsonrpc":"2.0","id":10,"result":{}} [truncated]'),
            _fetch({"jsonrpc": "2.0", "method": "x"}, responseStatus=202, responseHeaders={}, duration=1),
            {"id": "2-b", "timestamp": T0, "method": "GET", "url": "http://127.0.0.1:9/.well-known/x"},
        ],
    )
    events = _events(path)
    closes = [(e.kind, e.ts, e.stream) for e in events if isinstance(e, TransportEvent)]
    assert closes == [(TransportKind.CLOSED_BY_CLIENT, 1784885400.3, "fetch0")]
    named = sorted((e.origin.line, e.name, e.request_id) for e in events if isinstance(e, Anomaly))
    assert named == [
        (12, "har.request-failed", 8),
        (22, "http.error-status", 9),
        (33, "input.truncated-line", 10),
    ]


def test_a_network_log_without_mcp_says_so(tmp_path: Path) -> None:
    path = _write(tmp_path, [{"id": "1-a", "timestamp": T0, "method": "GET", "url": "http://x/", "duration": 1}])
    (anomaly,) = _events(path)
    assert isinstance(anomaly, Anomaly) and anomaly.name is AnomalyName.HAR_NO_MCP


def test_hostile_session_ids_are_bounded(tmp_path: Path) -> None:
    sid = "\x1b]0;pwned\x07" + "s" * 10_000
    path = _write(tmp_path, [_fetch(CALL, requestHeaders={"mcp-session-id": sid}, error="aborted", duration=1)])
    (start,) = [e for e in _events(path) if isinstance(e, SessionStart)]
    assert len(start.session_key) < 200


def _given_up(revision: str) -> list[dict[str, Any]]:
    """A history where the Inspector's client gave a tools/call up (an abort) and sent no notifications/cancelled;
    the server sent nothing more for it."""
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "slow", "arguments": {}}}
    aborted = {"clientError": "AbortError: This operation was aborted", "duration": 2000}
    if revision == "2026-07-28":  # no handshake: the revision rides in each request's _meta
        call["params"]["_meta"] = {"io.modelcontextprotocol/protocolVersion": revision}
        return [_entry("request", "client", call, **aborted)]
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": revision}}
    welcome = {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": revision, "capabilities": {}}}
    ready = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    return [
        _entry("request", "client", hello, response=welcome, duration=5),
        _entry("notification", "client", ready),
        _entry("request", "client", call, **aborted),
    ]


def test_a_give_up_without_a_cancel_where_the_history_cannot_tell_the_cancel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CW507 rests on the history holding every cancel the client made. Up to 2025-11-25 the cancel is the
    notification on every transport: a give-up without one is CW507 (SHOULD). In 2026-07-28 it is the
    notification on stdio only; on Streamable HTTP the client cancels by closing the request's stream (the
    SDK client sends no notification there), which a history never shows, and a history does not say its
    transport: not judged, and said so (before: CW507 error, exact, on every HTTP session's abort)."""
    monkeypatch.chdir(tmp_path)
    _write(tmp_path, _given_up("2025-11-25")).rename(tmp_path / "old.json")
    report = build(audit(["old.json"]))
    assert findings_of(report) == [("CW507", "warning", "exact", 2, [35])]  # the aborted call's entry
    assert report["unjudged"] == [NOT_JUDGED.format(name="old.json")]
    _write(tmp_path, _given_up("2026-07-28")).rename(tmp_path / "new.json")
    report = build(audit(["new.json"]))
    assert findings_of(report) == []
    assert report["unjudged"] == [
        "new.json#1: the recording does not say the transport, and under 2026-07-28 the rule is in force over "
        "stdio only, so not judged: gave-up-without-cancel",
        NOT_JUDGED.format(name="new.json"),
    ]
