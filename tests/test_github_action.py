"""The composite GitHub Action (.github/actions/audit): its action.yml agrees with the script its steps run,
and the script's steps do what the runner would have them do, run here as the runner runs them (bash, with
GITHUB_OUTPUT and GITHUB_STEP_SUMMARY pointed at files), since no runner is here."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
ACTION = ROOT / ".github" / "actions" / "audit"
SCRIPT = ACTION / "run.sh"
UNKNOWN_ID = "sample_captures/stdio/handwritten-client-cancels-unknown-id.jsonl"  # CW105 error, CW106 info
SLOW_TOOL = "sample_captures/stdio/sdk-cancel-slow-tool.jsonl"  # one outcome-unverified (warning)
BASH = shutil.which("bash") or "/bin/bash"
"""The runner's `shell: bash`, by its path: the install test's PATH holds only stand-ins."""
INPUTS = {"paths", "fail-on", "gate", "baseline", "formats", "output-dir", "upload-sarif", "cancelwire"}


def _action() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ACTION / "action.yml").read_text())
    return data


def _steps() -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = _action()["runs"]["steps"]
    return steps


def test_inputs_and_steps_agree_with_the_script() -> None:
    action = _action()
    assert action["runs"]["using"] == "composite"
    assert set(action["inputs"]) == INPUTS
    assert action["inputs"]["paths"]["required"] is True
    script = SCRIPT.read_text()
    subcommands = set(re.findall(r"^(\w+)\(\) \{", script, re.M)) - {"report_file"}
    run_steps = [s for s in _steps() if "run" in s]
    assert [re.fullmatch(r'"\$GITHUB_ACTION_PATH/run\.sh" (\w+)', s["run"].strip("'"))[1] for s in run_steps] == [  # type: ignore[index]
        "install",
        "audit",
        "verdict",
    ]
    assert subcommands == {"install", "audit", "verdict"}
    # every INPUT_ the script reads is set by the steps, from the input of the same name, and nothing else
    given = {key: value for step in run_steps for key, value in step.get("env", {}).items() if key.startswith("INPUT_")}
    assert set(given) == set(re.findall(r"\bINPUT_[A-Z_]+", script))
    for key, value in given.items():
        name = key.removeprefix("INPUT_").lower().replace("_", "-")
        assert value == "${{ inputs." + name + " }}"
    used = {name for step in _steps() for name in re.findall(r"inputs\.([\w-]+)", json.dumps(step))}
    assert used == INPUTS  # every input reaches a step
    outputs = set(re.findall(r"echo \"([\w-]+)=", script))
    assert outputs == set(action["outputs"]) == {"exit-code", "reports", "sarif"}


def test_sarif_is_uploaded_only_where_asked_and_never_fails_the_job() -> None:
    (upload,) = [s for s in _steps() if "uses" in s]
    assert upload["uses"].startswith("github/codeql-action/upload-sarif@")
    assert upload["continue-on-error"] is True  # a repository with code scanning off gets a warning only
    assert "steps.audit.outputs.sarif != ''" in upload["if"]
    assert "github.event.repository.visibility == 'public'" in upload["if"]
    assert upload["with"]["sarif_file"] == "${{ steps.audit.outputs.sarif }}"


def inputs_of(given: dict[str, str]) -> dict[str, str]:
    """The INPUT_ environment the action's steps get for the `with:` values GIVEN (defaults filled in)."""
    values = {name: str(spec.get("default", "")) for name, spec in _action()["inputs"].items()} | given
    return {"INPUT_" + name.upper().replace("-", "_"): value for name, value in values.items()}


def run_step(
    step: str, tmp_path: Path, env: dict[str, str], path: str | None = None, cwd: Path = ROOT
) -> tuple[int, str, dict[str, str]]:
    """`run.sh STEP` as the runner runs it: its status, what it printed, and what it wrote to GITHUB_OUTPUT."""
    output, summary = tmp_path / "output", tmp_path / "summary.md"
    output.touch()
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "INPUT_"))}
    environ |= {"GITHUB_OUTPUT": str(output), "GITHUB_STEP_SUMMARY": str(summary), **env}
    environ["PATH"] = path or f"{Path(sys.executable).parent}{os.pathsep}{environ['PATH']}"
    proc = subprocess.run([BASH, str(SCRIPT), step], cwd=cwd, env=environ, capture_output=True, text=True, timeout=180)
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines())
    return proc.returncode, proc.stdout + proc.stderr, outputs


def test_the_audit_step_annotates_summarises_and_writes_the_reports(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    env = {
        "INPUT_PATHS": f"{UNKNOWN_ID}\n{SLOW_TOOL}",
        "INPUT_FAIL_ON": "error",
        "INPUT_FORMATS": "sarif html junit",
        "INPUT_OUTPUT_DIR": str(reports),
    }
    status, said, outputs = run_step("audit", tmp_path, env)
    assert status == 0  # the verdict is the last step's, so the SARIF upload still runs
    assert outputs == {"exit-code": "1", "reports": str(reports), "sarif": str(reports / "cancelwire.sarif")}
    assert f"::error file={UNKNOWN_ID},line=7,title=CW105 cancel-unknown-request::" in said
    assert "::notice title=cancelwire::3 new issue(s) (fail-on error)" in said
    assert (tmp_path / "summary.md").read_text().startswith("## cancelwire audit: FAIL\n")
    assert sorted(p.name for p in reports.iterdir()) == ["cancelwire-junit.xml", "cancelwire.html", "cancelwire.sarif"]
    sarif = json.loads((reports / "cancelwire.sarif").read_text())
    assert [r["ruleId"] for r in sarif["runs"][0]["results"]] == ["CW105", "CW106", "outcome-unverified"]


def test_gate_and_baseline_inputs_reach_the_audit(tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.jsonl"
    subprocess.run(
        [sys.executable, "-m", "cancelwire", "audit", UNKNOWN_ID, "--write-baseline", str(baseline)],
        cwd=ROOT,
        capture_output=True,
        timeout=120,
    )
    env = {"INPUT_PATHS": f"{UNKNOWN_ID} {SLOW_TOOL}", "INPUT_BASELINE": str(baseline), "INPUT_FORMATS": ""}
    assert run_step("audit", tmp_path, env)[2]["exit-code"] == "0"  # known to the baseline; the warning is below
    env["INPUT_GATE"] = "outcome-unverified=error"
    _, said, outputs = run_step("audit", tmp_path, env)
    assert outputs == {"exit-code": "1", "reports": "cancelwire-reports", "sarif": ""}
    assert f"::error file={SLOW_TOOL},line=9,title=outcome-unverified::" in said


@pytest.mark.parametrize(
    ("env", "problem"),
    [
        ({"INPUT_PATHS": " \n "}, "the paths input names no recording"),
        ({"INPUT_PATHS": UNKNOWN_ID, "INPUT_FORMATS": "pdf"}, "unknown format in the formats input"),
    ],
)
def test_bad_inputs_are_annotated_as_usage_errors(tmp_path: Path, env: dict[str, str], problem: str) -> None:
    status, said, outputs = run_step("audit", tmp_path, env)
    assert (status, outputs) == (0, {"exit-code": "2"})
    assert f"::error title=cancelwire::{problem}" in said


def test_the_verdict_step_fails_the_job_with_the_audits_status(tmp_path: Path) -> None:
    status, said, _ = run_step("verdict", tmp_path, {"EXIT_CODE": "1"})
    assert status == 1
    assert "cancelwire: the audit exited with 1" in said


@pytest.mark.parametrize("tshark", [False, True], ids=["without-tshark", "with-tshark"])
def test_the_install_step_installs_this_repository_and_tshark(tmp_path: Path, tshark: bool) -> None:
    """python3 and sudo (and tshark) are stand-ins that log their arguments, alone on PATH: no network, no root."""
    bin_dir, log = tmp_path / "bin", tmp_path / "log"
    bin_dir.mkdir()
    for name in ("python3", "sudo", *(["tshark"] if tshark else [])):
        (bin_dir / name).write_text(f'#!/bin/sh\necho "{name} $*" >> {log}\n')
        (bin_dir / name).chmod(0o755)
    assert run_step("install", tmp_path, {}, path=str(bin_dir))[0] == 0
    assert run_step("install", tmp_path, {"INPUT_CANCELWIRE": "cancelwire==0.1.0"}, path=str(bin_dir))[0] == 0
    apt = [
        "sudo DEBIAN_FRONTEND=noninteractive apt-get update -qq",
        "sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tshark",
    ]
    assert log.read_text().splitlines() == [
        f"python3 -m pip install --quiet {ROOT}",
        *([] if tshark else apt),
        "python3 -m pip install --quiet cancelwire==0.1.0",
        *([] if tshark else apt),
    ]
