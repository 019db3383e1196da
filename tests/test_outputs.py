"""Outputs never destroy evidence and never leave half a file: `-o` and `--exchanges` equal to an input
are refused before anything is written, and a failed write leaves the old file (or nothing)."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cancelwire.cli import main as cli

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = Path(sys.executable).parent / "cancelwire"
SAMPLE = ROOT / "sample_captures" / "stdio" / "handwritten-client-cancels-unknown-id.jsonl"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SCRIPT, *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


@pytest.fixture
def evidence(tmp_path: Path) -> Path:
    copy = tmp_path / "rec" / "session.jsonl"
    copy.parent.mkdir()
    copy.write_bytes(SAMPLE.read_bytes())
    return copy


def _refused(proc: subprocess.CompletedProcess[str], evidence: Path) -> None:
    assert proc.returncode == 2
    assert "would overwrite an input" in proc.stderr.splitlines()[0]
    assert proc.stderr.splitlines()[1] == (
        "  hint: write the output somewhere else; cancelwire never overwrites what it audits"
    )
    assert evidence.read_bytes() == SAMPLE.read_bytes()
    assert sorted(p.name for p in evidence.parent.iterdir()) == ["session.jsonl"]


def test_report_over_the_input_is_refused(evidence: Path) -> None:
    proc = run("audit", str(evidence), "-o", str(evidence))
    _refused(proc, evidence)
    assert proc.stderr.splitlines()[0] == (f"cancelwire: error: {evidence}: -o would overwrite an input ({evidence})")


def test_report_over_a_file_found_in_an_input_folder_is_refused(evidence: Path) -> None:
    proc = run("audit", str(evidence.parent), "-o", str(evidence))
    _refused(proc, evidence)
    assert f"({evidence}, found in {evidence.parent})" in proc.stderr


def test_report_through_a_symlink_or_hard_link_to_the_input_is_refused(evidence: Path, tmp_path: Path) -> None:
    link = tmp_path / "link.json"
    link.symlink_to(evidence)
    _refused(run("audit", str(evidence), "-o", str(link)), evidence)
    hard = tmp_path / "hard.json"
    os.link(evidence, hard)
    _refused(run("audit", str(evidence.parent), "-o", str(hard)), evidence)
    spelled = evidence.parent / ".." / "rec" / "session.jsonl"
    _refused(run("audit", str(evidence), "--format", "json", "-o", str(spelled)), evidence)


def test_exchanges_over_the_input_is_refused(tmp_path: Path) -> None:
    named = tmp_path / "session.csv"  # an input may have any name
    named.write_bytes(SAMPLE.read_bytes())
    proc = run("audit", str(named), "--exchanges", str(named))
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"cancelwire: error: {named}: --exchanges would overwrite an input ({named})")
    assert named.read_bytes() == SAMPLE.read_bytes()


def test_report_and_table_on_the_same_file_are_refused(tmp_path: Path) -> None:
    out = tmp_path / "out.csv"
    out.write_text("old")
    proc = run("audit", str(SAMPLE), "-o", str(out), "--exchanges", str(out))
    assert proc.returncode == 2
    assert proc.stderr == f"cancelwire: error: {out}: --exchanges and -o name the same file\n"
    assert out.read_text() == "old"


def test_report_replaces_an_old_one_whole(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    out.write_text("old report")
    out.chmod(0o640)
    proc = run("audit", str(SAMPLE), "--format", "json", "-o", str(out))
    assert proc.returncode == 1
    assert out.read_text().startswith("{\n")
    assert oct(out.stat().st_mode & 0o777) == "0o640"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


def test_unwritable_place_fails_before_the_audit(tmp_path: Path) -> None:
    out = tmp_path / "no-such-folder" / "r.json"
    proc = run("audit", str(SAMPLE), "-o", str(out))
    assert proc.returncode == 2
    assert proc.stderr == f"cancelwire: error: {out}: cannot write the -o output: No such file or directory\n"
    table = tmp_path / "file" / "x.csv"
    (tmp_path / "file").write_text("")
    proc = run("audit", str(SAMPLE), "--exchanges", str(table))
    assert proc.returncode == 2
    assert proc.stderr == f"cancelwire: error: {table}: cannot write the --exchanges output: Not a directory\n"


def test_full_device_is_a_clear_error(tmp_path: Path) -> None:
    proc = run("audit", str(SAMPLE), "-o", "/dev/full")
    assert proc.returncode == 2
    assert proc.stderr == "cancelwire: error: /dev/full: cannot write the -o output: No space left on device\n"
    full = tmp_path / "full.csv"
    full.symlink_to("/dev/full")
    proc = run("audit", str(SAMPLE), "--exchanges", str(full))
    assert proc.returncode == 2
    assert proc.stderr == f"cancelwire: error: {full}: cannot write the --exchanges output: No space left on device\n"


def _disk_fills(*args: Any, **kwargs: Any) -> None:
    out = args[2]
    out.write("{\n  half a report")
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_full_disk_leaves_the_old_report_and_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.md"
    out.write_text("old report")
    monkeypatch.setattr(cli, "write", _disk_fills)
    assert cli.main(["audit", str(SAMPLE), "--format", "md", "-o", str(out)]) == 2
    assert capsys.readouterr().err == f"cancelwire: error: {out}: cannot write the -o output: No space left on device\n"
    assert out.read_text() == "old report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.md"]


def test_a_full_disk_while_writing_exchanges_leaves_no_half_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from cancelwire.tables import exchanges as tables

    def fills(self: Any, row: Any) -> None:
        Path(self.path).write_text("method,outcome\nhalf")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(tables.ExchangeWriter, "add", fills)
    table = tmp_path / "x.csv"
    report_file = tmp_path / "r.txt"
    assert cli.main(["audit", str(SAMPLE), "--exchanges", str(table), "-o", str(report_file)]) == 2
    err = capsys.readouterr().err
    assert err == f"cancelwire: error: {table}: cannot write the --exchanges output: No space left on device\n"
    assert list(tmp_path.iterdir()) == []


def test_report_to_stdout_still_works(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["audit", str(SAMPLE), "--format", "json"]) == 1
    assert capsys.readouterr().out.startswith("{\n")


def test_a_directory_as_output_fails_before_the_audit(tmp_path: Path) -> None:
    proc = run("audit", str(SAMPLE), "-o", str(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr == f"cancelwire: error: {tmp_path}: cannot write the -o output: it is a directory\n"
