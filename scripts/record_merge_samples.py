#!/usr/bin/env python3
"""Record the `--merge` samples in sample_captures/merge/ (see its README.md): one real SDK session
recorded at two or three points at once.

    .venv/bin/python scripts/record_merge_samples.py [--only NAME ...] [--out DIR]

Per scenario NAME:
  NAME.transcript.jsonl  `cancelwire record` between the client and the server (a proxy's view)
  NAME.server.jsonl      the SDK server's own log (scripts/peers/sdk_server_logged.py), its clock
                         shifted by SERVER_OFFSET seconds and running SERVER_DRIFT_PPM fast, so
                         that it stands for a server on another machine
  NAME.client.jsonl      the SDK client's own log (scripts/peers/jsonrpc_tee.py in this process),
                         plus the error the SDK raised to its caller for a call it gave up on
                         (`"local": true`: the client library made it, no peer sent it)

Both peers are the official MCP Python SDK (`mcp`), on stdio, no network. Every wait is bounded.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

REPO = Path(__file__).resolve().parent.parent
PEERS = REPO / "scripts" / "peers"
sys.path.insert(0, str(PEERS))
sys.path.insert(0, str(REPO / "scripts"))

from jsonrpc_tee import Log, TeeRead, TeeWrite  # noqa: E402
from record_samples import child_env, recorder  # noqa: E402

SERVER = str(PEERS / "sdk_server_logged.py")
SERVER_OFFSET = 3600.25
"""Seconds the server log's clock runs ahead of the client's (the tests recover it)."""
SERVER_DRIFT_PPM = 80.0
SCENARIO_SECONDS = 30.0


class TeeTransport:
    """The SDK's stdio client transport with this process's own log of what the client reads and writes."""

    def __init__(self, inner: Any, log: Log) -> None:
        self.inner = inner
        self.log = log

    async def __aenter__(self) -> tuple[TeeRead, TeeWrite]:
        read_stream, write_stream = await self.inner.__aenter__()
        return TeeRead(read_stream, self.log), TeeWrite(write_stream, self.log)

    async def __aexit__(self, *exc: Any) -> Any:
        return await self.inner.__aexit__(*exc)


@contextlib.asynccontextmanager
async def sdk_client(out: Path, name: str, client_log: Log) -> AsyncIterator[Any]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    server_log = out / f"{name}.server.jsonl"
    command = [
        *recorder(out / f"{name}.transcript.jsonl"),
        sys.executable,
        SERVER,
        "--log",
        str(server_log),
        "--clock-offset",
        str(SERVER_OFFSET),
        "--drift-ppm",
        str(SERVER_DRIFT_PPM),
    ]
    params = StdioServerParameters(command=command[0], args=command[1:], env=child_env(), cwd=str(REPO))
    async with Client(TeeTransport(stdio_client(params), client_log), cache=None) as client:
        yield client


def gave_up(log: Log, request_id: Any, exc: Any) -> None:
    """The client's own record of the error its SDK raised for a call it gave up on."""
    error = {"code": exc.error.code, "message": exc.error.message}
    log.write("recv", {"jsonrpc": "2.0", "id": request_id, "error": error}, local=True)


async def blocked_server_reply_after_timeout(client: Any, log: Log) -> None:
    """The client times out a call and cancels it; the server's loop is blocked inside the tool, so it
    writes the result before it reads the cancel. A proxy sees cancel, then result (inferred: late);
    the server's own log proves the result left before the cancel was read (exact: a race)."""
    from mcp.shared.exceptions import MCPError

    await client.list_tools()
    for a in range(3):
        await client.call_tool("add", {"a": a, "b": 1})
    try:
        await client.call_tool("blocking_count", {"text": "a b c", "seconds": 1.5}, read_timeout_seconds=0.5)
    except MCPError as exc:
        if "timed out" not in str(exc):
            raise
    else:
        raise RuntimeError("blocking_count completed although the client timeout should have fired")
    await anyio.sleep(2.0)
    for a in range(3):
        await client.call_tool("add", {"a": a, "b": 2})


async def shielded_tool_progress_after_cancel(client: Any, log: Log) -> None:
    """The client cancels a call after its 2nd progress; the tool shields its steps from the cancel and
    the SDK passes its progress on. A proxy sees progress after the cancel (inferred: it cannot see
    when the server read the cancel); the server's own log shows it read the cancel first (exact)."""
    from record_samples import call_cancelled_by_caller

    await client.list_tools()
    for a in range(3):
        await client.call_tool("add", {"a": a, "b": 1})
    await call_cancelled_by_caller(client, "shielded_append", {"entry": "z", "steps": 4}, after_progress=2)
    await anyio.sleep(2.5)
    for a in range(3):
        await client.call_tool("add", {"a": a, "b": 2})


async def abandoned_without_cancel(client: Any, log: Log) -> None:
    """The client gives up on a call without telling the server: the SDK sends no courtesy cancel for
    a request that carries a resumption callback, even on stdio where nothing can resume it. The server
    runs the tool to the end and answers a caller that has gone."""
    from mcp.client.session import ClientMessageMetadata
    from mcp.shared.exceptions import MCPError
    from mcp_types import CallToolRequest, CallToolRequestParams, CallToolResult

    await client.list_tools()
    for a in range(3):
        await client.call_tool("add", {"a": a, "b": 1})
    request = CallToolRequest(params=CallToolRequestParams(name="append_ledger", arguments={"entry": "x", "steps": 3}))
    metadata = ClientMessageMetadata(on_resumption_token_update=_ignore_token)
    try:
        await client.session.send_request(request, CallToolResult, request_read_timeout_seconds=0.75, metadata=metadata)
    except MCPError as exc:
        gave_up(log, client.session._dispatcher._next_id, exc)
    else:
        raise RuntimeError("append_ledger completed although the client timeout should have fired")
    await anyio.sleep(2.0)
    for a in range(3):
        await client.call_tool("add", {"a": a, "b": 2})


async def client_leaves_during_call(client: Any, log: Log) -> None:
    """As `abandoned_without_cancel`, but the host closes the session right after giving up: the
    server's progress and result for the call are written after the client stopped reading."""
    from mcp.client.session import ClientMessageMetadata
    from mcp.shared.exceptions import MCPError
    from mcp_types import CallToolRequest, CallToolRequestParams, CallToolResult

    await client.list_tools()
    for a in range(3):
        await client.call_tool("add", {"a": a, "b": 1})
    request = CallToolRequest(params=CallToolRequestParams(name="append_ledger", arguments={"entry": "y", "steps": 4}))
    metadata = ClientMessageMetadata(on_resumption_token_update=_ignore_token)
    try:
        await client.session.send_request(
            request,
            CallToolResult,
            request_read_timeout_seconds=0.75,
            metadata=metadata,
            progress_callback=_ignore_progress,
        )
    except MCPError as exc:
        gave_up(log, client.session._dispatcher._next_id, exc)
    else:
        raise RuntimeError("append_ledger completed although the client timeout should have fired")


async def _ignore_progress(progress: float, total: float | None, message: str | None) -> None:
    return None


async def _ignore_token(token: str) -> None:
    return None


SCENARIOS: dict[str, Callable[[Any, Log], Awaitable[None]]] = {
    "shielded-tool-progress-after-cancel": shielded_tool_progress_after_cancel,
    "blocked-server-reply-after-timeout": blocked_server_reply_after_timeout,
    "abandoned-without-cancel": abandoned_without_cancel,
    "client-leaves-during-call": client_leaves_during_call,
}


async def record(name: str, out: Path) -> None:
    with (out / f"{name}.client.jsonl").open("w", encoding="utf-8") as stream:
        log = Log(stream)
        with anyio.fail_after(SCENARIO_SECONDS):
            async with sdk_client(out, name, log) as client:
                await SCENARIOS[name](client, log)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", action="append", choices=sorted(SCENARIOS), default=[])
    parser.add_argument("--out", type=Path, default=REPO / "sample_captures" / "merge")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.only or SCENARIOS:
        started = time.monotonic()
        anyio.run(record, name, args.out)
        print(f"{name}: {time.monotonic() - started:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
