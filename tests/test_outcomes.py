"""Cancelled-call outcomes on small hand-written sessions (proxy vantage, 2025-11-25)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cancelwire.rebuild.reconstruct import ReconstructOptions
from cancelwire.run.pipeline import AuditOptions, audit
from transcripts import write_transcript

TOOLS = [
    {"name": "write", "inputSchema": {"type": "object"}},
    {"name": "look", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}},
]


def _session(tmp_path: Path, after_cancel: list[tuple[float, str, dict[str, object]]]) -> Path:
    lines: list[tuple[float, str, dict[str, object]]] = [
        (1.0, "c2s", {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}}),
        (1.1, "s2c", {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-11-25"}}),
        (1.2, "c2s", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        (1.3, "s2c", {"jsonrpc": "2.0", "id": 1, "result": {"tools": TOOLS}}),
        (2.0, "c2s", {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "write"}}),
        (3.0, "c2s", {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}),
        *after_cancel,
    ]
    return write_transcript(tmp_path / "s.jsonl", lines)


def _read(at: float, rid: int) -> list[tuple[float, str, dict[str, object]]]:
    return [
        (at, "c2s", {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": "look"}}),
        (at + 0.1, "s2c", {"jsonrpc": "2.0", "id": rid, "result": {"content": []}}),
    ]


@pytest.mark.parametrize(
    ("after_cancel", "expected"),
    [
        ([], "outcome-unverified"),
        (_read(10.0, 3), "verified-by-read"),
        ([(3.01, "s2c", {"jsonrpc": "2.0", "id": 2, "result": {}})], "late-result-discarded"),
        ([(5.0, "s2c", {"jsonrpc": "2.0", "id": 2, "result": {}})], "late-result-violation"),
        (
            [(5.0, "s2c", {"jsonrpc": "2.0", "id": 2, "error": {"code": -32800, "message": "Request cancelled"}})],
            "late-result-violation",
        ),
    ],
    ids=["silence", "later-read", "crossing-reply", "late-reply", "error-naming-the-cancel"],
)
def test_outcome(tmp_path: Path, after_cancel: list[tuple[float, str, dict[str, object]]], expected: str) -> None:
    result = audit([str(_session(tmp_path, after_cancel))])
    assert [(c.request_id, c.outcome.value) for c in result.cancellations] == [(2, expected)]


def test_a_read_after_the_hold_no_longer_verifies(tmp_path: Path) -> None:
    path = _session(tmp_path, _read(400.0, 3))
    assert [c.outcome.value for c in audit([str(path)]).cancellations] == ["outcome-unverified"]
    longer = AuditOptions(reconstruct=ReconstructOptions(hold_seconds=600))
    assert [c.outcome.value for c in audit([str(path)], longer).cancellations] == ["verified-by-read"]


def test_verifying_reads_from_settings_limit_which_read_counts(tmp_path: Path) -> None:
    path = _session(tmp_path, _read(10.0, 3))
    only_other = AuditOptions(reconstruct=ReconstructOptions(verifying_reads={"write": ("resources/read",)}))
    assert [c.outcome.value for c in audit([str(path)], only_other).cancellations] == ["outcome-unverified"]
