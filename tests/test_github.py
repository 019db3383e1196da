"""`--format github`: workflow annotation lines, escaped as the runner's toolkit escapes them, and
the Markdown summary appended to GITHUB_STEP_SUMMARY."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from cancelwire.reports.github import escape_data, escape_property
from test_cli import ROOT

UNKNOWN_ID = "sample_captures/stdio/handwritten-client-cancels-unknown-id.jsonl"
SLOW_TOOL = "sample_captures/stdio/sdk-cancel-slow-tool.jsonl"


def github(*args: str, env: dict[str, str] | None = None, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    return subprocess.run(
        [sys.executable, "-m", "cancelwire", "audit", *args, "--format", "github"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**environ, **(env or {})},
    )


def test_annotation_lines() -> None:
    proc = github(UNKNOWN_ID, SLOW_TOOL, "--fail-on", "warning")
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.splitlines() == [
        f"::error file={UNKNOWN_ID},line=7,title=CW105 cancel-unknown-request::"
        "a cancel names no request of its sender: client cancelled id 99, never sent [exact]",
        f"::notice file={UNKNOWN_ID},line=8,title=CW106 cancel-after-completion::"
        "a cancel came 0.002 s after the request was answered: client cancelled id 2 (tools/list) after it was answered"
        " [inferred]",
        f"::warning file={SLOW_TOOL},line=9,title=outcome-unverified::"
        "cancelled tools/call append_ledger (id 3) by notification: no reply, 'append_ledger' has no annotations, "
        "and no later read checked what it did [exact]",
        "::notice title=cancelwire::3 new issue(s) (fail-on warning)",
    ]


def test_escaping_follows_the_runner_toolkit() -> None:
    # data: % (and CR LF, which inert.terminal has already shown as escapes); properties: also : and ,
    assert escape_data("100% done\r\nnext: a, b") == "100%25 done\\r\\nnext: a, b"
    assert escape_property("C:\\x,y%") == "C%3A\\x%2Cy%25"
    # controls become visible escapes before escaping, so nothing reaches the log raw
    assert escape_data("a\x1b[31mb\x00") == "a\\x1b[31mb\\x00"


def test_recorded_text_cannot_start_a_command(tmp_path: Path) -> None:
    hostile = tmp_path / "odd, name: %0A.jsonl"
    line = "x\n::error file=evil::injected\r\n%0A"
    header = json.dumps({"cancelwire_transcript": 1, "transport": "stdio", "vantage": "proxy"})
    hostile.write_text(header + "\n" + json.dumps({"ts": 1.0, "dir": "s2c", "line": line}) + "\n")
    proc = github(str(hostile))
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert len(lines) == 2 and all(line.startswith("::") for line in lines)
    assert lines[0].startswith(f"::error file={escape_property(str(hostile))},line=2,title=CW301 non-json-on-stdio::")
    assert escape_property(str(hostile)).endswith("odd%2C name%3A %250A.jsonl")
    assert "%250A" in lines[0] and "\\n::error" in lines[0]


def test_step_summary_is_appended(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("# earlier step\n")
    proc = github(SLOW_TOOL, env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert proc.returncode == 0, proc.stderr
    text = summary.read_text()
    assert text.startswith("# earlier step\n## cancelwire audit: PASS\n")
    assert "**outcome-unverified**" in text
    assert proc.stdout.splitlines()[-1] == "::notice title=cancelwire::1 new issue(s) (fail-on error)"
