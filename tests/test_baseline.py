"""Baselines: a re-recorded scenario matches its baseline, a new violation does not, what no longer
occurs is listed as stale, and a hostile baseline file is a clear error naming file and line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cancelwire.ci import baseline
from cancelwire.ci.gates import Triage
from cancelwire.cli import main as cli
from cancelwire.judge.fingerprint import Identity, fingerprint
from cancelwire.run.pipeline import audit
from test_cli import ROOT, run

STDIO = ROOT / "sample_captures" / "stdio"
SDK = "sdk-cancel-slow-tool-2025-11-25"  # the real MCP Python SDK: one unverified cancel (a warning)
LATE = "handwritten-server-late-result-after-cancel"  # CW101 and CW102 warnings


def record(names: list[str], out: Path) -> None:
    """Record the scenarios again, as scripts/record_samples.py made the shipped samples."""
    subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "record_samples.py"), "--only", *names, "--out", str(out)],
        check=True,
        capture_output=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def rerecorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("rerecorded")
    record([SDK, LATE], out)
    return out


def test_a_rerecorded_session_matches_its_baseline_and_a_new_violation_does_not(
    tmp_path: Path, rerecorded: Path
) -> None:
    base = tmp_path / "cancelwire-baseline.jsonl"
    proc = run("audit", str(STDIO / f"{SDK}.jsonl"), "--fail-on", "warning", "--write-baseline", str(base))
    assert proc.returncode == 1  # writing a baseline does not change the verdict
    assert proc.stderr == f"cancelwire: {base}: wrote 1 issue(s) to the baseline\n"
    header, entry = (json.loads(line) for line in base.read_text().splitlines())
    assert header == {"cancelwire_baseline": 1, "generated_by": "cancelwire 0.1.0"}
    assert {k: entry[k] for k in ("kind", "rule", "severity", "server", "transport", "method", "tool", "ordinal")} == {
        "kind": "outcome",
        "rule": "outcome-unverified",
        "severity": "warning",
        "server": "cancelwire-sample-server",
        "transport": "stdio",
        "method": "tools/call",
        "tool": "append_ledger",
        "ordinal": 1,
    }

    # the same scenario recorded again: other timestamps, another path and file name
    again = tmp_path / "elsewhere" / "renamed.jsonl"
    again.parent.mkdir()
    shutil.copy(rerecorded / f"{SDK}.jsonl", again)
    shipped, fresh = (STDIO / f"{SDK}.jsonl").read_text(), again.read_text()
    assert shipped != fresh and json.loads(shipped.splitlines()[1])["ts"] != json.loads(fresh.splitlines()[1])["ts"]
    proc = run("audit", str(again), "--fail-on", "warning", "--baseline", str(base), "--format", "github")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines() == [
        "::notice title=cancelwire::0 new issue(s); 1 known to the baseline, 0 baseline entr(ies) no longer seen "
        "(fail-on warning)"
    ]
    assert proc.stderr == ""

    # a new violation beside it fails, and only it is annotated
    proc = run("audit", str(again), str(rerecorded / f"{LATE}.jsonl"), "--fail-on", "warning", "--baseline", str(base))
    assert proc.returncode == 1
    proc = run("audit", str(again), str(rerecorded / f"{LATE}.jsonl"), "--baseline", str(base), "--format", "github")
    titles = [line.split("title=")[1].split("::")[0] for line in proc.stdout.splitlines()[:-1]]
    assert titles == ["CW101 response-after-cancel", "CW102 progress-after-cancel"]


def test_what_no_longer_occurs_is_listed_as_stale(tmp_path: Path) -> None:
    base = tmp_path / "b.jsonl"
    run("audit", str(STDIO / f"{SDK}.jsonl"), str(STDIO / f"{LATE}.jsonl"), "--write-baseline", str(base))
    assert len(base.read_text().splitlines()) == 4  # header, CW101, CW102, the unverified cancel
    proc = run("audit", str(STDIO / f"{SDK}.jsonl"), "--baseline", str(base), "--fail-on", "warning")
    assert proc.returncode == 0
    stale = [json.loads(line) for line in base.read_text().splitlines()[1:3]]
    assert proc.stderr.splitlines() == [
        f"cancelwire: {base}: 2 baseline entr(ies) no longer occur:",
        *(f"  {e['fingerprint']}  {e['rule']}  {e['where']}" for e in stale),
    ]
    proc = run("audit", str(STDIO / f"{SDK}.jsonl"), "--baseline", str(base), "--format", "sarif")
    results = json.loads(proc.stdout)["runs"][0]["results"]
    assert [(r["ruleId"], r["baselineState"]) for r in results] == [
        ("outcome-unverified", "unchanged"),
        ("CW101", "absent"),
        ("CW102", "absent"),
    ]


def test_fingerprints_leave_out_ids_paths_ports_and_session_ids() -> None:
    capture = ROOT / "sample_captures" / "http" / "sdk-http-cancel-notification.pcapng"
    result = audit([str(capture)])
    try:
        issues = list(Triage(result))
    finally:
        result.close()
    # the session key carries the Mcp-Session-Id; the fingerprint is only what the README names
    assert [i.session_key.split("#")[1] for i in issues if i.session_key] == ["f39ce014810e439fbe039ed91e035b9b"]
    (issue,) = issues
    identity = Identity("cancelwire-sample-server", "streamable-http", "tools/call", "slow_write")
    assert (issue.code, issue.identity, issue.ordinal) == ("CW101", identity, 1)
    assert issue.fingerprint == fingerprint("CW101", identity, 1)


def test_ordinals_tell_like_issues_apart_and_unnamed_servers_use_the_file_name() -> None:
    samples = [
        str(STDIO / f"{name}.jsonl") for name in (SDK, "sdk-cancel-slow-tool-2025-06-18", "sdk-cancel-slow-tool")
    ]
    result = audit(samples)
    try:
        assert [(i.code, i.ordinal) for i in Triage(result)] == [("outcome-unverified", n) for n in (1, 2, 3)]
    finally:
        result.close()
    result = audit([str(STDIO / "handwritten-server-late-result-after-cancel-2026-07-28.jsonl")])
    try:
        servers = {i.identity.server for i in Triage(result)}
    finally:
        result.close()
    assert servers == {"file:handwritten-server-late-result-after-cancel-2026-07-28.jsonl"}


GOOD = (
    '{"fingerprint": "%s", "kind": "outcome", "rule": "outcome-unverified", "name": "outcome-unverified", ' % ("0" * 24)
    + '"severity": "warning", "server": "s", "transport": "stdio", "method": "tools/call", "tool": "t", "ordinal": 1}'
)
HEADER = '{"cancelwire_baseline": 1}'


@pytest.mark.parametrize(
    ("content", "error"),
    [
        ("", "FILE: the baseline is empty\n  hint: write one with --write-baseline"),
        ("{", "FILE:1: not JSON (unexpected end of data)\n  hint: one JSON object per line"),
        (
            '{"cancelwire_baseline": 2}',
            "FILE:1: not a cancelwire baseline of format 1 (found 2)\n  hint: upgrade cancelwire",
        ),
        ('{"results": []}', "FILE:1: 'results' must be a string or number, not nested"),
        ("[1, 2]", "FILE:1: expected a JSON object, found list"),
        (
            '{"a": 1}',
            "FILE:1: not a cancelwire baseline of format 1 (found None)\n  hint: write it again with --write-baseline",
        ),
        (
            f"{HEADER}\n{GOOD}\n{{oops",
            "FILE:3: not JSON (unexpected character, expected a string key)\n  hint: one JSON object per line",
        ),
        (f"{HEADER}\n{GOOD}\n{GOOD}", f"FILE:3: fingerprint {'0' * 24} appears twice"),
        (f"{HEADER}\n" + GOOD.replace('"ordinal": 1', '"ordinal": 0'), "FILE:2: ordinal must be a whole number >= 1"),
        (f"{HEADER}\n" + GOOD.replace("0" * 24, "../../etc"), "FILE:2: fingerprint must be 24 lowercase hex digits"),
        (f"{HEADER}\n" + GOOD.replace('"tool": "t", ', ""), "FILE:2: entry lacks tool"),
        (f"{HEADER}\n" + GOOD.replace('"tool": "t"', '"tool": "t", "x": 1'), "FILE:2: unknown key(s) x"),
        (
            f"{HEADER}\n" + GOOD.replace('"tool": "t"', '"tool": [[[[]]]]'),
            "FILE:2: 'tool' must be a string or number, not nested",
        ),
        (f"{HEADER}\n" + " " * (baseline.MAX_LINE + 1), f"FILE:2: line longer than {baseline.MAX_LINE} bytes"),
    ],
)
def test_a_hostile_baseline_is_a_clear_error(tmp_path: Path, content: str, error: str) -> None:
    base = tmp_path / "b.jsonl"
    base.write_text(content)
    proc = run("audit", str(STDIO / f"{SDK}.jsonl"), "--baseline", str(base))
    assert proc.returncode == 2
    assert proc.stderr == "cancelwire: error: " + error.replace("FILE", str(base)) + "\n"
    assert proc.stdout == ""  # refused before the audit


def test_size_limit_and_files_that_are_not_regular(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    base = tmp_path / "b.jsonl"
    base.write_text(HEADER + "\n" + (GOOD + "\n") * 10)
    monkeypatch.setattr(baseline, "MAX_BYTES", 1024)
    sample = str(STDIO / f"{SDK}.jsonl")
    assert cli.main(["audit", sample, "--baseline", str(base)]) == 2
    assert capsys.readouterr().err == (
        f"cancelwire: error: {base}: the baseline file is larger than 1 KiB; that is not a baseline file\n"
    )
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # opening it to read would block: refused first
    for path, problem in (
        (fifo, "the baseline file is a FIFO; it must be a regular file"),
        (tmp_path, "the baseline file is a directory; it must be a regular file"),
        (tmp_path / "none", "cannot read the baseline file: No such file or directory"),
    ):
        assert cli.main(["audit", sample, "--baseline", str(path)]) == 2
        assert capsys.readouterr().err == f"cancelwire: error: {path}: {problem}\n"


def test_report_and_dataset_fingerprints_survive_a_rerecording(tmp_path: Path, rerecorded: Path) -> None:
    """The `fingerprint` of a finding in the JSON report and the dataset is the baseline's: a re-recording
    elsewhere (other times, path and file name) gives the same ones, so audits can be joined on it."""
    again = tmp_path / "elsewhere" / "renamed.jsonl"
    again.parent.mkdir()
    shutil.copy(rerecorded / f"{LATE}.jsonl", again)
    base = tmp_path / "b.jsonl"
    shipped = run("audit", str(STDIO / f"{LATE}.jsonl"), "--format", "json", "--write-baseline", str(base))
    fresh = run("audit", str(again), "--format", "json")
    prints = [[(f["rule_id"], f["fingerprint"]) for f in json.loads(p.stdout)["findings"]] for p in (shipped, fresh)]
    assert prints[0] == prints[1] and [rule for rule, _ in prints[0]] == ["CW101", "CW102"]
    entries = [json.loads(line) for line in base.read_text().splitlines()[1:]]
    assert [(e["rule"], e["fingerprint"]) for e in entries] == prints[0]  # the baseline's, SARIF's and diff's
    frames = []
    for path in (STDIO / f"{LATE}.jsonl", again):
        with audit([str(path)]) as result:
            frames.append(list(result.to_dataframe("findings")["fingerprint"]))
    assert frames[0] == frames[1] == [fp for _, fp in prints[0]]
