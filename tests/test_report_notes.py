"""Quieter reports: a rule a session's revision does not put in force was judged (it has nothing to say),
so "Not judged" keeps what a recording could not show and what a setting switched off; the revision's
rule set is said once in "how this report was made"; a session's own notes (timestamps going backwards)
stay with the session; and the Markdown report escapes recorded text only, not its own words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cancelwire.reports.formats import render
from cancelwire.run.pipeline import audit
from cancelwire.support.inert import markdown, markdown_ours
from test_reports import ROOT
from transcripts import write_transcript

LATE = "sample_captures/stdio/handwritten-server-late-result-after-cancel-2026-07-28.jsonl"
OLD = "sample_captures/stdio/sdk-cancel-slow-tool-2025-06-18.jsonl"
TASK_RULES = (
    "task-status-after-cancel, tasks-cancel-final-not-rejected, task-result-after-cancel, "
    "tasks-cancel-not-marked-cancelled, related-task-tag-missing, related-task-tag-redundant, "
    "related-task-tag-mismatch"
)


@pytest.fixture(autouse=True)
def _at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def _sections(text: str) -> dict[str, list[str]]:
    """The text report's blocks by heading (the first line of each block after a blank line)."""
    blocks = [b.splitlines() for b in text.strip("\n").split("\n\n")]
    return {block[0]: block[1:] for block in blocks}


def test_the_sample_audit_lists_no_rule_merely_out_of_force() -> None:
    with audit(["sample_captures/"]) as result:
        sections = _sections(render(result, "text"))
    not_judged = sections["Not judged"]
    assert len(not_judged) == 17
    assert not any("not in force" in line for line in not_judged)
    assert [line for line in not_judged if "so not judged" in line] == [
        line for line in not_judged if "cannot show" in line or "could not be read" in line
    ]
    made = [line for line in sections["How this report was made"] if "not in force" in line]
    # (2025-11-25 over stdio puts every rule that can apply over stdio in force: no line)
    assert [line.split(", so")[0] for line in made] == [
        "  not in force under 2026-07-28 over streamable-http (32 sessions)",
        "  not in force under 2025-11-25 over streamable-http (29 sessions)",
        "  not in force under 2026-07-28 over stdio (52 sessions)",
        "  not in force under 2025-11-25 over http-sse (1 session)",
        "  not in force under 2025-06-18 over stdio (1 session)",
    ]
    assert made[2].endswith(f"so nothing to say: cancel-of-initialize, {TASK_RULES}, id-reused")


def test_json_keeps_every_session_of_each_revisions_rule_set() -> None:
    with audit([LATE, OLD]) as result:
        report = json.loads(render(result, "json"))
    assert report["unjudged"] == []
    assert report["not_in_force"] == [
        {
            "reason": "not in force under 2026-07-28 over stdio",
            "rules": ["cancel-of-initialize", *TASK_RULES.split(", "), "id-reused"],
            "sessions": [LATE],
        },
        {
            "reason": "not in force under 2025-06-18 over stdio",
            "rules": ["cancel-notification-for-task", *TASK_RULES.split(", ")],  # no CW201: stdio has no disconnect
            "sessions": [OLD],
        },
    ]
    assert [s["notes"] for s in report["sessions"]] == [[], []]


def test_markdown_escapes_recorded_text_only() -> None:
    with audit([LATE]) as result:
        text = render(result, "md")
    assert "**FAIL**: 2 errors in 1 session (gate: --fail-on error)" in text
    assert "| CW101 response-after-cancel | " in text
    assert "**late-result-violation** (inferred)" in text
    assert "- not in force under 2026-07-28 over stdio (1 session), so nothing to say: cancel-of-initialize, " in text
    assert "protocol: each session's own; vantage: each format's own" in text
    assert f"| {markdown(LATE)} | cancelwire-transcript | stdio |" in text  # the path is recorded: escaped
    assert "server answered tools\\/call \\(id 2\\)" in text  # a sentence holding recorded text: escaped


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("2 errors in 1 session (gate: --fail-on error)", "2 errors in 1 session (gate: --fail-on error)"),
        ("cancelwire 0.1.0, 2026-12-04T19:53:53.668Z", "cancelwire 0.1.0, 2026-12-04T19:53:53.668Z"),
        ("each session's own", "each session's own"),
        # anything that could act is escaped as recorded text is
        ("a_b *c*", markdown("a_b *c*")),
        ("see https://x.example", markdown("see https://x.example")),
        ("www.example.com", markdown("www.example.com")),
        ("ping @team #12", markdown("ping @team #12")),
        ("a :tada: b", markdown("a :tada: b")),
        ("1. a list", markdown("1. a list")),
        ("- a list", markdown("- a list")),
        ("line\nbreak", markdown("line\nbreak")),
        ("bidi \u202e", markdown("bidi \u202e")),
        ("<b>x</b> | y", markdown("<b>x</b> | y")),
    ],
)
def test_our_words_are_left_as_they_are_only_when_nothing_in_them_can_act(text: str, shown: str) -> None:
    assert markdown_ours(text) == shown


def test_a_sessions_notes_stay_with_the_session(tmp_path: Path) -> None:
    """Timestamps going backwards is how the session was recorded: listed under the session (even without
    --verbose), never under "Not judged"."""
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    path = write_transcript(
        tmp_path / "back.jsonl",
        [(1_800_000_010.0, "c2s", ping), (1_800_000_009.0, "s2c", {"jsonrpc": "2.0", "id": 1, "result": {}})],
    )
    with audit([str(path)]) as result:
        sections = _sections(render(result, "text"))
    assert "Not judged" not in sections
    inputs = next(lines for heading, lines in sections.items() if heading.startswith("Inputs: "))
    assert inputs == [
        f"  {path}  [cancelwire-transcript, stdio, revision unknown (assumed), vantage proxy]",
        "      note: protocol revision unknown; every rule was judged at its weakest level across revisions",
        "      note: timestamps go backwards (log time); order follows the file, gaps are rough",
    ]
