"""Verdicts around cancels that must hold: a cancel its receiver was entitled to ignore is the finding,
never the receiver's correct reply. Exact findings and outcomes, with every rule enabled."""

from __future__ import annotations

import json
from pathlib import Path

from cancelwire.run.pipeline import audit
from transcripts import Line

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}}
INIT_RESULT = {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-11-25", "capabilities": {}}}
META_2026 = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}


def _cancel(request_id: int) -> dict[str, object]:
    return {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request_id}}


def _write(path: Path, lines: list[Line], **header: str) -> Path:
    head = {"cancelwire_transcript": 1, "transport": "stdio", "vantage": "proxy", **header}
    records = [json.dumps({"ts": t, "dir": d, "line": json.dumps(m)}) for t, d, m in lines]
    path.write_text("\n".join([json.dumps(head), *records]) + "\n")
    return path


def _verdicts(path: Path) -> tuple[set[tuple[str, object, tuple[int | None, ...]]], list[object]]:
    result = audit([str(path)])
    findings = {(f.rule, f.request_id, tuple(o.line for o in f.evidence)) for f in result.findings}
    return findings, [(c.request_id, c.outcome.value) for c in result.cancellations]


def test_a_cancel_of_initialize_is_the_finding_not_the_reply(tmp_path: Path) -> None:
    lines: list[Line] = [
        (1.0, "c2s", INIT),
        (1.5, "c2s", _cancel(0)),
        (2.0, "s2c", INIT_RESULT),  # half a second later, seen from a proxy: "after the cancel" if it counted
    ]
    findings, cancelled = _verdicts(_write(tmp_path / "t.jsonl", lines))
    assert findings == {("cancel-of-initialize", 0, (3,))}
    assert cancelled == []


def test_a_server_cancel_where_only_the_client_cancels_is_the_finding(tmp_path: Path) -> None:
    lines: list[Line] = [
        (1.0, "c2s", {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": META_2026}}),
        (1.1, "s2c", {"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}),
        (2.0, "s2c", {"jsonrpc": "2.0", "id": 7, "method": "sampling/createMessage", "params": {}}),
        (2.5, "s2c", _cancel(7)),
        (3.5, "c2s", {"jsonrpc": "2.0", "id": 7, "result": {}}),
    ]
    findings, cancelled = _verdicts(_write(tmp_path / "t.jsonl", lines))
    assert findings == {("cancel-unknown-request", 7, (5,))}
    assert cancelled == []


def test_a_posted_cancel_where_closing_the_stream_is_the_cancel_is_the_finding(tmp_path: Path) -> None:
    call = {"name": "write", "arguments": {}, "_meta": META_2026}
    lines: list[Line] = [
        (1.0, "c2s", {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call}),
        (1.5, "c2s", _cancel(3)),
        (2.5, "s2c", {"jsonrpc": "2.0", "id": 3, "result": {"content": []}}),
    ]
    path = _write(tmp_path / "t.jsonl", lines, transport="streamable-http", vantage="wire")
    findings, cancelled = _verdicts(path)
    assert findings == {("cancel-mechanism-mismatch", 3, (3,))}
    assert cancelled == []


def test_a_cancel_in_force_still_judges_the_reply(tmp_path: Path) -> None:
    """The nearest miss: the same exchange over stdio, where the notification is the cancel."""
    call = {"name": "write", "arguments": {}, "_meta": META_2026}
    lines: list[Line] = [
        (1.0, "c2s", {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call}),
        (1.5, "c2s", _cancel(3)),
        (2.5, "s2c", {"jsonrpc": "2.0", "id": 3, "result": {"content": []}}),
    ]
    findings, cancelled = _verdicts(_write(tmp_path / "t.jsonl", lines))
    assert findings == {("response-after-cancel", 3, (3, 4))}
    assert cancelled == [(3, "late-result-violation")]
