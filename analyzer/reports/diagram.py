"""A client/server sequence diagram of one request, as inline SVG, drawn from a report's cancelled call.

Pure: a cancellation dict of `document.build` (or `forms.exchange` for any request) in, an SVG string out,
so a saved JSON report can be drawn as well as a live audit. The DOM is a contract the browser tests
read (see docs/reports.md, "Sequence diagrams"): every arrow is a `<g class="msg" data-kind data-dir data-seq>`
with a `<title>`; a finding on it adds `data-finding` (rule ids, space-separated) and `data-certainty`
(`inferred` when any of them is); facts seen on one side only (a stream opened, bytes, a zero window, the
end of the recording) are `<g class="note" data-kind>`; the race window is `<rect class="race-window">`.

Safe: every text is recorded and hostile. It is cut to a bounded length, made inert (`inert.terminal`:
no control, bidi or lone surrogate character survives, so the SVG is valid XML on its own too) and
escaped for XML and HTML. Only presentation attributes are used (no `style`), so the report's
Content-Security-Policy needs nothing for it, and no ids, so a page can hold a thousand diagrams.

Bounded: runs of like messages collapse ("and 57 more progress"), and past `MAX_ROWS` rows the rows
furthest from the cancel are left out with a count (diagram_rows.py), so a diagram costs at most a few
tens of KB.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from ..support import inert
from .diagram_rows import Arrow, Row, drawn_rows, mapping, ms, rules_of, seconds

LABEL_CHARS = 60
TITLE_CHARS = 200
NAME_CHARS = 32

WIDTH = 720
GAP_X = 8
CLIENT_X = 150
SERVER_X = 470
BADGE_X = 490
TOP = 62
ROW = 30
SVG_NS = ' xmlns="http://www.w3.org/2000/svg"'
COLORS = {"error": "#a40000", "warning": "#8a5a00", "info": "#225555", "cancel": "#c05000", "plain": "#333"}


def draw(
    call: Mapping[str, Any],
    *,
    session: Mapping[str, Any] | None = None,
    race_window: float | None = None,
    standalone: bool = False,
) -> str:
    """The SVG of `call` (a cancelled call of the report, or `forms.exchange`). SESSION (the report's
    session entry) names the lifelines and says where the recording was made; RACE_WINDOW (seconds, the
    report's `run.race_windows` for that vantage) sizes the shaded window. STANDALONE: for a file of its
    own, with the SVG namespace (inline in HTML the parser gives it, and the page names no URL)."""
    rows = drawn_rows(call)
    height = TOP + ROW * len(rows) + 16
    parts = [
        f'<svg class="sequence"{SVG_NS if standalone else ""} role="img" width="{WIDTH}" height="{height}"'
        f' viewBox="0 0 {WIDTH} {height}" font-family="system-ui, sans-serif" font-size="11"'
        f' aria-label="{caption(call)}">',
        f'<rect width="{WIDTH}" height="{height}" fill="#fff"/>',
    ]
    parts += _race_window(call, rows, race_window)
    parts += _heads(session, height)
    seq, previous = 0, None
    for index, row in enumerate(rows):
        y = TOP + ROW * index + ROW // 2
        if row.offset is not None and previous is not None:
            parts.append(_gap(row.offset - previous, y - ROW // 2))
        previous = row.offset if row.offset is not None else previous
        if row.arrow:
            parts.append(_arrow(row, y, seq))
            seq += 1
        else:
            parts.append(_note(row, y))
    parts.append("</svg>")
    return "".join(parts)


class ReportDrawer:
    """Draws cancelled calls of a report dict with their session's names and race window (the report's
    sessions are indexed once per report, so a page of a thousand calls does not search them each time)."""

    def __init__(self) -> None:
        self._sessions: object = None
        self._by_id: dict[Any, Mapping[str, Any]] = {}

    def __call__(self, call: Mapping[str, Any], report: Mapping[str, Any]) -> str:
        sessions = report.get("sessions")
        if sessions is not self._sessions:
            listed = sessions if isinstance(sessions, list) else []
            self._by_id = {s.get("id"): s for s in listed if isinstance(s, Mapping) and isinstance(s.get("id"), str)}
            self._sessions = sessions
        key = call.get("session")
        session = self._by_id.get(key) if isinstance(key, str) else None
        windows = mapping(mapping(report.get("run")).get("race_windows"))
        vantage = session.get("vantage") if session else None
        window = seconds(windows.get(vantage)) if isinstance(vantage, str) else None
        return draw(call, session=session, race_window=window)


# -- drawing ---------------------------------------------------------------------------------------


def _heads(session: Mapping[str, Any] | None, height: int) -> list[str]:
    info = session or {}
    vantage = str(info.get("vantage") or "unknown")
    parts = []
    for side, x in (("client", CLIENT_X), ("server", SERVER_X)):
        peer = info.get(f"{side}_info")
        name = peer.get("name") if isinstance(peer, Mapping) else None
        here = " (recorded here)" if vantage == side else ""
        label = _text(f"{name} · {side}" if isinstance(name, str) and name else side, NAME_CHARS - len(here)) + here
        parts.append(
            f'<rect x="{x - 110}" y="8" width="220" height="24" rx="3" fill="#f4f4f4" stroke="#999"/>'
            f'<text x="{x}" y="24" text-anchor="middle" font-weight="600">{label}</text>'
            f'<line x1="{x}" y1="32" x2="{x}" y2="{height - 8}" stroke="#999" stroke-dasharray="2 3"/>'
        )
    seen = {"proxy": "recorded by a proxy between the two", "wire": "recorded on the wire (packet capture)"}
    if vantage in seen:
        middle = (CLIENT_X + SERVER_X) // 2
        parts.append(f'<text x="{middle}" y="48" text-anchor="middle" fill="#666">{seen[vantage]}</text>')
    return parts


def _arrow(row: Row, y: int, seq: int) -> str:
    c2s = row.side == "client"
    x1, x2 = (CLIENT_X, SERVER_X) if c2s else (SERVER_X, CLIENT_X)
    tip = -7 if c2s else 7
    color = _color(row)
    dash = ' stroke-dasharray="5 3"' if row.certainty == "inferred" or row.kind == Arrow.COLLAPSED else ""
    width = 2.5 if row.relation == "cancel" else 1.5
    italic = ' font-style="italic"' if row.kind == Arrow.COLLAPSED else ""
    attrs = f'class="msg" data-kind="{row.kind}" data-dir="{"c2s" if c2s else "s2c"}" data-seq="{seq}"'
    if row.findings:
        certainty = "inferred" if any(f.get("certainty") == "inferred" for f in row.findings) else "exact"
        attrs += f' data-finding="{_attr(" ".join(rules_of(row)))}" data-certainty="{certainty}"'
    return (
        f"<g {attrs}><title>{_text(row.title, TITLE_CHARS)}{_marks_text(row)}</title>"
        f'<line x1="{x1}" y1="{y}" x2="{x2}" y2="{y}" stroke="{color}" stroke-width="{width}"{dash}/>'
        f'<path d="M{x2} {y} l{tip} -4 v8 z" fill="{color}"/>'
        f'<text x="{(x1 + x2) // 2}" y="{y - 5}" text-anchor="middle" fill="{color}"{italic}>'
        f"{_text(row.label, LABEL_CHARS)}</text>"
        f"{_badges(row, y)}</g>"
    )


def _note(row: Row, y: int) -> str:
    attrs = f'class="note" data-kind="{_attr(row.kind, 40)}"'
    if row.findings:
        attrs += f' data-finding="{_attr(" ".join(rules_of(row)))}"'
    if row.side is None:  # a fact of the whole recording: a rule across both lifelines
        ends = f'x1="{CLIENT_X - 40}" y1="{y}" x2="{SERVER_X + 40}" y2="{y}"'
        mark = f'<line {ends} stroke="#777" stroke-dasharray="1 3"/>'
        x, anchor = (CLIENT_X + SERVER_X) // 2, "middle"
    else:
        x0 = CLIENT_X if row.side == "client" else SERVER_X
        mark = f'<circle cx="{x0}" cy="{y}" r="3.5" fill="#777"/>'
        x, anchor = (x0 + 8, "start") if row.side == "client" else (x0 - 8, "end")
    return (
        f"<g {attrs}><title>{_text(row.title, TITLE_CHARS)}{_marks_text(row)}</title>{mark}"
        f'<text x="{x}" y="{y - 4}" text-anchor="{anchor}" fill="#555">{_text(row.label, LABEL_CHARS)}</text>'
        f"{_badges(row, y)}</g>"
    )


def _color(row: Row) -> str:
    severities = {str(f.get("severity")) for f in row.findings}
    worst = next((s for s in ("error", "warning", "info") if s in severities), None)
    if worst is not None:
        return COLORS[worst]
    return COLORS["cancel"] if row.relation == "cancel" else COLORS["plain"]


def _badges(row: Row, y: int) -> str:
    out, x = [], BADGE_X
    for f in row.findings[:3]:
        text = _text(f"{f.get('rule_id')} {f.get('certainty')}", 24)
        color = COLORS.get(str(f.get("severity")), COLORS["plain"])
        out.append(f'<text x="{x}" y="{y + 4}" fill="{color}" font-weight="600">{text}</text>')
        x += 7 * len(text) + 8
    return "".join(out)


def _race_window(call: Mapping[str, Any], rows: Sequence[Row], window: float | None) -> list[str]:
    """Shaded from the cancel to the last row the window covers, when a verdict rests on it: the
    outcome or a finding on the diagram is inferred (from timing, not proven order)."""
    at = next((i for i, r in enumerate(rows) if r.relation == "cancel"), None)
    marks = (f.get("certainty") for r in rows for f in r.findings)
    leans = call.get("certainty") == "inferred" or "inferred" in marks
    if at is None or not leans:
        return []
    end = at
    for i in range(at + 1, len(rows)):
        row = rows[i]
        inside = row.relation == "crossing" or (
            window is not None and row.offset is not None and row.offset <= window and row.relation != "cancel"
        )
        if inside:
            end = i
    y1, y2 = TOP + ROW * at + ROW // 2, TOP + ROW * end + ROW - 2
    label = "race window" + ("" if window is None else f" {ms(window, signed=False)}")
    return [
        f'<rect class="race-window" x="{CLIENT_X - 30}" y="{y1}" width="{SERVER_X - CLIENT_X + 60}"'
        f' height="{y2 - y1}" fill="#f5c400" fill-opacity="0.18" stroke="#d0a000" stroke-dasharray="3 2">'
        f"<title>{_text(label, 80)}: a message the receiver sent inside it may have crossed the cancel</title></rect>",
        f'<text x="{BADGE_X}" y="{y1 + 11}" fill="#8a6d00" font-size="10">{label}</text>',
    ]


def _gap(seconds: float, y: int) -> str:
    if abs(seconds) < 0.001:
        return ""
    return f'<text x="{GAP_X}" y="{y + 4}" fill="#888" font-size="10">{ms(seconds)}</text>'


# -- text ------------------------------------------------------------------------------------------


def caption(call: Mapping[str, Any]) -> str:
    """What the diagram of `call` shows, in one line, made inert and escaped (its `aria-label`)."""
    return _attr(_summary(call))


def _summary(call: Mapping[str, Any]) -> str:
    tool = f" {call['tool']}" if call.get("tool") else ""
    what = f"Sequence diagram of {call.get('method')}{tool} id {call.get('request_id')} in {call.get('session')}"
    if call.get("mechanism"):
        what += f", cancelled by {call['mechanism']}"
    if call.get("outcome"):
        what += f": {call['outcome']} ({call.get('certainty')})"
    return what


def _marks_text(row: Row) -> str:
    marks = [f"{f.get('rule_id')} {f.get('rule')} ({f.get('severity')}, {f.get('certainty')})" for f in row.findings]
    return _text(" · finding: " + "; ".join(marks), TITLE_CHARS) if marks else ""


def _text(value: object, limit: int) -> str:
    """Recorded text for an element's content: cut to LIMIT characters, made inert, `<>&` escaped."""
    return html.escape(_cut(value, limit), quote=False)


def _attr(value: object, limit: int = TITLE_CHARS) -> str:
    """Recorded text for an attribute value: as `_text`, quotes escaped too."""
    return html.escape(_cut(value, limit), quote=True)


def _cut(value: object, limit: int) -> str:
    text = str(value)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return inert.terminal(text)
