"""The stdio SDK server of `sdk_server_logged.py` with OpenTelemetry tracing installed.

    python scripts/peers/otel_sdk_server.py --trace SERVER.otlp.jsonl --log SERVER.jsonl

The MCP Python SDK 2.x wraps every request it handles in a SERVER span (`OpenTelemetryMiddleware`, on by
default): started when the request is dispatched, ended when its handler returns, raises or is cancelled.
`otel_trace.install` exports them as OTLP/JSON lines to `--trace`; `--log` is the server's own message log
(`jsonrpc_tee.py`), on the same clock.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from otel_trace import install

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--trace", type=Path, required=True)
    parser.add_argument("--log", type=Path, required=True)
    args = parser.parse_args()
    install(args.trace, "cancelwire-sample-server")
    from jsonrpc_tee import Log
    from sdk_server_logged import main

    with args.log.open("w", encoding="utf-8") as out:
        anyio.run(main, Log(out))
