"""The whole command, in process, on mutated recordings: a documented exit status, never a traceback.

Exit statuses: 0 nothing at or above --fail-on, 1 findings, 2 usage or unreadable input; 3 (internal
error) and an escaping exception are bugs. The text report and stderr never carry a raw control byte.
"""

from __future__ import annotations

import json
import math

import pytest
from cancelwire.reports.formats import FORMATS as REPORT_FORMATS
from cancelwire.support.values import MAX_COUNT
from fuzzing import (
    RAW_CONTROL,
    ROOT,
    TEXT_READERS,
    CliRun,
    Mutated,
    fuzz_settings,
    mutated_samples,
    run_cli,
    timed,
    wrong_typed_steps,
)
from hypothesis import given
from hypothesis import strategies as st
from transcripts import write_transcript

FORMATS = list(REPORT_FORMATS)


def check_run(run: CliRun, *, text_output: bool) -> None:
    assert run.status in (0, 1, 2), run
    assert "Traceback" not in run.stderr, run.stderr
    assert not RAW_CONTROL.search(run.stderr), run.stderr
    if text_output:
        assert not RAW_CONTROL.search(run.stdout), [m.group() for m in RAW_CONTROL.finditer(run.stdout)][:5]


@pytest.mark.parametrize("reader", TEXT_READERS)
@fuzz_settings(25, slow_data=True)
@given(mutated=st.data(), fmt=st.sampled_from(FORMATS), forced=st.booleans())
def test_audit_of_a_mutated_recording(
    tmp_path_factory: pytest.TempPathFactory, reader: str, mutated: st.DataObject, fmt: str, forced: bool
) -> None:
    case: Mutated = mutated.draw(mutated_samples(reader), label="mutated")
    path = tmp_path_factory.mktemp("cli") / "input.log"
    path.write_bytes(case.data)
    argv = ["audit", str(path), "--format", fmt, *(["--input-format", reader] if forced else [])]
    check_run(run_cli(argv), text_output=fmt == "text")


@fuzz_settings(15)
@given(steps=wrong_typed_steps(), fmt=st.sampled_from(FORMATS), redact=st.booleans())
def test_audit_of_wrong_typed_members(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, object, float]], fmt: str, redact: bool
) -> None:
    """Known methods' results and params with members of the wrong type (`"tools": 5`, `"progress": true`,
    `"taskId": 1e308` ...), in a folder beside a good recording: exit 0 or 1, and the good one is reported."""
    folder = tmp_path_factory.mktemp("typed")
    write_transcript(folder / "a.jsonl", timed(steps))  # type: ignore[arg-type] # any JSON value as a message
    good = ROOT / "sample_captures/stdio/handwritten-server-late-result-after-cancel.jsonl"
    (folder / "b.jsonl").write_bytes(good.read_bytes())
    report = folder.parent / "report.json"
    argv = ["audit", str(folder), "--format", fmt, "--report", f"json={report}", "--isolated", "-q"]
    run = run_cli([*argv, *(["--redact"] if redact else [])])
    check_run(run, text_output=fmt == "text")
    assert run.status in (0, 1), run
    findings = json.loads(report.read_text())["findings"]
    good = [(f["rule"], f["request_id"]) for f in findings if f["session"].endswith("b.jsonl")]
    assert good == [("response-after-cancel", 2), ("progress-after-cancel", 2)]


@fuzz_settings(8, slow_data=True)
@given(mutated=mutated_samples("pcap", max_rounds=1))
def test_audit_of_a_mutated_capture(tmp_path_factory: pytest.TempPathFactory, mutated: Mutated) -> None:
    path = tmp_path_factory.mktemp("cli") / "input.pcapng"
    path.write_bytes(mutated.data)
    check_run(run_cli(["audit", str(path)]), text_output=True)


@fuzz_settings(6, slow_data=True)
@given(mutated=mutated_samples("pcap", max_rounds=1), number=st.integers(-5, 10**22) | st.integers(0, 40))
def test_frame_of_a_mutated_capture(tmp_path_factory: pytest.TempPathFactory, mutated: Mutated, number: int) -> None:
    path = tmp_path_factory.mktemp("cli") / "input.pcapng"
    path.write_bytes(mutated.data)
    check_run(run_cli(["frame", str(path), str(number)]), text_output=True)


NUMBERS = ["nan", "inf", "-inf", "-1", "0", "1e400", "9" * 400, "0.05", "3", "abc", "", "1_0", "0x10"]


@fuzz_settings(30)
@given(option=st.sampled_from(["--race-window", "--hold", "--max-open"]), value=st.sampled_from(NUMBERS))
def test_numeric_options_are_checked(option: str, value: str) -> None:
    """A value that is not a finite number in range is a usage error (exit 2), never a quiet default."""
    sample = str(ROOT / "sample_captures/stdio/handwritten-server-late-result-after-cancel.jsonl")
    run = run_cli(["audit", sample, option, value])
    check_run(run, text_output=True)
    try:
        number = int(value) if option == "--max-open" else float(value)
    except ValueError:
        number = None
    if option == "--max-open":
        valid = number is not None and 1 <= number <= MAX_COUNT
    else:
        valid = number is not None and math.isfinite(number) and number >= 0
    assert (run.status == 2) == (not valid), (option, value, run)
