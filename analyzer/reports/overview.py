"""The HTML report's overview charts, computed with pandas from the exchange table and the findings.

Four questions a postmortem asks first: what became of the cancelled calls, which rules fired at
which severity, how long a request kept talking after its cancel, and how long calls take by method
and tool. Each chart lists at most `ROWS` rows and says what it left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd
from markupsafe import Markup

from ..judge.fingerprint import FindingPrints
from ..run.results import AuditResult
from ..support import inert
from ..tables import exchanges, frames
from . import charts

ROWS = 15
QUARTILES = {"low": 0.0, "q1": 0.25, "median": 0.5, "q3": 0.75, "high": 1.0}
SEVERITIES = ("error", "warning", "info")
OUTCOMES = ("late-result-violation", "outcome-unverified", "late-result-discarded", "verified-by-read", "clean")


@dataclass(frozen=True, slots=True)
class Chart:
    id: str
    title: str
    svg: Markup | None
    """None when there is nothing to draw (then `note` says why)."""
    note: str


def charts_of(result: AuditResult, by_outcome: Mapping[str, int]) -> list[Chart]:
    exchanges = _exchanges(result)
    return [
        _outcomes(exchanges, by_outcome),
        _findings(frames.findings_frame(result.findings, FindingPrints(result.sessions))),
        _after_cancel(exchanges),
        _latency(exchanges),
    ]


def _exchanges(result: AuditResult) -> pd.DataFrame | None:
    if result.exchanges is None:
        return None
    wanted = ["method", "tool", "duration", "cancelled", "outcome", "cancel_ts", "last_ts"]
    rows = ({k: row.get(k) for k in wanted} for row in result.exchanges)
    data = pd.DataFrame(rows, columns=wanted)
    return data.astype({k: exchanges.COLUMNS[k] for k in wanted})


def _outcomes(exchanges: pd.DataFrame | None, by_outcome: Mapping[str, int]) -> Chart:
    title = "Cancelled calls by outcome"
    if exchanges is not None:
        counts = exchanges.loc[exchanges["cancelled"], "outcome"].astype("string").value_counts()
        by_outcome = {str(k): int(v) for k, v in counts.items()}
    order = [o for o in OUTCOMES if by_outcome.get(o)] + sorted(set(by_outcome) - set(OUTCOMES))
    if not order:
        return Chart("chart-outcomes", title, None, "No request was cancelled.")
    rows = [charts.BarRow(o, ((o, by_outcome[o]),)) for o in order]
    return Chart("chart-outcomes", title, charts.bars(title, rows, "call(s)"), "")


def _findings(findings: pd.DataFrame) -> Chart:
    title = "Findings by rule and severity"
    if findings.empty:
        return Chart("chart-findings", title, None, "No findings.")
    label = findings["rule_id"].astype("string") + " " + findings["rule"].astype("string")
    table = pd.crosstab(label, findings["severity"]).reindex(columns=list(SEVERITIES), fill_value=0)
    # worst severity first, then rule id (the findings table's order); crosstab sorted the labels by id
    worst = table.apply(lambda row: next(i for i, s in enumerate(SEVERITIES) if row[s]), axis=1)
    table = table.assign(_worst=worst).sort_values(["_worst"], kind="stable").drop(columns="_worst")
    rows = [
        charts.BarRow(str(rule), tuple((s, int(counts[s])) for s in SEVERITIES))
        for rule, counts in table.head(ROWS).iterrows()
    ]
    return Chart("chart-findings", title, charts.bars(title, rows, "finding(s)"), _more(len(table), "rules"))


def _after_cancel(exchanges: pd.DataFrame | None) -> Chart:
    title = "Time from the cancel to the request's last message, by outcome"
    if exchanges is None:
        return Chart("chart-after-cancel", title, None, "The exchange table was not kept for this report.")
    cancelled = exchanges[exchanges["cancelled"]]
    gap = (cancelled["last_ts"] - cancelled["cancel_ts"]).clip(lower=0)
    data = pd.DataFrame({"label": cancelled["outcome"].astype("string"), "seconds": gap}).dropna()
    note = "0 means nothing was sent after the cancel. "
    return _box_chart("chart-after-cancel", title, data, note + _untimed(len(cancelled) - len(data)))


def _latency(exchanges: pd.DataFrame | None) -> Chart:
    title = "Latency by method and tool (request to first reply)"
    if exchanges is None:
        return Chart("chart-latency", title, None, "The exchange table was not kept for this report.")
    label = exchanges["method"].astype("string") + (" " + exchanges["tool"]).where(exchanges["tool"] != "", "")
    data = pd.DataFrame({"label": label, "seconds": exchanges["duration"]}).dropna()
    return _box_chart("chart-latency", title, data, _untimed(len(exchanges) - len(data), "without a timed reply"))


def _box_chart(chart_id: str, title: str, data: pd.DataFrame, note: str) -> Chart:
    if data.empty:
        return Chart(chart_id, title, None, (note + " Nothing to draw.").strip())
    grouped = data.groupby("label", sort=False)["seconds"]
    stats = pd.DataFrame({name: grouped.quantile(q) for name, q in QUARTILES.items()})
    stats["count"] = grouped.size()
    stats = stats.sort_values(["count", "median"], ascending=[False, False], kind="stable")
    rows = [_box(str(label), row) for label, row in stats.head(ROWS).iterrows()]
    return Chart(chart_id, title, charts.boxes(title, rows), (note + " " + _more(len(stats), "groups")).strip())


def _box(label: str, row: pd.Series[Any]) -> charts.Box:
    return charts.Box(
        label=inert.terminal(label),  # a recorded method and tool name: no bidi or control in a tooltip
        count=int(row["count"]),
        low=float(row["low"]),
        q1=float(row["q1"]),
        median=float(row["median"]),
        q3=float(row["q3"]),
        high=float(row["high"]),
    )


def _more(total: int, what: str) -> str:
    return f"The {ROWS} largest of {total} {what} are drawn." if total > ROWS else ""


def _untimed(count: int, what: str = "without timestamps") -> str:
    return f"{count} request(s) {what} are not drawn." if count else ""
