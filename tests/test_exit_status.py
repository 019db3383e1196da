"""Exit statuses a CI job can tell apart, through the real console script: 0 pass, 1 findings, 2 usage
or input, 3 a bug in cancelwire, 130 Ctrl-C, 143 SIGTERM (after cleaning up)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from cancelwire.cli import audit_run
from cancelwire.cli import main as cli

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = Path(sys.executable).parent / "cancelwire"
CLEAN = str(ROOT / "sample_captures" / "stdio" / "sdk-clean-session.jsonl")
BAD = str(ROOT / "sample_captures" / "stdio" / "handwritten-client-cancels-unknown-id.jsonl")


def run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SCRIPT, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_pass_findings_and_usage_statuses() -> None:
    assert run("audit", CLEAN).returncode == 0
    assert run("audit", BAD).returncode == 1
    usage = run("audit", CLEAN, "--fail-on", "sometimes")
    assert usage.returncode == 2 and "invalid choice: 'sometimes'" in usage.stderr


def test_empty_folder_exits_2_and_says_so(tmp_path: Path) -> None:
    proc = run("audit", str(tmp_path), "-o", str(tmp_path.parent / f"{tmp_path.name}.txt"))
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        f"cancelwire: error: {tmp_path}: the folder holds no file to read",
        "  hint: hidden files and folders (names starting with '.') are skipped",
        "cancelwire: error: nothing could be read: none of the 1 input(s) was readable",
    ]


def test_folder_of_unreadable_formats_exits_2_and_says_so(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello\n")
    proc = run("audit", str(tmp_path), "--format", "json")
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        f"cancelwire: error: nothing could be read: the 1 file(s) found in {tmp_path} are not in a format "
        "cancelwire reads",
        "  hint: --input-format NAME reads them as one",
    ]


def _boom(*args: object, **kwargs: object) -> None:
    raise ZeroDivisionError("bad \x1b[2J luck\nFindings: 0 error(s)")


def test_internal_error_is_status_3_with_one_inert_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(audit_run, "audit", _boom)
    assert cli.main(["audit", CLEAN]) == 3
    err = capsys.readouterr().err
    assert err == (
        "cancelwire: internal error (a bug in cancelwire 0.1.0): ZeroDivisionError: bad \\x1b[2J luck\\n"
        "Findings: 0 error(s); please report it with this line and the command: "
        f"cancelwire audit {CLEAN} (--debug shows the traceback)\n"
    )


def test_internal_error_with_debug_shows_the_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(audit_run, "audit", _boom)
    assert cli.main(["audit", CLEAN, "--debug"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):\n")
    assert err.splitlines()[-1].startswith("cancelwire: internal error (a bug in cancelwire 0.1.0): ZeroDivisionError")


def test_internal_error_through_the_interpreter_exits_3_without_traceback() -> None:
    """The whole way out (SystemExit from __main__-style code), in a real process."""
    code = (
        "import sys, cancelwire.cli.main as c, cancelwire.cli.audit_run as r\n"
        "def boom(*a, **k): raise KeyError('x')\n"
        "r.audit = boom\n"
        f"raise SystemExit(c.main(['audit', {CLEAN!r}]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("cancelwire: internal error (a bug in cancelwire 0.1.0): KeyError: 'x';")


def _blocked_on_stdin(tmp_path: Path) -> subprocess.Popen[str]:
    """An audit of standard input that waits for it, with its report's temp file already made."""
    proc = subprocess.Popen(
        [SCRIPT, "audit", "-", "-o", str(tmp_path / "report.json")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120  # a condition to wait for, not a timing assertion
    while not any(tmp_path.iterdir()) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert [p.name.startswith(".report.json.") for p in tmp_path.iterdir()] == [True]
    return proc


@pytest.mark.parametrize(
    ("signum", "status", "line"),
    [
        (signal.SIGTERM, 143, "cancelwire: terminated (SIGTERM); nothing was left half-written"),
        (signal.SIGINT, 130, "cancelwire: interrupted"),
    ],
)
def test_signals_exit_with_their_status_after_cleaning_up(
    tmp_path: Path, signum: signal.Signals, status: int, line: str
) -> None:
    proc = _blocked_on_stdin(tmp_path)
    proc.send_signal(signum)
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == status
    assert err == line + "\n"  # no traceback
    assert list(tmp_path.iterdir()) == []  # neither the report nor its temp file


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--race-window", "nan"], "argument --race-window: must be a finite number of seconds >= 0, not nan"),
        (["--race-window", "inf"], "argument --race-window: must be a finite number of seconds >= 0, not inf"),
        (["--race-window", "1e999"], "argument --race-window: must be a finite number of seconds >= 0, not inf"),
        (["--race-window", "-0.5"], "argument --race-window: must be a finite number of seconds >= 0, not -0.5"),
        (["--hold", "-1"], "argument --hold: must be a finite number of seconds >= 0, not -1.0"),
        (["--hold", "soon"], "argument --hold: not a number of seconds: 'soon'"),
        (["--max-open", "0"], "argument --max-open: must be at least 1, not 0"),
        (["--max-open", "2.5"], "argument --max-open: not a whole number: '2.5'"),
        (["--http-port", "70000"], "argument --http-port: a TCP port runs from 1 to 65535, not 70000"),
        (["--protocol", "1999-01-01"], "argument --protocol: unknown revision '1999-01-01'"),
    ],
)
def test_bad_numbers_on_the_command_line_are_usage_errors(args: list[str], message: str) -> None:
    proc = run("audit", CLEAN, *args)
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[-1].startswith(f"cancelwire audit: error: {message}")


@pytest.mark.parametrize("number", ["99999999999999999999", "-1", "0", "4294967296", "x"])
def test_frame_numbers_out_of_range_are_usage_errors(number: str) -> None:
    proc = run("frame", "sample_captures/http/bad-server-writes-after-disconnect.pcapng", number)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    last = proc.stderr.splitlines()[-1]
    assert last.startswith("cancelwire frame: error: argument N: ")
    assert last.endswith(f"a frame number runs from 1 to 4294967295, not {number}") or "not a whole number" in last


def test_frame_output_is_inert(tmp_path: Path) -> None:
    assert cli._inert_lines("Layer HTTP\n\tUser-Agent: \x1b]0;owned\x07x") == (
        "Layer HTTP\n    User-Agent: \\x1b]0;owned\\x07x\n"
    )


def test_errors_on_stderr_are_inert(tmp_path: Path) -> None:
    hostile = tmp_path / "a\x1b[2Jb.jsonl"
    proc = run("audit", str(hostile))
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[0] == f"cancelwire: error: {tmp_path}/a\\x1b[2Jb.jsonl: no such file or directory"
    assert "\x1b" not in proc.stderr


def test_sigterm_handler_is_restored_after_main(monkeypatch: pytest.MonkeyPatch) -> None:
    before = signal.getsignal(signal.SIGTERM)
    assert cli.main(["rules"]) == 0
    assert signal.getsignal(signal.SIGTERM) is before
    assert os.getpid()  # the test process itself was never signalled


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no")


def test_internal_error_message_is_bounded_and_survives_a_broken_str(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def huge(*args: object, **kwargs: object) -> None:
        raise ValueError("x" * 100_000)

    monkeypatch.setattr(audit_run, "audit", huge)
    assert cli.main(["--debug", "audit", CLEAN]) == 3  # --debug before the command works too
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.startswith(f"cancelwire: internal error (a bug in cancelwire 0.1.0): ValueError: {'x' * 500}…;")

    def unprintable(*args: object, **kwargs: object) -> None:
        raise _Unprintable

    monkeypatch.setattr(audit_run, "audit", unprintable)
    assert cli.main(["audit", CLEAN]) == 3
    assert "_Unprintable: (message not printable); please report it" in capsys.readouterr().err


def test_explain_of_a_user_rule_is_inert(tmp_path: Path) -> None:
    source = next((ROOT / "rules").glob("CW101-*.toml")).read_text()
    text = (
        source.replace('id = "CW101"', 'id = "ACME101"')
        .replace('slug = "response-after-cancel"', 'slug = "acme-x"')
        .replace('summary = "', 'summary = "\\u001b]0;owned\\u0007')
    )
    (tmp_path / "ACME101-acme-x.toml").write_text(text)
    proc = run("explain", "ACME101", "--rules", str(tmp_path))
    assert proc.returncode == 0
    assert proc.stdout.splitlines()[1].startswith("\\x1b]0;owned\\x07The receiver sent the result")


def test_a_signal_just_after_the_temp_file_is_made_does_not_leak_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The worst moment: the temp file exists but has no name yet in cancelwire's hands."""
    import tempfile

    real = tempfile.mkstemp

    def made_then_terminated(*args: Any, **kwargs: Any) -> tuple[int, str]:
        made = real(*args, **kwargs)
        # raise_signal sends it to this thread (os.kill may deliver a process signal to another thread, so
        # the handler could run later than this moment under load); main's handler: no real termination
        signal.raise_signal(signal.SIGTERM)
        return made

    monkeypatch.setattr(tempfile, "mkstemp", made_then_terminated)
    assert cli.main(["audit", CLEAN, "-o", str(tmp_path / "r.txt")]) == 143
    assert capsys.readouterr().err == "cancelwire: terminated (SIGTERM); nothing was left half-written\n"
    assert list(tmp_path.iterdir()) == []
