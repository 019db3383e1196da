"""Times no clock reads (before 1970, after 2106) in stdio transcripts and capture frames: named once per
input (CW930 implausible-time), and the events kept in their place without a time, so no report says
"crossed the cancel 1e308 s after it". Reproducers by scripts/make_bounds_fixtures.py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from cancelwire.model.timestamps import plausible
from cancelwire.readers.capture.tshark_fields import FIELDS, parse_line
from fuzzing import ROOT, run_cli

CORPUS = ROOT / "tests" / "corpus"


def _audit(path: Path) -> dict[str, Any]:
    run = run_cli(["audit", str(path), "--format", "json"])
    assert run.status == 0 and "Traceback" not in run.stderr, run
    report: dict[str, Any] = json.loads(run.stdout)
    return report


def _offsets(report: dict[str, Any]) -> list[float]:
    """Every time offset of every cancelled call's timeline."""
    return [e["offset"] for c in report["cancellations"] for e in c["timeline"] if e["offset"] is not None]


def test_transcript_times_no_clock_reads_are_named_and_dropped() -> None:
    report = _audit(CORPUS / "transcript" / "times-implausible.jsonl")
    found = [(f["rule"], f["request_id"]) for f in report["findings"]]
    assert found == [("implausible-time", None), ("late-result-race", 2)]
    implausible, race = report["findings"]
    # the header (year 9999), the progress (-5e9), the reply (1e308), the exit (1e30): all four named
    assert [e["line"] for e in implausible["evidence"]] == [1, 5, 8, 9]
    assert race["message"].startswith("the reply to tools/call (id 2) crossed the cancel in flight (an unknown time")
    assert all(abs(offset) < 10 for offset in _offsets(report))
    (session,) = report["sessions"]
    assert session["first_time"].startswith("2026-12-02") and session["last_time"].startswith("2026-12-02")


def test_transcript_fast_path_keeps_plausible_times() -> None:
    """The sample's own times are untouched: the bound only removes what no clock reads."""
    report = _audit(ROOT / "sample_captures" / "stdio" / "handwritten-server-late-result-after-cancel.jsonl")
    assert "implausible-time" not in {f["rule"] for f in report["findings"]}
    assert max(_offsets(report)) == pytest.approx(0.601, abs=0.001)


def test_tshark_line_with_a_time_no_clock_reads() -> None:
    cols = [b""] * len(FIELDS)
    cols[:3] = [b"7", b"16725225600.500000768", b"0"]
    cols[3], cols[5], cols[7], cols[8] = b"127.0.0.1", b"127.0.0.1", b"40000", b"8000"
    frame = parse_line(b"\t".join(cols) + b"\n")
    assert not isinstance(frame, int) and frame is not None and frame.ts is None
    cols[1] = b"1796227543.2"
    frame = parse_line(b"\t".join(cols) + b"\n")
    assert not isinstance(frame, int) and frame is not None and frame.ts == 1796227543.2
    assert plausible(frame.ts)


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed")
def test_capture_frame_time_no_clock_reads() -> None:
    report = _audit(CORPUS / "pcap" / "frame-time-year-2500.pcapng")
    found = [(f["rule"], f["request_id"], f["message"]) for f in report["findings"]]
    assert found == [
        (
            "response-after-cancel",
            3,
            "server answered tools/call (id 3) an unknown time after the cancel, once the cancel had reached it: "
            "the reply itself says the request was cancelled (error code -32800, request cancelled)",
        ),
        (
            "implausible-time",
            None,
            "a recorded time was ignored: 1 frame(s) have a time that cannot be a clock reading (before 1970 or "
            "after 2106), the first frame 77 (16725225600.500000768 s since 1970); their events are kept without "
            "a time",
        ),
    ]
    assert [e["frame"] for e in report["findings"][1]["evidence"]] == [77]
    assert all(abs(offset) < 10 for offset in _offsets(report))
