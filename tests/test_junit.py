"""`--format junit`: read back by a JUnit parser (junitparser) and valid against the JUnit schema of what
CI systems read (tests/schemas/junit.xsd, see tests/schemas/README.md)."""

from __future__ import annotations

import json
from pathlib import Path

import xmlschema
from junitparser import Error, Failure, JUnitXml, Skipped
from test_cli import ROOT, run

SCHEMA = xmlschema.XMLSchema(ROOT / "tests" / "schemas" / "junit.xsd")
UNKNOWN_ID = "sample_captures/stdio/handwritten-client-cancels-unknown-id.jsonl"
SLOW_TOOL = "sample_captures/stdio/sdk-cancel-slow-tool.jsonl"


def junit(tmp_path: Path, *args: str) -> tuple[int, JUnitXml]:
    out = tmp_path / "out.xml"
    proc = run("audit", *args, "--format", "junit", "-o", str(out))
    SCHEMA.validate(str(out))
    return proc.returncode, JUnitXml.fromfile(str(out))


def cases(xml: JUnitXml) -> dict[tuple[str, str], list[object]]:
    return {(case.classname, case.name): case.result for suite in xml for case in suite}


def test_one_case_per_session_and_rule_failures_carry_the_finding(tmp_path: Path) -> None:
    status, xml = junit(tmp_path, UNKNOWN_ID, SLOW_TOOL, "nope.jsonl", "--fail-on", "warning")
    assert status == 1
    results = cases(xml)
    unknown_id = UNKNOWN_ID.replace(".", "_")
    slow_tool = SLOW_TOOL.replace(".", "_")
    failed = {key for key, res in results.items() if any(isinstance(r, Failure) for r in res)}
    assert failed == {(unknown_id, "CW105 cancel-unknown-request"), (slow_tool, "outcome-unverified")}
    skipped = {key: res[0].message for key, res in results.items() if res and isinstance(res[0], Skipped)}
    # write-after-disconnect (in force in 2026-07-28 only) is no skip over stdio, which has no disconnect
    assert skipped == {
        (slow_tool, "CW104 cancel-of-initialize"): "not in force under 2026-07-28 over stdio",
        (slow_tool, "CW304 id-reused"): "not in force under 2026-07-28 over stdio",
        (slow_tool, "CW112 task-status-after-cancel"): "not in force under 2026-07-28 over stdio",
        (slow_tool, "CW113 tasks-cancel-final-not-rejected"): "not in force under 2026-07-28 over stdio",
        (slow_tool, "CW114 task-result-after-cancel"): "not in force under 2026-07-28 over stdio",
        (slow_tool, "CW115 tasks-cancel-not-marked-cancelled"): "not in force under 2026-07-28 over stdio",
        (slow_tool, "CW117 related-task-tag-missing"): "not in force under 2026-07-28 over stdio",
        (slow_tool, "CW118 related-task-tag-redundant"): "not in force under 2026-07-28 over stdio",
        (slow_tool, "CW119 related-task-tag-mismatch"): "not in force under 2026-07-28 over stdio",
    }
    errors = {key: res[0].message for key, res in results.items() if res and isinstance(res[0], Error)}
    assert errors == {("nope_jsonl", "read input"): "nope.jsonl: no such file or directory"}

    failure = results[(unknown_id, "CW105 cancel-unknown-request")][0]
    assert isinstance(failure, Failure)
    assert failure.type == "error"
    assert failure.message == "a cancel names no request of its sender: client cancelled id 99, never sent"
    assert failure.text.splitlines()[0] == (
        f"{UNKNOWN_ID}:7  error  CW105 cancel-unknown-request  "
        "a cancel names no request of its sender: client cancelled id 99, never sent [exact]"
    )
    unverified = results[(slow_tool, "outcome-unverified")][0]
    assert isinstance(unverified, Failure) and unverified.type == "warning"
    assert unverified.text.splitlines()[0] == (
        f"{SLOW_TOOL}:9  warning  outcome-unverified  cancelled tools/call append_ledger (id 3) by notification: "
        "no reply, 'append_ledger' has no annotations, and no later read checked what it did [exact]"
    )
    # below the gate: a passing test that still says what was seen
    by_name = {(c.classname, c.name): c for suite in xml for c in suite}
    info = by_name[(unknown_id, "CW106 cancel-after-completion")]
    assert info.is_passed and info.system_out.startswith(f"{UNKNOWN_ID}:8  info  CW106 cancel-after-completion")
    assert by_name[(unknown_id, "CW105 cancel-unknown-request")]._elem.get("line") == "7"

    rules = len(json.loads(run("audit", SLOW_TOOL, "--format", "json").stdout)["rules"])
    per_session = rules + 1  # every rule, and the one gated outcome class
    assert [(s.name, s.tests, s.failures, s.errors, s.skipped) for s in xml] == [
        ("nope.jsonl", 1, 0, 1, 0),
        (UNKNOWN_ID, per_session, 1, 0, 0),  # CW201 cannot apply over stdio: not "not in force"
        (SLOW_TOOL, per_session, 1, 0, 9),  # CW104, CW304, CW112-CW115, CW117-CW119 not in force in 2026-07-28
    ]
    assert (xml.tests, xml.failures, xml.errors) == (2 * per_session + 1, 2, 1)


def test_failures_follow_the_gate_and_a_clean_run_has_none(tmp_path: Path) -> None:
    status, xml = junit(tmp_path, SLOW_TOOL)  # outcome-unverified is a warning, the gate is error
    assert status == 0
    assert xml.failures == 0 and xml.errors == 0
    status, xml = junit(tmp_path, "sample_captures/stdio/sdk-clean-session.jsonl", "--fail-on", "info")
    assert status == 0
    assert all(case.is_passed for suite in xml for case in suite)  # CW201 cannot apply over stdio: no skip


def test_captures_name_the_frame_and_the_display_filter(tmp_path: Path) -> None:
    capture = "sample_captures/http/bad-server-writes-after-disconnect.pcapng"
    status, xml = junit(tmp_path, capture, "--select", "CW201")
    assert status == 1
    (suite,) = list(xml)
    (failed,) = [c for c in suite if not c.is_passed]
    assert failed.name == "CW201 write-after-disconnect"
    assert (
        failed.classname == "sample_captures/http/bad-server-writes-after-disconnect_pcapng#127_0_0_1->127_0_0_1:18105"
    )
    text = failed.result[0].text.splitlines()
    assert text[0].startswith(f"{capture}#20  error  CW201 write-after-disconnect  the server kept writing")
    assert text[1] == "    evidence: " + ", ".join(f"{capture}#{n}" for n in (12, 14, 16, 18, 20))
    assert text[2] == "    wireshark: frame.number in {12, 14, 16, 18, 20}"


def test_recorded_text_cannot_break_the_xml(tmp_path: Path) -> None:
    hostile = tmp_path / "hostile.jsonl"
    line = 'boom \x00\x1b[31m ]]> <x a="1"> & </failure>'
    header = json.dumps({"cancelwire_transcript": 1, "transport": "stdio", "vantage": "proxy"})
    hostile.write_text(header + "\n" + json.dumps({"ts": 1.0, "dir": "s2c", "line": line}) + "\n")
    status, xml = junit(tmp_path, str(hostile))
    assert status == 1
    (failed,) = [c for suite in xml for c in suite if not c.is_passed]
    assert failed.result[0].message == (
        "a line on the stdio channel is not a JSON-RPC message: not JSON: "
        "'boom \\x00\\x1b[31m ]]> <x a=\"1\"> & </failure>'"
    )
