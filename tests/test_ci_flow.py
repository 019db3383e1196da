"""The GitHub Actions job of docs/ci.md, run locally: sessions recorded through `cancelwire record` (by
scripts/record_samples.py, which launches the real SDK server), then the job's audit step, the composite
action's own script with the job's inputs, with its baseline, JUnit file, HTML report and annotations."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from junitparser import JUnitXml
from test_cli import ROOT, run
from test_github_action import inputs_of, run_step

SCENARIOS = ("sdk-clean-session", "sdk-cancel-slow-tool")  # a clean session and an unverified cancel
WORKFLOW = re.search(r"```yaml\n(name: mcp-sessions\n.*?)```", (ROOT / "docs" / "ci.md").read_text(), re.S)


def workflow_steps() -> list[dict[str, Any]]:
    assert WORKFLOW is not None, "docs/ci.md has no GitHub Actions job"
    steps: list[dict[str, Any]] = yaml.safe_load(WORKFLOW.group(1))["jobs"]["cancellation-audit"]["steps"]
    return steps


def test_the_workflow_records_audits_and_writes_what_it_uploads(tmp_path: Path) -> None:
    steps = workflow_steps()
    assert "run: pytest --cancelwire-dir recordings" in yaml.safe_dump(steps)
    (audit,) = [s for s in steps if s.get("uses", "").endswith("/cancelwire/.github/actions/audit@main")]
    (upload,) = [s for s in steps if s.get("uses", "").startswith("actions/upload-artifact@")]
    assert upload["with"]["path"].split() == ["recordings/", "cancelwire-reports/"]
    recordings = tmp_path / "recordings"
    subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "record_samples.py"), "--out", str(recordings), "--only", *SCENARIOS],
        check=True,
        capture_output=True,
        timeout=300,
    )
    env = inputs_of(audit["with"])
    assert env["INPUT_PATHS"] == "recordings/"
    baseline = env["INPUT_BASELINE"]

    # first run, before anything was accepted: the unverified cancel fails the job at --fail-on warning
    (tmp_path / baseline).write_text('{"cancelwire_baseline": 1}\n')
    status, said, outputs = run_step("audit", tmp_path, env, cwd=tmp_path)
    assert (status, outputs["exit-code"]) == (0, "1"), said
    assert said.startswith("::warning file=recordings/sdk-cancel-slow-tool.jsonl,line=9,title=outcome-unverified::")
    assert JUnitXml.fromfile(str(tmp_path / "cancelwire-reports" / "cancelwire-junit.xml")).failures == 1
    assert "outcome-unverified" in (tmp_path / "cancelwire-reports" / "cancelwire.html").read_text()

    # accepted into the baseline (as a team would commit it), the same recordings pass
    accept = run("audit", "recordings/", "--write-baseline", baseline, "--fail-on", "never", cwd=tmp_path)
    assert accept.returncode == 0
    status, said, outputs = run_step("audit", tmp_path, env, cwd=tmp_path)
    assert outputs["exit-code"] == "0", said
    assert said.splitlines() == [
        "::notice title=cancelwire::0 new issue(s); 1 known to the baseline, 0 baseline entr(ies) no longer seen "
        "(fail-on warning)"
    ]
    assert JUnitXml.fromfile(str(tmp_path / "cancelwire-reports" / "cancelwire-junit.xml")).failures == 0


def test_several_outputs_from_one_run_match_single_runs(tmp_path: Path) -> None:
    sample = "sample_captures/stdio/handwritten-client-cancels-unknown-id.jsonl"
    proc = run(
        "audit",
        sample,
        "--report",
        f"junit={tmp_path / 'a.xml'}",
        "--report",
        "md=-",
        "--report",
        f"json={tmp_path / 'a.json'}",
    )
    assert proc.returncode == 1
    assert proc.stdout.startswith("## cancelwire audit: FAIL\n")  # the Markdown report, once
    assert proc.stdout.count("## cancelwire audit") == 1
    single = run("audit", sample, "--format", "junit").stdout
    assert (tmp_path / "a.xml").read_text() == single
    assert '"schema_version"' in (tmp_path / "a.json").read_text()


def test_report_option_errors_are_usage_errors(tmp_path: Path) -> None:
    sample = "sample_captures/stdio/sdk-clean-session.jsonl"
    cases = [
        (["--report", "junit"], "--report 'junit': expected FORMAT=FILE, e.g. junit=cancelwire.xml or md=-"),
        (
            ["--report", "xml=x"],
            "--report 'xml=x': unknown format 'xml'; one of text, json, md, html, junit, sarif, github, otlp",
        ),
        (["--report", "md=-", "--report", "json=-"], "only one report can go to standard output (-)"),
        (["--report", f"md={tmp_path}/r", "--report", f"json={tmp_path}/r"], f"two reports would write {tmp_path}/r"),
    ]
    for args, error in cases:
        proc = run("audit", sample, *args)
        assert (proc.returncode, proc.stderr) == (2, f"cancelwire: error: {error}\n")
