"""What auditing inputs produces, and how each input's part joins the whole.

Each input is audited on its own (its own `Engine`), into a sink: `AuditSoFar` builds the `AuditResult`
as the audit streams (findings and cancelled calls spooled to disk), and `Partial` keeps one input's
part by value, so it can cross a process boundary pickled (`--jobs`, `--dask`) and be merged later.
Merging partials in input order gives the same result, byte for byte, as auditing in one process:
everything order-dependent (findings within a report key, sessions, skipped rules, unruled anomaly
names, outcome counts) is kept in the order it was produced and appended input after input.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import InputError
from ..judge.engine import Skip
from ..model import CancelledCall, Finding, Session
from .cancellations import Cancellations, Packed, pack
from .results import Findings, InputSummary

Row = dict[str, Any]


class Sink(Protocol):
    """Where an input's audit goes, as it is produced (`pipeline.audit_source`)."""

    def finding(self, finding: Finding) -> None: ...
    def cancelled(self, call: CancelledCall) -> None: ...
    def session(self, session: Session) -> None: ...
    def row(self, row: Row) -> None: ...
    def engine_done(self, skips: Mapping[tuple[str, str], Skip], unruled: Mapping[str, int]) -> None: ...
    def input(self, summary: InputSummary, error: InputError | None) -> None: ...


@dataclass(slots=True)
class Partial:
    """One input's audit, by value (a list of what `AuditSoFar` spools)."""

    inputs: list[InputSummary] = field(default_factory=list)
    """The input's summary (one; none before it is done)."""
    errors: list[InputError] = field(default_factory=list)
    """Why the input could not be read (whole or in part), reported when the partial is merged."""
    sessions: list[Session] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    """In the order found (the merge files them under their report keys)."""
    cancellations: list[CancelledCall] = field(default_factory=list)
    skips: dict[tuple[str, str], Skip] = field(default_factory=dict)
    unruled: dict[str, int] = field(default_factory=dict)
    rows: list[Row] | None = None
    """Exchange table rows (`exchanges.row`), when the caller asked for them."""

    def finding(self, finding: Finding) -> None:
        self.findings.append(finding)

    def cancelled(self, call: CancelledCall) -> None:
        self.cancellations.append(call)

    def session(self, session: Session) -> None:
        self.sessions.append(session)

    def row(self, row: Row) -> None:
        if self.rows is not None:
            self.rows.append(row)

    def engine_done(self, skips: Mapping[tuple[str, str], Skip], unruled: Mapping[str, int]) -> None:
        _join(self.skips, self.unruled, skips, unruled)

    def input(self, summary: InputSummary, error: InputError | None) -> None:
        self.inputs.append(summary)
        if error is not None:
            self.errors.append(error)

    @property
    def events(self) -> int:
        return sum(i.events for i in self.inputs)


def pack_calls(parts: list[Partial]) -> Packed | None:
    """The cancelled calls of consecutive partials (one task's inputs), taken out of them and packed
    with their JSON texts in one pickle each, in the worker that judged them: the merging process
    then appends the bytes to its spools (`AuditSoFar.add_packed`, after the partials) instead of
    converting each call, or unpickling it and pickling it again."""
    calls = [call for part in parts for call in part.cancellations]
    for part in parts:
        part.cancellations = []
    return pack(calls)


class AuditSoFar:
    """The whole audit so far; inputs are added in input order, streamed (`finding`, ...) or as partials."""

    def __init__(
        self,
        on_row: Callable[[Row], None] | None = None,
        on_input_error: Callable[[InputError], None] | None = None,
    ) -> None:
        self.on_row = on_row
        self.on_input_error = on_input_error
        self.inputs: list[InputSummary] = []
        self.sessions: list[Session] = []
        self.findings = Findings()
        self.cancellations = Cancellations()
        self.outcomes: Counter[str] = Counter()
        self.skips: dict[tuple[str, str], Skip] = {}
        self.unruled: dict[str, int] = {}

    def finding(self, finding: Finding) -> None:
        self.findings.add(finding)

    def cancelled(self, call: CancelledCall) -> None:
        self.cancellations.append(call)
        self.outcomes[call.outcome.value] += 1

    def session(self, session: Session) -> None:
        self.sessions.append(session)

    def row(self, row: Row) -> None:
        if self.on_row is not None:
            self.on_row(row)

    def engine_done(self, skips: Mapping[tuple[str, str], Skip], unruled: Mapping[str, int]) -> None:
        _join(self.skips, self.unruled, skips, unruled)

    def input(self, summary: InputSummary, error: InputError | None) -> None:
        self.inputs.append(summary)
        if error is not None and self.on_input_error is not None:
            self.on_input_error(error)

    def add(self, part: Partial) -> None:
        """One input's partial, after those of every input before it."""
        for session in part.sessions:
            self.session(session)
        for call in part.cancellations:
            self.cancelled(call)
        for finding in part.findings:
            self.finding(finding)
        for row in part.rows or ():
            self.row(row)
        self.engine_done(part.skips, part.unruled)
        for error in part.errors:
            if self.on_input_error is not None:
                self.on_input_error(error)
        self.inputs.extend(part.inputs)

    def add_packed(self, packed: Packed) -> None:
        """Cancelled calls packed in another process (`pack_calls`), after those added so far."""
        self.cancellations.extend_packed(packed)
        self.outcomes.update(packed.outcomes)

    def close(self) -> None:
        self.findings.close()
        self.cancellations.close()


def _join(
    skips: dict[tuple[str, str], Skip],
    unruled: dict[str, int],
    more_skips: Mapping[tuple[str, str], Skip],
    more_unruled: Mapping[str, int],
) -> None:
    for key, skip in more_skips.items():
        skips.setdefault(key, skip)
    for name, count in more_unruled.items():
        unruled[name] = unruled.get(name, 0) + count
