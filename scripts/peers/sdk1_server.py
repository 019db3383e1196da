"""A real MCP Python SDK 1.x server (`mcp<2`, FastMCP) on stdio, for the cross-SDK samples.

Run with a venv of its own that has `mcp` 1.x (the project's venv has 2.x):
`python -m venv V && V/bin/pip install "mcp==1.30.0" && V/bin/python scripts/peers/sdk1_server.py`.
The same tools as scripts/peers/go/main.go (whose client drives it, see scripts/record_go_samples.py):

  append_ledger(entry, steps)  side-effecting, no annotations: progress once per 0.5 s step, then appends
  read_ledger()                readOnlyHint=True: the ledger
  add(a, b)                    readOnlyHint=True: a + b
"""

from __future__ import annotations

import anyio
from mcp.server.fastmcp import Context, FastMCP
from mcp.types import ToolAnnotations

STEP_SECONDS = 0.5

server = FastMCP("cancelwire-sdk1-server")
LEDGER: list[str] = []
READ_ONLY = ToolAnnotations(readOnlyHint=True)


@server.tool()
async def append_ledger(entry: str, steps: int, ctx: Context) -> list[str]:  # type: ignore[type-arg]
    """Append an entry to the ledger after `steps` slow steps (reports progress)."""
    for step in range(steps):
        await ctx.report_progress(step, steps)
        await anyio.sleep(STEP_SECONDS)
    LEDGER.append(entry)
    return list(LEDGER)


@server.tool(annotations=READ_ONLY)
def read_ledger() -> list[str]:
    """The ledger's entries, oldest first."""
    return list(LEDGER)


@server.tool(annotations=READ_ONLY)
def add(a: int, b: int) -> int:
    """a + b."""
    return a + b


if __name__ == "__main__":
    server.run("stdio")
