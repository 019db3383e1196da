"""The HTML report's structure on the shipped samples: verdict first, findings worst first with links
that resolve, a section per cancelled call, hostile text inert, the page's own script allowed by hash."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import cancelwire
import pytest
from cancelwire.ci.gates import Triage
from cancelwire.model import Severity
from cancelwire.reports import charts, html_view
from cancelwire.reports.formats import render
from cancelwire.run.pipeline import audit
from transcripts import Line, write_transcript

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_captures"


class _Page(HTMLParser):
    """Ids, links, the top-level sections in order, and the findings table's rows."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.links: list[str] = []
        self.sections: list[str] = []
        self.rows: list[dict[str, str | None]] = []
        self.depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if found.get("id"):
            self.ids.append(str(found["id"]))
        if tag == "a" and (found.get("href") or "").startswith("#"):
            self.links.append(str(found["href"])[1:])
        if tag in ("section", "nav") and "class" not in found:
            self.sections.append(str(found.get("id")))
        if tag == "tr" and "data-rule" in found:
            self.rows.append(found)


def _page(html: str) -> _Page:
    page = _Page()
    page.feed(html)
    return page


@pytest.fixture(scope="module")
def samples_html() -> str:
    import os

    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        return render(cancelwire.audit(["sample_captures/"]), "html")  # keeps the exchange table
    finally:
        os.chdir(cwd)


def test_sections_come_verdict_first_and_inventory_last(samples_html: str) -> None:
    assert _page(samples_html).sections == [
        "verdict",
        "contents",
        "overview",
        "findings-part",
        "calls",
        "unjudged",
        "inputs",
        "how-made",
    ]
    inventory = samples_html.split('<section id="inputs">')[1]
    counted = re.match(
        r"\n<h2>Inputs and sessions</h2>\n<details>\n<summary>(\d+) input\(s\), (\d+) skipped;", inventory
    )
    assert counted is not None  # every file of the folder, its READMEs and key logs among the skipped
    assert int(counted[1]) == sum(p.is_file() for p in SAMPLES.rglob("*"))


def test_the_first_screen_draws_the_call_of_the_worst_finding(samples_html: str) -> None:
    verdict = samples_html.split('<section id="verdict">')[1].split("</section>")[0]
    worst = verdict.split('<div class="worst-call">')[1]
    assert worst.startswith(
        '\n<h2 id="worst-call">Worst cancelled call: <a href="#call-6">cancelled call 6</a></h2>\n'
        '<p class="sub">tools/call append_ledger · id 3 · late-result-violation (exact)</p>\n'
    )
    assert worst.count('<svg class="sequence"') == 1
    first_listed = verdict.split('<ol class="worst">')[1].split("</li>")[0]
    assert '(<a href="#call-6">cancelled call 6</a>)' in first_listed


def test_verdict_names_the_gate_that_decided(samples_html: str) -> None:
    verdict = samples_html.split('<section id="verdict">')[1].split("</section>")[0]
    assert '<p class="verdict fail">FAIL: 35 new issue(s) at or above the gate (--fail-on error)</p>' in verdict
    assert re.findall(r"<li>(\d+ × [^<]*)</li>", verdict) == [
        "11 × CW101 response-after-cancel (error finding)",
        "10 × CW102 progress-after-cancel (error finding)",
        "1 × CW104 cancel-of-initialize (error finding)",
        "1 × CW105 cancel-unknown-request (error finding)",
        "2 × CW111 cancel-notification-for-task (error finding)",
        "4 × CW201 write-after-disconnect (error finding)",
        "2 × CW202 stream-left-open-after-abandon (error finding)",
        "1 × CW301 non-json-on-stdio (error finding)",
        "1 × CW307 progress-after-completion (error finding)",
        "2 × CW507 gave-up-without-cancel (error finding)",
    ]


def test_verdict_of_an_outcome_gate_and_of_a_pass() -> None:
    sample = str(SAMPLES / "stdio" / "sdk-cancel-slow-tool.jsonl")
    result = audit([sample])
    failing = render(result, "html", Triage(result, fail_on=Severity.WARNING))
    assert '<p class="verdict fail">FAIL: 1 new issue(s) at or above the gate (--fail-on warning)</p>' in failing
    assert "<li>1 × cancelled call(s) with outcome outcome-unverified (gated as warning by the default gate)</li>" in (
        failing
    )
    passing = render(result, "html", Triage(result, fail_on=Severity.ERROR))
    assert '<p class="verdict pass">PASS: nothing new at or above the gate (--fail-on error)</p>' in passing
    assert '<li class="sub">1 new issue(s) below the gate</li>' in passing


def test_findings_are_worst_first_then_by_rule_id(samples_html: str) -> None:
    rows = _page(samples_html).rows
    order = [({"error": 0, "warning": 1, "info": 2}[str(r["data-severity"])], str(r["data-rule"])) for r in rows]
    assert order == sorted(order)
    assert len(rows) == 160
    assert [r["data-rule"] for r in rows][:3] == ["CW101", "CW101", "CW101"]
    outcomes = {"", "late-result-violation", "late-result-discarded", "outcome-unverified", "verified-by-read"}
    assert {r["data-outcome"] for r in rows} == outcomes


def test_every_link_resolves_and_findings_about_calls_link_them(samples_html: str) -> None:
    page = _page(samples_html)
    assert len(page.ids) == len(set(page.ids))
    assert sorted(set(page.links) - set(page.ids)) == []
    calls = [i for i in page.ids if re.fullmatch(r"call-\d+", i)]
    assert calls == [f"call-{n}" for n in range(1, 105)]  # 4 tasks cancelled by tasks/cancel
    for row in page.rows:
        if row["data-outcome"]:
            assert f"call-{row['data-call']}" in calls


def test_the_verifying_read_is_shown(samples_html: str) -> None:
    call = samples_html.split('<section class="call" id="call-64">')[1].split("</section>")[0]
    assert (
        '<p class="read">Verifying read: <b>read_ledger</b> answered at '
        '<span class="mono">sample_captures/stdio/sdk-cancel-then-verify-by-read.jsonl:11</span>, '
        "+2.007 s from the cancel.</p>"
    ) in call
    assert '<td class="server"><b>verifying read</b> read_ledger<br>' in call


def test_capture_calls_give_frames_and_the_wireshark_filter(samples_html: str) -> None:
    call = samples_html.split('<section class="call" id="call-11">')[1].split("</section>")[
        0
    ]  # bad-server-writes-after-disconnect
    shown = "frame.number in {4, 6, 8, 10, 12, 14, 16, 18, 20}"
    assert f"Wireshark display filter for this call: <code>{shown}</code>" in call
    assert "<b>client closed the stream</b>" in call and "stream-closed-by-client" not in call


def _flood(tmp_path: Path, progress: int) -> Path:
    init = {"protocolVersion": "2025-11-25"}
    call = {"name": "t", "_meta": {"progressToken": 1}}
    lines: list[Line] = [
        (1.0, "c2s", {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}),
        (1.1, "s2c", {"jsonrpc": "2.0", "id": 0, "result": init}),
        (2.0, "c2s", {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}),
    ]
    for i in range(progress):
        params = {"progressToken": 1, "progress": i, "message": "<b>" + "x" * 300}
        lines.append((2.1 + i / 1000, "s2c", {"jsonrpc": "2.0", "method": "notifications/progress", "params": params}))
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
    lines.append((3.0, "c2s", cancel))
    return write_transcript(tmp_path / "flood.jsonl", lines)


def test_a_flooding_call_collapses_its_run_and_truncates_excerpts(tmp_path: Path) -> None:
    html = render(audit([str(_flood(tmp_path, 40))]), "html")
    call = html.split('<section class="call" id="call-1">')[1].split("</section>")[0]
    # the request, the run of progress (the report folds all 40 into two entries), the cancel, the end
    assert re.findall(r'<tr id="call-1-(\d+)"', call) == ["0", "1", "3", "4"]
    assert "<summary>40 progress messages like this, collapsed</summary>" in call
    assert "around the cancel:" not in call  # nothing was left out
    assert '<details class="excerpt"><summary><span class="mono">' in call
    assert "&lt;b&gt;" in call and "<b>xx" not in call


def test_hostile_payloads_render_as_text(tmp_path: Path) -> None:
    hostile = '"><img src=x onerror=alert(1)><script>alert(2)</script>'
    init = {"protocolVersion": "2025-11-25"}
    lines: list[Line] = [
        (1.0, "c2s", {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}),
        (1.1, "s2c", {"jsonrpc": "2.0", "id": 0, "result": init}),
        (2.0, "c2s", {"jsonrpc": "2.0", "id": hostile, "method": "tools/call", "params": {"name": hostile}}),
        (2.5, "c2s", {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": hostile}}),
        (3.0, "s2c", {"jsonrpc": "2.0", "id": hostile, "result": {"text": hostile}}),
    ]
    html = render(audit([str(write_transcript(tmp_path / "h.jsonl", lines))]), "html")
    assert hostile not in html and "<img" not in html and html.count("<script") == 1
    assert "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;&lt;script&gt;" in html
    assert json.dumps(hostile) not in html


def test_overview_charts_are_drawn_from_the_exchange_table(samples_html: str) -> None:
    overview = samples_html.split('<section id="overview">')[1].split("</section>")[0]
    assert re.findall(r'<figure id="([^"]+)">', overview) == [
        "chart-outcomes",
        "chart-findings",
        "chart-after-cancel",
        "chart-latency",
    ]
    outcomes = overview.split('<figure id="chart-outcomes">')[1].split("</figure>")[0]
    assert re.findall(r"<desc>([^<]*)</desc>", outcomes) == [
        "late-result-violation: 41 call(s); outcome-unverified: 27 call(s); late-result-discarded: 5 call(s); "
        "verified-by-read: 29 call(s); clean: 2 call(s)"
    ]
    findings = overview.split('<figure id="chart-findings">')[1].split("</figure>")[0]
    desc = re.findall(r"<desc>([^<]*)</desc>", findings)[0]
    assert desc.startswith("CW101 response-after-cancel: 41 finding(s) (11 error, 30 warning); CW102 progress-after")
    assert desc.endswith("CW103 late-result-race: 5 finding(s) (5 info)")  # later rules: past its rows
    latency = overview.split('<figure id="chart-latency">')[1].split("</figure>")[0]
    assert "tools/list: median " in latency and "66 request(s) without a timed reply are not drawn." in latency
    before = samples_html.split('<section id="overview">')[0]
    assert '<svg class="chart"' not in before  # the charts are in the overview (the verdict draws one call)


def test_charts_escape_labels_and_say_what_they_show() -> None:
    svg = charts.bars("calls <by> tool", [charts.BarRow("<script>x</script>", (("error", 3), ("info", 1)))], "call(s)")
    assert svg.startswith('<svg class="chart" role="img" viewBox="0 0 590 56" width="590" height="56"')
    assert 'aria-label="calls &lt;by&gt; tool"><title>calls &lt;by&gt; tool</title>' in svg
    assert "<desc>&lt;script&gt;x&lt;/script&gt;: 4 call(s) (3 error, 1 info)</desc>" in svg
    assert "<script" not in svg and " style=" not in svg
    box = charts.boxes("t", [charts.Box(label="a", count=3, low=0.0, q1=0.001, median=0.01, q3=0.1, high=2.0)])
    ticks = re.findall(r'class="tick"[^>]*>([^<]*)<', box)
    assert ticks == ["0.1 ms", "1 ms", "10 ms", "100 ms", "1 s", "10 s"]
    assert "<title>a: 3 call(s), median 10 ms, quartiles 1 ms to 100 ms, range 0 ms to 2 s</title>" in box


def test_verdict_with_the_gate_off() -> None:
    result = audit([str(SAMPLES / "stdio" / "handwritten-client-cancels-unknown-id.jsonl")])
    page = render(result, "html", Triage(result, fail_on=None))
    assert '<p class="verdict pass">PASS: the gate is off (--fail-on never)</p>' in page
    assert '<li class="sub">2 new issue(s), none of which can fail the run</li>' in page


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "cancelwire", "audit", *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=False)


def test_the_command_line_page_fails_on_its_gate_and_draws_every_chart() -> None:
    done = _cli("sample_captures/stdio/sdk-cancel-slow-tool.jsonl", "--format", "html", "--fail-on", "warning")
    assert done.returncode == 1, done.stderr
    assert '<p class="verdict fail">FAIL: 1 new issue(s) at or above the gate (--fail-on warning)</p>' in done.stdout
    for chart in ("after-cancel", "latency"):  # drawn from the exchange table, kept for the page
        assert re.search(
            f'<figure id="chart-{chart}">\n<figcaption>[^<]*</figcaption>\n<svg class="chart"', done.stdout
        )
    findings = '<figure id="chart-findings">\n<figcaption>Findings by rule and severity</figcaption>\n'
    assert findings + '<p class="sub">No findings.</p></figure>' in done.stdout
    assert "The exchange table was not kept" not in done.stdout


def test_unreported_problems_are_named_in_words() -> None:
    done = _cli("sample_captures/http/http-client-stops-reading.pcapng", "--select", "CW101", "--format", "json")
    notes = json.loads(done.stdout)["unjudged"]
    assert (
        "1 problem(s) not reported because CW206 sse-event-cut-off is not selected: An SSE event was cut off "
        "when its stream ended (FIN, RST or end of capture)"
    ) in notes
    assert not [n for n in notes if "sse.partial-event" in n]


def test_calls_past_the_drawn_cap_are_rows_without_dead_links(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(html_view, "CALLS_DRAWN", 2)
    init = {"protocolVersion": "2025-11-25"}
    lines: list[Line] = [
        (0.0, "c2s", {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}),
        (0.1, "s2c", {"jsonrpc": "2.0", "id": 0, "result": init}),
    ]
    for i in range(1, 5):  # each answered after its cancel: a CW101 finding per call
        lines.append((float(i), "c2s", {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "t"}}))
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": i}}
        lines.append((i + 0.1, "c2s", cancel))
        lines.append((i + 0.5, "s2c", {"jsonrpc": "2.0", "id": i, "result": {}}))
    html = render(audit([str(write_transcript(tmp_path / "four.jsonl", lines))]), "html")
    page = _page(html)
    assert sorted(set(page.links) - set(page.ids)) == []
    assert [i for i in page.ids if re.fullmatch(r"call-\d+", i)] == ["call-1", "call-2"]
    assert [r["data-call"] for r in page.rows if r["data-rule"] == "CW101"] == ["1", "2", "3", "4"]
    assert "Timelines are drawn for the first 2 listed calls only, so the page stays light; the other 2 are" in html
