"""A slow link between two recordings (sample_captures/slow-link/): the race window a recording measures
from its own round trips, and which of two `proxy` recordings is nearer the server in `--merge`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from cancelwire.run.pipeline import AuditOptions, audit
from cancelwire.run.results import AuditResult
from test_cli import ROOT, run
from transcripts import Line, write_transcript

SLOW = Path(__file__).resolve().parent.parent / "sample_captures" / "slow-link"
NAME = "sdk-stdio-result-crosses-cancel"
GO_NAME = "gosdk-stdio-result-crosses-cancel"
CLIENT_END = SLOW / f"{NAME}.client-end.jsonl"
SERVER_END = SLOW / f"{NAME}.server-end.jsonl"

#: (sample, seconds from the cancel to the result at the client end, the client end's fastest round trip):
#: the Python SDK session, and the Go SDK v1.7.0 session (Go client and server) made the same way
SESSIONS = pytest.mark.parametrize(("name", "gap", "window"), [(NAME, "0.100", "0.126"), (GO_NAME, "0.100", "0.122")])


def _run(*paths: Path, merge: bool = False) -> AuditResult:
    return audit([str(p) for p in paths], AuditOptions(merge=merge))


def _findings(result: AuditResult) -> set[tuple[str, Any, str, str, tuple[str, ...]]]:
    return {
        (
            f.rule_id,
            f.request_id,
            f.severity.value,
            f.certainty.value,
            tuple(o.display().split("/")[-1] for o in f.evidence),
        )
        for f in result.findings
    }


def _outcomes(result: AuditResult) -> list[tuple[Any, str, str]]:
    return [(c.request_id, c.outcome.value, c.certainty.value) for c in result.cancellations]


@SESSIONS
def test_the_client_end_measures_its_round_trip_and_calls_the_reply_a_race(name: str, gap: str, window: str) -> None:
    """The result came GAP s after the cancel; the recording's fastest round trip took WINDOW s, so
    it may have crossed the cancel (with the proxy's 50 ms default it was a violation)."""
    result = _run(SLOW / f"{name}.client-end.jsonl")
    assert _findings(result) == {
        ("CW103", 5, "info", "inferred", (f"{name}.client-end.jsonl:12", f"{name}.client-end.jsonl:13"))
    }
    (finding,) = result.findings
    assert finding.message == (
        f"the reply to tools/call (id 5) crossed the cancel in flight ({gap} s after it); the server may have "
        f"answered before it read the cancel: race window {window} s, the fastest round trip this recording shows "
        "for a client request (wider than the proxy default): a reply within one round trip of the cancel "
        "may have left before the cancel arrived"
    )
    assert _outcomes(result) == [(5, "late-result-discarded", "inferred")]


@SESSIONS
def test_the_server_end_alone_sees_a_cancel_after_completion(name: str, gap: str, window: str) -> None:
    result = _run(SLOW / f"{name}.server-end.jsonl")
    assert _findings(result) == {("CW106", 5, "info", "inferred", (f"{name}.server-end.jsonl:13",))}
    assert _outcomes(result) == []


@SESSIONS
def test_merged_the_server_end_is_primary_and_proves_the_crossing(name: str, gap: str, window: str) -> None:
    client_end, server_end = SLOW / f"{name}.client-end.jsonl", SLOW / f"{name}.server-end.jsonl"
    result = _run(client_end, server_end, merge=True)
    assert _findings(result) == {
        ("CW103", 5, "info", "exact", (f"{name}.client-end.jsonl:12", f"{name}.server-end.jsonl:12"))
    }
    assert _outcomes(result) == [(5, "late-result-discarded", "exact")]
    (summary,) = result.merges
    assert [(c.source.split("/")[-1], c.role) for c in summary.recordings] == [
        (f"{name}.server-end.jsonl", "primary"),
        (f"{name}.client-end.jsonl", "secondary"),
    ]
    # the input order does not matter: the shorter round trips decide
    assert _findings(_run(server_end, client_end, merge=True)) == _findings(result)


def _session(tmp_path: Path, name: str, *, reply_after: float, late: float, shift: float = 0.0) -> Path:
    """A proxy transcript: tools/list answered REPLY_AFTER s after it is sent, then a call cancelled and
    answered LATE s after the cancel."""
    lines: list[Line] = [
        (1.0 + shift, "c2s", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        (1.0 + reply_after + shift, "s2c", {"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}),
        (2.0 + shift, "c2s", {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "t"}}),
        (3.0 + shift, "c2s", {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}),
        (3.0 + late + shift, "s2c", {"jsonrpc": "2.0", "id": 2, "result": {"content": []}}),
        (4.0 + shift, "c2s", {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}),
        (4.0 + reply_after + shift, "s2c", {"jsonrpc": "2.0", "id": 3, "result": {"tools": []}}),
    ]
    return write_transcript(tmp_path / name, lines)


def test_a_reply_later_than_the_measured_round_trip_is_still_a_violation(tmp_path: Path) -> None:
    fast = _run(_session(tmp_path, "fast.jsonl", reply_after=0.01, late=0.1))
    assert [(f.rule_id, f.certainty.value) for f in fast.findings] == [("CW101", "inferred")]
    assert "race window" not in next(iter(fast.findings)).message  # the default stood: nothing to explain
    slow = _run(_session(tmp_path, "slow.jsonl", reply_after=0.2, late=0.3))
    assert [(f.rule_id, f.certainty.value) for f in slow.findings] == [("CW101", "inferred")]
    assert _outcomes(slow) == [(2, "late-result-violation", "inferred")]


def test_a_round_trip_of_many_seconds_widens_the_window_to_one_second_only(tmp_path: Path) -> None:
    result = _run(_session(tmp_path, "stalling.jsonl", reply_after=30.0, late=1.5))
    assert _outcomes(result) == [(2, "late-result-violation", "inferred")]


def test_two_recordings_at_one_place_stay_merged_as_one_place(tmp_path: Path) -> None:
    """Round trips alike (within 10 ms): neither is nearer the server, no crossing is made up."""
    first = _session(tmp_path, "a.jsonl", reply_after=0.02, late=0.1)
    second = _session(tmp_path, "b.jsonl", reply_after=0.025, late=0.1, shift=0.001)
    result = _run(first, second, merge=True)
    assert [(f.rule_id, f.certainty.value) for f in result.findings] == [("CW101", "inferred")]
    (summary,) = result.merges
    assert [(c.source.split("/")[-1], c.role) for c in summary.recordings] == [
        ("a.jsonl", "primary"),
        ("b.jsonl", "secondary"),
    ]


def test_the_transcripts_declare_the_proxy_vantage() -> None:
    for path in (CLIENT_END, SERVER_END, SLOW / f"{GO_NAME}.client-end.jsonl", SLOW / f"{GO_NAME}.server-end.jsonl"):
        header = json.loads(path.read_text().splitlines()[0])
        assert header["vantage"] == "proxy"


# -- captures at both ends of a slow wire (scripts/record_slow_link_captures.py) ----------------------

HTTP = "sdk-http-result-crosses-close"
needs_tshark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed")


@needs_tshark
def test_at_the_client_end_the_reply_crossed_the_close() -> None:
    """Frame 32 is the client's FIN; the response head (frame 33) acknowledges up to the FIN, not past it:
    the server's TCP did not have it yet. The result (frame 35) comes after the client's RST (frame 34),
    which the client's kernel sent at the head: sent before the RST reached the server, it is read."""
    result = _run(SLOW / f"{HTTP}.client-end.pcapng")
    assert _findings(result) == {
        ("CW103", 4, "info", "exact", (f"{HTTP}.client-end.pcapng#32", f"{HTTP}.client-end.pcapng#35"))
    }
    assert _outcomes(result) == [(4, "late-result-discarded", "exact")]


@needs_tshark
def test_at_the_server_end_a_segment_that_acknowledges_the_fin_is_a_write_after_it() -> None:
    """The reverse: at the server end the result's segment (frame 34) acknowledges the client's FIN (frame 33)."""
    result = _run(SLOW / f"{HTTP}.server-end.pcapng")
    evidence = (f"{HTTP}.server-end.pcapng#33", f"{HTTP}.server-end.pcapng#34")
    assert _findings(result) == {("CW101", 4, "error", "exact", evidence), ("CW201", 4, "error", "exact", evidence)}
    assert _outcomes(result) == [(4, "late-result-violation", "exact")]


HTTPS = "sdk-https-result-crosses-close"


@needs_tshark
def test_over_tls_at_the_client_end_a_decrypted_reply_crossed_the_close() -> None:
    """The same over TLS, decrypted with the key log beside the capture: the client's FIN is frame 35; the
    record holding the response head (frame 36) left with ack 856725536, the FIN's own sequence number, so
    the server's TCP did not have the FIN yet; the result (frame 39) comes after the client's RST (frame 37).
    Decrypted records carry their segment's acknowledgement as plain bytes do: no CW201, as in plain HTTP."""
    result = _run(SLOW / f"{HTTPS}.client-end.pcapng")
    assert _findings(result) == {
        ("CW103", 4, "info", "exact", (f"{HTTPS}.client-end.pcapng#35", f"{HTTPS}.client-end.pcapng#39"))
    }
    assert _outcomes(result) == [(4, "late-result-discarded", "exact")]


@needs_tshark
def test_over_tls_at_the_server_end_a_record_that_acknowledges_the_fin_is_a_write_after_it() -> None:
    """The reverse: at the server end the head left (frame 35) before the FIN (frame 36) came, and the
    result's record (frame 37) acknowledges the FIN."""
    result = _run(SLOW / f"{HTTPS}.server-end.pcapng")
    evidence = (f"{HTTPS}.server-end.pcapng#36", f"{HTTPS}.server-end.pcapng#37")
    assert _findings(result) == {("CW101", 4, "error", "exact", evidence), ("CW201", 4, "error", "exact", evidence)}
    assert _outcomes(result) == [(4, "late-result-violation", "exact")]


@needs_tshark
@pytest.mark.parametrize(
    ("name", "fin", "offset"), [(HTTP, 33, "-0.0608 s ± 0.0611 s"), (HTTPS, 36, "-0.0590 s ± 0.0605 s")]
)
def test_merged_with_the_server_log_the_result_was_written_before_the_fin(name: str, fin: int, offset: str) -> None:
    """The server's log wrote the result about 0.1 s before the client's FIN reached the server; the capture at
    the server end saw the FIN before the result's segment left (Nagle held it). The segment leaving after the FIN
    orders nothing against the log's write (the log saw the reply first): the aligned clock places the FIN after
    the result, so the call was answered before the close came, and no reply is "-0.046 s after the cancel"."""
    pair = [f"sample_captures/slow-link/{name}.server-end.pcapng", f"sample_captures/slow-link/{name}.server.jsonl"]
    done = run("audit", "--merge", *pair)
    assert done.returncode == 0, done.stderr
    head = done.stdout.split("\n\nInputs:")[0]
    log, capture = (f"sample_captures/slow-link/{name}.{end}" for end in ("server.jsonl", "server-end.pcapng"))
    assert head == (
        "Findings: 0 errors, 0 warnings, 0 info\n\n"
        f"Merged recordings of {log}#1\n"
        f"  {log} clock = {capture} clock {offset}, drift +0.0 ppm (4 request/reply pair(s), 0 rejected as outliers)\n"
        f"  primary {log} [ndjson, vantage server]: 8 message(s), 8 in both, 0 only here\n"
        f"  secondary {capture} [pcap, vantage wire]: 8 message(s), 8 in both, 0 only here, 6 transport fact(s) taken\n"
        "  lost between them: 0; missing from one: 0; calls given up with no cancel reaching the server: 0"
    )
    result = _run(*(ROOT / p for p in pair), merge=True)
    assert (_findings(result), _outcomes(result)) == (set(), [])
    assert all(s.timestamps_ordered for s in result.sessions)


H2 = "handwritten-h2c-result-crosses-reset"


@needs_tshark
def test_http2_frames_sent_before_the_stream_reset_arrived_crossed_it() -> None:
    """RFC 9113 6.4: the client's RST_STREAM (frame 15) ends at client sequence 2136736778; the server's
    head, progress and result (frames 16-22) acknowledge 2136736765 only: sent before the server had it.
    Before: CW101, CW102 and CW201, exact."""
    result = _run(SLOW / f"{H2}.client-end.pcapng")
    assert _findings(result) == {
        ("CW103", 1, "info", "exact", (f"{H2}.client-end.pcapng#15", f"{H2}.client-end.pcapng#20"))
    }
    assert _outcomes(result) == [(1, "late-result-discarded", "exact")]


@needs_tshark
def test_at_the_server_end_the_result_came_before_the_stream_reset() -> None:
    result = _run(SLOW / f"{H2}.server-end.pcapng")
    assert _findings(result) == set()
    assert _outcomes(result) == []


CROSSING = Path(__file__).resolve().parent / "fixtures" / "crossing"


@needs_tshark
def test_an_sse_result_whose_tail_was_captured_before_the_fin_was_written_before_it() -> None:
    """Timed by when its bytes were first captured (the tail, frame 6, acknowledging short of the FIN), not
    by the retransmitted head (frame 8) that completed it."""
    result = _run(CROSSING / "sse-tail-before-fin.pcapng")
    evidence = ("sse-tail-before-fin.pcapng#7", "sse-tail-before-fin.pcapng#8")
    assert _findings(result) == {("CW103", 2, "info", "exact", evidence)}
    assert _outcomes(result) == [(2, "late-result-discarded", "exact")]


@needs_tshark
def test_an_sse_result_first_sent_after_the_fin_is_a_write_after_it() -> None:
    result = _run(CROSSING / "sse-after-fin.pcapng")
    assert _findings(result) == {
        ("CW101", 2, "error", "exact", ("sse-after-fin.pcapng#6", "sse-after-fin.pcapng#8")),
        ("CW201", 2, "error", "exact", ("sse-after-fin.pcapng#6", "sse-after-fin.pcapng#7", "sse-after-fin.pcapng#8")),
    }
    assert _outcomes(result) == [(2, "late-result-violation", "exact")]


@needs_tshark
def test_http2_frames_captured_after_the_clients_tcp_rst_crossed_it() -> None:
    """HAND-WRITTEN (scripts/make_crossing_fixtures.py): the server's DATA with the result (frame 7) is
    captured after the client's TCP RST (frame 6). A TCP that has taken a RST sends nothing more, so it left
    before the RST arrived: read, as crossing it (before: dropped unread, CW201 and outcome-unverified)."""
    result = _run(CROSSING / "h2-result-after-client-rst.pcapng")
    evidence = ("h2-result-after-client-rst.pcapng#6", "h2-result-after-client-rst.pcapng#7")
    assert _findings(result) == {("CW103", 2, "info", "exact", evidence)}
    assert _outcomes(result) == [(2, "late-result-discarded", "exact")]


@needs_tshark
def test_http2_frames_after_the_servers_tcp_rst_are_not_read() -> None:
    """The reverse: the RST (frame 6) is the server's; the DATA after it (frame 7) is not read."""
    result = _run(CROSSING / "h2-result-after-server-rst.pcapng")
    evidence = ("h2-result-after-server-rst.pcapng#4", "h2-result-after-server-rst.pcapng#7")
    assert _findings(result) == {("CW108", 2, "warning", "exact", evidence)}
    assert _outcomes(result) == []
