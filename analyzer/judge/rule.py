"""What a rule is once loaded: its identity, spec levels, severities, documentation and the condition
it matches (a shape over `Selector`s from a small closed vocabulary). `catalog` builds them from rule
files and checks every key; the engine, the pipeline and the reports read them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from ..model import (
    REVISIONS,
    TRANSPORT_KINDS,
    AnomalyName,
    CancelMechanism,
    EntryKind,
    Level,
    Outcome,
    Revision,
    Severity,
    Transport,
    Vantage,
)

LEVEL_ORDER = {Level.MAY: 0, Level.SHOULD: 1, Level.MUST: 2}
NEVER_OVER = {Transport.STDIO: TRANSPORT_KINDS}
"""Entry kinds a session over a transport never has: stdio has no streams to open, close or reset (its
one transport fact is the process's exit)."""


class RuleStatus(StrEnum):
    PREVIEW = "preview"
    """Runs only with --preview (or when selected by name)."""
    STABLE = "stable"
    DEPRECATED = "deprecated"
    REMOVED = "removed"
    """A stub that keeps the id from being reused; never runs."""


class Firing(StrEnum):
    """How matches are grouped into findings."""

    ONCE_PER_REQUEST = "once-per-request"
    ONCE_PER_SESSION = "once-per-session"
    ONCE_PER_INPUT = "once-per-input"


class Timing(StrEnum):
    """Pair shape: how the `then` event stands to the `after` event (tagged once in reconstruction)."""

    LATE = "late"
    """Left after the `after` event reached its receiver."""
    CROSSING = "crossing"
    """May have passed it in flight."""


class Shape(StrEnum):
    ANOMALY = "anomaly"
    EVENT = "event"
    PAIR = "pair"
    ABSENCE = "absence"


class Party(StrEnum):
    """Which party of a request a selector's event comes from."""

    REQUESTER = "requester"
    RECEIVER = "receiver"


class StreamRelation(StrEnum):
    """An entry's stream relative to the request's own stream."""

    SAME = "same"
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class Where:
    method: frozenset[str] | None = None
    tool_effect: frozenset[str] | None = None
    vantage: frozenset[Vantage] | None = None
    transport: frozenset[Transport] | None = None
    outcome: frozenset[Outcome] | None = None
    stream: StreamRelation | None = None


@dataclass(frozen=True, slots=True)
class Selector:
    events: frozenset[EntryKind]
    side: Party | None = None
    """None for either party."""
    mechanism: frozenset[CancelMechanism] | None = None
    """What may have carried the request's cancel for it to be selected (other entries are unaffected);
    None for any."""
    where: Where = Where()


@dataclass(frozen=True, slots=True)
class Condition:
    shape: Shape
    anomalies: frozenset[AnomalyName] = frozenset()
    on: Selector | None = None
    after: Selector | None = None
    then: Selector | None = None
    never: Selector | None = None
    timing: Timing | None = None
    within: float | None = None
    """Absence shape: the `never` event must come within this many seconds of the anchor."""


@dataclass(frozen=True, slots=True)
class RuleDocs:
    what: str
    why: str
    example: str
    fix: str
    references: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    slug: str
    rev: int
    status: RuleStatus
    since: str
    summary: str
    message: str
    section: str
    requirement: str
    levels: Mapping[Revision, Level | Mapping[Transport, Level]]
    severity_for: Mapping[Level, Severity]
    severity_reason: str | None
    condition: Condition
    firing: Firing
    docs: RuleDocs
    path: Path
    builtin: bool

    def level_for(self, revision: Revision | None, transport: Transport | None) -> Level | None:
        """The requirement level in force; None when the rule does not apply to that revision.

        With no known revision, the weakest level any revision gives (never silently off).
        """
        if revision is None or revision not in REVISIONS:
            candidates = [lvl for value in self.levels.values() for lvl in levels_of(value, transport)]
            return min(candidates, key=LEVEL_ORDER.__getitem__) if candidates else None
        value = self.levels.get(revision)
        if value is None:
            return None
        found = levels_of(value, transport)
        return found[0] if len(found) == 1 else (min(found, key=LEVEL_ORDER.__getitem__) if found else None)

    def transports_in_force(self, revision: Revision) -> tuple[Transport, ...]:
        """The transports `revision` puts the rule in force over when it leaves it out of force over others;
        empty when the revision gives it a level over every transport, or over none."""
        value = self.levels.get(revision)
        if value is None or isinstance(value, Level) or len(value) == len(Transport):
            return ()
        return tuple(value)

    def applies_over(self, transport: Transport | None) -> bool:
        """Whether a session over `transport` can raise the rule under some revision: one gives it a level
        over that transport, and each event a timeline rule's condition needs first (`on`, or `after` and
        `then`) can occur there, within the selector's transport scope. An anomaly rule is left to the
        readers that name its anomalies. Unknown transport: True (never silently off)."""
        if transport is None:
            return True
        if not any(levels_of(value, transport) for value in self.levels.values()):
            return False
        never = NEVER_OVER.get(transport, frozenset())
        cond = self.condition
        needed = (cond.on, cond.after, cond.then)
        return all(
            (s.where.transport is None or transport in s.where.transport) and not s.events <= never
            for s in needed
            if s is not None
        )

    def severity(self, level: Level) -> Severity:
        return self.severity_for[level]

    @property
    def revisions(self) -> tuple[Revision, ...]:
        return tuple(r for r in REVISIONS if r in self.levels)


def levels_of(value: Level | Mapping[Transport, Level], transport: Transport | None) -> list[Level]:
    if isinstance(value, Level):
        return [value]
    if transport is not None:
        return [value[transport]] if transport in value else []
    return list(value.values())
