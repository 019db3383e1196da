"""Writes the hostile-input fixtures of the HAR, host-log and --merge red team: the rule fixtures of
CW930 `implausible-time` and CW931 `merge-sessions-ambiguous`, and the replayed reproducers in
tests/corpus/{har,hostlog,merge}/ (each with its `.expect.toml`).

Every file is rendered here from plain data, never edited by hand, so a reader of this script sees
exactly which bytes each fixture holds and why. Regenerate with
`.venv/bin/python scripts/make_redteam_fixtures.py`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "tests" / "rules"
CORPUS = ROOT / "tests" / "corpus"
#: What a recording can hold to attack its reader: terminal title and clear, a right-to-left override,
#: a mention, a link, markup, a spreadsheet formula, a line break and a C1 control.
HOSTILE = '\x1b]0;pwned\x07\x1b[2J\u202e@attacker [x](http://evil.test) <script>x</script> =HYPERLINK("x")\r\nF\x85'

Message = dict[str, Any]


def req(i: int, method: str, params: Message | None = None) -> Message:
    return {"jsonrpc": "2.0", "id": i, "method": method, "params": params or {}}


def res(i: int, result: Message | None = None) -> Message:
    return {"jsonrpc": "2.0", "id": i, "result": result or {}}


INIT = req(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c"}})
INIT_OK = res(1, {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}})
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
CALL = req(2, "tools/call", {"name": "slow", "arguments": {}})
CANCEL = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}
#: (sent by the client?, message): a handshake, a call, its cancel and a late reply.
SESSION: list[tuple[bool, Message]] = [(True, INIT), (False, INIT_OK), (True, INITIALIZED), (True, CALL)]
SESSION += [(True, CANCEL), (False, res(2))]


def text(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def vscode(stamps: list[str]) -> list[str]:
    """The session as VS Code's MCP output channel writes it, one stamp per message."""
    lines = ["2026-07-24 09:30:00.000 [info] Starting server slow-demo"]
    for stamp, (sent, message) in zip(stamps, SESSION, strict=True):
        marker = "[editor -> server]" if sent else "[server -> editor]"
        lines.append(f"{stamp} [debug] {marker} {json.dumps(message)}")
    return lines


def peer_log(sessions: int, *, server: bool) -> list[str]:
    """One side's own log (`{"ts", "dir", "message"}`) of `sessions` identical runs of the session."""
    lines = []
    for run in range(sessions):
        for n, (sent, message) in enumerate(SESSION):
            mine = sent != server
            ts = 1_800_000_000 + run * 10 + n * 0.01 + (0.003 if server else 0.0)
            lines.append(json.dumps({"ts": round(ts, 6), "dir": "send" if mine else "recv", "message": message}))
    return lines


def expect(path: Path, lines: list[str]) -> None:
    text(path, lines)


def implausible_time() -> None:
    folder = RULES / "implausible-time"
    good = [f"2026-07-24 09:30:00.{n:03d}" for n in range(100, 700, 100)]
    bad = [*good[:4], "9999-07-24 09:30:00.500", "2026-13-45 09:30:00.600"]
    text(folder / "triggers.log", vscode(bad))
    text(folder / "clean.log", vscode(good))
    expect(
        folder / "triggers.expect.toml",
        [
            "# the cancel is stamped year 9999 and the reply month 13: both keep their place, without a time",
            "[[finding]]",
            'severity = "warning"',
            'certainty = "exact"',
            "evidence = [6, 7]",
        ],
    )
    expect(folder / "clean.expect.toml", ["# the same session stamped in 2026", "finding = []"])
    text(
        folder / "README.md",
        [
            "# implausible-time fixtures (VS Code MCP output channel)",
            "",
            "Rendered by `scripts/make_redteam_fixtures.py` in the line shape VS Code writes (not a recording):",
            "a handshake, a `tools/call`, its cancel and a late reply. In `triggers.log` the cancel is stamped",
            "year 9999 and the reply month 13; `clean.log` is the same session stamped in 2026.",
        ],
    )


def sessions_ambiguous() -> None:
    folder = RULES / "merge-sessions-ambiguous"
    for name, runs in (("triggers", 65), ("clean", 64)):
        text(folder / name / "a-client.jsonl", peer_log(1, server=False))
        text(folder / name / "b-server.jsonl", peer_log(runs, server=True))
    header = "# hand-written two-log fixture (scripts/make_redteam_fixtures.py); merged with --merge"
    expect(
        folder / "triggers.expect.toml",
        [
            header,
            "[options]",
            "merge = true",
            "",
            "# the server's log holds 65 identical runs of the client's one session: more than 64",
            "[[finding]]",
            'severity = "warning"',
            'evidence = ["a-client.jsonl:1"]',
        ],
    )
    expect(
        folder / "clean.expect.toml",
        [header, "[options]", "merge = true", "", "# 64 identical runs: still paired (the first)", "finding = []"],
    )
    text(
        folder / "README.md",
        [
            "# merge-sessions-ambiguous",
            "",
            "Hand-written two-recording fixtures written by `scripts/make_redteam_fixtures.py`: the client's own",
            "log of one short session (`a-client.jsonl`), and a server log (`b-server.jsonl`) that holds the same",
            "session run again and again, message for message: 65 times in `triggers/` (more than the 64",
            "sessions a message may be shared by and still tell one apart), 64 times in `clean/`.",
        ],
    )


def main() -> None:
    implausible_time()
    sessions_ambiguous()


if __name__ == "__main__":
    main()
