"""Data in an SSE event of a type MCP clients never dispatch (not `message`) is no message: named (CW209), never
a reply. The official clients read only `message` events and unnamed ones (Python SDK `_handle_sse_event`,
TypeScript `!event.event || event.event === 'message'`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cancelwire.model import Anomaly, AnomalyName, MessageEvent, MessageKind
from cancelwire.readers import InputSource, ReadOptions
from cancelwire.readers.har.reader import READER as HAR
from cancelwire.reports.document import build
from cancelwire.run.pipeline import audit
from hypothesis import given
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "rules" / "sse-event-not-dispatched"


def _report(name: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.chdir(ROOT)
    return build(audit([str((FIXTURES / name).relative_to(ROOT))]))


def _findings(report: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (f["rule_id"], f["severity"], f["certainty"], f["request_id"], [e["frame"] for e in f["evidence"]])
        for f in report["findings"]
    ]


def test_a_result_in_a_debug_event_answers_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The client never saw the result: its later cancel is a cancelled call with no reply, not a cancel
    after completion."""
    report = _report("triggers.pcapng", monkeypatch)
    assert _findings(report) == [("CW209", "warning", "exact", 2, [11])]
    (call,) = report["cancellations"]
    assert (call["request_id"], call["outcome"], call["certainty"]) == (2, "outcome-unverified", "exact")
    assert call["explanation"].startswith("no reply,")
    kinds = [entry["kind"] for entry in call["timeline"]]
    assert "result" not in kinds and "server-bytes" in kinds  # the server wrote on the stream; no reply


def test_the_same_result_in_a_message_event_is_the_reply(monkeypatch: pytest.MonkeyPatch) -> None:
    report = _report("clean.pcapng", monkeypatch)
    assert _findings(report) == [("CW106", "info", "inferred", 2, [12])]
    assert report["cancellations"] == []


def _har(tmp_path: Path, stream: str) -> Path:
    call = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t", "arguments": {}}})
    entry = {
        "startedDateTime": "2026-01-01T00:00:00Z",
        "request": {
            "method": "POST",
            "url": "http://h:1/mcp",
            "headers": [{"name": "Mcp-Session-Id", "value": "s"}],
            "postData": {"text": call},
        },
        "response": {"status": 200, "content": {"mimeType": "text/event-stream", "text": stream}},
        "timings": {"send": 1, "wait": 10, "receive": 10},
    }
    path = tmp_path / "x.har"
    path.write_text(json.dumps({"log": {"version": "1.2", "creator": {"name": "mitmproxy"}, "entries": [entry]}}))
    return path


RESULT = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"content": []}})


@given(event=st.text(alphabet=st.characters(blacklist_characters="\r\n\x00"), max_size=12))
def test_har_only_message_events_are_messages(tmp_path_factory: pytest.TempPathFactory, event: str) -> None:
    """Whatever the type: `message` (or none: `event:` empty is `message`) is the reply; any other type is
    named with the request its data would have answered."""
    path = _har(tmp_path_factory.mktemp("har"), f"event: {event}\ndata: {RESULT}\n\n")
    events = list(HAR.read(InputSource(path.name, path), ReadOptions()))
    results = [e for e in events if isinstance(e, MessageEvent) and e.message.kind is MessageKind.RESULT]
    named = [e for e in events if isinstance(e, Anomaly) and e.name is AnomalyName.SSE_EVENT_NOT_DISPATCHED]
    kind = event or "message"  # the one space after the colon is the field's separator, not its value
    if kind == "message":
        assert (len(results), named) == (1, [])
    else:
        assert results == []
        assert [(a.request_id, a.method) for a in named] == [(1, None)]
        assert f"an SSE event of type {kind!r} carries data no MCP client reads" in named[0].detail
