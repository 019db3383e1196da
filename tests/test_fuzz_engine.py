"""Reconstruction and the rule engine on any JSON-RPC message sequence, from every vantage and revision.

No exception, the input is read, every finding comes from a catalogue rule and cites lines of the input,
every cancelled call is one the input cancelled, and the audit is deterministic.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cancelwire.judge.catalog import load_catalog
from cancelwire.model import REVISIONS, Severity
from cancelwire.rebuild.reconstruct import ReconstructOptions
from cancelwire.run.pipeline import AuditOptions, audit
from cancelwire.tables import exchanges
from fuzzing import cost_steps, fuzz_settings, hostile_steps, timed, wrong_typed_steps
from hypothesis import given
from hypothesis import strategies as st
from transcripts import write_transcript

SLUGS = {rule.slug for rule in load_catalog()}


def _transcript(folder: Path, steps: list[tuple[str, object, float]], vantage: str) -> Path:
    return write_transcript(folder / "x.jsonl", timed(steps), vantage=vantage)  # any JSON value as a message


def _summary(path: Path, options: AuditOptions) -> tuple[object, ...]:
    result = audit([str(path)], options)
    try:
        assert [i.error for i in result.inputs] == [None]
        findings = list(result.findings)
        last_line = len(path.read_bytes().splitlines())
        for f in findings:
            assert f.rule in SLUGS, f
            assert all(o.line is not None and 1 <= o.line <= last_line for o in f.evidence), f
        assert result.exit_status(Severity.ERROR) in (0, 1)
        return (
            sorted((f.rule, str(f.request_id), f.message, f.certainty) for f in findings),
            [(str(c.request_id), c.outcome) for c in result.cancellations],
        )
    finally:
        result.close()


@pytest.mark.parametrize("vantage", ["proxy", "client", "server"])
@fuzz_settings(50)
@given(steps=hostile_steps, revision=st.sampled_from([None, *REVISIONS]), hold=st.sampled_from([0.0, 1.0, 300.0]))
def test_any_message_sequence_is_judged_deterministically(
    tmp_path_factory: pytest.TempPathFactory,
    vantage: str,
    steps: list[tuple[str, object, float]],
    revision: str | None,
    hold: float,
) -> None:
    path = _transcript(tmp_path_factory.mktemp("seq"), steps, vantage)
    options = AuditOptions(reconstruct=ReconstructOptions(protocol=revision, hold_seconds=hold, max_open=4))
    assert _summary(path, options) == _summary(path, options)


@fuzz_settings(40)
@given(
    steps=wrong_typed_steps(),
    vantage=st.sampled_from(["proxy", "client", "server"]),
    revision=st.sampled_from([None, *REVISIONS]),
)
def test_wrong_typed_members_of_known_methods_are_judged_deterministically(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, object, float]], vantage: str, revision: str | None
) -> None:
    """Results and params of known methods (tools/list, tasks/*, progress, cancels, initialize ...) with members
    of the wrong type: an invalid message at most, never an exception (issue 19: `"tools": 5` was exit 3)."""
    path = _transcript(tmp_path_factory.mktemp("typed"), steps, vantage)
    options = AuditOptions(reconstruct=ReconstructOptions(protocol=revision, max_open=4))
    assert _summary(path, options) == _summary(path, options)


@fuzz_settings(40)
@given(steps=cost_steps(), vantage=st.sampled_from(["proxy", "client", "server"]), hold=st.sampled_from([1.0, 300.0]))
def test_cost_shapes_are_judged_deterministically_within_their_bounds(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, object, float]], vantage: str, hold: float
) -> None:
    """Issue 19's shapes (cancels waiting for a proof under pings, many tool names, the ids 1 and "1", replies
    after the hold) with small bounds: deterministic, and no session remembers more tools than its bound."""
    path = _transcript(tmp_path_factory.mktemp("cost"), steps, vantage)
    options = AuditOptions(reconstruct=ReconstructOptions(hold_seconds=hold, max_tools=3, max_tombstones=3))
    assert _summary(path, options) == _summary(path, options)
    rows: list[dict[str, object]] = []
    result = audit([str(path)], options, on_exchange=lambda timeline, call: rows.append(exchanges.row(timeline, call)))
    try:
        assert all(len(s.tool_effects) <= 3 for s in result.sessions)
        assert {(r["request_id_type"], type(r["request_id"])) for r in rows} <= {("integer", str), ("string", str)}
    finally:
        result.close()
