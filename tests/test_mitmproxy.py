"""The mitmproxy flow-file reader: exact verdicts on files real mitmdump wrote, old flow formats, hostile files."""

from __future__ import annotations

import gzip
import re
from pathlib import Path
from typing import Any

import pytest
from cancelwire.errors import InputError
from cancelwire.model import Anomaly, AnomalyName, MessageEvent, SessionStart, TransportEvent, TransportKind, Vantage
from cancelwire.readers import InputSource, ReadOptions, choose_reader
from cancelwire.readers.tools.mitmproxy import READER, UNRECORDED
from cancelwire.readers.tools.mitmproxy_tnetstring import MAX_DEPTH, next_flow, parse
from reader_audits import report_of

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_captures" / "mitmproxy"
CLEAN = ROOT / "tests" / "fixtures" / "mitmproxy" / "mitmdump-sdk-clean.flows"


def _events(path: Path) -> list[Any]:
    return list(READER.read(InputSource(path.name, path), ReadOptions()))


def _findings(report: dict[str, Any]) -> list[tuple[Any, ...]]:
    """(rule id, certainty, request id, evidence flows) of each finding."""
    return [
        (f["rule_id"], f["certainty"], f["request_id"], [e["line"] for e in f["evidence"]]) for f in report["findings"]
    ]


def _cancels(report: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(c["request_id"], c["mechanism"], c["outcome"], c["certainty"]) for c in report["cancellations"]]


def _flows(path: Path) -> list[dict[str, Any]]:
    """The flows of a file, as the reader's own tnetstring parser reads them."""
    flows, offset = [], 0
    with path.open("rb") as stream:
        while (data := next_flow(stream, offset, path.name)) is not None:
            flows.append(parse(data, offset))
            offset += len(data)
    return flows


def dumps(value: Any) -> bytes:
    """A tnetstring of VALUE (test-only writer, from the format: LENGTH:DATA TAG)."""
    if value is None:
        return b"0:~"
    if isinstance(value, bool):
        data, tag = (b"true" if value else b"false"), b"!"
    elif isinstance(value, int):
        data, tag = str(value).encode(), b"#"
    elif isinstance(value, float):
        data, tag = repr(value).encode(), b"^"
    elif isinstance(value, bytes):
        data, tag = value, b","
    elif isinstance(value, str):
        data, tag = value.encode(), b";"
    elif isinstance(value, list | tuple):
        data, tag = b"".join(dumps(v) for v in value), b"]"
    else:
        data, tag = b"".join(dumps(k) + dumps(v) for k, v in value.items()), b"}"
    return b"%d:%s%s" % (len(data), data, tag)


def _write(tmp_path: Path, *flows: Any, tail: bytes = b"") -> Path:
    path = tmp_path / "flows"
    path.write_bytes(b"".join(f if isinstance(f, bytes) else dumps(f) for f in flows) + tail)
    return path


# -- the recordings: exact verdicts --------------------------------------------------------------------


def test_cancel_notification_answered_late(monkeypatch: pytest.MonkeyPatch) -> None:
    report = report_of(SAMPLES / "mitmdump-sdk-cancel-notification.flows", monkeypatch)
    assert _findings(report) == [("CW101", "exact", 3, [5, 4])]
    assert _cancels(report) == [(3, "notification", "late-result-violation", "exact")]
    (session,) = report["sessions"]
    assert (session["format"], session["vantage"], session["transport"]) == ("mitmproxy", "proxy", "streamable-http")
    assert (session["protocol_version"], session["requests"]) == ("2025-11-25", 3)


def test_the_same_over_http2(monkeypatch: pytest.MonkeyPatch) -> None:
    report = report_of(SAMPLES / "mitmdump-sdk-h2-cancel-notification.flows", monkeypatch)
    assert _findings(report) == [("CW101", "exact", 3, [4, 5])]
    assert _cancels(report) == [(3, "notification", "late-result-violation", "exact")]


def test_client_disconnected_is_the_cancel(monkeypatch: pytest.MonkeyPatch) -> None:
    """2026-07-28: the SDK closes the call's stream; mitmproxy records "Client disconnected." on its flow."""
    report = report_of(SAMPLES / "mitmdump-sdk-cancel-close-stream.flows", monkeypatch)
    assert _findings(report) == []
    assert _cancels(report) == [(2, "disconnect", "outcome-unverified", "exact")]
    closes = [e for e in _events(SAMPLES / "mitmdump-sdk-cancel-close-stream.flows") if isinstance(e, TransportEvent)]
    ((kind, frame, detail),) = [(e.kind, e.origin.line, e.detail) for e in closes]
    assert (kind, frame) == (TransportKind.CLOSED_BY_CLIENT, 2)
    assert detail == "flow 2: the flow file records 'Client disconnected.': the client gave up on the request"


def test_an_http2_reset_is_the_cancel(monkeypatch: pytest.MonkeyPatch) -> None:
    report = report_of(SAMPLES / "mitmdump-h2-client-resets-stream.flows", monkeypatch)
    assert _findings(report) == []
    assert _cancels(report) == [(1, "disconnect", "outcome-unverified", "exact")]
    (reset,) = [e for e in _events(SAMPLES / "mitmdump-h2-client-resets-stream.flows") if isinstance(e, TransportEvent)]
    assert reset.kind is TransportKind.RESET_BY_CLIENT
    assert "'stream reset by client (CANCEL)'" in reset.detail


def test_a_clean_session_has_no_cancel(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its GET stream ends with "Client disconnected." (the client leaving at the end): no request, no cancel."""
    report = report_of(CLEAN, monkeypatch)
    assert _cancels(report) == []
    assert _findings(report) == [("CW928", "exact", None, [6])]
    (missing,) = report["findings"]
    assert "flow 6: the client left before the response ended; the flow file keeps no body" in missing["message"]


def test_streamed_bodies_are_named_and_their_calls_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """An addon streamed every SSE reply: each is CW928, and the cancelled call is read (never a cancel of an
    unknown request) with its outcome unverified, as its reply may be in the body not kept."""
    report = report_of(SAMPLES / "mitmdump-sdk-streamed-cancel-notification.flows", monkeypatch)
    assert _findings(report) == [
        ("CW928", "exact", 1, [1]),
        ("CW928", "exact", 2, [3]),
        ("CW928", "exact", 3, [5]),
        ("CW928", "exact", None, [6]),
    ]
    assert "mitmproxy streamed it (stream_large_bodies" in report["findings"][0]["message"]
    assert _cancels(report) == [(3, "notification", "outcome-unverified", "inferred")]


def test_stream_large_bodies_loses_a_json_reply(monkeypatch: pytest.MonkeyPatch) -> None:
    report = report_of(SAMPLES / "mitmdump-sdk-streamed-close-stream.flows", monkeypatch)
    assert _findings(report) == [("CW928", "exact", 1, [1])]
    assert _cancels(report) == [(2, "disconnect", "outcome-unverified", "exact")]


def test_sessions_say_what_a_flow_file_cannot_show() -> None:
    (start,) = [e for e in _events(CLEAN) if isinstance(e, SessionStart)]
    assert (start.input_format, start.vantage, start.unrecorded) == ("mitmproxy", Vantage.PROXY, UNRECORDED)
    assert {k.value for k in UNRECORDED} == {"receive-window-zero", "server-bytes", "stream-reset-by-server"}


def test_sniffed() -> None:
    for path in [CLEAN, *sorted(SAMPLES.glob("*.flows"))]:
        assert choose_reader(InputSource(path.name, path), None).name == "mitmproxy"
    assert not READER.sniff(b"12:34:56 a log line")
    assert not READER.sniff(b'{"log": {}}')
    assert not READER.sniff(b"10:8:version;")  # the key is 7 bytes, not 8


# -- older flow formats ---------------------------------------------------------------------------------


def _as_version(flow: dict[str, Any], version: Any) -> dict[Any, Any]:
    """A format 21 flow with the fields cancelwire reads as an older format held them (mitmproxy's io/compat.py
    migrates from these): bytes keys before (0, 18), `code` for the status before (0, 14). The connection fields,
    which cancelwire does not read, stay as format 21 has them (so mitmproxy itself would refuse the file)."""
    old: dict[Any, Any] = {**flow, "version": version}
    if isinstance(version, list) and tuple(version) < (0, 18):
        response = dict(old["response"])
        if tuple(version) < (0, 14):
            response["code"] = response.pop("status_code")
        old["response"] = {k.encode(): v for k, v in response.items()}
        old["request"] = {k.encode(): v for k, v in old["request"].items()}
        old = {k.encode(): v for k, v in old.items()}
    return old


@pytest.mark.parametrize("version", [7, 14, 18, [0, 13], [0, 16], [2, 0, 0]])
def test_older_flow_formats_read_alike(tmp_path: Path, version: Any) -> None:
    flows = _flows(SAMPLES / "mitmdump-sdk-cancel-notification.flows")
    path = _write(tmp_path, *(_as_version(f, version) for f in flows))

    def messages(events: list[Any]) -> list[tuple[Any, ...]]:
        return [(e.origin.line, e.message.id, e.message.method) for e in events if isinstance(e, MessageEvent)]

    assert messages(_events(path)) == messages(_events(SAMPLES / "mitmdump-sdk-cancel-notification.flows"))


def test_a_newer_or_unknown_version_is_named(tmp_path: Path) -> None:
    (flow, *_) = _flows(CLEAN)
    path = _write(tmp_path, {**flow, "version": 22}, {**flow, "version": "x"}, flow)
    bad = [e for e in _events(path) if isinstance(e, Anomaly)]
    assert [(e.name, e.origin.line) for e in bad] == [
        (AnomalyName.INPUT_BAD_RECORD, 1),
        (AnomalyName.INPUT_BAD_RECORD, 2),
    ]
    assert "flow format version 22 is newer than cancelwire reads (up to 21)" in bad[0].detail
    assert [e.origin.line for e in _events(path) if isinstance(e, MessageEvent)] == [3, 3]


# -- hostile files: a clear error naming the flow and its byte, the rest analysed ---------------------------


def test_a_cut_file_is_read_up_to_the_cut(tmp_path: Path) -> None:
    data = (SAMPLES / "mitmdump-sdk-cancel-notification.flows").read_bytes()
    sizes = [len(dumps(f)) for f in _flows(SAMPLES / "mitmdump-sdk-cancel-notification.flows")]
    cut_at = sizes[0] + sizes[1] + 100
    path = tmp_path / "cut.flows"
    path.write_bytes(data[:cut_at])
    seen: list[Any] = []
    with pytest.raises(InputError) as caught:
        seen.extend(READER.read(InputSource(path.name, path), ReadOptions()))
    assert str(caught.value).startswith(f"cut.flows: flow 3 at byte {sizes[0] + sizes[1]}: the file ends ")
    assert "the flows after it are not read" in str(caught.value)
    # (the reader yields flows 1 and 2's events before it raises: the pipeline judges them)
    events = []
    try:
        for event in READER.read(InputSource(path.name, path), ReadOptions()):
            events.append(event)
    except InputError:
        pass
    assert [e.message.method for e in events if isinstance(e, MessageEvent) and e.message.method] == [
        "initialize",
        "notifications/initialized",
    ]


@pytest.mark.parametrize(
    ("tail", "message"),
    [
        (b"4294967296:", r"flow 2 at byte \d+: a flow that claims 4294967296 bytes, past the 64 MiB read"),
        (b"99999999999999:", r"flow 2 at byte \d+: a length prefix longer than 10 digits"),
        (b"12", r"flow 2 at byte \d+: the file ends inside a length prefix \(cut\)"),
        (b"\n", r"flow 2 at byte \d+: not a tnetstring: b'\\n' where a length prefix should be"),
    ],
)
def test_a_frame_that_cannot_be_followed_ends_the_reading(tmp_path: Path, tail: bytes, message: str) -> None:
    (flow, *_) = _flows(CLEAN)
    path = _write(tmp_path, flow, tail=tail)
    events: list[Any] = []
    with pytest.raises(InputError, match=message):
        for event in READER.read(InputSource(path.name, path), ReadOptions()):
            events.append(event)
    assert [e.message.method for e in events if isinstance(e, MessageEvent)] == ["initialize", None]


def test_not_a_flow_file_at_all(tmp_path: Path) -> None:
    path = tmp_path / "x.flows"
    path.write_bytes(b"hello")
    with pytest.raises(InputError, match="not a mitmproxy flow file: not a tnetstring"):
        _events(path)


def _raw(inner: bytes) -> bytes:
    """A dict of the given (maybe damaged) members, framed right."""
    return b"%d:%s}" % (len(inner), inner)


def _nested(depth: int) -> bytes:
    value = b"0:~"
    for _ in range(depth):
        value = b"%d:%s]" % (len(value), value)
    return value


@pytest.mark.parametrize(
    ("flow", "detail"),
    [
        (_raw(dumps("m") + _nested(MAX_DEPTH + 5)), f"nested deeper than {MAX_DEPTH} levels"),
        (dumps([1, 2]), "a flow must be a dict, not a list"),
        (dumps({"version": 21, "type": "http", "request": [1]}), "an HTTP flow without its request"),
        (dumps({"version": 21, "request": {"timestamp_start": "soon"}}), "timestamp_start is not a clock reading"),
        (_raw(b"1:a;5:xy,"), "a value of 5 bytes that runs past its container"),
        (_raw(b"1:a;1:x?"), "unknown type tag '?'"),
        (_raw(b"1:a;5:12a45#"), "not a number: b'12a45'"),
        (_raw(b"1:a;1:1]"), "a value without its length prefix"),
        (_raw(b"1:a;"), "a dict key without its value"),
        (_raw(b"1:1#1:x,"), "a dict key that is a int, not text"),
        (_raw(b"1:a;" + b"50:" + b"9" * 50 + b"#"), "a number of more than 40 digits"),
    ],
)
def test_a_bad_flow_is_skipped_and_the_rest_read(tmp_path: Path, flow: bytes, detail: str) -> None:
    good = _flows(CLEAN)[:2]
    path = _write(tmp_path, good[0], flow, good[1])
    events = _events(path)
    (bad,) = [e for e in events if isinstance(e, Anomaly) and e.name is AnomalyName.INPUT_BAD_RECORD]
    assert bad.origin.line == 2 and bad.detail.startswith("flow 2 (byte ") and detail in bad.detail
    assert [e.origin.line for e in events if isinstance(e, MessageEvent)] == [1, 1, 3]


def test_flows_without_mcp_say_so(tmp_path: Path) -> None:
    (flow, *_) = _flows(CLEAN)
    plain = {**flow, "request": {**flow["request"], "content": b"hello", "headers": []}, "response": None}
    events = _events(_write(tmp_path, plain, {**flow, "type": "tcp"}))
    assert [(e.name, e.detail) for e in events if isinstance(e, Anomaly)] == [
        (AnomalyName.HAR_NO_MCP, "none of the 2 flows carries JSON-RPC or an Mcp-Session-Id")
    ]


def test_hostile_text_is_bounded(tmp_path: Path) -> None:
    (flow, *_) = _flows(CLEAN)
    request = {**flow["request"], "host": "h" * 100_000, "path": b"/\x1b[2J" * 10_000}
    events = _events(_write(tmp_path, {**flow, "request": request, "error": {"msg": "x" * 10_000, "timestamp": 1e9}}))
    (start,) = [e for e in events if isinstance(e, SessionStart)]
    assert len(start.session_key) < 400
    assert not any(re.search(r"h{300}", str(e)) for e in events)


def test_one_pass_and_by_start_agree(tmp_path: Path) -> None:
    """A file on disk is read by start (two passes); a gzip one in one pass, held in the reorder buffer: the same
    events come out, in the same order."""
    plain = SAMPLES / "mitmdump-sdk-streamed-cancel-notification.flows"
    packed = tmp_path / "flows.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))

    def shown(path: Path) -> list[tuple[Any, ...]]:
        return [(type(e).__name__, e.ts, e.origin.line, e.session_key.rsplit("#")[-1]) for e in _events(path)]

    assert shown(packed) == shown(plain)
    times = [ts for _, ts, *_ in shown(plain) if ts is not None]
    assert times == sorted(times) and len(times) == 10


def test_a_reset_with_http2_on_both_sides_is_no_cancel(tmp_path: Path) -> None:
    """mitmproxy 11 words a server's reset "stream reset by client" too: with HTTP/2 to the server as well, it
    cannot say who reset the stream, so the call got no response (CW215), named, and is not a cancel."""
    (flow,) = _flows(SAMPLES / "mitmdump-h2-client-resets-stream.flows")
    path = _write(tmp_path, {**flow, "server_conn": {**flow["server_conn"], "alpn": b"h2"}})
    events = _events(path)
    assert not [e for e in events if isinstance(e, TransportEvent)]
    (failed,) = [e for e in events if isinstance(e, Anomaly)]
    assert failed.name is AnomalyName.HAR_REQUEST_FAILED
    assert "(stream reset by client (CANCEL) (mitmproxy writes this for a reset by either peer" in failed.detail
