"""A cancelled call judged when its hold ends: its silence is inferred (a reply may still come), and a
reply that does come later is linked to it (CW109), never a reply to an unknown id (issue 7)."""

from __future__ import annotations

import json
from pathlib import Path

from cancelwire import audit
from cancelwire.rebuild.reconstruct import ReconstructOptions
from cancelwire.run import pipeline
from cancelwire.run.results import AuditResult

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


def _busy(tmp_path: Path, cancels: int, pings: int) -> Path:
    """The fixture's cancelled call, `cancels - 1` more cancelled calls (ids 6, 7, ...) judged at the end
    of their hold too, and `pings` ping round trips after the hold ended, then the late reply to id 5."""
    lines = TRIGGERS.read_text().splitlines()
    extra = []
    for n in range(1, cancels):
        call = {"jsonrpc": "2.0", "id": 5 + 10 * n, "method": "tools/call", "params": {"name": "slow"}}
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5 + 10 * n}}
        extra += [
            {"ts": 3.0, "dir": "c2s", "line": json.dumps(call)},
            {"ts": 3.0, "dir": "c2s", "line": json.dumps(cancel)},
        ]
    for i in range(pings):
        for direction, message in (("c2s", {"method": "ping"}), ("s2c", {"result": {}})):
            line = json.dumps({"jsonrpc": "2.0", "id": 100 + i, **message})
            extra.append({"ts": 350.0 + i, "dir": direction, "line": line})
    path = tmp_path / "busy.jsonl"
    path.write_text("\n".join([*lines[:-1], *map(json.dumps, extra), lines[-1]]) + "\n")
    return path


def _remembering_two(path: Path) -> AuditResult:
    return pipeline.audit([str(path)], pipeline.AuditOptions(reconstruct=ReconstructOptions(max_tombstones=2)))


def test_requests_finished_after_the_hold_do_not_push_the_call_out(tmp_path: Path) -> None:
    """Room for two finished requests, five pings answered after the hold ended (issue 19): the call judged
    at the end of its hold is remembered apart, so its late reply is still linked to it."""
    with _remembering_two(_busy(tmp_path, 1, 5)) as result:
        assert sorted((f.rule, f.request_id, f.certainty.value) for f in result.findings) == [
            ("finished-requests-forgotten", None, "exact"),
            ("reply-after-hold", 5, "exact"),
        ]
        assert _outcomes(result) == [(5, "outcome-unverified", "inferred")]


def test_more_calls_judged_at_their_hold_than_remembered_forget_the_oldest(tmp_path: Path) -> None:
    """The reverse: three calls judged at the end of their hold, room for two: the oldest (id 5) is
    forgotten, so its late reply reads as one to an unknown id, and CW402 says why."""
    with _remembering_two(_busy(tmp_path, 3, 0)) as result:
        assert sorted((f.rule, f.request_id) for f in result.findings) == [
            ("finished-requests-forgotten", None),
            ("response-to-unknown-id", 5),
        ]
