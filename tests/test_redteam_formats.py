"""Recorded strings built to attack each output format, in the places earlier passes did not reach: a
recording's file name with a newline, an escape and a bidi override (JUnit's suite, case and file
attributes), and a tool name with them (the HTML report's latency chart, whose tooltips and `<desc>`
carried them raw). Exact values asserted; the recording is written by `hostile_recording`."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

SCRIPT = Path(sys.executable).parent / "cancelwire"
#: Control, C1, bidi, zero-width, separators and lone surrogates: never raw in a report a person reads.
RAW = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ud800-\udfff]"
)
TOOL = "pay\x1b]0;pwn\x07\u202egnp.exe\x85"
TOOL_SHOWN = "pay\\x1b]0;pwn\\x07\\u202egnp.exe\\x85"
NAME = "run\n::error::x \x1b[31m\u202e.jsonl"
NAME_SHOWN = "run\\n::error::x \\x1b[31m\\u202e.jsonl"


def hostile_recording(folder: Path) -> Path:
    """A transcript whose file name and tool name attack the reader; its tool is cancelled and answered late."""
    messages = [
        ("c2s", {"id": 1, "method": "tools/list"}),
        ("s2c", {"id": 1, "result": {"tools": [{"name": TOOL, "inputSchema": {"type": "object"}}]}}),
        ("c2s", {"id": 2, "method": "tools/call", "params": {"name": TOOL, "arguments": {}}}),
        ("c2s", {"method": "notifications/cancelled", "params": {"requestId": 2, "reason": "user"}}),
        ("s2c", {"id": 2, "result": {"content": []}}),
    ]
    offsets = (0.0, 0.01, 2.0, 3.0, 4.0)  # tools/list answered at once: the race window stays the default
    path = folder / NAME
    with path.open("w", encoding="utf-8") as out:
        for offset, (direction, message) in zip(offsets, messages, strict=True):
            line = json.dumps({"jsonrpc": "2.0", **message})
            out.write(json.dumps({"ts": 1_700_000_000 + offset, "dir": direction, "line": line}) + "\n")
    return path


def audit(folder: Path, fmt: str) -> str:
    proc = subprocess.run(
        [SCRIPT, "audit", NAME, "--format", fmt, "--fail-on", "warning"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 1, proc
    assert not RAW.search(proc.stderr), proc.stderr
    return proc.stdout


def test_junit_names_and_bodies_show_recorded_controls_escaped(tmp_path: Path) -> None:
    hostile_recording(tmp_path)
    out = audit(tmp_path, "junit")
    assert not RAW.search(out)
    root = ET.fromstring(out)
    suite = root.find("testsuite")
    assert suite is not None
    assert (suite.get("name"), suite.get("file")) == (NAME_SHOWN, NAME_SHOWN)
    failed = [case for case in suite.iter("testcase") if case.find("failure") is not None]
    assert [(case.get("name"), case.get("file"), case.get("line")) for case in failed] == [
        ("CW101 response-after-cancel", NAME_SHOWN, "5")
    ]
    assert {case.get("classname") for case in suite.iter("testcase")} == {NAME_SHOWN.replace(".", "_")}


def test_the_html_latency_chart_shows_a_recorded_tool_name_escaped(tmp_path: Path) -> None:
    hostile_recording(tmp_path)
    out = audit(tmp_path, "html")
    assert not RAW.search(out)
    chart = out[out.index('aria-label="Latency by method and tool') :]
    desc = chart[chart.index("<desc>") + len("<desc>") : chart.index("</desc>")]
    assert f"tools/call {TOOL_SHOWN}: median" in desc
