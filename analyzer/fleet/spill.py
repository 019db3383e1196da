"""A task's results through a file, a batch at a time (`--jobs N`), instead of whole through the pipe.

A worker that sent its task's partials by value (every finding, exchange row and packed cancelled call)
made the merging process unpickle a whole recording's worth at once, so its peak memory grew with the
largest recording (issue 20), and so did the worker's. Now a worker audits its task's inputs into a
`Spill`: what its inputs yield is written to a file in batches as it comes (findings, exchange rows,
and cancelled calls packed with their JSON texts, so that conversion still runs in the workers), and
each input's small remainder (its summary, sessions, skipped rules) when it is done. The worker sends
back the file's path; `merge` reads it a batch at a time into the whole and deletes it. Each kind of
item comes in the order the audit produced it, so the merged result is the one `--jobs 1` makes,
byte for byte; a batch may hold the items of several inputs, so it is as full as `--jobs 1`'s spools.
"""

from __future__ import annotations

import os
import pickle
import tempfile
from collections.abc import Iterator, Mapping
from enum import Enum
from typing import IO, Any

from ..errors import InputError
from ..judge.engine import Skip
from ..model import CancelledCall, Finding, Session
from ..run.cancellations import pack
from ..run.partial import AuditSoFar, Partial, Row
from ..run.results import InputSummary

BATCH = 64
"""Items written per record: what either process holds of a task's results at a time."""


class Record(Enum):
    """What one record of a spill file holds."""

    FINDINGS = "findings"
    ROWS = "rows"
    CALLS = "calls"
    """Cancelled calls packed with their JSON texts (`cancellations.pack`)."""
    INPUT = "input"
    """An input's remainder (a `Partial` without findings, rows or calls), after all of the above of it."""


class Spill:
    """A sink for one task's inputs (the `Sink` of `pipeline.audit_source`) that writes them to a file."""

    def __init__(self, folder: str) -> None:
        fd, self.path = tempfile.mkstemp(prefix="task-", suffix=".pickle", dir=folder)
        self._file: IO[bytes] = os.fdopen(fd, "wb")
        self._findings: list[Finding] = []
        self._rows: list[Row] = []
        self._calls: list[CancelledCall] = []
        self._part = Partial()

    def finding(self, finding: Finding) -> None:
        self._add(Record.FINDINGS, self._findings, finding)

    def cancelled(self, call: CancelledCall) -> None:
        self._add(Record.CALLS, self._calls, call)

    def row(self, row: Row) -> None:
        self._add(Record.ROWS, self._rows, row)

    def session(self, session: Session) -> None:
        self._part.session(session)

    def engine_done(self, skips: Mapping[tuple[str, str], Skip], unruled: Mapping[str, int]) -> None:
        self._part.engine_done(skips, unruled)

    def input(self, summary: InputSummary, error: InputError | None) -> None:
        """The input is done: its remainder is written (its findings, rows and calls that wait for a
        full batch are written with the next input's, or at the end)."""
        self._part.input(summary, error)
        self._dump(Record.INPUT, self._part)
        self._part = Partial()

    def close(self) -> str:
        """Write what waits and close the file; its path, for `merge`."""
        self._write(Record.FINDINGS, self._findings)
        self._write(Record.ROWS, self._rows)
        self._write(Record.CALLS, self._calls)
        self._file.close()
        return self.path

    def _add(self, record: Record, batch: list[Any], item: object) -> None:
        batch.append(item)
        if len(batch) >= BATCH:
            self._write(record, batch)

    def _write(self, record: Record, batch: list[Any]) -> None:
        if batch:
            self._dump(record, pack(batch) if record is Record.CALLS else list(batch))
            batch.clear()

    def _dump(self, record: Record, value: object) -> None:
        pickle.dump((record, value), self._file, protocol=pickle.HIGHEST_PROTOCOL)


def merge(path: str, into: AuditSoFar) -> Iterator[Partial]:
    """Add a spill file's findings, rows and calls to INTO as they are read, and yield each input's
    remainder (for the caller to add) once what came before it is added; the file is deleted once read."""
    try:
        with open(path, "rb") as file:
            while (part := _read(file, into)) is not _END:
                if part is not None:
                    yield part
    finally:
        os.unlink(path)


_END = Partial()
"""`_read` at the end of the file."""


def _read(file: IO[bytes], into: AuditSoFar) -> Partial | None:
    """One record: added to INTO, or an input's remainder returned. (A function of its own, so one
    record is freed before the next is read.)"""
    try:
        record, value = pickle.load(file)  # our own file, written by our own worker
    except EOFError:
        return _END
    if record is Record.FINDINGS:
        for finding in value:
            into.finding(finding)
    elif record is Record.ROWS:
        for row in value:
            into.row(row)
    elif record is Record.CALLS:
        into.add_packed(value)
    else:
        return value  # type: ignore[no-any-return]
    return None
