"""The mcpsnoop reader: exact verdicts on logs built around real recordings, what it cannot show, hostile records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cancelwire.model import Anomaly, AnomalyName, Direction, MessageEvent, SessionStart, Transport, Vantage
from cancelwire.readers import InputSource, ReadOptions, choose_reader, event_factory
from cancelwire.readers.tools.mcpsnoop import READER, UNRECORDED
from reader_audits import findings_of, report_of

ROOT = Path(__file__).resolve().parents[1]
SNOOP = ROOT / "tests" / "fixtures" / "mcpsnoop"
NOT_JUDGED = (
    "the recording cannot show receive-window-zero, server-bytes, stream-closed-by-client, "
    "stream-closed-by-server, stream-opened, stream-reset-by-client, stream-reset-by-server, so not judged: "
    "write-after-disconnect, stream-left-open-after-abandon, capture-ended-with-stream-open, message-after-disconnect"
)
CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "w"}}


def _events(path: Path) -> list[Any]:
    return list(READER.read(InputSource(path.name, path), ReadOptions()))


def _record(seq: int, direction: str = "c2s", transport: str = "stdio", **fields: Any) -> dict[str, Any]:
    head = {"session_id": "s1", "server_label": "srv", "seq": seq, "ts": "2026-06-27T19:29:00.5Z"}
    return head | {"direction": direction, "transport": transport} | fields


def _write(tmp_path: Path, *records: dict[str, Any] | str) -> Path:
    path = tmp_path / "snoop.jsonl"
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# -- the fixtures: the same verdicts as the recordings they were built around -------------------------


def test_stdio_late_result_as_in_the_transcript(monkeypatch: pytest.MonkeyPatch) -> None:
    report = report_of(SNOOP / "stdio-late-result-after-cancel.jsonl", monkeypatch)
    assert findings_of(report) == [
        ("CW101", "warning", "inferred", 2, [7, 10]),
        ("CW102", "warning", "inferred", 2, [7, 8, 9]),
    ]
    (call,) = report["cancellations"]
    assert (call["request_id"], call["mechanism"], call["outcome"]) == (2, "notification", "late-result-violation")
    (session,) = report["sessions"]
    assert (session["format"], session["vantage"], session["transport"]) == ("mcpsnoop", "proxy", "stdio")
    assert report["unjudged"] == []  # what mcpsnoop cannot show happens only over HTTP: no rule over stdio is blind


def test_stdio_sdk_cancel_is_clean(monkeypatch: pytest.MonkeyPatch) -> None:
    report = report_of(SNOOP / "stdio-sdk-cancel-slow-tool.jsonl", monkeypatch)
    assert findings_of(report) == []
    (call,) = report["cancellations"]
    assert (call["request_id"], call["mechanism"], call["outcome"]) == (3, "notification", "outcome-unverified")


def test_http_reply_after_the_cancel(monkeypatch: pytest.MonkeyPatch) -> None:
    report = report_of(SNOOP / "http-sdk-cancel-notification.jsonl", monkeypatch)
    assert findings_of(report) == [("CW101", "warning", "exact", 3, [8, 9])]
    (session,) = report["sessions"]
    assert (session["transport"], session["protocol_version"]) == ("streamable-http", "2025-11-25")
    assert report["unjudged"] == [f"{session['id']}: {NOT_JUDGED}"]


def test_http_close_is_not_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under 2026-07-28 the SDK cancels by closing the call's stream; mcpsnoop writes nothing for a close, so
    no cancel is seen and the call reads as never answered: what the docs say this format cannot show."""
    report = report_of(SNOOP / "http-sdk-cancel-close-stream.jsonl", monkeypatch)
    assert report["cancellations"] == []
    assert findings_of(report) == [("CW108", "warning", "exact", 2, [3])]


def test_session_start_declares_what_is_unrecorded() -> None:
    (start,) = [e for e in _events(SNOOP / "http-sdk-cancel-notification.jsonl") if isinstance(e, SessionStart)]
    assert (start.session_key, start.label, start.transport, start.vantage, start.input_format) == (
        "http-sdk-cancel-notification.jsonl#3e8b6f1a0c2d4957#1",
        "http-ledger",
        Transport.STREAMABLE_HTTP,
        Vantage.PROXY,
        "mcpsnoop",
    )
    assert start.unrecorded == UNRECORDED


def test_sniffed_before_ndjson() -> None:
    for path in sorted(SNOOP.glob("*.jsonl")):
        assert choose_reader(InputSource(path.name, path), None).name == "mcpsnoop"


# -- records ------------------------------------------------------------------------------------------


def test_frames_stderr_and_meta(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        _record(1, "meta", raw={"command": ["srv"]}),
        _record(2, raw=CALL),
        _record(3, "stderr", text='{"jsonrpc":"2.0","id":9,"result":{}}'),
        _record(4, "s2c", raw={"jsonrpc": "2.0", "id": 1, "result": {}}, ts="2026-06-27T21:29:01.25+02:00"),
    )
    events = _events(path)
    messages = [(e.origin.line, e.direction, e.message.id, e.ts) for e in events if isinstance(e, MessageEvent)]
    assert messages == [(2, Direction.C2S, 1, 1782588540.5), (4, Direction.S2C, 1, 1782588541.25)]
    assert not [e for e in events if isinstance(e, Anomaly)]


def test_a_seq_jump_and_a_step_back_are_named(tmp_path: Path) -> None:
    path = _write(tmp_path, _record(1, raw=CALL), _record(4, "s2c", raw={"jsonrpc": "2.0", "method": "x"}))
    path.write_text(path.read_text() + json.dumps(_record(2, "s2c", text="late")) + "\n")
    lost = [
        (e.origin.line, e.detail) for e in _events(path) if e.__class__ is Anomaly and e.name == "input.records-missing"
    ]
    assert lost == [
        (2, "mcpsnoop's records 2..3 are missing (it drops frames when its queue is full)"),
        (3, "record 2 comes after record 4: out of order or repeated"),
    ]


@pytest.mark.parametrize(
    ("fields", "name", "detail"),
    [
        ({"text": "oops", "truncated": True}, AnomalyName.INPUT_TRUNCATED_LINE, "mcpsnoop kept only a cut copy"),
        ({"text": "hello from print()"}, AnomalyName.STDIO_NON_JSON_LINE, "not JSON: 'hello from print()'"),
        ({"ts": "yesterday", "raw": CALL}, AnomalyName.INPUT_BAD_RECORD, "the record's ts 'yesterday' is not"),
        ({"ts": "2026-06-27T19:29:00", "raw": CALL}, AnomalyName.INPUT_BAD_RECORD, "is not an RFC 3339 time"),
        ({"ts": "9999-12-31T00:00:00Z", "raw": CALL}, AnomalyName.INPUT_IMPLAUSIBLE_TIME, "cannot be a clock"),
        ({}, AnomalyName.INPUT_BAD_RECORD, "a frame with neither raw nor text"),
    ],
)
def test_a_bad_frame_is_named(tmp_path: Path, fields: dict[str, Any], name: AnomalyName, detail: str) -> None:
    events = _events(_write(tmp_path, _record(1, **fields)))
    (anomaly,) = [e for e in events if isinstance(e, Anomaly)]
    assert (anomaly.name, anomaly.origin.line) == (name, 1) and detail in anomaly.detail, anomaly.detail


def test_http_status_only_frames_and_batches(tmp_path: Path) -> None:
    reply = {"jsonrpc": "2.0", "id": 1, "result": {}}
    path = _write(
        tmp_path,
        _record(1, transport="http", raw=CALL, conn_id="127.0.0.1:5"),
        _record(2, "s2c", transport="http", status=202),
        _record(3, "s2c", transport="http", status=502, conn_id="127.0.0.1:5"),
        _record(4, "c2s", transport="http", raw={"jsonrpc": "2.0", "id": 2, "method": "ping"}, batch=True),
        _record(5, "c2s", transport="http", raw={"jsonrpc": "2.0", "id": 3, "method": "ping"}, batch=True),
        _record(6, "s2c", transport="http", raw=reply, status=200),
        _record(7, "s2c", transport="http", text="<html>", status=200),
    )
    named = [(e.origin.line, e.name) for e in _events(path) if isinstance(e, Anomaly)]
    assert named == [(3, "http.error-status"), (4, "jsonrpc.batch"), (7, "http.non-json-body")]


@pytest.mark.parametrize(
    ("line", "detail"),
    [
        ("[1, 2]", "not an mcpsnoop record (not a JSON object)"),
        ('{"seq": 1, "direction": "c2s", "transport": "stdio"}', "an mcpsnoop record without a session_id"),
        ('{"session_id": "s", "seq": true, "direction": "c2s", "transport": "stdio"}', "seq is not a count"),
        ('{"session_id": "s", "seq": 1, "direction": ["c2s"], "transport": "stdio"}', "unknown direction"),
        ('{"session_id": "s", "seq": 1, "direction": "c2s", "transport": "ws"}', "unknown transport 'ws'"),
    ],
)
def test_a_bad_record_is_named_and_reading_goes_on(tmp_path: Path, line: str, detail: str) -> None:
    events = _events(_write(tmp_path, line, _record(1, raw=CALL)))
    (anomaly,) = [e for e in events if isinstance(e, Anomaly)]
    assert (anomaly.name, anomaly.origin.line) == (AnomalyName.INPUT_BAD_RECORD, 1) and detail in anomaly.detail
    assert [e.origin.line for e in events if isinstance(e, MessageEvent)] == [2]


def test_hostile_session_ids_and_labels_are_bounded(tmp_path: Path) -> None:
    sid = "\x1b]0;pwned\x07" + "x" * 5000
    path = _write(tmp_path, _record(1, raw=CALL, session_id=sid, server_label="L" * 10_000))
    (start,) = [e for e in _events(path) if isinstance(e, SessionStart)]
    assert start.session_key.startswith("snoop.jsonl#sid-") and len(start.session_key) < 50
    assert start.label == "L" * 200


def test_a_frame_is_read_from_the_records_json_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each record's line is parsed once: a frame's `raw` is classified as parsed with its envelope (its text
    never parsed again); what that cannot settle (an id that may be past 64 bits, a batch, a problem, a time
    that is no clock reading) is read from the text as before, with the same events. An id past 64 bits, which
    the record's parse reads as a float, is read again from the line (before: a CW302 naming the float)."""
    big = 18446744073709551621  # past 64 bits: read exactly
    path = _write(
        tmp_path,
        _record(1, raw=CALL),
        json.dumps(_record(2, raw={"jsonrpc": "2.0", "id": "BIG", "method": "ping"})).replace('"BIG"', str(big)),
        _record(3, raw={"jsonrpc": "2.0", "id": 1.5, "method": "ping"}),
        _record(4, raw=[{"jsonrpc": "2.0", "method": "notifications/initialized"}]),
        _record(5, raw={"jsonrpc": "2.0", "id": 4, "method": "ping"}, ts="2300-01-01T00:00:00Z"),
    )
    loads: list[str] = []
    parse = event_factory._loads
    monkeypatch.setattr(event_factory, "_loads", lambda text: loads.append(text) or parse(text))
    events = [e for e in _events(path) if not isinstance(e, SessionStart)]
    shown = [
        (e.origin.line, e.message.id, e.ts) if isinstance(e, MessageEvent) else (e.origin.line, e.name.value)
        for e in events
    ]
    assert shown == [
        (1, 1, 1782588540.5),
        (2, big, 1782588540.5),  # the envelope's parse read it as a float: read again from the line, exactly
        (3, "jsonrpc.invalid-message"),  # a float id
        (4, "jsonrpc.batch"),
        (4, None, 1782588540.5),
        (5, "input.implausible-time"),
        (5, 4, None),
    ]
    assert len(loads) == 4  # the text path only for lines 2-5: line 1's frame was parsed once, with its record
