"""The README and the pages under docs/: every example run prints exactly what the tool prints today."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
BLOCK = re.compile(r"```\n\$ cancelwire (.+?)\n(.*?)```", re.S)
REQUIRED = (
    "getting-started",
    "command-line",
    "inputs",
    "captures",
    "har",
    "recording",
    "judging",
    "rules",
    "reports",
    "ci",
    "merge",
    "scale",
    "python-api",
    "settings",
    "contributing",
    "architecture",
)


def _name(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def _examples() -> list[tuple[str, str, str]]:
    found = []
    for page in PAGES:
        text = re.sub(r" \\\n\s+", " ", page.read_text())
        found += [(_name(page), command, shown) for command, shown in BLOCK.findall(text)]
    return found


EXAMPLES = _examples()


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


def test_readme_is_a_front_page() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.encode()) <= 10_240
    assert "](docs/images/" in readme  # the report's screenshot
    assert any(page == "README.md" for page, _, _ in EXAMPLES)


def test_every_page_exists_and_the_readme_links_each() -> None:
    readme = (ROOT / "README.md").read_text()
    assert sorted(REQUIRED) == sorted(set(REQUIRED) & {p.stem for p in DOCS.glob("*.md")})
    for page in DOCS.glob("*.md"):
        assert f"](docs/{page.name})" in readme, page.name


@pytest.mark.parametrize(
    ("page", "command", "shown"), EXAMPLES, ids=[f"{page}:{command[:50]}" for page, command, _ in EXAMPLES]
)
def test_example_output_is_current(page: str, command: str, shown: str) -> None:
    args = shlex.split(command)
    proc = subprocess.run(
        [sys.executable, "-m", "cancelwire", *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert _timeless(proc.stdout) == _timeless(shown), page


def _timeless(text: str) -> str:
    """The report's generation time (in "How this report was made") differs on every run."""
    return re.sub(r"^(  cancelwire \S+, )\S+;", r"\1TIME;", text, flags=re.M)


def test_there_are_examples() -> None:
    assert len(EXAMPLES) >= 5
    assert len({page for page, _, _ in EXAMPLES}) >= 4


PYTHON_EXAMPLE = re.compile(r"```python\n(import cancelwire\n.*?)```\n```\n(.*?)```", re.S)


def test_python_api_example_prints_what_it_shows() -> None:
    match = PYTHON_EXAMPLE.search((DOCS / "python-api.md").read_text())
    assert match is not None
    code, shown = match.groups()
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.stderr == ""
    assert proc.stdout == shown
