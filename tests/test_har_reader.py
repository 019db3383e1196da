"""The HAR reader: exact verdicts on the samples, times and order, what is not judged, hostile files."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from cancelwire.errors import InputError
from cancelwire.model import Anomaly, Direction, MessageEvent, SessionStart, TransportEvent, TransportKind, Vantage
from cancelwire.readers import InputSource, ReadOptions, choose_reader
from cancelwire.readers.har.reader import READER, vantage_of
from cancelwire.readers.har.scan import MAX_DEPTH, Part, Scanner
from cancelwire.reports.document import build
from cancelwire.run.pipeline import audit

ROOT = Path(__file__).resolve().parents[1]
HAR = ROOT / "sample_captures" / "har"
NOT_JUDGED = (
    "the recording cannot show receive-window-zero, server-bytes, stream-reset-by-client, stream-reset-by-server, "
    "so not judged: write-after-disconnect, stream-left-open-after-abandon, capture-ended-with-stream-open, "
    "message-after-disconnect"
)


def _report(path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.chdir(ROOT)
    return build(audit([str(path.relative_to(ROOT))]))


def _findings(report: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (f["rule_id"], f["severity"], f["certainty"], f["request_id"], [e["line"] for e in f["evidence"]])
        for f in report["findings"]
    ]


def _events(path: Path) -> list[Any]:
    return list(READER.read(InputSource(path.name, path), ReadOptions()))


# -- the samples ---------------------------------------------------------------------------------


def test_mitmdump_sample_reply_after_the_cancel(monkeypatch: pytest.MonkeyPatch) -> None:
    """mitmproxy wrote the call's entry (line 333) after the cancel's (line 447) because it finished later;
    in time the cancel comes first, and the SDK's -32800 'Request cancelled' is a reply after it."""
    report = _report(HAR / "mitmdump-sdk-cancel-notification.har", monkeypatch)
    assert _findings(report) == [("CW101", "warning", "exact", 3, [447, 333])]
    (call,) = report["cancellations"]
    assert (call["request_id"], call["mechanism"], call["outcome"]) == (3, "notification", "late-result-violation")
    (session,) = report["sessions"]
    assert (session["format"], session["vantage"], session["protocol_version"]) == ("har", "proxy", "2025-11-25")
    assert report["unjudged"] == [f"{session['id']}: {NOT_JUDGED}"]


def test_mitmdump_sample_client_disconnect_is_the_2026_cancel(monkeypatch: pytest.MonkeyPatch) -> None:
    report = _report(HAR / "mitmdump-sdk-cancel-close-stream.har", monkeypatch)
    assert _findings(report) == []
    (call,) = report["cancellations"]
    assert (call["request_id"], call["mechanism"], call["outcome"]) == (2, "disconnect", "outcome-unverified")
    closes = [e for e in _events(HAR / "mitmdump-sdk-cancel-close-stream.har") if isinstance(e, TransportEvent)]
    assert [(e.kind, e.ts, e.stream) for e in closes] == [(TransportKind.CLOSED_BY_CLIENT, None, "har1")]
    assert "'Client disconnected.'" in closes[0].detail and "when is not recorded" in closes[0].detail


def test_browser_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    path = HAR / "browser-chromium-cancel.har"
    report = _report(path, monkeypatch)
    assert _findings(report) == []
    (call,) = report["cancellations"]
    assert (call["request_id"], call["mechanism"], call["outcome"]) == (3, "notification", "verified-by-read")
    assert report["sessions"][0]["vantage"] == "client"
    events = _events(path)
    messages = [(e.direction, e.message.id, e.message.method) for e in events if isinstance(e, MessageEvent)]
    assert messages == [
        (Direction.C2S, 1, "initialize"),
        (Direction.S2C, 1, None),
        (Direction.C2S, None, "notifications/initialized"),
        (Direction.C2S, 2, "tools/list"),
        (Direction.S2C, 2, None),
        (Direction.C2S, 3, "tools/call"),
        (Direction.C2S, None, "notifications/cancelled"),
        (Direction.C2S, 4, "tools/call"),
        (Direction.S2C, 4, None),  # its body was base64
    ]
    (abort,) = [e for e in events if isinstance(e, TransportEvent) and e.kind is TransportKind.CLOSED_BY_CLIENT]
    started = 1784885401.0  # 2026-07-24T09:30:01Z, plus `time` (0.6 + 1010 ms)
    assert abort.ts == pytest.approx(started + 1.0106) and "net::ERR_ABORTED" in abort.detail


# -- times and order -------------------------------------------------------------------------------


def _entry(at: str, body: str | None, reply: str | None = "", **timings: float) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "startedDateTime": at,
        "request": {"method": "POST", "url": "http://h:1/mcp", "headers": [{"name": "Mcp-Session-Id", "value": "s"}]},
        "response": {"status": 200, "content": {"mimeType": "text/event-stream"}},
        "timings": timings,
    }
    if body is not None:
        entry["request"]["postData"] = {"text": body}
    if reply is not None:
        entry["response"]["content"]["text"] = reply
    return entry


def _rpc(**fields: Any) -> str:
    return json.dumps({"jsonrpc": "2.0", **fields})


def _write(tmp_path: Path, entries: list[Any], creator: str = "mitmproxy") -> Path:
    path = tmp_path / "x.har"
    path.write_text(json.dumps({"log": {"version": "1.2", "creator": {"name": creator}, "entries": entries}}, indent=1))
    return path


def test_sse_events_placed_between_first_byte_and_end_and_entries_put_in_time_order(tmp_path: Path) -> None:
    progress = _rpc(method="notifications/progress", params={"progressToken": 1, "progress": 1})
    stream = f"data: {progress}\n\ndata: {_rpc(id=1, result={})}\n\n"
    call = _entry(
        "2026-01-01T00:00:00Z", _rpc(id=1, method="tools/call", params={}), stream, send=10, wait=90, receive=900
    )
    cancel = _entry("2026-01-01T00:00:00.5+00:00", _rpc(method="notifications/cancelled", params={"requestId": 1}), "")
    cancel["response"] = {"status": 202}
    events = _events(_write(tmp_path, [cancel, call]))  # written in the order they finished, as mitmproxy does
    t0 = 1767225600.0
    timed = [(e.message.method or e.message.id, e.ts) for e in events if isinstance(e, MessageEvent)]
    assert timed == [
        ("tools/call", pytest.approx(t0 + 0.01)),
        ("notifications/progress", pytest.approx(t0 + 0.1)),  # first response byte
        ("notifications/cancelled", pytest.approx(t0 + 0.5)),
        (1, pytest.approx(t0 + 1.0)),  # the last event: the response's end
    ]
    assert [e.seq for e in events] == list(range(1, len(events) + 1))


def test_missing_optional_fields_minus_one_timings_and_a_naive_time(tmp_path: Path) -> None:
    bare = {"startedDateTime": "2026-01-01T00:00:00", "request": {"postData": {"text": _rpc(id=7, method="ping")}}}
    timed = _entry(
        "2026-01-01T00:00:01Z", _rpc(id=8, method="ping"), None, blocked=-1, dns=-1, connect=-1, send=5, wait=-1
    )
    timed["response"] = {"status": 200, "content": {"text": _rpc(id=8, result={}), "mimeType": "application/json"}}
    events = _events(_write(tmp_path, [bare, timed], creator="Proxyman"))
    starts = [(e.session_key, e.vantage) for e in events if isinstance(e, SessionStart)]
    assert starts == [("x.har#?", Vantage.PROXY), ("x.har#s", Vantage.PROXY)]  # no URL, no session id: "?"
    found = [(e.message.id, e.ts) for e in events if isinstance(e, MessageEvent)]
    t0 = 1767225600.0
    assert found == [(7, t0), (8, pytest.approx(t0 + 1.005)), (8, pytest.approx(t0 + 1.005))]
    # HAR 1.2 requires a response; an entry without one got none, as far as the file says
    assert _anomalies(events) == [
        ("har.request-failed", 8, "entry 0: the request got no response (no status and no error recorded)")
    ]


def test_timings_too_large_for_a_float_count_as_absent(tmp_path: Path) -> None:
    """A huge integer timing (JSON has no bound) crashed the read with OverflowError (exit 3)."""
    huge = _entry(
        "2026-01-01T00:00:01Z", _rpc(id=8, method="ping"), _rpc(id=8, result={}), send=10**400, wait=-(10**400)
    )
    huge["response"]["content"]["mimeType"] = "application/json"
    found = [(e.message.id, e.ts) for e in _events(_write(tmp_path, [huge])) if isinstance(e, MessageEvent)]
    assert found == [(8, 1767225601.0), (8, 1767225601.0)]


def test_vantage_from_creator() -> None:
    assert [vantage_of(n) for n in ("WebInspector", "Firefox", "mitmproxy", "Charles Proxy", "curl", "")] == [
        Vantage.CLIENT,
        Vantage.CLIENT,
        Vantage.PROXY,
        Vantage.PROXY,
        Vantage.UNKNOWN,
        Vantage.UNKNOWN,
    ]


def test_sniffing_claims_pretty_and_minified_hars_only(tmp_path: Path) -> None:
    pretty = _write(tmp_path, [])
    minified = tmp_path / "m.json"
    minified.write_text(json.dumps({"log": {"creator": {"name": "x"}, "entries": []}}))
    line = tmp_path / "n.jsonl"
    line.write_text(_rpc(id=1, method="ping") + "\n")
    assert [choose_reader(InputSource(p.name, p), None).name for p in (pretty, minified, line)] == [
        "har",
        "har",
        "ndjson",
    ]


# -- hostile files -----------------------------------------------------------------------------------


def _anomalies(events: list[Any]) -> list[tuple[str, int | None, str]]:
    return [(e.name, e.origin.line, e.detail) for e in events if isinstance(e, Anomaly)]


def test_broken_json_before_the_entries_is_an_input_error_naming_line_and_byte(tmp_path: Path) -> None:
    path = tmp_path / "bad.har"
    path.write_text('{"log": {\n  "creator": {"name": "x"]\n}}')
    with pytest.raises(InputError) as caught:
        _events(path)
    assert caught.value.message == "bad.har: not a readable HAR file: line 2, byte 35: unexpected ']'"


def test_broken_json_after_entries_keeps_what_came_before(tmp_path: Path) -> None:
    good = _entry("2026-01-01T00:00:00Z", _rpc(id=1, method="ping"))
    path = _write(tmp_path, [good, good])
    text = path.read_text()
    path.write_text(text[: text.rindex('"startedDateTime"')] + "]]")
    events = _events(path)
    assert [e.message.id for e in events if isinstance(e, MessageEvent)] == [1]
    ((name, line, detail),) = _anomalies(events)
    lines = text[: text.rindex('"startedDateTime"')].count("\n") + 1
    assert (name, line) == ("har.invalid-json", lines)
    assert detail.startswith(f"not JSON at line {lines}, byte ") and "unexpected ']'" in detail


def test_no_entries_array_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "x.har"
    path.write_text('{"log": {"version": "1.2"}}')
    with pytest.raises(InputError, match=r"no log\.entries array: not a HAR 1\.2 file"):
        _events(path)


def test_bad_entries_are_named_and_skipped(tmp_path: Path) -> None:
    good = _entry("2026-01-01T00:00:00Z", _rpc(id=1, method="ping"))
    deep: Any = []
    for _ in range(MAX_DEPTH + 5):
        deep = [deep]
    nested = copy.deepcopy(good) | {"_initiator": deep}
    base64 = copy.deepcopy(good)
    base64["response"]["content"] = {"text": "eyJ", "encoding": "base64"}
    entries = [7, "x", {"request": {}}, good | {"startedDateTime": "yesterday"}, nested, base64, good]
    events = _events(_write(tmp_path, entries))
    details = [d for _, _, d in _anomalies(events)]
    assert details == [  # what the scan cannot keep, as it goes; then the entries read by start, those without first
        "entry 0 skipped: an entry must be an object",
        "entry 1 skipped: an entry must be an object",
        f"entry 4 skipped: nested deeper than {MAX_DEPTH} levels",
        'entry 2 skipped: no "startedDateTime"',
        "entry 3 skipped: startedDateTime 'yesterday' is not an ISO 8601 time",
        "entry 5 skipped: a base64 body that does not decode: Incorrect padding",
    ]
    assert [e.message.id for e in events if isinstance(e, MessageEvent)] == [1]


def test_nesting_outside_the_entries_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.har"
    path.write_text('{"log": {"pages": ' + "[" * 100_000 + "]" * 100_000 + ', "entries": []}}')
    with pytest.raises(InputError, match=f"nesting deeper than {MAX_DEPTH} levels"):
        _events(path)


class Trickle:
    """A stream that gives a few bytes per read, so every value and escape crosses chunk ends."""

    def __init__(self, data: bytes, step: int) -> None:
        self.data, self.step, self.pos = data, step, 0

    def read(self, size: int = -1, /) -> bytes:
        piece = self.data[self.pos : self.pos + min(size, self.step)]
        self.pos += len(piece)
        return piece


def test_scanner_cuts_the_same_pieces_whatever_the_chunking() -> None:
    data = (HAR / "mitmdump-sdk-cancel-notification.har").read_bytes()
    whole = list(Scanner(Trickle(data, len(data))).pieces())
    assert [(p.part, p.index) for p in whole] == [(Part.CREATOR, 0)] + [(Part.ENTRY, i) for i in range(7)]
    for step in (1, 7, 64):
        assert list(Scanner(Trickle(data, step)).pieces()) == whole
    entries = json.loads(data)["log"]["entries"]
    assert [json.loads(p.data or b"") for p in whole[1:]] == entries


def test_an_entry_over_the_size_limit_is_skipped_not_kept() -> None:
    big = {"log": {"entries": [{"request": {"postData": {"text": "x" * 5000}}}, {"request": {}}]}}
    pieces = list(Scanner(Trickle(json.dumps(big).encode(), 100), max_entry=1000).pieces())
    assert [(p.index, p.data is None, p.problem) for p in pieces] == [
        (0, True, "larger than 1000 bytes"),
        (1, False, None),
    ]


def test_past_the_reorder_buffer_events_come_out_of_order_and_the_report_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file on disk is read by start time whatever the buffer (`order`); a gzip one (or a pipe) is read in one
    pass, where past the buffer an entry that started before events let go comes after them, named."""
    monkeypatch.setattr("cancelwire.readers.har.reader.MAX_REORDER", 1)
    pings = [_entry(f"2026-01-01T00:00:0{s}Z", _rpc(id=s, method="ping")) for s in (5, 6, 1)]
    path = _write(tmp_path, pings)
    assert [e.message.id for e in _events(path) if isinstance(e, MessageEvent)] == [1, 5, 6]
    packed = tmp_path / "x.har.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    events = _events(packed)
    assert [e.message.id for e in events if isinstance(e, MessageEvent)] == [5, 1, 6]
    assert [(name, line) for name, line, _ in _anomalies(events)] == [("har.entry-out-of-order", 56)]  # entry 2
    monkeypatch.chdir(tmp_path)
    report = build(audit([packed.name]))
    (session,) = report["sessions"]
    assert session["id"] == "x.har.gz#s"
    assert "timestamps go backwards (log time); order follows the file, gaps are rough" in session["notes"]
    assert not any("timestamps" in note for note in report["unjudged"])  # a session's note, not something unjudged
    late = [f for f in report["findings"] if f["rule_id"] == "CW942"]  # (the pings are unanswered: CW108)
    assert [(f["severity"], f["certainty"]) for f in late] == [("warning", "inferred")]
    assert late[0]["message"].startswith(
        "a HAR entry came after events it started before: entry 2 starts 4.000 s before events already read"
    )


def test_a_cut_gzip_names_both_the_cut_and_the_damage(tmp_path: Path) -> None:
    whole = (HAR / "browser-chromium-cancel.har").read_bytes()
    packed = gzip.compress(whole)
    path = tmp_path / "b.har.gz"
    path.write_bytes(packed[: len(packed) * 2 // 3])
    events = _events(path)
    names = [name for name, _, _ in _anomalies(events)]
    assert names == ["har.invalid-json", "input.compression-damaged"]
    assert sum(isinstance(e, MessageEvent) for e in events) >= 3  # the handshake before the cut


def test_a_legacy_sse_stream_is_named_not_misplaced(tmp_path: Path) -> None:
    get = _entry(
        "2026-01-01T00:00:00Z",
        None,
        f"event: endpoint\ndata: /messages?sessionId=s\n\ndata: {_rpc(id=1, result={})}\n\n",
    )
    get["request"]["method"] = "GET"
    events = _events(_write(tmp_path, [get]))
    ((name, _, detail),) = _anomalies(events)
    assert name == "har.entry-unreadable" and "legacy HTTP+SSE stream" in detail
    assert not any(isinstance(e, MessageEvent) for e in events)


def test_a_long_call_written_after_more_entries_than_the_buffer_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """mitmproxy's order (entries as flows finish): a call (id 100) started at 1 s and answered at 60 s comes after
    its cancel (10.5 s) and 40 pings: more events than a buffer of 20 holds (as a 30 MB HAR of that order is for
    100,000). On disk it is read by start: the cancel meets its call (a reply after it, exact). Gzip, read in one
    pass, the call comes after the cancel let go: cancel-unknown-request "never sent" [exact] as before this
    change, but now with CW942 naming the entry that came too late (inferred)."""
    monkeypatch.setattr("cancelwire.readers.har.reader.MAX_REORDER", 20)
    pings = [
        _entry(f"2026-01-01T00:00:{2 + n / 2:06.3f}Z", _rpc(id=n, method="ping"), f"data: {_rpc(id=n, result={})}\n\n")
        for n in range(40)
    ]
    cancel = _entry("2026-01-01T00:00:10.5Z", _rpc(method="notifications/cancelled", params={"requestId": 100}))
    cancel["response"] = {"status": 202}
    reply = f"data: {_rpc(id=100, error={'code': -32800, 'message': 'Request cancelled'})}\n\n"
    call = _entry("2026-01-01T00:00:01Z", _rpc(id=100, method="tools/call", params={"name": "w"}), reply, wait=59000)
    path = _write(tmp_path, [*pings[:17], cancel, *pings[17:], call])
    monkeypatch.chdir(tmp_path)

    def verdicts(name: str) -> list[tuple[str, str, Any]]:
        report = build(audit([name]))
        return sorted((f["rule_id"], f["certainty"], f["request_id"]) for f in report["findings"])

    assert verdicts(path.name) == [("CW101", "exact", 100)]
    (tmp_path / "x.har.gz").write_bytes(gzip.compress(path.read_bytes()))
    assert verdicts("x.har.gz") == [("CW105", "exact", 100), ("CW942", "inferred", None)]
