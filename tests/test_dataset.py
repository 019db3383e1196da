"""--dataset DIR: Parquet datasets of findings, cancelled calls and exchanges, appended run by run."""

from __future__ import annotations

import errno
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest
from cancelwire.cli import main as cli
from cancelwire.reports import dataset
from cancelwire.run.pipeline import audit
from cancelwire.tables import arrow, frames
from cancelwire.tables import exchanges as tables

ROOT = Path(__file__).resolve().parent.parent
STDIO = ROOT / "sample_captures" / "stdio"
SAMPLES = [str(STDIO / "sdk-cancel-slow-tool.jsonl"), str(STDIO / "handwritten-client-cancels-unknown-id.jsonl")]
README_QUERY = re.compile(r"### Datasets: `--dataset`.*?```python\n(.*?)```", re.S)


def _run(root: Path, *more: str) -> int:
    return cli.main(["audit", *SAMPLES, "--dataset", str(root), "-o", os.devnull, "--isolated", *more])


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_each_run_adds_one_file_per_table_and_never_rewrites_one(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    assert _run(root) == 1
    first = {name: (root / name).read_bytes() for name in _files(root)}
    assert len(first) == 3
    assert _run(root, "--jobs", "2") == 1
    files = _files(root)
    assert len(files) == 6
    assert {name: (root / name).read_bytes() for name in first} == first
    for table in dataset.TABLES:
        names = [f for f in files if f.startswith(f"{table}/")]
        assert len(names) == 2
        assert all(
            re.fullmatch(rf"{table}/audit_date=\d{{4}}-\d\d-\d\d/run-\d{{8}}T\d{{6}}Z-[0-9a-f]{{6}}\.parquet", n)
            for n in names
        )

    findings = pd.read_parquet(root / "findings")
    assert findings["run_id"].nunique() == 2
    one_run = findings[findings["run_id"] == findings["run_id"].iloc[0]]
    assert sorted(one_run["rule"].astype(str)) == ["cancel-after-completion", "cancel-unknown-request"]
    calls = pd.read_parquet(root / "cancellations")
    assert calls[["request_id", "tool", "outcome"]].astype(str).drop_duplicates().values.tolist() == [
        ["3", "append_ledger", "outcome-unverified"]
    ]
    exchanges = pd.read_parquet(root / "exchanges")
    assert len(exchanges) == 2 * len(audit_rows())


def audit_rows() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    audit(SAMPLES, on_row=rows.append).close()
    return rows


def test_the_schema_is_fixed_and_documented(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    _run(root)
    for table, columns in (
        ("findings", frames.FINDING_COLUMNS),
        ("cancellations", frames.CANCELLATION_COLUMNS),
        ("exchanges", tables.COLUMNS),
    ):
        (path,) = (root / table).rglob("*.parquet")
        schema = pq.read_schema(path)
        assert schema.names == [*columns, "run_id", "audited_at"]
        for name, dtype in columns.items():
            expected = {
                "category": "dictionary<values=string, indices=int32, ordered=0>",
                "string": "string",
                "float64": "double",
                "bool": "bool",
                "Int64": "int64",
            }[dtype]
            assert str(schema.field(name).type) == expected, (table, name)
        assert schema.metadata[b"cancelwire.table"] == table.encode()
        assert schema.metadata[b"cancelwire.schema"] == arrow.SCHEMA_VERSION.encode()
        # the README's schema table lists every column of every table
        readme = (ROOT / "docs" / "scale.md").read_text()
        for name in schema.names:
            assert f"| `{name}` |" in readme, name


def test_partitions_by_audit_date_and_a_query_over_a_month(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    for day in (1, 2, 15):
        writer = dataset.DatasetWriter(root, now=pd.Timestamp(f"2026-11-{day:02d}T23:59:00Z").timestamp())
        with audit(SAMPLES, on_row=writer.add_exchange) as result:
            writer.finish(result)
        writer.commit()
    dates = sorted(p.name for p in (root / "findings").iterdir())
    assert dates == ["audit_date=2026-11-01", "audit_date=2026-11-02", "audit_date=2026-11-15"]
    findings = pd.read_parquet(root / "findings", filters=[("audit_date", ">=", "2026-11-02")])
    assert sorted(findings["audit_date"].astype(str).unique()) == ["2026-11-02", "2026-11-15"]
    assert len(findings) == 4


def test_the_readme_query_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    _run(tmp_path / "audits")
    match = README_QUERY.search((ROOT / "docs" / "scale.md").read_text())
    assert match is not None
    proc = subprocess.run([sys.executable, "-c", match.group(1)], capture_output=True, text=True, check=True)
    assert proc.stdout.split("\n")[1:] == [
        "cancel-after-completion    1",
        "cancel-unknown-request     1",
        "dtype: int64",
        "",
    ]


def test_a_failed_run_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "ds"
    _run(root)
    before = _files(root)

    def full(self: Any, result: Any) -> None:
        self._write_exchanges()
        raise self._error(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))

    monkeypatch.setattr(dataset.DatasetWriter, "finish", full)
    capsys.readouterr()
    assert _run(root) == 2
    assert (
        capsys.readouterr().err == f"cancelwire: error: {root}: cannot write the --dataset: No space left on device\n"
    )
    assert _files(root) == before


def test_an_unwritable_dataset_fails_before_the_audit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert _run(blocker) == 2
    assert capsys.readouterr().err == f"cancelwire: error: {blocker}: cannot write the --dataset: Not a directory\n"
