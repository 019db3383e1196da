"""Every output format, and several outputs from one audit (`--report junit=out.xml --report md=-`).

The audit runs once; each output reads the result's spools again (they are re-iterable, one pass at
a time), so writing five reports costs five passes over findings and cancelled calls, not five audits.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from ..ci.gates import Triage
from . import document as report

FORMATS = (*report.FORMATS, "junit", "sarif", "github")


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
    """One report of TRIAGE's audit. COLOR and VERBOSE concern the text report only. A format's module
    is imported when that format is written (report.py does so for its templates): an audit that writes
    JSON loads no XML library and no jinja2."""
    if fmt == "junit":
        from . import junit

        junit.write(triage, out)
    elif fmt == "sarif":
        from . import sarif

        sarif.write(triage, out)
    elif fmt == "github":
        from . import github

        summary = environ.get("GITHUB_STEP_SUMMARY")
        github.write(triage, out, Path(summary) if summary else None)
    else:
        report.write(triage.result, fmt, out, triage, color=color, verbose=verbose)
