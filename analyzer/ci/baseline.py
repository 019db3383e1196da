"""Baselines: accept what a run found, and fail later runs only on what is new.

A fingerprint must survive re-recording the same scenario, so it leaves out everything a new
recording changes: timestamps, request and session ids (`Mcp-Session-Id`), ports, line numbers and
paths. It is the sha256 of

    rule id (or outcome class) | server | transport | method | tool | ordinal

where *server* is the server's own name from `initialize` (`serverInfo.name`), or `file:NAME` (the
input's file name without its folders) when the recording does not show it, and *ordinal* numbers
like issues (same rule, server, transport, method and tool) in report order, so three unverified
cancels of one tool are three entries and a fourth is new.

The file is JSON Lines, one entry per line (reviewable in a diff, and every error names its line):
a header `{"cancelwire_baseline": 1, ...}`, then one object per issue with its fingerprint and, for
people, what it was and where it was seen. It is user-supplied, so reading is bounded.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from .. import __version__
from ..errors import BaselineError
from ..model import Finding, Session, jsonrpc
from ..support.files import read_regular

if TYPE_CHECKING:
    from .gates import Issue

FORMAT_VERSION = 1
MAX_BYTES = 64 * 1024 * 1024
MAX_LINE = 64 * 1024
MAX_ENTRIES = 500_000
_ENTRY_KEYS = {"fingerprint", "kind", "rule", "name", "severity", "server", "transport", "method", "tool", "ordinal"}
_OPTIONAL_KEYS = {"where", "message"}


@dataclass(frozen=True, slots=True)
class Identity:
    """What names an issue across re-recordings of the same scenario."""

    server: str
    transport: str
    method: str
    tool: str


def identity(server: str | None, transport: str, method: str | None, tool: str | None, source: str) -> Identity:
    """An issue's identity: the server's own name, else the recording's file name without folders."""
    return Identity(
        server=server or f"file:{Path(source).name}", transport=transport, method=method or "", tool=tool or ""
    )


def session_identity(session: Session | None, method: str | None, tool: str | None, source: str) -> Identity:
    """The identity of an issue in SESSION (None: an input-level problem) cited at SOURCE."""
    name = session.server_info.get("name") if session is not None and session.server_info else None
    server = name if isinstance(name, str) and name else None
    return identity(server, session.transport.value if session is not None else "", method, tool, source)


def finding_identity(finding: Finding, session: Session | None) -> Identity:
    """A finding's identity: its session's server and transport, its method and tool, and (for an unnamed
    server) the file its last evidence is in."""
    source = finding.evidence[-1].source if finding.evidence else ""
    return session_identity(session, finding.method, finding.tool, source)


class Fingerprinter:
    """Fingerprints in report order: the ordinal counts like issues seen so far in this pass."""

    def __init__(self) -> None:
        self._seen: Counter[tuple[str, Identity]] = Counter()

    def next(self, code: str, identity: Identity) -> tuple[str, int]:
        """(fingerprint, ordinal) of the next issue like these."""
        self._seen[(code, identity)] += 1
        ordinal = self._seen[(code, identity)]
        return fingerprint(code, identity, ordinal), ordinal


class FindingPrints:
    """The fingerprints of findings met in report order, as baselines, SARIF and `diff` give them (the
    report's and the dataset's `fingerprint`): the same for the same scenario recorded again."""

    def __init__(self, sessions: Iterable[Session]) -> None:
        self._sessions = {s.key: s for s in sessions}
        self._fingerprints = Fingerprinter()

    def __call__(self, finding: Finding) -> str:
        session = self._sessions.get(finding.session_key) if finding.session_key is not None else None
        return self._fingerprints.next(finding.rule_id, finding_identity(finding, session))[0]


def fingerprint(code: str, identity: Identity, ordinal: int) -> str:
    parts = ("v1", code, identity.server, identity.transport, identity.method, identity.tool, str(ordinal))
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:24]


@dataclass(frozen=True, slots=True)
class Baseline:
    path: str
    entries: dict[str, dict[str, Any]]
    """Fingerprint → the entry as written (what it was, where it was seen)."""


def read(path: Path) -> Baseline:
    """Load a baseline file; every problem raises `BaselineError` naming the file and line."""
    name = str(path)
    data = read_regular(path, limit=MAX_BYTES, what="baseline", error=BaselineError)
    if not data.strip():
        raise BaselineError(f"{name}: the baseline is empty", "write one with --write-baseline")
    lines = data.split(b"\n")
    header = _object(name, 1, lines[0])
    version = header.get("cancelwire_baseline")
    if type(version) is not int or version != FORMAT_VERSION:  # `true` and 1.0 equal 1 in Python
        hint = "write it again with --write-baseline" if version is None else "upgrade cancelwire"
        raise BaselineError(f"{name}:1: not a cancelwire baseline of format {FORMAT_VERSION} (found {version!r})", hint)
    entries: dict[str, dict[str, Any]] = {}
    for number, line in enumerate(lines[1:], 2):
        if len(line) > MAX_LINE:
            raise BaselineError(f"{name}:{number}: line longer than {MAX_LINE} bytes")
        if not line.strip():
            continue
        if len(entries) >= MAX_ENTRIES:
            raise BaselineError(f"{name}:{number}: more than {MAX_ENTRIES} entries")
        entry = _object(name, number, line)
        _check_entry(name, number, entry)
        if entry["fingerprint"] in entries:
            raise BaselineError(f"{name}:{number}: fingerprint {entry['fingerprint']} appears twice")
        entries[entry["fingerprint"]] = entry
    return Baseline(name, entries)


def _object(name: str, number: int, line: bytes) -> dict[str, Any]:
    if len(line) > MAX_LINE:
        raise BaselineError(f"{name}:{number}: line longer than {MAX_LINE} bytes")
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise BaselineError(f"{name}:{number}: not JSON ({exc.msg})", "one JSON object per line") from exc
    if not isinstance(value, dict):
        raise BaselineError(f"{name}:{number}: expected a JSON object, found {type(value).__name__}")
    # flat by design: nested values would only cost depth and memory on a hostile file
    nested = [key for key, v in value.items() if isinstance(v, dict | list)]
    if nested:
        raise BaselineError(f"{name}:{number}: {nested[0]!r} must be a string or number, not nested")
    return value


def _check_entry(name: str, number: int, entry: dict[str, Any]) -> None:
    missing = sorted(_ENTRY_KEYS - set(entry))
    if missing:
        raise BaselineError(f"{name}:{number}: entry lacks {', '.join(missing)}")
    unknown = sorted(set(entry) - _ENTRY_KEYS - _OPTIONAL_KEYS)
    if unknown:
        raise BaselineError(f"{name}:{number}: unknown key(s) {', '.join(unknown)}")
    fp = entry["fingerprint"]
    if not isinstance(fp, str) or len(fp) != 24 or any(c not in "0123456789abcdef" for c in fp):
        raise BaselineError(f"{name}:{number}: fingerprint must be 24 lowercase hex digits")
    if not isinstance(entry["ordinal"], int) or isinstance(entry["ordinal"], bool) or entry["ordinal"] < 1:
        raise BaselineError(f"{name}:{number}: ordinal must be a whole number >= 1")


def entry(issue: Issue) -> dict[str, Any]:
    where = issue.location.display() if issue.location else None
    return {
        "fingerprint": issue.fingerprint,
        "kind": issue.kind.value,
        "rule": issue.code,
        "name": issue.name,
        "severity": issue.severity.value,
        "server": issue.identity.server,
        "transport": issue.identity.transport,
        "method": issue.identity.method,
        "tool": issue.identity.tool,
        "ordinal": issue.ordinal,
        "where": where,
        "message": issue.message,
    }


def write(path: Path, issues: Iterable[Issue]) -> int:
    """Write every unsuppressed issue to PATH (the CLI makes it atomic). Returns how many."""
    count = 0
    with path.open("wb") as out:
        header = {"cancelwire_baseline": FORMAT_VERSION, "generated_by": f"cancelwire {__version__}"}
        out.write(orjson.dumps(header) + b"\n")
        for issue in issues:
            if issue.suppressed is None:
                out.write(jsonrpc.dumps(entry(issue)) + b"\n")
                count += 1
    return count
