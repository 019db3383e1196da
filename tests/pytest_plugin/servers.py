"""The MCP servers the pytest plugin's tests talk to: the official Python SDK (`mcp` 2.x) `MCPServer`, in
the test's process (in-memory transport) or as `python servers.py` (stdio). The misbehaviour is the tools'
own, written as server authors write it; everything on the transport is the SDK's.

  count(steps)                 read-only, one progress per 0.5 s step; a cancel interrupts it
  stubborn_count(steps)        the same steps in a cancel scope shielded from the SDK's cancel: after a
                               cancel it goes on reporting progress, which the SDK sends
  blocking_count(seconds)      blocks the event loop with time.sleep, so the cancel is read only after
                               the result has been written
  add(a, b)                    a + b, at once
"""

from __future__ import annotations

import time

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ToolAnnotations

STEP_SECONDS = 0.5
READ_ONLY = ToolAnnotations(read_only_hint=True)
HOSTILE_NAME = "stubborn\x1b]0;owned\x07\x1b[2J"
"""A tool name holding a terminal title sequence and a clear-screen: the failure text must show it inert."""

server = MCPServer("cancelwire-plugin-test-server")
FINISHED: list[str] = []
"""Tools that ran to their end in this process, by name (a test waits for the stubborn one)."""


@server.tool(annotations=READ_ONLY)
async def count(steps: int, ctx: Context) -> int:
    for step in range(steps):
        await ctx.report_progress(step, steps)
        await anyio.sleep(STEP_SECONDS)
    return steps


@server.tool(annotations=READ_ONLY)
async def stubborn_count(steps: int, ctx: Context) -> int:
    with anyio.CancelScope(shield=True):
        for step in range(steps):
            await ctx.report_progress(step, steps)
            await anyio.sleep(STEP_SECONDS)
    FINISHED.append("stubborn_count")
    return steps


server.add_tool(stubborn_count, name=HOSTILE_NAME, annotations=READ_ONLY)


@server.tool(annotations=READ_ONLY)
async def blocking_count(seconds: float) -> int:
    time.sleep(seconds)
    return 1


@server.tool(annotations=READ_ONLY)
def add(a: int, b: int) -> int:
    return a + b


if __name__ == "__main__":
    server.run("stdio")
