"""Style and types are part of the suite, so the habits hold from the first commit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def test_ruff_is_clean() -> None:
    proc = subprocess.run(
        [BIN / "ruff", "check", "analyzer", "tests", "scripts"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_format_is_applied() -> None:
    proc = subprocess.run(
        [BIN / "ruff", "format", "--check", "analyzer", "tests", "scripts"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_strict_is_clean_on_the_package() -> None:
    proc = subprocess.run([BIN / "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_no_merge_conflict_markers_are_committed() -> None:
    """Text files only: a merge left half-resolved shows nowhere else (Markdown renders the markers)."""
    files = (
        subprocess.run(
            ["git", "ls-files", "-z", "--", "*.md", "*.py", "*.toml", "*.j2", "*.yml"],
            cwd=ROOT,
            capture_output=True,
            timeout=60,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    marked = [
        name
        for name in files
        if name and any(line.startswith(("<<<<<<< ", ">>>>>>> ")) for line in (ROOT / name).read_text().splitlines())
    ]
    assert marked == []


def test_model_records_are_immutable_to_the_type_checker(tmp_path: Path) -> None:
    """Records are not frozen at run time (speed), so mypy is what keeps them immutable: it must
    reject assigning a field, and accept building and replacing one. (`record` makes mypy say a field is
    read-only; the records compiled as native classes have `Final` fields, of which mypy says so.)"""
    snippet = tmp_path / "uses_model.py"
    snippet.write_text(
        "from dataclasses import replace\n"
        "from analyzer.model import Origin, TimelineEntry, EntryKind\n"
        "origin = Origin('f', line=1)\n"
        "entry = TimelineEntry(EntryKind.REQUEST, None, 1, None, origin)\n"
        "moved = replace(origin, line=2)\n"
        "origin.line = 3\n"
        "entry.seq = 4\n"
    )
    proc = subprocess.run(
        [BIN / "mypy", "--strict", str(snippet)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    errors = [line for line in proc.stdout.splitlines() if ": error:" in line]
    assert [line.split(":")[1] for line in errors] == ["6", "7"], proc.stdout
    assert all("read-only" in line or "Cannot assign to final attribute" in line for line in errors), proc.stdout
