#!/usr/bin/env python3
"""Writes the issue-19 cost reproducers (a small hostile file that controls time or memory) into a folder,
for measuring before and after a fix; they are large, so they are generated, never committed.

    .venv/bin/python scripts/make_cost_inputs.py waiting-cancels OUT.jsonl [--cancels 5000] [--pings 40000]

waiting-cancels: stdio, `--cancels` cancelled tools/calls that are never answered, then `--pings` server
pings the client answers (a reply to a server request proves nothing about a client's cancel).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    shapes = parser.add_subparsers(dest="shape", required=True)
    waiting = shapes.add_parser("waiting-cancels")
    waiting.add_argument("out", type=Path)
    waiting.add_argument("--cancels", type=int, default=5000)
    waiting.add_argument("--pings", type=int, default=40000)
    args = parser.parse_args()
    if args.shape == "waiting-cancels":
        lines = waiting_cancels(args.cancels, args.pings)
    with args.out.open("w") as out:
        for line in lines:
            out.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
