"""Baselines: accept what a run found, and fail later runs only on what is new.

An issue is known by its fingerprint (`judge.fingerprint`): the same for the same scenario recorded
again.

The file is JSON Lines, one entry per line (reviewable in a diff, and every error names its line):
a header `{"cancelwire_baseline": 1, ...}`, then one object per issue with its fingerprint and, for
people, what it was and where it was seen. It is user-supplied, so reading is bounded.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from .._version import __version__
from ..errors import BaselineError
from ..model import jsonrpc
from ..support.files import read_regular
from .issue import Issue

FORMAT_VERSION = 1
MAX_BYTES = 64 * 1024 * 1024
MAX_LINE = 64 * 1024
MAX_ENTRIES = 500_000
_ENTRY_KEYS = {"fingerprint", "kind", "rule", "name", "severity", "server", "transport", "method", "tool", "ordinal"}
_OPTIONAL_KEYS = {"where", "message"}


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
