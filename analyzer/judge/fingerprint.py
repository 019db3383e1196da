"""A finding's identity across re-recordings of the same scenario, and its fingerprint: what baselines,
suppressions, SARIF, `diff` and datasets name an issue by.

A fingerprint must survive re-recording the same scenario, so it leaves out everything a new
recording changes: timestamps, request and session ids (`Mcp-Session-Id`), ports, line numbers and
paths. It is the sha256 of

    rule id (or outcome class) | server | transport | method | tool | ordinal

where *server* is the server's own name from `initialize` (`serverInfo.name`), or `file:NAME` (the
input's file name without its folders) when the recording does not show it, and *ordinal* numbers
like issues (same rule, server, transport, method and tool) in report order, so three unverified
cancels of one tool are three entries and a fourth is new.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..model import Finding, Session


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
