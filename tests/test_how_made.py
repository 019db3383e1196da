"""Every format says how the report was made: the settings file, every value it or the command line
changed, every rule not run and why, race windows per vantage, --hold, max-open, protocol, version, time."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from cancelwire.judge.catalog import load_catalog
from cancelwire.model import Transport
from cancelwire.support import inert

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = Path(sys.executable).parent / "cancelwire"
SAMPLE = str(ROOT / "sample_captures" / "stdio" / "handwritten-client-cancels-unknown-id.jsonl")
CW201 = "write-after-disconnect"
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
        "related-task-tag-mismatch",
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


def test_a_rule_that_cannot_apply_over_the_transport_is_not_out_of_force() -> None:
    """ "Not in force" names what a revision takes away. A rule no revision can raise over a transport (its
    condition starts from a stream event stdio never has, or is scoped to another transport, or no revision
    gives it a level there) is not the revision's doing, so it is not listed there; over HTTP it is."""
    rules = load_catalog()
    never_over = {
        transport.value: sorted(r.id for r in rules if not r.applies_over(transport)) for transport in Transport
    }
    assert never_over == {
        "stdio": ["CW201", "CW202", "CW203", "CW204"],
        "streamable-http": [],
        "http-sse": ["CW202"],
    }
    assert all(r.applies_over(None) for r in rules)


@pytest.mark.parametrize(
    ("sample", "lines"),
    [
        ("stdio/sdk-cancel-slow-tool-2025-11-25.jsonl", []),
        (
            "http/sdk-http-cancel-notification.pcapng",
            ["  not in force under 2025-11-25 over streamable-http (1 session), so nothing to say: " + CW201],
        ),
    ],
)
def test_out_of_force_lines_follow_the_transport(sample: str, lines: list[str]) -> None:
    proc = subprocess.run(
        [SCRIPT, "audit", str(ROOT / "sample_captures" / sample)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode in (0, 1), proc.stderr
    block = proc.stdout.split("How this report was made\n")[1].split("\n\n")[0]
    assert [line for line in block.splitlines() if "not in force" in line] == lines
