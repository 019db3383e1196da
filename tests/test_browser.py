"""The HTML report in a real browser: Debian's headless Chromium, driven by Selenium (scripts/chromium.py).

Each report is rendered by cancelwire and opened from file://, as a person opens an attached report. The
browser must log no console error and no Content-Security-Policy violation; recorded hostile text must
stay text with scripts on and off; the page must be complete with JavaScript off. Screenshots of each page
are saved under tests/artifacts/browser/ (or $CANCELWIRE_ARTIFACTS/browser/) for a person to look at.

Chromium missing or not starting is a failure naming the fix (`scripts/install --test` installs it), not a
skip: CI installs it, and a skipped browser suite would pass without checking anything.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cancelwire.reports.formats import render
from cancelwire.run.pipeline import audit
from cancelwire.support import inert
from transcripts import Line, write_transcript

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from chromium import VIEWPORT, Browser, BrowserError, By, Keys, Select, browser  # noqa: E402

ARTIFACTS = Path(os.environ.get("CANCELWIRE_ARTIFACTS") or ROOT / "tests" / "artifacts") / "browser"
SAMPLES = sorted(
    p.relative_to(ROOT)
    for p in (ROOT / "sample_captures").rglob("*")
    if p.is_file()
    and p.suffix in (".jsonl", ".pcapng", ".pcap", ".log", ".gz", ".har")
    and not p.name.endswith((".server.jsonl", ".client.jsonl"))
)

# Hostile text a recording can hold, each aimed at a different way into a page: a script element, an
# event handler on an injected element, an SVG with onload (the diagram is SVG), breaking out of a
# title/text/table context into new markup, breaking out of an attribute value, and terminal controls
# with a bidi override (shown escaped in every format).
SCRIPT = '<script>document.title="pwned"</script>'
IMG = "<img src=x onerror=\"document.title='pwned'\">"
SVG = '<svg onload="document.title=\'pwned\'"><circle id="injected-circle" r="9"/></svg>'
BREAKOUT = '</title></text></svg></td></tr></table><b id="injected">bold</b>'
ATTRIBUTE = '" onmouseover="document.title=\'pwned\'" data-injected="'
CONTROLS = "evil\u202e\x1b[2J"
# What got through if any of them acted: a title a script set, event handlers or the attribute breakout's
# marker, elements that load or draw, scripts that are not the page's own.
INJECTED = """return {
  pwned: document.title.includes("pwned"),
  handlers: [...document.querySelectorAll("*")].flatMap(
    (el) => [...el.attributes].filter((a) => a.name.startsWith("on") || a.name === "data-injected")
      .map((a) => el.tagName + " " + a.name)),
  elements: [...document.querySelectorAll("img, iframe, object, embed, #injected, #injected-circle")]
    .map((el) => el.outerHTML),
  scripts: [...document.scripts].filter((s) => s.src || s.textContent.includes("pwned")).map((s) => s.outerHTML),
}"""


@pytest.fixture(scope="module")
def chromium() -> Iterator[Browser]:
    try:
        with browser(ARTIFACTS) as started:
            yield started
    except BrowserError as error:
        pytest.fail(str(error), pytrace=False)


@pytest.fixture(scope="module")
def readme_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The README's first command, `cancelwire audit sample_captures/`, as HTML (exit 1: it has findings)."""
    out = tmp_path_factory.mktemp("readme") / "sample_captures.html"
    proc = subprocess.run(
        [sys.executable, "-m", "cancelwire", "audit", "sample_captures/", "--format", "html", "-o", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 1, proc.stderr
    return out


@pytest.fixture(scope="module")
def readme_json() -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-m", "cancelwire", "audit", "sample_captures/", "--format", "json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 1, proc.stderr
    report: dict[str, Any] = json.loads(proc.stdout)
    return report


def _hostile_recording(folder: Path) -> Path:
    """Two cancelled calls whose id, tool, method, progress, reasons, results and errors are hostile, and a
    stray stdout line that is all markup (CW301 quotes it)."""
    client = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": SCRIPT, "version": "0"}}
    server = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": CONTROLS + IMG}}
    call = {"name": IMG, "arguments": {"text": ATTRIBUTE}, "_meta": {"progressToken": "p1"}}
    progress = {"progressToken": "p1", "progress": 1, "message": SVG}
    lines: list[Line] = [
        (1.0, "c2s", {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": client}),
        (1.1, "s2c", {"jsonrpc": "2.0", "id": 0, "result": server}),
        (1.2, "c2s", {"jsonrpc": "2.0", "method": "notifications/initialized"}),
        (2.0, "c2s", {"jsonrpc": "2.0", "id": SCRIPT, "method": "tools/call", "params": call}),
        (2.1, "s2c", {"jsonrpc": "2.0", "method": "notifications/progress", "params": progress}),
        (2.2, "c2s", {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": SCRIPT}}),
        (2.5, "s2c", {"jsonrpc": "2.0", "method": "notifications/progress", "params": progress}),
        (2.9, "s2c", {"jsonrpc": "2.0", "id": SCRIPT, "result": {"content": [{"type": "text", "text": BREAKOUT}]}}),
        (3.0, "c2s", {"jsonrpc": "2.0", "id": 7, "method": BREAKOUT, "params": {}}),
        (
            3.1,
            "c2s",
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7, "reason": ATTRIBUTE}},
        ),
        (3.4, "s2c", {"jsonrpc": "2.0", "id": 7, "error": {"code": -32000, "message": SVG, "data": IMG}}),
    ]
    path = write_transcript(folder / "hostile.jsonl", lines)
    stray = json.dumps({"ts": 3.5, "dir": "s2c", "line": f"{SCRIPT} {IMG}"})
    path.write_text(path.read_text() + stray + "\n")
    return path


@pytest.fixture(scope="module")
def hostile_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("hostile")
    out = folder / "hostile.html"
    out.write_text(render(audit([str(_hostile_recording(folder))]), "html"))
    return out


def _shot(chromium: Browser, name: str, *, full_page: bool = False) -> None:
    chromium.screenshot(ARTIFACTS / f"{name}.png", full_page=full_page)


def _text(chromium: Browser) -> str:
    """What a person can read: the rendered text (nothing hidden by CSS or a closed element)."""
    text: str = chromium.js("return document.body.innerText")
    return text


# --- the harness sees what it must ------------------------------------------------------------------


def test_the_harness_sees_console_errors_exceptions_and_csp_violations(chromium: Browser, tmp_path: Path) -> None:
    """Without this, a harness that collects nothing would pass every test below."""
    loud = tmp_path / "loud.html"
    loud.write_text("<!DOCTYPE html><title>t</title><script>console.error('boom'); undefined_name();</script>")
    chromium.open(loud)
    assert [(p.source, "boom" in p.message or "undefined_name" in p.message) for p in chromium.problems()] == [
        ("console-api", True),
        ("javascript", True),
    ]
    strict = tmp_path / "strict.html"
    strict.write_text(
        "<!DOCTYPE html><meta http-equiv='Content-Security-Policy' content=\"default-src 'none'\">"
        "<title>t</title><style>p { color: red }</style><p>x</p>"
    )
    for javascript in (True, False):
        chromium.open(strict, javascript=javascript)
        seen = {(p.source, "style" in p.message) for p in chromium.problems()}
        assert ("security", True) in seen
        assert (("securitypolicyviolation", True) in seen) is javascript  # the listener is a script


def test_the_hostile_check_catches_markup_that_got_through(chromium: Browser, tmp_path: Path) -> None:
    """The same payloads pasted unescaped into a page without a policy are caught by INJECTED."""
    page = tmp_path / "unescaped.html"
    page.write_text(f"<!DOCTYPE html><title>t</title><table><tr><td>{SCRIPT}{IMG}{SVG}{BREAKOUT}</td></tr></table>")
    chromium.open(page)
    found = chromium.js(INJECTED)
    chromium.problems()
    assert found["pwned"]
    assert found["scripts"] == [SCRIPT]
    assert [h.split()[1] for h in found["handlers"]] == ["onerror", "onload"]
    assert len(found["elements"]) == 3  # the img, the circle, the b#injected


# --- clean in the browser ------------------------------------------------------------------------------


def test_readme_report_logs_no_error_and_no_csp_violation(chromium: Browser, readme_report: Path) -> None:
    chromium.open(readme_report)
    problems = chromium.problems()
    _shot(chromium, "sample_captures-first-screen")
    _shot(chromium, "sample_captures-full-page", full_page=True)
    assert problems == []
    assert chromium.js("return document.readyState") == "complete"
    # Nothing came from anywhere but the file itself (the policy would refuse it, and say so above).
    assert chromium.js("return performance.getEntriesByType('resource').length") == 0


# The page's scroll and client width, and the elements that stick out past the window (for the message).
WIDTHS = """const width = document.documentElement.clientWidth;
const out = [...document.querySelectorAll("body *")].filter((el) => el.getBoundingClientRect().right > width + 0.5);
return [document.documentElement.scrollWidth, width,
  out.slice(0, 5).map((el) => el.tagName + (el.id ? "#" + el.id : "") + " " + el.getBoundingClientRect().right)];"""


def _widths(chromium: Browser, width: int, name: str) -> tuple[int, int, list[str]]:
    """The page at a window WIDTH pixels wide (800 px high): nothing may scroll sideways."""
    chromium.viewport(width, 800)
    try:
        scroll, client, out = chromium.js(WIDTHS)
        _shot(chromium, f"{name}-{width}")
    finally:
        chromium.viewport(*VIEWPORT)
    return scroll, client, out


@pytest.mark.parametrize("sample", SAMPLES, ids=str)
def test_each_sample_report_logs_no_error_and_fits_800_and_1280_pixels(
    chromium: Browser, sample: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    page = tmp_path / (sample.name + ".html")
    page.write_text(render(audit([str(sample)]), "html"))
    chromium.open(page)
    problems = chromium.problems()
    _shot(chromium, sample.name)
    assert problems == []
    # the findings table's fixed columns once added up to 50rem: 17 px of sideways scroll at 800 px
    assert _widths(chromium, 800, sample.name) == (800, 800, [])
    assert _widths(chromium, 1280, sample.name) == (1280, 1280, [])


# --- hostile text stays text ---------------------------------------------------------------------------


@pytest.mark.parametrize("javascript", [True, False], ids=["js-on", "js-off"])
def test_hostile_payloads_render_as_text(chromium: Browser, hostile_report: Path, javascript: bool) -> None:
    chromium.open(hostile_report, javascript=javascript)
    problems = chromium.problems()
    _shot(chromium, f"hostile-{'js-on' if javascript else 'js-off'}", full_page=True)
    assert chromium.js(INJECTED) == {"pwned": False, "handlers": [], "elements": [], "scripts": []}
    text = _text(chromium)
    # The id, the tool name and the method are shown as the very text that was recorded.
    for payload in (SCRIPT, IMG, BREAKOUT):
        assert payload in text
    # Controls and the bidi override are shown escaped, as in the text report; none reaches the page raw
    # (textContent: the server's name is in the sessions table, which may be collapsed).
    everything = chromium.js("return document.documentElement.textContent")
    assert inert.terminal(CONTROLS) in everything
    assert re.search(r"[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e]", everything) is None
    assert problems == []


# --- complete without JavaScript -----------------------------------------------------------------------


def test_readme_report_is_readable_with_javascript_off(
    chromium: Browser, readme_report: Path, readme_json: dict[str, Any]
) -> None:
    chromium.open(readme_report, javascript=False)
    assert chromium.js("return document.readyState") == "complete"
    problems = chromium.problems()
    _shot(chromium, "sample_captures-js-off-first-screen")
    text = _text(chromium)
    counts = readme_json["summary"]["by_severity"]
    for severity, count in counts.items():
        assert re.search(rf"\b{count}\s+{severity}", text), severity
    # Every finding and every cancelled call of the audit is on the page, readable.
    for finding in readme_json["findings"]:
        assert finding["rule_id"] in text
        assert inert.terminal(finding["message"]) in text
    for call in readme_json["cancellations"]:
        assert inert.terminal(call["explanation"]) in text
    assert problems == []


# --- the report's contract (CONTRACTS.md): verdict first, findings table, filter ----------------------

ROWS = """return [...document.querySelectorAll("#findings tbody tr[data-rule]")].map(
  (r) => [r.dataset.rule, r.dataset.severity, r.checkVisibility()])"""
RANK = {"error": 0, "warning": 1, "info": 2}


def _visible_rules(chromium: Browser) -> list[str]:
    return [rule for rule, _severity, visible in chromium.js(ROWS) if visible]


def _worst_first(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(findings, key=lambda f: (RANK[f["severity"]], f["rule_id"]))


def test_verdict_comes_first_on_the_first_screen(
    chromium: Browser, readme_report: Path, readme_json: dict[str, Any]
) -> None:
    chromium.open(readme_report)
    place = chromium.js("""
      const verdict = document.getElementById("verdict"), line = verdict.querySelector("p.verdict");
      return {
        first: document.querySelector("section") === verdict,
        before: [...document.querySelectorAll("table, section")].filter(
          (e) => e.compareDocumentPosition(verdict) & Node.DOCUMENT_POSITION_FOLLOWING).length,
        classes: [...line.classList].sort(),
        bottom: line.getBoundingClientRect().bottom <= window.innerHeight && line.checkVisibility(),
        text: verdict.innerText,
      }""")
    _shot(chromium, "verdict-first-screen")
    assert (place["first"], place["before"], place["classes"], place["bottom"]) == (True, 0, ["fail", "verdict"], True)
    summary = readme_json["summary"]
    for severity, count in summary["by_severity"].items():
        assert re.search(rf"\b{count}\s+{severity}", place["text"]), severity
    for outcome, count in summary["by_outcome"].items():
        assert re.search(rf"\b{count}\s+{outcome}", place["text"]), outcome
    # The worst finding is read on the first screen, without scrolling.
    worst = inert.terminal(_worst_first(readme_json["findings"])[0]["message"])
    seen = chromium.js(
        """const item = [...document.querySelectorAll("#verdict li")].find((e) => e.textContent.includes(arguments[0]));
        return item ? item.getBoundingClientRect().bottom <= window.innerHeight && item.checkVisibility() : null""",
        worst,
    )
    assert seen is True
    # ... and so is its call's sequence diagram: the request and the cancel at least, in view
    diagram = chromium.js(
        """const svg = document.querySelector("#verdict .worst-call svg.sequence");
        if (!svg) return null;
        const visible = (g) => g.getBoundingClientRect().bottom <= window.innerHeight && g.checkVisibility();
        return [...svg.querySelectorAll("g.msg")].filter(visible).map((g) => g.dataset.kind).slice(0, 4)"""
    )
    assert diagram is not None and diagram[0] == "request" and {"cancel", "close"} & set(diagram), diagram
    assert chromium.problems() == []


def test_findings_table_lists_every_finding_worst_first_with_a_link_to_its_call(
    chromium: Browser, readme_report: Path, readme_json: dict[str, Any]
) -> None:
    chromium.open(readme_report)
    rows = chromium.js(ROWS)
    expected = _worst_first(readme_json["findings"])
    assert [(rule, severity) for rule, severity, _ in rows] == [(f["rule_id"], f["severity"]) for f in expected]
    assert all(visible for *_, visible in rows)
    # A finding about a cancelled call links to that call's section, and only such a finding does.
    calls = {(c["session"], c["request_id"]) for c in readme_json["cancellations"]}
    links = chromium.js("""return [...document.querySelectorAll("#findings tbody tr[data-rule]")].map((r) => {
        const a = [...r.querySelectorAll("a")].find((l) => /^#call-[0-9]+$/.test(l.getAttribute("href")));
        const target = a && document.getElementById(a.hash.slice(1));
        return [r.dataset.outcome !== "", a !== undefined, Boolean(target && target.matches("section.call"))];
      })""")
    about_a_call = [(f["session"], f["request_id"]) in calls for f in expected]
    assert links == [[linked, linked, linked] for linked in about_a_call]
    assert chromium.problems() == []


def test_filtering_the_findings_hides_and_shows_the_right_rows(
    chromium: Browser, readme_report: Path, readme_json: dict[str, Any]
) -> None:
    chromium.open(readme_report)
    findings = _worst_first(readme_json["findings"])
    text = chromium.driver.find_element(By.ID, "findings-filter")
    severity = Select(chromium.driver.find_element(By.ID, "severity-filter"))
    everything = [f["rule_id"] for f in findings]
    assert _visible_rules(chromium) == everything

    text.send_keys("CW101")
    assert _visible_rules(chromium) == [f["rule_id"] for f in findings if f["rule_id"] == "CW101"] != []
    severity.select_by_value("error")
    errors_101 = [f["rule_id"] for f in findings if f["rule_id"] == "CW101" and f["severity"] == "error"]
    assert _visible_rules(chromium) == errors_101
    _shot(chromium, "filter-CW101-error")
    text.send_keys(Keys.BACKSPACE * len("CW101"))
    assert _visible_rules(chromium) == [f["rule_id"] for f in findings if f["severity"] == "error"]
    severity.select_by_value("info")
    assert _visible_rules(chromium) == [f["rule_id"] for f in findings if f["severity"] == "info"] != []
    text.send_keys("no finding says this")
    assert _visible_rules(chromium) == []
    text.send_keys(Keys.BACKSPACE * len("no finding says this"))
    severity.select_by_value("")
    assert _visible_rules(chromium) == everything
    assert chromium.problems() == []


def test_filtering_by_a_hostile_id_shows_its_rows_and_injects_nothing(chromium: Browser, hostile_report: Path) -> None:
    chromium.open(hostile_report)
    chromium.driver.find_element(By.ID, "findings-filter").send_keys(SCRIPT)
    # CW101, CW102 and CW308 (its progress did not increase) on the call whose id is SCRIPT, and CW301
    # quoting the stray line that starts with it; not CW101 on the call with id 7.
    assert sorted(_visible_rules(chromium)) == ["CW101", "CW102", "CW301", "CW308"]
    assert chromium.js(INJECTED) == {"pwned": False, "handlers": [], "elements": [], "scripts": []}
    assert chromium.problems() == []


def test_without_javascript_every_row_shows_and_no_dead_control(chromium: Browser, readme_report: Path) -> None:
    chromium.open(readme_report, javascript=False)
    rows = chromium.js(ROWS)
    assert rows != [] and all(visible for *_, visible in rows)
    shown = chromium.js("""return ["#verdict", "#findings-filter", "#severity-filter"].map(
      (s) => document.querySelector(s).checkVisibility())""")
    assert shown == [True, False, False]  # a filter that cannot filter is not offered
    assert chromium.problems() == []


@pytest.mark.parametrize("width", [800, 1024, 1280])
def test_the_page_fits_its_width(chromium: Browser, readme_report: Path, width: int) -> None:
    """No table row (CW206's once did) and no table's fixed columns push the page past the window:
    nothing scrolls sideways."""
    chromium.open(readme_report)
    assert _widths(chromium, width, "sample_captures") == (width, width, [])


# --- the sequence diagram of a known cancelled call ---------------------------------------------------

DIAGRAM = """
const svg = [...document.querySelectorAll("svg.sequence")].find((d) => [...d.querySelectorAll("g.msg > title")]
  .some((t) => t.textContent.includes(arguments[0])));
if (!svg) { return null; }
svg.scrollIntoView({block: "center"});
return {
  role: svg.getAttribute("role"),
  label: svg.getAttribute("aria-label"),
  shown: svg.checkVisibility() && svg.getBoundingClientRect().width > 0,
  windows: svg.querySelectorAll("rect.race-window").length,
  arrows: [...svg.querySelectorAll("g.msg")].map((g) => ({
    kind: g.dataset.kind, dir: g.dataset.dir, seq: Number(g.dataset.seq),
    finding: g.dataset.finding || null, certainty: g.dataset.certainty || null,
    title: g.querySelector(":scope > title") ? g.querySelector(":scope > title").textContent : "",
    top: g.getBoundingClientRect().top,
  })),
}"""


def _diagram(chromium: Browser, evidence: str, name: str) -> dict[str, Any]:
    drawn: dict[str, Any] | None = chromium.js(DIAGRAM, evidence)
    assert drawn is not None, f"no svg.sequence with an arrow citing {evidence}"
    _shot(chromium, name)
    # Drawn top to bottom in data-seq order, which is document order.
    arrows = drawn["arrows"]
    assert [a["seq"] for a in arrows] == list(range(len(arrows)))
    assert all(a["top"] < b["top"] for a, b in itertools.pairwise(arrows)), arrows
    assert (drawn["role"], drawn["shown"]) == ("img", True)
    return drawn


def test_diagram_of_a_late_result_has_its_arrows_in_order(chromium: Browser, readme_report: Path) -> None:
    """The hand-written late result: tools/call (line 5), progress (6), the client's cancel (7), two more
    progress (8, 9) and the result (10) anyway; each message after the cancel carries its finding, inferred
    (the proxy saw the order; whether the cancel had reached the server rests on the race window)."""
    chromium.open(readme_report)
    source = "sample_captures/stdio/handwritten-server-late-result-after-cancel.jsonl"
    drawn = _diagram(chromium, f"{source}:7", "diagram-late-result")
    shown = [(a["kind"], a["dir"], a["finding"], a["certainty"]) for a in drawn["arrows"]]
    assert shown == [
        ("request", "c2s", None, None),
        ("progress", "s2c", None, None),
        ("cancel", "c2s", None, None),
        ("progress", "s2c", "CW102", "inferred"),
        ("progress", "s2c", "CW102", "inferred"),
        ("response", "s2c", "CW101", "inferred"),
    ]
    for arrow, line in zip(drawn["arrows"], range(5, 11), strict=True):
        assert f"{source}:{line}" in arrow["title"]
    assert drawn["windows"] == 1
    assert drawn["label"].startswith("Sequence diagram of tools/call slow_write id 2")
    assert chromium.problems() == []


def test_diagram_of_a_reset_after_a_flood_collapses_the_run(chromium: Browser, readme_report: Path) -> None:
    """The client that stopped reading: the server floods progress, the run collapses to first, count and
    last, and the client's reset is the cancel, with its finding proven by the capture (exact). The SSE
    event cut at the end could be the reply, so the call's verdict is inferred and the diagram shades the
    race window at the reset."""
    chromium.open(readme_report)
    drawn = _diagram(chromium, "sample_captures/http/http-client-stops-reading.pcapng#", "diagram-reset")
    shown = [(a["kind"], a["dir"], a["finding"], a["certainty"]) for a in drawn["arrows"]]
    assert shown == [
        ("request", "c2s", None, None),
        ("progress", "s2c", None, None),
        ("collapsed", "s2c", None, None),
        ("progress", "s2c", None, None),
        ("reset", "c2s", "CW202", "exact"),
    ]
    assert drawn["windows"] == 1
    assert chromium.problems() == []
