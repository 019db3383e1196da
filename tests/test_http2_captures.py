"""The HTTP/2 sample captures (sample_captures/http2/, see its README.md), audited end to end: exact
findings, cancelled-call outcomes, the transport facts per stream with their frames, and Wireshark
filters that tshark itself accepts."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cancelwire.model import TransportEvent
from cancelwire.readers import InputSource, ReadOptions
from cancelwire.readers.capture.reader import READER
from cancelwire.reports.document import build
from cancelwire.run.pipeline import audit

ROOT = Path(__file__).resolve().parent.parent
H2 = ROOT / "sample_captures" / "http2"
TSHARK = shutil.which("tshark")


def _report(name: str) -> dict[str, Any]:
    return build(audit([str(H2 / f"{name}.pcapng")]))


def _findings(report: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (f["rule_id"], f["severity"], f["certainty"], f["request_id"], [e["frame"] for e in f["evidence"]])
        for f in report["findings"]
    ]


def _cancels(report: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(c["request_id"], c["tool"], c["mechanism"], c["outcome"], c["certainty"]) for c in report["cancellations"]]


def _transport(name: str) -> list[tuple[int | None, str, str | None]]:
    path = H2 / f"{name}.pcapng"
    keys = path.with_suffix(".keys")
    events = READER.read(InputSource(path.name, path), ReadOptions(keylog=keys if keys.exists() else None))
    return [(e.origin.frame, e.kind.value, e.stream) for e in events if isinstance(e, TransportEvent)]


def test_sdk_over_tls_h2_cancel_by_notification_is_answered_late() -> None:
    """TLS 1.3, ALPN h2, decrypted with the key log beside the capture: the SDK client POSTs
    notifications/cancelled on stream 11 (frame 55) and the SDK server still sends -32800 for id 3 on
    stream 9 (frame 60): a reply after the cancel reached it, proven by the capture's order."""
    report = _report("sdk-h2-tls-cancel-notification")
    assert _findings(report) == [("CW101", "warning", "exact", 3, [55, 60])]
    assert report["findings"][0]["display_filter"] == (
        "frame.number in {55, 60} || (tcp.stream == 0 && http2.streamid in {9, 11})"
    )
    assert _cancels(report) == [(3, "slow_write", "notification", "late-result-violation", "exact")]
    assert _transport("sdk-h2-tls-cancel-notification") == [
        (18, "stream-opened", "tcp0/h2s1"),
        (23, "closed-by-server", "tcp0/h2s1"),
        (29, "stream-opened", "tcp0/h2s5"),
        (36, "stream-opened", "tcp0/h2s7"),
        (39, "closed-by-server", "tcp0/h2s7"),
        (45, "stream-opened", "tcp0/h2s9"),
        (61, "closed-by-server", "tcp0/h2s9"),
        (63, "closed-by-client", None),
        (66, "closed-by-server", "tcp0/h2s5"),
    ]


def test_sdk_client_over_h2c_abandons_the_call_without_a_reset() -> None:
    """What the official SDK client really does over HTTP/2 at 2026-07-28 when the caller cancels:
    nothing on the wire. No RST_STREAM, no notification: the server runs the tool to its end and the
    stream ends with the result (frame 46). The capture shows no cancel, so none is judged."""
    report = _report("sdk-h2c-cancel-close-stream")
    assert _findings(report) == []
    assert _cancels(report) == []
    assert _transport("sdk-h2c-cancel-close-stream") == [
        (18, "closed-by-server", "tcp0/h2s1"),  # the end of tools/list's JSON reply ends its stream
        (23, "stream-opened", "tcp0/h2s3"),
        (46, "closed-by-server", "tcp0/h2s3"),
    ]
    assert report["sessions"][0]["protocol_version"] == "2026-07-28"


def test_a_stream_reset_is_the_2026_cancel_and_the_sdk_server_stops() -> None:
    report = _report("h2c-client-resets-stream")
    assert _findings(report) == []
    assert _cancels(report) == [(1, "slow_write", "disconnect", "outcome-unverified", "exact")]
    assert _transport("h2c-client-resets-stream") == [
        (14, "stream-opened", "tcp0/h2s1"),
        (21, "reset-by-client", "tcp0/h2s1"),
    ]


def test_writes_after_a_stream_reset_are_judged_like_writes_after_a_fin() -> None:
    """The hand-written server ignores RST_STREAM (frame 19): progress 4 (frame 21) and the result
    (frame 23) on the reset stream are the same violations FIN/RST evidence gives on HTTP/1.1."""
    report = _report("bad-h2-server-writes-after-reset")
    assert _findings(report) == [
        ("CW101", "error", "exact", 1, [19, 23]),
        ("CW102", "error", "exact", 1, [19, 21]),
        ("CW201", "error", "exact", 1, [19, 21, 23]),
    ]
    assert [f["display_filter"] for f in report["findings"]] == [
        "frame.number in {19, 23} || (tcp.stream == 0 && http2.streamid == 1)",
        "frame.number in {19, 21} || (tcp.stream == 0 && http2.streamid == 1)",
        "frame.number in {19, 21, 23} || (tcp.stream == 0 && http2.streamid == 1)",
    ]
    assert _cancels(report) == [(1, "slow_write", "disconnect", "late-result-violation", "exact")]
    assert _transport("bad-h2-server-writes-after-reset") == [
        (10, "stream-opened", "tcp0/h2s1"),
        (19, "reset-by-client", "tcp0/h2s1"),
        (21, "server-bytes", "tcp0/h2s1"),
        (23, "server-bytes", "tcp0/h2s1"),
        (23, "closed-by-server", "tcp0/h2s1"),
    ]


def test_a_flow_control_stall_is_stopped_reading() -> None:
    """SETTINGS_INITIAL_WINDOW_SIZE 1024 and no WINDOW_UPDATE: the server's DATA of frame 19 uses the
    last of the window while the flood goes on; the client resets the stream 2 s later (frame 21)."""
    report = _report("h2c-client-stops-reading")
    assert _findings(report) == [
        ("CW202", "error", "exact", 1, [19, 21]),
        ("CW206", "info", "exact", 1, [26]),  # the cut SSE event was on id 1's stream
    ]
    assert _cancels(report) == [(1, "flood", "disconnect", "outcome-unverified", "inferred")]
    assert _transport("h2c-client-stops-reading") == [
        (12, "stream-opened", "tcp0/h2s1"),
        (19, "receive-window-zero", "tcp0/h2s1"),
        (21, "reset-by-client", "tcp0/h2s1"),
    ]


def test_curl_upgrades_to_h2c_and_its_timeout_closes_the_connection() -> None:
    """curl --http2 on http:// (HTTP/1.1 `Upgrade: h2c`): GET /mcp upgraded (101, frame 6) and answered 405 on
    stream 1; tools/call on stream 3 (frame 15); progress 1-7; curl's --max-time closes the connection
    (FIN, frame 35) without RST_STREAM or GOAWAY: the 2026-07-28 cancel, and the SDK server stops."""
    report = _report("curl-h2c-upgrade-max-time")
    assert _findings(report) == []
    assert _cancels(report) == [(1, "slow_write", "disconnect", "outcome-unverified", "exact")]
    assert _transport("curl-h2c-upgrade-max-time") == [
        (19, "stream-opened", "tcp0/h2s3"),
        (35, "closed-by-client", "tcp0/h2s3"),
    ]
    assert report["sessions"][0]["protocol_version"] == "2026-07-28"


def test_a_capture_cut_after_the_upgrade_judges_the_call_as_the_whole_one() -> None:
    """The curl sample from its frame 14 on (editcap, tests/rules/http2-capture-joined-mid-connection): no
    handshake, no preface. The response head refers to HPACK entries from before the cut (named), its body
    is read as SSE by its first bytes, and the call and its cancel by FIN come out as in the whole capture."""
    cut = ROOT / "tests" / "rules" / "http2-capture-joined-mid-connection" / "triggers.pcapng"
    report = build(audit([str(cut)]))
    assert _findings(report) == [("CW924", "warning", "exact", None, [1, 6])]
    assert _cancels(report) == _cancels(_report("curl-h2c-upgrade-max-time"))
    events = READER.read(InputSource(cut.name, cut), ReadOptions())
    assert [(e.origin.frame, e.kind.value, e.stream) for e in events if isinstance(e, TransportEvent)] == [
        (8, "stream-opened", "tcp0/h2s3"),  # the first DATA (the head's frame 6 could not be decoded)
        (22, "closed-by-client", "tcp0/h2s3"),
    ]


@pytest.mark.skipif(TSHARK is None, reason="tshark is not installed")
def test_tshark_accepts_the_display_filters_and_they_select_the_evidence() -> None:
    report = _report("bad-h2-server-writes-after-reset")
    port = report["sessions"][0]["id"].rsplit(":", 1)[1]
    cap = str(H2 / "bad-h2-server-writes-after-reset.pcapng")
    wanted = report["findings"][2]["display_filter"]
    shown = subprocess.run(
        [str(TSHARK), "-r", cap, "-d", f"tcp.port=={port},http2", "-Y", wanted, "-T", "fields", "-e", "frame.number"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    frames = [int(line) for line in shown.stdout.split()]
    assert {19, 21, 23} <= set(frames)
    assert frames == [9, 10, 13, 15, 17, 19, 21, 22, 23]  # every HTTP/2 frame of stream 1
