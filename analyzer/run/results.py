"""What an audit produced: the result types every output renders. They import no reader, so rendering
never depends on how the inputs were read."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import IntEnum
from typing import TYPE_CHECKING, Any

from ..judge.engine import Skip
from ..judge.rule import Rule
from ..merge.align import MergeSummary
from ..model import Finding, Session, Severity
from ..support.spool import SortedSpool, Spool
from .cancellations import Cancellations

if TYPE_CHECKING:
    import pandas as pd


class ExitStatus(IntEnum):
    """What `cancelwire` exits with; a CI job tells each apart."""

    PASSED = 0
    """Nothing at or above the gate (`--fail-on`)."""
    FINDINGS = 1
    """At least one finding at or above the gate."""
    USAGE = 2
    """A usage error, a bad settings or rule file, an output that cannot be written, or nothing readable."""
    INTERNAL = 3
    """A bug in cancelwire (never a verdict on the recordings)."""
    INTERRUPTED = 130
    """Ctrl-C (128 + SIGINT)."""
    TERMINATED = 143
    """SIGTERM (128 + SIGTERM), after cleaning up."""


@dataclass(frozen=True, slots=True)
class Setting:
    """One value that is not the default, and who set it."""

    name: str
    """As in the settings file: `race-window`, `disabled.SLUG`, ..."""
    value: str
    source: str
    """The settings file's path, or `command line`."""


@dataclass(frozen=True, slots=True)
class HowMade:
    """How the report was made, so a reader can tell what the verdicts rest on (every format shows it)."""

    generated: float
    """When the audit finished, epoch seconds (UTC)."""
    settings_file: str | None
    """The settings file used, or None."""
    settings: tuple[Setting, ...]
    """Every value the settings file or the command line changed."""
    race_windows: Mapping[str, float]
    """Vantage → the race window in force, seconds."""
    hold_seconds: float
    max_open: int
    protocol: str | None
    """`--protocol`, or None when each session's own revision was used."""
    vantage: str | None
    """`--vantage`, or None when each format's own was used."""
    rule_dirs: tuple[str, ...] = ()
    preview: bool = False


@dataclass(frozen=True, slots=True)
class InputSummary:
    path: str
    format: str | None
    sessions: tuple[str, ...]
    events: int
    error: str | None = None
    """Why the input could not be read at all (then nothing of it was analysed)."""
    skipped: str | None = None
    """Why a file found by walking a directory was not read (not a format cancelwire reads; a FIFO,
    socket or device; a link to a folder)."""


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
    cancellations: Cancellations
    """Every cancelled call with its timeline (and its JSON text); kept mostly on disk (one pass at a time)."""
    outcomes: Counter[str]
    """Cancelled calls per outcome, counted as they were classified (no pass over the spool)."""
    skips: tuple[Skip, ...]
    disabled: dict[str, str]
    """Rule slug → why it did not run (not selected, preview, disabled in config)."""
    unruled_anomalies: dict[str, int]
    rules: tuple[Rule, ...]
    made: HowMade
    """How the audit was run: settings, race windows, limits, when."""
    exchanges: Spool[dict[str, Any]] | None = None
    """Every exchange as a `exchanges.row`, kept by the library entry point (`cancelwire.audit`); None when
    the audit did not keep them (the command line writes them straight to `--exchanges` instead)."""
    merges: tuple[MergeSummary, ...] = ()
    """`--merge`: per merged session, the clock alignment and what each recording contributed."""

    @property
    def readable(self) -> bool:
        return any(i.error is None and i.skipped is None for i in self.inputs)

    def exit_status(self, fail_on: Severity | None) -> ExitStatus:
        if not self.readable:
            return ExitStatus.USAGE
        if fail_on is None:
            return ExitStatus.PASSED
        failed = any(Severity(name).rank >= fail_on.rank for name in self.findings.by_severity)
        return ExitStatus.FINDINGS if failed else ExitStatus.PASSED

    def close(self) -> None:
        """Remove the on-disk parts (cancellations, findings, exchanges); the result is empty afterwards."""
        self.cancellations.close()
        self.findings.close()
        if self.exchanges is not None:
            self.exchanges.close()

    def __enter__(self) -> AuditResult:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def to_dataframe(self, table: str = "findings") -> pd.DataFrame:
        """`findings`, `cancellations` or `exchanges` as a pandas DataFrame (columns in `frames.py`)."""
        from ..judge.fingerprint import FindingPrints
        from ..tables import frames  # pandas is loaded only by those who ask for a frame

        if table == "findings":
            return frames.findings_frame(self.findings, FindingPrints(self.sessions))
        if table == "cancellations":
            return frames.cancellations_frame(self.cancellations)
        if table == "exchanges":
            if self.exchanges is None:
                raise ValueError("this audit kept no exchanges (cancelwire.audit(..., exchanges=True) keeps them)")
            return frames.exchanges_frame(self.exchanges)
        raise ValueError(f"unknown table {table!r}: findings, cancellations or exchanges")

    def counts(self) -> dict[str, dict[str, int]]:
        return {
            "severity": dict(self.findings.by_severity),
            "outcome": dict(self.outcomes),
            "rule": dict(self.findings.by_rule),
        }
