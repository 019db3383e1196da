"""A cancelled call judged when its hold ends: its silence is inferred (a reply may still come), and a
reply that does come later is linked to it (CW109), never a reply to an unknown id (issue 7)."""

from __future__ import annotations

import json
from pathlib import Path

from cancelwire import audit

ROOT = Path(__file__).resolve().parent.parent
TRIGGERS = ROOT / "tests/rules/reply-after-hold/triggers.jsonl"


def _outcomes(result: object) -> list[tuple[object, str, str]]:
    return [(c.request_id, c.outcome.value, c.certainty.value) for c in result.cancellations]  # type: ignore[attr-defined]


def test_a_reply_after_the_hold_is_linked_to_its_call() -> None:
    with audit([str(TRIGGERS)]) as result:
        assert [(f.rule, f.request_id, f.certainty.value) for f in result.findings] == [
            ("reply-after-hold", 5, "exact")
        ]
        assert _outcomes(result) == [(5, "outcome-unverified", "inferred")]
        (call,) = list(result.cancellations)
        assert call.explanation.endswith("(judged when its hold ended, before the recording did)")


def test_a_longer_hold_judges_the_call_with_its_reply() -> None:
    with audit([str(TRIGGERS)], hold=600) as result:
        assert [(f.rule, f.request_id) for f in result.findings] == [("response-after-cancel", 5)]
        assert _outcomes(result) == [(5, "late-result-violation", "exact")]


def test_silence_until_the_recording_ends_is_exact(tmp_path: Path) -> None:
    lines = TRIGGERS.read_text().splitlines()[:-1]  # no reply at all
    path = tmp_path / "silent.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with audit([str(path)]) as result:
        assert _outcomes(result) == [(5, "outcome-unverified", "exact")]
        assert list(result.findings) == []


def test_a_second_late_reply_is_one_to_an_answered_request(tmp_path: Path) -> None:
    text = TRIGGERS.read_text()
    last = json.loads(text.splitlines()[-1])
    last["ts"] += 1
    path = tmp_path / "twice.jsonl"
    path.write_text(text + json.dumps(last) + "\n")
    with audit([str(path)]) as result:
        assert sorted((f.rule, f.request_id) for f in result.findings) == [
            ("reply-after-hold", 5),
            ("response-to-unknown-id", 5),
        ]
