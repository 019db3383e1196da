"""What the reports say about a cancelled call (or any request), as plain JSON-ready data.

The JSON report's entry of a cancelled call (`listed_json` of its form) is made once, where the call was
judged (`cancellations.Cancellations`): in the worker process that audited its input when the audit runs
in parallel, so the process that writes the report only copies text, and `--jobs 1`, `--jobs N` and Dask
give the same bytes because they run this same code. Nothing here renders: reports/, the templates and
diagram.py read these dicts.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from . import CancelledCall, Mark, Origin, Relation, RequestTimeline, jsonrpc


def origin_dict(origin: Origin) -> dict[str, Any]:
    out: dict[str, Any] = {"source": origin.source}
    if origin.frame is not None:
        out["frame"] = origin.frame
    elif origin.line is not None:
        out["line"] = origin.line
    return out


def frame_filter(frames: Iterable[int]) -> str | None:
    """Wireshark's display filter for these frames (None when there are none: the evidence is log lines)."""
    numbers = sorted(set(frames))
    return f"frame.number in {{{', '.join(map(str, numbers))}}}" if numbers else None  # tshark 4 wants commas


_H2_STREAM = re.compile(r"tcp(\d+)/h2s(\d+)")


def display_filter(origins: tuple[Origin, ...] | list[Origin], streams: tuple[str, ...] = ()) -> str | None:
    """Wireshark's filter for the evidence frames; on HTTP/2 also every frame of the requests' streams
    (`tcp.stream == 3 && http2.streamid == 5`: stream ids are per TCP connection)."""
    shown = frame_filter(o.frame for o in origins if o.frame is not None)
    if shown is None:
        return None
    by_conn: dict[int, list[int]] = {}
    for match in filter(None, map(_H2_STREAM.fullmatch, streams)):
        by_conn.setdefault(int(match[1]), []).append(int(match[2]))
    for conn, ids in sorted(by_conn.items()):
        ids = sorted(set(ids))
        which = f"== {ids[0]}" if len(ids) == 1 else f"in {{{', '.join(map(str, ids))}}}"
        shown += f" || (tcp.stream == {conn} && http2.streamid {which})"
    return shown


def time_text(ts: float | None) -> str | None:
    """ISO 8601 in UTC to the millisecond (`2027-01-15T08:00:02.010Z`), None for no or an impossible time."""
    if ts is None or not math.isfinite(ts):
        return None
    try:
        return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    except (OverflowError, OSError, ValueError):
        return None


def listed_json(value: Any) -> str:
    """VALUE as the JSON report writes an item of its lists (2-space indentation, four spaces in)."""
    return jsonrpc.dumps(value, indent=True).decode().replace("\n", "\n    ")


def cancellation(c: CancelledCall) -> dict[str, Any]:
    return {
        "session": c.session_key,
        "request_id": c.request_id,
        "method": c.method,
        "tool": c.tool,
        "mechanism": c.mechanism.value,
        "outcome": c.outcome.value,
        "certainty": c.certainty.value,
        "explanation": c.explanation,
        "evidence": [origin_dict(o) for o in c.evidence],
        "verified_by": origin_dict(c.verified_by) if c.verified_by else None,
        "left_out": {"before": c.left_out[0], "after": c.left_out[1]},
        "timeline": _timeline(c.timeline, c.marks) if c.timeline else [],
    }


def exchange(tl: RequestTimeline) -> dict[str, Any]:
    """Any request, cancelled or not, in the shape of a cancelled call of the report (without a verdict:
    outcome, certainty and explanation are None), so `diagram` can draw it on demand."""
    return {
        "session": tl.session_key,
        "request_id": tl.request_id,
        "method": tl.method,
        "tool": tl.tool,
        "mechanism": tl.cancel.mechanism.value if tl.cancel else None,
        "outcome": None,
        "certainty": None,
        "explanation": None,
        "evidence": [origin_dict(tl.cancel.entry.origin)] if tl.cancel else [],
        "verified_by": None,
        "left_out": {"before": 0, "after": 0},
        "timeline": _timeline(tl),
    }


def _timeline(tl: RequestTimeline, marks: tuple[Mark, ...] = ()) -> list[dict[str, Any]]:
    entries = tl.entries  # already cut to the entries around the cancel (outcomes.around_cancel)
    read = tl.verified_by  # the reply of a later read that could have checked the effect, in its place
    if read is not None:
        entries = tuple(sorted((*entries, read), key=lambda e: e.seq))
    rows = []
    cancel_ts = tl.cancel.entry.ts if tl.cancel else None
    for e in entries:
        own = e is not read  # the read belongs to another request: no relation to this one's cancel
        found = [
            {"rule_id": m.rule_id, "rule": m.rule, "severity": m.severity.value, "certainty": m.certainty.value}
            for m in marks
            if m.seq == e.seq and m.kind is e.kind
        ]
        rows.append(
            {
                "kind": e.kind.value if own else "read",
                "side": e.side.value if e.side else None,
                "method": e.method,
                "relation": e.relation.value
                if e.relation and own
                else ("cancel" if tl.cancel and e.seq == tl.cancel.entry.seq else None),
                "certainty": e.certainty.value if own and e.relation and e.relation is not Relation.BEFORE else None,
                "offset": None if e.ts is None or cancel_ts is None else round(e.ts - cancel_ts, 6),
                "time": time_text(e.ts),
                "evidence": origin_dict(e.origin),
                "excerpt": e.excerpt,
                "repeats": e.repeats,
                "findings": found,
                **({"status": e.status} if e.status is not None else {}),
            }
        )
    return rows
