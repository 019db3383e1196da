"""Aligning two recordings of one session: which messages are the same, and how the clocks relate.

Pure functions over `Item`s (a content key, a time and which way the message crossed between the
two recorders), so the alignment is tested on synthetic offsets, drift and loss without any reader.

Clocks. `B = A + offset + drift * (t_A - t0)`. A message that recording A saw before recording B
(it flowed from A's side toward B's) bounds the offset from above: B cannot have seen it before A
did, so `offset <= t_B - t_A`. A message flowing the other way bounds it from below. A request and
its reply bound it from both sides, NTP-style: the midpoint of the two bounds is the estimate for
that exchange and half their distance its error. The fit is least squares over those midpoints,
refitted without outliers (a log line written late, a scheduler stall) by the median absolute
deviation; the uncertainty is the range the non-rejected bounds leave open at the fitted drift.

Matching. Messages are the same when their keys are equal (direction, kind, id, method, digest of
the content). Keys that occur once in each recording anchor the clock fit; repeated keys are then
paired in order by their aligned times. The matches that keep both recordings' orders (the longest
increasing run) are the anchors the merged stream is built around.
"""

from __future__ import annotations

import bisect
import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from ..model.timestamps import plausible

__all__ = ["ClockFit", "Contribution", "Item", "Matching", "MergeSummary", "Travel", "fit_clock", "in_order", "match"]

OUTLIER_MADS = 3.0
"""A midpoint further than this many (scaled) median absolute deviations from the fit is rejected."""
MIN_SPREAD = 1e-3
"""Seconds: residuals within this of the fit are never outliers (timestamps have ms resolution)."""
MIN_DRIFT_SPAN = 30.0
"""Seconds the request/reply pairs must span before a drift is fitted."""
MAX_ROUNDS = 4
"""Refits after rejecting outliers (each round can only remove points)."""
PAIR_TOLERANCE = 0.5
"""Seconds beyond the clock's uncertainty within which a repeated message's two sightings may pair."""


class Travel(StrEnum):
    """Which recorder saw a message first (from where the two stand between its sender and receiver)."""

    A_TO_B = "a-to-b"
    B_TO_A = "b-to-a"
    SAME = "same"
    """Both recorders stand at the same point (two captures of one link): no order between them."""


@dataclass(frozen=True, slots=True)
class Item:
    """One message as one recording saw it."""

    key: Hashable
    """Equal for the same message in both recordings (direction, kind, id, method, content digest)."""
    ts: float | None
    """When this recording saw it, on its own clock."""
    flow: Travel
    """Which recording saw it first (the same for both sightings of one message)."""
    exchange: Hashable | None = None
    """The request it belongs to (requester, id), for requests and their replies; None otherwise."""


@dataclass(frozen=True, slots=True)
class ClockFit:
    """How recording B's clock relates to A's."""

    offset: float
    """Seconds to add to an A time at `t0` to get the B time."""
    drift: float
    """Seconds of extra offset per second of A time (1e-6 = 1 ppm)."""
    t0: float
    """The A time the offset is given at (the middle of the anchors)."""
    uncertainty: float
    """Half-width, in seconds, of the offsets the bounds still allow at `t0`."""
    exchanges: int
    """Request/reply pairs the fit used."""
    rejected: int
    """Pairs rejected as outliers."""
    consistent: bool
    """False when the kept bounds contradict each other (log times are not read/write times):
    the uncertainty then comes from the scatter of the midpoints."""

    def to_b(self, a_ts: float) -> float:
        return a_ts + self.offset + self.drift * (a_ts - self.t0)

    def to_a(self, b_ts: float) -> float:
        return self.t0 + (b_ts - self.offset - self.t0) / (1.0 + self.drift)


@dataclass(frozen=True, slots=True)
class Matching:
    """What `match` found."""

    pairs: tuple[tuple[int, int], ...]
    """(index in A, index in B) of every message seen by both, by A index."""
    anchors: frozenset[int]
    """A indexes of the pairs that keep both recordings' orders."""
    clock: ClockFit | None
    """None when the times cannot bound the offset from both sides."""


@dataclass(frozen=True, slots=True)
class Contribution:
    """What one recording brought to a merged session."""

    source: str
    session_key: str
    input_format: str
    vantage: str
    role: str
    """`primary` (its order and vantage are the merged session's) or `secondary`."""
    messages: int
    matched: int
    """Messages the other recording holds too."""
    only_here: int
    """Messages only this recording holds (each reported)."""
    transport_facts: int
    """Transport facts (stream closes, resets, ...) taken into the merged session."""


@dataclass(frozen=True, slots=True)
class MergeSummary:
    """One merged session: the clock alignment and what each recording contributed."""

    session_key: str
    recordings: tuple[Contribution, Contribution]
    clock: ClockFit | None
    """The primary's clock against the secondary's: primary time = secondary time + offset (+ drift)."""
    lost: int
    unrecorded: int
    abandoned: int
    """Calls the client gave up on with no cancel reaching the server."""


def match(a: Sequence[Item], b: Sequence[Item]) -> Matching:
    """Pair the messages seen by both recordings and fit the clock."""
    in_a: dict[Hashable, list[int]] = defaultdict(list)
    in_b: dict[Hashable, list[int]] = defaultdict(list)
    for i, item in enumerate(a):
        in_a[item.key].append(i)
    for j, item in enumerate(b):
        in_b[item.key].append(j)
    unique = sorted((ia[0], in_b[k][0]) for k, ia in in_a.items() if len(ia) == 1 and len(in_b.get(k, ())) == 1)
    clock = fit_clock([(a[i], b[j]) for i, j in in_order(unique)])
    pairs = set(unique)  # a pair out of order is still one message (the two saw a crossing differently)
    for key, ia in in_a.items():
        ib = in_b.get(key)
        if ib and (len(ia) > 1 or len(ib) > 1):
            pairs.update(_pair_repeats(a, b, ia, ib, clock))
    ordered = sorted(pairs)
    anchors = in_order(ordered)
    clock = fit_clock([(a[i], b[j]) for i, j in anchors]) or clock
    return Matching(tuple(ordered), frozenset(i for i, _ in anchors), clock)


def in_order(pairs: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest run of PAIRS (sorted by A index) whose B indexes increase too (O(n log n))."""
    tails: list[int] = []  # tails[k]: B index ending the best run of length k+1
    ends: list[int] = []  # position in PAIRS of that end
    back = [-1] * len(pairs)
    for pos, (_, j) in enumerate(pairs):
        k = bisect.bisect_left(tails, j)
        if k == len(tails):
            tails.append(j)
            ends.append(pos)
        else:
            tails[k] = j
            ends[k] = pos
        back[pos] = ends[k - 1] if k else -1
    run: list[tuple[int, int]] = []
    pos = ends[-1] if ends else -1
    while pos >= 0:
        run.append(pairs[pos])
        pos = back[pos]
    return run[::-1]


def _pair_repeats(
    a: Sequence[Item], b: Sequence[Item], ia: list[int], ib: list[int], clock: ClockFit | None
) -> list[tuple[int, int]]:
    """Pair sightings of a repeated key in order; with a clock, a sighting too far from the other is
    left unpaired (it was lost or never sent), otherwise the k-th pairs with the k-th."""
    if clock is None:
        return list(zip(ia, ib, strict=False))
    limit = 3 * clock.uncertainty + PAIR_TOLERANCE

    def gap(x: int, y: int) -> float:
        ta, tb = a[ia[x]].ts, b[ib[y]].ts
        return 0.0 if ta is None or tb is None else tb - clock.to_b(ta)

    found: list[tuple[int, int]] = []
    x = y = 0
    while x < len(ia) and y < len(ib):
        here = gap(x, y)
        if here > limit:
            x += 1  # A's sighting has no partner near it in B
        elif here < -limit:
            y += 1
        elif y + 1 < len(ib) and abs(gap(x, y + 1)) < abs(here):
            y += 1  # the next sighting in B is the closer partner
        elif x + 1 < len(ia) and abs(gap(x + 1, y)) < abs(here):
            x += 1
        else:
            found.append((ia[x], ib[y]))
            x, y = x + 1, y + 1
    return found


# -- the clock ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Bound:
    t: float
    """A time."""
    d: float
    """t_B - t_A."""
    upper: bool | None
    """True: offset <= d; False: offset >= d; None: both saw it at once (offset ~ d)."""


def fit_clock(seen: Sequence[tuple[Item, Item]]) -> ClockFit | None:
    """The offset and drift of B's clock against A's, from messages both saw (A's item, B's item)."""
    bounds: list[_Bound] = []
    by_exchange: dict[Hashable, list[_Bound]] = defaultdict(list)
    for x, y in seen:
        if x.ts is None or y.ts is None or not (plausible(x.ts) and plausible(y.ts)):
            continue
        upper = None if x.flow is Travel.SAME else x.flow is Travel.A_TO_B
        bound = _Bound(x.ts, y.ts - x.ts, upper)
        bounds.append(bound)
        if x.exchange is not None:
            by_exchange[x.exchange].append(bound)
    points = [p for p in (_midpoint(g) for g in by_exchange.values()) if p is not None]
    points += [(bd.t, bd.d, 0.0) for bd in bounds if bd.upper is None]
    if not points:
        lows = [bd for bd in bounds if bd.upper is False]
        highs = [bd for bd in bounds if bd.upper is True]
        if not lows or not highs:
            return None
        lo, hi = max(bd.d for bd in lows), min(bd.d for bd in highs)
        points = [(statistics.fmean(bd.t for bd in bounds), (lo + hi) / 2, abs(hi - lo) / 2)]
    kept, rejected = _robust(points)
    offset, drift, t0 = _line(kept)
    fit = _bounded(bounds, kept, offset, drift, t0, rejected)
    # the bounds are finite, but a fit over them can still reach inf (weights of 1e6 on offsets of
    # 4e9): no number it gives would place anything, so there is no clock
    finite = all(math.isfinite(v) for v in (fit.offset, fit.drift, fit.t0, fit.uncertainty))
    return fit if finite else None


def _midpoint(group: list[_Bound]) -> tuple[float, float, float] | None:
    """An exchange's request and reply: the tightest bound each way, their middle and half-gap."""
    lows = [bd for bd in group if bd.upper is False]
    highs = [bd for bd in group if bd.upper is True]
    if not lows or not highs:
        return None
    lo, hi = max(lows, key=lambda bd: bd.d), min(highs, key=lambda bd: bd.d)
    return ((lo.t + hi.t) / 2, (lo.d + hi.d) / 2, abs(hi.d - lo.d) / 2)


def _robust(points: list[tuple[float, float, float]]) -> tuple[list[tuple[float, float, float]], int]:
    kept = points
    for _ in range(MAX_ROUNDS):
        offset, drift, t0 = _line(kept)
        residuals = [abs(d - offset - drift * (t - t0)) for t, d, _ in kept]
        spread = max(OUTLIER_MADS * 1.4826 * statistics.median(residuals), MIN_SPREAD)
        # a midpoint whose own interval still holds the fit is not an outlier
        better = [p for p, r in zip(kept, residuals, strict=True) if r <= max(spread, p[2])]
        if len(better) == len(kept) or len(better) < 2:
            break
        kept = better
    return kept, len(points) - len(kept)


def _line(points: list[tuple[float, float, float]]) -> tuple[float, float, float]:
    """Weighted least squares d = offset + drift * (t - t0), each midpoint weighted by the inverse
    square of its half-width (a reply that took seconds says little); t0 the weighted mean time.
    Flat (drift 0) unless the points span `MIN_DRIFT_SPAN` seconds: over a short session drift is
    below what the bounds can tell, and the open range (`_bounded`) still covers it."""
    weights = [1.0 / max(h, MIN_SPREAD) ** 2 for _, _, h in points]
    total = sum(weights)
    t0 = sum(w * t for w, (t, _, _) in zip(weights, points, strict=True)) / total
    mean_d = sum(w * d for w, (_, d, _) in zip(weights, points, strict=True)) / total
    spread = sum(w * (t - t0) ** 2 for w, (t, _, _) in zip(weights, points, strict=True))
    times = [t for t, _, _ in points]
    if len(points) < 3 or spread <= 0 or max(times) - min(times) < MIN_DRIFT_SPAN:
        return mean_d, 0.0, t0
    drift = sum(w * (t - t0) * (d - mean_d) for w, (t, d, _) in zip(weights, points, strict=True)) / spread
    return mean_d, drift, t0


def _bounded(
    bounds: list[_Bound],
    kept: list[tuple[float, float, float]],
    offset: float,
    drift: float,
    t0: float,
    rejected: int,
) -> ClockFit:
    """Move the fit into what the bounds allow, and say how much they leave open at `t0`.

    A bound that cuts into the fitted line by more than the widest kept half-interval is not trusted
    (a log line written late makes its bound wrong; the fit already rejected its midpoint). The open
    range is that of every line (offset, drift within `MAX_DRIFT`) obeying the trusted bounds."""
    slack = max(max(h for _, _, h in kept), MIN_SPREAD)

    def trusted(bd: _Bound) -> bool:
        cut = bd.d - offset - drift * (bd.t - t0)
        return cut >= -slack if bd.upper else cut <= slack

    region = _Region(_tightest([bd for bd in bounds if bd.upper is not None and trusted(bd)], t0))
    span = region.drifts()
    if span is None:
        return ClockFit(offset, drift, t0, _scatter(kept, offset, drift, t0), len(kept), rejected, False)
    drift = min(max(drift, span[0]), span[1])
    offset = min(max(offset, region.low(drift)), region.high(drift))
    lowest, highest = region.lowest(span), region.highest(span)
    return ClockFit(offset, drift, t0, max(offset - lowest, highest - offset), len(kept), rejected, True)


MAX_DRIFT = 1e-3
"""Drift beyond 1000 ppm is not considered (quartz clocks stay within about 100 ppm, NTP slews 500)."""
BINS = 64
"""The bounds are thinned to the tightest upper and lower one per time bin (the others cannot matter much)."""
_STEPS = 80


def _tightest(bounds: list[_Bound], t0: float) -> list[tuple[float, float, bool]]:
    """(t - t0, d, upper) of the tightest bound each way in each of `BINS` time bins."""
    if not bounds:
        return []
    first, last = min(bd.t for bd in bounds), max(bd.t for bd in bounds)
    width = (last - first) / BINS or 1.0
    best: dict[tuple[int, bool], _Bound] = {}
    for bd in bounds:
        upper = bool(bd.upper)
        slot = (min(int((bd.t - first) / width), BINS - 1), upper)
        have = best.get(slot)
        if have is None or (bd.d < have.d if upper else bd.d > have.d):
            best[slot] = bd
    return [(bd.t - t0, bd.d, bool(bd.upper)) for bd in best.values()]


class _Region:
    """Lines d = offset + drift * tau allowed by bounds (upper: line <= d; lower: line >= d).

    For a drift, the allowed offsets are [low, high]: low is convex in drift, high concave, so each
    search below is a ternary or binary search over drift."""

    def __init__(self, bounds: list[tuple[float, float, bool]]) -> None:
        self.uppers = [(tau, d) for tau, d, upper in bounds if upper]
        self.lowers = [(tau, d) for tau, d, upper in bounds if not upper]

    def low(self, drift: float) -> float:
        return max(d - drift * tau for tau, d in self.lowers)

    def high(self, drift: float) -> float:
        return min(d - drift * tau for tau, d in self.uppers)

    def drifts(self) -> tuple[float, float] | None:
        """The drifts that leave some offset open, or None (no bound one way, or they contradict)."""
        if not self.uppers or not self.lowers:
            return None

        def room(drift: float) -> float:  # concave
            return self.high(drift) - self.low(drift)

        best = _ternary(room, -MAX_DRIFT, MAX_DRIFT, maximum=True)
        if room(best) < 0:
            return None
        return _edge(room, -MAX_DRIFT, best), _edge(room, MAX_DRIFT, best)

    def lowest(self, span: tuple[float, float]) -> float:
        return self.low(_ternary(self.low, *span, maximum=False))

    def highest(self, span: tuple[float, float]) -> float:
        return self.high(_ternary(self.high, *span, maximum=True))


def _ternary(f: Callable[[float], float], lo: float, hi: float, *, maximum: bool) -> float:
    sign = 1.0 if maximum else -1.0
    for _ in range(_STEPS):
        m1, m2 = lo + (hi - lo) / 3, hi - (hi - lo) / 3
        if sign * f(m1) < sign * f(m2):
            lo = m1
        else:
            hi = m2
    return (lo + hi) / 2


def _edge(room: Callable[[float], float], outside: float, inside: float) -> float:
    """The drift between OUTSIDE and INSIDE where the room closes (INSIDE has room)."""
    if room(outside) >= 0:
        return outside
    for _ in range(_STEPS):
        middle = (outside + inside) / 2
        if room(middle) >= 0:
            inside = middle
        else:
            outside = middle
    return inside


def _scatter(kept: list[tuple[float, float, float]], offset: float, drift: float, t0: float) -> float:
    """Two standard deviations of the kept midpoints around the fit, plus their mean half-width."""
    residuals = [d - offset - drift * (t - t0) for t, d, _ in kept]
    spread = statistics.pstdev(residuals) if len(residuals) > 1 else 0.0
    return 2 * spread + statistics.fmean(h for _, _, h in kept)
