"""Real MCP Python SDK server (MCPServer) under uvicorn, for the sample captures.

Nothing here changes how the SDK speaks: the app is ``MCPServer.streamable_http_app()`` (Streamable
HTTP, both the handshake era and 2026-07-28, chosen per request by the SDK from the
``MCP-Protocol-Version`` header) or ``MCPServer.sse_app()`` (legacy HTTP+SSE), wrapped only in
``http_asgi_tee.TeeMiddleware`` which logs the JSON-RPC messages to ``--log``.

Tools:
  * ``echo(text)``            - returns at once.
  * ``slow_write(steps)``     - side-effecting: "writes" one record per step (an in-process list,
                                reported on stderr), reports progress after each step, sleeps 0.2 s
                                between steps.  Annotated destructive/non-idempotent.
  * ``flood(count, pad)``     - reports ``count`` progress notifications with a ``pad``-byte message
                                as fast as the transport takes them, then returns.

Compression (``--gzip``), as a deployment behind ordinary middleware has it: the app (and its log) wrapped in
Starlette's ``GZipMiddleware`` (minimum size 500 bytes, the default), which compresses a response only for a
client that sends ``Accept-Encoding: gzip`` (httpx does by default):

  * ``--gzip json``: the SDK's JSON response mode (``json_response=True``); every reply body of 500 bytes
    or more is one gzip body (Starlette's defaults exclude ``text/event-stream``, so this is what a stock
    GZipMiddleware compresses);
  * ``--gzip sse``: SSE responses too (``exclude_content_types=()``, the parameter Starlette 1.5 added; nginx
    does the same with ``gzip_types text/event-stream``): one gzip stream per response, each event flushed
    with ``Z_SYNC_FLUSH`` as it is sent (Starlette 1.5 and later).

Usage: http_sdk_server.py --port P --log FILE [--host ADDR] [--transport streamable|sse]
       [--tls-cert C --tls-key K] [--sndbuf BYTES] [--max-seconds S] [--gzip json|sse]
Prints ``READY`` on stdout once the listening socket is bound and uvicorn has started.
"""

from __future__ import annotations

import argparse
import socket
import sys
import time

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ToolAnnotations
from starlette.middleware.gzip import GZipMiddleware
from starlette.types import ASGIApp

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from http_asgi_tee import JsonlLog, TeeMiddleware
from uvicorn_loopback import serve

SIDE_EFFECTS: list[str] = []


def note(text: str) -> None:
    print(f"[server {time.time():.6f}] {text}", file=sys.stderr, flush=True)


def build_server() -> MCPServer:
    server = MCPServer("cancelwire-sample-server", version="1.0")

    @server.tool()
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=False))
    async def slow_write(steps: int, ctx: Context) -> str:
        """Append `steps` records, one every 0.2 s, reporting progress after each."""
        done = 0
        try:
            for i in range(1, steps + 1):
                await anyio.sleep(0.2)
                SIDE_EFFECTS.append(f"record-{i}")
                done = i
                note(f"slow_write: wrote record-{i}")
                await ctx.report_progress(i, steps, f"wrote record {i}/{steps}")
        except anyio.get_cancelled_exc_class():
            note(f"slow_write: handler cancelled after {done} records")
            raise
        note(f"slow_write: completed {done} records")
        return f"wrote {done} records"

    @server.tool()
    async def flood(count: int, pad: int, ctx: Context) -> str:
        """Report `count` progress notifications carrying a `pad`-byte message, then return."""
        sent = 0
        try:
            for i in range(1, count + 1):
                await ctx.report_progress(i, count, "x" * pad)
                sent = i
                if i % 25 == 0:
                    note(f"flood: {i} progress notifications handed to the transport")
        except anyio.get_cancelled_exc_class():
            note(f"flood: handler cancelled after {sent} progress notifications")
            raise
        note(f"flood: completed {sent}")
        return f"flooded {sent}"

    return server


def streamable_app(gzip: str | None, log: JsonlLog, *, host: str) -> ASGIApp:
    """The SDK's Streamable HTTP app with its log, bare or behind GZipMiddleware (see the module doc)."""
    app = TeeMiddleware(build_server().streamable_http_app(host=host, json_response=gzip == "json"), log)
    if gzip is None:
        return app
    if gzip == "sse":
        return GZipMiddleware(app, minimum_size=500, exclude_content_types=())
    return GZipMiddleware(app, minimum_size=500)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--transport", choices=["streamable", "sse"], default="streamable")
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    ap.add_argument("--sndbuf", type=int, default=0, help="SO_SNDBUF for accepted sockets (0: kernel default)")
    ap.add_argument("--max-seconds", type=float, default=60.0)
    ap.add_argument("--host", default="127.0.0.1", help="address to listen on (default loopback)")
    ap.add_argument("--gzip", choices=["json", "sse"], help="behind Starlette's GZipMiddleware (module doc)")
    args = ap.parse_args()

    log = JsonlLog(args.log)
    if args.transport == "sse":
        wrapped: ASGIApp = TeeMiddleware(build_server().sse_app(), log)
    else:
        wrapped = streamable_app(args.gzip, log, host=args.host)

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if args.sndbuf:
        # Inherited by accepted sockets on Linux; keeps the kernel from absorbing a whole flood.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, args.sndbuf)
    sock.bind((args.host, args.port))
    sock.listen(16)

    try:
        serve(wrapped, sock, args.max_seconds, note, ssl_certfile=args.tls_cert, ssl_keyfile=args.tls_key)
    finally:
        note(f"side effects performed: {SIDE_EFFECTS}")
        log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
