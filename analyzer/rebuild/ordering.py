"""Race or violation: where a timeline entry stands relative to its request's cancel.

Decided once per entry, here, and read by the rules and the outcomes. Only the receiver knows whether
it had read the cancel before it wrote, so the verdict is EXACT only with proof: the recording was
made where the cancel is read, the cancel was a FIN/RST already on the wire, an ordering proof on
stdio, or a reply that itself names the cancel. Otherwise the race window decides, INFERRED.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from ..model import (
    CancelInfo,
    CancelMechanism,
    Certainty,
    Relation,
    Side,
    TimelineEntry,
    Vantage,
)

#: Default race windows in seconds, per vantage (see docs/judging.md).
#: server: the recording is where the cancel is read, so order is exact (window unused).
#: wire: on loopback the capture sees a packet within microseconds of the write; 10 ms covers
#:   the receiver's scheduling between reading the cancel POST and acting on it.
#: proxy: `cancelwire record` relays each line at once; 50 ms covers the server's event loop
#:   picking up a line that is already in its pipe.
#: client / unknown: host logs are written by the host's own loop, after its reads; 250 ms.
DEFAULT_RACE_WINDOWS: Final[Mapping[Vantage, float]] = {
    Vantage.SERVER: 0.0,
    Vantage.WIRE: 0.01,
    Vantage.PROXY: 0.05,
    Vantage.CLIENT: 0.25,
    Vantage.UNKNOWN: 0.25,
}

MAX_MEASURED_WINDOW = 1.0
"""Seconds the round trips a recording shows may widen its race window to, at most: the peer under audit
times its own replies, so a server that answers everything slowly must not excuse any late reply."""


def race_window(vantage: Vantage, *, override: float | None, round_trip: float | None) -> float:
    """The race window for a cancel recorded at VANTAGE: `--race-window` when given; else the vantage's
    default, widened to ROUND_TRIP (the fastest request→reply the recording itself shows for the
    canceller's requests, bounded by `MAX_MEASURED_WINDOW`). A reply that reaches the recording within
    one round trip of the cancel may have left its sender before the cancel arrived: on a slow link a
    proxy at the client's end sees every reply at least a round trip after what it answers."""
    if override is not None:
        return override
    default = DEFAULT_RACE_WINDOWS[vantage]
    if round_trip is None or vantage is Vantage.SERVER:
        return default
    return max(default, min(round_trip, MAX_MEASURED_WINDOW))


def relate(
    cancel: CancelInfo,
    requester: Side,
    entry: TimelineEntry,
    *,
    vantage: Vantage,
    proof_seq: int | None,
    names_cancel: Certainty | None,
    race_window: float,
    crossed: bool = False,
) -> tuple[Relation, Certainty]:
    """BEFORE / CROSSING / AFTER for `entry`, with how sure we are.

    `proof_seq`: from this position on, the receiver provably had read the cancel (stdio: it answered
    a request the requester sent after the cancel; pipes are read in order). `names_cancel`: the entry
    is a reply that says it answers the cancel (`cancel_words.says_cancelled`), as sure as its words say.
    `crossed`: two recordings prove the entry crossed the cancel in flight (`SessionStart.crossed`).
    """
    if entry.seq < cancel.entry.seq:
        return Relation.BEFORE, Certainty.EXACT
    receiver = requester.other
    if entry.side is not receiver:
        return Relation.AFTER, Certainty.EXACT
    if crossed:
        return Relation.CROSSING, Certainty.EXACT  # the receiver wrote it before it read the cancel
    if (vantage is Vantage.SERVER and receiver is Side.SERVER) or (
        vantage is Vantage.CLIENT and receiver is Side.CLIENT
    ):
        return Relation.AFTER, Certainty.EXACT  # recorded where the cancel is read
    if cancel.mechanism is CancelMechanism.DISCONNECT and vantage is Vantage.WIRE:
        return Relation.AFTER, Certainty.EXACT  # the client's FIN/RST was already on the wire
    if proof_seq is not None and entry.seq >= proof_seq:
        return Relation.AFTER, Certainty.EXACT
    if names_cancel is not None:
        return Relation.AFTER, names_cancel  # its content says it was written after the cancel
    if entry.ts is None or cancel.entry.ts is None:
        return Relation.CROSSING, Certainty.INFERRED
    gap = entry.ts - cancel.entry.ts
    return (Relation.AFTER if gap > race_window else Relation.CROSSING), Certainty.INFERRED


def steady(
    cancel: CancelInfo, requester: Side, *, vantage: Vantage, proof_seq: int | None, crossed: frozenset[int]
) -> bool:
    """Whether `relate` says the same of every later entry from the receiver that names no cancel,
    whatever its time: recorded where the cancel is read, a disconnect on the wire, an ordering proof
    already made, or a cancel with no time (and no second recording names crossings). A proof made
    later changes it: one is only made together with an entry of the request's own."""
    if crossed:
        return False
    receiver = requester.other
    return (
        (vantage is Vantage.SERVER and receiver is Side.SERVER)
        or (vantage is Vantage.CLIENT and receiver is Side.CLIENT)
        or (cancel.mechanism is CancelMechanism.DISCONNECT and vantage is Vantage.WIRE)
        or proof_seq is not None
        or cancel.entry.ts is None
    )
