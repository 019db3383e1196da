"""A broken recording can raise a finding per message: memory must not follow their number.

Findings are spooled in report order, anomaly groups are bounded, JSON lists every finding and the
reports people read list the first ones of each rule and say how many more there are.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from cancelwire.judge import engine
from cancelwire.reports import document as report
from cancelwire.reports.formats import render
from cancelwire.run.pipeline import audit
from transcripts import Line, write_transcript

REPLIES = 30


def _stray_replies(tmp_path: Path) -> Path:
    """A server answering ids nobody sent (one finding each), then one id it answered twice."""
    init = {"protocolVersion": "2025-11-25"}
    lines: list[Line] = [
        (1.0, "c2s", {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}),
        (1.1, "s2c", {"jsonrpc": "2.0", "id": 0, "result": init}),
        (1.2, "c2s", {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 0}}),
    ]
    lines += [(2.0 + i, "s2c", {"jsonrpc": "2.0", "id": 100 + i, "result": {}}) for i in range(REPLIES)]
    lines.append((50.0, "s2c", {"jsonrpc": "2.0", "id": 100, "result": {}}))
    return write_transcript(tmp_path / "stray.jsonl", lines)


def _rendered(path: Path, fmt: str) -> str:
    return render(audit([str(path)]), fmt)


def test_findings_come_by_severity_then_rule_then_as_found(tmp_path: Path) -> None:
    result = audit([str(_stray_replies(tmp_path))])
    found = [(f.severity.value, f.rule_id, f.request_id, len(f.evidence) + f.more_evidence) for f in result.findings]
    assert found == [
        ("error", "CW305", 100, 2),  # the id answered twice is one finding citing both places
        *(("error", "CW305", 100 + i, 1) for i in range(1, REPLIES)),
        ("info", "CW106", 0, 1),  # cancel-after-completion
    ]
    assert len(result.findings) == REPLIES + 1
    assert result.exit_status(None) == 0


def test_anomaly_groups_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine, "MAX_OPEN_GROUPS", 5)
    result = audit([str(_stray_replies(tmp_path))])
    found = [(f.rule_id, f.request_id, len(f.evidence)) for f in result.findings]
    # the oldest groups were closed early, so the id answered again much later is a second finding
    assert sorted(found, key=str) == sorted(
        [("CW305", 100 + i, 1) for i in range(REPLIES)] + [("CW305", 100, 1), ("CW106", 0, 1)], key=str
    )


def test_json_lists_every_finding_and_people_get_the_first_of_each_rule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(report, "SHOWN_PER_RULE", 10)
    path = _stray_replies(tmp_path)

    document = orjson.loads(_rendered(path, "json"))
    assert len(document["findings"]) == REPLIES + 1
    assert "findings_not_shown" not in document

    text = _rendered(path, "text")
    assert text.count(" CW305 response-to-unknown-id ") == 10
    assert text.count(" CW106 cancel-after-completion ") == 1
    more = f"  ... and {REPLIES - 10} more response-to-unknown-id finding(s) not listed here"
    assert f"{more} (--format json lists every one)\n" in text

    markdown = _rendered(path, "md")
    shown = report.MARKDOWN_SHOWN_PER_KEY  # a pull-request comment lists fewer
    assert markdown.count("| CW305 response-to-unknown-id |") == shown
    not_listed = f"**Not listed here**, to keep this comment short: {REPLIES - shown} of {REPLIES + 1} findings."
    assert not_listed in markdown

    html = _rendered(path, "html")
    assert html.count('<tr data-severity="error" data-rule="CW305"') == 10
    assert f'<p class="capped">… and {REPLIES - 10} more response-to-unknown-id finding(s) not listed here' in html
