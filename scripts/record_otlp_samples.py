#!/usr/bin/env python3
"""Record the OpenTelemetry samples in sample_captures/otlp/ (see its README.md): one real SDK session over
stdio, traced by both SDK peers and recorded by `cancelwire record` between them.

    .venv/bin/python scripts/record_otlp_samples.py [--venv DIR] [--out DIR]

Writes, for the one scenario NAME (`sdk-stdio-cancel-handler-runs-on`):
  NAME.server.otlp.jsonl  the server's spans (OTLP/JSON, one TracesData a line: the OpenTelemetry SDK's file exporter)
  NAME.client.otlp.jsonl  the client's spans, the same way
  NAME.transcript.jsonl   `cancelwire record` between the client and the server
  NAME.server.jsonl       the server's own message log (scripts/peers/jsonrpc_tee.py), on the same clock

The peers run in a pinned venv of their own (`--venv`, default build/otel-venv, created when missing with
the versions below): the project's venv has the OpenTelemetry API (the MCP SDK's dependency) but not its SDK.
Stdio only, no network; the session is bounded (`otel_sdk_client.SESSION_SECONDS`, and a timeout here).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PEERS = REPO / "scripts" / "peers"
NAME = "sdk-stdio-cancel-handler-runs-on"
PINS = {
    "mcp": "2.3.0",
    "opentelemetry-sdk": "1.45.2",
    "opentelemetry-exporter-otlp-json-file": "0.66b1",
}
TIMEOUT = 60.0


def peer_venv(path: Path) -> Path:
    """The pinned venv's python, created when missing; refused when it holds other versions."""
    python = path / "bin" / "python"
    if not python.exists():
        print(f"creating {path} with {PINS}", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
        pins = [f"{name}=={version}" for name, version in PINS.items()]
        subprocess.run([str(python), "-m", "pip", "install", "-q", *pins], check=True)
    check = "import importlib.metadata as m, sys; print(*(m.version(n) for n in sys.argv[1:]))"
    found = subprocess.run([str(python), "-c", check, *PINS], capture_output=True, text=True, check=True)
    if found.stdout.split() != list(PINS.values()):
        raise SystemExit(f"{path} has {found.stdout.strip()}, not {list(PINS.values())}: remove it or pass --venv")
    return python


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--venv", type=Path, default=REPO / "build" / "otel-venv")
    parser.add_argument("--out", type=Path, default=REPO / "sample_captures" / "otlp")
    args = parser.parse_args()
    python = peer_venv(args.venv.resolve())
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    recorder = [sys.executable, "-m", "cancelwire", "record", "-o", str(out / f"{NAME}.transcript.jsonl"), "--"]
    server = [
        str(python),
        str(PEERS / "otel_sdk_server.py"),
        "--trace",
        str(out / f"{NAME}.server.otlp.jsonl"),
        "--log",
        str(out / f"{NAME}.server.jsonl"),
    ]
    client = [str(python), str(PEERS / "otel_sdk_client.py"), "--trace", str(out / f"{NAME}.client.otlp.jsonl")]
    started = time.monotonic()
    subprocess.run([*client, "--cwd", str(REPO), "--", *recorder, *server], check=True, timeout=TIMEOUT, cwd=REPO)
    print(f"{NAME}: {time.monotonic() - started:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
