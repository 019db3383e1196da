"""Writes the hostile-input fixtures of the HAR, host-log and --merge red team: the rule fixtures of
CW930 `implausible-time` and CW931 `merge-sessions-ambiguous`, and the replayed reproducers in
tests/corpus/{har,hostlog,merge}/ (each with its `.expect.toml`).

Every file is rendered here from plain data, never edited by hand, so a reader of this script sees
exactly which bytes each fixture holds and why. Regenerate with
`.venv/bin/python scripts/make_redteam_fixtures.py`.
"""

from __future__ import annotations

import gzip
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


def too_many_sessions() -> None:
    folder = RULES / "too-many-sessions"
    start = json.dumps(req(1, "initialize", {}), separators=(",", ":"))  # each starts the next session
    for name, count in (("triggers", 10_001), ("clean", 10_000)):  # gzip: 2 KB, not 590 KB, in the repository
        (folder / f"{name}.jsonl").unlink(missing_ok=True)
        (folder / f"{name}.jsonl.gz").write_bytes(gzip.compress((start + "\n").encode() * count, mtime=0))
    expect(
        folder / "triggers.expect.toml",
        [
            "# 10,001 sessions, each one initialize: the last is past the first 10,000",
            "[[finding]]",
            'severity = "warning"',
            'certainty = "exact"',
            "evidence = [10001]",
        ],
    )
    expect(folder / "clean.expect.toml", ["# 10,000 sessions: all read", "finding = []"])
    text(
        folder / "README.md",
        [
            "# too-many-sessions fixtures (plain NDJSON)",
            "",
            "Written by `scripts/make_redteam_fixtures.py`, gzip-compressed: one `initialize` request per line,",
            "each of which starts the next session of the log (as a server restart does); 10,001 lines in",
            "`triggers.jsonl.gz`, 10,000 in `clean.jsonl.gz`. Not a recording: no host writes ten thousand",
            "sessions, which is the point.",
        ],
    )


def har(entries: list[Message], creator: str = "WebInspector") -> str:
    return json.dumps({"log": {"version": "1.2", "creator": {"name": creator}, "entries": entries}}, indent=1)


def har_entry(body: Message, reply: Message | None, *, sid: str = "s1", **extra: Any) -> Message:
    """A POST of `body`, answered with `reply` (None: no response, `_error` in `extra`)."""
    headers = [{"name": "Mcp-Session-Id", "value": sid}, {"name": "MCP-Protocol-Version", "value": "2025-11-25"}]
    entry: Message = {
        "startedDateTime": extra.pop("started", "2026-07-24T09:30:00.000Z"),
        "request": {"method": "POST", "url": extra.pop("url", "https://mcp.test/mcp"), "headers": headers},
        "response": {"status": 0 if reply is None else 200, "headers": [], "content": {"mimeType": "application/json"}},
        "timings": extra.pop("timings", {"send": 1, "wait": 5, "receive": 1}),
    }
    entry["request"]["postData"] = {"mimeType": "application/json", "text": json.dumps(body)}
    if reply is not None:
        entry["response"]["content"] |= {"size": len(json.dumps(reply)), "text": json.dumps(reply)}
    entry["response"] |= extra
    return entry


def corpus_case(folder: str, name: str, ext: str, data: str | None, spec: list[str]) -> Path:
    target = CORPUS / folder / f"{name}.{ext}"
    if data is not None:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(data, encoding="utf-8")
    text(CORPUS / folder / f"{name}.expect.toml", ['owner = "redteam (scripts/make_redteam_fixtures.py)"', *spec])
    return target


def corpus() -> None:
    late = ["2026-07-24T09:30:00.100Z", "9999-12-31T23:59:59.000Z"]
    entries = [har_entry(CALL, None, started=late[0], _error="net::ERR_FAILED")]
    entries.append(har_entry(res(7), {}, started=late[1]))
    corpus_case(
        "har",
        "started-year-9999",
        "har",
        har(entries),
        [
            'why = "a startedDateTime of year 9999 was read as a time: gaps of thousands of years in every verdict"',
            "exit = 0",
            'findings = ["har-entry-unreadable", "har-request-failed"]',
        ],
    )
    nan = har(entries[:1]).replace('"send": 1', '"send": NaN').replace('"wait": 5', '"wait": Infinity')
    corpus_case(
        "har",
        "nan-timing",
        "har",
        nan,
        [
            'why = "a timing written NaN (Python json.dumps) made the whole entry unreadable: its request was lost"',
            "exit = 0",
            'findings = ["har-request-failed"]',
        ],
    )
    hostile = [har_entry(req(HOSTILE, HOSTILE, {"name": HOSTILE}), res(HOSTILE), sid=HOSTILE, url=HOSTILE)]  # type: ignore[arg-type]
    hostile.append(har_entry(req(3, "tools/call", {"name": HOSTILE}), None, sid=HOSTILE, _error=HOSTILE))
    corpus_case(
        "har",
        "escapes-everywhere",
        "har",
        har(hostile, creator=HOSTILE),
        [
            'why = "recorded text in a URL, Mcp-Session-Id, creator, method, id, tool and _error must stay inert"',
            "exit = 0",
            'findings = ["har-request-failed"]',
        ],
    )
    stamps = [f"2026-07-24 09:30:00.{n:03d}" for n in range(100, 600, 100)] + ["9999-07-24 09:30:00.600"]
    corpus_case(
        "hostlog",
        "vscode-year-9999",
        "log",
        "".join(line + "\n" for line in vscode(stamps)),
        [
            'why = "a reply stamped year 9999 made a gap of 251603539200 s; a negative one read as a race"',
            "exit = 0",
            'findings = ["implausible-time"]',
        ],
    )
    tag = HOSTILE.replace("]", "").replace("\r\n", "")
    lines = [
        f"2026-07-24T09:30:00.{n:03d}Z [{tag}] [info] Message from {'client' if sent else 'server'}: "
        f"{json.dumps(m)} {{ metadata: undefined }}"
        for n, (sent, m) in enumerate(SESSION)
    ]
    corpus_case(
        "hostlog",
        "claude-escape-in-server-tag",
        "log",
        "".join(line + "\n" for line in lines),
        [
            'why = "escape, bidi and C1 bytes in a Claude Desktop server tag become the session key and label"',
            "exit = 0",
            'findings = ["late-result-race"]',
        ],
    )
    merge = CORPUS / "merge" / "clock-1e308.merge"
    text(merge / "a-client.jsonl", peer_log(1, server=False))
    text(
        merge / "b-server.jsonl",
        [line.replace('"ts": 18', '"ts": 1e308, "was": 18') for line in peer_log(1, server=True)],
    )
    corpus_case(
        "merge",
        "clock-1e308",
        "merge",
        None,
        [
            'why = "a peer log stamped 1e308 overflowed the clock fit: exit 3 (a bug) in every format"',
            'args = ["--merge"]',
            "exit = 0",
            'findings = ["clocks-not-aligned"]',
        ],
    )
    runs = CORPUS / "merge" / "identical-runs.merge"
    text(runs / "a-client.jsonl", peer_log(3, server=False))
    text(runs / "b-server.jsonl", peer_log(200, server=True))
    corpus_case(
        "merge",
        "identical-runs",
        "merge",
        None,
        [
            'why = "sessions were compared with every other: 3000 x 3000 took 18 s and 1.2 GB"',
            'args = ["--merge"]',
            "exit = 0",
            'findings = ["merge-sessions-ambiguous"]',
        ],
    )


def main() -> None:
    implausible_time()
    sessions_ambiguous()
    too_many_sessions()
    corpus()


if __name__ == "__main__":
    main()
