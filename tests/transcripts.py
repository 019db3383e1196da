"""Small hand-written cancelwire transcripts for tests: (ts, dir, JSON-RPC message) per line."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

Line = tuple[float, str, dict[str, object]]


def write_transcript(path: Path, lines: Iterable[Line], vantage: str = "proxy") -> Path:
    header = {"cancelwire_transcript": 1, "transport": "stdio", "vantage": vantage}
    path.write_text(
        json.dumps(header)
        + "\n"
        + "".join(json.dumps({"ts": t, "dir": d, "line": json.dumps(m)}) + "\n" for t, d, m in lines)
    )
    return path
