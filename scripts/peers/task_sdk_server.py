"""A real MCP Python SDK 1.x server with the SDK's experimental tasks (protocol 2025-11-25), for the task samples.

Runs only in the pinned recording venv that `scripts/record_task_samples.py` creates (``mcp==1.30.0``):
the project's own venv has ``mcp`` 2.x, which ships no tasks. The server is the SDK's low-level
``Server`` with ``server.experimental.enable_tasks()`` (the SDK's own task store and its default
``tasks/get``, ``tasks/result``, ``tasks/list`` and ``tasks/cancel`` handlers); nothing here changes
how the SDK speaks.

Tools:
  * ``export_ledger(steps)`` - side-effecting ("exports" one record per step, reported on stderr),
    task support ``optional``, annotated destructive/non-idempotent. Run as a task it works in the
    background the way the SDK documents (``ctx.experimental.run_task``): every 0.3 s one record,
    then a ``notifications/progress`` on the call's progress token (the SDK has no task-aware progress
    helper, so the session's ``send_progress_notification``) and a status message
    (``ServerTaskContext.update_status``, which sends ``notifications/tasks/status``). It stops early
    when the SDK's ``ServerTaskContext.is_cancelled`` says so.

Usage: task_sdk_server.py stdio [--log FILE [--clock-offset S] [--drift-ppm P]]
       task_sdk_server.py http --port P --log FILE [--max-seconds S]
Over HTTP it prints ``READY`` once uvicorn listens; the ASGI app is the SDK's
``StreamableHTTPSessionManager`` wrapped in ``http_asgi_tee.TeeMiddleware`` (the server log).
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
import mcp.types as types
from mcp.server.experimental.task_context import ServerTaskContext
from mcp.server.lowlevel import Server

STEP_SECONDS = 0.3
SIDE_EFFECTS: list[str] = []


def note(text: str) -> None:
    print(f"[task-server {time.time():.6f}] {text}", file=sys.stderr, flush=True)


EXPORT = types.Tool(
    name="export_ledger",
    description="Export `steps` ledger records, one every 0.3 s, reporting progress after each.",
    inputSchema={"type": "object", "properties": {"steps": {"type": "integer"}}, "required": ["steps"]},
    annotations=types.ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=False),
    execution=types.ToolExecution(taskSupport="optional"),
)


def build_server() -> Server[Any, Any]:
    server: Server[Any, Any] = Server("cancelwire-task-sample-server", version="1.0")
    server.experimental.enable_tasks()

    @server.list_tools()
    async def list_tools() -> list[types.Tool]:
        return [EXPORT]

    @server.call_tool()
    async def call_tool(name: str, arguments: dict[str, Any]) -> Any:
        ctx = server.request_context
        steps = int(arguments["steps"])
        token = ctx.meta.progressToken if ctx.meta else None
        session = ctx.session

        async def work(task: ServerTaskContext) -> types.CallToolResult:
            done = 0
            for i in range(1, steps + 1):
                await anyio.sleep(STEP_SECONDS)
                if task.is_cancelled:
                    note(f"export_ledger: task {task.task_id} saw is_cancelled after {done} records")
                    break
                SIDE_EFFECTS.append(f"record-{i}")
                done = i
                status = task.task.status  # the context's copy, refreshed by its own updates
                note(
                    f"export_ledger: task {task.task_id} exported record-{i} (status in its ServerTaskContext: "
                    f"{status})"
                )
                if token is not None:
                    await session.send_progress_notification(token, i, steps, f"exported record {i}/{steps}")
                await task.update_status(f"exported {i} of {steps} records")
            note(f"export_ledger: task {task.task_id} work returns after {done} records")
            return types.CallToolResult(content=[types.TextContent(type="text", text=f"exported {done} records")])

        if ctx.experimental.is_task:
            return await ctx.experimental.run_task(work)
        return [types.TextContent(type="text", text="call export_ledger as a task")]

    return server


async def serve_stdio(log_path: str | None, clock_offset: float, drift_ppm: float) -> None:
    """Over stdio; with LOG_PATH, the server's own log of what its session reads and writes
    (jsonrpc_tee.py), on a clock shifted by CLOCK_OFFSET seconds and DRIFT_PPM fast (a server on
    another machine, for the --merge samples)."""
    from mcp.server.stdio import stdio_server

    server = build_server()
    async with stdio_server() as (read, write), contextlib.AsyncExitStack() as stack:
        if log_path is not None:
            from jsonrpc_tee import Clock, Log, TeeRead, TeeWrite

            out = stack.enter_context(open(log_path, "w", encoding="utf-8"))  # noqa: SIM115
            log = Log(out, Clock(clock_offset, drift_ppm))
            read, write = TeeRead(read, log), TeeWrite(write, log)
        await server.run(read, write, server.create_initialization_options())


def serve_http(port: int, log_path: str, max_seconds: float) -> None:
    from http_asgi_tee import JsonlLog, TeeMiddleware
    from mcp.server.fastmcp.server import StreamableHTTPASGIApp
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from starlette.applications import Starlette
    from starlette.routing import Route
    from uvicorn_loopback import serve

    manager = StreamableHTTPSessionManager(app=build_server())

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with manager.run():
            yield

    # A Route, as the SDK's own FastMCP.streamable_http_app() does (a Mount would 307-redirect /mcp to /mcp/).
    app = Starlette(routes=[Route("/mcp", endpoint=StreamableHTTPASGIApp(manager))], lifespan=lifespan)
    log = JsonlLog(log_path)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(16)
    try:
        serve(TeeMiddleware(app, log), sock, max_seconds, note)
    finally:
        log.close()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("transport", choices=["stdio", "http"])
    ap.add_argument("--port", type=int)
    ap.add_argument("--log")
    ap.add_argument("--max-seconds", type=float, default=40.0)
    ap.add_argument("--clock-offset", type=float, default=0.0, help="stdio --log only: its clock's offset (s)")
    ap.add_argument("--drift-ppm", type=float, default=0.0, help="stdio --log only: its clock's drift")
    args = ap.parse_args()
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    try:
        if args.transport == "stdio":
            anyio.run(serve_stdio, args.log, args.clock_offset, args.drift_ppm)
        else:
            serve_http(args.port, args.log, args.max_seconds)
    finally:
        note(f"side effects performed: {SIDE_EFFECTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
