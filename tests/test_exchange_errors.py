"""The exchange table keeps how a request failed and which session id it ran under: `error_code` (the JSON-RPC
error code of an error reply), `tool_error` (a tools/call result with `isError` true) and `session_id` (the
`Mcp-Session-Id`), in CSV and Parquet, from a real SDK capture, a HAR and a hand-written transcript."""

from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd
import pytest
from cancelwire.run.pipeline import audit
from cancelwire.tables.exchanges import ExchangeWriter
from transcripts import Line, write_transcript

ROOT = Path(__file__).resolve().parents[1]
CAPTURE = ROOT / "sample_captures/http/sdk-http-cancel-notification.pcapng"
HAR = ROOT / "sample_captures/har/mitmdump-sdk-cancel-notification.har"
COLUMNS = ["method", "reply", "error_code", "tool_error", "session_id"]


def _table(path: Path, out: Path) -> pd.DataFrame:
    writer = ExchangeWriter(out)
    audit([str(path)], on_row=writer.add)
    writer.close()
    if out.suffix == ".csv":
        with out.open(newline="") as f:
            return pd.DataFrame(list(csv.DictReader(f)))[COLUMNS]
    import pyarrow.parquet as pq

    table = pq.read_table(out, columns=COLUMNS)
    assert str(table.schema.field("error_code").type) == "int64"
    # as CSV writes them: a missing code empty, the rest as text
    return pd.DataFrame([["" if v is None else str(v) for v in row.values()] for row in table.to_pylist()])


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_a_cancelled_call_answered_with_an_error_under_a_session_id(tmp_path: Path, suffix: str) -> None:
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    rows = _table(CAPTURE, tmp_path / f"x{suffix}").values.tolist()
    sid = "f39ce014810e439fbe039ed91e035b9b"
    # the Python SDK 1.x answers the cancelled call with -32800 "Request cancelled" (sample's README)
    assert [row[:4] for row in rows] == [
        ["initialize", "result", "", "False"],
        ["tools/list", "result", "", "False"],
        ["tools/call", "error-result", "-32800", "False"],
    ]
    assert {row[4] for row in rows} == {sid}


def test_a_har_keyed_by_its_session_id(tmp_path: Path) -> None:
    rows = _table(HAR, tmp_path / "x.csv")
    assert rows[["method", "error_code"]].values.tolist() == [
        ["initialize", ""],
        ["tools/list", ""],
        ["tools/call", "-32800"],
    ]
    (sid,) = set(rows["session_id"])
    assert len(sid) == 32 and sid.isalnum()


def test_tool_errors_codes_out_of_range_and_stdio(tmp_path: Path) -> None:
    lines: list[Line] = [
        (1.0, "c2s", {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "w"}}),
        (1.1, "s2c", {"jsonrpc": "2.0", "id": 1, "result": {"content": [], "isError": True}}),
        (2.0, "c2s", {"jsonrpc": "2.0", "id": 2, "method": "ping"}),
        (2.1, "s2c", {"jsonrpc": "2.0", "id": 2, "error": {"code": 2**63, "message": "huge"}}),
        (3.0, "c2s", {"jsonrpc": "2.0", "id": 3, "method": "ping"}),
        (3.1, "s2c", {"jsonrpc": "2.0", "id": 3, "error": {"code": -(2**63), "message": "smallest"}}),
        (4.0, "c2s", {"jsonrpc": "2.0", "id": 4, "method": "prompts/get", "params": {"isError": True}}),
        (4.1, "s2c", {"jsonrpc": "2.0", "id": 4, "result": {"isError": True}}),
    ]
    transcript = write_transcript(tmp_path / "t.jsonl", lines)
    rows = _table(transcript, tmp_path / "x.csv").values.tolist()
    assert rows == [
        ["tools/call", "result", "", "True", ""],
        ["ping", "error-result", "", "False", ""],  # not a 64-bit integer: no code kept
        ["ping", "error-result", str(-(2**63)), "False", ""],
        ["prompts/get", "result", "", "False", ""],  # isError is a tool result's word only
    ]
