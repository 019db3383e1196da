"""The catalogue as text people read: the `cancelwire rules` table and a rule's `cancelwire explain` page.

Pure: rules in, text out; cli/main.py prints it (a rule's page made inert: a rule from `--rules DIR` is a user file).
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Iterator

from ..model import Level
from .rule import Rule, levels_of


def rules_table(rules: Iterable[Rule]) -> Iterator[str]:
    """A header and one line per rule: id, slug, severities, status, revisions."""
    yield f"{'ID':<7} {'SLUG':<34} {'SEVERITY':<22} {'STATUS':<8} REVISIONS"
    for rule in rules:
        severities = sorted({rule.severity(lvl).value for lvl in _all_levels(rule)})
        yield f"{rule.id:<7} {rule.slug:<34} {'/'.join(severities):<22} {rule.status:<8} {', '.join(rule.revisions)}"


def _all_levels(rule: Rule) -> list[Level]:
    return [lvl for value in rule.levels.values() for lvl in levels_of(value, None)]


def explain_text(rule: Rule) -> str:
    levels = []
    for revision, value in rule.levels.items():
        if isinstance(value, Level):
            levels.append(f"{revision}: {value} -> {rule.severity(value)}")
        else:
            per = ", ".join(f"{t}: {lvl} -> {rule.severity(lvl)}" for t, lvl in value.items())
            levels.append(f"{revision}: {per}")
    wrap = textwrap.TextWrapper(width=100, initial_indent="  ", subsequent_indent="  ")
    parts = [
        f"{rule.id} {rule.slug} (rev {rule.rev}, {rule.status} since {rule.since})",
        rule.summary,
        "",
        f"Spec: {rule.section}",
        wrap.fill(f"Requirement: {rule.requirement}"),
        "Levels:",
        *[f"  {line}" for line in levels],
    ]
    if rule.severity_reason:
        parts.append(wrap.fill(f"Severity adjusted: {rule.severity_reason}"))
    for title, body in (("What it does", rule.docs.what), ("Why it matters", rule.docs.why), ("Fix", rule.docs.fix)):
        parts += ["", f"{title}:", wrap.fill(body)]
    parts += ["", "Example:", f"  {rule.docs.example}"]
    if rule.docs.references:
        parts += ["", "References:", *[f"  {ref}" for ref in rule.docs.references]]
    return "\n".join(parts) + "\n"
