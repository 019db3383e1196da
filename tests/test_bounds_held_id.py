"""A request id reused (hostile) while a task's call is held for its tasks/cancel: each request keeps its
own hold. The hold tables were keyed by (requester, id), so the second request's hold was a no-op
(`setdefault`) and it was judged only when the recording ended, with another certainty and explanation
than the same call under a fresh id. Reproducer by scripts/make_bounds_fixtures.py.
"""

from __future__ import annotations

import json

from fuzzing import ROOT, run_cli

REUSED = ROOT / "tests" / "corpus" / "transcript" / "task-call-id-reused.jsonl"
HOLD_ENDED = "(judged when its hold ended, before the recording did)"


def _cancellations() -> list[tuple[object, ...]]:
    run = run_cli(["audit", str(REUSED), "--format", "json"])
    assert run.status == 1 and "Traceback" not in run.stderr, run
    report = json.loads(run.stdout)
    return [
        (c["request_id"], c["tool"], c["mechanism"], c["outcome"], c["certainty"], c["explanation"])
        for c in report["cancellations"]
    ]


def test_each_request_keeps_its_own_hold_when_an_id_is_reused() -> None:
    export, write = _cancellations()
    assert export[:5] == (2, "export", "tasks-cancel", "outcome-unverified", "inferred")
    assert export[5].endswith(HOLD_ENDED)
    assert write == (
        2,
        "write",
        "notification",
        "outcome-unverified",
        "inferred",
        f"no reply, 'write' has no annotations, and no later read checked what it did {HOLD_ENDED}",
    )
