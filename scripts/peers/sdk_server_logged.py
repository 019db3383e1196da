"""The stdio SDK server of `sdk_server.py`, writing its own log of every message it reads and writes.

    python scripts/peers/sdk_server_logged.py --log SERVER.jsonl [--clock-offset S] [--drift-ppm P]

The log is taken inside the server process, between the SDK's stdio transport and its session
(`jsonrpc_tee.py`): `recv` when the session takes a message, `send` when it hands one to stdout. Its
clock can be shifted and made to drift (`--clock-offset`, `--drift-ppm`) so that the log stands for
a server on another machine. One more tool than `sdk_server.py`:

  blocking_count(text, seconds)  readOnlyHint=True: an async tool that blocks the event loop with
                                 `time.sleep` (a common bug), so nothing else (a cancel) is read
                                 until it returns
  shielded_append(entry, steps)  like append_ledger, but its steps run in a cancel scope shielded
                                 from the SDK's cancel (a tool that insists on finishing): after
                                 the cancel it goes on reporting progress, which the SDK sends
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from jsonrpc_tee import Clock, Log, TeeRead, TeeWrite
from mcp.server.mcpserver import Context
from mcp.server.stdio import stdio_server
from sdk_server import LEDGER, READ_ONLY, STEP_SECONDS, server


@server.tool(annotations=READ_ONLY)
async def blocking_count(text: str, seconds: float) -> int:
    """Count the words of `text` after blocking the whole server for `seconds` (time.sleep)."""
    time.sleep(seconds)
    return len(text.split())


@server.tool()
async def shielded_append(entry: str, steps: int, ctx: Context) -> str:
    """Append an entry to the ledger after `steps` slow steps that a cancel does not interrupt."""
    with anyio.CancelScope(shield=True):
        for step in range(steps):
            await ctx.report_progress(step, steps, f"step {step + 1} of {steps}")
            await anyio.sleep(STEP_SECONDS)
        LEDGER.append(entry)
    return f"appended {entry!r}; ledger has {len(LEDGER)} entries"


async def main(log: Log) -> None:
    low = server._lowlevel_server
    async with stdio_server() as (read_stream, write_stream):
        await low.run(TeeRead(read_stream, log), TeeWrite(write_stream, log), low.create_initialization_options())


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("--clock-offset", type=float, default=0.0)
    parser.add_argument("--drift-ppm", type=float, default=0.0)
    args = parser.parse_args()
    with args.log.open("w", encoding="utf-8") as out:
        anyio.run(main, Log(out, Clock(args.clock_offset, args.drift_ppm)))
