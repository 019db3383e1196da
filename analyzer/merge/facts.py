"""What two aligned recordings of one session say that neither says alone: messages one holds and the
other lacks, and calls the client gave up on without any cancel reaching the server.

Both are named anomalies (`merge.message-lost`, `merge.message-unrecorded`, `merge.cancel-never-sent`)
that rules CW501-CW503 give meaning. `merged` builds the `Evidence` and weaves these into the stream.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ..model import (
    Anomaly,
    AnomalyName,
    Direction,
    Event,
    MessageEvent,
    MessageKind,
    Origin,
    RequestId,
    SessionStart,
    Side,
    TransportEvent,
    TransportKind,
    Vantage,
)
from ..rebuild.cancel_words import says_cancelled
from ..rebuild.gave_up import REQUESTER
from .align import ClockFit

#: Error codes clients use for a call they gave up on: LSP's RequestCancelled, the TypeScript SDK's
#: RequestTimeout (-32001), and the Python SDK's REQUEST_TIMEOUT (408).
GAVE_UP_CODES = frozenset({-32800, -32001, 408})
_CLIENT_CLOSES = frozenset({TransportKind.CLOSED_BY_CLIENT, TransportKind.RESET_BY_CLIENT})
_SIDE_POSITION = {Direction.C2S: 0, Direction.S2C: 2}


@dataclass(frozen=True, slots=True, kw_only=True)
class Evidence:
    """One session's two recordings, aligned (indexes are into each recording's session events)."""

    key: str
    primary: Sequence[Event]
    secondary: Sequence[Event]
    pairs: Sequence[tuple[int, int]]
    """(secondary index, primary index) of every message both hold."""
    clock: ClockFit | None
    """The primary's clock against the secondary's (`to_b` maps a secondary time to the primary's)."""
    same_place: bool
    client_side_secondary: bool
    """The secondary was recorded by the client itself (its log is the client's own record)."""
    primary_name: str
    secondary_name: str

    def to_primary(self, ts: float | None) -> float | None:
        if ts is None or self.clock is None:
            return None
        return self.clock.to_b(ts)

    def primary_start(self) -> SessionStart | None:
        """The merged session's start: the primary's, with a capture's transport when one is merged."""
        own = next((e for e in self.primary if isinstance(e, SessionStart)), None)
        other = next((e for e in self.secondary if isinstance(e, SessionStart)), None)
        if own is not None and other is not None and other.vantage is Vantage.WIRE and own.vantage is not Vantage.WIRE:
            return SessionStart(
                seq=own.seq,
                ts=own.ts,
                origin=own.origin,
                session_key=own.session_key,
                transport=other.transport,
                vantage=own.vantage,
                input_format=own.input_format,
                label=own.label,
                revision=own.revision,
                timestamps=own.timestamps,
            )
        return own

    def primary_origin(self) -> Origin:
        return next((e.origin for e in self.primary), Origin(self.primary_name))

    def vantages(self) -> tuple[Vantage, Vantage]:
        starts = [
            next((e for e in events if isinstance(e, SessionStart)), None) for events in (self.primary, self.secondary)
        ]
        p, s = (start.vantage if start is not None else Vantage.UNKNOWN for start in starts)
        return p, s


POSITION = {Vantage.CLIENT: 0, Vantage.UNKNOWN: 1, Vantage.PROXY: 1, Vantage.WIRE: 1, Vantage.SERVER: 2}


# -- messages one recording lacks --------------------------------------------------------------


def missing_messages(ev: Evidence) -> Iterator[Anomaly]:
    """Each message only one recording holds: `lost` when the recording nearer its sender has it (it
    never reached the other's point, or was never sent), `unrecorded` when the one nearer its receiver has
    it (the other recording misses it, or the side it was seen on made it itself)."""
    owners = _Requests(ev)
    paired_p = {p for _, p in ev.pairs}
    paired_s = {s for s, _ in ev.pairs}
    vantage_p, vantage_s = ev.vantages()
    for events, paired, own, other, names in (
        (ev.primary, paired_p, vantage_p, vantage_s, (ev.primary_name, ev.secondary_name)),
        (ev.secondary, paired_s, vantage_s, vantage_p, (ev.secondary_name, ev.primary_name)),
    ):
        for index, event in enumerate(events):
            if not isinstance(event, MessageEvent) or index in paired or event.direction is Direction.NONE:
                continue
            sender = _SIDE_POSITION[event.direction]
            nearer_sender = abs(POSITION[own] - sender) < abs(POSITION[other] - sender)
            yield _missing(ev, event, events is ev.secondary, nearer_sender, names, owners)


def _missing(
    ev: Evidence, event: MessageEvent, secondary: bool, lost: bool, names: tuple[str, str], owners: _Requests
) -> Anomaly:
    here, there = names
    what = _describe(event)
    if lost:
        name = AnomalyName.MERGE_MESSAGE_LOST
        detail = f"{what} is in {here} but never reached {there} (lost on the way, or never sent)"
    else:
        name = AnomalyName.MERGE_MESSAGE_UNRECORDED
        detail = (
            f"{what} is in {here} but not in {there}, which stands nearer its sender "
            f"(that recording misses it, or {here}'s side made it itself)"
        )
    request_id, method, requester = owners.of(event)
    return Anomaly(
        seq=0,
        ts=ev.to_primary(event.ts) if secondary else event.ts,
        origin=event.origin,
        session_key=ev.key,
        name=name,
        detail=detail,
        request_id=request_id,
        method=method,
        requester=requester,
    )


def _describe(event: MessageEvent) -> str:
    m = event.message
    sender = "the client's" if event.direction is Direction.C2S else "the server's"
    if m.method is not None:
        return f"{sender} {m.method}" + (f" (id {m.id!r})" if m.id is not None else "")
    if m.kind is MessageKind.ERROR:
        text = m.payload.get("message")
        said = f" {text[:60]!r}" if isinstance(text, str) else ""
        return f"{sender} error {m.payload.get('code')!r}{said} for id {m.id!r}"
    return f"{sender} result for id {m.id!r}"


class _Requests:
    """Which request a message belongs to: its own id, the id it answers or cancels, or its progress token."""

    def __init__(self, ev: Evidence) -> None:
        self.methods: dict[tuple[Side, RequestId], str] = {}
        self.tokens: dict[Any, tuple[Side, RequestId]] = {}
        for event in (*ev.primary, *ev.secondary):
            if isinstance(event, MessageEvent) and event.message.kind is MessageKind.REQUEST:
                m = event.message
                side = _sender(event)
                if m.id is None or side is None:
                    continue
                self.methods.setdefault((side, m.id), m.method or "")
                meta = m.payload.get("_meta")
                token = meta.get("progressToken") if isinstance(meta, dict) else None
                if isinstance(token, str | int) and not isinstance(token, bool):
                    self.tokens.setdefault(token, (side, m.id))

    def of(self, event: MessageEvent) -> tuple[RequestId | None, str | None, Side | None]:
        m = event.message
        sender = _sender(event)
        if sender is None:
            return None, None, None
        found: tuple[Side, RequestId] | None = None
        if m.kind is MessageKind.REQUEST and m.id is not None:
            found = (sender, m.id)
        elif m.kind in (MessageKind.RESULT, MessageKind.ERROR) and m.id is not None:
            found = (sender.other, m.id)
        elif m.method == "notifications/cancelled":
            target = m.payload.get("requestId")
            found = (sender, target) if isinstance(target, str | int) and not isinstance(target, bool) else None
        elif m.method == "notifications/progress":
            found = self.tokens.get(_hashable(m.payload.get("progressToken")))
        if found is None:
            return None, None, None
        return found[1], self.methods.get(found), found[0]


def _hashable(value: Any) -> Any:
    return value if isinstance(value, str | int) and not isinstance(value, bool) else None


def _sender(event: MessageEvent) -> Side | None:
    if event.direction is Direction.C2S:
        return Side.CLIENT
    if event.direction is Direction.S2C:
        return Side.SERVER
    return None


def primary_streams(ev: Evidence) -> dict[int, str]:
    """Primary index → HTTP stream, for primary messages without one (a server log beside a capture):
    a matched message takes the secondary's stream, the server's other messages their request's."""
    found: dict[int, str] = {}
    for s, p in ev.pairs:
        ours, theirs = ev.primary[p], ev.secondary[s]
        if isinstance(ours, MessageEvent) and isinstance(theirs, MessageEvent) and theirs.stream:
            found[p] = ours.stream or theirs.stream
    if not found:
        return found
    requests: dict[RequestId, str] = {}
    for p, stream in found.items():
        event = ev.primary[p]
        m = event.message if isinstance(event, MessageEvent) else None
        if m is not None and m.kind is MessageKind.REQUEST and m.id is not None:
            requests[m.id] = stream
    owners = _Requests(ev)
    for p, event in enumerate(ev.primary):
        if isinstance(event, MessageEvent) and p not in found:
            request_id, _, requester = owners.of(event)
            if requester is Side.CLIENT and event.direction is Direction.S2C and request_id in requests:
                found[p] = requests[request_id]
    return found


# -- calls the client gave up on -----------------------------------------------------------------


def abandoned_calls(ev: Evidence) -> Iterator[Anomaly]:
    """Calls the client's own record says it gave up on (a cancel it logged, or an error it made for
    the call itself) while the other recording shows no cancel, close or reset for them."""
    if not ev.client_side_secondary:
        return
    owners = _Requests(ev)
    paired_s = {s for s, _ in ev.pairs}
    seen: set[RequestId] = set()
    # a log that marks its library's own errors (`gave_up.REQUESTER` facts) says which they are: no guessing
    marked = any(isinstance(e, TransportEvent) and e.request_id is not None for e in ev.secondary)
    request_id: RequestId | None
    method: str | None
    requester: Side | None
    for index, event in enumerate(ev.secondary):
        if isinstance(event, TransportEvent):
            if REQUESTER.get(event.kind) is not Side.CLIENT or event.request_id is None:
                continue
            request_id, requester = event.request_id, Side.CLIENT
            method = owners.methods.get((Side.CLIENT, request_id))
        elif index in paired_s or not isinstance(event, MessageEvent) or not _gave_up(event, marked):
            continue
        else:
            request_id, method, requester = owners.of(event)
        if request_id is None or requester is not Side.CLIENT or request_id in seen:
            continue
        seen.add(request_id)
        if _cancel_reached(ev, request_id):
            continue
        yield from _never_sent(ev, event, request_id, method, owners)


def _gave_up(event: MessageEvent, marked: bool) -> bool:
    """A cancel the client logged; or, in a log that does not mark its library's own errors, an error
    that reads like one (a timeout, a cancel, a give-up code)."""
    m = event.message
    if event.direction is Direction.C2S:
        return m.method == "notifications/cancelled"
    if marked or m.kind is not MessageKind.ERROR:
        return False
    text = m.payload.get("message")
    timed_out = isinstance(text, str) and ("timed out" in text.lower() or "timeout" in text.lower())
    return says_cancelled(m) is not None or timed_out or m.payload.get("code") in GAVE_UP_CODES


def _cancel_reached(ev: Evidence, request_id: RequestId) -> bool:
    """Any cancel for the request in the primary, or a client close or reset of its stream in either."""
    streams: set[str] = set()
    for events in (ev.primary, ev.secondary):
        for event in events:
            if not isinstance(event, MessageEvent) or event.direction is not Direction.C2S:
                continue
            m = event.message
            if m.kind is MessageKind.REQUEST and m.id == request_id and event.stream is not None:
                streams.add(event.stream)
            if (
                events is ev.primary
                and m.method == "notifications/cancelled"
                and m.payload.get("requestId") == request_id
            ):
                return True
    return any(
        isinstance(e, TransportEvent) and e.kind in _CLIENT_CLOSES and e.stream in streams
        for events in (ev.primary, ev.secondary)
        for e in events
    )


def _never_sent(
    ev: Evidence, gave_up: MessageEvent | TransportEvent, request_id: RequestId, method: str | None, owners: _Requests
) -> Iterator[Anomaly]:
    at = ev.to_primary(gave_up.ts)
    later = [
        e
        for e in ev.primary
        if isinstance(e, MessageEvent)
        and e.direction is Direction.S2C
        and owners.of(e)[:1] == (request_id,)
        and (at is None or (e.ts is not None and e.ts >= at))
    ]
    logged_cancel = isinstance(gave_up, MessageEvent) and gave_up.direction is Direction.C2S
    how = "logged a cancel that" if logged_cancel else "made its own error for it, and"
    where = f"no notifications/cancelled, stream close or reset for it reached {ev.primary_name}"
    if later and at is not None and later[-1].ts is not None:
        last = later[-1]
        tail = (
            f"; the server went on for {last.ts - at:.3f} s and wrote {len(later)} message(s) for it"  # type: ignore[operator]
            f" (the last at {last.origin.display()})"
        )
    else:
        tail = f"; {ev.primary_name} shows nothing more written for it" if at is not None else ""
    detail = f"the client gave up on the call ({ev.secondary_name} {how} {where}){tail}"
    # no `gap`: the fact (no cancel reached the server) is exact; the time across clocks is in the text
    base = Anomaly(
        seq=0,
        ts=at,
        origin=gave_up.origin,
        session_key=ev.key,
        name=AnomalyName.MERGE_CANCEL_NEVER_SENT,
        detail=detail,
        request_id=request_id,
        method=method,
        requester=Side.CLIENT,
    )
    yield base
