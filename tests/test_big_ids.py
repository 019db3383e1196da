"""Integer ids beyond 64 bits are ids (JSON-RPC sets no size limit): orjson reads them as floats, so
cancelwire reads such a message again exactly, and writes them exactly in every JSON output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cancelwire.model import MessageKind, jsonrpc
from cancelwire.model.jsonrpc import decode_text
from cancelwire.run.pipeline import audit

from tests.fuzzing import run_cli

BIG = 2**64
NEGATIVE = -(2**63) - 1


@pytest.mark.parametrize(
    ("message", "kind", "request_id"),
    [
        ({"jsonrpc": "2.0", "id": BIG, "method": "tools/call"}, MessageKind.REQUEST, BIG),
        ({"jsonrpc": "2.0", "id": NEGATIVE, "result": {}}, MessageKind.RESULT, NEGATIVE),
        ({"jsonrpc": "2.0", "id": BIG + 1, "error": {"code": -1, "message": "x"}}, MessageKind.ERROR, BIG + 1),
    ],
)
def test_an_id_beyond_64_bits_is_read_exactly(message: dict[str, object], kind: MessageKind, request_id: int) -> None:
    decoded = decode_text(json.dumps(message))
    assert decoded is not None and not decoded.problems
    (one,) = decoded.messages
    assert (one.kind, one.id) == (kind, request_id)
    assert one.id.__class__ is int


def test_request_ids_and_progress_tokens_in_params_are_read_exactly() -> None:
    cancel = decode_text(
        json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": BIG}})
    )
    progress = decode_text(
        json.dumps({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": BIG + 7}})
    )
    asking = decode_text(
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"_meta": {"progressToken": BIG + 7}}})
    )
    assert cancel is not None and progress is not None and asking is not None
    assert cancel.messages[0].payload["requestId"] == BIG
    assert progress.messages[0].payload["progressToken"] == BIG + 7
    assert asking.messages[0].payload["_meta"]["progressToken"] == BIG + 7


def test_a_fractional_id_is_still_not_an_id_and_a_batch_with_a_big_id_is_read() -> None:
    fractional = decode_text('{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}')
    assert fractional is not None and not fractional.messages
    assert [p.name for p in fractional.problems] == ["jsonrpc.invalid-message"]
    assert "1.5" in fractional.problems[0].detail
    batch = decode_text(json.dumps([{"jsonrpc": "2.0", "id": BIG, "method": "ping"}, {"jsonrpc": "2.0", "id": 2.5}]))
    assert batch is not None and batch.batch
    assert [m.id for m in batch.messages] == [BIG]
    assert [p.name for p in batch.problems] == ["jsonrpc.invalid-message"]


def test_dumps_writes_big_integers_exactly() -> None:
    assert json.loads(jsonrpc.dumps({"id": BIG, "text": "é"})) == {"id": BIG, "text": "é"}
    assert jsonrpc.dumps({"id": 1}, indent=True) == b'{\n  "id": 1\n}'


def _transcript(tmp_path: Path) -> Path:
    lines = [
        {"jsonrpc": "2.0", "id": BIG, "method": "tools/call", "params": {"name": "w", "_meta": {"progressToken": BIG}}},
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": BIG, "progress": 1}},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": BIG}},
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": BIG, "progress": 2}},
    ]
    records = [{"cancelwire_transcript": 1, "transport": "stdio", "vantage": "server"}]
    records += [
        {"ts": 1 + i, "dir": direction, "line": json.dumps(m)}
        for i, (m, direction) in enumerate(zip(lines, ["c2s", "s2c", "c2s", "s2c"], strict=True))
    ]
    path = tmp_path / "big.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_progress_and_cancel_follow_a_request_with_a_big_id(tmp_path: Path) -> None:
    with audit([str(_transcript(tmp_path))]) as result:
        assert [(f.rule, f.request_id) for f in result.findings] == [("progress-after-cancel", BIG)]
        assert [(c.request_id, c.outcome.value) for c in result.cancellations] == [(BIG, "outcome-unverified")]


@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_json_outputs_carry_the_exact_id(tmp_path: Path, fmt: str) -> None:
    out = tmp_path / f"report.{fmt}"
    run = run_cli(["audit", str(_transcript(tmp_path)), "--format", fmt, "-o", str(out)])
    assert run.status in (0, 1), run
    assert str(BIG) in out.read_text()
    json.loads(out.read_text())
