"""The README's example runs print exactly what the tool prints today."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BLOCK = re.compile(r"```\n\$ cancelwire (.+?)\n(.*?)```", re.S)
EXAMPLES = BLOCK.findall(re.sub(r" \\\n\s+", " ", (ROOT / "README.md").read_text()))


def test_readme_starts_with_the_two_setup_commands() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    assert lines[:6] == [
        "# cancelwire",
        "",
        "```sh",
        "./scripts/install && .venv/bin/cancelwire audit sample_captures/",
        "./scripts/install --test && .venv/bin/python -m pytest",
        "```",
    ]
    assert "./scripts/install --test && .venv/bin/python -m pytest" in (ROOT / ".ci" / "run").read_text()


@pytest.mark.parametrize(("command", "shown"), EXAMPLES, ids=[c[:60] for c, _ in EXAMPLES])
def test_readme_example_output_is_current(command: str, shown: str) -> None:
    args = shlex.split(command)
    proc = subprocess.run(
        [sys.executable, "-m", "cancelwire", *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert _timeless(proc.stdout) == _timeless(shown)


def _timeless(text: str) -> str:
    """The report's generation time (in "How this report was made") differs on every run."""
    return re.sub(r"^(  cancelwire \S+, )\S+;", r"\1TIME;", text, flags=re.M)


def test_there_are_examples() -> None:
    assert len(EXAMPLES) >= 2


PYTHON_EXAMPLE = re.compile(r"## Python API\n.*?```python\n(.*?)```\n```\n(.*?)```", re.S)


def test_readme_python_example_prints_what_it_shows() -> None:
    match = PYTHON_EXAMPLE.search((ROOT / "README.md").read_text())
    assert match is not None
    code, shown = match.groups()
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.stderr == ""
    assert proc.stdout == shown
