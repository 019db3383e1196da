"""What the rules and outcomes conclude: a rule's `Finding`, and what became of each cancelled call
(`CancelledCall`, with the `Mark`s its diagram draws)."""

from __future__ import annotations

from .events import Origin
from .kinds import CancelMechanism, Certainty, EntryKind, Level, Outcome, Severity
from .records import RequestId, Revision, record
from .timelines import RequestTimeline


@record
class Finding:
    """One rule's verdict on one request (or session, or input)."""

    rule_id: str
    """Stable id, e.g. `CW101`."""
    rule: str
    """The rule's slug, e.g. `response-after-cancel`."""
    rule_rev: int
    """The rule's revision number (bumped when its condition or severity changes)."""
    severity: Severity
    """From the rule's level under the revision in force."""
    certainty: Certainty
    """EXACT when the order is proven; INFERRED when it leans on timing."""
    session_key: str | None
    """Its session; None for input-level problems."""
    request_id: RequestId | None
    """The request it concerns, if any."""
    method: str | None
    """That request's method, if known."""
    ts: float | None
    """Time of the first event that proves it."""
    message: str
    """The rendered finding text."""
    evidence: tuple[Origin, ...]
    """The first origins that prove it, bounded; `more_evidence` counts the rest."""
    revision: Revision | None
    """Revision the rule was judged under."""
    level: Level | None = None
    """The spec level (MUST/SHOULD/MAY) the rule has under that revision."""
    more_evidence: int = 0
    """Origins that prove it beyond those in `evidence`."""
    tool: str | None = None
    """Tool name when the finding is about a `tools/call` (baseline fingerprints use it)."""
    streams: tuple[str, ...] = ()
    """The HTTP exchanges that carried the evidence (`tcp3/0`, `tcp3/h2s5`), for the Wireshark filter."""


@record
class Mark:
    """A finding about one entry of a cancelled call's timeline (its diagram marks the message with it)."""

    seq: int
    """The entry's `seq`."""
    kind: EntryKind
    """The entry's kind (a packet's bytes and the message they carried share a `seq`)."""
    rule_id: str
    """The rule's id, e.g. `CW101`."""
    rule: str
    """The rule's slug."""
    severity: Severity
    """The finding's severity."""
    certainty: Certainty
    """The finding's certainty."""


@record
class CancelledCall:
    """What became of one cancelled request, as far as the recording can tell."""

    session_key: str
    """Its session."""
    request_id: RequestId
    """The cancelled request's id."""
    method: str
    """The cancelled request's method."""
    tool: str | None
    """Tool name for `tools/call`, else None."""
    mechanism: CancelMechanism
    """How it was cancelled."""
    outcome: Outcome
    """The verdict."""
    certainty: Certainty
    """EXACT when the recording proves the order (or the end of the recording proves silence)."""
    explanation: str
    """One sentence saying why this outcome (which annotation or read it relied on)."""
    evidence: tuple[Origin, ...]
    """The cancel, and the reply or the verifying read when there is one."""
    verified_by: Origin | None = None
    """The later read that could have checked the effect (`verified-by-read`)."""
    timeline: RequestTimeline | None = None
    """The request plus the entries around its cancel (bounded), for the report."""
    left_out: tuple[int, int] = (0, 0)
    """Messages of the request not kept in `timeline`, before and after the kept entries."""
    marks: tuple[Mark, ...] = ()
    """The findings on entries of `timeline`, in finding order (for its diagram)."""
