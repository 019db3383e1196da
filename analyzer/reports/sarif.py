"""`--format sarif`: SARIF 2.1.0 for code-scanning views (GitHub, Azure DevOps, IDE SARIF viewers).

Rules come from the catalogue (summary, requirement and the `[docs]` sections as help), plus one
descriptor per gated outcome class. A result's location is the recording file and line, or the
capture with the frame as a logical location (a capture has no lines); the session is a logical
location too. `partialFingerprints["cancelwire/v1"]` is the baseline fingerprint; suppressed issues
carry an external suppression with its reason; with `--baseline`, `baselineState` says new or
unchanged, and entries of the baseline that no longer occur are listed as `absent`.

Every `message.text` holds recorded or user-file text (a finding's message, a file name, a baseline
entry, a suppression), so it goes through `inert.sarif_text` (SARIF §3.11: no embedded link, no
placeholder); the ` [certainty]` that follows is cancelwire's own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TextIO
from urllib.parse import quote

from .._version import __version__
from ..ci.gates import Triage
from ..ci.issue import Issue
from ..ci.policy import OUTCOME_HELP, Gate
from ..judge.rule import Rule
from ..model import Origin, Severity, jsonrpc
from ..model.forms import display_filter
from ..support import inert
from .formats import WriteOptions

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def artifact_uri(source: str) -> str:
    """A URI reference for an input path as given (relative paths stay relative to the working folder)."""
    path = Path(source)
    if path.is_absolute():
        return path.as_uri()
    return quote(path.as_posix(), safe="/")


def _markdown_help(rule: Rule) -> str:
    docs = rule.docs
    parts = [
        f"**{rule.summary}**",
        f"Spec: {rule.section}. {rule.requirement}",
        f"### What it does\n{docs.what}",
        f"### Why it matters\n{docs.why}",
        f"### Fix\n{docs.fix}",
        f"### Example\n{docs.example}",
    ]
    if docs.references:
        parts.append("### References\n" + "\n".join(f"- {ref}" for ref in docs.references))
    return "\n\n".join(parts)


def _rule_descriptor(rule: Rule) -> dict[str, Any]:
    severities = {rule.severity(level) for value in rule.levels.values() for level in _levels(value)}
    strongest = max(severities, key=lambda s: s.rank) if severities else Severity.WARNING
    markdown = _markdown_help(rule)
    return {
        "id": rule.id,
        "name": rule.slug,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.requirement},
        "help": {"text": markdown.replace("### ", "").replace("**", ""), "markdown": markdown},
        "defaultConfiguration": {"level": _LEVEL[strongest]},
        "properties": {"rev": rule.rev, "status": rule.status, "spec": rule.section, "tags": ["mcp", "cancellation"]},
    }


def _levels(value: Any) -> list[Any]:
    return list(value.values()) if isinstance(value, dict) else [value]


def _outcome_descriptor(name: str, gate: Gate) -> dict[str, Any]:
    text = OUTCOME_HELP[name]
    return {
        "id": name,
        "name": name,
        "shortDescription": {"text": f"cancelled-call outcome: {name}"},
        "fullDescription": {"text": text},
        "help": {"text": text, "markdown": text},
        "defaultConfiguration": {"level": _LEVEL[Severity(gate.value)]},
        "properties": {"tags": ["mcp", "cancellation", "outcome"]},
    }


def _location(origin: Origin, session_key: str | None) -> dict[str, Any]:
    location: dict[str, Any] = {"physicalLocation": {"artifactLocation": {"uri": artifact_uri(origin.source)}}}
    if origin.line is not None:
        location["physicalLocation"]["region"] = {"startLine": origin.line}
    logical = []
    if origin.frame is not None:
        logical.append({"name": f"frame {origin.frame}", "fullyQualifiedName": origin.display(), "kind": "frame"})
    if session_key is not None:
        logical.append({"name": session_key, "kind": "session"})
    if logical:
        location["logicalLocations"] = logical
    return location


def _result(issue: Issue, index: int, with_baseline: bool) -> dict[str, Any]:
    result: dict[str, Any] = {
        "ruleId": issue.code,
        "ruleIndex": index,
        "level": _LEVEL[issue.severity],
        "message": {"text": f"{inert.sarif_text(issue.message)} [{issue.certainty}]"},
        "partialFingerprints": {"cancelwire/v1": issue.fingerprint},
    }
    if issue.location is not None:
        result["locations"] = [_location(issue.location, issue.session_key)]
    related = [o for o in issue.evidence if o != issue.location]
    if related:
        result["relatedLocations"] = [{"id": n, **_location(o, None)} for n, o in enumerate(related, 1)]
    if issue.suppressed is not None:
        result["suppressions"] = [{"kind": "external", "justification": issue.suppressed}]
    if with_baseline:
        result["baselineState"] = "unchanged" if issue.known else "new"
    properties: dict[str, Any] = {"certainty": issue.certainty.value, "kind": issue.kind.value}
    for key, value in (("requestId", issue.request_id), ("method", issue.method), ("tool", issue.tool)):
        if value is not None:
            properties[key] = value
    frames = display_filter(issue.evidence)
    if frames:
        properties["wiresharkFilter"] = frames
    if issue.more_evidence:
        properties["moreEvidence"] = issue.more_evidence
    result["properties"] = properties
    return result


def _absent(entry: dict[str, Any], index: int | None) -> dict[str, Any]:
    """A baseline entry that no longer occurs."""
    level = _LEVEL.get(Severity(entry["severity"])) if entry["severity"] in {s.value for s in Severity} else None
    result: dict[str, Any] = {
        "ruleId": str(entry["rule"]),
        "level": level or "none",
        "message": {"text": f"no longer occurs: {inert.sarif_text(str(entry.get('message') or entry['rule']))}"},
        "partialFingerprints": {"cancelwire/v1": entry["fingerprint"]},
        "baselineState": "absent",
    }
    if index is not None:
        result["ruleIndex"] = index
    return result


def _stale_suppression(used: dict[str, Any]) -> dict[str, Any]:
    """A settings-file suppression that matched nothing, as a configuration note (it can go)."""
    text = f"suppress.{used['number']} matched nothing (stale, remove it): {inert.sarif_text(used['described'])}"
    return {"level": "note", "message": {"text": text}}


def build(triage: Triage) -> dict[str, Any]:
    result = triage.result
    descriptors = [_rule_descriptor(rule) for rule in result.rules]
    gated = sorted((o.value, g) for o, g in triage.gates.items() if g in (Gate.ERROR, Gate.WARNING, Gate.INFO))
    descriptors += [_outcome_descriptor(name, gate) for name, gate in gated]
    index = {d["id"]: n for n, d in enumerate(descriptors)}
    with_baseline = triage.baseline is not None
    results = [_result(issue, index[issue.code], with_baseline) for issue in triage]
    for entry in triage.tally().stale:
        results.append(_absent(entry, index.get(str(entry["rule"]))))
    notifications = [
        {"level": "error", "message": {"text": inert.sarif_text(f"{i.path}: not analysed: {i.error}")}}
        for i in result.inputs
        if i.error and not i.sessions
    ]
    invocation: dict[str, Any] = {"executionSuccessful": True, "exitCode": triage.exit_status()}
    if notifications:
        invocation["toolExecutionNotifications"] = notifications
    properties: dict[str, Any] = {"failOn": triage.fail_on.value if triage.fail_on else "never"}
    used = triage.suppressions_used()
    if used:
        properties["suppressions"] = [{k: v for k, v in u.items() if k != "described"} for u in used]
        stale = [_stale_suppression(u) for u in used if u["stale"]]
        if stale:
            invocation["toolConfigurationNotifications"] = stale
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "cancelwire",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "rules": descriptors,
                    }
                },
                "invocations": [invocation],
                "columnKind": "unicodeCodePoints",
                "results": results,
                "properties": properties,
            }
        ],
    }


def write(triage: Triage, out: TextIO) -> None:
    out.write(inert.json_text(jsonrpc.dumps(build(triage), indent=True).decode()))
    out.write("\n")


def write_format(triage: Triage, out: TextIO, fmt: str, options: WriteOptions) -> None:
    write(triage, out)
