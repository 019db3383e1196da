#!/usr/bin/env python3
"""Record the HAR samples of sample_captures/har/ with a real proxy (see its README.md).

    .venv/bin/python scripts/record_har.py [--mitm-venv DIR] [--keep-logs DIR]

For each scenario it starts the real MCP Python SDK server (scripts/peers/http_sdk_server.py) on a
loopback port, puts mitmproxy's ``mitmdump`` in front of it as a reverse proxy with its HAR export
(``--set hardump=NAME.har``), runs the SDK client (scripts/peers/http_sdk_client.py) through the
proxy, then stops mitmdump with SIGINT, which is when it writes the HAR.

mitmproxy's pins clash with ours, so it lives in a throwaway venv of its own (``--mitm-venv``,
default build/mitmproxy-venv, created with ``pip install mitmproxy==MITMPROXY`` when missing); only
this script uses it. Loopback only; no other network.
"""

from __future__ import annotations

import argparse
import json
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from capture_samples import PEERS, PY, ROOT, Proc, ScenarioError, pick_port, run_client

OUT = ROOT / "sample_captures" / "har"
MITMPROXY = "11.0.2"
"""The newest mitmproxy for Python 3.11 (12.x needs 3.12)."""
SCENARIOS = {
    # name: (client flow, preferred server port)
    "mitmdump-sdk-cancel-notification": ("cancel-after-delay", 18201),
    "mitmdump-sdk-cancel-close-stream": ("cancel-after-delay-2026-07-28", 18203),
    "mitmdump-sdk-legacy-sse": ("legacy-sse", 18205),
}
FIXTURES = {"mitmdump-sdk-legacy-sse": ROOT / "tests" / "fixtures" / "har"}
"""Recordings kept as test fixtures rather than samples (tests/fixtures/har/README.md)."""
LEGACY = {"legacy-sse"}
"""Flows over HTTP+SSE (2024-11-05): the server's `--transport sse`, the client at /sse, and mitmdump with
scripts/peers/mitm_stream_sse.py (else it buffers the stream and the session stalls)."""


def log(text: str) -> None:
    print(f"[record_har] {text}", file=sys.stderr, flush=True)


def mitm_venv(path: Path) -> Path:
    mitmdump = path / "bin" / "mitmdump"
    if not mitmdump.exists():
        log(f"creating {path} with mitmproxy=={MITMPROXY}")
        subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
        subprocess.run([str(path / "bin" / "pip"), "install", "-q", f"mitmproxy=={MITMPROXY}"], check=True)
    return mitmdump


def wait_port(port: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise ScenarioError(f"nothing listens on port {port} after {timeout} s")


def record(name: str, flow: str, preferred: int, mitmdump: Path, logdir: Path) -> Path:
    port = pick_port(preferred)
    proxy_port = pick_port(preferred + 50)
    har = FIXTURES.get(name, OUT) / f"{name}.har"
    legacy = flow in LEGACY
    server_argv = [PY, str(PEERS / "http_sdk_server.py"), "--port", str(port), "--max-seconds", "40"]
    server_argv += ["--transport", "sse"] if legacy else []
    server = Proc(f"{name}-server", [*server_argv, "--log", str(logdir / f"{name}.server.jsonl")], logdir)
    try:
        server.wait_ready()
        proxy_argv = [str(mitmdump), "-q", "--mode", f"reverse:http://127.0.0.1:{port}"]
        proxy_argv += ["--listen-host", "127.0.0.1", "--listen-port", str(proxy_port), "--set", f"hardump={har}"]
        proxy_argv += ["-s", str(PEERS / "mitm_stream_sse.py")] if legacy else []
        proxy = Proc(f"{name}-mitmdump", proxy_argv, logdir)
        try:
            wait_port(proxy_port)
            run_client(
                f"{name}-client",
                [
                    PY,
                    str(PEERS / "http_sdk_client.py"),
                    flow,
                    f"http://127.0.0.1:{proxy_port}/{'sse' if legacy else 'mcp'}",
                ],
                logdir,
            )
            time.sleep(0.5)  # let the proxy finish the last flows
        finally:
            proxy.stop(signal.SIGINT, timeout=20.0)  # mitmdump writes the HAR on exit
    finally:
        server.stop()
    entries = json.loads(har.read_text())["log"]["entries"]
    log(f"{har.name}: {len(entries)} entries (server port {port}, proxy port {proxy_port})")
    return har


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mitm-venv", type=Path, default=ROOT / "build" / "mitmproxy-venv")
    ap.add_argument("--keep-logs", type=Path)
    ap.add_argument("--only", nargs="*", choices=sorted(SCENARIOS), help="record only these")
    args = ap.parse_args()
    mitmdump = mitm_venv(args.mitm_venv)
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="record-har-") as tmp:
        logdir = args.keep_logs or Path(tmp)
        logdir.mkdir(parents=True, exist_ok=True)
        for name in args.only or SCENARIOS:
            flow, port = SCENARIOS[name]
            record(name, flow, port, mitmdump, logdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
