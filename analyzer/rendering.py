"""The report dict through jinja2 templates, with every interpolated value made inert for its medium.

Each environment has a `finalize` that passes every `{{ value }}` through `inert` (terminal escapes
for text, inert Markdown for md, terminal escapes then autoescape for HTML), so a template line added
later cannot forget it. Numbers pass as they are. The only way out is `| safe` (jinja2's `Markup`), for
markup the template itself built, never for a value from a recording.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Mapping
from typing import Any

import jinja2
from markupsafe import Markup

from . import inert
from .files import data_dir

TEMPLATES = {"text": "report.txt.j2", "md": "report.md.j2", "html": "report.html.j2"}


def _finalizer(make_inert: Callable[[str], str]) -> Callable[[Any], Any]:
    def finalize(value: Any) -> Any:
        # bool is an int; Markup is the template's own markup (`| safe`, or a `{% set %}` block in HTML)
        if isinstance(value, int | float | Markup):
            return value
        return make_inert(str(value))

    return finalize


_INERT: dict[str, Callable[[str], str]] = {"text": inert.terminal, "md": inert.markdown, "html": inert.terminal}


def environment(fmt: str) -> jinja2.Environment:
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
    return env


def csp_hash(source: str) -> str:
    """The Content-Security-Policy source that allows exactly this inline `<style>` (or script) text."""
    return "sha256-" + base64.b64encode(hashlib.sha256(source.encode()).digest()).decode()


def where(evidence: Mapping[str, Any]) -> str:
    if "frame" in evidence:
        return f"{evidence['source']}#{evidence['frame']}"
    if "line" in evidence:
        return f"{evidence['source']}:{evidence['line']}"
    return str(evidence["source"])
