"""What the HTML report shows beyond the report dict: the verdict against the gate, call numbers that
findings link to, timelines with runs of like messages collapsed, and human words for internal names.

The page is written from the same report dict as every other format (`document._build`), so it shows
the same findings and cancelled calls; this module only arranges them for a person in a postmortem.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO

from ..ci.gates import Triage
from ..ci.issue import IssueKind
from ..ci.policy import DEFAULT_GATES, OUTCOME_HELP
from ..model.forms import frame_filter
from . import rendering
from .document import prepare
from .formats import WriteOptions

#: The worst findings repeated in the verdict, so the first screen shows what to look at.
WORST_SHOWN = 5
#: Characters of a raw message shown in a timeline row; the whole excerpt is one click away.
EXCERPT_SHOWN = 160
#: Cancelled calls drawn in full (diagram and timeline); the rest are rows of the summary table only.
CALLS_DRAWN = 300

#: Timeline entry kinds in words (the report dict keeps the catalogue's names).
KIND_WORDS: Mapping[str, str] = {
    "request": "request",
    "progress": "progress",
    "related-message": "related message",
    "result": "result",
    "error-result": "error reply",
    "cancel": "cancel",
    "cancel-answer": "answer to tasks/cancel",
    "task-status": "task status",
    "task-result": "task result",
    "read": "verifying read",
    "stream-opened": "stream opened",
    "stream-closed-by-client": "client closed the stream",
    "stream-closed-by-server": "server closed the stream",
    "stream-reset-by-client": "client reset the stream",
    "stream-reset-by-server": "server reset the stream",
    "receive-window-zero": "client stopped reading (receive window 0)",
    "server-bytes": "server bytes that are no whole message",
    "recording-ended": "recording ended",
}
RELATION_WORDS: Mapping[str, str] = {
    "before": "before the cancel",
    "crossing": "crossed the cancel in flight",
    "after": "after the cancel reached the receiver",
    "cancel": "the cancel",
}
SEVERITY_RANK: Mapping[str, int] = {"error": 0, "warning": 1, "info": 2}


@dataclass(frozen=True, slots=True)
class Verdict:
    """Pass or fail against the gate, and which gate decided."""

    passed: bool
    headline: str
    decided_by: tuple[str, ...]
    """One line per kind of failing issue: what it is and the gate that made it fail."""
    notes: tuple[str, ...]
    """Issues that did not count, and why (baseline, suppressed, below the gate)."""


def verdict(triage: Triage) -> Verdict:
    if not triage.result.readable:
        return Verdict(False, "FAIL: nothing could be read, so nothing was judged", (), ())
    fail_on = triage.fail_on
    tally = triage.tally()
    failing: Counter[tuple[str, str, str]] = Counter()
    for issue in triage:
        if issue.fails(fail_on):
            failing[(issue.kind.value, issue.title, issue.severity.value)] += 1
    notes = []
    if tally.known:
        notes.append(f"{tally.known} issue(s) known to the baseline do not count")
    if tally.suppressed:
        notes.append(f"{tally.suppressed} issue(s) accepted in the settings file do not count")
    stale = tally.by_suppression.count(0)
    if stale:
        notes.append(f"{stale} suppression(s) in the settings file matched nothing (stale: they can go)")
    new = sum(tally.new.values())
    if fail_on is None:
        notes.append(f"{new} new issue(s), none of which can fail the run")
        return Verdict(True, "PASS: the gate is off (--fail-on never)", (), tuple(notes))
    gate = f"--fail-on {fail_on.value}"
    if not failing:
        if new:
            notes.append(f"{new} new issue(s) below the gate")
        return Verdict(True, f"PASS: nothing new at or above the gate ({gate})", (), tuple(notes))
    decided = tuple(_decided(triage, kind, title, severity, n) for (kind, title, severity), n in _ranked(failing))
    total = sum(failing.values())
    return Verdict(False, f"FAIL: {total} new issue(s) at or above the gate ({gate})", decided, tuple(notes))


def _ranked(failing: Counter[tuple[str, str, str]]) -> list[tuple[tuple[str, str, str], int]]:
    return sorted(failing.items(), key=lambda kv: (SEVERITY_RANK[kv[0][2]], kv[0][0], kv[0][1]))


def _decided(triage: Triage, kind: str, title: str, severity: str, count: int) -> str:
    if kind == IssueKind.FINDING.value:
        return f"{count} × {title} ({severity} finding)"
    outcome = next(o for o in triage.gates if o.value == title)
    gate = triage.gates[outcome]
    source = "the default gate" if DEFAULT_GATES.get(outcome) is gate else "the settings file or --gate"
    return f"{count} × cancelled call(s) with outcome {title} (gated as {gate.value} by {source})"


@dataclass
class Calls:
    """The cancelled calls the page lists, numbered from 1, and where findings link to them."""

    listed: list[dict[str, Any]] = field(default_factory=list)
    by_request: dict[tuple[str, str], int] = field(default_factory=dict)
    """(session, request id as text) → call number."""
    anchors: dict[tuple[str, int | None, int | None], str] = field(default_factory=dict)
    """(source, line, frame) of a timeline entry → the id of its row."""

    @classmethod
    def of(cls, cancellations: Iterable[dict[str, Any]]) -> Calls:
        calls = cls()
        for n, call in enumerate(cancellations, 1):
            call["n"] = n
            call["drawn"] = n <= CALLS_DRAWN
            call["groups"] = groups(call["timeline"], n) if call["drawn"] else []
            call["display_filter"] = frame_filter(
                e["evidence"]["frame"] for e in call["timeline"] if "frame" in e["evidence"]
            )
            calls.listed.append(call)
            calls.by_request.setdefault((call["session"], str(call["request_id"])), n)
            for group in call["groups"]:
                for entry in group["entries"]:
                    calls.anchors.setdefault(_key(entry["evidence"]), entry["anchor"])
        return calls

    def call_of(self, finding: Mapping[str, Any]) -> dict[str, Any] | None:
        if finding["request_id"] is None or finding["session"] is None:
            return None
        n = self.by_request.get((finding["session"], str(finding["request_id"])))
        return None if n is None else self.listed[n - 1]

    def places(self, evidence: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Evidence grouped by file: each file once, then its lines or frames, each linked to its
        timeline row when the page shows it."""
        by_source: dict[str, list[dict[str, Any]]] = {}
        for e in evidence:
            mark = f"#{e['frame']}" if "frame" in e else f":{e['line']}" if "line" in e else ""
            by_source.setdefault(e["source"], []).append({"mark": mark, "anchor": self.anchors.get(_key(e))})
        return [{"source": source, "marks": marks} for source, marks in by_source.items()]


def _key(evidence: Mapping[str, Any]) -> tuple[str, int | None, int | None]:
    return (evidence["source"], evidence.get("line"), evidence.get("frame"))


def groups(timeline: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """Runs of like entries (same kind, side and relation) as one group each: a flooding call shows as
    "progress × 57", not as a row per message. Each entry gets the id of its row (`call-N-I`)."""
    out = []
    position = itertools.count()
    for (kind, side, relation), run in itertools.groupby(timeline, lambda e: (e["kind"], e["side"], e["relation"])):
        entries = list(run)
        for entry in entries:
            entry["anchor"] = f"call-{n}-{next(position)}"
        out.append(
            {
                "kind": kind,
                "side": side,
                "relation": relation,
                "entries": entries,
                "messages": sum(e["repeats"] for e in entries),
            }
        )
    return out


def worst(findings: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The first findings of the highest severity there is (findings come worst first)."""
    first = list(itertools.islice(findings, WORST_SHOWN))
    return [f for f in first if f["severity"] == first[0]["severity"]] if first else []


def worst_call(findings: Iterable[dict[str, Any]], calls: Calls) -> dict[str, Any] | None:
    """The drawn cancelled call of the worst finding about one, for the first screen."""
    for finding in findings:
        call = calls.call_of(finding)
        if call is not None and call["drawn"]:
            return call
    return None


def _charts(triage: Triage, report: dict[str, Any]) -> Any:
    # imported here: overview needs pandas, 0.7 s of import that only the HTML page should pay
    from . import overview

    return overview.charts_of(triage.result, report["summary"]["by_outcome"])


def write(report: dict[str, Any], triage: Triage, out: TextIO) -> None:
    calls = Calls.of(report["cancellations"])
    worst_findings = worst(report["findings"])
    page = {
        "verdict": verdict(triage),
        "calls": calls,
        "worst": worst_findings,
        "worst_call": worst_call(worst_findings, calls),
        "charts": _charts(triage, report),
        "outcome_help": OUTCOME_HELP,
        "kind_words": KIND_WORDS,
        "relation_words": RELATION_WORDS,
        "excerpt_shown": EXCERPT_SHOWN,
        "calls_drawn": CALLS_DRAWN,
    }
    rendering.write(report, "html", out, page=page)


def write_format(triage: Triage, out: TextIO, fmt: str, options: WriteOptions) -> None:
    """The HTML page of TRIAGE's audit: it leads with the verdict against the gate."""
    write(prepare(triage, fmt), triage, out)
