"""Every output format in one table (`FORMATS`), and several outputs from one audit
(`--report junit=out.xml --report md=-`).

A format is one entry: its name, what it is for, and the module of `reports/` whose `write_format` writes
it. That module is imported when the format is first written: an audit that writes JSON loads no XML
library and no jinja2 (a third of start-up). A new format is a module with a `write_format` and one entry
here.

The audit runs once; each output reads the result's spools again (they are re-iterable, one pass at
a time), so writing five reports costs five passes over findings and cancelled calls, not five audits.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import Protocol, TextIO, cast

from ..ci.gates import Triage
from ..run.results import AuditResult


@dataclass(frozen=True, slots=True)
class WriteOptions:
    """What a run asks of every output; each format takes what concerns it."""

    color: bool = False
    """The text report's colours (the caller decides: a terminal, `--color`, `NO_COLOR`)."""
    verbose: bool = False
    """The text report lists every session."""
    step_summary: Path | None = None
    """GitHub's job summary file (`GITHUB_STEP_SUMMARY`), which `github` appends the Markdown report to."""


class Writer(Protocol):
    def __call__(self, triage: Triage, out: TextIO, fmt: str, options: WriteOptions) -> None: ...


@dataclass(frozen=True, slots=True)
class Format:
    name: str
    summary: str
    """What it is for, in a few words."""
    module: str
    """The module of `reports/` whose `write_format` writes it, imported on first use."""

    def write(self, triage: Triage, out: TextIO, options: WriteOptions) -> None:
        writer = cast(Writer, import_module(f".{self.module}", __package__).write_format)
        writer(triage, out, self.name, options)


FORMATS: Mapping[str, Format] = {
    f.name: f
    for f in (
        Format("text", "the report for a terminal (the default)", "rendering"),
        Format("json", "the whole report as one versioned JSON document", "document"),
        Format("md", "Markdown for a pull-request comment", "rendering"),
        Format("html", "a page a person reads and shares", "html_view"),
        Format("junit", "JUnit XML for the test views of CI systems", "junit"),
        Format("sarif", "SARIF 2.1.0 for code-scanning views", "sarif"),
        Format("github", "GitHub Actions workflow commands and the job summary", "github"),
        Format("otlp", "OpenTelemetry traces (OTLP/JSON) for a tracing back end", "otlp"),
    )
}


@dataclass(frozen=True, slots=True)
class Output:
    format: str
    path: str
    """A file, or `-` for standard output."""
    option: str
    """How it was asked for (`-o`, `--report junit`), for error messages."""


class OutputSpecError(ValueError):
    """A usage error in --format/-o/--report (the CLI shows it as one)."""


def parse_report(text: str) -> Output:
    """`FORMAT=PATH` (PATH `-` is standard output)."""
    fmt, sep, path = text.partition("=")
    if not sep or not path:
        raise OutputSpecError(f"--report {text!r}: expected FORMAT=FILE, e.g. junit=cancelwire.xml or md=-")
    if fmt not in FORMATS:
        raise OutputSpecError(f"--report {text!r}: unknown format {fmt!r}; one of {', '.join(FORMATS)}")
    return Output(fmt, path, f"--report {fmt}")


def plan(fmt: str | None, output: str | None, reports: list[str]) -> list[Output]:
    """The outputs of one run. `--format`/`-o` is one output; each `--report` adds one. With only
    `--report`s, the text report still goes to standard output unless one of them writes there."""
    outputs = [parse_report(text) for text in reports]
    if fmt is not None or output is not None or not any(o.path == "-" for o in outputs):
        outputs.insert(0, Output(fmt or "text", output or "-", "-o"))
    paths = [o.path for o in outputs]
    if paths.count("-") > 1:
        raise OutputSpecError("only one report can go to standard output (-)")
    twice = sorted({p for p in paths if p != "-" and paths.count(p) > 1})
    if twice:
        raise OutputSpecError(f"two reports would write {twice[0]}")
    return outputs


def write(
    fmt: str, triage: Triage, out: TextIO, environ: Mapping[str, str], *, color: bool = False, verbose: bool = False
) -> None:
    """One report of TRIAGE's audit in FMT. COLOR and VERBOSE concern the text report only."""
    summary = environ.get("GITHUB_STEP_SUMMARY")
    options = WriteOptions(color=color, verbose=verbose, step_summary=Path(summary) if summary else None)
    FORMATS[fmt].write(triage, out, options)


def render(result: AuditResult, fmt: str, triage: Triage | None = None, *, verbose: bool = False) -> str:
    """One report of RESULT as text, against TRIAGE's gate (default: --fail-on error)."""
    out = io.StringIO()
    FORMATS[fmt].write(triage if triage is not None else Triage(result), out, WriteOptions(verbose=verbose))
    return out.getvalue()
