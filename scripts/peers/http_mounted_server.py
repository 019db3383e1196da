"""The real MCP Python SDK server mounted the way Starlette applications commonly mount it, for the
redirect samples (sample_captures/redirect/).

The SDK's streamable-HTTP app is built with ``streamable_http_path="/"`` and mounted with
``Mount("/mcp", app=...)`` in an outer Starlette app (which runs the inner app's lifespan, the SDK's
session manager). Starlette answers ``POST /mcp`` (no trailing slash) with ``307 Temporary Redirect``
to ``/mcp/``; the SDK client follows it within the origin and sends the same POST again. Nothing in the
SDK is changed; the tools are those of ``http_sdk_server.py`` and the same ``TeeMiddleware`` logs what
reached the MCP app (a redirected POST never does).

Usage: http_mounted_server.py --port P --log FILE [--max-seconds S]
Prints ``READY`` on stdout once uvicorn has started.
"""

from __future__ import annotations

import argparse
import socket
import sys

from starlette.applications import Starlette
from starlette.routing import Mount

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from http_asgi_tee import JsonlLog, TeeMiddleware
from http_sdk_server import SIDE_EFFECTS, build_server, note
from uvicorn_loopback import serve


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--max-seconds", type=float, default=60.0)
    args = ap.parse_args()

    inner = build_server().streamable_http_app(streamable_http_path="/")
    app = Starlette(routes=[Mount("/mcp", app=inner)], lifespan=inner.router.lifespan_context)
    log = JsonlLog(args.log)

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    sock.listen(16)
    try:
        serve(TeeMiddleware(app, log), sock, args.max_seconds, note)
    finally:
        note(f"side effects performed: {SIDE_EFFECTS}")
        log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
