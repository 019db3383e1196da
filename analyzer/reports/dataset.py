"""`--dataset DIR`: an audit's findings, cancelled calls and exchanges appended to Parquet datasets.

    DIR/findings/audit_date=2026-12-03/run-20261203T071502Z-5f3a9c.parquet
    DIR/cancellations/audit_date=2026-12-03/run-20261203T071502Z-5f3a9c.parquet
    DIR/exchanges/audit_date=2026-12-03/run-20261203T071502Z-5f3a9c.parquet

Partitioned by the UTC date of the audit (hive style, so pandas, pyarrow and DuckDB read `audit_date`
as a column), one new file per table and run: a month of nightly audits is appended to and read as
one table, and no run rewrites another's file. Each file has the fixed schema of arrow.py (the columns
of tables/frames.py and tables/exchanges.py) plus `run_id` and `audited_at`; SCHEMA_VERSION is in its metadata.

Files are written to a hidden temp file in their partition (readers skip names starting with `.`)
and renamed into place only when the whole run succeeded: a failed or interrupted run leaves nothing.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import OutputError
from ..run.results import AuditResult
from ..tables.arrow import pyarrow_module, schema, table_of

TABLES = ("findings", "cancellations", "exchanges")
CHUNK_ROWS = 50_000
RUN_COLUMNS = {"run_id": "string", "audited_at": "float64"}
"""Added to every table: which run wrote the row, and when it started (epoch seconds, UTC)."""


class DatasetWriter:
    """One run's three files under DIR; exchanges stream in (`add_exchange`), the rest at `finish`."""

    def __init__(self, root: Path, *, now: float | None = None) -> None:
        self.pa = pyarrow_module("--dataset")
        self.root = root
        started = datetime.now(UTC) if now is None else datetime.fromtimestamp(now, UTC)
        self.audited_at = started.timestamp()
        self.run_id = f"run-{started:%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"
        self.date = f"{started:%Y-%m-%d}"
        self.temps: dict[str, Path] = {}
        self._writers: dict[str, Any] = {}
        self._rows: list[dict[str, Any]] = []
        for table in TABLES:
            self._open(table)

    def target(self, table: str) -> Path:
        return self.root / table / f"audit_date={self.date}" / f"{self.run_id}.parquet"

    def _open(self, table: str) -> None:
        final = self.target(table)
        try:
            final.parent.mkdir(parents=True, exist_ok=True)
            temp = final.with_name(f".{final.name}.cancelwire-tmp")
            self.temps[table] = temp
            self._writers[table] = self.pa.parquet.ParquetWriter(str(temp), _schema(table))
        except OSError as exc:
            raise self._error(exc) from None

    def _error(self, exc: OSError) -> OutputError:
        return OutputError(f"{self.root}: cannot write the --dataset: {exc.strerror or exc}")

    def add_exchange(self, row: dict[str, Any]) -> None:
        self._rows.append(row)
        if len(self._rows) >= CHUNK_ROWS:
            self._write_exchanges()

    def _write_exchanges(self) -> None:
        from ..tables import frames

        rows, self._rows = self._rows, []
        self._write("exchanges", frames.exchanges_frame(rows))

    def _write(self, table: str, frame: Any) -> None:
        frame["run_id"] = self.run_id
        frame["audited_at"] = self.audited_at
        try:
            self._writers[table].write_table(table_of(frame, _schema(table)))
        except OSError as exc:
            raise self._error(exc) from None

    def finish(self, result: AuditResult) -> None:
        """Write the findings and cancelled calls and close every file (still hidden until `commit`)."""
        from ..judge.fingerprint import FindingPrints
        from ..tables import frames

        self._write_exchanges()
        prints = FindingPrints(result.sessions)  # across chunks: an ordinal counts the like findings before
        for chunk in _chunks(result.findings):
            self._write("findings", frames.findings_frame(chunk, prints))
        for calls in _chunks(result.cancellations):
            self._write("cancellations", frames.cancellations_frame(calls))
        for table in TABLES:
            try:
                self._writers.pop(table).close()
            except OSError as exc:
                raise self._error(exc) from None

    def commit(self) -> None:
        for table in TABLES:
            try:
                os.replace(self.temps[table], self.target(table))
            except OSError as exc:
                raise self._error(exc) from None
        self.temps.clear()

    def discard(self) -> None:
        """Remove what this run wrote; called on every failure path."""
        for writer in self._writers.values():
            with contextlib.suppress(Exception):
                writer.close()
        self._writers.clear()
        for temp in self.temps.values():
            with contextlib.suppress(OSError):
                temp.unlink()
        for table in TABLES:  # a partition folder this run made and left empty
            with contextlib.suppress(OSError):
                self.target(table).parent.rmdir()
        self.temps.clear()


def _schema(table: str) -> Any:
    from ..tables import exchanges as tables
    from ..tables import frames

    columns: dict[str, dict[str, str]] = {
        "findings": frames.FINDING_COLUMNS,
        "cancellations": frames.CANCELLATION_COLUMNS,
        "exchanges": tables.COLUMNS,
    }
    return schema(table, columns[table], {name: _ARROW[dtype] for name, dtype in RUN_COLUMNS.items()})


_ARROW = {"string": "string", "float64": "float64"}


def _chunks(items: Iterable[Any], size: int = CHUNK_ROWS) -> Iterator[list[Any]]:
    chunk: list[Any] = []
    for item in items:
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
