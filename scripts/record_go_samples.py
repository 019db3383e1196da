#!/usr/bin/env python3
"""Record the Go SDK samples in sample_captures/gosdk/ (see its README.md).

    .venv/bin/python scripts/record_go_samples.py --peer PATH/TO/gopeer [--only NAME ...] [--out DIR]

`gopeer` is scripts/peers/go/main.go built against the official Go MCP SDK v1.7.0 by
scripts/build_go_peers.py. Every scenario is bounded in time and runs on stdio or loopback only:

* stdio: the Go client launches the Go server through the recorder, as a host would be configured:
  `gopeer client-stdio -- python -m cancelwire record -o OUT -- gopeer server-stdio`;
* HTTP: the Go server listens on 127.0.0.1, tshark captures `lo` (scripts/loopback.py) while the Go
  client runs; the server is probed for readiness before the capture starts, so no probe is in it.

In every scenario the client cancels `append_ledger` once the 2nd progress notification arrived,
keeps the session open 2 s, then calls `read_ledger` and pings (scripts/peers/go/main.go).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))

from loopback import TSHARK, loopback_capture  # noqa: E402

OUT = REPO / "sample_captures" / "gosdk"
CLIENT_SECONDS = 30.0


def recorder(out: Path) -> list[str]:
    return [sys.executable, "-m", "cancelwire", "record", "-o", str(out), "--"]


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COVERAGE")}
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def stdio(*server_flags: str, sdk1: bool = False) -> Callable[[Path, Path], None]:
    """`sdk1`: the server is scripts/peers/sdk1_server.py under SDK1_PYTHON (a venv with `mcp` 1.x)."""

    def scenario(peer: Path, out: Path) -> None:
        server = [str(peer), "server-stdio", *server_flags]
        if sdk1:
            python = os.environ.get("SDK1_PYTHON")
            if not python:
                raise SystemExit(f"{out.name}: set SDK1_PYTHON to the python of a venv with mcp==1.30.0")
            server = [python, str(REPO / "scripts" / "peers" / "sdk1_server.py")]
        argv = [str(peer), "client-stdio", "--", *recorder(out), *server]
        subprocess.run(argv, check=True, timeout=CLIENT_SECONDS, env=child_env(), cwd=REPO)

    return scenario


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def http_server(peer: Path, port: int, flags: tuple[str, ...]) -> Iterator[None]:
    proc = subprocess.Popen([str(peer), "server-http", "-addr", f"127.0.0.1:{port}", *flags], cwd=REPO)
    try:
        deadline = time.monotonic() + 15
        while True:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the Go server did not listen")
            time.sleep(0.05)
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def http(
    *server_flags: str, reply: bool, closed_first: bool = False, h2c: bool = False
) -> Callable[[Path, Path], None]:
    """Over HTTP/1.1 the client closes the call's connection (FIN) and POSTs the cancel on another; the
    server's handler returns `context canceled` at once, and whether the SDK still writes that result on
    the closed stream depends on which it notices first (about half the runs each way). A run is kept
    when its capture shows the wanted side of that race (`reply`), else recorded again. `closed_first`:
    kept only when the call's stream had ended (the client's RST) before the cancel's POST (the POST's
    new connection is set up in parallel: either order happens).

    `h2c`: both peers speak HTTP/2 with prior knowledge (Go's `http.Protocols`). The client resets the
    call's stream (RST_STREAM) and POSTs the cancel on a new stream of the same connection, in either
    order (about half the runs each); the server writes nothing more on a reset stream. A run is kept
    when the reset came first."""

    protocol = ("-h2c",) if h2c else ()

    def scenario(peer: Path, out: Path) -> None:
        for attempt in range(1, ATTEMPTS + 1):
            port = free_port()
            with http_server(peer, port, (*server_flags, *protocol)), loopback_capture(out, f"tcp port {port}"):
                url = f"http://127.0.0.1:{port}/mcp"
                subprocess.run(
                    [str(peer), "client-http", "-url", url, *protocol], check=True, timeout=CLIENT_SECONDS, cwd=REPO
                )
                time.sleep(0.5)  # the client's last segments (FIN, RST) reach the capture
            if (CANCELLED_RESULT in out.read_bytes()) is reply and (
                not closed_first or _reset_before_cancel(out, port, h2c)
            ):
                return
            print(f"  attempt {attempt}: the other side of the race, again", flush=True)
        raise RuntimeError(
            f"{out.name}: {ATTEMPTS} attempts, none as wanted (reply={reply}, closed_first={closed_first})"
        )

    return scenario


def _reset_before_cancel(capture: Path, port: int, h2c: bool) -> bool:
    """tshark: the first reset (RST_STREAM, or a TCP RST) comes before the frame of notifications/cancelled."""
    if h2c:
        decode, reset, cancel = ["-d", f"tcp.port=={port},http2"], "http2.type == 3", "http2.data.data"
    else:
        decode, reset, cancel = [], "tcp.flags.reset == 1", "http.file_data"
    wanted = f'{reset} || {cancel} contains "notifications/cancelled"'
    argv = [TSHARK, "-r", str(capture), *decode, "-Y", wanted, "-T", "fields", "-e", reset.split()[0]]
    shown = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=60).stdout.splitlines()
    return bool(shown) and shown[0].split(",")[0] in ("3", "1", "True")


ATTEMPTS = 10
#: The Go SDK's result for a handler that returned its cancelled context's error (on the wire as is).
CANCELLED_RESULT = b'"text":"context canceled"}],"isError":true'

SCENARIOS: dict[str, tuple[str, Callable[[Path, Path], None]]] = {
    "gosdk-stdio-cancel-slow-tool": ("jsonl", stdio()),
    # the Go client against the Python SDK 1.x server (SDK1_PYTHON=/path/to/venv/bin/python)
    "gosdk-client-pysdk1-server-stdio-cancel": ("jsonl", stdio(sdk1=True)),
    "gosdk-http-cancel-reply-after-close": ("pcapng", http(reply=True)),
    "gosdk-http-cancel-no-reply": ("pcapng", http(reply=False)),
    "gosdk-http-cancel-read-fails": ("pcapng", http("-ledger-unavailable", reply=False, closed_first=True)),
    # over HTTP/2 the server writes nothing more on the reset stream: the one race is reset vs cancel POST
    "gosdk-h2c-cancel-stream-reset-first": ("pcapng", http(reply=False, closed_first=True, h2c=True)),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer", type=Path, required=True, help="the gopeer binary (scripts/build_go_peers.py)")
    parser.add_argument("--only", nargs="*", choices=sorted(SCENARIOS), help="record only these")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.only or SCENARIOS:
        suffix, scenario = SCENARIOS[name]
        path = args.out / f"{name}.{suffix}"
        print(f"recording {path}", flush=True)
        scenario(args.peer.resolve(), path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
