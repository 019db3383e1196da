"""Evaluate catalogue rules over finalised timelines and named anomalies → `Finding`s.

This is the only place findings are made. Whether a message is a race or a violation was decided in
reconstruction (each entry's `relation` and `certainty`); rules only read it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final

from mypy_extensions import mypyc_attr

from ..model import (
    Anomaly,
    AnomalyName,
    CancelledCall,
    Certainty,
    EntryKind,
    Finding,
    Level,
    Origin,
    RequestId,
    RequestTimeline,
    Revision,
    Session,
    TimelineEntry,
    Transport,
)
from .matching import match
from .rule import Firing, Rule, Shape

MAX_EVIDENCE = 8
MAX_OPEN_GROUPS = 10_000
"""Anomaly groups collected at once; past it the oldest becomes its finding (bounded memory). A later
anomaly of that group then starts a new one, reported as a second finding."""


class SkipKind(StrEnum):
    """Why a rule was not judged on a session."""

    NOT_IN_FORCE = "not-in-force"
    """The session's revision (over its transport) gives the rule no level: it was judged, with nothing to
    say. The reports name the revision's rule set once, not under "Not judged". A rule no session over
    that transport can raise under any revision (`Rule.applies_over`: CW201 on stdio) is not named."""
    UNRECORDED = "unrecorded"
    """The recording cannot show what the rule's verdict rests on (or a reply could not be read)."""


@mypyc_attr(native_class=False)  # pickled across processes: mypyc's own frozen classes cannot be unpickled
@dataclass(frozen=True, slots=True)
class Skip:
    """A rule that did not apply to a session, and why (shown in every report)."""

    rule_id: str
    rule: str
    session_key: str
    reason: str
    kind: SkipKind = SkipKind.UNRECORDED


# Read per timeline and per entry, so bound once: on Python 3.11 reading an enum member off its class
# (`Shape.PAIR`) runs `EnumType.__getattr__`'s hook, about 150 ns against 20 for a global (docs/benchmark.md).
_ABSENCE: Final = Shape.ABSENCE
_CANCEL: Final = EntryKind.CANCEL


@dataclass(slots=True)
class _Group:
    rule: Rule
    level: Level
    anomaly: Anomaly
    evidence: list[Origin] = field(default_factory=list)
    count: int = 0


class Engine:
    def __init__(self, rules: Iterable[Rule]) -> None:
        self.rules = tuple(rules)
        self._timeline_rules = [(r, _starts_from(r)) for r in self.rules if r.condition.shape is not Shape.ANOMALY]
        self._candidates: dict[tuple[frozenset[EntryKind], Transport | None], list[Rule]] = {}
        """Timeline rules worth evaluating, by the kinds of entry a timeline has (few distinct sets) and its
        transport (CW202's absence check is for Streamable HTTP only)."""
        self._by_anomaly: dict[AnomalyName, list[Rule]] = {}
        for rule in self.rules:
            for name in rule.condition.anomalies:
                self._by_anomaly.setdefault(name, []).append(rule)
        self._groups: dict[tuple[str, ...], _Group] = {}
        self.skips: dict[tuple[str, str], Skip] = {}
        self._blind: dict[tuple[frozenset[EntryKind], bool], frozenset[str]] = {}
        """(Entry kinds a recording cannot show, reply unread) -> ids of the timeline rules blind to them."""
        self.unruled_anomalies: dict[str, int] = {}
        """Anomaly names no selected rule handles (counted, so nothing is dropped unseen)."""

    def _level(
        self, rule: Rule, revision: Revision | None, transport: Transport | None, session: str | None
    ) -> Level | None:
        if session is None or revision is None:
            return rule.level_for(revision, transport)
        over = rule.transports_in_force(revision) if transport is None else None
        if over:  # the revision puts the rule in force over some transports only, and this one is not said
            reason = (
                f"the recording does not say the transport, and under {revision} the rule is in force over "
                f"{' and '.join(over)} only"
            )
            self.skips.setdefault((rule.id, session), Skip(rule.id, rule.slug, session, reason))
            return None
        level = rule.level_for(revision, transport)
        if level is None and rule.applies_over(transport):
            where = f"{revision} over {transport}" if transport else str(revision)
            self.skips.setdefault(
                (rule.id, session),
                Skip(rule.id, rule.slug, session, f"not in force under {where}", SkipKind.NOT_IN_FORCE),
            )
        return level

    def on_session(self, session: Session) -> None:
        """Name the rules a session's revision puts out of scope, so the report can say so; and unname the
        rules its recording was blind to that no session over its transport (when the recording says it) can
        raise: over stdio, a blindness to HTTP streams is no news."""
        for rule in self.rules:
            self._level(rule, session.revision, session.transport, session.key)
            skip = self.skips.get((rule.id, session.key))
            if (
                skip is not None
                and skip.kind is SkipKind.UNRECORDED
                and not session.transport_assumed
                and not rule.applies_over(session.transport)
            ):
                del self.skips[(rule.id, session.key)]

    # -- anomalies -----------------------------------------------------------------------------

    def on_anomaly(self, anomaly: Anomaly) -> list[Finding]:
        """Group the anomaly under its rules; returns the findings of groups closed to bound memory."""
        rules = self._by_anomaly.get(anomaly.name)
        if not rules:
            self.unruled_anomalies[anomaly.name] = self.unruled_anomalies.get(anomaly.name, 0) + 1
            return []
        closed = []
        for rule in rules:
            level = self._level(rule, anomaly.revision, anomaly.transport, anomaly.session_key)
            if level is None:
                continue
            key = self._group_key(rule, anomaly)
            group = self._groups.get(key)
            if group is None:
                if len(self._groups) >= MAX_OPEN_GROUPS:
                    oldest = next(iter(self._groups))
                    closed.append(self._group_finding(self._groups.pop(oldest)))
                group = self._groups[key] = _Group(rule, level, anomaly)
            if anomaly.origin in group.evidence:
                continue  # one line can raise the same problem twice (e.g. a batch): cite it once
            group.count += 1
            if len(group.evidence) < MAX_EVIDENCE:
                group.evidence.append(anomaly.origin)
        return closed

    @staticmethod
    def _group_key(rule: Rule, anomaly: Anomaly) -> tuple[str, ...]:
        if rule.firing is Firing.ONCE_PER_INPUT:
            return (rule.id, anomaly.origin.source)
        if rule.firing is Firing.ONCE_PER_SESSION:
            return (rule.id, anomaly.session_key or anomaly.origin.source)
        if anomaly.request_id is not None:
            side = anomaly.requester.value if anomaly.requester else ""
            return (rule.id, anomaly.session_key or "", side, repr(anomaly.request_id))
        return (rule.id, anomaly.origin.display(), str(anomaly.seq))

    def finish(self) -> Iterator[Finding]:
        for group in self._groups.values():
            yield self._group_finding(group)
        self._groups.clear()

    @staticmethod
    def _group_finding(group: _Group) -> Finding:
        a = group.anomaly
        detail = a.detail if group.count == 1 else f"{a.detail} (and {group.count - 1} more like it)"
        text = _render(
            group.rule.message,
            method=a.method,
            request_id=a.request_id,
            revision=a.revision,
            gap=a.gap,
            detail=detail,
        )
        return Finding(
            rule_id=group.rule.id,
            rule=group.rule.slug,
            rule_rev=group.rule.rev,
            severity=group.rule.severity(group.level),
            certainty=Certainty.EXACT if a.gap is None else Certainty.INFERRED,
            session_key=a.session_key,
            request_id=a.request_id,
            method=a.method,
            ts=a.ts,
            message=text,
            evidence=tuple(group.evidence),
            revision=a.revision,
            level=group.level,
            more_evidence=group.count - len(group.evidence),
        )

    # -- timelines -----------------------------------------------------------------------------

    def on_timeline(self, timeline: RequestTimeline, cancelled: CancelledCall | None) -> Iterator[Finding]:
        for finding, _ in self.judge(timeline, cancelled):
            yield finding

    def judge(
        self, timeline: RequestTimeline, cancelled: CancelledCall | None
    ) -> Iterator[tuple[Finding, list[TimelineEntry]]]:
        """Each finding on `timeline` with the entries it is about (its hits; the anchor when it has none)."""
        kinds = frozenset({e.kind for e in timeline.entries})
        if timeline.cancel is not None:
            kinds |= {_CANCEL}
        transport = timeline.transport
        candidates = self._candidates.get((kinds, transport))
        if candidates is None:  # the rules whose condition starts from an entry the timeline has, over its transport
            candidates = [
                rule
                for rule, needs in self._timeline_rules
                if not needs.isdisjoint(kinds) and _scoped_to(rule, transport)
            ]
            self._candidates[(kinds, transport)] = candidates
        if timeline.unrecorded:
            blind = self._not_judged(timeline)
            candidates = [rule for rule in candidates if rule.id not in blind]
        for rule in candidates:
            if rule.condition.shape is _ABSENCE and rule.condition.within is None and not timeline.ended_by_recording:
                continue
            matched = match(rule, timeline, cancelled)
            if matched is None:
                continue
            level = self._level(rule, timeline.revision, timeline.transport, timeline.session_key)
            if level is None:
                continue
            anchor, hits = matched
            yield self._finding(rule, level, timeline, anchor, hits), hits or ([anchor] if anchor else [])

    def _not_judged(self, timeline: RequestTimeline) -> frozenset[str]:
        """The timeline rules that name an entry kind the recording cannot show: noted once per
        session as not judged (their verdict would rest on evidence the format never holds). A reply recorded
        but unread hides only a reply: just the rules that judge its absence are blind to it."""
        unrecorded, unread = timeline.unrecorded, timeline.reply_unread
        blind = self._blind.get((unrecorded, unread))
        if blind is None:
            blind = frozenset(
                rule.id
                for rule, _ in self._timeline_rules
                if not (_absent_kinds(rule) if unread else _kinds_of(rule)).isdisjoint(unrecorded)
            )
            self._blind[(unrecorded, unread)] = blind
        reason = f"the recording cannot show {', '.join(sorted(unrecorded))}"
        if unread:
            reason = "a request's response was recorded but could not be read (its other requests are judged)"
        for rule in self.rules:
            if rule.id in blind:
                self.skips.setdefault(
                    (rule.id, timeline.session_key), Skip(rule.id, rule.slug, timeline.session_key, reason)
                )
        return blind

    def _finding(
        self, rule: Rule, level: Level, tl: RequestTimeline, anchor: TimelineEntry | None, hits: list[TimelineEntry]
    ) -> Finding:
        first = hits[0] if hits else anchor
        assert first is not None
        gap = None
        if anchor is not None and first.ts is not None and anchor.ts is not None:
            gap = first.ts - anchor.ts
        certainty = Certainty.EXACT if all(e.certainty is Certainty.EXACT for e in hits) else Certainty.INFERRED
        # one packet can carry several entries (an SSE event and its bytes): cite each place once
        cited = [anchor] if anchor is not None else []
        evidence = list(dict.fromkeys([e.origin for e in cited] + [e.origin for e in hits]))
        sender = first.side.value if first.side is not None else "the recording"
        said = first.said_cancelled  # a reply's own word that it answers a cancelled request
        text = _render(
            rule.message,
            method=tl.method,
            request_id=tl.request_id,
            tool=tl.tool,
            gap=gap,
            sender=sender,
            receiver=tl.requester.other.value,
            revision=tl.revision,
            detail=(
                f"the reply itself says the request was cancelled ({said})"
                if said is not None
                else _window_basis(rule, tl)
                if certainty is Certainty.INFERRED
                else None
            ),
        )
        return Finding(
            rule_id=rule.id,
            rule=rule.slug,
            rule_rev=rule.rev,
            severity=rule.severity(level),
            certainty=certainty,
            session_key=tl.session_key,
            request_id=tl.request_id,
            method=tl.method,
            ts=first.ts,
            message=text,
            evidence=tuple(evidence[:MAX_EVIDENCE]),
            revision=tl.revision,
            level=level,
            # entries that stand for several messages (past a request's entry limit) count them all
            more_evidence=max(0, len(evidence) - MAX_EVIDENCE) + sum(e.repeats - 1 for e in hits),
            tool=tl.tool,
            streams=tuple(dict.fromkeys(e.stream for e in [*cited, *hits] if e.stream is not None)),
        )


def _starts_from(rule: Rule) -> frozenset[EntryKind]:
    """The entry kinds a timeline must have for the rule's condition to be worth evaluating."""
    selector = rule.condition.on or rule.condition.after
    assert selector is not None  # timeline rules have `on` or `after` (the catalogue checks)
    return selector.events


def _scoped_to(rule: Rule, transport: Transport | None) -> bool:
    """Whether every selector a match needs (`on`, or `after` and `then`) may select an entry of a timeline
    over `transport`: one whose `where` names other transports selects nothing there (`_where`)."""
    cond = rule.condition
    return all(
        s.where.transport is None or transport in s.where.transport
        for s in (cond.on, cond.after, cond.then)
        if s is not None
    )


def _kinds_of(rule: Rule) -> frozenset[EntryKind]:
    """Every entry kind a timeline rule's condition names."""
    cond = rule.condition
    selectors = (cond.on, cond.after, cond.then, cond.never)
    return frozenset().union(*(s.events for s in selectors if s is not None))


def _absent_kinds(rule: Rule) -> frozenset[EntryKind]:
    """The entry kinds whose absence a timeline rule judges (its `never`)."""
    never = rule.condition.never
    return frozenset() if never is None else frozenset(never.events)


def _window_basis(rule: Rule, tl: RequestTimeline) -> str | None:
    """Why the race window that timed this finding is what it is, when the recording's round trips set it."""
    window = tl.measured_window
    if rule.condition.timing is None or window is None:
        return None
    return (
        f"race window {window:.3f} s, the fastest round trip this recording shows for a {tl.requester.value} "
        f"request (wider than the {tl.vantage.value} default): a reply within "
        "one round trip of the cancel may have left before the cancel arrived"
    )


def _render(
    template: str,
    *,
    method: str | None = None,
    request_id: RequestId | None = None,
    tool: str | None = None,
    gap: float | None = None,
    sender: str | None = None,
    receiver: str | None = None,
    revision: Revision | None = None,
    detail: str | None = None,
) -> str:
    values = {
        "method": method or "?",
        "request_id": "?" if request_id is None else repr(request_id),
        "tool": tool or "?",
        "gap": "an unknown time" if gap is None else f"{gap:.3f} s",
        "sender": sender or "?",
        "receiver": receiver or "?",
        "revision": revision or "an unknown revision",
    }
    text = template.format(**values)
    return f"{text}: {detail}" if detail else text
