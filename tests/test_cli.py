"""The real console script: exit codes, exact lines, errors without tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STDIO = ROOT / "sample_captures" / "stdio"


def run(*args: str, cwd: Path = ROOT, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cancelwire", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        input=stdin.decode() if stdin is not None else None,
    )


def test_clean_session_exits_0_with_exact_summary() -> None:
    proc = run("audit", "sample_captures/stdio/sdk-clean-session.jsonl")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[:3] == [
        "Findings: 0 errors, 0 warnings, 0 info",
        "",
        "Inputs: 1 input, 1 session, 4 requests, 0 cancelled call(s) (--verbose lists each session)",
    ]
    assert lines[-2:] == ["", "PASS: no findings in 1 session (gate: --fail-on error)"]
    assert proc.stderr == ""


def test_violation_exits_1_and_fail_on_never_exits_0() -> None:
    sample = "sample_captures/stdio/handwritten-client-cancels-unknown-id.jsonl"
    proc = run("audit", sample)
    assert proc.returncode == 1
    assert (
        f"  {sample}:7  error  CW105 cancel-unknown-request  a cancel names no request of its sender: "
        "client cancelled id 99, never sent [exact]"
    ) in proc.stdout.splitlines()
    assert run("audit", sample, "--fail-on", "never").returncode == 0


def test_fail_on_warning_and_info_thresholds() -> None:
    sample = "sample_captures/stdio/handwritten-server-unanswered-request.jsonl"  # one warning only
    assert run("audit", sample).returncode == 0
    assert run("audit", sample, "--fail-on", "warning").returncode == 1
    assert run("audit", "sample_captures/stdio/sdk-clean-session.jsonl", "--fail-on", "info").returncode == 0


def test_json_to_file_and_select(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    proc = run("audit", "sample_captures/stdio/", "--format", "json", "-o", str(out), "--select", "CW105")
    assert proc.returncode == 1 and proc.stdout == ""
    report = json.loads(out.read_text())
    assert {f["rule"] for f in report["findings"]} == {"cancel-unknown-request"}
    assert {"rule": "response-after-cancel", "reason": "not selected"} in report["disabled_rules"]


def test_missing_and_empty_inputs_are_reported_and_the_rest_analysed(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    proc = run("audit", "nope.jsonl", str(empty), "sample_captures/stdio/sdk-clean-session.jsonl")
    assert proc.returncode == 0
    assert proc.stderr.splitlines() == [
        "cancelwire: error: nope.jsonl: no such file or directory",
        f"cancelwire: error: {empty}: the input is empty",
    ]
    assert "Inputs: 3 inputs, 1 session, 4 requests, 0 cancelled call(s) (--verbose lists each session)" in proc.stdout
    assert "Traceback" not in proc.stderr


def test_nothing_readable_exits_2(tmp_path: Path) -> None:
    proc = run("audit", "nope.jsonl")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr


def test_unknown_format_names_the_file_and_the_fix(tmp_path: Path) -> None:
    odd = tmp_path / "notes.txt"
    odd.write_text("hello\nworld\n")
    proc = run("audit", str(odd))
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        f"cancelwire: error: {odd}: cannot tell the input format from its content",
        "  hint: force one with --input-format "
        "(cancelwire-transcript, pcap, har, mcpsnoop, inspector, mitmproxy, otlp, claude-desktop, vscode, "
        "python-sdk-log, go-sdk, ndjson)",
        "cancelwire: error: nothing could be read: none of the 1 input(s) was readable",
    ]


def test_bad_rule_file_is_exit_2_naming_file_and_key(tmp_path: Path) -> None:
    (tmp_path / "ACME101-x.toml").write_text('id = "ACME101"\nslug = "x"\n')
    proc = run("audit", "sample_captures/stdio/sdk-clean-session.jsonl", "--rules", str(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"cancelwire: error: {tmp_path / 'ACME101-x.toml'}: rev: must be a positive integer")


def test_usage_errors_exit_2() -> None:
    assert run("audit").returncode == 2
    assert run("audit", "x", "--protocol", "1999-01-01").returncode == 2
    assert run("explain", "no-such-rule").returncode == 2


def test_rules_and_explain() -> None:
    listing = run("rules").stdout.splitlines()
    assert listing[0].split() == ["ID", "SLUG", "SEVERITY", "STATUS", "REVISIONS"]
    assert any(line.split()[:3] == ["CW101", "response-after-cancel", "error/warning"] for line in listing)
    text = run("explain", "CW101").stdout
    assert text.startswith("CW101 response-after-cancel (rev 2, stable since 0.1.0)\n")
    assert "  2026-07-28: MUST -> error" in text


def test_stdin_input() -> None:
    data = (STDIO / "sdk-clean-session.jsonl").read_bytes()
    proc = run("audit", "-v", "-", stdin=data)
    assert proc.returncode == 0
    assert "<stdin>" in proc.stdout


def test_gzip_input(tmp_path: Path) -> None:
    import gzip

    packed = tmp_path / "s.jsonl.gz"
    packed.write_bytes(gzip.compress((STDIO / "handwritten-client-cancels-unknown-id.jsonl").read_bytes()))
    proc = run("audit", str(packed), "--format", "json")
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["findings"][0]["rule"] == "cancel-unknown-request"


def test_settings_file_disables_a_rule_with_its_reason(tmp_path: Path) -> None:
    (tmp_path / "cancelwire.toml").write_text('[disabled]\ncancel-unknown-request = "known client bug #12"\n')
    sample = STDIO / "handwritten-client-cancels-unknown-id.jsonl"
    proc = run("audit", str(sample), "--format", "json", cwd=tmp_path)
    report = json.loads(proc.stdout)
    assert proc.returncode == 0
    assert {"rule": "cancel-unknown-request", "reason": "known client bug #12"} in report["disabled_rules"]


def test_exchanges_csv(tmp_path: Path) -> None:
    out = tmp_path / "x.csv"
    run("audit", "sample_captures/stdio/sdk-cancel-then-verify-by-read.jsonl", "--exchanges", str(out))
    import pandas as pd

    table = pd.read_csv(out)
    cancelled = table[table["cancelled"]]
    assert list(cancelled["outcome"]) == ["verified-by-read"]
    assert list(cancelled["tool"]) == ["append_ledger"]


def test_frame_shows_the_packet_a_finding_cites() -> None:
    capture = "sample_captures/http/bad-server-writes-after-disconnect.pcapng"
    proc = run("frame", capture, "12")  # the client's FIN (see sample_captures/http/README.md)
    assert proc.returncode == 0
    assert "Layer TCP" in proc.stdout and "FIN" in proc.stdout
    missing = run("frame", capture, "9999")
    assert missing.returncode == 2
    assert missing.stderr == f"cancelwire: error: {capture}#9999: no such frame in the capture\n"


def test_a_closed_pipe_is_not_an_error() -> None:
    proc = subprocess.run(
        f"{sys.executable} -m cancelwire audit sample_captures/stdio --format html | head -1",
        shell=True,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.stdout == "<!DOCTYPE html>\n"  # the report (109 KB) is larger than the pipe buffer (64 KB)
    assert proc.stderr == ""
