"""Recorded text that other programs act on (issue 19): GitHub Actions workflow commands in the runner's
legacy form `##[name]data`, acted on anywhere in an output line, and `::name::data` at a line's start;
SARIF's embedded links `[text](uri)` and placeholders `{0}` in `message.text`.

The recording is `tests/fixtures/hostile/runner-commands.jsonl` (its README says what it holds). Every
output a CI step may print is asserted exactly where the strings land, and as a whole: no line of stdout
or stderr holds a raw `##[` or starts with a command.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from fuzzing import ROOT, run_cli

RECORDING = ROOT / "tests" / "fixtures" / "hostile" / "runner-commands.jsonl"
#: A line the GitHub runner would take as a workflow command (ActionCommand.TryParseV2 / TryParse).
RUNNER_COMMAND = re.compile(r"##\[|^\s*::[^:]*::")
TAIL = "1.000 s after the cancel, once the cancel had reached it [inferred]"


def _audit(*argv: str) -> tuple[str, str]:
    run = run_cli(["audit", *argv, "--color", "never"])
    assert run.status == 0, run
    return run.stdout, run.stderr


def _no_command_in(text: str) -> None:
    assert not [line for line in text.splitlines() if "##[" in line], text


@pytest.fixture
def recording(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    shutil.copy(RECORDING, tmp_path / "hostile.jsonl")
    return tmp_path


def test_the_text_report_breaks_every_recorded_command(recording: Path) -> None:
    out, err = _audit("hostile.jsonl")
    lines = out.splitlines()
    assert lines[1:12] == [
        f"  hostile.jsonl:5  warning  CW101 response-after-cancel  server answered tools/call (id 2) {TAIL}",
        "      evidence: hostile.jsonl:4, hostile.jsonl:5",
        "  hostile.jsonl:9  warning  CW101 response-after-cancel  server answered #\\x23[stop-commands]tok "
        f"(id 3) {TAIL}",
        "      evidence: hostile.jsonl:8, hostile.jsonl:9",
        "  hostile.jsonl:12  warning  CW101 response-after-cancel  server answered [click](https://evil) {0} "
        f"(id 4) {TAIL}",
        "      evidence: hostile.jsonl:11, hostile.jsonl:12",
        "",
        "Cancelled calls: 3 late-result-violation",
        "  hostile.jsonl:4  id 2 tools/call #\\x23[add-mask]secret  by notification  -> late-result-violation "
        "[inferred]",
        "      the reply left after the cancel reached the receiver",
        "  hostile.jsonl:8  id 3 #\\x23[stop-commands]tok  by notification  -> late-result-violation [inferred]",
    ]
    assert err == ""
    _no_command_in(out)


def test_an_input_named_as_a_command_starts_no_line_as_one(recording: Path) -> None:
    (recording / "hostile.jsonl").rename(recording / "::error::x.jsonl")
    out, _ = _audit("::error::x.jsonl")
    assert out.splitlines()[1] == (
        f"  :\\x3aerror::x.jsonl:5  warning  CW101 response-after-cancel  server answered tools/call (id 2) {TAIL}"
    )
    assert not [line for line in out.splitlines() if RUNNER_COMMAND.search(line)]
    github, _ = _audit("::error::x.jsonl", "--format", "github")
    assert github.splitlines()[0].startswith("::warning file=%3A%3Aerror%3A%3Ax.jsonl,line=5,")  # the path exact


def test_github_annotations_carry_no_second_command(recording: Path) -> None:
    out, err = _audit("hostile.jsonl", "--format", "github")
    assert out.splitlines() == [
        "::warning file=hostile.jsonl,line=5,title=CW101 response-after-cancel::server answered tools/call "
        f"(id 2) {TAIL}",
        "::warning file=hostile.jsonl,line=9,title=CW101 response-after-cancel::server answered "
        f"#\\x23[stop-commands]tok (id 3) {TAIL}",
        "::warning file=hostile.jsonl,line=12,title=CW101 response-after-cancel::server answered "
        f"[click](https://evil) {{0}} (id 4) {TAIL}",
        "::notice title=cancelwire::3 new issue(s) (fail-on error)",
    ]
    assert err == ""


def test_sarif_messages_hold_no_link_nor_placeholder_and_json_no_command(recording: Path) -> None:
    out, _ = _audit("hostile.jsonl", "--format", "sarif")
    _no_command_in(out)
    results = json.loads(out)["runs"][0]["results"]
    assert [r["message"]["text"] for r in results] == [
        f"server answered tools/call (id 2) {TAIL}",
        f"server answered ##\\[stop-commands\\]tok (id 3) {TAIL}",
        f"server answered \\[click\\](https://evil) {{{{0}}}} (id 4) {TAIL}",
    ]
    # properties are data, not messages: exact as recorded once the JSON is read
    assert [r["properties"]["method"] for r in results] == [
        "tools/call",
        "##[stop-commands]tok",
        "[click](https://evil) {0}",
    ]


def test_the_json_report_keeps_the_values_without_a_raw_command(recording: Path) -> None:
    out, _ = _audit("hostile.jsonl", "--format", "json")
    _no_command_in(out)
    assert '"tool": "#\\u0023[add-mask]secret"' in out
    report = json.loads(out)
    assert [(c["method"], c["tool"]) for c in report["cancellations"]] == [
        ("tools/call", "##[add-mask]secret"),
        ("##[stop-commands]tok", None),
        ("[click](https://evil) {0}", None),
    ]


def test_diff_and_stderr_break_commands_from_files(recording: Path) -> None:
    (recording / "##[error]bad.json").write_text("{}")
    run = run_cli(["diff", "##[error]bad.json", "##[error]bad.json"])
    assert (run.status, run.stdout) == (2, "")
    assert run.stderr.splitlines() == [
        "cancelwire: error: #\\x23[error]bad.json: not a cancelwire JSON report (no schema_version)",
        "  hint: use --format json",
    ]
    run = run_cli(["audit", "##[add-mask]gone.jsonl", "--format", "json"])
    assert run.status == 2
    assert run.stderr.splitlines()[0] == "cancelwire: error: #\\x23[add-mask]gone.jsonl: no such file or directory"

    _audit("hostile.jsonl", "--format", "json", "-o", "new.json")
    clean = RECORDING.read_text().splitlines()[:2]  # tools/list and its result: no finding
    (recording / "clean.jsonl").write_text("\n".join(clean) + "\n")
    _audit("clean.jsonl", "--format", "json", "-o", "old.json")
    run = run_cli(["diff", "old.json", "new.json", "--color", "never"])
    assert run.status == 1, run
    appeared = [line for line in run.stdout.splitlines() if line.startswith("  + ")]
    assert appeared[1:3] == [
        "  + hostile.jsonl:9  warning  CW101 response-after-cancel  server answered #\\x23[stop-commands]tok (id 3) "
        "1.000 s after the cancel, once the cancel had reached it [inferred]",
        "  + hostile.jsonl:12  warning  CW101 response-after-cancel  server answered [click](https://evil) {0} "
        "(id 4) 1.000 s after the cancel, once the cancel had reached it [inferred]",
    ]
    _no_command_in(run.stdout)
    json_diff = run_cli(["diff", "old.json", "new.json", "--format", "json"])
    _no_command_in(json_diff.stdout)
    assert "##[stop-commands]tok" in json.dumps(json.loads(json_diff.stdout))


@pytest.mark.parametrize("fmt", ["text", "md", "html", "junit", "json", "sarif", "github"])
def test_no_format_prints_a_raw_legacy_command(recording: Path, fmt: str) -> None:
    out, err = _audit("hostile.jsonl", "--format", fmt, "--verbose")
    _no_command_in(out + err)
