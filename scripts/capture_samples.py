#!/usr/bin/env python3
"""Regenerate the HTTP sample captures in sample_captures/http/ and sample_captures/http2/ (see their
README.md files).

    .venv/bin/python scripts/capture_samples.py [--only NAME ...] [--keep-logs DIR] [--out DIR]

Needs root (or capture rights on ``lo``) and tshark.  Only loopback traffic: every peer binds
127.0.0.1.  For each scenario it

  1. starts the server peer (the real SDK server under uvicorn, or a hand-written one) on a free
     port and waits for it to print READY (so no readiness probe ends up in the capture);
  2. starts ``tshark -i lo -f "tcp port PORT" -w NAME.pcapng`` and waits until it reports that it
     is capturing (plus a short margin);
  3. runs the client peer to completion (bounded by a timeout);
  4. lets the wire settle, stops tshark with SIGINT, stops the server (SIGINT, then kill);
  5. checks the capture with tshark (readable, small, the expected HTTP is there).

Each server writes ``NAME.server.jsonl`` (format in scripts/peers/http_asgi_tee.py and the README).
Exits non-zero if any scenario fails.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import ipaddress
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from loopback import CaptureError, loopback_capture

sys.path.insert(0, str(Path(__file__).resolve().parent / "peers"))
from http_raw_clients import VERSION, tools_call_request

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "sample_captures" / "http"
OUT2 = ROOT / "sample_captures" / "http2"
PEERS = ROOT / "scripts" / "peers"
PY = sys.executable
TSHARK = shutil.which("tshark") or "/usr/bin/tshark"
MAX_PCAP_BYTES = 1_000_000
MAX_PACKETS = 600
TOTAL_DEADLINE = 170.0  # seconds for the whole run

START = time.monotonic()


class ScenarioError(Exception):
    pass


def log(text: str) -> None:
    print(f"[capture {time.monotonic() - START:6.2f}s] {text}", flush=True)


def pick_port(preferred: int) -> int:
    """The preferred port if it is free on 127.0.0.1, else any free one."""
    for port in (preferred, 0):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            return s.getsockname()[1]
        except OSError:
            continue
        finally:
            s.close()
    raise ScenarioError("no free port")


def pick_udp_port(preferred: int) -> int:
    for port in (preferred, 0):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            s.bind(("127.0.0.1", port))
            return s.getsockname()[1]
        except OSError:
            continue
        finally:
            s.close()
    raise ScenarioError("no free udp port")


class Proc:
    """A child process we started; stopped only through its own pid."""

    def __init__(self, name: str, argv: list[str], logdir: Path, env: dict[str, str] | None = None) -> None:
        self.name = name
        self.errpath = logdir / f"{name}.stderr"
        self._err = open(self.errpath, "w")  # noqa: SIM115
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self._err, text=True, env=env, cwd=ROOT)

    def wait_ready(self, timeout: float = 15.0) -> None:
        box: list[str] = []

        def reader() -> None:
            assert self.p.stdout is not None
            for line in self.p.stdout:
                if line.strip() == "READY":
                    box.append(line)
                    return

        t = threading.Thread(target=reader, daemon=True)
        t.start()
        t.join(timeout)
        if not box:
            self.stop()
            raise ScenarioError(f"{self.name} did not get ready: {self.stderr()[-2000:]}")

    def stop(self, sig: int = signal.SIGINT, timeout: float = 8.0) -> int:
        if self.p.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.p.send_signal(sig)
            try:
                self.p.wait(timeout)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait(5)
        self._err.close()
        return self.p.returncode

    def stderr(self) -> str:
        self._err.flush()
        return self.errpath.read_text(errors="replace")


def run_client(name: str, argv: list[str], logdir: Path, timeout: float = 40.0) -> str:
    errpath = logdir / f"{name}.stderr"
    try:
        cp = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired as exc:
        raise ScenarioError(f"{name} timed out after {timeout}s") from exc
    errpath.write_text(cp.stderr)
    if cp.returncode != 0:
        raise ScenarioError(f"{name} exited {cp.returncode}: {cp.stderr[-3000:]}")
    return cp.stderr


@contextlib.contextmanager
def capture(out: Path, bpf: str, logdir: Path) -> Iterator[None]:
    """tshark on lo with a capture filter (scripts/loopback.py); its stderr is kept in `logdir`."""
    try:
        with loopback_capture(out, bpf) as cap:
            yield
    except CaptureError as exc:
        raise ScenarioError(str(exc)) from exc
    (logdir / f"tshark-{out.stem}.stderr").write_text(cap.stderr)


def tshark_fields(path: Path, display_filter: str, fields: list[str], extra: list[str] | None = None) -> list[str]:
    argv = [TSHARK, "-r", str(path), *(extra or []), "-Y", display_filter, "-T", "fields"]
    for f in fields:
        argv += ["-e", f]
    cp = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    if cp.returncode != 0:
        raise ScenarioError(f"tshark -r {path.name} failed: {cp.stderr}")
    return [line for line in cp.stdout.splitlines() if line.strip()]


def check_capture(path: Path, *, want_http: bool = True, extra: list[str] | None = None) -> int:
    size = path.stat().st_size
    if size > MAX_PCAP_BYTES:
        raise ScenarioError(f"{path.name} is {size} bytes (> {MAX_PCAP_BYTES})")
    frames = tshark_fields(path, "frame", ["frame.number"], extra)
    if not frames or len(frames) > MAX_PACKETS:
        raise ScenarioError(f"{path.name}: {len(frames)} packets")
    if want_http:
        http = tshark_fields(path, "http.request", ["http.request.method"], extra)
        if not http:
            raise ScenarioError(f"{path.name}: no HTTP request found by tshark")
    log(f"  {path.name}: {len(frames)} packets, {size} bytes")
    return len(frames)


def jsonl_lines(path: Path) -> int:
    n = sum(1 for line in path.read_text().splitlines() if line.strip())
    if n == 0:
        raise ScenarioError(f"{path.name} is empty")
    return n


# --------------------------------------------------------------------------------------------- scenarios


@dataclass
class Ctx:
    logdir: Path
    tmp: Path


def sdk_server(ctx: Ctx, name: str, port: int, log: Path, *extra: str) -> Proc:
    """The real SDK server (`peers/http_sdk_server.py`) on `port`, writing its own log to `log`."""
    argv = [PY, str(PEERS / "http_sdk_server.py"), "--port", str(port), "--log", str(log), "--max-seconds", "40"]
    return Proc(f"{name}-server", [*argv, *extra], ctx.logdir)


def sdk_scenario(
    ctx: Ctx,
    name: str,
    preferred_port: int,
    flow: str,
    *,
    transport: str = "streamable",
    path: str = "/mcp",
    scheme: str = "http",
    server_extra: list[str] | None = None,
    client_extra: list[str] | None = None,
    check: bool = True,
) -> int:
    """Real SDK server and client on loopback under tshark; returns the port used."""
    port = pick_port(preferred_port)
    pcap, slog = OUT / f"{name}.pcapng", OUT / f"{name}.server.jsonl"
    server = sdk_server(ctx, name, port, slog, "--transport", transport, *(server_extra or []))
    try:
        server.wait_ready()
        with capture(pcap, f"tcp port {port}", ctx.logdir):
            run_client(
                f"{name}-client",
                [
                    PY,
                    str(PEERS / "http_sdk_client.py"),
                    flow,
                    f"{scheme}://127.0.0.1:{port}{path}",
                    *(client_extra or []),
                ],
                ctx.logdir,
            )
    finally:
        server.stop()
    if check:
        check_capture(pcap)
        log(f"  {slog.name}: {jsonl_lines(slog)} messages (port {port})")
    return port


def s_clean(ctx: Ctx) -> None:
    sdk_scenario(ctx, "sdk-http-clean", 18101, "clean")


def s_cancel_notification(ctx: Ctx) -> None:
    sdk_scenario(ctx, "sdk-http-cancel-notification", 18102, "cancel-notification")


def s_cancel_close_stream(ctx: Ctx) -> None:
    sdk_scenario(ctx, "sdk-http-cancel-close-stream", 18103, "cancel-close-stream")


def s_gzip_json(ctx: Ctx) -> None:
    """Behind Starlette's GZipMiddleware, the SDK in JSON response mode: reply bodies over 500 bytes are gzip."""
    sdk_scenario(ctx, "sdk-http-gzip-json-cancel", 18121, "big-echo-then-cancel", server_extra=["--gzip", "json"])


def s_gzip_sse(ctx: Ctx) -> None:
    """Behind GZipMiddleware that compresses SSE too: every event stream is gzip, flushed per event."""
    sdk_scenario(ctx, "sdk-http-gzip-sse-cancel", 18122, "big-echo-then-cancel", server_extra=["--gzip", "sse"])


def s_client_stops_reading(ctx: Ctx) -> None:
    name = "http-client-stops-reading"
    port = pick_port(18104)
    pcap, slog = OUT / f"{name}.pcapng", OUT / f"{name}.server.jsonl"
    server = sdk_server(ctx, name, port, slog, "--sndbuf", "4096")
    try:
        server.wait_ready()
        with capture(pcap, f"tcp port {port}", ctx.logdir):
            run_client(
                f"{name}-client", [PY, str(PEERS / "http_raw_clients.py"), "stops-reading", str(port)], ctx.logdir
            )
            time.sleep(0.5)
    finally:
        server.stop()
    check_capture(pcap)
    zero = tshark_fields(pcap, "tcp.analysis.zero_window", ["frame.number"])
    if not zero:
        raise ScenarioError(f"{name}: tshark sees no zero window")
    log(f"  zero-window frames: {len(zero)}; {slog.name}: {jsonl_lines(slog)} messages (port {port})")


def s_bad_server(ctx: Ctx) -> None:
    name = "bad-server-writes-after-disconnect"
    port = pick_port(18105)
    pcap, slog = OUT / f"{name}.pcapng", OUT / f"{name}.server.jsonl"
    server = Proc(
        f"{name}-server",
        [PY, str(PEERS / "http_bad_server.py"), "--port", str(port), "--log", str(slog), "--max-seconds", "20"],
        ctx.logdir,
    )
    try:
        server.wait_ready()
        with capture(pcap, f"tcp port {port}", ctx.logdir):
            run_client(f"{name}-client", [PY, str(PEERS / "http_raw_clients.py"), "half-close", str(port)], ctx.logdir)
            server.p.wait(20)  # it exits by itself after its last write
    finally:
        server.stop()
    check_capture(pcap)
    rst = tshark_fields(pcap, "tcp.flags.reset == 1", ["frame.number"])
    if not rst:
        raise ScenarioError(f"{name}: no RST in the capture")
    log(f"  RST frames: {rst}; {slog.name}: {jsonl_lines(slog)} messages (port {port})")


def make_cert(tmp: Path, host: str = "127.0.0.1") -> tuple[Path, Path]:
    """A self-signed certificate (and its key) for HOST, in TMP."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(host))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp / "cert.pem", tmp / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


def s_tls(ctx: Ctx) -> None:
    name = "sdk-http-tls"
    pcap, slog, keys = OUT / f"{name}.pcapng", OUT / f"{name}.server.jsonl", OUT / f"{name}.keys"
    cert, key = make_cert(ctx.tmp)
    if keys.exists():
        keys.unlink()
    port = sdk_scenario(
        ctx,
        name,
        18106,
        "cancel-close-stream",
        scheme="https",
        server_extra=["--tls-cert", str(cert), "--tls-key", str(key)],
        client_extra=["--cafile", str(cert), "--keylog", str(keys)],
        check=False,
    )
    if not keys.exists() or "CLIENT_TRAFFIC_SECRET_0" not in keys.read_text():
        raise ScenarioError(f"{name}: no TLS 1.3 secrets in {keys.name}")
    # Without keys tshark must see no HTTP at all; with them it must see the POSTs.
    if tshark_fields(pcap, "http", ["frame.number"]):
        raise ScenarioError(f"{name}: HTTP visible without the keys?")
    check_capture(pcap, extra=["-o", f"tls.keylog_file:{keys}", "-d", f"tcp.port=={port},tls"])
    log(f"  {slog.name}: {jsonl_lines(slog)} messages (port {port})")


def s_legacy_sse(ctx: Ctx) -> None:
    sdk_scenario(ctx, "sdk-legacy-sse", 18107, "legacy-sse", transport="sse", path="/sse")


def s_truncated(ctx: Ctx) -> None:
    src = OUT / "sdk-http-clean.pcapng"
    if not src.exists():
        raise ScenarioError("truncated.pcapng needs sdk-http-clean.pcapng (run that scenario first)")
    data = src.read_bytes()
    # Walk the pcapng blocks; cut inside the data of the enhanced packet block in the middle.
    off, epbs = 0, []
    while off + 12 <= len(data):
        btype, blen = struct.unpack_from("<II", data, off)
        if blen < 12:
            break
        if btype == 6:
            epbs.append((off, blen))
        off += blen
    if len(epbs) < 4:
        raise ScenarioError("sdk-http-clean.pcapng has too few packets to truncate")
    boff, blen = max(epbs[len(epbs) // 2 :], key=lambda b: b[1])  # a data-carrying packet, past the middle
    cut = boff + 28 + min(60, (blen - 32) // 2)  # inside the captured bytes of that packet
    out = OUT / "truncated.pcapng"
    out.write_bytes(data[:cut])
    cp = subprocess.run([TSHARK, "-r", str(out)], capture_output=True, text=True, timeout=60)
    if "cut short" not in (cp.stderr + cp.stdout):
        raise ScenarioError(f"truncated.pcapng: tshark did not report a cut-short file: {cp.stderr}")
    log(f"  truncated.pcapng: {cut} of {len(data)} bytes (cut inside the packet block at offset {boff})")


def s_unrelated(ctx: Ctx) -> None:
    name = "unrelated-traffic"
    port, uport = pick_port(18108), pick_udp_port(18109)
    www = ctx.tmp / "www"
    www.mkdir(exist_ok=True)
    (www / "hello.txt").write_text("Just a static file. No MCP here.\n")
    server = Proc(
        f"{name}-server",
        [
            PY,
            "-u",
            "-c",
            (
                "import functools, http.server, sys\n"
                "h = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[2])\n"
                "s = http.server.ThreadingHTTPServer(('127.0.0.1', int(sys.argv[1])), h)\n"
                "print('READY', flush=True)\n"
                "s.serve_forever()\n"
            ),
            str(port),
            str(www),
        ],
        ctx.logdir,
    )
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", uport))
    udp.settimeout(5)
    pcap = OUT / f"{name}.pcapng"
    try:
        server.wait_ready()
        with capture(pcap, f"tcp port {port} or udp port {uport}", ctx.logdir):
            import http.client

            c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            c.request("GET", "/hello.txt", headers={"Connection": "close"})
            body = c.getresponse().read()
            c.close()
            if b"No MCP" not in body:
                raise ScenarioError(f"{name}: unexpected body {body!r}")
            tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            tx.sendto(b"cancelwire sample: a UDP datagram that is neither DNS nor MCP\n", ("127.0.0.1", uport))
            tx.close()
            udp.recv(1024)
    finally:
        udp.close()
        server.stop(signal.SIGTERM)
    check_capture(pcap)


# ------------------------------------------------------------------------------------- HTTP/2 scenarios


def h2_server(ctx: Ctx, name: str, port: int, log: Path, *extra: str) -> Proc:
    """The real SDK server under hypercorn (`peers/http2_sdk_server.py`): h2 over TLS, or h2c."""
    argv = [PY, str(PEERS / "http2_sdk_server.py"), "--port", str(port), "--log", str(log), "--max-seconds", "40"]
    return Proc(f"{name}-server", [*argv, *extra], ctx.logdir)


def check_h2(pcap: Path, port: int, keys: Path | None = None, *, upgrade: bool = False) -> list[str]:
    """tshark must see HTTP/2 HEADERS frames (decoded as h2c on the port, as HTTP/1.1 that upgrades, or
    through TLS with the keys); returns the frames that carry an RST_STREAM."""
    decode = ["-d", f"tcp.port=={port},{'http' if upgrade else 'http2'}"]
    extra = ["-o", f"tls.keylog_file:{keys}", "-d", f"tcp.port=={port},tls"] if keys else decode
    check_capture(pcap, want_http=False, extra=extra)
    if not tshark_fields(pcap, "http2.type == 1", ["frame.number"], extra):
        raise ScenarioError(f"{pcap.name}: tshark sees no HTTP/2 HEADERS frame")
    return tshark_fields(pcap, "http2.type == 3", ["frame.number"], extra)


def h2_sdk(ctx: Ctx, name: str, preferred_port: int, flow: str, tls: bool, gzip: str | None = None) -> None:
    """The real SDK client (httpx2 with http2=True) against the SDK server under hypercorn."""
    port = pick_port(preferred_port)
    pcap, slog, keys = OUT2 / f"{name}.pcapng", OUT2 / f"{name}.server.jsonl", OUT2 / f"{name}.keys"
    server_extra: list[str] = ["--gzip", gzip] if gzip else []
    client_extra = ["--http2"]
    if tls:
        cert, key = make_cert(ctx.tmp)
        keys.unlink(missing_ok=True)
        server_extra += ["--tls-cert", str(cert), "--tls-key", str(key)]
        client_extra += ["--cafile", str(cert), "--keylog", str(keys)]
    server = h2_server(ctx, name, port, slog, *server_extra)
    url = f"{'https' if tls else 'http'}://127.0.0.1:{port}/mcp"
    try:
        server.wait_ready()
        with capture(pcap, f"tcp port {port}", ctx.logdir):
            run_client(f"{name}-client", [PY, str(PEERS / "http_sdk_client.py"), flow, url, *client_extra], ctx.logdir)
            time.sleep(0.5)
    finally:
        server.stop()
    rst = check_h2(pcap, port, keys if tls else None)
    log(f"  RST_STREAM frames: {rst}; {slog.name}: {jsonl_lines(slog)} messages (port {port})")


def h2_raw(ctx: Ctx, name: str, preferred_port: int, mode: str, bad_server: bool = False) -> list[str]:
    """A hand-written h2c client (`peers/http2_raw_clients.py MODE`) against the SDK server, or against
    the hand-written misbehaving `peers/http2_bad_server.py`."""
    port = pick_port(preferred_port)
    pcap, slog = OUT2 / f"{name}.pcapng", OUT2 / f"{name}.server.jsonl"
    if bad_server:
        argv = [PY, str(PEERS / "http2_bad_server.py"), "--port", str(port), "--log", str(slog)]
        server = Proc(f"{name}-server", argv, ctx.logdir)
    else:
        server = h2_server(ctx, name, port, slog)
    try:
        server.wait_ready()
        with capture(pcap, f"tcp port {port}", ctx.logdir):
            run_client(f"{name}-client", [PY, str(PEERS / "http2_raw_clients.py"), mode, str(port)], ctx.logdir)
            if bad_server:
                server.p.wait(20)  # it exits by itself after its last write
            time.sleep(0.5)
    finally:
        server.stop()
    rst = check_h2(pcap, port)
    if not rst:
        raise ScenarioError(f"{name}: no RST_STREAM in the capture")
    log(f"  RST_STREAM frames: {rst}; {slog.name}: {jsonl_lines(slog)} messages (port {port})")
    return rst


def s_h2_tls_cancel_notification(ctx: Ctx) -> None:
    h2_sdk(ctx, "sdk-h2-tls-cancel-notification", 18111, "cancel-notification", tls=True)


def s_h2c_cancel_close_stream(ctx: Ctx) -> None:
    h2_sdk(ctx, "sdk-h2c-cancel-close-stream", 18112, "cancel-close-stream", tls=False)


def s_h2c_gzip_sse(ctx: Ctx) -> None:
    h2_sdk(ctx, "sdk-h2c-gzip-sse-cancel", 18123, "big-echo-then-cancel", tls=False, gzip="sse")


def s_h2c_gzip_json(ctx: Ctx) -> None:
    h2_sdk(ctx, "sdk-h2c-gzip-json-cancel", 18124, "big-echo-then-cancel", tls=False, gzip="json")


def s_h2c_resets_stream(ctx: Ctx) -> None:
    h2_raw(ctx, "h2c-client-resets-stream", 18113, "reset")


def s_h2c_stops_reading(ctx: Ctx) -> None:
    h2_raw(ctx, "h2c-client-stops-reading", 18114, "stops-reading")


def s_h2c_bad_server(ctx: Ctx) -> None:
    h2_raw(ctx, "bad-h2-server-writes-after-reset", 18115, "reset", bad_server=True)


def s_h2c_upgrade_curl(ctx: Ctx) -> None:
    """curl (`--http2` on an http:// URL: HTTP/1.1 `Upgrade: h2c`, RFC 7540 3.2) against the SDK server
    under hypercorn, in one curl run on one connection: GET /mcp (hypercorn upgrades only a request
    without a body; the 2026-07-28 server answers GET 405 on stream 1), then with `--next` a POST
    tools/call slow_write(steps=10) on stream 3 that curl gives up on after `--max-time 1.5`."""
    curl = shutil.which("curl")
    if curl is None:
        raise ScenarioError("curl is not installed (apt-get install curl)")
    name = "curl-h2c-upgrade-max-time"
    port = pick_port(18116)
    pcap, slog = OUT2 / f"{name}.pcapng", OUT2 / f"{name}.server.jsonl"
    body = ctx.tmp / "tools-call.json"
    body.write_bytes(tools_call_request(port, 1, "slow_write", {"steps": 10}).split(b"\r\n\r\n", 1)[1])
    url, accept = f"http://127.0.0.1:{port}/mcp", ["-H", "accept: application/json, text/event-stream"]
    common = ["--http2", "-sS", "-o", "/dev/null", *accept, "-H", f"mcp-protocol-version: {VERSION}"]
    post = ["-H", "content-type: application/json", "-H", "mcp-method: tools/call", "-H", "mcp-name: slow_write"]
    argv = [curl, *common, url, "--next", *common, *post, "--data-binary", f"@{body}", "--max-time", "1.5", url]
    server = h2_server(ctx, name, port, slog)
    try:
        server.wait_ready()
        with capture(pcap, f"tcp port {port}", ctx.logdir):
            done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
            (ctx.logdir / f"{name}-client.stderr").write_text(done.stderr)
            if done.returncode != 28:  # 28: the operation timed out, as asked
                raise ScenarioError(f"curl exited {done.returncode}: {done.stderr[-2000:]}")
            time.sleep(0.5)
    finally:
        server.stop()
    rst = check_h2(pcap, port, upgrade=True)
    log(f"  RST_STREAM frames: {rst}; {slog.name}: {jsonl_lines(slog)} messages (port {port})")


SCENARIOS: dict[str, Callable[[Ctx], None]] = {
    "sdk-http-clean": s_clean,
    "sdk-http-cancel-notification": s_cancel_notification,
    "sdk-http-cancel-close-stream": s_cancel_close_stream,
    "http-client-stops-reading": s_client_stops_reading,
    "bad-server-writes-after-disconnect": s_bad_server,
    "sdk-http-tls": s_tls,
    "sdk-legacy-sse": s_legacy_sse,
    "truncated": s_truncated,
    "unrelated-traffic": s_unrelated,
    "sdk-h2-tls-cancel-notification": s_h2_tls_cancel_notification,
    "sdk-h2c-cancel-close-stream": s_h2c_cancel_close_stream,
    "h2c-client-resets-stream": s_h2c_resets_stream,
    "h2c-client-stops-reading": s_h2c_stops_reading,
    "bad-h2-server-writes-after-reset": s_h2c_bad_server,
    "curl-h2c-upgrade-max-time": s_h2c_upgrade_curl,
    "sdk-http-gzip-json-cancel": s_gzip_json,
    "sdk-http-gzip-sse-cancel": s_gzip_sse,
    "sdk-h2c-gzip-sse-cancel": s_h2c_gzip_sse,
    "sdk-h2c-gzip-json-cancel": s_h2c_gzip_json,
}


def main() -> int:
    global OUT, OUT2
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="*", choices=list(SCENARIOS), help="run only these scenarios")
    ap.add_argument("--keep-logs", help="copy the peers' stderr logs into this directory")
    ap.add_argument("--out", help="write the captures here instead of sample_captures/http")
    args = ap.parse_args()
    if args.out:
        OUT = OUT2 = Path(args.out).resolve()
    if not shutil.which(TSHARK):
        print("tshark not found", file=sys.stderr)
        return 2
    OUT.mkdir(parents=True, exist_ok=True)
    OUT2.mkdir(parents=True, exist_ok=True)
    failed: list[str] = []
    with tempfile.TemporaryDirectory(prefix="cancelwire-capture-") as td:
        tmp = Path(td)
        logdir = tmp / "logs"
        logdir.mkdir()
        ctx = Ctx(logdir=logdir, tmp=tmp)
        for name, fn in SCENARIOS.items():
            if args.only and name not in args.only:
                continue
            if time.monotonic() - START > TOTAL_DEADLINE:
                log(f"{name}: SKIPPED, over the {TOTAL_DEADLINE}s budget")
                failed.append(name)
                continue
            log(f"{name}")
            try:
                fn(ctx)
            except Exception as exc:  # report and go on with the next scenario
                log(f"{name}: FAILED: {exc}")
                failed.append(name)
        if args.keep_logs:
            dest = Path(args.keep_logs)
            dest.mkdir(parents=True, exist_ok=True)
            for f in logdir.iterdir():
                shutil.copy(f, dest / f.name)
    os.sync()
    log(f"done: {len(failed)} failed {failed}" if failed else "done: all scenarios captured")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
