"""Every format says how the report was made: the settings file, every value it or the command line
changed, every rule not run and why, race windows per vantage, --hold, max-open, protocol, version, time."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from cancelwire.support import inert

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = Path(sys.executable).parent / "cancelwire"
SAMPLE = str(ROOT / "sample_captures" / "stdio" / "handwritten-client-cancels-unknown-id.jsonl")
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


@pytest.fixture
def team(tmp_path: Path) -> Path:
    (tmp_path / "cancelwire.toml").write_text(
        'race-window = 0.1\nmax-open = 50\n[disabled]\ncancel-unknown-request = "known client bug @ops #12"\n'
    )
    return tmp_path


def audit(cwd: Path, *args: str, status: int = 0) -> str:
    proc = subprocess.run(
        [SCRIPT, "audit", SAMPLE, "--hold", "60", "--protocol", "2025-06-18", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == status, proc.stderr
    return TIME.sub("TIME", proc.stdout)


def test_text(team: Path) -> None:
    text = audit(team, "--ignore", "CW106")
    settings = team / "cancelwire.toml"
    assert text.split("How this report was made\n")[1].split("\n\n")[0].splitlines() == [
        f"  cancelwire 0.1.0, TIME; settings file: {settings}",
        "  race windows: server 0.1 s, wire 0.1 s, proxy 0.1 s, client 0.1 s, unknown 0.1 s; hold 60.0 s; "
        "max-open 50; protocol: 2025-06-18; vantage: each format's own",
        f"  race-window = 0.1 (from {settings})",
        f"  max-open = 50 (from {settings})",
        f"  disabled.cancel-unknown-request = known client bug @ops #12 (from {settings})",
        "  hold = 60 (from command line)",
        "  protocol = 2025-06-18 (from command line)",
        "  ignore.CW106 = --ignore (from command line)",
        "  not run (--ignore on the command line): cancel-after-completion",
        "  not run (known client bug @ops #12): cancel-unknown-request",
        "  not in force under 2025-06-18 over stdio (1 session), so nothing to say: cancel-notification-for-task, "
        "task-status-after-cancel, tasks-cancel-final-not-rejected, task-result-after-cancel, "
        "tasks-cancel-not-marked-cancelled, related-task-tag-missing, related-task-tag-redundant, "
        "related-task-tag-mismatch, write-after-disconnect",
    ]


def test_command_line_wins_and_says_so(team: Path) -> None:
    text = audit(team, "--race-window", "0", "--max-open", "3")
    block = text.split("How this report was made\n")[1]
    assert "race windows: server 0.0 s, wire 0.0 s, proxy 0.0 s, client 0.0 s, unknown 0.0 s" in block
    assert "race-window = 0 (from command line)" in block and "max-open = 3 (from command line)" in block
    assert "(from" in block and f"race-window = 0.1 (from {team}" not in block


def test_markdown_is_inert(team: Path) -> None:
    text = audit(team, "--format", "md")
    block = text.split("<details><summary>How this report was made</summary>\n\n")[1]
    assert block.splitlines()[4] == (
        "- disabled\\.cancel\\-unknown\\-request = known client bug \\@&#8203;ops \\#&#8203;12 (from "
        + inert.markdown(str(team / "cancelwire.toml"))
        + ")"
    )


def test_html(team: Path) -> None:
    page = audit(team, "--format", "html")
    assert "<h2>How this report was made</h2>" in page
    assert (
        "<li><code>disabled.cancel-unknown-request</code> = known client bug @ops #12 "
        f"(from {team / 'cancelwire.toml'})</li>"
    ) in page
    assert "hold 60.0 s; max-open 50; protocol: 2025-06-18;" in page


def test_json(team: Path) -> None:
    run = json.loads(audit(team, "--format", "json"))["run"]
    settings = str(team / "cancelwire.toml")
    assert run == {
        "generated": "TIME",
        "settings_file": settings,
        "settings": [
            {"setting": "race-window", "value": "0.1", "source": settings},
            {"setting": "max-open", "value": "50", "source": settings},
            {"setting": "disabled.cancel-unknown-request", "value": "known client bug @ops #12", "source": settings},
            {"setting": "hold", "value": "60", "source": "command line"},
            {"setting": "protocol", "value": "2025-06-18", "source": "command line"},
        ],
        "race_windows": {"server": 0.1, "wire": 0.1, "proxy": 0.1, "client": 0.1, "unknown": 0.1},
        "hold_seconds": 60.0,
        "max_open": 50,
        "protocol": "2025-06-18",
        "vantage": None,
        "rule_dirs": [],
        "preview": False,
    }


def test_isolated_uses_no_settings(team: Path) -> None:
    text = audit(team, "--isolated", status=1)
    assert "settings file: none" in text and "cancel-unknown-request" in text.split("Findings")[1]
