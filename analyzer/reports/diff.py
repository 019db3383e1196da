"""`cancelwire diff OLD.json NEW.json`: what changed between two audits (before and after a server fix).

Findings and cancelled calls are matched across the two JSON reports by the fingerprints baselines use
(`baseline.py`): a finding by its rule, server, transport, method, tool and ordinal among like findings; a
cancelled call by the same identity with the code `cancelled-call`, so that a call whose outcome changed
is one call that changed, not one that vanished and one that appeared. Timestamps, ids, ports, line
numbers and paths are left out, so two recordings of the same scenario match.

- *appeared*: in NEW only; *disappeared*: in OLD only;
- *changed*: a finding whose severity or certainty changed, a call whose outcome or certainty changed.

Something new is a finding that appeared or got more severe, or a cancelled call that appeared with, or
changed to, a worse outcome (`OUTCOME_RANK`); `cancelwire diff` exits 1 when there is something new.

Both files are user-supplied and as hostile as a recording: each is a regular file of at most `MAX_BYTES`,
JSON nested no deeper than orjson allows (1,024), and every field the diff reads is checked for its type;
anything else is an `ReportFileError` naming the file and the field (exit 2). Values are shown inert, like a
report's.
"""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TextIO

import orjson

from ..errors import ReportFileError
from ..judge.fingerprint import Identity, fingerprint, identity
from ..model import Certainty, Outcome, Severity
from ..support import inert
from ..support.files import read_regular
from . import rendering

MAX_BYTES = 512 * 1024 * 1024
FORMATS = ("text", "md", "html", "json")
TEMPLATES = {"text": "diff.txt.j2", "md": "diff.md.j2", "html": "diff.html.j2"}
#: How bad each outcome is, for "changed to a worse outcome".
OUTCOME_RANK: Mapping[str, int] = {
    Outcome.CLEAN: 0,
    Outcome.VERIFIED_BY_READ: 0,
    Outcome.LATE_RESULT_DISCARDED: 1,
    Outcome.OUTCOME_UNVERIFIED: 2,
    Outcome.LATE_RESULT_VIOLATION: 3,
}
_SEVERITY_RANK = {s.value: s.rank for s in Severity}
_CERTAINTIES = frozenset(c.value for c in Certainty)
CALL = "cancelled-call"


class _Report:
    """The parts of one JSON report the diff reads, checked field by field."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)
        data = read_regular(path, limit=MAX_BYTES, what="JSON report", error=ReportFileError)
        try:
            doc = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise ReportFileError(
                f"{self.path}: not a JSON report ({exc.msg})", "give two `--format json` reports"
            ) from None
        if not isinstance(doc, dict) or "schema_version" not in doc:
            raise ReportFileError(f"{self.path}: not a cancelwire JSON report (no schema_version)", "use --format json")
        if doc["schema_version"] != 1:
            raise ReportFileError(f"{self.path}: report schema_version {_shown(doc['schema_version'])} is not 1")
        self.doc = doc
        servers = {}
        for n, s in enumerate(self._list("sessions")):
            info = s.get("server_info")
            name = info.get("name") if isinstance(info, dict) else None
            servers[self._str(s, "id", f"sessions[{n}]")] = (
                name if isinstance(name, str) and name else None,
                self._str(s, "transport", f"sessions[{n}]"),
            )
        self.servers = servers
        self.findings = [self._finding(n, f) for n, f in enumerate(self._list("findings"))]
        self.calls = [self._call(n, c) for n, c in enumerate(self._list("cancellations"))]
        version = doc.get("tool", {}).get("version") if isinstance(doc.get("tool"), dict) else None
        self.version = version if isinstance(version, str) else "?"

    def _list(self, key: str) -> list[dict[str, Any]]:
        value = self.doc.get(key)
        if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
            raise ReportFileError(f"{self.path}: {key}: expected a list of objects")
        return value

    def _str(self, item: dict[str, Any], key: str, where: str, *, optional: bool = False) -> str:
        value = item.get(key)
        if isinstance(value, str) or (optional and value is None):
            return value or ""
        raise ReportFileError(f"{self.path}: {where}.{key}: expected a string, found {_shown(value)}")

    def _where(self, item: dict[str, Any], where: str, at: int) -> tuple[str, list[str]]:
        """(evidence AT as file:line or file#frame, the report's place for it; every evidence's source)."""
        evidence = item.get("evidence")
        if not isinstance(evidence, list) or not all(
            isinstance(e, dict) and isinstance(e.get("source"), str) for e in evidence
        ):
            raise ReportFileError(f"{self.path}: {where}.evidence: expected a list of objects with a source")
        return (rendering.where(evidence[at]) if evidence else "-"), [e["source"] for e in evidence]

    def _identity(self, item: dict[str, Any], where: str, source: str) -> Identity:
        session = self._str(item, "session", where, optional=True)
        server, transport = self.servers.get(session, (None, ""))
        method = self._str(item, "method", where, optional=True)
        return identity(server, transport, method, self._str(item, "tool", where, optional=True), source)

    def _request_id(self, item: dict[str, Any], where: str) -> str:
        value = item.get("request_id")
        if value is None or isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
            return "" if value is None else repr(value)
        raise ReportFileError(
            f"{self.path}: {where}.request_id: expected a string or an integer, found {_shown(value)}"
        )

    def _choice(self, item: dict[str, Any], key: str, where: str, allowed: frozenset[str]) -> str:
        value = self._str(item, key, where)
        if value not in allowed:
            raise ReportFileError(f"{self.path}: {where}.{key}: unknown value {_shown(value)}")
        return value

    def _finding(self, n: int, f: dict[str, Any]) -> dict[str, Any]:
        where = f"findings[{n}]"
        shown, sources = self._where(f, where, -1)
        return {
            "code": self._str(f, "rule_id", where),
            "rule": self._str(f, "rule", where),
            "severity": self._choice(f, "severity", where, frozenset(_SEVERITY_RANK)),
            "certainty": self._choice(f, "certainty", where, _CERTAINTIES),
            "message": self._str(f, "message", where),
            "request_id": self._request_id(f, where),
            "where": shown,
            "identity": self._identity(f, where, sources[-1] if sources else ""),  # as gates.Triage does
        }

    def _call(self, n: int, c: dict[str, Any]) -> dict[str, Any]:
        where = f"cancellations[{n}]"
        shown, sources = self._where(c, where, 0)
        tool = self._str(c, "tool", where, optional=True)
        return {
            "code": CALL,
            "call": f"{self._str(c, 'method', where)}{' ' + tool if tool else ''}",
            "outcome": self._choice(c, "outcome", where, frozenset(OUTCOME_RANK)),
            "certainty": self._choice(c, "certainty", where, _CERTAINTIES),
            "explanation": self._str(c, "explanation", where),
            "request_id": self._request_id(c, where),
            "where": shown,
            "identity": self._identity(c, where, sources[0] if sources else ""),
        }


def _shown(value: object) -> str:
    text = repr(value) if isinstance(value, str | int | float | bool) or value is None else type(value).__name__
    return text if len(text) <= 60 else text[:60] + "…"


def _fingerprinted(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Fingerprint → item, ordinals counted in report order as `fingerprint.Fingerprinter` does."""
    seen: Counter[tuple[str, Identity]] = Counter()
    out = {}
    for item in items:
        key = (item["code"], item["identity"])
        seen[key] += 1
        out[fingerprint(item["code"], item["identity"], seen[key])] = item
    return out


def _compare(
    old: list[dict[str, Any]], new: list[dict[str, Any]], changes: Callable[[dict[str, Any], dict[str, Any]], list[str]]
) -> dict[str, Any]:
    before, after = _fingerprinted(old), _fingerprinted(new)
    changed = []
    for key, item in after.items():
        if key in before:
            what = changes(before[key], item)
            if what:
                changed.append({"old": before[key], "new": item, "what": what})
    return {
        "appeared": [item for key, item in after.items() if key not in before],
        "disappeared": [item for key, item in before.items() if key not in after],
        "changed": changed,
        "unchanged": sum(1 for key in after if key in before) - len(changed),
    }


def _finding_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    return [f"{key} {old[key]} -> {new[key]}" for key in ("severity", "certainty") if old[key] != new[key]]


def _call_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    return [f"{key} {old[key]} -> {new[key]}" for key in ("outcome", "certainty") if old[key] != new[key]]


def compare(old_path: Path, new_path: Path) -> dict[str, Any]:
    """The diff of two JSON reports as plain data (what the templates and `--format json` show)."""
    old, new = _Report(old_path), _Report(new_path)
    findings = _compare(old.findings, new.findings, _finding_changes)
    calls = _compare(old.calls, new.calls, _call_changes)
    worse = [
        c for c in findings["changed"] if _SEVERITY_RANK[c["new"]["severity"]] > _SEVERITY_RANK[c["old"]["severity"]]
    ]
    worse_calls = [c for c in calls["changed"] if OUTCOME_RANK[c["new"]["outcome"]] > OUTCOME_RANK[c["old"]["outcome"]]]
    bad_calls = [c for c in calls["appeared"] if OUTCOME_RANK[c["outcome"]] > 0]
    new_problems = len(findings["appeared"]) + len(worse) + len(bad_calls) + len(worse_calls)
    return {
        "old": {
            "path": old.path,
            "version": old.version,
            "findings": len(old.findings),
            "cancellations": len(old.calls),
        },
        "new": {
            "path": new.path,
            "version": new.version,
            "findings": len(new.findings),
            "cancellations": len(new.calls),
        },
        "findings": findings,
        "cancellations": calls,
        "new_problems": new_problems,
        "verdict": _verdict(findings, calls, new_problems),
    }


def _verdict(findings: dict[str, Any], calls: dict[str, Any], new_problems: int) -> dict[str, str]:
    """Like an audit's verdict line: `FAIL: 2 new problem(s); ...` or `PASS: nothing new; ...`."""
    counts = "; ".join(
        f"{len(part['appeared'])} {what} appeared, {len(part['disappeared'])} disappeared, "
        f"{len(part['changed'])} changed"
        for what, part in (("finding(s)", findings), ("cancelled call(s)", calls))
    )
    if new_problems:
        return {"status": "fail", "word": "FAIL", "text": f"{new_problems} new problem(s); {counts}"}
    return {"status": "pass", "word": "PASS", "text": f"nothing new; {counts}"}


def _plain(diff: dict[str, Any]) -> dict[str, Any]:
    """The diff for JSON: identities as their four fields."""

    def convert(value: Any) -> Any:
        if isinstance(value, Identity):
            return {"server": value.server, "transport": value.transport, "method": value.method, "tool": value.tool}
        if isinstance(value, dict):
            return {k: convert(v) for k, v in value.items()}
        if isinstance(value, list):
            return [convert(v) for v in value]
        return value

    return dict(convert(diff))


def write(diff: dict[str, Any], fmt: str, out: TextIO, *, color: bool = False) -> None:
    if fmt == "json":
        out.write(inert.json_text(orjson.dumps(_plain(diff), option=orjson.OPT_INDENT_2).decode()) + "\n")
    elif fmt == "md":
        out.write(rendering.markdown(diff, TEMPLATES["md"], key="diff"))
    else:
        template = rendering.environment(fmt, color).get_template(TEMPLATES[fmt])
        for chunk in template.generate(diff=diff):
            out.write(chunk)


def render(diff: dict[str, Any], fmt: str) -> str:
    out = io.StringIO()
    write(diff, fmt, out)
    return out.getvalue()
