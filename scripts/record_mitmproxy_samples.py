#!/usr/bin/env python3
"""Record the mitmproxy flow-file samples of sample_captures/mitmproxy/ with real mitmdump (see its README.md).

    .venv/bin/python scripts/record_mitmproxy_samples.py [--mitm-venv DIR] [--keep-logs DIR] [--only NAME ...]

For each scenario it starts the real MCP Python SDK server (scripts/peers/http_sdk_server.py) on a loopback
port, puts mitmproxy's ``mitmdump`` in front of it as a reverse proxy writing its own flow file
(``mitmdump --mode reverse:http://127.0.0.1:PORT -w NAME.flows``), runs a client through the proxy, then stops
mitmdump with SIGINT (it writes a flow when it ends, and the flows still open when it exits).

Clients: the SDK client (scripts/peers/http_sdk_client.py) over HTTP/1.1, and over HTTP/2 (``--http2``: mitmproxy
takes HTTP/2 only over TLS, so the client speaks TLS with ALPN to the proxy, trusting the CA mitmdump makes in its
``confdir``); and, for a stream reset on HTTP/2, the hand-written scripts/peers/http2_tls_reset_client.py (the SDK
never resets a stream). Streaming: by default mitmdump buffers a response whole (the SSE body is kept, and the
client gets it only when the server ends it); ``stream`` scenarios load scripts/peers/mitm_stream_sse.py
(``flow.response.stream = True`` for text/event-stream) or set ``stream_large_bodies``, and a streamed body is
not stored.

mitmproxy's pins clash with ours (11.0.2 pins h11<=0.14 and h2<=4.1; the 12.x line needs Python 3.12), so it
lives in a venv of its own (``--mitm-venv``, default build/mitmproxy-venv, created by scripts/record_har.py's
``mitm_venv`` with ``pip install mitmproxy==MITMPROXY``, 11.0.2, which writes flow format 21, the current
one, when missing). Loopback only; no other network.
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from capture_samples import PEERS, PY, ROOT, Proc, ScenarioError, pick_port, run_client
from record_har import mitm_venv, wait_port

OUT = ROOT / "sample_captures" / "mitmproxy"
FIXTURES = ROOT / "tests" / "fixtures" / "mitmproxy"


@dataclass(frozen=True)
class Scenario:
    client: str
    """An http_sdk_client.py flow, or "h2-reset" (http2_tls_reset_client.py)."""
    port: int
    http2: bool = False
    stream: str | None = None
    """None (buffered), "addon" (mitm_stream_sse.py) or a stream_large_bodies size."""
    fixture: bool = False
    """Kept under tests/fixtures/mitmproxy/ rather than sample_captures/mitmproxy/."""


SCENARIOS = {
    "mitmdump-sdk-clean": Scenario("clean", 18401, fixture=True),
    "mitmdump-sdk-cancel-notification": Scenario("cancel-after-delay", 18403),
    "mitmdump-sdk-cancel-close-stream": Scenario("cancel-after-delay-2026-07-28", 18405),
    "mitmdump-sdk-streamed-cancel-notification": Scenario("cancel-notification", 18407, stream="addon"),
    "mitmdump-sdk-streamed-close-stream": Scenario("cancel-after-delay-2026-07-28", 18409, stream="1k"),
    "mitmdump-sdk-h2-cancel-notification": Scenario("cancel-after-delay", 18411, http2=True),
    "mitmdump-h2-client-resets-stream": Scenario("h2-reset", 18413, http2=True),
}


def log(text: str) -> None:
    print(f"[record_mitmproxy] {text}", file=sys.stderr, flush=True)


def client_argv(s: Scenario, proxy_port: int, confdir: Path) -> list[str]:
    ca = str(confdir / "mitmproxy-ca-cert.pem")
    if s.client == "h2-reset":
        return [PY, str(PEERS / "http2_tls_reset_client.py"), str(proxy_port), ca, "1.0"]
    scheme = "https" if s.http2 else "http"
    argv = [PY, str(PEERS / "http_sdk_client.py"), s.client, f"{scheme}://127.0.0.1:{proxy_port}/mcp"]
    return [*argv, "--http2", "--cafile", ca] if s.http2 else argv


def record(name: str, s: Scenario, mitmdump: Path, logdir: Path) -> Path:
    port, proxy_port = pick_port(s.port), pick_port(s.port + 50)
    flows = (FIXTURES if s.fixture else OUT) / f"{name}.flows"
    flows.unlink(missing_ok=True)
    confdir = logdir / f"{name}.confdir"
    server_argv = [PY, str(PEERS / "http_sdk_server.py"), "--port", str(port), "--max-seconds", "40"]
    server = Proc(f"{name}-server", [*server_argv, "--log", str(logdir / f"{name}.server.jsonl")], logdir)
    try:
        server.wait_ready()
        proxy_argv = [str(mitmdump), "--mode", f"reverse:http://127.0.0.1:{port}", "-w", str(flows)]
        proxy_argv += ["--listen-host", "127.0.0.1", "--listen-port", str(proxy_port), "--set", f"confdir={confdir}"]
        if s.stream == "addon":
            proxy_argv += ["-s", str(PEERS / "mitm_stream_sse.py")]
        elif s.stream is not None:
            proxy_argv += ["--set", f"stream_large_bodies={s.stream}"]
        proxy = Proc(f"{name}-mitmdump", proxy_argv, logdir)
        try:
            wait_port(proxy_port)
            run_client(f"{name}-client", client_argv(s, proxy_port, confdir), logdir)
            time.sleep(0.5)  # let the proxy finish the last flows
        finally:
            proxy.stop(signal.SIGINT, timeout=20.0)
    finally:
        server.stop()
    log(f"{flows.name}: {flows.stat().st_size} bytes (server port {port}, proxy port {proxy_port})")
    return flows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mitm-venv", type=Path, default=ROOT / "build" / "mitmproxy-venv")
    ap.add_argument("--keep-logs", type=Path)
    ap.add_argument("--only", nargs="*", choices=sorted(SCENARIOS), help="record only these")
    args = ap.parse_args()
    mitmdump = mitm_venv(args.mitm_venv)
    OUT.mkdir(parents=True, exist_ok=True)
    FIXTURES.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="record-mitmproxy-") as tmp:
        logdir = args.keep_logs or Path(tmp)
        logdir.mkdir(parents=True, exist_ok=True)
        for name in args.only or SCENARIOS:
            try:
                record(name, SCENARIOS[name], mitmdump, logdir)
            except ScenarioError as exc:
                log(f"{name} failed: {exc}")
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
