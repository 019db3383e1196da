"""What an audit produced: the result types every output renders. They import no reader, so rendering
never depends on how the inputs were read."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from .catalog import Rule
from .engine import Skip
from .model import CancelledCall, Finding, Session, Severity
from .spool import SortedSpool, Spool


@dataclass(frozen=True, slots=True)
class InputSummary:
    path: str
    format: str | None
    sessions: tuple[str, ...]
    events: int
    error: str | None = None
    """Why the input could not be read at all (then nothing of it was analysed)."""
    skipped: str | None = None
    """Why a file found by walking a directory was not read (not a format cancelwire reads)."""


class Findings:
    """Every finding in report order (severity, then rule id, then as found), kept mostly on disk:
    a broken recording can raise a finding per message."""

    def __init__(self) -> None:
        self._sorted: SortedSpool[tuple[int, str], Finding] = SortedSpool()
        self.by_severity: Counter[str] = Counter()
        self.by_rule: Counter[str] = Counter()

    def add(self, finding: Finding) -> None:
        self._sorted.append((-finding.severity.rank, finding.rule_id), finding)
        self.by_severity[finding.severity.value] += 1
        self.by_rule[finding.rule] += 1

    def __len__(self) -> int:
        return sum(self.by_severity.values())

    def __iter__(self) -> Iterator[Finding]:
        return iter(self._sorted)

    def close(self) -> None:
        self._sorted.close()


@dataclass(frozen=True, slots=True)
class AuditResult:
    inputs: tuple[InputSummary, ...]
    sessions: tuple[Session, ...]
    findings: Findings
    cancellations: Spool[CancelledCall]
    """Every cancelled call with its timeline; kept mostly on disk (one pass at a time)."""
    outcomes: Counter[str]
    """Cancelled calls per outcome, counted as they were classified (no pass over the spool)."""
    skips: tuple[Skip, ...]
    disabled: dict[str, str]
    """Rule slug → why it did not run (not selected, preview, disabled in config)."""
    unruled_anomalies: dict[str, int]
    rules: tuple[Rule, ...]

    @property
    def readable(self) -> bool:
        return any(i.error is None and i.skipped is None for i in self.inputs)

    def exit_status(self, fail_on: Severity | None) -> int:
        if not self.readable:
            return 2
        if fail_on is None:
            return 0
        return 1 if any(Severity(name).rank >= fail_on.rank for name in self.findings.by_severity) else 0

    def close(self) -> None:
        """Remove the on-disk parts (cancellations and findings); the result is empty afterwards."""
        self.cancellations.close()
        self.findings.close()

    def counts(self) -> dict[str, dict[str, int]]:
        return {
            "severity": dict(self.findings.by_severity),
            "outcome": dict(self.outcomes),
            "rule": dict(self.findings.by_rule),
        }
