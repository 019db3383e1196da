"""The settings file is hostile like any input: every value checked, read bounded, never blocking, and
every problem a clear error naming the file and the key (exit 2), never a traceback or a hang."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cancelwire.config import Settings, find_settings, load_settings
from cancelwire.errors import ConfigError

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = Path(sys.executable).parent / "cancelwire"
SAMPLE = ROOT / "sample_captures" / "stdio" / "handwritten-client-cancels-unknown-id.jsonl"


def settings_error(folder: Path, text: str | bytes, name: str = "cancelwire.toml") -> str:
    path = folder / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    with pytest.raises(ConfigError) as caught:
        find_settings(folder)
    return str(caught.value).replace(str(path), "FILE")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("race-window = nan", "FILE:1: race-window: must be a finite number of seconds >= 0, not nan"),
        ("race-window = inf", "FILE:1: race-window: must be a finite number of seconds >= 0, not inf"),
        ("race-window = -0.1", "FILE:1: race-window: must be a finite number of seconds >= 0, not -0.1"),
        ('race-window = "0.1"', "FILE:1: race-window: must be a number of seconds, not '0.1'"),
        ("race-window = true", "FILE:1: race-window: must be a number of seconds, not True"),
        ("hold = -inf", "FILE:1: hold: must be a finite number of seconds >= 0, not -inf"),
        ("max-open = 0", "FILE:1: max-open: must be at least 1, not 0"),
        ("max-open = 2.5", "FILE:1: max-open: must be a whole number, not 2.5"),
        ('verifying-reads = "get_balance"', "FILE:1: verifying-reads: must be a table, not 'get_balance'"),
        ("disabled = []", "FILE:1: disabled: must be a table, not a list"),
        ("[verifying-reads]\nt = [1]", 'FILE:2: verifying-reads.t: must be a list of tool names or "resources/read"'),
        ('[verifying-reads]\n"a\\u001b[2J" = 3', "FILE:2: verifying-reads.'a\\x1b[2J': must be a list of tool names"),
        ("[disabled]\nCW101 = 1", "FILE:2: disabled.CW101: needs the reason it is off, as text"),
        ('[disabled]\nCW101 = " "', "FILE:2: disabled.CW101: needs the reason it is off, as text"),
        ("[disabled.CW101]\nwhy = 'x'", "FILE:1: disabled.CW101: needs the reason it is off, as text"),
        (
            "race_window = 0.1",
            "FILE:1: race_window: unknown setting\n  hint: the settings are: race-window, hold, max-open, "
            "verifying-reads, disabled",
        ),
    ],
)
def test_bad_values_name_file_line_and_key(tmp_path: Path, text: str, message: str) -> None:
    assert settings_error(tmp_path, text).startswith(message)


def test_deep_nesting_is_a_clear_error(tmp_path: Path) -> None:
    assert settings_error(tmp_path, "x = " + "[" * 50_000) == "FILE: the settings file is nested too deeply to read"
    tables = "".join(f"[{'a.' * n}a]\n" for n in range(0, 3000, 300))
    assert settings_error(tmp_path, tables) == "FILE:1: a: unknown setting\n  hint: the settings are: " + (
        "race-window, hold, max-open, verifying-reads, disabled, gates, suppress"
    )


def test_huge_file_and_huge_number_and_bad_encoding(tmp_path: Path) -> None:
    big = settings_error(tmp_path, "# " + "x" * (2 << 20))
    assert big == "FILE: the settings file is larger than 1024 KiB; that is not a settings file"
    digits = settings_error(tmp_path, "max-open = " + "9" * 5000)
    assert digits.startswith("FILE: not valid TOML: Exceeds the limit (4300 digits) for integer string conversion")
    huge = settings_error(tmp_path, "max-open = -" + "9" * 30)
    assert huge == "FILE:1: max-open: must be at least 1, not a number of 100 bits"
    assert settings_error(tmp_path, "max-open = " + "9" * 400) == (
        f"FILE:1: max-open: must be at most {2**31 - 1}, not a number of 1329 bits"
    )
    assert settings_error(tmp_path, "hold = " + "9" * 400) == (
        "FILE:1: hold: must be a finite number of seconds >= 0, not a number of 1329 bits"
    )
    assert settings_error(tmp_path, b"race-window = 0.1 # \xff") == "FILE: the settings file is not UTF-8 (byte 20)"


def test_special_files_are_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "cancelwire.toml")
    with pytest.raises(ConfigError, match=r"cancelwire.toml: the settings file is a FIFO; it must be a regular file"):
        find_settings(tmp_path / "deeper" / "still")
    os.unlink(tmp_path / "cancelwire.toml")
    (tmp_path / "cancelwire.toml").symlink_to("/dev/zero")
    with pytest.raises(ConfigError, match="the settings file is a character device"):
        find_settings(tmp_path)
    with pytest.raises(ConfigError, match="the settings file is a directory"):
        load_settings(tmp_path)


def test_a_fifo_in_the_walk_is_exit_2_not_a_hang(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pyproject.toml")
    proc = subprocess.run([SCRIPT, "audit", str(SAMPLE)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr == (
        f"cancelwire: error: {tmp_path}/pyproject.toml: the settings file is a FIFO; it must be a regular file\n"
    )
    isolated = subprocess.run(
        [SCRIPT, "audit", str(SAMPLE), "--isolated"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert isolated.returncode == 1


def test_config_option_names_the_file(tmp_path: Path) -> None:
    proc = subprocess.run(
        [SCRIPT, "audit", str(SAMPLE), "--config", "/dev/zero"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2
    assert (
        proc.stderr
        == "cancelwire: error: /dev/zero: the settings file is a character device; it must be a regular file\n"
    )
    mine = tmp_path / "team.toml"
    mine.write_text('race-window = 0.5\n[disabled]\ncancel-unknown-request = "known client bug #12"\n')
    proc = subprocess.run(
        [SCRIPT, "audit", str(SAMPLE), "--config", str(mine)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0


def test_pyproject_table(tmp_path: Path) -> None:
    project = tmp_path / "pyproject.toml"
    project.write_text("[tool.black]\nline-length = 1\n[tool.cancelwire]\nhold = 60\nmax-open = 7\n")
    assert find_settings(tmp_path) == Settings(path=project, hold=60.0, max_open=7)
    project.write_text('[tool]\ncancelwire = "fast"\n')
    with pytest.raises(ConfigError, match=r"pyproject.toml: tool.cancelwire must be a table, not 'fast'"):
        find_settings(tmp_path)
    project.write_text("[tool.cancelwire]\nrace-window = nan\n")
    with pytest.raises(ConfigError, match=r"pyproject.toml:2: tool.cancelwire.race-window: must be a finite"):
        find_settings(tmp_path)
    project.write_text('tool = "not a table"\n')  # not ours to judge: no [tool.cancelwire] here
    assert find_settings(tmp_path) == Settings()
    project.write_text("[tool.other]\n")
    with pytest.raises(ConfigError, match=r"pyproject.toml: has no \[tool.cancelwire\] table"):
        load_settings(project)


def test_settings_values_are_used() -> None:
    settings = Settings(race_window=0.1, hold=5.0, verifying_reads={"t": ("a", "b")}, disabled={"CW101": "flaky"})
    assert settings.values() == [
        ("race-window", "0.1"),
        ("hold", "5"),
        ("verifying-reads.t", "a, b"),
        ("disabled.CW101", "flaky"),
    ]


def test_unknown_rule_in_disabled_names_file_and_key(tmp_path: Path) -> None:
    (tmp_path / "cancelwire.toml").write_text('[disabled]\nresponse-after-cancle = "typo"\n')
    proc = subprocess.run([SCRIPT, "audit", str(SAMPLE)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        f"cancelwire: error: {tmp_path / 'cancelwire.toml'}: disabled.response-after-cancle: "
        "unknown rule 'response-after-cancle'",
        "  hint: see `cancelwire rules` for ids and slugs",
    ]
