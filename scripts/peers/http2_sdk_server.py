"""The real MCP Python SDK server (the same app and tools as ``http_sdk_server.py``) served over HTTP/2
by hypercorn, for the HTTP/2 sample captures (see sample_captures/http2/README.md).

Nothing changes how the SDK speaks: the app is ``MCPServer.streamable_http_app()`` wrapped only in
``http_asgi_tee.TeeMiddleware`` (the JSON-RPC log). Hypercorn speaks HTTP/2 through the ``h2`` package:

* with ``--tls-cert``/``--tls-key``: TLS, ALPN offering ``h2`` first (and ``http/1.1``);
* without: cleartext, where hypercorn takes HTTP/2 with prior knowledge (a client that starts with
  the ``PRI * HTTP/2.0`` preface) and the HTTP/1.1 ``Upgrade: h2c`` dance.

The listening socket is bound (and listening) before ``READY`` is printed, so a client that
connects at once waits in the backlog rather than failing.

``--gzip json|sse`` puts the app behind Starlette's GZipMiddleware as ``http_sdk_server.py`` does.

Usage: http2_sdk_server.py --port P --log FILE [--host ADDR] [--tls-cert C --tls-key K] [--max-seconds S]
       [--gzip json|sse]
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import sys
import time

from hypercorn.asyncio import serve
from hypercorn.config import Config

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from http_asgi_tee import JsonlLog
from http_sdk_server import SIDE_EFFECTS, streamable_app


def note(text: str) -> None:
    print(f"[server {time.time():.6f}] {text}", file=sys.stderr, flush=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    ap.add_argument("--max-seconds", type=float, default=60.0)
    ap.add_argument("--host", default="127.0.0.1", help="address to listen on (default loopback)")
    ap.add_argument("--gzip", choices=["json", "sse"], help="behind Starlette's GZipMiddleware")
    args = ap.parse_args()

    log = JsonlLog(args.log)
    app = streamable_app(args.gzip, log, host=args.host)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    sock.listen(16)
    sock.set_inheritable(True)

    config = Config()
    config.bind = [f"fd://{sock.fileno()}"]
    config.certfile, config.keyfile = args.tls_cert, args.tls_key
    config.graceful_timeout = 2.0
    config.loglevel = "WARNING"

    async def run() -> None:
        stop = asyncio.Event()

        async def watchdog() -> None:
            await asyncio.sleep(args.max_seconds)
            note("max-seconds reached, shutting down")
            stop.set()

        wd = asyncio.create_task(watchdog())
        print("READY", flush=True)
        await serve(app, config, shutdown_trigger=stop.wait)  # type: ignore[arg-type]
        wd.cancel()

    try:
        asyncio.run(run())
    except KeyboardInterrupt:
        pass
    finally:
        note(f"side effects performed: {SIDE_EFFECTS}")
        log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
