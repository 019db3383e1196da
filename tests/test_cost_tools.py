"""Tool annotations are remembered for a bounded number of tool names per session (issue 19: 200 tools/list
results of 5,000 new names each peaked at 298 MB). Past the bound the least recently listed are forgotten,
once-per-session CW403 says so, and a call of a forgotten tool reads as one of a tool with no annotations
(unknown effect), never as read-only."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

from cancelwire.model import Direction, MessageEvent, Origin, Session
from cancelwire.model.jsonrpc import decode_text
from cancelwire.rebuild.reconstruct import ReconstructOptions, Reconstructor
from cancelwire.run.pipeline import AuditOptions, audit

FIXTURES = Path(__file__).resolve().parent / "rules" / "tool-annotations-forgotten"


def _audit(path: Path, max_tools: int) -> tuple[list[tuple[object, str, str]], list[str], list[list[str]]]:
    result = audit([str(path)], AuditOptions(reconstruct=ReconstructOptions(max_tools=max_tools)))
    calls = [(c.request_id, c.outcome.value, c.explanation) for c in result.cancellations]
    return calls, [f.rule for f in result.findings], [list(s.tool_effects) for s in result.sessions]


def test_a_forgotten_read_only_tool_is_of_unknown_effect() -> None:
    calls, rules, tools = _audit(FIXTURES / "triggers.jsonl", max_tools=2)
    assert calls == [
        (2, "outcome-unverified", "no reply, 'lookup' has no annotations, and no later read checked what it did")
    ]
    assert rules == ["tool-annotations-forgotten"]
    assert tools == [["search", "fetch"]]


def test_a_remembered_read_only_tool_stays_read_only() -> None:
    calls, rules, tools = _audit(FIXTURES / "clean.jsonl", max_tools=2)
    assert calls == [
        (2, "clean", "no reply after the cancel; tools/list marked 'lookup' readOnlyHint (the server's claim)")
    ]
    assert rules == []
    assert tools == [["search", "lookup"]]


def test_the_default_bound_keeps_the_fixture_whole() -> None:
    calls, rules, _ = _audit(FIXTURES / "triggers.jsonl", max_tools=ReconstructOptions().max_tools)
    assert [c[1] for c in calls] == ["clean"] and rules == []


def _lists(lists: int, names: int) -> list[MessageEvent]:
    """`lists` tools/list round trips, each naming `names` new read-only tools; tool `keep` in every one."""
    events = []
    for n in range(lists):
        tools = [{"name": f"t{n}-{i}", "annotations": {"readOnlyHint": True}} for i in range(names)]
        tools.append({"name": "keep", "annotations": {"readOnlyHint": True}})
        for direction, body in (
            (Direction.C2S, {"id": n, "method": "tools/list"}),
            (Direction.S2C, {"id": n, "result": {"tools": tools}}),
        ):
            decoded = decode_text(json.dumps({"jsonrpc": "2.0", **body}))
            assert decoded is not None
            seq = len(events) + 1
            events.append(
                MessageEvent(seq, float(seq), Origin("t.jsonl", line=seq), "t", direction, decoded.messages[0])
            )
    return events


def _retained(lists: int) -> tuple[int, Session, list[str]]:
    """Memory the reconstruction holds after `lists` lists (traced), its session, and the anomalies' names."""
    reconstructor = Reconstructor("t.jsonl", "cancelwire-transcript", ReconstructOptions(max_tools=500))
    events = _lists(lists, 400)
    tracemalloc.start()
    try:
        out = [o for event in events for o in _feed(reconstructor, event)]
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    reconstructor.finish(len(events))
    out += reconstructor._out
    (session,) = [o for o in out if isinstance(o, Session)]
    return held, session, [str(getattr(o, "name", "")) for o in out if not isinstance(o, Session)]


def _feed(reconstructor: Reconstructor, event: MessageEvent) -> list[object]:
    reconstructor.feed(event)
    out = list(reconstructor._out)
    reconstructor._out.clear()
    return out


def test_memory_is_bounded_by_the_tool_bound_not_by_the_lists() -> None:
    """n vs 4n lists of 400 new names, 500 remembered: the same number kept, about the same memory held;
    a tool listed in every list is never forgotten (least recently listed go first); one anomaly."""
    small, small_session, small_out = _retained(5)
    large, large_session, large_out = _retained(20)
    assert len(small_session.tool_effects) == len(large_session.tool_effects) == 500
    assert "keep" in large_session.tool_effects
    assert small_out.count("reconstruct.tools-forgotten") == large_out.count("reconstruct.tools-forgotten") == 1
    assert large < small * 2  # without the bound: 4x the names, 4x the memory (56 vs 224 KB); with it 31 vs 45 KB
    # (the rest is the finished requests, remembered up to their own bound)
