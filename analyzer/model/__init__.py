"""The data model shared by every stage: events from readers, timelines, findings, outcomes.

Data flows one way: readers yield `Event`s, `reconstruct` turns them into `Session`s and
`RequestTimeline`s, the `engine` turns timelines and anomalies into `Finding`s, `outcomes`
classifies every cancelled call, and `report` renders an `AuditResult`.

The records live by stage: `events` (what readers yield), `timelines` (what reconstruction hands
on), `findings` (what rules and outcomes conclude), built by `records.record`; the closed sets live in
`kinds` (the anomaly names in `anomalies`). Every stage imports them from here.

Ordering is by `seq` (position in the source), never by `ts`: host logs can lack timestamps
(go-sdk) or run backwards (Claude Desktop). Timestamps are float epoch seconds (UTC) or None.
"""

from __future__ import annotations

from .anomalies import AnomalyName
from .events import Anomaly, Event, Message, MessageEvent, Origin, SessionStart, TransportEvent
from .findings import CancelledCall, Finding, Mark
from .kinds import (
    TCP_ONLY_KINDS,
    TRANSPORT_KINDS,
    CancelMechanism,
    Certainty,
    Direction,
    EntryKind,
    Level,
    MessageKind,
    Outcome,
    Relation,
    RevisionBasis,
    Severity,
    Side,
    ToolEffect,
    Transport,
    TransportKind,
    Vantage,
)
from .records import RequestId, Revision, record
from .timelines import CancelInfo, RequestTimeline, Session, TimelineEntry

__all__ = [
    "REVISIONS",
    "TCP_ONLY_KINDS",
    "TRANSPORT_KINDS",
    "Anomaly",
    "AnomalyName",
    "CancelInfo",
    "CancelMechanism",
    "CancelledCall",
    "Certainty",
    "Direction",
    "EntryKind",
    "Event",
    "Finding",
    "Level",
    "Mark",
    "Message",
    "MessageEvent",
    "MessageKind",
    "Origin",
    "Outcome",
    "Relation",
    "RequestId",
    "RequestTimeline",
    "Revision",
    "RevisionBasis",
    "Session",
    "SessionStart",
    "Severity",
    "Side",
    "TimelineEntry",
    "ToolEffect",
    "Transport",
    "TransportEvent",
    "TransportKind",
    "Vantage",
    "record",
]

#: Protocol revisions we know, oldest first.
REVISIONS: tuple[Revision, ...] = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
