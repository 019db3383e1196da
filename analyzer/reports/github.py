"""`--format github`: GitHub Actions workflow commands, and the job summary.

Each new issue becomes one annotation line, `::error file=PATH,line=N,title=CW101 slug::message`
(`::warning` for warnings, `::notice` for info), which the runner shows on the job and, for files in
the repository, beside the line. Recorded text is made inert first (`inert.inline`: one line,
controls shown as escapes, the runner's legacy `##[command]` shown as `#\\x23[command]`), then
escaped as the runner's own toolkit does: `%`, CR and LF in the message; those and `:` and `,` in
properties. So a recorded message can neither end the line (and start a command of its own) nor
break out of a property.
A last notice counts what is known to the baseline or suppressed. When `GITHUB_STEP_SUMMARY` is set
the Markdown report is appended to that file (the job's summary page).
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import TextIO

from ..ci.gates import Triage
from ..ci.issue import Issue
from ..errors import OutputError
from ..model import Severity
from ..support import inert
from ..support.outputs import STEP_SUMMARY, appending
from .formats import WriteOptions, render

#: GitHub shows only the first few annotations of each kind per step; more lines are noise in the log.
MAX_PER_SEVERITY = 50
_COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(text: str) -> str:
    return inert.inline(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(issue: Issue) -> str:
    properties = []
    title = issue.title
    where = issue.location
    if where is not None:
        properties.append(f"file={escape_property(where.source)}")
        if where.line is not None:
            properties.append(f"line={where.line}")
        elif where.frame is not None:
            title += f" (frame {where.frame})"
    properties.append(f"title={escape_property(title)}")
    return f"::{_COMMAND[issue.severity]} {','.join(properties)}::{escape_data(f'{issue.message} [{issue.certainty}]')}"


def write(triage: Triage, out: TextIO, summary: Path | None = None) -> None:
    shown: Counter[Severity] = Counter()
    left_out = 0
    for issue in triage:
        if not issue.new:
            continue
        shown[issue.severity] += 1
        if shown[issue.severity] > MAX_PER_SEVERITY:
            left_out += 1
            continue
        out.write(annotation(issue) + "\n")
    tally = triage.tally()
    parts = [f"{sum(tally.new.values())} new issue(s)"]
    if left_out:
        parts.append(f"{left_out} not annotated (over {MAX_PER_SEVERITY} of one severity)")
    if tally.known or triage.baseline is not None:
        parts.append(f"{tally.known} known to the baseline, {len(tally.stale)} baseline entr(ies) no longer seen")
    used = triage.suppressions_used()
    if used:
        each = ", ".join(f"suppress.{u['number']}: {'stale' if u['stale'] else u['suppressed']}" for u in used)
        parts.append(f"{tally.suppressed} suppressed in the settings file ({each})")
    gate = triage.fail_on.value if triage.fail_on else "never"
    out.write(f"::notice title=cancelwire::{escape_data('; '.join(parts))} (fail-on {gate})\n")
    settings = triage.result.made.settings_file
    where = f" file={escape_property(settings)}," if settings else " "
    for u in used:
        if u["stale"]:
            text = f"suppress.{u['number']} matched nothing: remove it from the settings file ({u['described']})"
            out.write(f"::notice{where}title=cancelwire stale suppression::{escape_data(text)}\n")
    if summary is not None:
        append_summary(triage, summary)


def append_summary(triage: Triage, summary: Path) -> None:
    """The Markdown report appended to SUMMARY in one write; any failure names GITHUB_STEP_SUMMARY (never
    the report's own output), and a FIFO there that nobody reads is an error, not a wait."""
    text = render(triage.result, "md", triage)
    fd = appending(summary, STEP_SUMMARY)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as md:
            md.write(text)
    except OSError as exc:
        raise OutputError(f"{summary}: cannot write the {STEP_SUMMARY}: {exc.strerror or exc}") from None


def write_format(triage: Triage, out: TextIO, fmt: str, options: WriteOptions) -> None:
    write(triage, out, options.step_summary)
