"""The ids 1 and "1" are two requests (JSON-RPC ids are equal only with the same type; the engine keeps
them apart): the tables keep the id's type in `request_id_type`, and `diagram --request 1` refuses to
guess which one is meant (issue 19)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from cancelwire import audit
from fuzzing import run_cli

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "handwritten-ids-one-and-string-one.jsonl"
ROWS = [
    ("0", "integer", "initialize", ""),
    ("1", "string", "ping", ""),
    ("1", "integer", "tools/call", "late-result-violation"),
]


def _rows(data: pd.DataFrame) -> list[tuple[str, str, str, str]]:
    columns = ["request_id", "request_id_type", "method", "outcome"]
    return [tuple(str(v) for v in row) for row in data[columns].itertuples(index=False)]  # type: ignore[misc]


def test_the_exchange_table_tells_the_two_ids_apart(tmp_path: Path) -> None:
    for name in ("x.csv", "x.parquet"):
        out = tmp_path / name
        assert (
            run_cli(["audit", str(FIXTURE), "--exchanges", str(out), "-o", str(tmp_path / "r.txt")]).status == 0
        )  # a warning
        data = pd.read_csv(out, dtype=str, keep_default_na=False) if name.endswith(".csv") else pd.read_parquet(out)
        assert _rows(data) == ROWS
    with audit([str(FIXTURE)]) as result:
        assert _rows(result.to_dataframe("exchanges")) == ROWS
        calls = result.to_dataframe("cancellations")
        assert calls[["request_id", "request_id_type"]].astype(str).values.tolist() == [["1", "integer"]]
        findings = result.to_dataframe("findings")
        assert findings[["rule", "request_id", "request_id_type"]].astype(str).values.tolist() == [
            ["response-after-cancel", "1", "integer"]
        ]


def test_the_dataset_tells_the_two_ids_apart(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    assert (
        run_cli(["audit", str(FIXTURE), "--dataset", str(root), "-o", str(tmp_path / "r.txt")]).status == 0
    )  # a warning
    exchanges = pd.read_parquet(root / "exchanges").sort_values(["request_id", "request_id_type"])
    assert [
        tuple(str(v) for v in r) for r in exchanges[["request_id", "request_id_type", "method"]].itertuples(index=False)
    ] == [
        ("0", "integer", "initialize"),
        ("1", "integer", "tools/call"),
        ("1", "string", "ping"),
    ]


def test_an_ambiguous_request_is_refused_with_both_ways_to_say_it() -> None:
    run = run_cli(["diagram", str(FIXTURE), "--request", "1"])
    assert run.status == 2
    assert run.stdout == ""
    assert run.stderr == (
        "cancelwire: error: id 1 is both an integer id and a string id: two requests\n"
        '  hint: say which: --request 1 --id-type integer (the id 1), or --request 1 --id-type string (the id "1")\n'
    )


@pytest.mark.parametrize(("id_type", "drawn"), [("integer", "tools/call slow id 1"), ("string", "ping id 1")])
def test_the_id_type_picks_one(id_type: str, drawn: str) -> None:
    run = run_cli(["diagram", str(FIXTURE), "--request", "1", "--id-type", id_type])
    assert run.status == 0
    assert f'aria-label="Sequence diagram of {drawn} in {FIXTURE}' in run.stdout


def test_an_id_of_one_type_needs_no_id_type(tmp_path: Path) -> None:
    """The reverse case: only the integer 0 reads as 0, so --request 0 is the initialize call; and an
    --id-type that names no such id is no request."""
    assert "Sequence diagram of initialize id 0" in run_cli(["diagram", str(FIXTURE), "--request", "0"]).stdout
    run = run_cli(["diagram", str(FIXTURE), "--request", "0", "--id-type", "string"])
    assert run.status == 2
    assert run.stderr.startswith("cancelwire: error: no request with id '0'\n")
