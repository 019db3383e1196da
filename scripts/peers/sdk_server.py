"""A real MCP Python SDK (`mcp` package) server on stdio, used to record the stdio samples.

Run as `python scripts/peers/sdk_server.py`. It holds an in-memory ledger (server state that
side-effecting tools change) so a client can check the effect of a cancelled call by reading it.

Tools:
  append_ledger(entry, steps)  side-effecting, no annotations: reports progress once per step
                               (0.5 s apart), then appends `entry` to the ledger
  count_words(text, steps)     readOnlyHint=True: slow like append_ledger, changes nothing
  read_ledger()                readOnlyHint=True: returns the ledger, at once
  add(a, b)                    readOnlyHint=True: returns a + b, at once
Resource:
  ledger://entries             the ledger as text
"""

from __future__ import annotations

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ToolAnnotations

STEP_SECONDS = 0.5

server = MCPServer("cancelwire-sample-server")
LEDGER: list[str] = []
READ_ONLY = ToolAnnotations(read_only_hint=True)


@server.tool()
async def append_ledger(entry: str, steps: int, ctx: Context) -> str:
    """Append an entry to the ledger after `steps` slow steps (reports progress)."""
    for step in range(steps):
        await ctx.report_progress(step, steps, f"step {step + 1} of {steps}")
        await anyio.sleep(STEP_SECONDS)
    LEDGER.append(entry)
    return f"appended {entry!r}; ledger has {len(LEDGER)} entries"


@server.tool(annotations=READ_ONLY)
async def count_words(text: str, steps: int, ctx: Context) -> int:
    """Count the words of `text`, slowly (reports progress); changes nothing."""
    for step in range(steps):
        await ctx.report_progress(step, steps, f"step {step + 1} of {steps}")
        await anyio.sleep(STEP_SECONDS)
    return len(text.split())


@server.tool(annotations=READ_ONLY)
def read_ledger() -> list[str]:
    """The ledger's entries, oldest first."""
    return list(LEDGER)


@server.tool(annotations=READ_ONLY)
def add(a: int, b: int) -> int:
    """a + b."""
    return a + b


@server.resource("ledger://entries", mime_type="text/plain")
def ledger_entries() -> str:
    """The ledger, one entry per line."""
    return "\n".join(LEDGER)


if __name__ == "__main__":
    server.run("stdio")
