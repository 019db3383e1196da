"""Messages two recordings prove crossed a cancel in flight (`--merge`).

One recording alone sees one point: the server's log shows a reply written before the server read the
cancel, a client log or a proxy shows the cancel sent before the reply came back. Each alone can only
say BEFORE (the server: "answered, then a cancel came", CW106) or guess from timing (the client:
"a late reply", CW101 inferred). Together they prove the race: the recording nearer the receiver has the
message before the cancel and the one nearer the canceller has it after, so both were on the way at
once. Such a message is placed after the cancel, tagged CROSSING with EXACT certainty (the merged
session's `SessionStart.crossed`), so the call is a cancelled call whose reply the canceller had to
discard (CW103, late-result-discarded) and its diagram draws it so.

Only messages of the cancelled request's own timeline count: its reply, and progress with its token.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeGuard

from ..model import Direction, Event, MessageEvent, MessageKind
from .facts import Evidence

CANCELLED = "notifications/cancelled"


@dataclass(frozen=True, slots=True)
class Crossing:
    """One cancel and the messages of its request that crossed it (indexes into the primary's events)."""

    cancel: int
    """The primary's event of the cancel."""
    sent: MessageEvent | None
    """The secondary's event of the cancel when the secondary is the canceller's side (its line, its
    time), else None (the primary's own event is where it was sent)."""
    crossed: tuple[int, ...]
    """The receiver's messages for the request that crossed it, in the primary's order."""


Key = tuple[Direction, int | str]
"""A request: the direction it was sent in, and its id."""
Pair = tuple[int, int]
"""(secondary index, primary index) of a message both recordings hold."""


def crossings(ev: Evidence) -> list[Crossing]:
    """Every cancel both recordings hold that a message of its request crossed, when they stand apart.
    One pass over the matched messages (a recording of many cancels costs in proportion to its size)."""
    if ev.same_place:
        return []
    cancels, candidates = _index(ev)
    found = []
    for key, (s_cancel, p_cancel) in cancels.items():
        # the primary stands nearer the server: the receiver's side of a client's cancel, else the canceller's
        receiver_is_primary = key[0] is Direction.C2S
        crossed = []
        for s, p in candidates.get(key, ()):
            in_primary, in_secondary = p < p_cancel, s < s_cancel
            receiver_first, canceller_first = (
                (in_primary, in_secondary) if receiver_is_primary else (in_secondary, in_primary)
            )
            if receiver_first and not canceller_first:
                crossed.append(p)
        copy = ev.secondary[s_cancel]
        if crossed and isinstance(copy, MessageEvent):
            found.append(Crossing(p_cancel, copy if receiver_is_primary else None, tuple(crossed)))
    return found


def _index(ev: Evidence) -> tuple[dict[Key, Pair], dict[Key, list[Pair]]]:
    """Per request: its first cancel, and the receiver's messages for it (replies, progress on its token)."""
    cancels: dict[Key, Pair] = {}
    tokens: dict[tuple[Direction, Hashable], Key] = {}
    candidates: dict[Key, list[Pair]] = {}
    for s, p in sorted(ev.pairs, key=lambda pair: pair[1]):
        event = ev.primary[p]
        if not isinstance(event, MessageEvent) or event.direction is Direction.NONE:
            continue
        m, params = event.message, event.message.payload  # a request's or notification's params
        if m.method == CANCELLED:
            target = params.get("requestId")
            if _is_id(target):
                cancels.setdefault((event.direction, target), (s, p))
        elif m.kind is MessageKind.REQUEST and m.id is not None:
            token = _object(params.get("_meta")).get("progressToken")
            if _is_id(token):
                tokens[(event.direction, token)] = (event.direction, m.id)
        key = _request_of(event, params, tokens)
        if key is not None:
            candidates.setdefault(key, []).append((s, p))
    return cancels, candidates


def _is_id(value: object) -> TypeGuard[int | str]:
    return isinstance(value, int | str) and not isinstance(value, bool)


def _object(value: object) -> dict[str, object]:
    return value if isinstance(value, dict) else {}


def _request_of(
    event: MessageEvent, params: Mapping[str, Any], tokens: dict[tuple[Direction, Hashable], Key]
) -> Key | None:
    """The request (sent the other way) that EVENT answers, or whose progress it reports."""
    m = event.message
    asked = Direction.S2C if event.direction is Direction.C2S else Direction.C2S
    if m.kind in (MessageKind.RESULT, MessageKind.ERROR) and m.id is not None:
        return (asked, m.id)
    token = params.get("progressToken")
    if m.method == "notifications/progress" and _is_id(token):
        return tokens.get((asked, token))
    return None


def placed(
    events: Sequence[Event], primary: Sequence[Event], found: Sequence[Crossing], ev: Evidence
) -> tuple[list[Event], set[int]]:
    """EVENTS (the merged order, holding PRIMARY's events) with each crossed cancel moved just before the
    first message that crossed it, where the canceller sent it (its recording's line, and its time on the
    primary's clock); and the identities of the messages that crossed."""
    where = {id(e): i for i, e in enumerate(events)}
    moved = {id(primary[c.cancel]): c for c in found if where[id(primary[c.cancel])] > where[id(primary[c.crossed[0]])]}
    ahead = {id(primary[c.crossed[0]]): c for c in moved.values()}
    out: list[Event] = []
    for event in events:
        if id(event) in moved:
            continue
        crossing = ahead.get(id(event))
        if crossing is not None:
            cancel = primary[crossing.cancel]
            sent = crossing.sent
            out.append(cancel if sent is None else replace(cancel, ts=ev.to_primary(sent.ts), origin=sent.origin))
        out.append(event)
    return out, {id(primary[m]) for c in found for m in c.crossed}
