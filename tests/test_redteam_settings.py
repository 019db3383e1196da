"""The settings file and the command line under attack, where earlier passes stopped: a wrong value is
named by file *and line* (it was file and key only), in a cancelwire.toml and in a pyproject.toml, in
`[gates]` and in the N-th `[[suppress]]`; and argparse's own messages quote what was typed inertly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from cancelwire.fleet import pool as fleet
from cancelwire.support.toml_lines import line_of

SCRIPT = Path(sys.executable).parent / "cancelwire"
SAMPLE = (
    Path(__file__).resolve().parent.parent / "sample_captures" / "stdio" / "handwritten-client-cancels-unknown-id.jsonl"
)

DOCUMENT = """# settings
race-window = 0.1

[verifying-reads]
"pay.out" = ["get_balance"]
'raw' = ["x"]

[[suppress]]
rule = "CW108"
reason = "first"

[[suppress]]
rule = "CW101"
  reason = "second"   # indented
[gates]
outcome-unverified = { nested = 1 }
a . "b c" = 2
"""


@pytest.mark.parametrize(
    ("key", "line"),
    [
        (("race-window",), 2),
        (("verifying-reads",), 4),
        (("verifying-reads", "pay.out"), 5),
        (("verifying-reads", "raw"), 6),
        (("suppress", 0), 8),
        (("suppress", 0, "reason"), 10),
        (("suppress", 1, "reason"), 14),
        (("suppress", 1, "tool"), 12),  # not written: the entry's header
        (("gates", "outcome-unverified", "nested"), 16),  # inside an inline table: its key's line
        (("gates", "a", "b c"), 17),
        (("hold",), None),
    ],
)
def test_the_line_of_a_key(key: tuple[str | int, ...], line: int | None) -> None:
    assert line_of(DOCUMENT, key) == line


@pytest.mark.parametrize("text", ["", "[", "[[", "= 1", 'a."unclosed = 1', "\x00\n[\ud800]", "[a]]]"])
def test_the_line_finder_never_raises(text: str) -> None:
    assert line_of(text, ("a", "b")) in (None, 1, 2)


def run(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SCRIPT, "audit", str(SAMPLE), *args], cwd=folder, capture_output=True, text=True, timeout=300
    )


@pytest.mark.parametrize(
    ("name", "text", "error"),
    [
        (
            "cancelwire.toml",
            "# team settings\n\n\n\nhold = -5\n",
            "5: hold: must be a finite number of seconds >= 0, not -5",
        ),
        (
            "cancelwire.toml",
            '[[suppress]]\nrule = "CW105"\nreason = "ok"\n\n[[suppress]]\nrule = "CW106"\nreason = "ok"\nwhy = "x"\n',
            "8: suppress #2: why: unknown key\n  hint: the keys are: rule, reason, server, tool, method, path",
        ),
        (
            "pyproject.toml",
            '[project]\nname = "x"\n\n[tool.cancelwire.gates]\noutcome-unverified = "fatal"\n',
            "5: tool.cancelwire.gates: outcome-unverified: must be one of error, warning, info, finding, off, "
            "not 'fatal'",
        ),
    ],
)
def test_a_wrong_value_is_named_by_file_and_line(tmp_path: Path, name: str, text: str, error: str) -> None:
    (tmp_path / name).write_text(text)
    proc = run(tmp_path)
    assert proc.returncode == 2, proc
    assert proc.stderr == f"cancelwire: error: {tmp_path / name}:{error}\n"
    assert proc.stdout == ""


def test_argparse_messages_show_what_was_typed_inertly(tmp_path: Path) -> None:
    """`unrecognized arguments: ...` printed the escape raw: a typed (or scripted) option could clear the screen."""
    proc = run(tmp_path, "--\x1b]0;pwn\x07\x1b[2J")
    assert proc.returncode == 2, proc
    assert proc.stderr.splitlines()[-1] == "cancelwire: error: unrecognized arguments: --\\x1b]0;pwn\\x07\\x1b[2J"


def test_jobs_never_start_more_than_four_workers_per_core(monkeypatch: pytest.MonkeyPatch) -> None:
    """`--jobs 20000` over 20,000 recordings started 20,000 processes; the reports are the same with fewer."""
    monkeypatch.setattr(fleet, "cores", lambda: 2)
    assert [fleet.workers(n, 20_000) for n in (1, 2, 8, 9, 20_000, 2**31 - 1)] == [1, 2, 8, 8, 8, 8]
    assert [fleet.workers(20_000, n) for n in (1, 3)] == [1, 3]
    assert fleet.workers(None, 20_000) == 2
