"""What a reader's tests ask of an audit of one fixture: its report, and its findings in short."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cancelwire.reports.document import build
from cancelwire.run.pipeline import audit

ROOT = Path(__file__).resolve().parents[1]


def report_of(path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The JSON report of auditing PATH (named relative to the checkout, as evidence shows it)."""
    monkeypatch.chdir(ROOT)
    return build(audit([str(path.relative_to(ROOT))]))


def findings_of(report: dict[str, Any]) -> list[tuple[Any, ...]]:
    """(rule id, severity, certainty, request id, evidence lines) of each finding, in report order."""
    return [
        (f["rule_id"], f["severity"], f["certainty"], f["request_id"], [e["line"] for e in f["evidence"]])
        for f in report["findings"]
    ]
