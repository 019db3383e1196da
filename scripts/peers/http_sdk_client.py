"""Real MCP Python SDK client flows for the sample captures (see sample_captures/http/README.md).

Every flow uses the SDK's public ``mcp.Client`` over the SDK's own transports; nothing is crafted
by hand.  Cancellation is done the way an application does it: by cancelling the anyio scope
that awaits ``call_tool`` (here: from the progress callback, after the 3rd progress notification),
which makes the SDK emit whatever it emits on the wire for that era.

Flows:
  clean                 handshake era (mode='legacy' -> initialize at 2025-11-25), tools/list,
                        tools/call echo, exit (the SDK sends DELETE for the session).
  cancel-notification   handshake era; tools/call slow_write(steps=10) with progress; cancel after
                        3 progress notifications; stay connected 1.5 s; exit.
  cancel-close-stream   2026-07-28 (mode='2026-07-28', no handshake); tools/list; tools/call
                        slow_write(steps=10) with progress; cancel after 3; stay 1.5 s; exit.
  cancel-after-delay    handshake era; tools/call slow_write(steps=10), cancelled by the caller's 1 s
                        time limit (anyio.move_on_after), as an application's timeout does; stay
                        1.5 s; exit (the HAR sample: a proxy that buffers SSE hides the progress).
  cancel-after-delay-2026-07-28   the same in 2026-07-28 (the SDK closes the call's stream).
  big-echo-then-cancel  handshake era; tools/list; tools/call echo with a 700-character text (a result over
                        the 500 bytes GZipMiddleware compresses from); then slow_write(steps=10) given up
                        after 1 s as in cancel-after-delay (the gzip samples; httpx asks for gzip).
  legacy-sse            legacy HTTP+SSE transport (mcp.client.sse.sse_client), handshake era;
                        tools/list; slow_write cancelled after 3 progress; stay 1.5 s; exit.

HTTP/2: ``--http2`` gives the SDK an httpx2 client with ``http2=True`` (over TLS the version is chosen
by ALPN); with an ``http://`` URL it is ``http1=False, http2=True``, i.e. HTTP/2 with prior knowledge
(h2c). The SDK's own code is unchanged: only the ``http_client`` it is handed differs.

Usage: http_sdk_client.py FLOW URL [--cafile CERT] [--keylog FILE] [--http2]
"""

from __future__ import annotations

import argparse
import contextlib
import ssl
import sys
import time
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

CANCEL_AFTER = 3
LINGER = 1.5
CANCEL_DELAY = 1.0
BIG_TEXT = "".join(f"line {n:03d} of a result long enough to be compressed; " for n in range(14))[:700]


def note(text: str) -> None:
    print(f"[client {time.time():.6f}] {text}", file=sys.stderr, flush=True)


async def call_and_cancel(client: Client) -> None:
    seen = 0
    with anyio.CancelScope() as scope:

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            nonlocal seen
            seen += 1
            note(f"progress {progress}/{total}: {message}")
            if seen == CANCEL_AFTER:
                note("cancelling the call_tool scope")
                scope.cancel()

        result = await client.call_tool("slow_write", {"steps": 10}, progress_callback=on_progress)
        note(f"UNEXPECTED: call completed: {result}")
    if scope.cancelled_caught:
        note("call_tool cancelled by the caller")
    await anyio.sleep(LINGER)
    note("leaving the client context")


async def call_with_time_limit(client: Client) -> None:
    with anyio.move_on_after(CANCEL_DELAY) as scope:
        result = await client.call_tool("slow_write", {"steps": 10})
        note(f"UNEXPECTED: call completed: {result}")
    if scope.cancelled_caught:
        note(f"call_tool given up after {CANCEL_DELAY} s")
    await anyio.sleep(LINGER)


async def message_handler(message: Any) -> None:
    note(f"message_handler got: {type(message).__name__}")


async def run(flow: str, url: str, cafile: str | None, keylog: str | None, http2: bool) -> None:
    with anyio.fail_after(30):  # bound every run in time
        await _run(flow, url, cafile, keylog, http2)


async def _run(flow: str, url: str, cafile: str | None, keylog: str | None, http2: bool = False) -> None:
    if flow == "legacy-sse":
        async with Client(sse_client(url), mode="legacy", message_handler=message_handler) as client:
            note(f"negotiated {client.protocol_version}")
            tools = await client.list_tools()
            note(f"tools: {[t.name for t in tools.tools]}")
            await call_and_cancel(client)
        return

    mode = "2026-07-28" if flow in ("cancel-close-stream", "cancel-after-delay-2026-07-28") else "legacy"
    async with contextlib.AsyncExitStack() as stack:
        if cafile or http2:
            versions = {"http1": not url.startswith("http:"), "http2": True} if http2 else {}
            ctx: ssl.SSLContext | bool = True
            if cafile:
                ctx = ssl.create_default_context(cafile=cafile)
                if keylog:
                    ctx.keylog_filename = keylog  # NSS key log format, what SSLKEYLOGFILE produces
            http = await stack.enter_async_context(
                httpx2.AsyncClient(verify=ctx, timeout=httpx2.Timeout(30.0, read=300.0), **versions)
            )
            transport: Any = streamable_http_client(url, http_client=http)
        else:
            transport = streamable_http_client(url)
        client = await stack.enter_async_context(Client(transport, mode=mode, message_handler=message_handler))
        note(f"negotiated {client.protocol_version}")
        tools = await client.list_tools()
        note(f"tools: {[t.name for t in tools.tools]}")
        if flow == "clean":
            result = await client.call_tool("echo", {"text": "hello from cancelwire"})
            note(f"echo result: {result.content}")
        elif flow.startswith("cancel-after-delay"):
            await call_with_time_limit(client)
        elif flow == "big-echo-then-cancel":
            result = await client.call_tool("echo", {"text": BIG_TEXT})
            note(f"echo result: {len(str(result.content))} characters")
            await call_with_time_limit(client)
        else:
            await call_and_cancel(client)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "flow",
        choices=[
            "clean",
            "cancel-notification",
            "cancel-close-stream",
            "cancel-after-delay",
            "cancel-after-delay-2026-07-28",
            "big-echo-then-cancel",
            "legacy-sse",
        ],
    )
    ap.add_argument("url")
    ap.add_argument("--cafile")
    ap.add_argument("--keylog")
    ap.add_argument("--http2", action="store_true")
    args = ap.parse_args()
    anyio.run(run, args.flow, args.url, args.cafile, args.keylog, args.http2)
    note("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
