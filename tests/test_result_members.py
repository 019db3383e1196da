"""A peer's result or params member of the wrong type is an invalid message at most, never a crash (issue 19).

`tests/fixtures/handwritten-tools-list-wrong-types.jsonl` holds `tools/list` results whose `tools` is a
number, `true`, `1e308`, and a list of things that are not named tools; each once crashed the run with
exit 3, and a folder run with it wrote no report for any input.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from cancelwire.cli import main as cli
from cancelwire.model import SessionStart, ToolEffect, Transport, Vantage
from cancelwire.model.events import Origin
from cancelwire.rebuild.pending import SessionState
from cancelwire.reports.formats import FORMATS
from fuzzing import ROOT

BAD = ROOT / "tests/fixtures/handwritten-tools-list-wrong-types.jsonl"
GOOD = ROOT / "sample_captures/stdio/handwritten-server-late-result-after-cancel.jsonl"

BAD_FINDINGS = [
    ("invalid-jsonrpc-message", "error", None, [6, 8, 10, 12]),
    ("response-after-cancel", "warning", 6, [14, 15]),
]
BAD_OUTCOMES = [(6, "tools/call", "slow", "late-result-violation", "inferred")]
GOOD_FINDINGS = [
    ("response-after-cancel", "warning", 2, [7, 10]),
    ("progress-after-cancel", "warning", 2, [7, 8, 9]),
]
GOOD_OUTCOMES = [(2, "tools/call", "slow_write", "late-result-violation", "inferred")]


def _report(argv: list[str], out: Path) -> tuple[int, dict[str, Any]]:
    status = cli.main([*argv, "--format", "json", "-o", str(out), "--isolated", "-q"])
    return status, json.loads(out.read_text())


def _of(doc: dict[str, Any], name: str) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The findings and cancelled calls of the input named NAME, as (rule, severity, id, lines) and outcomes."""
    findings = [
        (f["rule"], f["severity"], f["request_id"], [e["line"] for e in f["evidence"]])
        for f in doc["findings"]
        if Path(f["session"]).name == name
    ]
    calls = [
        (c["request_id"], c["method"], c["tool"], c["outcome"], c["certainty"])
        for c in doc["cancellations"]
        if Path(c["session"]).name == name
    ]
    return findings, calls


def test_the_bad_results_are_one_invalid_message_and_the_call_is_judged(tmp_path: Path) -> None:
    status, doc = _report(["audit", str(BAD)], tmp_path / "r.json")
    assert status == 1  # the CW302 error; never 3
    assert _of(doc, BAD.name) == (BAD_FINDINGS, BAD_OUTCOMES)
    (invalid,) = (f for f in doc["findings"] if f["rule"] == "invalid-jsonrpc-message")
    assert invalid["message"] == (
        "an invalid JSON-RPC message: the tools/list result's tools is a number, not an array (and 3 more like it)"
    )


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_folder_run_audits_the_other_inputs_as_usual(tmp_path: Path, jobs: str) -> None:
    folder = tmp_path / "inputs"
    folder.mkdir()
    shutil.copy(BAD, folder / "a-bad.jsonl")
    shutil.copy(GOOD, folder / "b-good.jsonl")
    status, doc = _report(["audit", str(folder), "--jobs", jobs], tmp_path / "r.json")
    assert status == 1
    assert [(Path(i["path"]).name, i["error"]) for i in doc["inputs"]] == [
        ("a-bad.jsonl", None),
        ("b-good.jsonl", None),
    ]
    assert _of(doc, "a-bad.jsonl") == (BAD_FINDINGS, BAD_OUTCOMES)
    assert _of(doc, "b-good.jsonl") == (GOOD_FINDINGS, GOOD_OUTCOMES)


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_every_format_is_written(tmp_path: Path, fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / f"report.{fmt}"
    assert cli.main(["audit", str(BAD), "--format", fmt, "-o", str(out), "--isolated", "-q"]) == 1
    assert out.stat().st_size > 0
    assert "internal error" not in capsys.readouterr().err


@pytest.mark.parametrize(
    ("tools", "problem"),
    [
        (5, "the tools/list result's tools is a number, not an array"),
        (True, "the tools/list result's tools is true, not an array"),
        (1e308, "the tools/list result's tools is a number, not an array"),
        (None, "the tools/list result's tools is null, not an array"),
        ("slow", "the tools/list result's tools is a string, not an array"),
        ({"name": "slow"}, "the tools/list result's tools is an object, not an array"),
        ([[{"name": "slow"}]], "1 of the 1 tools of a tools/list result are not objects with a string name"),
        (
            [5, "x", {"name": 3, "annotations": 7}, {"name": "slow", "annotations": 7}],
            "3 of the 4 tools of a tools/list result are not objects with a string name",
        ),
        ([], None),
        ([{"name": "slow", "annotations": [True]}], None),
    ],
)
def test_learn_treats_a_wrong_typed_member_as_absent(tools: object, problem: str | None) -> None:
    start = SessionStart(
        seq=0,
        ts=None,
        origin=Origin("x", 1, None),
        session_key="x",
        transport=Transport.STDIO,
        vantage=Vantage.PROXY,
        input_format="cancelwire-transcript",
    )
    session = SessionState(start)
    assert session.learn("tools/list", {"tools": tools}) == problem
    named = isinstance(tools, list) and any(isinstance(t, dict) and t.get("name") == "slow" for t in tools)
    assert session.tool_effects == ({"slow": ToolEffect.UNKNOWN} if named else {})
    assert session.learn("tools/list", {}) is None  # absent: nothing learnt, nothing wrong said
