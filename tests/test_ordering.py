"""Race or violation, decided in one place: each way of knowing, and the fallback to the window."""

from __future__ import annotations

import pytest
from cancelwire.model import (
    CancelInfo,
    CancelMechanism,
    Certainty,
    EntryKind,
    Origin,
    Relation,
    Side,
    TimelineEntry,
    Vantage,
)
from cancelwire.rebuild.ordering import race_window, relate

ORIGIN = Origin("x")


def _entry(kind: EntryKind, side: Side, seq: int, ts: float | None) -> TimelineEntry:
    return TimelineEntry(kind, side, seq, ts, ORIGIN)


def _cancel(mechanism: CancelMechanism = CancelMechanism.NOTIFICATION, ts: float | None = 10.0) -> CancelInfo:
    kind = EntryKind.CANCEL if mechanism is CancelMechanism.NOTIFICATION else EntryKind.STREAM_CLOSED_BY_CLIENT
    return CancelInfo(mechanism, _entry(kind, Side.CLIENT, 5, ts))


def _reply(seq: int = 9, ts: float | None = 10.02) -> TimelineEntry:
    return _entry(EntryKind.RESULT, Side.SERVER, seq, ts)


def _relate(cancel: CancelInfo, entry: TimelineEntry, vantage: Vantage, **kw: object) -> tuple[Relation, Certainty]:
    args: dict[str, object] = {"proof_seq": None, "names_cancel": None, **kw}
    override = args.pop("race_window", None)
    args["race_window"] = race_window(vantage, override=override, round_trip=args.pop("round_trip", None))  # type: ignore[arg-type]
    return relate(cancel, Side.CLIENT, entry, vantage=vantage, **args)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("vantage", "kw", "expected"),
    [
        (Vantage.SERVER, {}, (Relation.AFTER, Certainty.EXACT)),  # recorded where the cancel is read
        (Vantage.PROXY, {}, (Relation.CROSSING, Certainty.INFERRED)),  # 20 ms < 50 ms proxy window
        (Vantage.CLIENT, {}, (Relation.CROSSING, Certainty.INFERRED)),
        (Vantage.WIRE, {}, (Relation.AFTER, Certainty.INFERRED)),  # 20 ms > 10 ms wire window
        (Vantage.PROXY, {"race_window": 0.001}, (Relation.AFTER, Certainty.INFERRED)),
        (Vantage.PROXY, {"proof_seq": 8}, (Relation.AFTER, Certainty.EXACT)),
        (Vantage.PROXY, {"proof_seq": 12}, (Relation.CROSSING, Certainty.INFERRED)),  # proof came later
        (Vantage.PROXY, {"names_cancel": Certainty.EXACT}, (Relation.AFTER, Certainty.EXACT)),
        # a reply whose words only suggest it: after the cancel, but no surer than its words
        (Vantage.PROXY, {"names_cancel": Certainty.INFERRED}, (Relation.AFTER, Certainty.INFERRED)),
        # the recording's own round trips widen the window, never narrow it, and only so far
        (Vantage.WIRE, {"round_trip": 0.03}, (Relation.CROSSING, Certainty.INFERRED)),
        (Vantage.PROXY, {"round_trip": 0.001}, (Relation.CROSSING, Certainty.INFERRED)),
        (Vantage.PROXY, {"round_trip": 0.001, "race_window": 0.001}, (Relation.AFTER, Certainty.INFERRED)),
    ],
)
def test_notification_cancel(vantage: Vantage, kw: dict[str, object], expected: tuple[Relation, Certainty]) -> None:
    assert _relate(_cancel(), _reply(), vantage, **kw) == expected


def test_write_after_fin_on_the_wire_is_exact_whatever_the_gap() -> None:
    assert _relate(_cancel(CancelMechanism.DISCONNECT), _reply(ts=10.0001), Vantage.WIRE) == (
        Relation.AFTER,
        Certainty.EXACT,
    )


def test_no_timestamps_and_no_proof_stays_a_race() -> None:
    assert _relate(_cancel(ts=None), _reply(ts=None), Vantage.PROXY) == (Relation.CROSSING, Certainty.INFERRED)


def test_before_the_cancel_is_before() -> None:
    assert _relate(_cancel(), _reply(seq=3, ts=9.0), Vantage.PROXY) == (Relation.BEFORE, Certainty.EXACT)


def test_the_measured_window_is_bounded_below_by_the_default_and_above_by_a_second() -> None:
    assert race_window(Vantage.PROXY, override=None, round_trip=0.126) == 0.126
    assert race_window(Vantage.PROXY, override=None, round_trip=0.01) == 0.05
    assert race_window(Vantage.PROXY, override=None, round_trip=30.0) == 1.0
    assert race_window(Vantage.PROXY, override=0.2, round_trip=0.5) == 0.2  # --race-window decides
    assert race_window(Vantage.SERVER, override=None, round_trip=0.5) == 0.0
