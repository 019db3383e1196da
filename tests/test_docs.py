"""The README and the pages under docs/: every example run prints exactly what the tool prints today,
every relative link resolves, and every file path they name exists."""

from __future__ import annotations

import os
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
RAW_BLOCK = re.compile(r"(```\n\$ cancelwire ((?:[^\n]* \\\n)*[^\n]+)\n)(.*?)```", re.S)
CONTINUATION = re.compile(r" \\\n\s+")
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
        text = CONTINUATION.sub(" ", page.read_text())
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
    if os.environ.get("CANCELWIRE_UPDATE_GOLDEN") and _timeless(proc.stdout) != _timeless(shown):
        _rewrite_example(ROOT / page, command, proc.stdout)
        return
    assert _timeless(proc.stdout) == _timeless(shown), page


def _rewrite_example(page: Path, command: str, printed: str) -> None:
    """CANCELWIRE_UPDATE_GOLDEN=1: the page shows what the command prints today."""

    def current(block: re.Match[str]) -> str:
        if CONTINUATION.sub(" ", block.group(2)) != command:
            return block.group(0)
        return f"{block.group(1)}{printed}```"

    page.write_text(RAW_BLOCK.sub(current, page.read_text()))


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


LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def _anchors(path: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    anchors = set()
    for heading in re.findall(r"^#+ (.+)$", FENCE.sub("", path.read_text()), flags=re.M):
        anchors.add(re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-"))
    return anchors


def _links() -> list[tuple[str, str]]:
    found = []
    for page in PAGES:
        for target in LINK.findall(FENCE.sub("", page.read_text())):
            if not re.match(r"[a-z]+:", target):
                found.append((_name(page), target))
    return found


@pytest.mark.parametrize(("page", "target"), _links(), ids=[f"{p}:{t}" for p, t in _links()])
def test_relative_link_resolves(page: str, target: str) -> None:
    path, _, anchor = target.partition("#")
    resolved = (ROOT / page).parent / path if path else ROOT / page
    assert resolved.exists(), f"{page}: {target}"
    if anchor and resolved.suffix == ".md":
        assert anchor in _anchors(resolved), f"{page}: {target}"


PATH = re.compile(r"`((?:analyzer|scripts|tests|rules|sample_captures|templates|docs)/[\w./-]*)`")
GENERATED = ("tests/artifacts/",)


def test_every_path_the_pages_name_exists() -> None:
    missing = []
    for page in PAGES:
        for path in PATH.findall(page.read_text()):
            if path.startswith(GENERATED):
                continue
            if not (ROOT / path).exists() and not list(ROOT.glob(path + "*")):
                missing.append(f"{_name(page)}: {path}")
    assert missing == []


SAMPLE = "sample_captures/stdio/sdk-cancel-slow-tool.jsonl"  # one unverified cancel of append_ledger
SETTINGS = [
    (_name(page), block)
    for page in (DOCS / "settings.md", DOCS / "ci.md")
    for block in re.findall(r"```toml\n(.*?)```", page.read_text(), re.S)
]


@pytest.mark.parametrize(("page", "block"), SETTINGS, ids=[f"{p}:{b.split()[0]}" for p, b in SETTINGS])
def test_settings_example_loads_and_does_what_the_page_says(tmp_path: Path, page: str, block: str) -> None:
    """Each settings example is a valid settings file; the gate example fails the sample's unverified
    cancel at the default --fail-on, and the suppression example accepts it."""
    (tmp_path / "cancelwire.toml").write_text(block)
    proc = subprocess.run(
        [sys.executable, "-m", "cancelwire", "audit", SAMPLE, "--config", str(tmp_path / "cancelwire.toml")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.stderr == "", page
    assert proc.returncode == (1 if block.startswith("[gates]") else 0), proc.stdout
    if block.startswith("[[suppress]]"):
        assert "(gate: --fail-on error; 1 suppressed)" in proc.stdout


def test_contributing_rule_example_is_a_real_rule_file() -> None:
    match = re.search(r"\n   ```toml\n(.*?)   ```", (DOCS / "contributing.md").read_text(), re.S)
    assert match is not None
    shown = re.sub(r"^   ", "", match.group(1), flags=re.M)
    assert shown == (ROOT / "rules" / "CW306-null-id.toml").read_text()
