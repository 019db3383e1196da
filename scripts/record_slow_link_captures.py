#!/usr/bin/env python3
"""Record the slow-link captures in sample_captures/slow-link/ (see its README.md): one Streamable HTTP
session over a slow wire, captured at both ends at once.

    .venv/bin/python scripts/record_slow_link_captures.py [--out DIR] [--only NAME] [--give-up S]

No root: the script runs itself under `unshare -rn` (a user and network namespace of its own), makes a
second namespace for the server, and joins them with `scripts/peers/tun_link.py` (every packet 60 ms late
each way; the kernel here has no netem). The server (`scripts/peers/http_sdk_server.py`, the official MCP
Python SDK under uvicorn) listens on 10.77.0.2:8000 in its namespace; the client runs in the first one.
`dumpcap` captures NAME.client-end.pcapng on the client's tun device and NAME.server-end.pcapng on the
server's; the server's own log is NAME.server.jsonl.

Scenarios:
  handwritten-h2c-result-crosses-reset   the same call over HTTP/2 with prior knowledge (h2c) to the SDK
        server under hypercorn (`scripts/peers/http2_sdk_server.py`), from a HAND-WRITTEN client
        (`scripts/peers/http2_raw_clients.py reset-after`: the SDK client over HTTP/2 sends nothing when it
        abandons a call, see sample_captures/http2/README.md) that resets the call's stream
        (RST_STREAM CANCEL) GIVE_UP seconds after it, on a connection that stays open.
  sdk-http-result-crosses-close   the SDK client (2026-07-28, `mcp.Client` over `streamable_http_client`)
        lists the tools, echoes once, then calls `slow_write(steps=1)` (its result 0.2 s after the server
        reads the call) under a time limit of GIVE_UP seconds (`anyio.move_on_after`, as an application's
        timeout): the SDK closes the call's connection (FIN), which reaches the server just after it wrote
        the result.
  sdk-https-result-crosses-close   the same over TLS: the server gets a self-signed certificate for
        10.77.0.2 (--tls-cert/--tls-key), the client trusts it and logs its TLS secrets
        (`ssl.SSLContext.keylog_filename`, what SSLKEYLOGFILE produces) to NAME.client-end.keys, copied to
        NAME.server-end.keys: each capture's key log beside it, where cancelwire looks for it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PEERS = REPO / "scripts" / "peers"
SERVER_ADDR = ("10.77.0.2", 8000)
URL = f"{SERVER_ADDR[0]}:{SERVER_ADDR[1]}/mcp"
GIVE_UP = 0.31
"""Seconds the client waits for slow_write: its 0.2 s, the call's 60 ms to the server and about 50 ms, so
that the client's close reaches the server about 60 ms after the result was written, and the result
reaches the client about 60 ms after the close left it."""
INSIDE = "CANCELWIRE_SLOW_LINK_INSIDE"


def sh(*argv: str) -> None:
    subprocess.run(argv, check=True)


def in_peer(pid: int, *argv: str) -> list[str]:
    return ["nsenter", "-t", str(pid), "-n", *argv]


def wire() -> tuple[subprocess.Popen[bytes], subprocess.Popen[bytes]]:
    """The server's namespace (a sleeping holder) and the slow link to it."""
    sh("ip", "link", "set", "lo", "up")
    holder = subprocess.Popen(["unshare", "-n", "sleep", "300"])
    time.sleep(0.3)
    sh("ip", "tuntap", "add", "dev", "cw0", "mode", "tun")
    sh("ip", "addr", "add", "10.77.0.1", "peer", "10.77.0.2", "dev", "cw0")
    sh("ip", "link", "set", "cw0", "up")
    for argv in (
        ("ip", "link", "set", "lo", "up"),
        ("ip", "tuntap", "add", "dev", "cw1", "mode", "tun"),
        ("ip", "addr", "add", "10.77.0.2", "peer", "10.77.0.1", "dev", "cw1"),
        ("ip", "link", "set", "cw1", "up"),
    ):
        sh(*in_peer(holder.pid, *argv))
    link = subprocess.Popen(
        [sys.executable, str(PEERS / "tun_link.py"), "--peer-pid", str(holder.pid)], stdout=subprocess.PIPE
    )
    assert link.stdout is not None
    if link.stdout.readline().strip() != b"READY":
        raise RuntimeError("tun_link.py did not start")
    return holder, link


def record(out: Path, name: str, server: str, client: list[str], server_extra: list[str]) -> None:
    holder, link = wire()
    procs: list[subprocess.Popen[bytes]] = []
    try:
        caps = [
            subprocess.Popen(["dumpcap", "-q", "-i", "cw0", "-w", str(out / f"{name}.client-end.pcapng")]),
            subprocess.Popen(
                in_peer(holder.pid, "dumpcap", "-q", "-i", "cw1", "-w", str(out / f"{name}.server-end.pcapng"))
            ),
        ]
        procs += caps
        server_argv = [sys.executable, str(PEERS / server), "--host", SERVER_ADDR[0]]
        server_argv += [
            "--port",
            str(SERVER_ADDR[1]),
            "--log",
            str(out / f"{name}.server.jsonl"),
            "--max-seconds",
            "30",
            *server_extra,
        ]
        peer = subprocess.Popen(in_peer(holder.pid, *server_argv), stdout=subprocess.PIPE)
        procs.append(peer)
        assert peer.stdout is not None
        if peer.stdout.readline().strip() != b"READY":
            raise RuntimeError("the server did not start")
        time.sleep(1.0)  # dumpcap is capturing by now
        subprocess.run(client, check=True, timeout=40)
        time.sleep(1.0)
        peer.send_signal(signal.SIGINT)
        peer.wait(timeout=10)
        for cap in caps:
            cap.send_signal(signal.SIGINT)
            cap.wait(timeout=10)
    finally:
        for proc in (*procs, link, holder):
            if proc.poll() is None:
                proc.kill()
                proc.wait()


# -- the clients -------------------------------------------------------------------------------------


async def sdk_client(give_up: float, cafile: str | None, keylog: str | None) -> None:
    """The SDK client over http, or over https trusting CAFILE and logging its TLS secrets to KEYLOG."""
    import contextlib
    import ssl

    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    with anyio.fail_after(30):
        async with contextlib.AsyncExitStack() as stack:
            transport = streamable_http_client(f"http://{URL}")
            if cafile is not None:
                ctx = ssl.create_default_context(cafile=cafile)
                if keylog is not None:
                    ctx.keylog_filename = keylog  # NSS key log format, what SSLKEYLOGFILE produces
                http = await stack.enter_async_context(httpx2.AsyncClient(verify=ctx, timeout=httpx2.Timeout(30.0)))
                transport = streamable_http_client(f"https://{URL}", http_client=http)
            client = await stack.enter_async_context(Client(transport, mode="2026-07-28"))
            await client.list_tools()
            await client.call_tool("echo", {"text": "round trip"})
            await client.call_tool("echo", {"text": "round trip"})
            with anyio.move_on_after(give_up) as scope:
                await client.call_tool("slow_write", {"steps": 1})
            if not scope.cancelled_caught:
                raise RuntimeError("slow_write completed although the time limit should have fired")
            await anyio.sleep(1.0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=REPO / "sample_captures" / "slow-link")
    parser.add_argument("--only", action="append")
    parser.add_argument("--give-up", type=float, default=GIVE_UP)
    parser.add_argument("--client", choices=["sdk"], help=argparse.SUPPRESS)
    parser.add_argument("--cafile", help=argparse.SUPPRESS)
    parser.add_argument("--keylog", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client is not None:
        import anyio

        anyio.run(sdk_client, args.give_up, args.cafile, args.keylog)
        return 0
    if os.environ.get(INSIDE) != "1":
        env = {**os.environ, INSIDE: "1"}
        return subprocess.run(["unshare", "-rn", sys.executable, *sys.argv], env=env, check=False).returncode
    args.out.mkdir(parents=True, exist_ok=True)
    me = [sys.executable, __file__, "--give-up", str(args.give_up)]
    out = args.out.resolve()
    sys.path.insert(0, str(REPO / "scripts"))
    from capture_samples import make_cert

    cert, key = make_cert(Path(tempfile.mkdtemp(prefix="cancelwire-slow-tls-")), SERVER_ADDR[0])
    keys = out / "sdk-https-result-crosses-close.client-end.keys"
    tls = ["--cafile", str(cert), "--keylog", str(keys)]
    scenarios: dict[str, tuple[str, list[str], list[str]]] = {
        "sdk-http-result-crosses-close": ("http_sdk_server.py", [*me, "--client", "sdk"], []),
        "sdk-https-result-crosses-close": (
            "http_sdk_server.py",
            [*me, "--client", "sdk", *tls],
            ["--tls-cert", str(cert), "--tls-key", str(key)],
        ),
        "handwritten-h2c-result-crosses-reset": (
            "http2_sdk_server.py",
            [
                sys.executable,
                str(PEERS / "http2_raw_clients.py"),
                "reset-after",
                str(SERVER_ADDR[1]),
                SERVER_ADDR[0],
                str(args.give_up),
            ],
            [],
        ),
    }
    for name, (server, client, server_extra) in scenarios.items():
        if not args.only or name in args.only:
            tls_keys = client[-1] == str(keys)
            if tls_keys:
                keys.unlink(missing_ok=True)  # the client appends to a key log
            record(out, name, server, client, server_extra)
            if tls_keys:  # each capture's key log beside it, as cancelwire finds it (X.pcapng + X.keys)
                shutil.copyfile(keys, out / f"{name}.server-end.keys")
    return 0


if __name__ == "__main__":
    sys.exit(main())
