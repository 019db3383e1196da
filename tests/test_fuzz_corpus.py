"""Replays tests/corpus/: inputs that once crashed, hung, injected or lost data, each with what it must do now.

Each `<name>.expect.toml` beside its input (see tests/corpus/README.md) names the command, the exit
status, the findings the report must hold (or be the same as an undamaged recording's), and text that
must be in stderr. Every run also holds to the fuzzers' rules: no traceback, no raw control byte in the
text report or on stderr. tests/corpus/pending/ holds reproducers whose fix has not landed; it is replayed only with
CANCELWIRE_CORPUS_PENDING=1.
"""

from __future__ import annotations

import json
import os
import shutil
import tomllib
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from fuzzing import RAW_CONTROL, ROOT, CliRun, run_cli

CORPUS = Path(__file__).parent / "corpus"
PENDING = bool(os.environ.get("CANCELWIRE_CORPUS_PENDING"))
"""Set to replay tests/corpus/pending/ too (to see which fixes have landed)."""
EXPECTS = sorted(p for p in CORPUS.rglob("*.expect.toml") if PENDING or "pending" not in p.relative_to(CORPUS).parts)
KEYS = {"why", "owner", "command", "args", "exit", "findings", "same_findings_as", "stderr", "input_name"}


def _input_of(expect: Path) -> Path:
    stem = expect.name.removesuffix(".expect.toml")
    (found,) = [p for p in expect.parent.iterdir() if p.name.startswith(stem + ".") and p != expect]
    return found


def _findings(report: str) -> Counter[tuple[str, str]]:
    return Counter((f["rule"], str(f["request_id"])) for f in json.loads(report)["findings"])


def _check(run: CliRun) -> None:
    assert "Traceback" not in run.stderr, run.stderr
    assert not RAW_CONTROL.search(run.stderr), run.stderr
    assert run.status in (0, 1, 2), run


def _argv(spec: dict[str, Any], path: Path, folder: Path) -> tuple[list[str], Path]:
    """The command line, and the folder to run it in (a settings file there is found by walking up)."""
    command = spec.get("command", "audit")
    args = [str(a) for a in spec.get("args", [])]
    if command == "settings":  # the input is a cancelwire.toml; audit a clean recording under it
        shutil.copyfile(path, folder / "cancelwire.toml")
        return ["audit", str(ROOT / "sample_captures/stdio/sdk-clean-session.jsonl"), *args], folder
    if command == "rules":  # the input is a rule file in a --rules folder
        rules = folder / "rules"
        rules.mkdir()
        shutil.copyfile(path, rules / spec.get("input_name", path.name))
        return ["rules", "--rules", str(rules), *args], folder
    if command == "frame":
        return ["frame", str(path), *args], folder
    assert command == "audit", command
    return ["audit", str(path), *args], folder


@pytest.mark.parametrize("expect", EXPECTS, ids=lambda p: str(p.relative_to(CORPUS)))
def test_corpus_input(expect: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = tomllib.loads(expect.read_text())
    assert set(spec) <= KEYS and {"why", "owner", "exit"} <= set(spec), set(spec) ^ KEYS
    argv, folder = _argv(spec, _input_of(expect), tmp_path)
    monkeypatch.chdir(folder)
    run = run_cli(argv)
    _check(run)
    if argv[0] == "audit" and "--format" not in argv:
        assert not RAW_CONTROL.search(run.stdout), [m.group() for m in RAW_CONTROL.finditer(run.stdout)][:5]
    assert run.status == spec["exit"], run
    if "stderr" in spec:
        assert spec["stderr"] in run.stderr, run.stderr
    if "findings" in spec or "same_findings_as" in spec:
        as_json = run_cli([*argv, "--format", "json"])
        _check(as_json)
        got = _findings(as_json.stdout)
        assert {rule for rule, _ in got} >= set(spec.get("findings", [])), got
        if "same_findings_as" in spec:
            original = run_cli(["audit", str(ROOT / spec["same_findings_as"]), "--format", "json", *argv[2:]])
            assert got == _findings(original.stdout)
