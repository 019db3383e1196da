"""The MCP Python SDK 2.x client of the OpenTelemetry samples, traced, through a recorder to a traced server.

    python scripts/peers/otel_sdk_client.py --trace CLIENT.otlp.jsonl -- RECORDER... SERVER...

The SDK wraps every request it sends in a CLIENT span (`MCP send {method} {target}`,
`mcp/shared/jsonrpc_dispatcher.py`) and, with a provider installed, puts the span's W3C trace context in the
request's `_meta` (`traceparent`), so the server's span of that request is its child. One session:

  tools/list; add x3
  shielded_append(entry, steps=4), cancelled by the caller after its 2nd progress: the tool's steps are shielded
      from the SDK's cancel, so its handler runs on for about a second after it read the cancel
  append_ledger(entry, steps=4), cancelled by the caller after its 1st progress: the SDK cancels the handler,
      which stops at once
  tools/list x3 after both tools would have ended (no read that could check what they did)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import anyio

PEERS = Path(__file__).resolve().parent
sys.path.insert(0, str(PEERS))
sys.path.insert(0, str(PEERS.parent))

from otel_trace import install  # noqa: E402

SESSION_SECONDS = 30.0


async def session(command: list[str], cwd: str) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from record_samples import call_cancelled_by_caller

    params = StdioServerParameters(command=command[0], args=command[1:], cwd=cwd)
    with anyio.fail_after(SESSION_SECONDS):
        async with Client(stdio_client(params), cache=None) as client:
            await client.list_tools()
            for a in range(3):
                await client.call_tool("add", {"a": a, "b": 1})
            await call_cancelled_by_caller(client, "shielded_append", {"entry": "kept", "steps": 4}, after_progress=2)
            await anyio.sleep(2.0)  # the shielded steps end about 1 s after the cancel
            await call_cancelled_by_caller(client, "append_ledger", {"entry": "dropped", "steps": 4}, after_progress=1)
            await anyio.sleep(2.5)  # past the end append_ledger would have had
            for _ in range(3):
                await client.list_tools()  # no read: what the cancelled calls did is left unverified


def main(argv: list[str] | None = None) -> Any:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trace", type=Path, required=True)
    parser.add_argument("--cwd", default=".")
    parser.add_argument("command", nargs="+")
    args = parser.parse_args(argv)
    install(args.trace, "cancelwire-sample-client")
    anyio.run(session, args.command, args.cwd)


if __name__ == "__main__":
    main()
