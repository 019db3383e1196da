"""The official MCP Python SDK client (``mcp.Client``, the project's ``mcp`` 2.x) against the TypeScript SDK
2.x server of scripts/peers/ts2/server.mjs, for the cross-implementation samples of sample_captures/ts2sdk/.

One flow, the stdio samples' own (scripts/record_samples.py, ``call_cancelled_by_caller``): list the tools,
call ``append_ledger(entry, steps=4)`` with a progress callback, cancel the caller's anyio scope once the 2nd
progress notification arrived, stay connected 2 s, call ``read_ledger``, and in 2025-11-25 ping.

Usage: pysdk_client.py MODE -- SERVER_COMMAND...   (stdio: the SDK spawns the server)
       pysdk_client.py MODE --url URL               (Streamable HTTP)
MODE is the SDK's ``Client(mode=...)``: ``legacy`` (initialize, 2025-11-25) or ``2026-07-28``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from record_samples import call_cancelled_by_caller

LINGER = 2.0
SCENARIO_SECONDS = 30.0


def note(text: str) -> None:
    print(f"[pysdk-client {time.time():.3f}] {text}", file=sys.stderr, flush=True)


async def flow(mode: str, target: Any) -> None:
    async with Client(target, mode=mode) as client:
        note(f"negotiated {client.protocol_version}")
        await client.list_tools()
        await call_cancelled_by_caller(client, "append_ledger", {"entry": "pysdk", "steps": 4}, after_progress=2)
        note("the call was cancelled after the 2nd progress")
        await anyio.sleep(LINGER)
        note(f"read_ledger: {(await client.call_tool('read_ledger', {})).content}")
        if mode == "legacy":
            await client.send_ping()


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[0] not in ("legacy", "2026-07-28") or argv[1] not in ("--", "--url"):
        print(__doc__, file=sys.stderr)
        return 2
    mode, how, rest = argv[0], argv[1], argv[2:]
    target: Any = (
        streamable_http_client(rest[0]) if how == "--url" else StdioServerParameters(command=rest[0], args=rest[1:])
    )

    async def bounded() -> None:
        with anyio.fail_after(SCENARIO_SECONDS):
            await flow(mode, target)

    anyio.run(bounded)
    note("session closed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
