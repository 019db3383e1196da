"""`--format junit`: JUnit XML for the test views of GitHub, GitLab, Jenkins and Azure DevOps.

One test suite per input file; one test case per session and rule (and per session and gated
outcome class). Test names are stable across runs (a rule and a session's input path, never ids or
times), so a CI's test history follows each check, and a rule that fires ten times in a session is
one failed test listing ten findings. A test case

- fails when it holds an issue at or above `--fail-on` that is neither suppressed nor in the
  baseline (`<failure>` carries every finding's text, place and evidence);
- passes otherwise, listing in `<system-out>` what was below the gate, known or suppressed (and why);
- is skipped when the rule does not apply to the session's revision, or was disabled (with the reason).

An input that could not be read is one test case with `<error>`. Attributes are those the common CI
readers document (tests/schemas/junit.xsd, which the tests validate against).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TextIO

from ..ci.gates import Triage
from ..ci.issue import Issue
from ..ci.policy import Gate
from ..model.forms import display_filter
from ..support import inert
from .formats import WriteOptions

#: Issues written out per test case; the rest are counted (a broken recording can raise thousands).
SHOWN_PER_CASE = 200
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(text: str) -> str:
    """A body of lines, inert: each line as a terminal shows it (controls, bidi overrides and other
    invisible characters as escapes: a CI's test view is read by people too), its line breaks kept, and
    what XML 1.0 still forbids (U+FFFE, U+FFFF) shown as an escape."""
    return "\n".join(xml_line(line) for line in text.split("\n"))


def xml_line(text: str) -> str:
    """One attribute's value (a file name, a test name, a message): inert and on one line."""
    return _NOT_XML.sub(lambda m: f"\\u{ord(m.group()):04x}", inert.terminal(text))


@dataclass
class _Case:
    classname: str
    name: str
    file: str
    issues: list[Issue] = field(default_factory=list)
    more: int = 0
    skipped: str | None = None


class _Suites:
    """Input path → test cases, in a stable order."""

    def __init__(self) -> None:
        self.cases: dict[str, dict[tuple[str, str], _Case]] = {}
        self.errors: dict[str, str] = {}

    def case(self, source: str, classname: str, name: str) -> _Case:
        cases = self.cases.setdefault(source, {})
        found = cases.get((classname, name))
        if found is None:
            found = cases[(classname, name)] = _Case(_classname(classname), name, source)
        return found


def _classname(key: str) -> str:
    # Jenkins splits a class name at dots into packages; a path's dots are not packages
    return xml_line(key.replace(".", "_"))


def _collect(triage: Triage) -> _Suites:
    result = triage.result
    suites = _Suites()
    for summary in result.inputs:
        if summary.error and not summary.sessions:
            suites.errors[summary.path] = summary.error
        elif summary.skipped is None:
            suites.cases.setdefault(summary.path, {})
    rule_names = [f"{r.id} {r.slug}" for r in result.rules]
    gated = [o.value for o, g in triage.gates.items() if g in (Gate.ERROR, Gate.WARNING, Gate.INFO)]
    disabled = {slug: why for slug, why in result.disabled.items() if why != "not selected"}
    for session in result.sessions:
        for name in (*rule_names, *sorted(gated)):
            suites.case(session.source, session.key, name)
        for slug, why in sorted(disabled.items()):
            suites.case(session.source, session.key, slug).skipped = f"disabled: {why}"
    for skip in result.skips:
        skipped = triage.session(skip.session_key)
        if skipped is not None:
            suites.case(skipped.source, skipped.key, f"{skip.rule_id} {skip.rule}").skipped = skip.reason
    for issue in triage:
        owner = triage.session(issue.session_key)
        source = owner.source if owner else (issue.location.source if issue.location else "")
        key = owner.key if owner else source
        case = suites.case(source, key, issue.title)
        if len(case.issues) < SHOWN_PER_CASE:
            case.issues.append(issue)
        else:
            case.more += 1
    return suites


def issue_text(issue: Issue) -> str:
    """One issue as the failure body shows it: place, severity, rule, message, evidence."""
    where = inert.terminal(issue.location.display()) if issue.location else "-"
    lines = [f"{where}  {issue.severity}  {issue.title}  {inert.terminal(issue.message)} [{issue.certainty}]"]
    if len(issue.evidence) > 1 or issue.more_evidence:
        more = f" (+{issue.more_evidence} more)" if issue.more_evidence else ""
        lines.append(f"    evidence: {inert.terminal(', '.join(o.display() for o in issue.evidence))}{more}")
    frames = display_filter(issue.evidence)
    if frames:
        lines.append(f"    wireshark: {frames}")
    if issue.suppressed is not None:
        lines.append(f"    suppressed: {inert.terminal(issue.suppressed)}")
    elif issue.known:
        lines.append("    known: in the baseline")
    lines.append(f"    fingerprint: {issue.fingerprint}")
    return "\n".join(lines)


def _testcase(parent: ET.Element, case: _Case, triage: Triage) -> str:
    """Adds the <testcase>; returns its status: passed, failed or skipped."""
    element = ET.SubElement(parent, "testcase", classname=case.classname, name=xml_line(case.name), time="0")
    element.set("file", xml_line(case.file))
    failing = [i for i in case.issues if i.fails(triage.fail_on)]
    shown = failing or case.issues
    if shown and shown[0].location is not None and shown[0].location.line is not None:
        element.set("line", str(shown[0].location.line))
    body = "\n".join(issue_text(i) for i in case.issues)
    if case.more:
        body += f"\n... and {case.more} more like these (--format json lists every one)"
    if failing:
        failure = ET.SubElement(
            element, "failure", message=xml_line(failing[0].message), type=failing[0].severity.value
        )
        failure.text = xml_text(body)
        return "failed"
    if case.issues:
        ET.SubElement(element, "system-out").text = xml_text(body)
    if case.skipped is not None and not case.issues:
        ET.SubElement(element, "skipped", message=xml_line(case.skipped))
        return "skipped"
    return "passed"


def _suite(root: ET.Element, source: str, cases: Iterable[_Case], triage: Triage) -> dict[str, int]:
    suite = ET.SubElement(root, "testsuite", name=xml_line(source or "-"), file=xml_line(source))
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    for case in cases:
        counts[_testcase(suite, case, triage)] += 1
    tests = sum(counts.values())
    suite.attrib.update(
        tests=str(tests), failures=str(counts["failed"]), errors="0", skipped=str(counts["skipped"]), time="0"
    )
    return counts


def _suppressions_suite(root: ET.Element, triage: Triage) -> int:
    """The settings file's `[[suppress]]` entries, one test case each: passed with what it accepted, or
    skipped when it matched nothing (stale: it can go). Returns how many."""
    path = triage.result.made.settings_file or "settings file"
    suite = ET.SubElement(root, "testsuite", name=xml_line(path), file=xml_line(path))
    used = triage.suppressions_used()
    for entry in used:
        name = f"suppress.{entry['number']} {entry['rule']}"
        case = ET.SubElement(suite, "testcase", classname="suppressions", name=xml_line(name), time="0")
        case.set("file", xml_line(path))
        if entry["stale"]:
            message = f"stale: matched nothing, remove it ({entry['described']})"
            ET.SubElement(case, "skipped", message=xml_line(message))
        else:
            ET.SubElement(case, "system-out").text = xml_line(f"suppressed {entry['suppressed']}: {entry['described']}")
    stale = sum(1 for entry in used if entry["stale"])
    suite.attrib.update(tests=str(len(used)), failures="0", errors="0", skipped=str(stale), time="0")
    return len(used)


def write(triage: Triage, out: TextIO) -> None:
    suites = _collect(triage)
    root = ET.Element("testsuites", name="cancelwire")
    totals = {"tests": 0, "failures": 0, "errors": 0}
    for source in sorted(set(suites.cases) | set(suites.errors)):
        if source in suites.errors:
            suite = ET.SubElement(root, "testsuite", name=xml_line(source), file=xml_line(source))
            case = ET.SubElement(suite, "testcase", classname=_classname(source), name="read input", time="0")
            ET.SubElement(case, "error", message=xml_line(suites.errors[source]), type="unreadable-input")
            suite.attrib.update(tests="1", failures="0", errors="1", skipped="0", time="0")
            totals["tests"] += 1
            totals["errors"] += 1
            continue
        counts = _suite(root, source, suites.cases[source].values(), triage)
        totals["tests"] += sum(counts.values())
        totals["failures"] += counts["failed"]
    if triage.suppressions:
        totals["tests"] += _suppressions_suite(root, triage)
    root.attrib.update({k: str(v) for k, v in totals.items()}, time="0")
    ET.indent(root)
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    out.write(ET.tostring(root, encoding="unicode"))
    out.write("\n")


def write_format(triage: Triage, out: TextIO, fmt: str, options: WriteOptions) -> None:
    write(triage, out)
