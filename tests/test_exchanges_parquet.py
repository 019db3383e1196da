"""--exchanges X.parquet keeps one schema whatever the chunks hold.

Seen as a new user would: one transcript of 60k requests plus 300 small ones died with "Table schema
does not match schema used to create file": pandas gave the `session` category int8 codes in the first
chunk (one session) and int16 in the next (300 sessions). The real sizes are kept in the test.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from cancelwire.cli import main as cli
from cancelwire.tables import exchanges as tables

BIG_REQUESTS = 60_000
SMALL = 300


def _big_transcript(path: Path) -> Path:
    header = {"cancelwire_transcript": 1, "transport": "stdio", "vantage": "proxy"}
    lines = [json.dumps(header)]
    for i in range(1, BIG_REQUESTS + 1):
        call = {"jsonrpc": "2.0", "id": i, "method": "ping"}
        lines.append(json.dumps({"ts": i * 0.001, "dir": "c2s", "line": json.dumps(call)}))
        reply = {"jsonrpc": "2.0", "id": i, "result": {}}
        lines.append(json.dumps({"ts": i * 0.001 + 0.0005, "dir": "s2c", "line": json.dumps(reply)}))
    path.write_text("\n".join(lines) + "\n")
    return path


def _small_ones(folder: Path) -> Path:
    folder.mkdir()
    header = json.dumps({"cancelwire_transcript": 1, "transport": "stdio", "vantage": "proxy"})
    for n in range(SMALL):
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": f"tool{n}"}}
        reply = {"jsonrpc": "2.0", "id": 1, "result": {}}
        body = [json.dumps({"ts": 1.0, "dir": "c2s", "line": json.dumps(call)})]
        body.append(json.dumps({"ts": 1.5, "dir": "s2c", "line": json.dumps(reply)}))
        (folder / f"small-{n:03d}.jsonl").write_text("\n".join([header, *body]) + "\n")
    return folder


def test_one_big_transcript_and_300_small_ones(tmp_path: Path) -> None:
    inputs = [str(_big_transcript(tmp_path / "big.jsonl")), str(_small_ones(tmp_path / "small"))]
    out = tmp_path / "out" / "x.parquet"
    out.parent.mkdir()
    status = cli.main(
        ["audit", *inputs, "--exchanges", str(out), "-o", str(tmp_path / "r.txt")]
    )  # 301 inputs: two workers
    assert status == 0
    assert sorted(p.name for p in out.parent.iterdir()) == ["x.parquet"]
    data = pq.read_table(out)
    assert data.num_rows == BIG_REQUESTS + SMALL
    assert pq.ParquetFile(out).metadata.num_row_groups == 2  # chunks of tables.CHUNK_ROWS
    assert str(data.schema.field("session").type) == "dictionary<values=string, indices=int32, ordered=0>"
    frame = data.to_pandas()
    assert frame["session"].nunique() == 1 + SMALL
    assert frame["method"].value_counts().to_dict() == {"ping": BIG_REQUESTS, "tools/call": SMALL}
    assert list(frame.columns) == list(tables.COLUMNS)


def test_parquet_without_pyarrow_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow raises ImportError
    out = tmp_path / "x.parquet"
    sample = Path(__file__).parent.parent / "sample_captures" / "stdio" / "sdk-clean-session.jsonl"
    assert cli.main(["audit", str(sample), "--exchanges", str(out), "--isolated"]) == 2
    assert capsys.readouterr().err == (
        "cancelwire: error: --exchanges: writing Parquet needs pyarrow\n"
        "  hint: pip install 'cancelwire[parquet]' (or write .csv)\n"
    )
    assert list(tmp_path.iterdir()) == []
