#!/usr/bin/env python3
"""Writes the issue-19 cost reproducers (a small hostile file that controls time or memory) into a folder,
for measuring before and after a fix; they are large, so they are generated, never committed.

    .venv/bin/python scripts/make_cost_inputs.py waiting-cancels OUT.jsonl [--cancels 5000] [--pings 40000]
    .venv/bin/python scripts/make_cost_inputs.py tool-names OUT.jsonl [--lists 200] [--names 5000]
    .venv/bin/python scripts/make_cost_inputs.py stream-notes OUT.har [--requests 1000] [--notes 1000]
    .venv/bin/python scripts/make_cost_inputs.py stream-notes OUT.pcapng [--requests 1000] [--notes 1000]

waiting-cancels: stdio, `--cancels` cancelled tools/calls that are never answered, then `--pings` server
pings the client answers (a reply to a server request proves nothing about a client's cancel).
tool-names: stdio, `--lists` tools/list results of `--names` new tool names each (with annotations).
stream-notes: a HAR whose one POST carries a batch of `--requests` tools/calls, answered on one SSE
stream that first carries `--notes` server log notifications (each is related to every request the
stream carries); with `--cancels N`, a batch POST in the middle of the stream cancels the first N. To a
`.pcapng`, the same over HTTP/1.1 as a capture (written frame by frame by synth_capture.py: one chunk
and one segment per notification).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

Message = dict[str, Any]
HEADER = {"cancelwire_transcript": 1, "transport": "stdio", "vantage": "proxy"}
INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "0"}}
SERVER = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "0"}}


def _line(ts: float, direction: str, message: Message) -> str:
    return json.dumps({"ts": ts, "dir": direction, "line": json.dumps(message)})


def _start() -> Iterator[str]:
    yield json.dumps(HEADER)
    yield _line(1.0, "c2s", {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT})
    yield _line(1.0, "s2c", {"jsonrpc": "2.0", "id": 0, "result": SERVER})


def waiting_cancels(cancels: int, pings: int) -> Iterator[str]:
    yield from _start()
    for i in range(1, cancels + 1):
        yield _line(2.0, "c2s", {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "t"}})
        yield _line(2.0, "c2s", {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": i}})
    for i in range(pings):
        ts = 3.0 + i / 1000
        yield _line(ts, "s2c", {"jsonrpc": "2.0", "id": f"s{i}", "method": "ping"})
        yield _line(ts, "c2s", {"jsonrpc": "2.0", "id": f"s{i}", "result": {}})


def tool_names(lists: int, names: int) -> Iterator[str]:
    yield from _start()
    for n in range(lists):
        tools = [
            {"name": f"tool-{n}-{i}", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}}
            for i in range(names)
        ]
        yield _line(2.0 + n, "c2s", {"jsonrpc": "2.0", "id": f"l{n}", "method": "tools/list"})
        yield _line(2.0 + n, "s2c", {"jsonrpc": "2.0", "id": f"l{n}", "result": {"tools": tools}})


def _har_entry(at: float, body: str, reply: str, mime: str) -> Message:
    sid = [{"name": "mcp-session-id", "value": "cost"}, {"name": "mcp-protocol-version", "value": "2025-11-25"}]
    return {
        "startedDateTime": datetime.fromtimestamp(1_796_227_626.0 + at, UTC).isoformat().replace("+00:00", "Z"),
        "time": 100.0,
        "request": {
            "method": "POST",
            "url": "https://mcp.example.test/mcp",
            "httpVersion": "http/2.0",
            "headers": [{"name": "content-type", "value": "application/json"}, *sid],
            "postData": {"mimeType": "application/json", "text": body},
        },
        "response": {
            "status": 200,
            "httpVersion": "http/2.0",
            "headers": [{"name": "content-type", "value": mime}, *sid],
            "content": {"size": len(reply), "mimeType": mime, "text": reply},
        },
        "timings": {"send": 0.1, "wait": 50.0, "receive": 49.9},
    }


def stream_notes(requests: int, notes: int, cancels: int = 0) -> Iterator[str]:
    def rpc(**fields: Any) -> str:
        return json.dumps({"jsonrpc": "2.0", **fields}, separators=(",", ":"))

    init = _har_entry(0.0, rpc(id=0, method="initialize", params=INIT), rpc(id=0, result=SERVER), "application/json")
    batch = "[" + ",".join(rpc(id=i, method="tools/call", params={"name": "t"}) for i in range(1, requests + 1)) + "]"
    log = rpc(method="notifications/message", params={"level": "info", "data": "working"})
    events = [log] * notes + [rpc(id=i, result={"content": []}) for i in range(1, requests + 1)]
    stream = "".join(f"event: message\ndata: {e}\n\n" for e in events)
    call = _har_entry(1.0, batch, stream, "text/event-stream")
    entries = [init, call]
    if cancels:
        cancelled = [rpc(method="notifications/cancelled", params={"requestId": i}) for i in range(1, cancels + 1)]
        entries.append(_har_entry(1.05, "[" + ",".join(cancelled) + "]", "", "application/json"))
        entries[-1]["response"]["status"] = 202
    yield json.dumps({"log": {"version": "1.2", "creator": {"name": "cost", "version": "1"}, "entries": entries}})


def stream_notes_capture(out: Path, requests: int, notes: int) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from synth_capture import Pcapng, Tcp

    cap = Pcapng(out)
    tcp = Tcp(cap, 40000)
    session = "c0575e55"

    def post(message: object, sid: str | None) -> None:
        body = json.dumps(message).encode()
        head = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.2:8000\r\nContent-Type: application/json\r\n"
        head += "Accept: application/json, text/event-stream\r\n"
        head += f"Mcp-Session-Id: {sid}\r\nMCP-Protocol-Version: 2025-11-25\r\n" if sid else ""
        tcp.send(True, f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)

    def chunk(text: str) -> None:
        block = text.encode()
        tcp.send(False, f"{len(block):x}\r\n".encode() + block + b"\r\n")

    post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT}, None)
    result = json.dumps({"jsonrpc": "2.0", "id": 0, "result": SERVER}).encode()
    head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: {session}\r\n"
    tcp.send(False, f"{head}Content-Length: {len(result)}\r\n\r\n".encode() + result)
    post(
        [{"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "t"}} for i in range(1, requests + 1)],
        session,
    )
    tcp.send(False, b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
    log = json.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "w"}})
    for _ in range(notes):
        chunk(f"event: message\ndata: {log}\n\n")
    for i in range(1, requests + 1):
        chunk(f"event: message\ndata: {json.dumps({'jsonrpc': '2.0', 'id': i, 'result': {'content': []}})}\n\n")
    tcp.send(False, b"0\r\n\r\n")
    tcp.fin(True)
    tcp.fin(False)
    cap.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    shapes = parser.add_subparsers(dest="shape", required=True)
    waiting = shapes.add_parser("waiting-cancels")
    waiting.add_argument("out", type=Path)
    waiting.add_argument("--cancels", type=int, default=5000)
    waiting.add_argument("--pings", type=int, default=40000)
    tools = shapes.add_parser("tool-names")
    tools.add_argument("out", type=Path)
    tools.add_argument("--lists", type=int, default=200)
    tools.add_argument("--names", type=int, default=5000)
    notes = shapes.add_parser("stream-notes")
    notes.add_argument("out", type=Path)
    notes.add_argument("--requests", type=int, default=1000)
    notes.add_argument("--notes", type=int, default=1000)
    notes.add_argument("--cancels", type=int, default=0, help="a batch POST cancelling the first N, mid-stream")
    args = parser.parse_args()
    if args.shape == "waiting-cancels":
        lines = waiting_cancels(args.cancels, args.pings)
    elif args.shape == "tool-names":
        lines = tool_names(args.lists, args.names)
    elif args.out.suffix == ".pcapng":
        stream_notes_capture(args.out, args.requests, args.notes)
        return 0
    else:
        lines = stream_notes(args.requests, args.notes, args.cancels)
    with args.out.open("w") as out:
        for line in lines:
            out.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
