"""A reply with a null id: allowed for an error from 2025-11-25 (the schema's answer to an unreadable
request), a CW306 finding before it, and given the benefit of the doubt when the revision is unknown."""

from __future__ import annotations

from pathlib import Path

import cancelwire
import pytest
from transcripts import Line, write_transcript


def _null_id_error_under(revision: str, tmp_path: Path) -> list[str]:
    init = {"protocolVersion": revision, "capabilities": {}}
    lines: list[Line] = [
        (1.0, "c2s", {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}),
        (1.1, "s2c", {"jsonrpc": "2.0", "id": 0, "result": init}),
        (2.0, "s2c", {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}),
    ]
    path = write_transcript(tmp_path / "t.jsonl", lines)
    with cancelwire.audit([path], exchanges=False) as result:
        return [f.rule_id for f in result.findings if f.rule_id == "CW306"]


@pytest.mark.parametrize(
    ("revision", "flagged"),
    [
        ("2024-11-05", True),
        ("2025-06-18", True),
        ("2025-11-25", False),
        ("2026-07-28", False),
        ("2024-01-01", False),  # unknown to this version: not judged by string order
        ("2099-01-01", False),
    ],
)
def test_a_null_id_error_is_judged_by_the_revision_facts(revision: str, flagged: bool, tmp_path: Path) -> None:
    assert _null_id_error_under(revision, tmp_path) == (["CW306"] if flagged else [])
