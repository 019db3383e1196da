"""How a rule's condition matches a finalised timeline: which entries a selector picks, what an ordered pair
starts from, whether it came late or crossing, and whether nothing closed what a rule waits to see closed.
The engine (`engine`) decides which rules to try on a timeline and makes the findings."""

from __future__ import annotations

from typing import Final

from ..model import CancelledCall, EntryKind, Relation, RequestTimeline, TimelineEntry
from .rule import Condition, Party, Rule, Selector, Shape, StreamRelation, Timing, Where

# Read per timeline and per entry, so bound once: on Python 3.11 reading an enum member off its class
# (`Shape.PAIR`) runs `EnumType.__getattr__`'s hook, about 150 ns against 20 for a global (docs/benchmark.md).
_EVENT: Final = Shape.EVENT
_PAIR: Final = Shape.PAIR
_REQUESTER: Final = Party.REQUESTER
_RECEIVER: Final = Party.RECEIVER
_CANCEL: Final = EntryKind.CANCEL


def match(
    rule: Rule, tl: RequestTimeline, cancelled: CancelledCall | None
) -> tuple[TimelineEntry | None, list[TimelineEntry]] | None:
    """Where RULE's condition holds on TL: (the anchor, or None for a single event; the entries it selects)."""
    cond = rule.condition
    if cond.shape is _EVENT:
        assert cond.on is not None
        hits = [e for e in tl.entries if _selects(cond.on, tl, e, cancelled)]
        return (None, hits) if hits else None
    assert cond.after is not None
    if cond.shape is _PAIR:
        assert cond.then is not None
        anchor = next((e for e in tl.entries if _anchors(cond.after, tl, e, cancelled)), None)
        if anchor is None:
            return None
        hits = [
            e
            for e in tl.entries
            if e.seq > anchor.seq and _selects(cond.then, tl, e, cancelled) and _timed(cond.timing, tl, anchor, e)
        ]
        return (anchor, hits) if hits else None
    return _absence(cond, tl, cancelled)


_STREAM_ENDS: Final = frozenset(
    {
        EntryKind.STREAM_CLOSED_BY_CLIENT,
        EntryKind.STREAM_CLOSED_BY_SERVER,
        EntryKind.STREAM_RESET_BY_CLIENT,
        EntryKind.STREAM_RESET_BY_SERVER,
    }
)


def _absence(
    cond: Condition, tl: RequestTimeline, cancelled: CancelledCall | None
) -> tuple[TimelineEntry, list[TimelineEntry]] | None:
    """Nothing matching `never` followed the anchor (within `within` seconds, when given). A stream end
    counts only on the stream that carried the request's response when the anchor came, and one before
    the anchor ended the wait already: a stream closed before the client gave up is not left open."""
    assert cond.after is not None and cond.never is not None
    never = cond.never
    # an anchor that itself ends the wait (a close that is also the cancel) is no anchor
    anchor = next(
        (e for e in tl.entries if _anchors(cond.after, tl, e, cancelled) and not _selects(never, tl, e, cancelled)),
        None,
    )
    if anchor is None:
        return None
    response = _response_stream(tl, anchor) if never.events & _STREAM_ENDS else None
    ends = (e for e in tl.entries if _selects(never, tl, e, cancelled) and _on_stream(e, response))
    closer = next((e for e in ends if e.seq > anchor.seq or e.kind in _STREAM_ENDS), None)
    if closer is not None and closer.seq < anchor.seq:
        return None  # the stream had ended before the anchor: nothing was left open
    if closer is None:
        if not tl.ended_by_recording:
            return None
        closer = tl.entries[-1]
    elif cond.within is None:
        return None
    if cond.within is not None and (closer.ts is None or anchor.ts is None or closer.ts - anchor.ts <= cond.within):
        return None  # closed in time, or no clock to tell
    return anchor, [closer]


def _response_stream(tl: RequestTimeline, anchor: TimelineEntry) -> str | None:
    """The stream that carried the request's response when `anchor` came: the last the receiver wrote
    on before it, else the request's own. Not the anchor's: a cancel is POSTed on a stream of its own."""
    receiver = tl.requester.other
    before = (e.stream for e in reversed(tl.entries) if e.seq < anchor.seq and e.side is receiver and e.stream)
    return next(before, tl.stream)


def _on_stream(entry: TimelineEntry, stream: str | None) -> bool:
    """A stream fact counts on `stream` only; message entries are the request's wherever they came."""
    return entry.kind not in _STREAM_ENDS or stream is None or entry.stream == stream


def _anchors(sel: Selector, tl: RequestTimeline, entry: TimelineEntry, cancelled: CancelledCall | None) -> bool:
    """An entry an ordered pair or an absence can start from. A cancel entry that is not the timeline's
    cancel (one its receiver was entitled to ignore, see `cancels.may_be_ignored`) orders nothing: it is
    reported by its own rule, and what followed it is not judged against it."""
    if entry.kind is _CANCEL and (tl.cancel is None or tl.cancel.entry.seq != entry.seq):
        return False
    return _selects(sel, tl, entry, cancelled)


def _selects(sel: Selector, tl: RequestTimeline, entry: TimelineEntry, cancelled: CancelledCall | None) -> bool:
    # `cancel` selects the timeline's cancel whatever carried it: the notification, or the client's
    # close/reset of the stream where the revision makes that the cancel.
    is_the_cancel = tl.cancel is not None and entry.seq == tl.cancel.entry.seq
    if entry.kind not in sel.events and not (is_the_cancel and _CANCEL in sel.events):
        return False
    if sel.side is _REQUESTER and entry.side is not tl.requester:
        return False
    if sel.side is _RECEIVER and entry.side is not tl.requester.other:
        return False
    if (
        is_the_cancel
        and sel.mechanism is not None
        and tl.cancel is not None
        and tl.cancel.mechanism not in sel.mechanism
    ):
        return False
    return _where(sel.where, tl, entry, cancelled)


def _where(w: Where, tl: RequestTimeline, entry: TimelineEntry, cancelled: CancelledCall | None) -> bool:
    if w.method is not None and tl.method not in w.method:
        return False
    if w.tool_effect is not None and tl.tool_effect not in w.tool_effect:
        return False
    if w.vantage is not None and tl.vantage not in w.vantage:
        return False
    if w.transport is not None and tl.transport not in w.transport:
        return False
    if w.outcome is not None and (cancelled is None or cancelled.outcome not in w.outcome):
        return False
    if w.stream is StreamRelation.SAME and entry.stream != tl.stream:
        return False
    return not (w.stream is StreamRelation.OTHER and entry.stream == tl.stream)


def _timed(timing: Timing | None, tl: RequestTimeline, anchor: TimelineEntry, entry: TimelineEntry) -> bool:
    """`late`: surely after the anchor reached its receiver; `crossing`: may have passed it in flight."""
    if timing is None:
        return True
    is_cancel = tl.cancel is not None and anchor.seq == tl.cancel.entry.seq
    relation = entry.relation if is_cancel else Relation.AFTER
    return relation is (Relation.AFTER if timing is Timing.LATE else Relation.CROSSING)
