"""HTTP+SSE (2024-11-05) sessions in a HAR: their replies go on a stream the HAR does not hold readably.

The fixture is a real mitmdump recording (scripts/record_har.py): the Python SDK's HTTP+SSE server and
client, mitmdump streaming the GET /sse response (else it buffers it and the session stalls), so the HAR
keeps no body for it, and each POST answered 202 "Accepted". Before: CW302 for each "Accepted", CW108
"never answered" for initialize and tools/list, and the cancelled call "no reply" [exact].
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cancelwire.model import Anomaly, MessageEvent, SessionStart, Transport
from cancelwire.readers import InputSource, ReadOptions
from cancelwire.readers.har.reader import READER
from cancelwire.reports.document import build
from cancelwire.run.pipeline import audit

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = "tests/fixtures/har/mitmdump-sdk-legacy-sse.har"


def test_the_mitmdump_legacy_recording_names_what_it_cannot_show(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    report = build(audit([SAMPLE]))
    assert [
        (f["rule_id"], f["severity"], f["certainty"], [e["line"] for e in f["evidence"]]) for f in report["findings"]
    ] == [("CW937", "warning", "exact", [11, 193, 284])]
    (call,) = report["cancellations"]
    assert (call["request_id"], call["mechanism"], call["outcome"], call["certainty"]) == (
        3,
        "notification",
        "outcome-unverified",
        "inferred",
    )
    assert call["explanation"].startswith("the recording cannot show its reply")
    (session,) = report["sessions"]
    assert (session["transport"], session["vantage"]) == ("http-sse", "proxy")
    assert any(
        "so not judged: response-after-cancel" in u and "request-never-answered" in u for u in report["unjudged"]
    )


def test_its_requests_and_cancel_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    path = ROOT / SAMPLE
    events = list(READER.read(InputSource(SAMPLE, path), ReadOptions()))
    (start,) = [e for e in events if isinstance(e, SessionStart)]
    assert start.transport is Transport.HTTP_SSE and "result" in start.unrecorded
    messages = [(e.message.method, e.message.id) for e in events if isinstance(e, MessageEvent)]
    assert messages == [
        ("initialize", 1),
        ("notifications/initialized", None),
        ("tools/list", 2),
        ("tools/call", 3),
        ("notifications/cancelled", None),
    ]
    assert {e.name for e in events if isinstance(e, Anomaly)} == {"har.replies-elsewhere"}


def _post(body: str, status: int, reply: str, mime: str) -> dict[str, Any]:
    return {
        "startedDateTime": "2026-01-01T00:00:00Z",
        "request": {"method": "POST", "url": "http://h:1/mcp", "postData": {"text": body}},
        "response": {"status": status, "content": {"mimeType": mime, "text": reply}},
    }


def test_a_202_with_text_carries_no_message_and_an_answered_session_is_judged_whole(tmp_path: Path) -> None:
    """Streamable HTTP: a notification accepted with 202 "Accepted" is no bad JSON-RPC; a request answered
    in its own entry keeps the session's replies judged."""
    notify = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
    ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    pong = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {}})
    entries = [_post(notify, 202, "Accepted", "text/plain"), _post(ping, 200, pong, "application/json")]
    path = tmp_path / "x.har"
    path.write_text(json.dumps({"log": {"version": "1.2", "creator": {"name": "mitmproxy"}, "entries": entries}}))
    events = list(READER.read(InputSource("x.har", path), ReadOptions()))
    assert [e for e in events if isinstance(e, Anomaly)] == []
    (start,) = [e for e in events if isinstance(e, SessionStart)]
    assert start.transport is Transport.STREAMABLE_HTTP and "result" not in start.unrecorded


def test_two_sessions_at_one_host_are_told_apart_by_their_endpoint(tmp_path: Path) -> None:
    """The page reconnected: a second HTTP+SSE session at the same host, its POST endpoint naming another
    session_id, its ids starting again at 1. Keyed by the host alone they were one session reusing ids."""
    har = json.loads((ROOT / SAMPLE).read_text())
    again = json.loads(json.dumps(har["log"]["entries"]).replace("session_id=", "session_id=0"))
    for entry in again:
        entry["startedDateTime"] = entry["startedDateTime"].replace("T15:", "T16:")
    har["log"]["entries"] += again
    path = tmp_path / "two.har"
    path.write_text(json.dumps(har))
    result = audit([str(path)])
    assert len(result.sessions) == 2
    assert [f.rule_id for f in result.findings] == ["CW937", "CW937"]
    assert [c.request_id for c in result.cancellations] == [3, 3]
