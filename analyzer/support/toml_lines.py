"""Which line of a TOML file sets a key: for errors that name file and line (`cancelwire.toml:5: hold: ...`).

tomllib returns values without positions, so the settings loader checks the parsed table and, only when
a value is wrong, asks here where it was written. A small scan of table headers (`[a.b]`, `[[a]]`, whose
entries are counted) and `key =` lines, dotted and quoted keys included; inside multi-line strings and
arrays it can be fooled, so the answer is the best line found for the key or the nearest table holding it,
and None when there is none: a message then names the file only. Never raises.
"""

from __future__ import annotations

import json
import re

Key = tuple[str | int, ...]

_PART = r'\s*(?:[A-Za-z0-9_-]+|"(?:[^"\\]|\\.)*"|\'[^\']*\')\s*'
_DOTTED = rf"{_PART}(?:\.{_PART})*"
_HEADER = re.compile(rf"^\s*(\[\[|\[)({_DOTTED})\]\]?\s*(?:#.*)?$")
_ASSIGN = re.compile(rf"^({_DOTTED})=")
_PIECE = re.compile(_PART)


def line_of(text: str, key: Key) -> int | None:
    """The 1-based line that sets KEY (a path of table keys and array-of-tables indexes), or of its
    nearest enclosing table; None when neither is found."""
    lines = _positions(text)
    for end in range(len(key), 0, -1):
        found = lines.get(key[:end])
        if found is not None:
            return found
    return None


def _positions(text: str) -> dict[Key, int]:
    """Every key path a line sets or opens, with the first line that does."""
    found: dict[Key, int] = {}
    table: Key = ()
    counts: dict[Key, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        header = _HEADER.match(line)
        if header:
            path: Key = _keys(header.group(2))
            if header.group(1) == "[[":
                counts[path] = counts.get(path, -1) + 1
                path = (*path, counts[path])
            table = path
            _note(found, table, number)
            continue
        assign = _ASSIGN.match(line)
        if assign:
            _note(found, (*table, *_keys(assign.group(1))), number)
    return found


def _note(found: dict[Key, int], path: Key, number: int) -> None:
    for end in range(1, len(path) + 1):
        found.setdefault(path[:end], number)


def _keys(dotted: str) -> tuple[str, ...]:
    return tuple(_unquoted(m.group().strip()) for m in _PIECE.finditer(dotted) if m.group().strip())


def _unquoted(part: str) -> str:
    if part.startswith('"'):
        try:
            value = json.loads(part)  # a TOML basic string's escapes are JSON's, \e and \U aside
        except ValueError:
            return part[1:-1]
        return value if isinstance(value, str) else part[1:-1]
    return part[1:-1] if part.startswith("'") else part
