"""`cancelwire diff OLD.json NEW.json`: exact output before and after a server fix, matching that ignores
ids, lines and times, exit statuses, and hostile JSON refused with the file named."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cancelwire.errors import ReportFileError
from cancelwire.reports import diff, rendering
from transcripts import Line, write_transcript

ROOT = Path(__file__).resolve().parent.parent


def _session(late_reply: bool, first_id: int = 1, t0: float = 100.0) -> list[Line]:
    """A ledger server whose unannotated `append` is cancelled; the buggy one answers after the cancel."""
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}
    ready = {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "ledger", "version": "2"}}
    call = {"name": "append", "arguments": {"entry": "pay alice 100"}, "_meta": {"progressToken": "p"}}
    cancel = {"requestId": first_id + 1, "reason": "user pressed stop"}
    lines: list[Line] = [
        (t0, "c2s", {"jsonrpc": "2.0", "id": first_id, "method": "initialize", "params": init}),
        (t0 + 0.1, "s2c", {"jsonrpc": "2.0", "id": first_id, "result": ready}),
        (t0 + 1.0, "c2s", {"jsonrpc": "2.0", "id": first_id + 1, "method": "tools/call", "params": call}),
        (t0 + 1.5, "c2s", {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel}),
    ]
    if late_reply:
        lines.append((t0 + 2.5, "s2c", {"jsonrpc": "2.0", "id": first_id + 1, "result": {"content": []}}))
    return lines


def _report(tmp_path: Path, name: str, lines: list[Line], *flags: str) -> Path:
    write_transcript(tmp_path / f"{name}.jsonl", lines)
    out = tmp_path / f"{name}.json"
    cmd = [sys.executable, "-m", "cancelwire", "audit", f"{name}.jsonl", "--format", "json", "-o", out.name, *flags]
    subprocess.run(cmd, cwd=tmp_path, capture_output=True, timeout=120, check=False)
    return out


def _diff(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cancelwire", "diff", *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def before_after(tmp_path: Path) -> tuple[Path, Path]:
    return _report(tmp_path, "before", _session(True)), _report(tmp_path, "after", _session(False))


def test_a_fixed_server_shows_what_went_away(before_after: tuple[Path, Path], tmp_path: Path) -> None:
    proc = _diff("before.json", "after.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "cancelwire diff: before.json (1 finding(s), 1 cancelled call(s)) -> after.json (0 finding(s), "
        "1 cancelled call(s))",
        "",
        "Findings that disappeared (1)",
        "  - before.jsonl:6  warning  CW101 response-after-cancel  server answered tools/call (id 2) 1.000 s after "
        "the cancel, once the cancel had reached it [inferred]",
        "",
        "Cancelled calls that changed (1)",
        "  ~ after.jsonl:5  id 2 tools/call append: outcome late-result-violation -> outcome-unverified, "
        "certainty inferred -> exact",
        "",
        "Unchanged: 0 finding(s), 0 cancelled call(s)",
        "",
        "PASS: nothing new; 0 finding(s) appeared, 1 disappeared, 0 changed; 0 cancelled call(s) appeared, "
        "0 disappeared, 1 changed",
    ]


def test_a_regression_exits_1(before_after: tuple[Path, Path], tmp_path: Path) -> None:
    proc = _diff("after.json", "before.json", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    assert "Findings that appeared (1)" in lines
    changed = "  ~ before.jsonl:5  id 2 tools/call append: outcome outcome-unverified -> late-result-violation, "
    assert changed + "certainty exact -> inferred" in lines
    assert lines[-1] == (
        "FAIL: 2 new problem(s); 1 finding(s) appeared, 0 disappeared, 0 changed; 0 cancelled call(s) appeared, "
        "0 disappeared, 1 changed"
    )


def test_matching_ignores_ids_lines_times_and_redaction(tmp_path: Path) -> None:
    """A new recording of the same scenario (other ids, times and file) is the same; so is it redacted."""
    old = _report(tmp_path, "monday", _session(True))
    new = _report(tmp_path, "tuesday", [(0.0, "c2s", {"jsonrpc": "2.0", "method": "x"}), *_session(True, 7, 900.0)])
    redacted = _report(tmp_path, "redacted", _session(True, 7, 900.0), "--redact")
    for other in (new, redacted):
        changes = diff.compare(old, other)
        assert changes["new_problems"] == 0
        assert [
            changes[k][w] for k in ("findings", "cancellations") for w in ("appeared", "disappeared", "changed")
        ] == [
            [],
            [],
            [],
            [],
            [],
            [],
        ]
        assert (changes["findings"]["unchanged"], changes["cancellations"]["unchanged"]) == (1, 1)
    assert "pay alice" not in redacted.read_text()


def test_markdown_html_and_json(before_after: tuple[Path, Path], tmp_path: Path) -> None:
    md = _diff("after.json", "before.json", "--format", "md", cwd=tmp_path).stdout
    assert md.splitlines()[:3] == [
        "## cancelwire diff: FAIL",
        "",
        r"**FAIL**: 2 new problem\(s\)\; 1 finding\(s\) appeared\, 0 disappeared\, 0 changed\; "
        r"0 cancelled call\(s\) appeared\, 0 disappeared\, 1 changed",
    ]
    assert "| CW101 response\\-after\\-cancel | warning | before\\.jsonl\\:6 |" in md
    html = _diff("after.json", "before.json", "--format", "html", "-o", "d.html", cwd=tmp_path)
    assert html.returncode == 1 and html.stdout == ""
    page = (tmp_path / "d.html").read_text()
    css = re.search(r"<style>(.*?)</style>", page, re.S)
    assert css is not None and f"style-src '{rendering.csp_hash(css.group(1))}'" in page
    assert "default-src 'none'" in page and "http://" not in page and "https://" not in page
    assert '<section id="verdict"><p class="verdict fail"><b>FAIL</b>' in page
    data = json.loads(_diff("after.json", "before.json", "--format", "json", cwd=tmp_path).stdout)
    assert data["new_problems"] == 2 and data["findings"]["appeared"][0]["code"] == "CW101"
    assert data["findings"]["appeared"][0]["identity"] == {
        "server": "ledger",
        "transport": "stdio",
        "method": "tools/call",
        "tool": "append",
    }


def _hostile(tmp_path: Path, report: dict[str, Any]) -> Path:
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(report))
    return path


def test_recorded_text_in_a_report_stays_inert(before_after: tuple[Path, Path], tmp_path: Path) -> None:
    before, after = before_after
    report = json.loads(before.read_text())
    report["findings"][0]["message"] = "<script>alert(1)</script>\x1b]0;owned\x07 @everyone"
    hostile = _hostile(tmp_path, report)
    text = _diff(str(after), str(hostile), "--color", "always", cwd=tmp_path).stdout
    assert "\x07" not in text and r"\x1b]0;owned\x07" in text
    page = _diff(str(after), str(hostile), "--format", "html", cwd=tmp_path).stdout
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    md = _diff(str(after), str(hostile), "--format", "md", cwd=tmp_path).stdout
    assert "@everyone" not in md and "<script>" not in md


@pytest.mark.parametrize(
    ("content", "error"),
    [
        (b"{nope", "not a JSON report (unexpected character, expected a string key)"),
        (b"[" * 100_000 + b"]" * 100_000, "not a JSON report (depth limit exceeded)"),
        (b'{"findings": []}', "not a cancelwire JSON report (no schema_version)"),
        (b'{"schema_version": 9}', "report schema_version 9 is not 1"),
        (b'{"schema_version": 1, "sessions": [], "findings": {}}', "findings: expected a list of objects"),
    ],
)
def test_hostile_json_is_exit_2_naming_the_file(tmp_path: Path, content: bytes, error: str) -> None:
    good = _report(tmp_path, "good", _session(False))
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    proc = _diff(str(good), str(bad), cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"cancelwire: error: {bad}: {error}")
    assert proc.stdout == "" and "Traceback" not in proc.stderr


def test_a_wrong_field_is_named(before_after: tuple[Path, Path], tmp_path: Path) -> None:
    before, _ = before_after
    report = json.loads(before.read_text())
    report["findings"][0]["severity"] = {"deep": [1]}
    with pytest.raises(ReportFileError, match=r"hostile\.json: findings\[0\]\.severity: expected a string, found dict"):
        diff.compare(before, _hostile(tmp_path, report))
    report["findings"][0]["severity"] = "fatal"
    with pytest.raises(ReportFileError, match=r"findings\[0\]\.severity: unknown value 'fatal'"):
        diff.compare(before, _hostile(tmp_path, report))
    report = json.loads(before.read_text())
    report["cancellations"][0]["evidence"] = [{"source": 7}]
    with pytest.raises(
        ReportFileError, match=r"cancellations\[0\]\.evidence: expected a list of objects with a source"
    ):
        diff.compare(before, _hostile(tmp_path, report))


def test_a_fifo_a_folder_a_missing_file_and_a_huge_file(
    before_after: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before, _ = before_after
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    proc = _diff(str(before), str(fifo), cwd=tmp_path)  # refused before it is opened: never blocks
    assert proc.returncode == 2 and f"{fifo}: the JSON report file is a FIFO" in proc.stderr
    assert _diff(str(before), str(tmp_path), cwd=tmp_path).returncode == 2
    proc = _diff(str(before), "missing.json", cwd=tmp_path)
    assert proc.returncode == 2 and "missing.json: cannot read the JSON report file" in proc.stderr
    monkeypatch.setattr(diff, "MAX_BYTES", 2048)
    with pytest.raises(ReportFileError, match=r"before\.json: the JSON report file is larger than 2 KiB"):
        diff.compare(before, before)


def test_diff_never_overwrites_its_inputs(before_after: tuple[Path, Path], tmp_path: Path) -> None:
    before, after = before_after
    kept = after.read_bytes()
    proc = _diff(str(before), str(after), "-o", str(after), cwd=tmp_path)
    assert proc.returncode == 2 and "would overwrite an input" in proc.stderr
    assert after.read_bytes() == kept
