"""Whole-pipeline checks: golden JSON reports of every shipped sample, the JSON schema, escaping."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from cancelwire import __version__
from cancelwire.reports import document as report
from cancelwire.reports import rendering
from cancelwire.reports.document import build
from cancelwire.reports.formats import render
from cancelwire.run.pipeline import audit
from transcripts import Line, write_transcript

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).parent / "golden"
SCHEMA = json.loads((ROOT / "analyzer" / "report.schema.json").read_text())
SAMPLES = sorted(
    p.relative_to(ROOT)
    for p in (ROOT / "sample_captures").rglob("*")
    if p.is_file()
    and p.suffix in (".jsonl", ".pcapng", ".pcap", ".log", ".gz", ".har", ".flows")
    and not p.name.endswith((".server.jsonl", ".client.jsonl"))
)


def _masked(report: dict[str, Any]) -> dict[str, Any]:
    report["tool"]["version"] = "X"
    report["run"]["generated"] = "X"
    return report


@pytest.mark.parametrize("sample", SAMPLES, ids=str)
def test_sample_report_matches_golden_and_schema(sample: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    report = _masked(build(audit([str(sample)])))
    jsonschema.validate(report, SCHEMA)
    golden = GOLDEN / (str(sample).replace("/", "__") + ".json")
    text = json.dumps(report, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
    if os.environ.get("CANCELWIRE_UPDATE_GOLDEN"):
        golden.write_text(text)
    assert golden.exists(), f"no golden report for {sample}; run with CANCELWIRE_UPDATE_GOLDEN=1 and review it"
    assert text == golden.read_text()


def test_every_golden_file_has_its_sample() -> None:
    names = {str(s).replace("/", "__") + ".json" for s in SAMPLES}
    assert sorted(p.name for p in GOLDEN.glob("*.json") if p.name not in names) == []


HOSTILE = '<script>alert("x")</script>'


def _hostile_transcript(tmp_path: Path) -> Path:
    call = {"jsonrpc": "2.0", "id": HOSTILE, "method": "tools/call", "params": {"name": HOSTILE}}
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": HOSTILE}}
    lines = [
        {"ts": 1.0, "dir": "c2s", "line": json.dumps(call)},
        {"ts": 1.5, "dir": "c2s", "line": json.dumps(cancel)},
        {"ts": 2.0, "dir": "s2c", "line": HOSTILE + " | `md` *injection*"},
    ]
    path = tmp_path / "hostile.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def test_html_report_escapes_captured_content_and_loads_nothing(tmp_path: Path) -> None:
    html = render(audit([str(_hostile_transcript(tmp_path))]), "html")
    assert HOSTILE not in html
    assert "&lt;script&gt;alert(" in html
    for needle in ("http://", "https://", "<link", "@import", "src="):
        assert needle not in html
    assert html.count("<script") == 1  # the page's own, allowed by its hash (test_html_report.py)


def test_markdown_report_cannot_break_its_tables(tmp_path: Path) -> None:
    md = render(audit([str(_hostile_transcript(tmp_path))]), "md")
    assert HOSTILE not in md
    for line in md.splitlines():
        if line.startswith("| error") or line.startswith("| warning"):
            assert line.count(" | ") == 4, line  # five cells: captured pipes are escaped


def test_json_report_of_hostile_input_validates(tmp_path: Path) -> None:
    report = build(audit([str(_hostile_transcript(tmp_path))]))
    jsonschema.validate(report, SCHEMA)
    assert report["cancellations"][0]["request_id"] == HOSTILE


# A recording built to attack whoever reads its report: a method name that sets the terminal title,
# clears the screen, returns the cursor and forges the verdict line, a tool name that forges lines and
# pings, links and embeds in a pull-request comment, and a file name holding an escape sequence.
FORGED = "\r\n\nFindings: 0 error(s), 0 warning(s), 0 info\n"
METHOD = "x\x1b]0;owned\x07\x1b[2J\x1b[H" + FORGED + "\u202eevil\u202c"
TOOL = "read\nFindings: 0 error(s) @everyone ![x](http://e/x.png) <!-- --> http://evil #1"


def _attack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str) -> str:
    init = {"protocolVersion": "2025-11-25"}
    lines: list[Line] = [
        (1.0, "c2s", {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}),
        (1.1, "s2c", {"jsonrpc": "2.0", "id": 0, "result": init}),
        (2.0, "c2s", {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": TOOL}}),
        (2.5, "c2s", {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}),
        (3.0, "c2s", {"jsonrpc": "2.0", "id": 2, "method": METHOD}),
    ]
    monkeypatch.chdir(tmp_path)
    write_transcript(tmp_path / "evil\x1b[2J.jsonl", lines)
    return render(audit(["evil\x1b[2J.jsonl"]), fmt, verbose=True)


def test_text_report_of_a_hostile_recording_is_inert(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = _attack(tmp_path, monkeypatch, "text")
    assert re.search(r"[\x00-\x08\x0b-\x1f\x7f\x80-\x9f\u202a-\u202e]", text) is None
    tool = r"read\nFindings: 0 error(s) @everyone ![x](http://e/x.png) <!-- --> http://evil #1"
    method = r"x\x1b]0;owned\x07\x1b[2J\x1b[H\r\n\nFindings: 0 error(s), 0 warning(s), 0 info\n\u202eevil\u202c"
    lines = text.splitlines()
    assert [line for line in lines if line.startswith("Findings:")] == [
        "Findings: 0 errors, 1 warning, 0 info"  # the real counts, once
    ]
    assert lines[-1] == "PASS: 1 warning, 1 outcome-unverified (warning) in 1 session (gate: --fail-on error)"
    for line in [
        r"  evil\x1b[2J.jsonl  [cancelwire-transcript, stdio, 2025-11-25 (negotiated), vantage proxy]",
        rf"  evil\x1b[2J.jsonl:5  id 1 tools/call {tool}  by notification  -> outcome-unverified [exact]",
        rf"      no reply, '{tool}' has no annotations, and no later read checked what it did",
        rf"  evil\x1b[2J.jsonl:6  warning  CW108 request-never-answered  {method} (id 2) got no reply and no cancel"
        " before the recording ended (0.000 s later) [exact]",
    ]:
        assert line in lines


def test_markdown_report_of_a_hostile_recording_is_inert(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    md = _attack(tmp_path, monkeypatch, "md")
    tool = (
        r"read\\nFindings\: 0 error\(s\) \@&#8203;everyone \!\[x\]\(http\:&#8203;\/\/e\/x\.png\) \<\!\-\- \-\-\>"
        r" http\:&#8203;\/\/evil \#&#8203;1"
    )
    method = (
        r"x\\x1b\]0\;owned\\x07\\x1b\[2J\\x1b\[H\\r\\n\\nFindings\: 0 error\(s\)\, 0 warning\(s\)\, 0 info\\n"
        r"\\u202eevil\\u202c"
    )
    where = r"evil\\x1b\[2J\.jsonl"
    lines = md.splitlines()
    for line in [
        rf"| {where}\:5 | 1 | tools\/call {tool} | notification | **outcome-unverified** (exact) "
        rf"| no reply\, \'{tool}\' has no annotations\, and no later read checked what it did |",
        rf"| CW108 request-never-answered | {where}\:6 | {method} \(id 2\) got no reply and no cancel"
        r" before the recording ended \(0\.000 s later\) | exact |",
    ]:
        assert line in lines
    for raw in ("@everyone", "http://", "<!--", "![", "\x1b", "\u202e"):
        assert raw not in md


def test_html_report_shows_controls_escaped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    html = _attack(tmp_path, monkeypatch, "html")
    assert re.search(r"[\x00-\x08\x0b-\x1f\x7f\x80-\x9f\u202a-\u202e]", html) is None
    assert '<p class="sub mono">evil\\x1b[2J.jsonl</p>' in html


def test_html_content_security_policy_allows_only_its_own_style_and_script(tmp_path: Path) -> None:
    html = render(audit([str(_hostile_transcript(tmp_path))]), "html")
    policy = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', html)
    style = re.search(r"<style>(.*?)</style>", html, re.DOTALL)
    script = re.search(r"<script>(.*?)</script>", html, re.DOTALL)
    assert policy and style and script

    def digest(text: str) -> str:
        return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()

    assert policy.group(1) == (
        f"default-src 'none'; style-src '{digest(style.group(1))}'; script-src '{digest(script.group(1))}'; "
        "base-uri 'none'; form-action 'none'"
    )
    assert html.count("<style>") == 1 and html.count("<script") == 1
    assert " style=" not in html  # inline style attributes would be refused by the policy
    assert re.search(r" on[a-z]+=", html) is None  # so would inline event handlers


def _many_cancels(tmp_path: Path, calls: int) -> Path:
    """`calls` cancelled tools/call requests; every third one still gets its result (late-result-violation),
    the others get nothing (outcome-unverified)."""
    init = {"protocolVersion": "2025-11-25"}
    lines: list[Line] = [
        (0.0, "c2s", {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}),
        (0.01, "s2c", {"jsonrpc": "2.0", "id": 0, "result": init}),  # a 10 ms round trip: 0.1 s is late
    ]
    for i in range(1, calls + 1):
        lines.append((float(i), "c2s", {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "t"}}))
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": i}}
        lines.append((i + 0.1, "c2s", cancel))
        if i % 3 == 0:
            lines.append((i + 0.2, "s2c", {"jsonrpc": "2.0", "id": i, "result": {}}))
    return write_transcript(tmp_path / "many.jsonl", lines)


def test_reports_people_read_list_the_first_cancelled_calls_of_each_outcome(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(report, "SHOWN_PER_OUTCOME", 4)
    monkeypatch.setattr(report, "MARKDOWN_SHOWN_PER_KEY", 4)
    result = audit([str(_many_cancels(tmp_path, 30))])
    document = json.loads(render(result, "json"))
    assert sorted(c["request_id"] for c in document["cancellations"]) == list(range(1, 31))
    assert "cancellations_not_shown" not in document

    text = render(result, "text")
    listed = re.findall(r"^  \S+:\d+  id (\d+) tools/call t  by notification  -> (\S+) ", text, re.MULTILINE)
    assert sorted(listed) == sorted(
        [(str(i), "outcome-unverified") for i in (1, 2, 4, 5)]
        + [(str(i), "late-result-violation") for i in (3, 6, 9, 12)]
    )
    more = "cancelled call(s) not listed here (--format json lists every one)"
    assert f"  ... and 6 more late-result-violation {more}\n  ... and 16 more outcome-unverified {more}\n" in text

    html = render(result, "html")
    assert re.findall(r'<tr><td><a href="#call-(\d+)">', html) == [str(n) for n in range(1, 9)]
    assert html.count('<section class="call" id="call-') == 8  # timelines of the listed calls only
    assert '<p class="capped">… and 16 more outcome-unverified cancelled call(s) not listed here' in html

    md = render(result, "md")
    assert len(re.findall(r"^\| \S*many\\\.jsonl\\:\d+ \| \d+ \| tools\\/call t \|", md, re.MULTILINE)) == 8
    assert "**Not listed here**, to keep this comment short: 6 of 10 findings, 22 of 30 cancelled calls." in md


def _fleet(tmp_path: Path, recordings: int) -> list[str]:
    """One recording with 3000 cancelled calls, and `recordings` more that each leave a request with a
    5000-character method name (mentions all the way) unanswered."""
    paths = [str(_many_cancels(tmp_path, 3000))]
    init = {"protocolVersion": "2025-11-25"}
    for n in range(recordings):
        lines: list[Line] = [
            (1.0, "c2s", {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}),
            (1.1, "s2c", {"jsonrpc": "2.0", "id": 0, "result": init}),
            (2.0, "c2s", {"jsonrpc": "2.0", "id": 1, "method": "@x" * 2500}),
        ]
        paths.append(str(write_transcript(tmp_path / f"r{n:03}.jsonl", lines)))
    return paths


def test_markdown_report_fits_a_comment_whatever_the_audit_and_says_what_it_left_out(tmp_path: Path) -> None:
    result = audit(_fleet(tmp_path, 300))
    summary = build(result)["summary"]
    md = render(result, "md")
    assert len(md) <= rendering.MARKDOWN_LIMIT
    lines = md.splitlines()
    warnings, unverified = summary["by_severity"]["warning"], summary["by_outcome"]["outcome-unverified"]
    assert lines[:5] == [
        "## cancelwire audit: PASS",
        "",
        f"**PASS**: {warnings} warnings, {unverified} outcome-unverified (warning) in 301 sessions "
        "(gate: --fail-on error)",
        "",
        f"Found **0** error(s), **{summary['by_severity']['warning']}** warning(s), **0** info · 301 session(s), "
        f"3601 request(s), 3000 cancelled call(s) · cancelwire {__version__}",
    ]
    assert "@x" not in md
    clipped = re.compile(r"\| (\\@&#8203;x){200}… \\\(4\d{3} more characters\\\) \|")
    assert any(clipped.search(line) for line in lines)  # each value clipped to 400 characters
    # rows per collapsed list (the header line counts as one)
    rows = {section.split("</summary>")[0]: section.count("\n| ") - 1 for section in md.split("<summary>")[1:]}
    findings, calls, sessions = rows["1300 warning(s)"], rows["Cancelled calls (3000)"], rows["Sessions (301)"]
    assert findings and calls and sessions  # every list got some room
    not_listed = (
        f"**Not listed here**, to keep this comment short: {summary['findings'] - findings} of "
        f"{summary['findings']} findings, {3000 - calls} of 3000 cancelled calls, {301 - sessions} of 301 sessions."
        " `--format json` lists every one."
    )
    assert not_listed in lines


def test_markdown_report_stays_under_its_limit_when_rows_are_large(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rendering, "MARKDOWN_LIMIT", 6_000)
    monkeypatch.setattr(rendering, "MARKDOWN_TAIL", 500)  # far too little: the report is made again, smaller
    md = render(audit(_fleet(tmp_path, 20)[1:]), "md")
    assert len(md) <= 6_000
    assert "**Not listed here**, to keep this comment short: " in md
    assert md.endswith("</details>\n")  # cut between lists, not in the middle of one
