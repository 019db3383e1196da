"""A test's recordings audited as `cancelwire audit` would audit them, with the project's settings file
(`cancelwire.toml` or `[tool.cancelwire]`, found from the pytest root upwards) and its gates: the findings
and gated outcomes at or above `error`, less what the settings file suppresses, fail the test.

The failure text is the text report, with its terminal escaping of everything recorded (`support/inert`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..ci.gates import Triage
from ..ci.policy import Gate, Suppression, parse_gates
from ..config import Settings
from ..model import CancelledCall, Finding, Outcome, Severity
from ..rebuild.reconstruct import ReconstructOptions
from ..reports.formats import render
from ..run.pipeline import AuditOptions, audit
from ..run.results import ExitStatus, Setting
from ..support.outputs import AtomicOutput

#: The reports kept beside the recordings with `--cancelwire-dir` (file name → format).
KEPT_REPORTS = {"report.txt": "text", "report.json": "json"}


@dataclass(frozen=True, slots=True)
class Policy:
    """How a test's recordings are judged: the audit options and the gate, from the settings file."""

    options: AuditOptions = field(default_factory=AuditOptions)
    gates: dict[Outcome, Gate] = field(default_factory=dict)
    suppressions: tuple[Suppression, ...] = ()
    fail_on: Severity = Severity.ERROR


def policy_of(settings: Settings) -> Policy:
    """The settings file's values as `cancelwire audit` applies them when no option overrides one."""
    defaults = ReconstructOptions()
    where = str(settings.path)
    options = AuditOptions(
        reconstruct=ReconstructOptions(
            race_window=settings.race_window,
            max_open=defaults.max_open if settings.max_open is None else settings.max_open,
            hold_seconds=defaults.hold_seconds if settings.hold is None else settings.hold,
            verifying_reads=settings.verifying_reads,
        ),
        ignore=dict(settings.disabled),
        settings_file=settings.path,
        settings=tuple(Setting(key, value, where) for key, value in settings.values()),
    )
    gates = parse_gates(settings.gates, f"{where}: gates", ("gates",))
    return Policy(options=options, gates=gates, suppressions=settings.suppress)


@dataclass(frozen=True, slots=True)
class RecordedAudit:
    """The audit of the MCP sessions one test recorded (the `cancelwire_audit` fixture returns one)."""

    recordings: tuple[Path, ...]
    findings: tuple[Finding, ...]
    cancellations: tuple[CancelledCall, ...]
    """Every cancelled call, with its `outcome` (`Outcome.CLEAN`, ...) and explanation."""
    status: ExitStatus
    """What `cancelwire audit` would exit with: PASSED, FINDINGS (the gate failed) or USAGE (nothing readable)."""
    report: str
    """The text report, ending with the verdict line."""

    @property
    def passed(self) -> bool:
        return self.status is ExitStatus.PASSED

    @property
    def outcomes(self) -> list[Outcome]:
        return [c.outcome for c in self.cancellations]


def audit_recordings(paths: list[Path], policy: Policy, keep: Path | None = None) -> RecordedAudit:
    """PATHS audited under POLICY; with KEEP, the text and JSON reports are written into that folder."""
    with audit([str(p) for p in paths], policy.options) as result:
        triage = Triage(result, fail_on=policy.fail_on, gates=policy.gates, suppressions=policy.suppressions)
        report = render(result, "text", triage, verbose=True)
        if keep is not None:
            for name, fmt in KEPT_REPORTS.items():
                out = AtomicOutput(keep / name, "--cancelwire-dir")
                try:
                    text = report if fmt == "text" else render(result, fmt, triage)
                    out.writing.write_text(text, encoding="utf-8")
                    out.commit()
                except OSError as exc:
                    raise out.error(exc) from None
                finally:
                    out.discard()
        return RecordedAudit(
            recordings=tuple(paths),
            findings=tuple(result.findings),
            cancellations=tuple(result.cancellations),
            status=triage.exit_status(),
            report=report,
        )
