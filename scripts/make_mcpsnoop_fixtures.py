#!/usr/bin/env python3
"""Render the mcpsnoop session logs under tests/fixtures/mcpsnoop/ from real recordings.

    .venv/bin/python scripts/make_mcpsnoop_fixtures.py

mcpsnoop (github.com/kerlenton/mcpsnoop, a Go binary) cannot run here, so its logs are built from its
published record definition, the `Envelope` of internal/proxy/frame.go (read at commit 10f52274), around
the frames of recordings that real peers made at the same place mcpsnoop sits:

* stdio: a cancelwire transcript (`cancelwire record`, a proxy on the two pipes, as mcpsnoop's shim is).
  Its header becomes the `meta` record (seq 1, the command), its lines `c2s`/`s2c` records (`raw` the
  line as forwarded, or `text` when it is not JSON), its stderr lines `stderr` records. Its
  `process-exited` record is dropped: mcpsnoop records no exit.
* Streamable HTTP: a HAR that mitmdump wrote as a reverse proxy in front of the SDK server (mcpsnoop's
  `--target` mode sits there too). Each POST body is a `c2s` record at the end of its send; each JSON
  reply or SSE `data:` event an `s2c` record with the response's `status` at the response's end; an
  empty plain body a status-only record (an SSE stream with no event leaves none). A request the
  client gave up on (`_error`) has no response record: mcpsnoop emits none when the client's context
  is cancelled. The HAR has no client port, so `conn_id` is made up, one per entry.

Records are written as Go's `encoding/json` writes an `Envelope`: fields in declaration order, empty
optional fields left out, `ts` in RFC 3339 with nanoseconds (trailing zeros trimmed, `Z` for UTC),
`seq` counting from 1 per session. The session ids are made up (16 hex digits).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "fixtures" / "mcpsnoop"
RULES = ROOT / "tests" / "rules"


class Log:
    """One mcpsnoop session log being written."""

    def __init__(self, session_id: str, label: str, transport: str) -> None:
        self.session_id = session_id
        self.label = label
        self.transport = transport
        self.lines: list[str] = []

    def add(self, ts: float, direction: str, *, raw: str | None = None, text: str | None = None, **extra: Any) -> None:
        head = {
            "session_id": self.session_id,
            "server_label": self.label,
            "seq": len(self.lines) + 1,
            "ts": rfc3339(ts),
            "direction": direction,
            "transport": self.transport,
        }
        line = json.dumps(head, separators=(",", ":"), ensure_ascii=False)[:-1]
        if raw is not None:
            line += ',"raw":' + json.dumps(json.loads(raw), separators=(",", ":"), ensure_ascii=False)
        if text is not None:
            line += ',"text":' + json.dumps(text, ensure_ascii=False)
        for key, value in extra.items():
            if value:
                line += f',"{key}":' + json.dumps(value, separators=(",", ":"))
        self.lines.append(line + "}")

    def write(self, path: Path, *, drop: int | None = None) -> None:
        """Write the log; `drop` leaves record `drop` out (mcpsnoop's queue dropping it)."""
        kept = [line for number, line in enumerate(self.lines, 1) if number != drop]
        path.write_text("\n".join(kept) + "\n", encoding="utf-8")


def rfc3339(ts: float) -> str:
    when = datetime.fromtimestamp(ts, UTC)
    fraction = f"{when.microsecond:06d}000".rstrip("0")
    return when.strftime("%Y-%m-%dT%H:%M:%S") + (f".{fraction}" if fraction else "") + "Z"


def is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def from_transcript(path: Path, session_id: str, label: str) -> Log:
    log = Log(session_id, label, "stdio")
    lines = path.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    meta = json.dumps({"command": header["command"], "cwd": "/work/main"}, separators=(",", ":"))
    log.add(header["ts"], "meta", raw=meta)
    for line in lines[1:]:
        record = json.loads(line)
        if "event" in record:
            continue  # process-exited: mcpsnoop records no exit
        if record["dir"] == "stderr":
            log.add(record["ts"], "stderr", text=record["line"])
        elif is_json(record["line"]):
            log.add(record["ts"], record["dir"], raw=record["line"])
        else:
            log.add(record["ts"], record["dir"], text=record["line"])
    return log


def from_har(path: Path, session_id: str, label: str) -> Log:
    entries = json.loads(path.read_text(encoding="utf-8"))["log"]["entries"]
    frames: list[tuple[float, int, str, dict[str, Any]]] = []
    for index, entry in enumerate(entries):
        start = datetime.fromisoformat(entry["startedDateTime"]).timestamp()
        timings = entry["timings"]
        sent = start + sum(max(0.0, timings.get(k, 0.0)) for k in ("blocked", "dns", "connect", "send")) / 1000
        conn = f"127.0.0.1:{51000 + index}"
        body = entry["request"].get("postData", {}).get("text", "")
        if body:
            frames.append((sent, len(frames), "c2s", {"raw": body, "conn_id": conn}))
        status = entry["response"]["status"]
        if entry.get("_error") or not status:
            continue  # the client left: mcpsnoop records nothing
        ended = start + entry["time"] / 1000
        content = entry["response"]["content"]
        text = content.get("text", "")
        events = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
        stream = "event-stream" in content.get("mimeType", "")
        if not stream:
            events = [text] if text.strip() else []
        for event in events:
            frames.append((ended, len(frames), "s2c", {"raw": event, "conn_id": conn, "status": status}))
        if not events and not stream:  # an SSE tap emits per event; a plain body's tap emits the bare status
            frames.append((ended, len(frames), "s2c", {"conn_id": conn, "status": status}))
    log = Log(session_id, label, "http")
    for ts, _, direction, fields in sorted(frames):
        log.add(ts, direction, **fields)
    return log


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    stdio = ROOT / "sample_captures" / "stdio"
    har = ROOT / "sample_captures" / "har"
    late = from_transcript(stdio / "handwritten-server-late-result-after-cancel.jsonl", "5c0e1a9b3d7f4e21", "ledger")
    late.write(OUT / "stdio-late-result-after-cancel.jsonl")
    clean = from_transcript(stdio / "sdk-cancel-slow-tool.jsonl", "9a4d2c7e1b3f5a60", "ledger")
    clean.write(OUT / "stdio-sdk-cancel-slow-tool.jsonl")
    http = from_har(har / "mitmdump-sdk-cancel-notification.har", "3e8b6f1a0c2d4957", "http-ledger")
    http.write(OUT / "http-sdk-cancel-notification.jsonl")
    closed = from_har(har / "mitmdump-sdk-cancel-close-stream.har", "7f2a9c4e6b1d3085", "http-ledger")
    closed.write(OUT / "http-sdk-cancel-close-stream.jsonl")
    rule = RULES / "recorder-lost-records"
    rule.mkdir(parents=True, exist_ok=True)
    clean.write(rule / "triggers.jsonl", drop=7)
    clean.write(rule / "clean.jsonl")


if __name__ == "__main__":
    main()
