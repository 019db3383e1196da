"""Small charts as inline SVG for the HTML report: horizontal bars (stacked by class) and box plots.

Our own few lines instead of a chart library: the page loads nothing and runs no chart code, and every
label is recorded text (a method or tool name), escaped here like any other value. Each chart is an
`<svg role="img">` with a `<title>` and a `<desc>` that say in words what it shows, so it is readable
without seeing it. Colours come from CSS classes (`.bar-error`, ...), never from `style=` attributes,
which the page's Content-Security-Policy refuses.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

ROW = 22
LABEL = 200
PLOT = 330
RIGHT = 60
TOP = 8
AXIS = 26
#: Label characters kept (the whole label stays in the bar's tooltip).
LABEL_CHARS = 30


@dataclass(frozen=True, slots=True)
class BarRow:
    """One row of a bar chart: its label and its parts (CSS class, value), drawn left to right."""

    label: str
    parts: tuple[tuple[str, float], ...]

    @property
    def total(self) -> float:
        return sum(value for _, value in self.parts)


@dataclass(frozen=True, slots=True)
class Box:
    """One row of a box plot: a distribution in seconds, as quartiles and extremes."""

    label: str
    count: int
    low: float
    q1: float
    median: float
    q3: float
    high: float


def _label(text: str) -> str:
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"


def _svg(title: str, desc: str, rows: int, body: list[str]) -> Markup:
    height = TOP + rows * ROW + AXIS
    width = LABEL + PLOT + RIGHT
    head = (
        f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'aria-label="{escape(title)}"><title>{escape(title)}</title><desc>{escape(desc)}</desc>'
    )
    return Markup(head + "".join(body) + "</svg>")


def _row_label(index: int, text: str) -> str:
    y = TOP + index * ROW + ROW / 2 + 4
    return f'<text class="label" x="{LABEL - 8}" y="{y:.1f}" text-anchor="end">{escape(_label(text))}</text>'


def bars(title: str, rows: Sequence[BarRow], unit: str) -> Markup:
    """Horizontal bars on a linear scale from 0, each split into its parts, the total at its end."""
    top = max((row.total for row in rows), default=0) or 1
    body = []
    for index, row in enumerate(rows):
        y = TOP + index * ROW + 3
        x = float(LABEL)
        body.append(_row_label(index, row.label))
        for cls, value in row.parts:
            if value <= 0:
                continue
            width = max(value / top * PLOT, 1.0)
            tip = f"{row.label}: {value:g} {cls} {unit}"
            body.append(
                f'<rect class="bar bar-{escape(cls)}" x="{x:.1f}" y="{y}" width="{width:.1f}" height="{ROW - 6}">'
                f"<title>{escape(tip)}</title></rect>"
            )
            x += width
        body.append(f'<text class="value" x="{x + 4:.1f}" y="{y + ROW / 2 + 1:.1f}">{row.total:g}</text>')
    desc = "; ".join(
        f"{row.label}: {row.total:g} {unit}"
        + (" (" + ", ".join(f"{v:g} {c}" for c, v in row.parts if v) + ")" if len(row.parts) > 1 else "")
        for row in rows
    )
    return _svg(title, desc, len(rows), body)


def _log_x(seconds: float, low: float, high: float) -> float:
    span = math.log10(high) - math.log10(low)
    return LABEL + (math.log10(min(max(seconds, low), high)) - math.log10(low)) / span * PLOT


def duration(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.3g} ms"
    return f"{seconds:.3g} s"


def boxes(title: str, rows: Sequence[Box]) -> Markup:
    """Box plots of durations on a log scale (milliseconds to minutes share one axis): whiskers from
    the shortest to the longest, the box from the first to the third quartile, a line at the median."""
    floor = 1e-4  # 0.1 ms: a zero duration (same timestamp) is drawn at the left edge
    low = 10 ** math.floor(math.log10(max(min((r.low for r in rows), default=1.0), floor)))
    high = 10 ** math.ceil(math.log10(max(max((r.high for r in rows), default=1.0), low * 10)))
    body = []
    for index, row in enumerate(rows):
        mid = TOP + index * ROW + ROW / 2
        xs = [_log_x(v, low, high) for v in (row.low, row.q1, row.median, row.q3, row.high)]
        tip = (
            f"{row.label}: {row.count} call(s), median {duration(row.median)}, "
            f"quartiles {duration(row.q1)} to {duration(row.q3)}, range {duration(row.low)} to {duration(row.high)}"
        )
        body.append(_row_label(index, row.label))
        body.append(
            f'<g class="box"><title>{escape(tip)}</title>'
            f'<line class="whisker" x1="{xs[0]:.1f}" x2="{xs[4]:.1f}" y1="{mid:.1f}" y2="{mid:.1f}"/>'
            f'<rect x="{xs[1]:.1f}" y="{mid - 6:.1f}" width="{max(xs[3] - xs[1], 1.0):.1f}" height="12"/>'
            f'<line class="median" x1="{xs[2]:.1f}" x2="{xs[2]:.1f}" y1="{mid - 6:.1f}" y2="{mid + 6:.1f}"/></g>'
            f'<text class="value" x="{xs[4] + 4:.1f}" y="{mid + 4:.1f}">n={row.count}</text>'
        )
    body.extend(_log_axis(low, high, TOP + len(rows) * ROW))
    desc = "; ".join(
        f"{r.label}: median {duration(r.median)}, {duration(r.low)} to {duration(r.high)} ({r.count})" for r in rows
    )
    return _svg(title, desc, len(rows), body)


def _log_axis(low: float, high: float, y: float) -> list[str]:
    out = [f'<line class="axis" x1="{LABEL}" x2="{LABEL + PLOT}" y1="{y + 2}" y2="{y + 2}"/>']
    decade = low
    while decade <= high * 1.0001:
        x = _log_x(decade, low, high)
        out.append(f'<text class="tick" x="{x:.1f}" y="{y + 18}" text-anchor="middle">{duration(decade)}</text>')
        decade *= 10
    return out
