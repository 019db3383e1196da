#!/usr/bin/env python3
"""Write the hand-written two-recording fixtures of the --merge rules (tests/rules/<slug>/{triggers,clean*}/).

Each fixture is one short session logged twice (audited with --merge, except same-session-in-two-inputs,
whose hint is for audits without it), in the one-sided log shape the ndjson reader reads
(`{"ts", "dir": "send"|"recv", "message"}`): `a-client.jsonl` by the client, `b-server.jsonl` by the
server, whose clock runs 100 s ahead. Hand-written, because each needs one precise difference between
the two logs; the real SDK sessions recorded at both ends are in sample_captures/merge/.

    .venv/bin/python scripts/make_merge_fixtures.py
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

RULES = Path(__file__).resolve().parent.parent / "tests" / "rules"
SKEW = 100.0


def req(i: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": i, "method": method, "params": params or {}}


def res(i: int, result: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": i, "result": result or {}}


def note(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}
INIT_OK = {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}
SLOW = {"name": "slow", "arguments": {}, "_meta": {"progressToken": 3}}

# (client time, sent by the client?, message); the server sees each 3 ms later (+SKEW on its clock)
BASE: list[tuple[float, bool, dict[str, Any]]] = [
    (10.000, True, req(1, "initialize", INIT)),
    (10.010, False, res(1, INIT_OK)),
    (10.011, True, note("notifications/initialized", {})),
    (10.020, True, req(2, "tools/call", {"name": "add", "arguments": {"a": 1}})),
    (10.030, False, res(2, {"content": []})),
    (10.040, True, req(3, "tools/call", SLOW)),
]
PROGRESS = (10.300, False, note("notifications/progress", {"progressToken": 3, "progress": 1}))
LOG = (10.350, False, note("notifications/message", {"level": "info", "data": "working"}))
REPLY = (11.040, False, res(3, {"content": []}))
TIMED_OUT = {"jsonrpc": "2.0", "id": 3, "error": {"code": -32001, "message": "Request timed out"}}
CANCEL = (10.500, True, note("notifications/cancelled", {"requestId": 3, "reason": "timed out"}))


def write(
    slug: str,
    name: str,
    client: list[tuple[float, bool, dict[str, Any]]],
    server: list[tuple[float, bool, dict[str, Any]]],
    *,
    timed: bool = True,
) -> None:
    folder = RULES / slug / name
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for t, sent, message in sorted(client, key=lambda e: e[0]):
        lines.append({"ts": t, "dir": "send" if sent else "recv", "message": message})
    (folder / "a-client.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    lines = []
    for t, sent, message in sorted(server, key=lambda e: e[0]):
        record = {"ts": round(t + SKEW + (0.003 if sent else -0.003), 6)} if timed else {}
        lines.append({**record, "dir": "recv" if sent else "send", "message": message})
    (folder / "b-server.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


def main() -> None:
    both = [*BASE, PROGRESS, REPLY]
    write("message-lost-between-recordings", "triggers", [*BASE, REPLY], both)
    write("message-lost-between-recordings", "clean", both, both)
    write("message-missing-from-recording", "triggers", [*both, LOG], both)
    write("message-missing-from-recording", "clean", [*both, LOG], [*both, LOG])
    gave_up = (10.500, False, TIMED_OUT)
    write("cancel-never-sent", "triggers", [*BASE, PROGRESS, gave_up], both)
    write("cancel-never-sent", "clean", [*BASE, PROGRESS, CANCEL], [*BASE, PROGRESS, CANCEL])
    write("clocks-not-aligned", "triggers", both, both, timed=False)
    write("clocks-not-aligned", "clean", both, both)
    other = [(t + 50, s, {**m, "id": m["id"] + 100} if "id" in m else m) for t, s, m in both]
    write("recordings-share-no-session", "triggers", both, [(t, s, m) for t, s, m in other if "id" in m])
    write("recordings-share-no-session", "clean", both, both)
    write("same-session-in-two-inputs", "triggers", both, both)
    write("same-session-in-two-inputs", "clean", both, [(t, s, m) for t, s, m in other if "id" in m])
    write("same-session-in-two-inputs", "triggers-reordered", both, [(t, s, reordered(m)) for t, s, m in both])
    write("same-session-in-two-inputs", "clean-other-replies", stamped(both, "run 1"), stamped(both, "run 2"))


def reordered(message: dict[str, Any]) -> dict[str, Any]:
    """The same message written with its members in reverse order (another logger's serialisation)."""
    return {k: reordered(v) if isinstance(v, dict) else v for k, v in reversed(message.items())}


def stamped(messages: list[tuple[float, bool, dict[str, Any]]], run: str) -> list[tuple[float, bool, dict[str, Any]]]:
    """One run of the script: the same requests at the same times, tool results that name the run."""
    return [
        (
            t,
            s,
            res(m["id"], {"content": [{"type": "text", "text": f"{run}: done"}]})
            if "result" in m and m["id"] > 1
            else m,
        )
        for t, s, m in messages
    ]


if __name__ == "__main__":
    main()
