"""`AuditResult` → one plain, versioned report dict → JSON, or text/Markdown/HTML through jinja2.

Captured content is hostile: `rendering` makes every value inert for its medium (terminal escapes,
inert Markdown, autoescaped HTML), and the HTML page loads nothing from the network (CSS is inline).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TextIO, TypeVar

from .._version import __version__
from ..ci.gates import Triage
from ..judge.catalog import load_catalog
from ..judge.engine import SkipKind
from ..judge.fingerprint import FindingPrints
from ..judge.rule import Rule
from ..model import Finding, Session, jsonrpc
from ..model.forms import cancellation, display_filter, listed_json, origin_dict, time_text
from ..run.results import AuditResult, HowMade
from ..support import inert
from .formats import WriteOptions

if TYPE_CHECKING:
    from ..merge.align import MergeSummary

#: Bumped on any incompatible change of the JSON report (independent of the tool version).
SCHEMA_VERSION = 1
SHOWN_PER_RULE = 200
SHOWN_PER_OUTCOME = 200
MARKDOWN_SHOWN_PER_KEY = 25

T = TypeVar("T")


def _findings(sessions: Iterable[Session]) -> Callable[[Finding], dict[str, Any]]:
    """Converts findings met in report order (a fingerprint's ordinal counts the like ones before it)."""
    prints = FindingPrints(sessions)
    return lambda f: _finding(f, prints(f))


def _finding(f: Finding, fingerprint: str) -> dict[str, Any]:
    return {
        "rule_id": f.rule_id,
        "rule": f.rule,
        "rule_rev": f.rule_rev,
        "severity": f.severity.value,
        "level": f.level.value if f.level else None,
        "certainty": f.certainty.value,
        "session": f.session_key,
        "request_id": f.request_id,
        "method": f.method,
        "tool": f.tool,
        "ts": f.ts,
        "time": time_text(f.ts),
        "message": f.message,
        "revision": f.revision,
        "evidence": [origin_dict(o) for o in f.evidence],
        "more_evidence": f.more_evidence,
        "display_filter": display_filter(f.evidence, f.streams),
        "fingerprint": fingerprint,
    }


def _merge(m: MergeSummary) -> dict[str, Any]:
    """One merged session (`--merge`): the clock alignment and what each recording contributed."""
    primary, secondary = m.recordings
    clock = m.clock
    if clock is None:
        text = f"clocks not aligned (no request and reply both hold times): {secondary.source} placed by order only"
    else:
        text = (
            f"{primary.source} clock = {secondary.source} clock {clock.offset:+.4f} s"
            f" \u00b1 {clock.uncertainty:.4f} s, drift {clock.drift * 1e6:+.1f} ppm"
            f" ({clock.exchanges} request/reply pair(s), {clock.rejected} rejected as outliers)"
        )
    return {
        "session": m.session_key,
        "clock": None
        if clock is None
        else {
            "offset_s": clock.offset,
            "uncertainty_s": clock.uncertainty,
            "drift_ppm": clock.drift * 1e6,
            "at": time_text(clock.t0),
            "exchanges": clock.exchanges,
            "rejected": clock.rejected,
            "bounds_consistent": clock.consistent,
        },
        "clock_text": text,
        "recordings": [
            {
                "path": r.source,
                "session": r.session_key,
                "format": r.input_format,
                "vantage": r.vantage,
                "role": r.role,
                "messages": r.messages,
                "matched": r.matched,
                "only_here": r.only_here,
                "transport_facts": r.transport_facts,
            }
            for r in m.recordings
        ],
        "lost": m.lost,
        "unrecorded": m.unrecorded,
        "abandoned": m.abandoned,
    }


def session(s: Session) -> dict[str, Any]:
    return {
        "id": s.key,
        "source": s.source,
        "format": s.input_format,
        "label": s.label,
        "transport": s.transport.value,
        "protocol_version": s.revision,
        "revision_basis": s.revision_basis.value,
        "vantage": s.vantage.value,
        "requests": s.requests,
        "messages": s.messages,
        "client_info": dict(s.client_info) if s.client_info else None,
        "server_info": dict(s.server_info) if s.server_info else None,
        "tool_effects": dict(s.tool_effects),
        "first_time": time_text(s.first_ts),
        "last_time": time_text(s.last_ts),
        "timestamps": s.timestamps,
        "timestamps_ordered": s.timestamps_ordered,
        "notes": session_notes(s),
    }


def session_notes(s: Session) -> list[str]:
    """What to bear in mind when reading a session's verdicts (how it was recorded, not what was unjudged)."""
    notes = []
    if s.revision is None:
        notes.append("protocol revision unknown; every rule was judged at its weakest level across revisions")
    if not s.timestamps:
        notes.append("no timestamps; race or violation is decided by ordering proofs only")
    elif not s.timestamps_ordered:
        notes.append("timestamps go backwards (log time); order follows the file, gaps are rough")
    return notes


@dataclass(frozen=True, slots=True)
class _Note:
    """One thing not judged: our sentence, about an input or session (SUBJECT), listing ITEMS after it.
    Subject and items are recorded text (paths, session keys): Markdown escapes them, not the sentence."""

    text: str
    subject: str | None = None
    items: str | None = None

    def sentence(self) -> str:
        """The note as one sentence (the JSON and text reports' form)."""
        head = f"{self.subject}: {self.text}" if self.subject is not None else self.text
        return f"{head}: {self.items}" if self.items is not None else head


def _unjudged(result: AuditResult) -> list[_Note]:
    """What the audit could not judge (every format shows these): inputs not read, and rules whose verdict
    rests on what a recording cannot show. A rule a session's revision does not put in force was judged,
    with nothing to say (`_not_in_force`); a session's notes are its own (`session_notes`)."""
    notes = [_Note(f"not analysed: {i.error}", i.path) for i in result.inputs if i.error and not i.sessions]
    skipped = [f"{i.path} ({i.skipped})" for i in result.inputs if i.skipped]
    if skipped:
        shown = ", ".join(skipped[:8]) + (f" and {len(skipped) - 8} more" if len(skipped) > 8 else "")
        notes.append(_Note(f"{len(skipped)} file(s) found in folders were skipped", items=shown))
    notes += [_Note(f"reading stopped early: {i.error}", i.path) for i in result.inputs if i.error and i.sessions]
    by_session: dict[tuple[str, str], list[str]] = {}
    for skip in result.skips:
        if skip.kind is SkipKind.UNRECORDED:
            by_session.setdefault((skip.session_key, skip.reason), []).append(skip.rule)
    for (session_key, reason), rules in by_session.items():
        notes.append(_Note(f"{reason}, so not judged: {', '.join(rules)}", session_key))
    return notes + [_Note(note) for note in _unreported(result)]


def _not_in_force(result: AuditResult) -> list[dict[str, Any]]:
    """The rules each revision (over its transport) does not put in force, once per revision with the
    sessions it covers: "how this report was made", not something left unjudged."""
    groups: dict[str, tuple[dict[str, None], dict[str, None]]] = {}  # reason -> (rules, sessions), in order
    for skip in result.skips:
        if skip.kind is SkipKind.NOT_IN_FORCE:
            rules, sessions = groups.setdefault(skip.reason, ({}, {}))
            rules[skip.rule] = sessions[skip.session_key] = None
    return [
        {"reason": reason, "rules": list(rules), "sessions": list(sessions)}
        for reason, (rules, sessions) in groups.items()
    ]


def _unreported(result: AuditResult) -> list[str]:
    """Problems the readers named that no selected rule reports, in the words of the rule that would."""
    if not result.unruled_anomalies:
        return []
    reporting: dict[str, Rule] = {
        name: rule for rule in load_catalog(Path(d) for d in result.made.rule_dirs) for name in rule.condition.anomalies
    }
    notes = []
    for name, count in sorted(result.unruled_anomalies.items()):
        rule = reporting.get(name)
        if rule is None:
            notes.append(f"{count} problem(s) of a kind no rule reports ({name})")
        else:
            notes.append(
                f"{count} problem(s) not reported because {rule.id} {rule.slug} is not selected: {rule.summary}"
            )
    return notes


class _Listed(Generic[T]):
    """A list of the report converted one item at a time from the audit's spools (re-iterable), so
    memory follows one item, not all of them: every item, or for the reports people read the first
    `per_key` of each key (rule for findings, outcome for cancelled calls). TEXTS: every item as the
    JSON report lists it, when the audit made them already (`listed_json` of each converted item)."""

    def __init__(
        self,
        items: Iterable[T],
        convert: Callable[[], Callable[[T], dict[str, Any]]],
        key: Callable[[T], str],
        counts: Mapping[str, int],
        per_key: int | None,
        texts: Iterable[str] | None = None,
    ) -> None:
        self.items, self.convert, self.key, self.counts, self.per_key = items, convert, key, counts, per_key
        self._texts = texts

    def __iter__(self) -> Iterator[dict[str, Any]]:
        if self.per_key is None:  # everything the spool holds, whatever the counts say
            yield from map(self.convert(), self.items)
            return
        convert = self.convert()
        shown: Counter[str] = Counter()
        left = len(self)
        for item in self.items:
            if not left:
                break  # every key has shown all it may: the rest of the spool need not be read
            key = self.key(item)
            shown[key] += 1
            if shown[key] <= self.per_key:
                left -= 1
                yield convert(item)

    def texts(self) -> Iterable[str]:
        """Every item as the JSON report lists it."""
        return self._texts if self._texts is not None else map(listed_json, self)

    def __len__(self) -> int:
        return sum(min(n, self.per_key) if self.per_key is not None else n for n in self.counts.values())

    def not_shown(self) -> dict[str, int]:
        """Key → how many items of that key are not listed."""
        per_key = self.per_key
        return {} if per_key is None else {k: n - per_key for k, n in sorted(self.counts.items()) if n > per_key}


def build(result: AuditResult) -> dict[str, Any]:
    """The whole report as plain data (every list included: for tests and small audits)."""
    report = _build(result, "json")
    report["cancellations"] = list(report["cancellations"])
    report["findings"] = list(report["findings"])
    return report


def _run(made: HowMade) -> dict[str, Any]:
    """How the report was made (every format shows it): what the verdicts rest on."""
    return {
        "generated": time_text(made.generated),
        "settings_file": made.settings_file,
        "settings": [{"setting": s.name, "value": s.value, "source": s.source} for s in made.settings],
        "race_windows": dict(made.race_windows),
        "hold_seconds": made.hold_seconds,
        "max_open": made.max_open,
        "protocol": made.protocol,
        "vantage": made.vantage,
        "rule_dirs": list(made.rule_dirs),
        "preview": made.preview,
    }


def _shown(fmt: str) -> tuple[int | None, int | None]:
    """How many findings of each rule and cancelled calls of each outcome the `fmt` report lists."""
    if fmt == "json":
        return None, None
    if fmt == "md":
        return MARKDOWN_SHOWN_PER_KEY, MARKDOWN_SHOWN_PER_KEY
    return SHOWN_PER_RULE, SHOWN_PER_OUTCOME


def _build(result: AuditResult, fmt: str) -> dict[str, Any]:
    """The report for `fmt`: JSON lists everything, the others the first findings of each rule and
    cancelled calls of each outcome (fewer in Markdown, a pull-request comment)."""
    per_rule, per_outcome = _shown(fmt)
    counts = result.counts()
    findings = _Listed(result.findings, lambda: _findings(result.sessions), lambda f: f.rule, counts["rule"], per_rule)
    cancellations = _Listed(
        result.cancellations,
        lambda: cancellation,
        lambda c: c.outcome.value,
        counts["outcome"],
        per_outcome,
        texts=result.cancellations.texts(),
    )
    unjudged = _unjudged(result)
    report = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "cancelwire", "version": __version__},
        "run": _run(result.made),
        "inputs": [
            {
                "path": i.path,
                "format": i.format,
                "sessions": list(i.sessions),
                "events": i.events,
                "error": i.error,
                "skipped": i.skipped,
            }
            for i in result.inputs
        ],
        "sessions": [session(s) for s in result.sessions],
        "cancellations": cancellations,
        "findings": findings,
        "rules": [{"id": r.id, "rule": r.slug, "rev": r.rev, "summary": r.summary} for r in result.rules],
        "disabled_rules": [{"rule": k, "reason": v} for k, v in sorted(result.disabled.items())],
        "unjudged": [note.sentence() for note in unjudged],
        "not_in_force": _not_in_force(result),
        "summary": {
            "inputs": len(result.inputs),
            "inputs_unreadable": sum(1 for i in result.inputs if i.error and not i.sessions),
            "inputs_skipped": sum(1 for i in result.inputs if i.skipped),
            "sessions": len(result.sessions),
            "requests": sum(s.requests for s in result.sessions),
            "cancellations": len(result.cancellations),
            "findings": len(result.findings),
            "by_severity": {k: counts["severity"].get(k, 0) for k in ("error", "warning", "info")},
            "by_outcome": dict(sorted(counts["outcome"].items())),
            "by_rule": dict(sorted(counts["rule"].items())),
        },
    }
    if result.merges:
        report["merges"] = [_merge(m) for m in result.merges]
    if fmt != "json":
        report["findings_not_shown"] = findings.not_shown()
        report["unjudged_notes"] = [{"subject": n.subject, "text": n.text, "listed": n.items} for n in unjudged]
        report["cancellations_not_shown"] = cancellations.not_shown()
    return report


def prepare(triage: Triage, fmt: str) -> dict[str, Any]:
    """The report of TRIAGE's audit for FMT, with its suppressions (each with what it accepted, or stale)."""
    report = _build(triage.result, fmt)
    if triage.suppressions:
        report["suppressions"] = triage.suppressions_used()
    return report


def write_format(triage: Triage, out: TextIO, fmt: str, options: WriteOptions) -> None:
    """The JSON report, written as it is produced: memory follows one cancelled call or finding, not all
    of them. The reports people read (`rendering`, `html_view`) list the first `SHOWN_PER_RULE` findings
    of each rule and `SHOWN_PER_OUTCOME` cancelled calls of each outcome, and say how many more there
    are; JSON lists all."""
    _write_json(prepare(triage, fmt), out)


def _write_json(report: dict[str, Any], out: TextIO) -> None:
    """The JSON report, key by key; cancellations and findings one at a time (2-space indentation). A
    recorded `##[` is written `#\\u0023[` (`inert.json_text`): the same string, no runner command."""
    out.write("{\n")
    for position, (key, value) in enumerate(report.items()):
        out.write(f'  "{key}": ')
        if isinstance(value, _Listed):
            out.write("[")
            for index, text in enumerate(value.texts()):
                out.write(("," if index else "") + "\n    " + inert.json_text(text))
            out.write("\n  ]" if len(value) else "]")
        else:
            out.write(inert.json_text(jsonrpc.dumps(value, indent=True).decode()).replace("\n", "\n  "))
        out.write(",\n" if position < len(report) - 1 else "\n")
    out.write("}\n")
