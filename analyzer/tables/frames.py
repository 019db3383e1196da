"""An audit's findings, cancelled calls and exchanges as pandas DataFrames (`AuditResult.to_dataframe`).

The exchange frame has the columns of `exchanges.COLUMNS` (documented in `exchanges.py`). The others:

findings
    rule_id, rule     the catalogue id (CW101) and slug (response-after-cancel)
    rule_rev          the rule's revision number
    severity          error | warning | info
    certainty         exact | inferred
    level             the spec level broken (MUST, SHOULD, ...), empty when none
    session           session key
    request_id        the JSON-RPC id as text, empty for session-level findings
    request_id_type   integer | string (the id's JSON type: 1 and "1" are two ids), empty with no id
    method            JSON-RPC method, empty when none
    revision          protocol revision in force, empty when unknown
    ts                epoch seconds (UTC) of the cited message; NaN when the input has no timestamps
    message           the finding's text (recorded text as recorded: render it inert before display)
    evidence          where it was seen (file:line or file#frame, the first cited)
    more_evidence     how many further places were cited and not listed
    fingerprint       the baseline fingerprint (baseline.py): the same when the scenario is recorded again

cancellations
    session, request_id, request_id_type, method, tool   as above; tool empty when the call was not tools/call
    mechanism         notification | disconnect | tasks-cancel
    outcome           clean | late-result-discarded | late-result-violation | outcome-unverified | verified-by-read
    certainty         exact | inferred
    explanation       why that outcome
    evidence          where the cancel was seen
    verified_by       where the verifying read was seen, empty when none
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pandas as pd

from ..model import CancelledCall, Finding
from . import exchanges

FINDING_COLUMNS: dict[str, str] = {
    "rule_id": "category",
    "rule": "category",
    "rule_rev": "Int64",
    "severity": "category",
    "certainty": "category",
    "level": "category",
    "session": "category",
    "request_id": "string",
    "request_id_type": "category",
    "method": "category",
    "revision": "category",
    "ts": "float64",
    "message": "string",
    "evidence": "string",
    "more_evidence": "Int64",
    "fingerprint": "string",
}

CANCELLATION_COLUMNS: dict[str, str] = {
    "session": "category",
    "request_id": "string",
    "request_id_type": "category",
    "method": "category",
    "tool": "string",
    "mechanism": "category",
    "outcome": "category",
    "certainty": "category",
    "explanation": "string",
    "evidence": "string",
    "verified_by": "string",
}


def findings_frame(findings: Iterable[Finding], prints: Callable[[Finding], str]) -> pd.DataFrame:
    """PRINTS: a `fingerprint.FindingPrints` that has met every finding before these (in report order)."""
    return _frame((_finding_row(f, prints(f)) for f in findings), FINDING_COLUMNS)


def cancellations_frame(calls: Iterable[CancelledCall]) -> pd.DataFrame:
    return _frame((_cancellation_row(c) for c in calls), CANCELLATION_COLUMNS)


def exchanges_frame(rows: Iterable[dict[str, Any]]) -> pd.DataFrame:
    return exchanges.frame(list(rows))


def _frame(rows: Iterable[dict[str, Any]], columns: dict[str, str]) -> pd.DataFrame:
    return pd.DataFrame(list(rows), columns=list(columns)).astype(columns)


def _finding_row(f: Finding, fingerprint: str) -> dict[str, Any]:
    return {
        "rule_id": f.rule_id,
        "rule": f.rule,
        "rule_rev": f.rule_rev,
        "severity": f.severity.value,
        "certainty": f.certainty.value,
        "level": f.level.value if f.level else "",
        "session": f.session_key or "",
        "request_id": "" if f.request_id is None else str(f.request_id),
        "request_id_type": exchanges.id_type(f.request_id),
        "method": f.method or "",
        "revision": f.revision or "",
        "ts": float("nan") if f.ts is None else f.ts,
        "message": f.message,
        "evidence": f.evidence[0].display() if f.evidence else "",
        "more_evidence": len(f.evidence) - 1 + f.more_evidence if f.evidence else f.more_evidence,
        "fingerprint": fingerprint,
    }


def _cancellation_row(c: CancelledCall) -> dict[str, Any]:
    return {
        "session": c.session_key,
        "request_id": str(c.request_id),
        "request_id_type": exchanges.id_type(c.request_id),
        "method": c.method,
        "tool": c.tool or "",
        "mechanism": c.mechanism.value,
        "outcome": c.outcome.value,
        "certainty": c.certainty.value,
        "explanation": c.explanation,
        "evidence": c.evidence[0].display() if c.evidence else "",
        "verified_by": c.verified_by.display() if c.verified_by else "",
    }
