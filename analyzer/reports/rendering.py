"""The report dict through jinja2 templates, with every interpolated value made inert for its medium.

Each environment has a `finalize` that passes every `{{ value }}` through `inert` (terminal escapes
for text, inert Markdown for md, terminal escapes then autoescape for HTML), so a template line added
later cannot forget it. Numbers pass as they are. The only way out is `| safe` (jinja2's `Markup`), for
markup the template itself built, never for a value from a recording.

The Markdown report is a pull-request comment, and GitHub refuses one over 65,536 characters: it stays
under `MARKDOWN_LIMIT` whatever the audit. Each recorded value is clipped to `MARKDOWN_VALUE_CHARS`, and
every list in the template goes through `fit()`, which stops handing out items once the text written so
far passes the budget; the template then says how many of each were left out.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from typing import Any, Generic, TextIO, TypeVar

import jinja2
from markupsafe import Markup

from ..ci.gates import Triage
from ..ci.verdict import plural, verdict
from ..support import inert
from ..support.files import data_dir
from . import diagram
from .document import prepare
from .formats import WriteOptions

TEMPLATES = {"text": "report.txt.j2", "md": "report.md.j2", "html": "report.html.j2"}
MARKDOWN_LIMIT = 60_000
#: Room kept after the lists for what follows them (the cut line, how the report was made).
MARKDOWN_TAIL = 6_000
MARKDOWN_VALUE_CHARS = 400

#: SGR codes of the text report's colours (`paint`): the only escape sequences it ever writes.
COLORS = {"error": "1;31", "fail": "1;31", "warning": "33", "info": "36", "pass": "1;32", "heading": "1"}

T = TypeVar("T")


def _finalizer(make_inert: Callable[[str], str]) -> Callable[[Any], Any]:
    def finalize(value: Any) -> Any:
        if type(value) is str:  # the usual case, tested first (a plain str, not Markup)
            return make_inert(value)
        # bool is an int; Markup is the template's own markup (`| safe`, or a `{% set %}` block in HTML)
        if isinstance(value, int | float | Markup):
            return value
        return make_inert(str(value))

    return finalize


def _markdown_value(text: str) -> str:
    if len(text) > MARKDOWN_VALUE_CHARS:
        text = f"{text[:MARKDOWN_VALUE_CHARS]}… ({len(text) - MARKDOWN_VALUE_CHARS} more characters)"
    return inert.markdown(text)


_INERT: dict[str, Callable[[str], str]] = {"text": inert.terminal, "md": _markdown_value, "html": inert.terminal}


def painter(color: bool) -> Callable[[Any, str], Markup]:
    """The text report's `paint` filter: VALUE made inert, then wrapped in the colour STYLE when
    `color` is on. The escape sequences are ours and go around the inert text, never inside it."""

    def paint(value: Any, style: str) -> Markup:
        text = inert.terminal(str(value))
        return Markup(f"\x1b[{COLORS[style]}m{text}\x1b[0m" if color else text)

    return paint


def environment(fmt: str, color: bool = False) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(data_dir("templates")),
        autoescape=fmt == "html",
        undefined=jinja2.StrictUndefined,
        finalize=_finalizer(_INERT[fmt]),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["where"] = where
    env.filters["csp_hash"] = csp_hash
    drawer = diagram.ReportDrawer()  # the HTML report's sequence diagrams: `{{ call | diagram(report) }}`
    env.filters["diagram"] = lambda call, report: Markup(drawer(call, report))
    env.filters["plural"] = plural
    env.filters["paint"] = painter(color and fmt == "text")
    # `| ours`: our own words; in Markdown left unescaped when nothing in them can act (inert.markdown_ours)
    env.filters["ours"] = _ours if fmt == "md" else _as_is
    return env


def _ours(value: Any) -> Markup:
    return Markup(inert.markdown_ours(str(value)))


def _as_is(value: Any) -> Any:
    return value


def csp_hash(source: str) -> str:
    """The Content-Security-Policy source that allows exactly this inline `<style>` (or script) text."""
    return "sha256-" + base64.b64encode(hashlib.sha256(source.encode()).digest()).decode()


def where(evidence: Mapping[str, Any]) -> str:
    if "frame" in evidence:
        return f"{evidence['source']}#{evidence['frame']}"
    if "line" in evidence:
        return f"{evidence['source']}:{evidence['line']}"
    return str(evidence["source"])


def write(
    report: Mapping[str, Any], fmt: str, out: TextIO, *, color: bool = False, verbose: bool = False, **context: Any
) -> None:
    """Text and HTML are written as they are produced; Markdown is fitted under `MARKDOWN_LIMIT` first.
    COLOR: the text report's colours (the caller decides: a terminal, `--color`, `NO_COLOR`); VERBOSE:
    the text report lists every session; CONTEXT: what a template needs beyond the report (the HTML
    page's verdict and call numbers)."""
    if fmt == "md":
        out.write(markdown(report))
        return
    template = environment(fmt, color).get_template(TEMPLATES[fmt])
    for chunk in template.generate(report=report, verbose=verbose, **context):
        out.write(chunk)


def write_format(triage: Triage, out: TextIO, fmt: str, options: WriteOptions) -> None:
    """The text or Markdown report of TRIAGE's audit, ending with its verdict against the gate."""
    report = prepare(triage, fmt)
    report["verdict"] = verdict(triage)
    write(report, fmt, out, color=options.color, verbose=options.verbose)


def markdown(report: Mapping[str, Any], template_name: str = TEMPLATES["md"], key: str = "report") -> str:
    """The Markdown report in at most `MARKDOWN_LIMIT` characters. A list stops one item after the
    budget is passed, so an oversized last item can overshoot it: then the lists get less room and the
    report is made again (a few times at most; as a last resort it is cut at a line with a note)."""
    template = environment("md").get_template(template_name)
    budget = MARKDOWN_LIMIT - MARKDOWN_TAIL
    for _ in range(4):
        text = _fitted(template, {key: report}, budget)
        if len(text) <= MARKDOWN_LIMIT:
            return text
        budget -= len(text) - MARKDOWN_LIMIT + 1_000
    note = "\n\n_The report was cut here to fit a comment; `--format json` lists everything._\n"
    return text[: text.rfind("\n", 0, MARKDOWN_LIMIT - len(note))] + note


def _fitted(template: jinja2.Template, context: Mapping[str, Any], budget: int) -> str:
    written = _Written(budget)
    for chunk in template.generate(**context, fit=written.fit):
        written.add(chunk)
    return "".join(written.parts)


class _Written:
    """The Markdown text so far, and the lists that stop once it passes `budget` characters."""

    def __init__(self, budget: int) -> None:
        self.budget, self.size, self.parts = budget, 0, list[str]()

    def add(self, chunk: str) -> None:
        self.parts.append(chunk)
        self.size += len(chunk)

    def fit(self, items: Collection[T], total: int | None = None, until: float = 1.0) -> Fitted[T]:
        """`items` until the report reaches the share `until` of the budget (so a huge list leaves room
        for the next ones); `total`: how many there are in all (default: all of `items`)."""
        return Fitted(items, self, len(items) if total is None else total, int(self.budget * until))


class Fitted(Generic[T]):
    """The items of a list while the report has room: `shown` were handed out, `left` of `total` were not."""

    def __init__(self, items: Iterable[T], written: _Written, total: int, budget: int) -> None:
        self.items, self.written, self.total, self.budget, self.shown = items, written, total, budget, 0

    def __iter__(self) -> Iterator[T]:
        for item in self.items:
            if self.written.size >= self.budget:
                return
            self.shown += 1
            yield item

    @property
    def left(self) -> int:
        return self.total - self.shown
