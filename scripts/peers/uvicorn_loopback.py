"""Serve an ASGI app with uvicorn on an already bound loopback socket, for the HTTP sample peers.

Prints ``READY`` once uvicorn has started (the capture scripts wait for it, so no readiness probe ends up
in a capture) and stops by itself after ``max_seconds``. Used by http_sdk_server.py (``mcp`` 2.x, the
project's venv) and task_sdk_server.py (``mcp`` 1.x, the task samples' venv), so it imports only uvicorn.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Callable
from typing import Any

import uvicorn


def serve(app: Any, sock: socket.socket, max_seconds: float, note: Callable[[str], None], **config: Any) -> None:
    """uvicorn (h11) on `sock` until SIGINT or `max_seconds`; `config` adds uvicorn.Config options (TLS)."""
    server = uvicorn.Server(
        uvicorn.Config(app, http="h11", lifespan="on", log_level="warning", timeout_graceful_shutdown=2, **config)
    )

    async def run() -> None:
        async def watchdog() -> None:
            await asyncio.sleep(max_seconds)
            note("max-seconds reached, shutting down")
            server.should_exit = True

        async def ready() -> None:
            while not server.started:
                await asyncio.sleep(0.02)
            print("READY", flush=True)

        helpers = [asyncio.create_task(watchdog()), asyncio.create_task(ready())]
        await server.serve(sockets=[sock])
        for helper in helpers:
            helper.cancel()

    with contextlib.suppress(KeyboardInterrupt):  # uvicorn re-raises the SIGINT it handled, after a graceful shutdown
        asyncio.run(run())
