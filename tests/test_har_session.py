"""HAR entries whose `Mcp-Session-Id` headers disagree: the session chosen, and the finding naming it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cancelwire.model import Anomaly, MessageEvent, SessionStart
from cancelwire.readers import InputSource, ReadOptions
from cancelwire.readers.har.reader import READER
from cancelwire.reports.document import build
from cancelwire.run.pipeline import audit


def _rpc(**fields: Any) -> str:
    return json.dumps({"jsonrpc": "2.0", **fields})


def _entry(second: int, body: str, reply: str, asked: list[str], answered: list[str]) -> dict[str, Any]:
    return {
        "startedDateTime": f"2026-01-01T00:00:{second:02d}Z",
        "request": {
            "method": "POST",
            "url": "http://h:1/mcp",
            "headers": [{"name": "Mcp-Session-Id", "value": v} for v in asked],
            "postData": {"text": body},
        },
        "response": {
            "status": 200,
            "headers": [{"name": "mcp-session-id", "value": v} for v in answered],
            "content": {"mimeType": "application/json", "text": reply},
        },
        "timings": {"send": 1, "wait": 10, "receive": 1},
    }


def _initialize(asked: list[str], answered: list[str]) -> dict[str, Any]:
    params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}
    result = {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}
    return _entry(0, _rpc(id=1, method="initialize", params=params), _rpc(id=1, result=result), asked, answered)


def _ping(second: int, ident: int, asked: list[str], answered: list[str]) -> dict[str, Any]:
    return _entry(second, _rpc(id=ident, method="ping"), _rpc(id=ident, result={}), asked, answered)


def _write(tmp_path: Path, entries: list[Any]) -> Path:
    path = tmp_path / "x.har"
    log = {"version": "1.2", "creator": {"name": "mitmproxy"}, "entries": entries}
    path.write_text(json.dumps({"log": log}, indent=1))
    return path


def _sessions(path: Path) -> tuple[list[str], list[tuple[str, Any, str]], list[tuple[str, str, str]]]:
    events = list(READER.read(InputSource(path.name, path), ReadOptions()))
    starts = [e.session_key for e in events if isinstance(e, SessionStart)]
    messages = [
        (e.session_key, e.message.id, e.message.method or "reply") for e in events if isinstance(e, MessageEvent)
    ]
    anomalies = [(e.session_key or "", e.name, e.detail) for e in events if isinstance(e, Anomaly)]
    return starts, messages, anomalies


def test_initialize_belongs_to_the_session_its_response_assigns(tmp_path: Path) -> None:
    """The client brought a stale id to initialize; the server assigned "new", which every later request
    carries. Reading the request's id first put initialize alone in session "stale" and left "new"
    without a handshake."""
    path = _write(tmp_path, [_initialize(["stale"], ["new"]), _ping(1, 2, ["new"], ["new"])])
    starts, messages, anomalies = _sessions(path)
    assert starts == ["x.har#new"]
    assert messages == [
        ("x.har#new", 1, "initialize"),
        ("x.har#new", 1, "reply"),
        ("x.har#new", 2, "ping"),
        ("x.har#new", 2, "reply"),
    ]
    assert anomalies == [
        (
            "x.har#new",
            "har.session-id-conflict",
            "entry 0: Mcp-Session-Id disagrees: the request carries 'stale', the response 'new'; its messages are put "
            "in session 'new': the server assigns the session in its answer to initialize",
        )
    ]


def test_two_ids_on_one_request_take_the_one_the_response_echoes(tmp_path: Path) -> None:
    entries = [_initialize([], ["b"]), _ping(1, 2, ["a", "b"], ["b"]), _ping(2, 3, ["b", "a"], [])]
    starts, messages, anomalies = _sessions(_write(tmp_path, entries))
    assert starts == ["x.har#b"]
    assert {key for key, _, _ in messages} == {"x.har#b"}
    assert [(key, detail.partition("; ")[2]) for key, _, detail in anomalies] == [
        ("x.har#b", "its messages are put in session 'b': the response echoes it, so the server used it"),
        ("x.har#b", "its messages are put in session 'b': the session the request addresses (its first value)"),
    ]
    assert anomalies[1][2].startswith("entry 2: Mcp-Session-Id disagrees: the request carries 'b' and 'a', ")


def test_a_request_and_a_response_that_disagree_stay_in_the_requests_session(tmp_path: Path) -> None:
    entries = [_initialize([], ["a"]), _ping(1, 2, ["a"], ["z"])]
    starts, _, anomalies = _sessions(_write(tmp_path, entries))
    assert starts == ["x.har#a"]
    ((key, name, detail),) = anomalies
    assert (key, name) == ("x.har#a", "har.session-id-conflict")
    assert detail.endswith(
        "the request carries 'a', the response 'z'; its messages are put in session 'a': "
        "the session the request addresses (its first value)"
    )


def test_agreeing_repeated_and_absent_ids_are_no_conflict(tmp_path: Path) -> None:
    entries = [_initialize([], ["a"]), _ping(1, 2, ["a", "a"], ["a"]), _ping(2, 3, ["a"], []), _ping(3, 4, [], [])]
    starts, _, anomalies = _sessions(_write(tmp_path, entries))
    assert starts == ["x.har#a", "x.har#h:1"]
    assert anomalies == []


def test_a_thousand_ids_are_quoted_bounded(tmp_path: Path) -> None:
    many = [f"id{n}-" + "x" * 200 for n in range(1000)]
    _, _, anomalies = _sessions(_write(tmp_path, [_ping(0, 1, many, [])]))
    ((key, _, detail),) = anomalies
    assert key.startswith("x.har#id0-xxx") and len(detail) < 700
    assert "and 996 more, the response none" in detail


def test_the_finding_names_the_entry_and_its_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path, [_initialize(["stale"], ["new"]), _ping(1, 2, ["new"], ["new"])])
    monkeypatch.chdir(tmp_path)
    report = build(audit(["x.har"]))
    (finding,) = report["findings"]
    assert (finding["rule_id"], finding["severity"], finding["request_id"]) == ("CW936", "warning", 1)
    assert [e["line"] for e in finding["evidence"]] == [8]  # where entry 0 starts
    assert "entry 0: Mcp-Session-Id disagrees" in finding["message"]
    (session,) = report["sessions"]
    assert session["protocol_version"] == "2025-06-18"  # the handshake is in the session it negotiated
