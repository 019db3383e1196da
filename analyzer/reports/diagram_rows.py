"""A request's timeline, from a report's cancelled call, as the rows its sequence diagram draws.

One row per timeline entry (a packet's bytes folded into the message they carried); runs of like
messages collapsed to their first, a counted row and their last; past `MAX_ROWS` rows, those furthest
from the cancel left out and counted. Everything read from the call is checked, since a saved report
may have been edited by hand: counts are bounded, times finite, texts strings. diagram.py draws them.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any


class Arrow(StrEnum):
    """`data-kind` of an arrow (the closed set of the DOM contract)."""

    REQUEST = "request"
    PROGRESS = "progress"
    CANCEL = "cancel"
    CLOSE = "close"
    RESET = "reset"
    RESPONSE = "response"
    ERROR = "error"
    NOTIFICATION = "notification"
    READ = "read"
    COLLAPSED = "collapsed"


#: Timeline entry kinds drawn as arrows; every other kind is a note on one lifeline.
ARROWS: Mapping[str, Arrow] = {
    "request": Arrow.REQUEST,
    "progress": Arrow.PROGRESS,
    "related-message": Arrow.NOTIFICATION,
    "result": Arrow.RESPONSE,
    "error-result": Arrow.ERROR,
    "cancel": Arrow.CANCEL,
    "cancel-answer": Arrow.CANCEL,  # the answer to tasks/cancel: the cancel's own reply
    "task-status": Arrow.NOTIFICATION,
    "task-result": Arrow.RESPONSE,
    "stream-closed-by-client": Arrow.CLOSE,
    "stream-closed-by-server": Arrow.CLOSE,
    "stream-reset-by-client": Arrow.RESET,
    "stream-reset-by-server": Arrow.RESET,
    "read": Arrow.READ,
}
#: A run of this many like messages or more is drawn as its first, a collapsed row, and its last.
COLLAPSE_FROM = 4
MAX_ROWS = 40
#: Counts shown are bounded (a count from a hand-edited report could be any size).
MAX_COUNT = 10**15


@dataclass(slots=True)
class Row:
    """One drawn row: an arrow, or a note on a lifeline."""

    kind: str
    """An `Arrow` value, or the timeline entry kind of a note."""
    arrow: bool
    side: str | None
    """Who sent it (`client`/`server`); None for facts of the recording."""
    label: str
    title: str
    offset: float | None = None
    """Seconds from the cancel."""
    relation: str | None = None
    certainty: str | None = None
    findings: list[Mapping[str, Any]] = field(default_factory=list)
    count: int = 1
    """Messages it stands for (an entry's repeats)."""
    where: str = ""
    """Where it was read (file:line or file#frame)."""


def drawn_rows(call: Mapping[str, Any]) -> list[Row]:
    """The rows of `call`'s diagram: collapsed, then capped (with what the report itself left out)."""
    return _capped(_collapsed(_rows(call)), mapping(call.get("left_out")))


# -- from the report's timeline to rows --------------------------------------------------------------


def _rows(call: Mapping[str, Any]) -> list[Row]:
    """One row per timeline entry; bytes that came in the same frame as a message are that message."""
    rows: list[Row] = []
    timeline = call.get("timeline")
    for entry in timeline if isinstance(timeline, list) else ():
        if not isinstance(entry, Mapping):
            continue
        row = _row(call, entry)
        if rows and _same_frame(rows[-1], row):
            message, fact = (rows[-1], row) if rows[-1].arrow else (row, rows[-1])
            message.findings += [f for f in fact.findings if f not in message.findings]
            message.title += f" · {fact.label}"
            rows[-1] = message
        else:
            rows.append(row)
    return rows


def _row(call: Mapping[str, Any], entry: Mapping[str, Any]) -> Row:
    kind = str(entry.get("kind"))
    arrow = ARROWS.get(kind)
    side = entry.get("side") if entry.get("side") in ("client", "server") else None
    label = _label(call, entry, arrow)
    offset = seconds(entry.get("offset"))
    when = "" if offset is None else f" · {ms(offset)} from the cancel"
    if entry.get("relation") == "crossing":  # an exact crossing has no race window to show it
        when += f" · crossed the cancel in flight ({_word(entry.get('certainty')) or 'inferred'})"
    excerpt = str(entry.get("excerpt") or "")
    where = _where(entry.get("evidence"))
    return Row(
        kind=arrow.value if arrow is not None and side is not None else kind,
        arrow=arrow is not None and side is not None,
        side=side,
        label=label,
        title=f"{label}{when} · {where}" + (f" · {excerpt}" if excerpt else ""),
        offset=offset,
        relation=_word(entry.get("relation")),
        certainty=_word(entry.get("certainty")),
        findings=[f for f in _listed(entry.get("findings")) if isinstance(f, Mapping)],
        count=_count(entry.get("repeats")),
        where=where,
    )


def _count(value: Any, least: int = 1) -> int:
    """A count from the report, bounded (a hand-edited report may say anything)."""
    return min(value, MAX_COUNT) if isinstance(value, int) and not isinstance(value, bool) and value > least else least


def seconds(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    seconds = float(value) if abs(value) < 1e12 else math.nan
    return seconds if math.isfinite(seconds) else None


def _word(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _label(call: Mapping[str, Any], entry: Mapping[str, Any], arrow: Arrow | None) -> str:
    kind, method = str(entry.get("kind")), entry.get("method")
    if arrow is Arrow.REQUEST:
        tool = f" {call['tool']}" if call.get("tool") else ""
        return f"{call.get('method')}{tool} (id {call.get('request_id')})"
    if arrow in (Arrow.CLOSE, Arrow.RESET) or arrow is None:
        return str(entry.get("excerpt") or kind.replace("-", " "))
    if arrow is Arrow.READ:
        return f"{method or 'a read'} succeeded (the verifying read)"
    if kind in ("cancel-answer", "task-status", "task-result"):  # what a task's receiver said of it
        status = entry.get("status")
        return f"{method or kind}" + (f": {status}" if isinstance(status, str) else " (acknowledged)")
    if arrow is Arrow.RESPONSE:
        return f"result (id {call.get('request_id')})"
    if arrow is Arrow.ERROR:
        return f"error (id {call.get('request_id')})"
    return str(method or kind)


def _same_frame(last: Row, row: Row) -> bool:
    """A `server-bytes` fact and the message its bytes carried (same sender, same place)."""
    facts = (last.kind, row.kind)
    return last.side == row.side and last.where == row.where and last.arrow != row.arrow and "server-bytes" in facts


# -- collapsing and capping ------------------------------------------------------------------------


def _like(a: Row, b: Row) -> bool:
    same = (a.kind, a.side, a.relation, a.certainty) == (b.kind, b.side, b.relation, b.certainty)
    return same and rules_of(a) == rules_of(b)


def _runs(rows: Sequence[Row]) -> Iterator[list[Row]]:
    run: list[Row] = []
    for row in rows:
        if run and not (row.arrow and _like(run[-1], row)):
            yield run
            run = []
        run.append(row)
    if run:
        yield run


def _collapsed(rows: Sequence[Row]) -> list[Row]:
    """A run of like messages (COLLAPSE_FROM or more, counting repeats) as its first, a collapsed row
    standing for the middle, and its last."""
    out: list[Row] = []
    for run in _runs(rows):
        total = sum(r.count for r in run)
        if total < COLLAPSE_FROM and all(r.count == 1 for r in run):
            out += run
            continue
        first, last = run[0], run[-1]
        middle = total - 1 - (len(run) > 1)
        out.append(replace(first, count=1))
        if middle:
            what = f"and {middle:,} more {'progress' if first.kind == Arrow.PROGRESS else first.label}"
            out.append(replace(first, kind=Arrow.COLLAPSED.value, label=what, title=what, offset=None, count=middle))
        if len(run) > 1:
            out.append(replace(last, count=1))
    return out


def _capped(rows: list[Row], left_out: Mapping[str, Any]) -> list[Row]:
    """At most MAX_ROWS rows: the request and those nearest the cancel; what is left out is counted,
    with the messages the report itself did not keep (`left_out`)."""
    before, after = _count(left_out.get("before"), 0), _count(left_out.get("after"), 0)
    if len(rows) > MAX_ROWS:
        at = next((i for i, r in enumerate(rows) if r.relation == "cancel"), 1)
        start = max(1, min(at - MAX_ROWS // 2, len(rows) - MAX_ROWS + 2))
        end = start + MAX_ROWS - 3
        before += sum(r.count for r in rows[1:start])
        after += sum(r.count for r in rows[end:])
        rows = [rows[0], *rows[start:end]]
    if before:
        rows.insert(min(1, len(rows)), _left_out(before, "earlier"))
    if after:
        rows.append(_left_out(after, "later"))
    return rows


def _left_out(count: int, which: str) -> Row:
    """Messages not drawn, of either sender: a note across both lifelines."""
    what = f"and {count:,} {which} messages not drawn"
    return Row(kind=Arrow.COLLAPSED.value, arrow=False, side=None, label=what, title=what, count=count)


def rules_of(row: Row) -> tuple[str, ...]:
    return tuple(dict.fromkeys(str(f.get("rule_id")) for f in row.findings))


def _where(evidence: Any) -> str:
    if not isinstance(evidence, Mapping):
        return ""
    place = evidence.get("frame"), evidence.get("line")
    suffix = f"#{place[0]}" if place[0] is not None else (f":{place[1]}" if place[1] is not None else "")
    return f"{evidence.get('source')}{suffix}"


def ms(seconds: float, *, signed: bool = True) -> str:
    ms = seconds * 1000
    text = f"{ms:,.0f} ms" if abs(ms) >= 10 or ms == 0 else f"{ms:,.1f} ms"
    return ("+" if signed and ms > 0 else "") + text.replace("-", "−")
