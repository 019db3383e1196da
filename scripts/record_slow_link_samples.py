#!/usr/bin/env python3
"""Record the slow-link sample in sample_captures/slow-link/ (see its README.md): one real SDK stdio
session recorded by two `cancelwire record` proxies with a slow link (scripts/peers/slow_link.py,
60 ms each way) between them.

    .venv/bin/python scripts/record_slow_link_samples.py [--out DIR] [--delay S] [--timeout S] [--go-peer PATH]

    SDK client ─▶ cancelwire record (NAME.client-end.jsonl) ─▶ slow link ─▶
                  cancelwire record (NAME.server-end.jsonl) ─▶ SDK server

Both transcripts declare vantage `proxy` (what `cancelwire record` writes). The client lists the
tools twice and adds once (the round trips the recordings measure), then calls `count_words`
with one step (its result is written 0.5 s after the server reads the call) and a read timeout
TIMEOUT seconds: the SDK client sends `notifications/cancelled` when it fires, which reaches the
server DELAY seconds later, just after the result was written. Both peers are the official MCP Python
SDK (`mcp`), on stdio. Every wait is bounded.

With --go-peer PATH (scripts/peers/go/main.go built by scripts/build_go_peers.py against the official
Go MCP SDK v1.7.0) it records the Go session GO_NAME instead: `gopeer client-stdio -cancel-after
TIMEOUT` lists the tools twice and adds once, calls `append_ledger` with one step (its result is
written 0.5 s after the server reads the call) and cancels the call's context TIMEOUT seconds after
sending it; the Go SDK client then sends `notifications/cancelled`, and `gopeer server-stdio` serves.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import anyio

REPO = Path(__file__).resolve().parent.parent
PEERS = REPO / "scripts" / "peers"
sys.path.insert(0, str(REPO / "scripts"))

from record_samples import SDK_SERVER, call_timing_out, child_env, recorder  # noqa: E402

NAME = "sdk-stdio-result-crosses-cancel"
GO_NAME = "gosdk-stdio-result-crosses-cancel"
DELAY = 0.06
TIMEOUT = 0.527
"""Seconds after the call the client times out: the tool's 0.5 s, plus a little less than the time
the cancel then takes to reach the server, so the result is written just before the cancel arrives."""


def through_slow_link(out: Path, name: str, delay: float, server: list[str]) -> list[str]:
    """SERVER's command line behind the recorder, the slow link and the recorder again."""
    return [
        *recorder(out / f"{name}.client-end.jsonl"),
        sys.executable,
        str(PEERS / "slow_link.py"),
        "--delay",
        str(delay),
        "--",
        *recorder(out / f"{name}.server-end.jsonl"),
        *server,
    ]


def record_go(peer: Path, out: Path, delay: float, timeout: float) -> None:
    server = through_slow_link(out, GO_NAME, delay, [str(peer), "server-stdio"])
    argv = [str(peer), "client-stdio", "-cancel-after", f"{timeout}s", "-wait", "1s", "--", *server]
    subprocess.run(argv, check=True, timeout=30, env=child_env(), cwd=REPO)


async def record(out: Path, delay: float, timeout: float) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    command = through_slow_link(out, NAME, delay, [sys.executable, SDK_SERVER])
    params = StdioServerParameters(command=command[0], args=command[1:], env=child_env(), cwd=str(REPO))
    with anyio.fail_after(30):
        async with Client(params, cache=None) as client:
            await client.list_tools()
            await client.list_tools()
            await client.call_tool("add", {"a": 2, "b": 3})
            await call_timing_out(client, "count_words", {"text": "a b c", "steps": 1}, timeout)
            await anyio.sleep(1.0)
            await client.call_tool("add", {"a": 3, "b": 4})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=REPO / "sample_captures" / "slow-link")
    parser.add_argument("--delay", type=float, default=DELAY)
    parser.add_argument("--timeout", type=float, default=TIMEOUT)
    parser.add_argument("--go-peer", type=Path, help="record the Go SDK session with this gopeer binary instead")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.go_peer:
        record_go(args.go_peer, args.out, args.delay, args.timeout)
    else:
        anyio.run(record, args.out, args.delay, args.timeout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
