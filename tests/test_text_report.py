"""The text and Markdown reports people read: findings first, the verdict line the exit status follows,
colour only on a terminal and only around our own words, exact output on every sample."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest
from cancelwire import __version__
from cancelwire.ci.baseline import read as read_baseline
from cancelwire.ci.gates import Triage
from cancelwire.ci.policy import Suppression
from cancelwire.model import Severity
from cancelwire.reports import rendering
from cancelwire.reports.formats import render
from cancelwire.run.pipeline import audit
from test_reports import ROOT, SAMPLES
from transcripts import Line, write_transcript

GOLDEN = Path(__file__).parent / "golden"
# when the report was made, and the tool's version, as they show in text and (escaped) in Markdown
GENERATED = re.compile(r"\d{4}\\?-\d\d\\?-\d\dT\d\d\\?:\d\d\\?:\d\d\\?\.\d{3}Z")
VERSION = re.compile(r"cancelwire " + re.escape(__version__).replace(r"\.", r"\\?\."))
STDIO = "sample_captures/stdio"
LATE = f"{STDIO}/handwritten-server-late-result-after-cancel.jsonl"
NON_JSON = f"{STDIO}/handwritten-server-non-json-stdout.jsonl"
SLOW = f"{STDIO}/sdk-cancel-slow-tool.jsonl"
SGR = re.compile(r"\x1b\[([0-9;]*)m")


def _masked(text: str) -> str:
    return VERSION.sub("cancelwire X", GENERATED.sub("TIME", text))


@pytest.mark.parametrize("sample", SAMPLES, ids=str)
def test_sample_report_matches_golden(sample: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every sample's whole text (verbose) and Markdown report, from one audit (a capture's tshark pass is
    the cost); regenerate with CANCELWIRE_UPDATE_GOLDEN=1."""
    monkeypatch.chdir(ROOT)
    with audit([str(sample)]) as result:
        texts = {fmt: _masked(render(result, name, verbose=True)) for fmt, name in (("txt", "text"), ("md", "md"))}
    for fmt, text in texts.items():
        golden = GOLDEN / fmt / (str(sample).replace("/", "__") + f".{fmt}")
        if os.environ.get("CANCELWIRE_UPDATE_GOLDEN"):
            golden.parent.mkdir(exist_ok=True)
            golden.write_text(text)
        assert golden.exists(), f"no golden report for {sample}; run with CANCELWIRE_UPDATE_GOLDEN=1 and review it"
        assert text == golden.read_text(), fmt


def test_every_text_golden_has_its_sample() -> None:
    for fmt in ("txt", "md"):
        names = {str(s).replace("/", "__") + f".{fmt}" for s in SAMPLES}
        assert sorted(p.name for p in (GOLDEN / fmt).iterdir() if p.name not in names) == []


def _text(*paths: str, **triage: object) -> list[str]:
    with audit(list(paths)) as result:
        return render(result, "text", Triage(result, **triage)).splitlines()  # type: ignore[arg-type]


def test_findings_come_first_and_the_verdict_last(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    lines = _text(LATE, NON_JSON, SLOW)
    assert lines[0] == "Findings: 1 error, 2 warnings, 0 info"
    assert lines[1].startswith(f"  {NON_JSON}:8  error  CW301 non-json-on-stdio  ")
    headings = [line for line in lines if line and not line.startswith(" ")]
    assert headings == [
        "Findings: 1 error, 2 warnings, 0 info",
        "Cancelled calls: 1 late-result-violation, 1 outcome-unverified",
        "Inputs: 3 inputs, 3 sessions, 8 requests, 2 cancelled call(s) (--verbose lists each session)",
        "How this report was made",
        "FAIL: 1 error, 2 warnings, 1 outcome-unverified (warning) in 3 sessions (gate: --fail-on error)",
    ]


def test_verdict_follows_the_gate_the_baseline_and_suppressions(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(ROOT)
    assert _text(LATE, SLOW, fail_on=Severity.WARNING)[-1] == (
        "FAIL: 2 warnings, 1 outcome-unverified (warning) in 2 sessions (gate: --fail-on warning)"
    )
    assert _text(LATE, fail_on=None)[-1] == "PASS: 2 warnings in 1 session (gate: --fail-on never)"
    accepted = (Suppression(rule="CW102", reason="known"),)
    assert _text(LATE, suppressions=accepted)[-1] == (
        "PASS: 1 warning in 1 session (gate: --fail-on error; 1 suppressed)"
    )
    baseline = tmp_path / "base.jsonl"
    subprocess.run(
        [sys.executable, "-m", "cancelwire", "audit", NON_JSON, "--write-baseline", str(baseline), "-o", os.devnull],
        cwd=ROOT,
        check=False,
        timeout=120,
    )
    assert _text(NON_JSON, LATE, baseline=read_baseline(baseline))[-1] == (
        "PASS: 2 warnings in 2 sessions (gate: --fail-on error; 1 known to the baseline)"
    )
    assert _text(f"{STDIO}/sdk-clean-session.jsonl")[-1] == "PASS: no findings in 1 session (gate: --fail-on error)"


def test_nothing_readable_says_error(tmp_path: Path) -> None:
    assert _text(str(tmp_path / "nope.jsonl"))[-1] == "ERROR: nothing could be read (1 input)"


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cancelwire", "audit", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def _on_a_terminal(*args: str, env: dict[str, str]) -> str:
    """The command's standard output when it is a terminal (a pseudo-terminal), as bytes decoded."""
    leader, follower = pty.openpty()
    environ = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TERM")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "cancelwire", "audit", "-q", *args],
        cwd=ROOT,
        stdout=follower,
        stderr=subprocess.DEVNULL,
        env={**environ, **env},
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.wait(timeout=120)
    os.close(leader)
    return b"".join(chunks).decode().replace("\r\n", "\n")


def test_colour_on_a_terminal_unless_no_color_or_a_dumb_terminal() -> None:
    plain = _cli(LATE, "--color", "never").stdout
    coloured = _on_a_terminal(LATE, env={"TERM": "xterm"})
    assert "\x1b[1;32mPASS\x1b[0m: 2 warnings in 1 session" in coloured
    assert "\x1b[33mwarning\x1b[0m  CW101 response-after-cancel" in coloured
    assert _masked(SGR.sub("", coloured)) == _masked(plain)
    assert "\x1b" not in _on_a_terminal(LATE, env={"TERM": "xterm", "NO_COLOR": "1"})
    assert "\x1b" not in _on_a_terminal(LATE, env={"TERM": "dumb"})
    assert "\x1b" not in _on_a_terminal(LATE, "--color", "never", env={"TERM": "xterm"})
    assert "\x1b[" in _on_a_terminal(LATE, "--color", "always", env={"TERM": "xterm", "NO_COLOR": "1"})
    # auto into a pipe: no colour; always: colour even there
    assert "\x1b" not in _cli(LATE).stdout
    assert "\x1b[1;32mPASS\x1b[0m" in _cli(LATE, "--color", "always").stdout


def test_colour_never_reaches_into_recorded_text(tmp_path: Path) -> None:
    """A recording full of escape sequences, reported in colour: every escape byte on the output is one
    of our colour codes, each around one word of ours, and without them the report is the plain one."""
    evil = "\x1b[31mred\x1b]0;title\x07\x1b[2J\x9b1m"
    messages: list[Line] = [
        (0.0, "c2s", {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": evil}}),
        (0.1, "c2s", {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}),
        (0.2, "s2c", {"jsonrpc": "2.0", "id": 1, "result": {"text": evil}}),
    ]
    path = write_transcript(tmp_path / "evil.jsonl", messages)
    with path.open("a") as out:  # and a line of stdout that is not JSON at all
        out.write(json.dumps({"ts": 0.3, "dir": "s2c", "line": f"{evil} not json"}) + "\n")
    coloured = _cli(str(path), "--color", "always", "-v").stdout
    codes = set(SGR.findall(coloured))
    assert codes <= {*rendering.COLORS.values(), "0"} and "33" in codes
    assert coloured.count("\x1b") == len(SGR.findall(coloured))
    assert "\x9b" not in coloured and "\x07" not in coloured
    assert r"\x1b[31mred\x1b]0;title\x07\x1b[2J\x9b1m" in coloured  # the recorded bytes, shown escaped
    plain = _cli(str(path), "--color", "never", "-v").stdout
    assert _masked(SGR.sub("", coloured)) == _masked(plain)


def test_verbose_lists_each_session(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    with audit([LATE, SLOW]) as result:
        brief, verbose = render(result, "text"), render(result, "text", verbose=True)
    session = f"  {LATE}  [cancelwire-transcript, stdio, 2025-11-25 (negotiated), vantage proxy]"
    assert session not in brief.splitlines() and session in verbose.splitlines()
    assert "Inputs: 2 inputs, 2 sessions, 5 requests, 2 cancelled call(s)\n" + session in verbose


def test_markdown_opens_with_the_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    with audit([NON_JSON]) as result:
        lines = render(result, "md").splitlines()
    assert lines[:3] == [
        "## cancelwire audit: FAIL",
        "",
        "**FAIL**: 1 error in 1 session (gate: --fail-on error)",
    ]
    assert json.dumps(lines).count("FAIL") == 2


def test_the_counted_tally_is_the_one_a_pass_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a baseline or suppressions the tally comes from the audit's counts (no pass over the spools);
    it must be what the pass over every issue gives (forced here by a suppression that matches nothing),
    at every gate (one audit of every sample serves them all)."""
    monkeypatch.chdir(ROOT)
    nothing = (Suppression(rule="CW999", reason="matches nothing"),)
    with audit([str(s) for s in SAMPLES]) as result:
        for fail_on in (Severity.ERROR, Severity.INFO, None):
            counted = Triage(result, fail_on=fail_on).tally()
            walked = Triage(result, fail_on=fail_on, suppressions=nothing).tally()
            assert counted.new_outcomes and counted.new
            assert (counted.failing, counted.new, counted.new_outcomes) == (
                walked.failing,
                walked.new,
                walked.new_outcomes,
            ), fail_on
            assert (counted.known, counted.suppressed, counted.stale) == (0, 0, [])
