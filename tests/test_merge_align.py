"""merge.py on synthetic sessions: known clock offset and drift, lost messages, late log lines, repeats."""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from typing import Any

from cancelwire.merge.align import Item, Travel, in_order, match
from hypothesis import assume, given, settings
from hypothesis import strategies as st

T0 = 1_800_000_000.0


@dataclass
class Synthetic:
    a: list[Item]
    b: list[Item]
    truth: set[tuple[int, int]]
    """(A index, B index) of the messages both recordings hold."""
    offset: float
    drift: float

    def true_offset_at(self, t: float) -> float:
        return self.offset + self.drift * (t - T0)


def synthetic(
    seed: int,
    *,
    exchanges: int,
    offset: float,
    drift: float,
    loss: float = 0.0,
    late: float = 0.0,
    repeated: bool = False,
) -> Synthetic:
    """A client-side recording A and a server-side recording B of EXCHANGES request/reply pairs.

    LOSS: the chance a reply never reaches A. LATE: the chance B logs a read 50-500 ms late (its bound
    is then wrong). REPEATED: every other exchange has the same content (a ping loop between calls)."""
    r = random.Random(seed)
    events: list[tuple[str, float, Item]] = []
    t = T0
    for i in range(exchanges):
        t += r.uniform(0.05, 3.0)
        sent, read = t, t + r.uniform(2e-4, 0.02)
        written = read + r.uniform(0.0, 0.4)
        back = written + r.uniform(2e-4, 0.02)
        ping = repeated and i % 2 == 1
        request = ("req", "ping") if ping else ("req", i)
        reply = ("rep", "pong") if ping else ("rep", i)
        lag = r.uniform(0.05, 0.5) if r.random() < late else 0.0
        events.append(("a", sent, Item(request, sent, Travel.A_TO_B, None if ping else i)))
        events.append(("b", read, Item(request, _b(read, offset, drift) + lag, Travel.A_TO_B, None if ping else i)))
        events.append(("b", written, Item(reply, _b(written, offset, drift), Travel.B_TO_A, None if ping else i)))
        if r.random() >= loss:
            events.append(("a", back, Item(reply, back, Travel.B_TO_A, None if ping else i)))
        t = back
    a = [item for side, _, item in sorted(events, key=lambda e: e[1]) if side == "a"]
    b = [item for side, _, item in sorted(events, key=lambda e: e[1]) if side == "b"]
    truth = set()
    for i, x in enumerate(a):
        j = next(j for j, y in enumerate(b) if y.key == x.key and abs(y.ts - _b(x.ts, offset, drift)) < 0.5 + 0.03)
        truth.add((i, j))
    return Synthetic(a, b, truth, offset, drift)


def _b(true_time: float, offset: float, drift: float) -> float:
    return true_time + offset + drift * (true_time - T0)


sessions: st.SearchStrategy[dict[str, Any]] = st.builds(
    dict,
    seed=st.integers(0, 10_000),
    exchanges=st.integers(3, 60),
    offset=st.floats(-36_000, 36_000),
    drift=st.floats(-2e-4, 2e-4),
    loss=st.sampled_from([0.0, 0.1, 0.3]),
)


@settings(max_examples=150, deadline=None)
@given(sessions)
def test_the_true_offset_is_within_the_reported_uncertainty(params: dict[str, float]) -> None:
    s = synthetic(**params)  # type: ignore[arg-type]
    assume(any(item.flow is Travel.B_TO_A for item in s.a))  # a reply that reached A: bounded both ways
    found = match(s.a, s.b)
    clock = found.clock
    assert clock is not None and clock.consistent
    assert abs(clock.offset - s.true_offset_at(clock.t0)) <= clock.uncertainty + 1e-6
    assert clock.uncertainty < 0.25  # each exchange pins it to within its round trip


@settings(max_examples=150, deadline=None)
@given(sessions)
def test_every_message_pairs_with_its_own_sighting_and_the_lost_ones_stay_unpaired(params: dict[str, float]) -> None:
    s = synthetic(**params)  # type: ignore[arg-type]
    found = match(s.a, s.b)
    assert set(found.pairs) == s.truth
    assert found.anchors == {i for i, _ in s.truth}


@settings(max_examples=100, deadline=None)
@given(sessions, st.floats(0.05, 0.2))
def test_late_log_lines_are_rejected_and_do_not_move_the_offset(params: dict[str, float], late: float) -> None:
    s = synthetic(**params, late=late)  # type: ignore[arg-type]
    assume(any(item.flow is Travel.B_TO_A for item in s.a))
    clock = match(s.a, s.b).clock
    assert clock is not None
    assert abs(clock.offset - s.true_offset_at(clock.t0)) <= clock.uncertainty + 1e-6


def test_a_known_offset_and_drift_are_recovered() -> None:
    s = synthetic(7, exchanges=200, offset=3600.25, drift=50e-6, late=0.1, loss=0.05)
    clock = match(s.a, s.b).clock
    assert clock is not None
    assert abs(clock.offset - s.true_offset_at(clock.t0)) < 0.01
    assert abs(clock.drift - 50e-6) < 10e-6
    assert clock.uncertainty < 0.005  # late log lines widen their own pair's interval and weigh little
    assert abs(clock.to_a(clock.to_b(T0 + 100)) - (T0 + 100)) < 1e-6


def test_repeated_content_pairs_by_time_and_a_lost_repeat_stays_unpaired() -> None:
    s = synthetic(3, exchanges=30, offset=-12.5, drift=0.0, loss=0.2, repeated=True)
    found = match(s.a, s.b)
    assert set(found.pairs) == s.truth
    assert len(s.b) - len(found.pairs) == len(s.b) - len(s.a) > 0


def test_without_times_the_kth_sighting_pairs_with_the_kth() -> None:
    a = [Item("x", None, Travel.A_TO_B), Item("y", None, Travel.B_TO_A), Item("x", None, Travel.A_TO_B)]
    b = [Item("x", None, Travel.A_TO_B), Item("x", None, Travel.A_TO_B)]
    found = match(a, b)
    assert found.pairs == ((0, 0), (2, 1))
    assert found.clock is None


def test_one_way_bounds_alone_give_no_clock() -> None:
    a = [Item(k, 10.0 + k, Travel.A_TO_B) for k in range(5)]
    b = [Item(k, 20.0 + k, Travel.A_TO_B) for k in range(5)]
    assert match(a, b).clock is None


@given(st.lists(st.integers(0, 30), max_size=12))
def test_in_order_is_a_longest_increasing_run(js: list[int]) -> None:
    pairs = list(enumerate(js))
    run = in_order(pairs)
    assert all(x[1] < y[1] for x, y in itertools.pairwise(run))
    assert set(run) <= set(pairs)
    best = max(
        (len(c) for n in range(len(pairs) + 1) for c in itertools.combinations(pairs, n) if _increasing(c)), default=0
    )
    assert len(run) == best


def _increasing(pairs: tuple[tuple[int, int], ...]) -> bool:
    return all(x[1] < y[1] for x, y in itertools.pairwise(pairs))
