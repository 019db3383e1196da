"""Sequence diagrams (diagram.py): the arrows of known samples in order, their finding marks, the race
window, collapsing and capping, hostile text, and `cancelwire diagram` on demand."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from cancelwire.reports import diagram, diagram_rows
from cancelwire.reports.document import build
from cancelwire.reports.formats import render
from cancelwire.run.pipeline import audit
from fuzzing import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st
from transcripts import write_transcript

ROOT = Path(__file__).resolve().parent.parent
Arrow = tuple[str, str, str | None, str | None]


@pytest.fixture(autouse=True)
def _in_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # sources are named as given: relative, as in the golden reports


def _drawn(sample: str) -> ET.Element:
    report = build(audit([sample]))
    (call,) = report["cancellations"]
    return _parse(diagram.ReportDrawer()(call, report))


def _parse(text: str) -> ET.Element:
    """The SVG as XML (which also proves it is well-formed)."""
    return ET.fromstring(text.replace(diagram.SVG_NS, "", 1))


def _arrows(svg: ET.Element) -> list[Arrow]:
    """(data-kind, data-dir, data-finding, data-certainty) of every arrow, checked to be in data-seq order."""
    groups = [g for g in svg.iter("g") if g.get("class") == "msg"]
    assert [g.get("data-seq") for g in groups] == [str(i) for i in range(len(groups))]
    assert all(g.find("title") is not None for g in groups)
    return [
        (g.get("data-kind", ""), g.get("data-dir", ""), g.get("data-finding"), g.get("data-certainty")) for g in groups
    ]


def _notes(svg: ET.Element) -> list[str]:
    return [g.get("data-kind", "") for g in svg.iter("g") if g.get("class") == "note"]


def _windows(svg: ET.Element) -> int:
    return sum(1 for r in svg.iter("rect") if r.get("class") == "race-window")


def test_sdk_cancel_of_a_slow_tool_is_request_progress_cancel_and_no_race() -> None:
    svg = _drawn("sample_captures/stdio/sdk-cancel-slow-tool.jsonl")
    assert _arrows(svg) == [
        ("request", "c2s", None, None),
        ("progress", "s2c", None, None),
        ("progress", "s2c", None, None),
        ("cancel", "c2s", None, None),
    ]
    assert _notes(svg) == ["recording-ended"]
    assert _windows(svg) == 0
    assert svg.get("aria-label") == (
        "Sequence diagram of tools/call append_ledger id 3 in sample_captures/stdio/sdk-cancel-slow-tool.jsonl, "
        "cancelled by notification: outcome-unverified (exact)"
    )


def test_late_result_marks_each_message_after_the_cancel_and_shades_the_race_window() -> None:
    svg = _drawn("sample_captures/stdio/handwritten-server-late-result-after-cancel.jsonl")
    assert _arrows(svg) == [
        ("request", "c2s", None, None),
        ("progress", "s2c", None, None),
        ("cancel", "c2s", None, None),
        ("progress", "s2c", "CW102", "inferred"),
        ("progress", "s2c", "CW102", "inferred"),
        ("response", "s2c", "CW101", "inferred"),
    ]
    assert _windows(svg) == 1  # the verdict is inferred: it rests on the race window (proxy: 50 ms)
    (label,) = [t.text for t in svg.iter("text") if t.text and t.text.startswith("race window")]
    assert label == "race window 50 ms"
    gaps = [t.text for t in svg.iter("text") if t.get("x") == str(diagram.GAP_X)]
    assert gaps == ["+200 ms", "+200 ms", "+200 ms"]  # under 1 ms apart before the cancel: not labelled


def test_fin_cancel_on_the_wire_with_writes_after_it() -> None:
    svg = _drawn("sample_captures/http/bad-server-writes-after-disconnect.pcapng")
    marks = "CW102 CW201"
    assert _arrows(svg) == [
        ("request", "c2s", None, None),
        ("progress", "s2c", None, None),
        ("progress", "s2c", None, None),
        ("close", "c2s", None, None),  # the client's FIN is the cancel
        ("progress", "s2c", marks, "exact"),  # each with the bytes that carried it (CW201) folded in
        ("progress", "s2c", marks, "exact"),
        ("response", "s2c", "CW101 CW201", "exact"),
        ("progress", "s2c", marks, "exact"),
    ]
    assert _notes(svg) == ["stream-opened", "collapsed"]  # the report keeps 12 entries: 2 later not drawn
    assert _windows(svg) == 0  # a FIN already on the wire: the order is proven
    (cancel,) = [g for g in svg.iter("g") if g.get("data-kind") == "close"]
    title = cancel.findtext("title")
    assert title == (
        "client FIN before the response finished · 0 ms from the cancel · "
        "sample_captures/http/bad-server-writes-after-disconnect.pcapng#12 · client FIN before the response finished"
    )


def test_reset_cancel_after_a_flood_collapses_the_run() -> None:
    svg = _drawn("sample_captures/http/http-client-stops-reading.pcapng")
    assert _arrows(svg) == [
        ("request", "c2s", None, None),
        ("progress", "s2c", None, None),
        ("collapsed", "s2c", None, None),
        ("progress", "s2c", None, None),
        ("reset", "c2s", "CW202", "exact"),
    ]
    assert _notes(svg) == ["stream-opened", "receive-window-zero", "recording-ended"]
    texts = [t.text for t in svg.iter("text")]
    assert "and 15 more progress" in texts  # the report folded the 17 into two entries, so kept them all


def test_a_crossing_message_without_a_verdict_on_it_needs_no_race_window() -> None:
    svg = _drawn("sample_captures/http/sdk-http-cancel-notification.pcapng")
    assert [a[:2] for a in _arrows(svg)] == [
        ("request", "c2s"),
        ("progress", "s2c"),
        ("progress", "s2c"),
        ("progress", "s2c"),
        ("cancel", "c2s"),
        ("error", "s2c"),
        ("close", "s2c"),  # crossing (inferred), but neither the outcome nor a finding rests on it
    ]
    assert _windows(svg) == 0


def _call(entries: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    base = {"session": "s", "request_id": 7, "method": "tools/call", "tool": "t", "mechanism": "notification"}
    return base | {"outcome": "late-result-violation", "certainty": "exact", "timeline": entries} | extra


def _entry(kind: str, side: str | None, offset: float, relation: str | None = None, **extra: Any) -> dict[str, Any]:
    certainty = "exact" if relation in ("after", "crossing") else None
    base = {"kind": kind, "side": side, "method": None, "relation": relation, "certainty": certainty}
    evidence = {"source": "x.jsonl", "line": int(offset * 1000) + 100}
    return base | {"offset": offset, "evidence": evidence, "excerpt": "{}", "repeats": 1, "findings": []} | extra


def test_a_flood_after_the_cancel_collapses_to_first_count_last() -> None:
    mark = [{"rule_id": "CW102", "rule": "progress-after-cancel", "severity": "warning", "certainty": "exact"}]
    entries = [_entry("request", "client", -1.0), _entry("cancel", "client", 0.0, "cancel")]
    entries += [_entry("progress", "server", 0.01 * i, "after", findings=mark) for i in range(1, 61)]
    entries += [_entry("result", "server", 0.7, "after")]
    svg = _parse(diagram.draw(_call(entries)))
    flood = ("progress", "s2c", "CW102", "exact")
    assert _arrows(svg) == [
        ("request", "c2s", None, None),
        ("cancel", "c2s", None, None),
        flood,
        ("collapsed", "s2c", "CW102", "exact"),
        flood,
        ("response", "s2c", None, None),
    ]
    (collapsed,) = [g for g in svg.iter("g") if g.get("data-kind") == "collapsed"]
    assert collapsed.findtext("title") == "and 58 more progress · finding: CW102 progress-after-cancel (warning, exact)"


def test_an_entry_that_counts_repeats_collapses_too() -> None:
    entries = [_entry("request", "client", -1.0), _entry("progress", "server", -0.5, repeats=40)]
    svg = _parse(diagram.draw(_call(entries)))
    assert [a[0] for a in _arrows(svg)] == ["request", "progress", "collapsed"]
    assert "and 39 more progress" in [t.text for t in svg.iter("text")]


def test_rows_are_capped_around_the_cancel_and_the_rest_counted() -> None:
    kinds = ("progress", "related-message")  # alternating: nothing to collapse
    entries = [_entry("request", "client", -10.0)]
    entries += [_entry(kinds[i % 2], "server", -10 + 0.01 * i) for i in range(1, 300)]
    entries += [_entry("cancel", "client", 0.0, "cancel")]
    entries += [_entry(kinds[i % 2], "server", 0.01 * i, "after") for i in range(1, 300)]
    text = diagram.draw(_call(entries, left_out={"before": 5, "after": 0}))
    svg = _parse(text)
    arrows = _arrows(svg)
    assert len(arrows) == diagram_rows.MAX_ROWS - 2 and ("cancel", "c2s", None, None) in arrows
    notes = [t.text for g in svg.iter("g") if g.get("class") == "note" for t in g.iter("text")]
    # 600 rows: the request, then 37 from 20 before the cancel; 279 (+5 the report left out) before, 283 after
    assert notes == ["and 284 earlier messages not drawn", "and 283 later messages not drawn"]
    assert len(text) < 30_000


HOSTILE = '<script>alert("x")</script>\x1b[2J\u202e\ud800]]>&amp;'


def test_hostile_text_is_inert_and_escaped_everywhere() -> None:
    entries = [
        _entry("request", "client", -1.0, excerpt=HOSTILE, evidence={"source": HOSTILE, "line": 1}),
        _entry("cancel", "client", 0.0, "cancel", method=HOSTILE, excerpt=HOSTILE),
        _entry(HOSTILE, "server", 0.5, "after"),
        _entry("result", "server", 1.0, "after", findings=[{"rule_id": HOSTILE, "certainty": HOSTILE}]),
    ]
    call = _call(entries, tool=HOSTILE, request_id=HOSTILE, session=HOSTILE)
    session = {"id": HOSTILE, "vantage": HOSTILE, "client_info": {"name": HOSTILE}, "server_info": {"name": 5}}
    text = diagram.draw(call, session=session, race_window=0.1)
    for raw in ("<script", "\x1b", "\u202e", "\ud800", "]]>"):  # quotes stay in text, escaped in attributes
        assert raw not in text
    text.encode("utf-8")  # no lone surrogate: the file can be written
    svg = _parse(text)
    assert svg.get("aria-label", "").startswith(
        'Sequence diagram of tools/call <script>alert("x")</script>\\x1b[2J\\u202e'
    )
    assert [a[0] for a in _arrows(svg)] == ["request", "cancel", "response"]
    assert _notes(svg) == ['<script>alert("x")</script>\\x1b[2J\\u202e\\ud800]]>&am…']  # cut at 40


def test_the_html_report_draws_every_cancelled_call_it_shows() -> None:
    sample = str(ROOT / "sample_captures/stdio/handwritten-server-late-result-after-cancel.jsonl")
    page = render(audit([sample]), "html")
    # twice: in its call's section, and on the first screen as the worst finding's call
    assert page.count('<svg class="sequence"') == 2
    assert page.count('class="msg"') == 12 and page.count('class="race-window"') == 2


def test_a_huge_timeline_draws_a_bounded_diagram() -> None:
    """The work is bounded by MAX_ROWS, not by the recording: 20,000 messages, each marked by three
    findings and carrying a 10,000-character excerpt, draw as many elements as a capped diagram can hold
    (a count, not a time, so a loaded machine cannot fail it)."""
    marks = [
        {"rule_id": f"CW10{n}", "rule": "x" * 500, "severity": "warning", "certainty": "inferred"} for n in range(3)
    ]
    kinds = ("progress", "related-message")  # alternating: nothing collapses, so the cap does the work
    entries = [_entry("request", "client", -100.0, excerpt="q" * 10_000)]
    entries += [
        _entry(kinds[i % 2], "server", -100 + 0.001 * i, excerpt="p" * 10_000, findings=marks) for i in range(1, 10_000)
    ]
    entries += [_entry("cancel", "client", 0.0, "cancel")]
    entries += [
        _entry(kinds[i % 2], "server", 0.001 * i, "after", excerpt="p" * 10_000, findings=marks)
        for i in range(1, 10_000)
    ]
    text = diagram.draw(_call(entries, certainty="inferred"), race_window=0.25)
    svg = _parse(text)
    # per row at most: <g>, <title>, <line>, <path>, <text>, three badges, and a time gap
    per_row = 9
    # <svg>, its background, two lifelines of three elements, the race window and its label
    fixed = 1 + 1 + 6 + 2
    assert len(list(svg.iter())) <= fixed + per_row * diagram_rows.MAX_ROWS
    assert len(_arrows(svg)) == diagram_rows.MAX_ROWS - 2
    assert len(text) < 40_000


def run(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "cancelwire", "diagram", *args]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_cli_draws_any_request_of_recordings_and_a_cancelled_call_of_a_json_report(tmp_path: Path) -> None:
    sample = "sample_captures/stdio/sdk-cancel-then-verify-by-read.jsonl"
    proc = run(sample, "--request", "4")  # the read that verified call 3: not cancelled
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<svg class="sequence" xmlns=')
    assert _arrows(_parse(proc.stdout.split("\n", 1)[1])) == [
        ("request", "c2s", None, None),
        ("response", "s2c", None, None),
    ]
    report = tmp_path / "r.json"
    audited = subprocess.run(
        [sys.executable, "-m", "cancelwire", "audit", "sample_captures/stdio/", "--format", "json", "-o", str(report)],
        cwd=ROOT,
        capture_output=True,
        timeout=300,
    )
    assert audited.returncode == 1, audited.stderr
    page = tmp_path / "d.html"
    session = "sample_captures/stdio/handwritten-server-late-result-after-cancel.jsonl"
    proc = run(str(report), "--request", "2", "--session", session, "-o", str(page))
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    html = page.read_text()
    assert "default-src 'none'" in html and "<script" not in html
    start = html.index("<svg")
    assert _arrows(_parse(html[start : html.index("</svg>") + 6]))[-1] == (
        "response",
        "s2c",
        "CW101",
        "inferred",
    )


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (
            [*(f"sample_captures/stdio/sdk-cancel-slow-tool{v}.jsonl" for v in ("", "-2025-06-18")), "--request", "3"],
            "cancelwire: error: id '3' is in 2 sessions: 'sample_captures/stdio/sdk-cancel-slow-tool.jsonl', "
            "'sample_captures/stdio/sdk-cancel-slow-tool-2025-06-18.jsonl'\n  hint: choose one with --session\n",
        ),
        (
            ["sample_captures/stdio/sdk-clean-session.jsonl", "--request", "99"],
            "cancelwire: error: no request with id '99'\n  hint: the exchange table (--exchanges) lists every id\n",
        ),
    ],
)
def test_cli_says_which_request_it_cannot_draw(args: list[str], error: str) -> None:
    proc = run(*args)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == error
    assert "Traceback" not in proc.stderr


def test_cli_refuses_a_report_without_the_call(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    report.write_text(json.dumps({"schema_version": 1, "cancellations": [], "sessions": []}))
    proc = run(str(report), "--request", "1")
    assert proc.returncode == 2
    assert proc.stderr == (
        f"cancelwire: error: {report}: no cancelled call with id '1'\n"
        "  hint: a JSON report holds cancelled calls only: draw any other request from the recordings\n"
    )


def test_a_hostile_recording_draws_inert(tmp_path: Path) -> None:
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": HOSTILE}}
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "reason": HOSTILE}}
    late = {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": HOSTILE}]}}
    path = write_transcript(tmp_path / "h.jsonl", [(1.0, "c2s", call), (1.5, "c2s", cancel), (2.0, "s2c", late)])
    proc = run(str(path), "--request", "1")
    assert proc.returncode == 0, proc.stderr
    assert "<script" not in proc.stdout and "\x1b" not in proc.stdout
    assert [a[0] for a in _arrows(_parse(proc.stdout.split("\n", 1)[1]))] == ["request", "cancel", "response"]


def _progress(ts: float) -> tuple[float, str, dict[str, object]]:
    return (ts, "s2c", {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "t"}})


def test_a_flood_after_the_cancel_keeps_the_late_reply_in_the_report(tmp_path: Path) -> None:
    """The report keeps a bounded timeline per cancelled call: runs are folded first, so a flood of 60
    progress after the cancel does not push the late result out of it."""
    call = {"name": "write", "_meta": {"progressToken": "t"}}
    lines = [
        (1.0, "c2s", {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}}),
        (1.01, "s2c", {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-11-25"}}),
        (2.0, "c2s", {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}),
        *(_progress(2.1 + i * 0.1) for i in range(5)),
        (3.0, "c2s", {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}),
        *(_progress(3.1 + i * 0.01) for i in range(60)),
        (9.0, "s2c", {"jsonrpc": "2.0", "id": 1, "result": {"content": []}}),
    ]
    report = build(audit([str(write_transcript(tmp_path / "flood.jsonl", lines))]))
    (cancelled,) = report["cancellations"]
    assert [(e["kind"], e["repeats"]) for e in cancelled["timeline"]] == [
        ("request", 1),
        ("progress", 4),
        ("progress", 1),
        ("cancel", 1),
        ("progress", 59),
        ("progress", 1),
        ("result", 1),
    ]
    assert cancelled["left_out"] == {"before": 0, "after": 0}
    svg = _parse(diagram.ReportDrawer()(cancelled, report))
    late = ("progress", "s2c", "CW102", "inferred")
    assert _arrows(svg) == [
        ("request", "c2s", None, None),
        ("progress", "s2c", None, None),
        ("collapsed", "s2c", None, None),
        ("progress", "s2c", None, None),
        ("cancel", "c2s", None, None),
        late,
        ("collapsed", "s2c", "CW102", "inferred"),
        late,
        ("response", "s2c", "CW101", "inferred"),
    ]
    texts = [t.text for t in svg.iter("text")]
    assert "and 3 more progress" in texts and "and 58 more progress" in texts
    assert _windows(svg) == 1


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats() | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
_ENTRY_KEYS = (
    "kind",
    "side",
    "method",
    "relation",
    "certainty",
    "offset",
    "evidence",
    "excerpt",
    "repeats",
    "findings",
)
_WORDS = st.sampled_from(
    ["request", "progress", "cancel", "result", "read", "server-bytes", "client", "server", "after", "inferred"]
)
_ENTRY = st.dictionaries(st.sampled_from(_ENTRY_KEYS), _WORDS | _JSON, max_size=10) | _JSON
_CALL_KEYS = ("session", "request_id", "method", "tool", "mechanism", "outcome", "certainty", "left_out")


@fuzz_settings(60)
@given(
    call=st.dictionaries(st.sampled_from(_CALL_KEYS), _JSON, max_size=8),
    timeline=st.lists(_ENTRY, max_size=12) | _JSON,
    session=st.dictionaries(st.sampled_from(("id", "vantage", "client_info", "server_info")), _JSON) | st.none(),
    run=_JSON,
)
def test_any_report_json_draws_a_well_formed_diagram(
    call: dict[str, Any], timeline: Any, session: dict[str, Any] | None, run: Any
) -> None:
    """A saved report can be edited by hand: whatever JSON stands where, the diagram is drawn."""
    call = call | {"timeline": timeline, "session": "s"}
    sessions = [] if session is None else [session | {"id": "s"}]
    text = diagram.ReportDrawer()(call, {"sessions": sessions, "run": run})
    svg = _parse(text)
    assert svg.tag == "svg" and len(text) < 60_000


def test_a_verified_by_read_call_shows_the_read_that_checked_it() -> None:
    svg = _drawn("sample_captures/stdio/sdk-cancel-then-verify-by-read.jsonl")
    assert _arrows(svg) == [
        ("request", "c2s", None, None),
        ("progress", "s2c", None, None),
        ("progress", "s2c", None, None),
        ("cancel", "c2s", None, None),
        ("read", "s2c", None, None),
    ]
    assert _notes(svg) == ["recording-ended"]
    (read,) = [g for g in svg.iter("g") if g.get("data-kind") == "read"]
    assert (read.findtext("title") or "").startswith(
        "read_ledger succeeded (the verifying read) · +2,007 ms from the cancel · "
        "sample_captures/stdio/sdk-cancel-then-verify-by-read.jsonl:11 · "
    )


def test_cli_redacts_what_it_draws_from_recordings_and_from_a_report(tmp_path: Path) -> None:
    """`diagram --redact` draws payload values by type and length, from recordings and from a report made
    without --redact, the same as a report made with --redact draws."""
    from test_redact import MIN_CHARS, _messages, _payload_of

    sample = ROOT / "sample_captures/stdio/handwritten-server-late-result-after-cancel.jsonl"
    secrets = {s for m in _messages(sample) for s in _payload_of(m) if len(s) >= MIN_CHARS}
    assert secrets == {"user pressed stop", "step 1", "step 2", "step 3", "written anyway"}
    (tmp_path / "s.jsonl").write_bytes(sample.read_bytes())  # a short name: titles are cut at 200 characters

    def cancelwire(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "cancelwire", *args]
        return subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)

    assert cancelwire("audit", "s.jsonl", "--format", "json", "-o", "plain.json").returncode == 0
    assert cancelwire("audit", "s.jsonl", "--format", "json", "-o", "redacted.json", "--redact").returncode == 0
    drawn = {
        "recording": cancelwire("diagram", "s.jsonl", "--request", "2", "--redact"),
        "report": cancelwire("diagram", "plain.json", "--request", "2", "--redact"),
        "redacted report": cancelwire("diagram", "redacted.json", "--request", "2"),
        "redacted report, --redact": cancelwire("diagram", "redacted.json", "--request", "2", "--redact"),
    }
    assert {name: (p.returncode, p.stderr) for name, p in drawn.items()} == dict.fromkeys(drawn, (0, ""))
    assert {name: sorted(s for s in secrets if s in p.stdout) for name, p in drawn.items()} == {n: [] for n in drawn}
    assert len({p.stdout for p in drawn.values()}) == 1
    assert '"reason":"&lt;str 17&gt;"' in drawn["recording"].stdout  # "user pressed stop"
    shown = cancelwire("diagram", "s.jsonl", "--request", "2").stdout  # the check has teeth
    assert sorted(s for s in secrets if s in shown) == sorted(secrets)
