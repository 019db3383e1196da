"""The run's verdict, as the reports people read give it: the text report ends with it (like pytest's
and ruff's last line), Markdown and HTML open with it.

It is the exit status put in words, so it is computed from the same `Triage` (findings and gated
outcomes, suppressions, the baseline, `--fail-on`) and cannot disagree with it:

    FAIL: 1 error, 2 warnings, 1 outcome-unverified (warning) in 3 sessions (gate: --fail-on error)
    PASS: 2 warnings in 3 sessions (gate: --fail-on error; 4 known to the baseline, 1 suppressed)
    PASS: no findings in 1 session (gate: --fail-on error; 1 stale suppression (matched nothing))
    PASS: no findings in 1 session (gate: --fail-on error)
    ERROR: nothing could be read (2 inputs)

Counts are of *new* issues (neither suppressed nor in the baseline); known and suppressed ones are
counted after the gate. Every word is ours: no recorded text is in it.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..model import Severity
from ..run.results import ExitStatus
from .gates import Triage

_WORD = {ExitStatus.PASSED: "PASS", ExitStatus.FINDINGS: "FAIL", ExitStatus.USAGE: "ERROR"}
_SEVERITIES = (Severity.ERROR, Severity.WARNING, Severity.INFO)


def plural(count: int, noun: str) -> str:
    """`1 error`, `2 errors`; `info` is a mass noun (`3 info`)."""
    return f"{count} {noun}" if count == 1 or noun == "info" else f"{count} {noun}s"


def verdict(triage: Triage) -> dict[str, Any]:
    """The verdict as plain data for the templates; `word` + `text` is the one-line form."""
    status = triage.exit_status()
    tally = triage.tally()  # the pass the exit status made (cached): no second pass over the spools
    outcomes = tally.new_outcomes
    findings = Counter(tally.new)
    for (_, severity), n in outcomes.items():
        findings[severity] -= n
    known, suppressed = tally.known, tally.suppressed
    sessions = len(triage.result.sessions)
    gate = f"--fail-on {triage.fail_on.value if triage.fail_on else 'never'}"
    if status is ExitStatus.USAGE:
        text = f"nothing could be read ({plural(len(triage.result.inputs), 'input')})"
    else:
        counts = [plural(findings[s.value], s.value) for s in _SEVERITIES if findings[s.value]]
        counts += [f"{n} {outcome} ({severity})" for (outcome, severity), n in sorted(outcomes.items())]
        gated = [gate, *([f"{known} known to the baseline"] if known else [])]
        gated += [f"{suppressed} suppressed"] if suppressed else []
        stale = tally.by_suppression.count(0)
        gated += [f"{plural(stale, 'stale suppression')} (matched nothing)"] if stale else []
        text = f"{', '.join(counts) or 'no findings'} in {plural(sessions, 'session')} (gate: {'; '.join(gated)})"
    return {
        "status": _WORD[status].lower(),
        "word": _WORD[status],
        "text": text,
        "line": f"{_WORD[status]}: {text}",
        "findings": {s.value: findings[s.value] for s in _SEVERITIES},
        "outcomes": [
            {"outcome": outcome, "severity": severity, "count": n}
            for (outcome, severity), n in sorted(outcomes.items())
        ],
        "known": known,
        "suppressed": suppressed,
        "gate": gate,
        "sessions": sessions,
    }
