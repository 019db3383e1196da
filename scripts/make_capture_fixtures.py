#!/usr/bin/env python3
"""Regenerate the capture fixtures of the capture-only rules in tests/rules/<slug>/.

    .venv/bin/python scripts/make_capture_fixtures.py [--only NAME ...] [--out DIR] [--keep-logs DIR]

Needs root (or capture rights on ``lo``) and tshark; about a minute.  Every capture is real: tshark on
the loopback interface (``tcp port PORT``), peers bound to 127.0.0.1, each run bounded in time.  The
peers are, per scenario (each fixture directory's README.md says which one made which file):

* the real MCP Python SDK (``scripts/peers/http_sdk_server.py`` under uvicorn, and
  ``scripts/peers/http_sdk_client.py``) wherever the SDK itself does the thing;
* the existing hand-written peers in ``scripts/peers/`` (``http_bad_server.py``,
  ``http_raw_clients.py``) for the misbehaviour they already produce;
* hand-written peers defined here (raw sockets, labelled HAND-WRITTEN) where no SDK behaves that
  way: a raw 2025-11-25 / 2026-07-28 client that drives the SDK server step by step, and small
  deliberately misbehaving servers (run in a thread of this process).

Some files are derived from a real capture with Wireshark's own tools: a segment removed with
``editcap`` (a TCP gap), a damaged block appended (tshark complains), or gzip (a 16 MiB body).

The expected findings (``*.expect.toml``) are written by hand from the spec and the rule text, with
the frame numbers of the committed captures.  Regenerating changes frame numbers, ports and
timestamps: re-check every expect file against ``tshark -r FILE`` afterwards.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import shutil
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
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent / "peers"))

import capture_samples as cs  # reused: ports, processes, tshark capture, checks
from http_bad_server import sse_chunk

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "tests" / "rules"
PY = sys.executable
PEERS = ROOT / "scripts" / "peers"
EDITCAP = shutil.which("editcap") or "/usr/bin/editcap"
META_VERSION = "io.modelcontextprotocol/protocolVersion"
MAX_BODY = 16 << 20  # analyzer/readers/http/http1.py MAX_BODY_BYTES
SSE_HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
    b"transfer-encoding: chunked\r\nserver: cancelwire-fixture-server\r\n\r\n"
)
TERMINATOR = b"0\r\n\r\n"


def log(text: str) -> None:
    cs.log(text)


# ---------------------------------------------------------------------------------------------- HTTP bits


def meta_2026(token: int | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {
        META_VERSION: "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "cancelwire-fixture-client", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    if token is not None:
        meta["progressToken"] = token
    return meta


def request_bytes(port: int, method: str, body: bytes | None, headers: dict[str, str], path: str = "/mcp") -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Accept: application/json, text/event-stream"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    if body is not None:
        lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + (body or b"")


def jsonrpc(message: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **message}, separators=(",", ":")).encode()


class RawHttp:
    """HAND-WRITTEN HTTP/1.1 client connection (raw socket): one response at a time, chunked decoded."""

    def __init__(self, port: int, timeout: float = 10.0) -> None:
        self.port = port
        self.s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.raw = b""
        self.status = 0
        self.headers: dict[str, str] = {}
        self.body = b""
        self.done = False
        self._chunked = False
        self._left = 0
        self._crlf = False

    def send(self, method: str, body: bytes | None, headers: dict[str, str]) -> None:
        self.s.sendall(request_bytes(self.port, method, body, headers))
        self.status, self.headers, self.body, self.done = 0, {}, b"", False
        self._crlf = False

    def _recv(self) -> bool:
        data = self.s.recv(65536)
        if not data:
            return False
        self.raw += data
        return True

    def head(self) -> int:
        while b"\r\n\r\n" not in self.raw:
            if not self._recv():
                raise cs.ScenarioError("the server closed before a response head")
        head, _, self.raw = self.raw.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        self.status = int(lines[0].split()[1])
        self.headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
        self._chunked = self.headers.get("transfer-encoding", "").lower() == "chunked"
        self._left = int(self.headers.get("content-length", "0"))
        self.done = not self._chunked and self._left == 0
        return self.status

    def _decode(self) -> None:
        while not self.done:
            if not self._chunked:
                take = self.raw[: self._left]
                self.body, self.raw, self._left = self.body + take, self.raw[len(take) :], self._left - len(take)
                self.done = self._left == 0
                return
            if self._left > 0:
                take = self.raw[: self._left]
                self.body, self.raw, self._left = self.body + take, self.raw[len(take) :], self._left - len(take)
                if self._left:
                    return
                self._crlf = True
            if self._crlf:
                if len(self.raw) < 2:
                    return
                self.raw, self._crlf = self.raw[2:], False
            line, sep, rest = self.raw.partition(b"\r\n")
            if not sep:
                return
            size = int(line.split(b";")[0], 16)
            if size == 0:
                if not rest.startswith(b"\r\n"):
                    return
                self.raw, self.done = rest[2:], True
                return
            self.raw, self._left = rest, size

    def until(self, done: Callable[[bytes], bool]) -> bytes:
        """Read the body until `done(body)` or the end of the response."""
        self._decode()
        while not done(self.body) and not self.done:
            if not self._recv():
                break
            self._decode()
        return self.body

    def rest(self) -> bytes:
        return self.until(lambda _b: False)

    def close(self) -> None:
        self.s.close()


def expect(c: RawHttp, status: int, what: str) -> None:
    """The response head of what `c` just sent has this status, or the scenario fails."""
    if c.head() != status:
        raise cs.ScenarioError(f"{what} got {c.status}, not {status}")


def handshake_2025(a: RawHttp) -> dict[str, str]:
    """HAND-WRITTEN 2025-11-25 client set-up on `a`: initialize (200 with Mcp-Session-Id), then
    notifications/initialized (202), on one keep-alive connection. Returns the headers every later
    request of the session carries."""
    params = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "cancelwire-fixture-client", "version": "0"},
    }
    a.send("POST", jsonrpc({"id": 1, "method": "initialize", "params": params}), {})
    expect(a, 200, "initialize")
    a.rest()
    hdrs = {"Mcp-Session-Id": a.headers.get("mcp-session-id", ""), "MCP-Protocol-Version": "2025-11-25"}
    a.send("POST", jsonrpc({"method": "notifications/initialized"}), hdrs)
    expect(a, 202, "initialized")
    a.rest()
    return hdrs


def call_tool(a: RawHttp, req_id: int, tool: str, arguments: dict[str, Any], hdrs: dict[str, str] | None) -> None:
    """POST tools/call with progress token `req_id`: in the session of `hdrs` (2025-11-25), or at
    2026-07-28 (no session, the revision in `_meta` and the Mcp-Method/Mcp-Name headers) when None."""
    if hdrs is None:
        meta = meta_2026(token=req_id)
        hdrs = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool}
    else:
        meta = {"progressToken": req_id}
    params = {"name": tool, "arguments": arguments, "_meta": meta}
    a.send("POST", jsonrpc({"id": req_id, "method": "tools/call", "params": params}), hdrs)


def post_cancel(port: int, req_id: int, hdrs: dict[str, str]) -> None:
    """POST notifications/cancelled for `req_id` on a connection of its own; expects 202."""
    b = RawHttp(port)
    cancel = {"method": "notifications/cancelled", "params": {"requestId": req_id, "reason": "caller cancelled"}}
    b.send("POST", jsonrpc(cancel), hdrs)
    expect(b, 202, "the cancel")
    b.rest()
    b.close()


def read_request(conn: socket.socket) -> tuple[str, dict[str, str], bytes]:
    """Server side: one request head and its Content-Length body (hand-written servers only)."""
    raw = b""
    while b"\r\n\r\n" not in raw:
        data = conn.recv(65536)
        if not data:
            raise cs.ScenarioError("the client closed before a request")
        raw += data
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        data = conn.recv(1 << 20)
        if not data:
            break
        body += data
    return lines[0], headers, body


def wait_fin(conn: socket.socket, timeout: float = 5.0) -> None:
    conn.settimeout(timeout)
    while conn.recv(65536):
        pass


def progress(token: int, n: int, total: int = 4) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {"progressToken": token, "progress": n, "total": total, "message": f"step {n}"},
    }


def result(req_id: int, text: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": req_id, "result": {"content": [{"type": "text", "text": text}], "isError": False}}


@contextlib.contextmanager
def hand_server(serve: Callable[[socket.socket], None], port: int) -> Iterator[threading.Thread]:
    """A HAND-WRITTEN server in a thread of this process; `serve` gets the listening socket."""
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("127.0.0.1", port))
    lsock.listen(8)
    lsock.settimeout(15)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            serve(lsock)
        except BaseException as exc:  # reported by the scenario
            errors.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    try:
        yield t
        t.join(15)
    finally:
        lsock.close()
    if t.is_alive():
        raise cs.ScenarioError("the hand-written server did not finish in time")
    if errors:
        raise cs.ScenarioError(f"the hand-written server failed: {errors[0]!r}")


@contextlib.contextmanager
def sdk_server(ctx: Ctx, name: str, port: int, extra: list[str] | None = None) -> Iterator[cs.Proc]:
    """The real SDK server (scripts/peers/http_sdk_server.py); its JSONL log stays in the temp dir."""
    server = cs.Proc(
        f"{name}-server",
        [
            PY,
            str(PEERS / "http_sdk_server.py"),
            "--port",
            str(port),
            "--log",
            str(ctx.tmp / f"{name}.server.jsonl"),
            "--max-seconds",
            "40",
            *(extra or []),
        ],
        ctx.logdir,
    )
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


# ---------------------------------------------------------------------------------------------- context


@dataclass
class Ctx:
    logdir: Path
    tmp: Path
    out: Path

    def path(self, slug: str, name: str) -> Path:
        d = self.out / slug
        d.mkdir(parents=True, exist_ok=True)
        return d / name


def shown(path: Path) -> str:
    return str(path.relative_to(path.parents[1]))


def copy(src: Path, dst: Path) -> None:
    shutil.copyfile(src, dst)
    log(f"  -> {shown(dst)}")


def frames(path: Path, display_filter: str) -> list[int]:
    return [int(x) for x in cs.tshark_fields(path, display_filter, ["frame.number"])]


def packets(path: Path) -> int:
    return len(cs.tshark_fields(path, "frame", ["frame.number"]))


# ---------------------------------------------------------------------------------------------- scenarios


def s_sdk_close_stream(ctx: Ctx) -> None:
    """Real SDK client and server at 2026-07-28: the client cancels by closing the stream, the server
    stops.  Clean for write-after-disconnect; source of the http-unreadable and tshark-error files."""
    port = cs.pick_port(18391)
    pcap = ctx.tmp / "sdk-close-stream.pcapng"
    with sdk_server(ctx, "sdk-close-stream", port), cs.capture(pcap, f"tcp port {port}", ctx.logdir):
        cs.run_client(
            "sdk-close-stream-client",
            [PY, str(PEERS / "http_sdk_client.py"), "cancel-close-stream", f"http://127.0.0.1:{port}/mcp"],
            ctx.logdir,
        )
    cs.check_capture(pcap)
    copy(pcap, ctx.path("write-after-disconnect", "clean.pcapng"))

    # http-unreadable: the same capture, and a copy with the segment that carried progress 2 cut out
    copy(pcap, ctx.path("http-unreadable", "clean.pcapng"))
    cut = frames(pcap, 'tcp.payload contains "\\"progress\\":2"')
    if len(cut) != 1:
        raise cs.ScenarioError(f"expected one frame carrying progress 2, found {cut}")
    gap = ctx.path("http-unreadable", "triggers.pcapng")
    subprocess.run([EDITCAP, str(pcap), str(gap), str(cut[0])], check=True, capture_output=True, timeout=30)
    log(f"  -> {shown(gap)}: frame {cut[0]} removed with editcap")

    # tshark-error: the same capture, and a copy ending in a damaged block (an EPB whose total length,
    # 8, is below the minimum of 32: what a writer that died inside a block header leaves behind)
    copy(pcap, ctx.path("tshark-error", "clean.pcapng"))
    damaged = ctx.path("tshark-error", "triggers.pcapng")
    damaged.write_bytes(pcap.read_bytes() + struct.pack("<II", 6, 8) + bytes(8))
    cp = subprocess.run([cs.TSHARK, "-r", str(damaged)], capture_output=True, text=True, timeout=60)
    if "damaged or corrupt" not in cp.stderr or not cp.stdout.strip():
        raise cs.ScenarioError(f"tshark did not both read and complain: {cp.stderr}")
    log(f"  -> {shown(damaged)}: damaged trailing block appended")


def s_bad_server_half_close(ctx: Ctx) -> None:
    """The existing hand-written bad server and half-close client: writes after the client's FIN."""
    port = cs.pick_port(18392)
    pcap = ctx.tmp / "bad-server.pcapng"
    server = cs.Proc(
        "bad-server",
        [
            PY,
            str(PEERS / "http_bad_server.py"),
            "--port",
            str(port),
            "--log",
            str(ctx.tmp / "bad-server.server.jsonl"),
            "--max-seconds",
            "20",
        ],
        ctx.logdir,
    )
    try:
        server.wait_ready()
        with cs.capture(pcap, f"tcp port {port}", ctx.logdir):
            cs.run_client("half-close", [PY, str(PEERS / "http_raw_clients.py"), "half-close", str(port)], ctx.logdir)
            server.p.wait(20)
    finally:
        server.stop()
    cs.check_capture(pcap)
    copy(pcap, ctx.path("write-after-disconnect", "triggers.pcapng"))


def s_stops_reading(ctx: Ctx) -> None:
    """Real SDK server (small SO_SNDBUF), existing hand-written client that stops reading for 3 s."""
    port = cs.pick_port(18393)
    pcap = ctx.tmp / "stops-reading.pcapng"
    with sdk_server(ctx, "stops-reading", port, ["--sndbuf", "4096"]), cs.capture(pcap, f"tcp port {port}", ctx.logdir):
        cs.run_client("stops-reading", [PY, str(PEERS / "http_raw_clients.py"), "stops-reading", str(port)], ctx.logdir)
        time.sleep(0.3)
    cs.check_capture(pcap)
    if not frames(pcap, "tcp.analysis.zero_window"):
        raise cs.ScenarioError("no zero window in the capture")
    copy(pcap, ctx.path("stream-left-open-after-abandon", "triggers.pcapng"))


def raw_2025_client(port: int, how: str) -> None:
    """HAND-WRITTEN 2025-11-25 client against the real SDK server: initialize and initialized on one
    keep-alive connection, then tools/call slow_write(steps=10) id 2 on it; after 2 progress events
    either POST notifications/cancelled on a second connection and read the stream to its end
    (`how="cancel"`, what the SDK client does too), or just close the connection without a cancel
    (`how="disconnect"`, which no SDK client does at 2025-11-25)."""
    a = RawHttp(port)
    hdrs = handshake_2025(a)
    call_tool(a, 2, "slow_write", {"steps": 10}, hdrs)
    expect(a, 200, "tools/call")
    a.until(lambda b: b.count(b"notifications/progress") >= 2)
    if how == "disconnect":
        a.close()
        time.sleep(0.5)
        return
    post_cancel(port, 2, hdrs)
    a.rest()
    a.close()
    time.sleep(0.3)


def s_sdk_2025(ctx: Ctx) -> None:
    for how in ("cancel", "disconnect"):
        port = cs.pick_port(18394)
        pcap = ctx.tmp / f"sdk-2025-{how}.pcapng"
        with sdk_server(ctx, f"sdk-2025-{how}", port), cs.capture(pcap, f"tcp port {port}", ctx.logdir):
            raw_2025_client(port, how)
        cs.check_capture(pcap)
        if how == "cancel":
            copy(pcap, ctx.path("stream-left-open-after-abandon", "clean.pcapng"))
        else:
            copy(pcap, ctx.path("cancel-mechanism-mismatch", "triggers-disconnect.pcapng"))


def s_capture_ends_open(ctx: Ctx) -> None:
    """Real SDK server at 2026-07-28, hand-written client: the capture stops while slow_write streams."""
    port = cs.pick_port(18395)
    pcap = ctx.tmp / "ends-open.pcapng"
    with sdk_server(ctx, "ends-open", port):
        a = None
        with cs.capture(pcap, f"tcp port {port}", ctx.logdir):
            a = RawHttp(port)
            call_tool(a, 1, "slow_write", {"steps": 10}, None)
            expect(a, 200, "tools/call")
            a.until(lambda b: b.count(b"notifications/progress") >= 2)
            # leaving the block stops tshark (0.6 s later) while the stream is still open
        a.close()
    cs.check_capture(pcap)
    copy(pcap, ctx.path("capture-ended-with-stream-open", "triggers.pcapng"))


def s_result_then_hold(ctx: Ctx) -> None:
    """HAND-WRITTEN server: answers tools/call on an SSE stream, then holds the stream open (no
    terminator, no FIN) until the capture has stopped."""
    port = cs.pick_port(18396)
    pcap = ctx.tmp / "result-then-hold.pcapng"
    release = threading.Event()

    def serve(lsock: socket.socket) -> None:
        conn, _ = lsock.accept()
        with conn:
            _, _, body = read_request(conn)
            req = json.loads(body)
            conn.sendall(SSE_HEAD)
            time.sleep(0.05)
            conn.sendall(sse_chunk(progress(1, 1, 1)))
            time.sleep(0.05)
            conn.sendall(sse_chunk(result(req["id"], "done")))
            release.wait(10)

    with hand_server(serve, port):
        with cs.capture(pcap, f"tcp port {port}", ctx.logdir):
            a = RawHttp(port)
            call_tool(a, 1, "quick", {}, None)
            a.head()
            a.until(lambda b: b'"result"' in b)
        release.set()
        a.close()
    cs.check_capture(pcap)
    copy(pcap, ctx.path("capture-ended-with-stream-open", "clean.pcapng"))


def other_stream(ctx: Ctx, name: str, revision: str, via: str, leak: bool) -> Path:
    """HAND-WRITTEN server and client.  The client opens a second stream (`via="get"`: the GET stream,
    2025-11-25 with a session id; `via="post"`: the SSE reply to a second POST, tools/call id 2), POSTs
    tools/call id 1, reads progress 1 on its stream, then closes that connection (FIN).  The server
    waits for the FIN, closes its side, and then on the other stream sends, if `leak`, progress 2 and
    the result for id 1 (the violation); otherwise only what belongs there (a tools/list_changed
    notification on the GET stream, the result of id 2 on the second POST stream)."""
    port = cs.pick_port(18397)
    pcap = ctx.tmp / f"{name}.pcapng"
    closed = threading.Event()
    second_ready = threading.Event()

    def serve(lsock: socket.socket) -> None:
        conns: dict[str, tuple[socket.socket, dict[str, Any] | None]] = {}
        for _ in range(2):
            conn, _ = lsock.accept()
            line, _, body = read_request(conn)
            req = json.loads(body) if body else None
            conn.sendall(SSE_HEAD)
            if line.startswith("GET") or (req is not None and req.get("id") == 2):
                conns["other"] = (conn, req)
                second_ready.set()
            else:
                conns["first"] = (conn, req)
                time.sleep(0.05)
                conn.sendall(sse_chunk(progress(1, 1)))
        first, _ = conns["first"]
        other, other_req = conns["other"]
        wait_fin(first)
        first.close()
        closed.set()
        time.sleep(0.2)
        if leak:
            other.sendall(sse_chunk(progress(1, 2)))
            time.sleep(0.05)
            other.sendall(sse_chunk(result(1, "done anyway")))
            time.sleep(0.05)
        if other_req is not None:
            other.sendall(sse_chunk(result(other_req["id"], "second call done")))
        else:
            other.sendall(sse_chunk({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}))
        time.sleep(0.05)
        other.sendall(TERMINATOR)
        wait_fin(other)
        other.close()

    session = (
        None if revision == "2026-07-28" else {"MCP-Protocol-Version": revision, "Mcp-Session-Id": "fixture-session-1"}
    )
    with hand_server(serve, port), cs.capture(pcap, f"tcp port {port}", ctx.logdir):
        first = RawHttp(port)
        call_tool(first, 1, "slow", {}, session)
        first.head()
        first.until(lambda b: b"notifications/progress" in b)
        other = RawHttp(port)
        if via == "get":
            other.send("GET", None, session or {"MCP-Protocol-Version": revision})
        else:
            call_tool(other, 2, "other", {}, session)
        other.head()
        second_ready.wait(5)
        time.sleep(0.1)
        first.close()  # FIN: the client leaves the stream of id 1
        closed.wait(5)
        other.rest()
        other.close()
    cs.check_capture(pcap)
    return pcap


def s_message_after_disconnect(ctx: Ctx) -> None:
    slug = "message-after-disconnect"
    copy(other_stream(ctx, "mad-post-leak", "2026-07-28", "post", True), ctx.path(slug, "triggers.pcapng"))
    copy(other_stream(ctx, "mad-get-leak", "2025-11-25", "get", True), ctx.path(slug, "triggers-get-2025.pcapng"))
    copy(other_stream(ctx, "mad-post-clean", "2026-07-28", "post", False), ctx.path(slug, "clean.pcapng"))


def sse_cut(ctx: Ctx, name: str, complete: bool) -> Path:
    """HAND-WRITTEN server: one complete progress event, then a second event that ends after its
    `data:` line without the blank line (`complete=False`) or with it (`complete=True`), then the
    server closes the connection without the chunked terminator."""
    port = cs.pick_port(18398)
    pcap = ctx.tmp / f"{name}.pcapng"

    def serve(lsock: socket.socket) -> None:
        conn, _ = lsock.accept()
        with conn:
            read_request(conn)
            conn.sendall(SSE_HEAD)
            time.sleep(0.05)
            conn.sendall(sse_chunk(progress(1, 1)))
            time.sleep(0.05)
            event = b"event: message\r\ndata: " + json.dumps(progress(1, 2), separators=(",", ":")).encode()
            event += b"\r\n\r\n" if complete else b"\r\n"
            conn.sendall(f"{len(event):x}\r\n".encode() + event + b"\r\n")
            time.sleep(0.05)

    with hand_server(serve, port), cs.capture(pcap, f"tcp port {port}", ctx.logdir):
        a = RawHttp(port)
        call_tool(a, 1, "slow", {}, None)
        a.head()
        a.rest()  # until the server's FIN
        a.close()
    cs.check_capture(pcap)
    return pcap


def s_sse_cut(ctx: Ctx) -> None:
    copy(sse_cut(ctx, "sse-cut", False), ctx.path("sse-event-cut-off", "triggers.pcapng"))
    copy(sse_cut(ctx, "sse-whole", True), ctx.path("sse-event-cut-off", "clean.pcapng"))


def s_tls(ctx: Ctx) -> None:
    """Real SDK client and server over TLS (as sample_captures' sdk-http-tls): the same capture is the
    trigger (no keys beside it) and the clean file (with its .keys)."""
    port = cs.pick_port(18399)
    pcap, keys = ctx.tmp / "tls.pcapng", ctx.tmp / "tls.keys"
    cert, key = cs.make_cert(ctx.tmp)
    with (
        sdk_server(ctx, "tls", port, ["--tls-cert", str(cert), "--tls-key", str(key)]),
        cs.capture(pcap, f"tcp port {port}", ctx.logdir),
    ):
        cs.run_client(
            "tls-client",
            [
                PY,
                str(PEERS / "http_sdk_client.py"),
                "cancel-close-stream",
                f"https://127.0.0.1:{port}/mcp",
                "--cafile",
                str(cert),
                "--keylog",
                str(keys),
            ],
            ctx.logdir,
        )
    if not keys.exists() or "CLIENT_TRAFFIC_SECRET_0" not in keys.read_text():
        raise cs.ScenarioError("no TLS 1.3 secrets in the key log")
    cs.check_capture(pcap, extra=["-o", f"tls.keylog_file:{keys}", "-d", f"tcp.port=={port},tls"])
    copy(pcap, ctx.path("capture-encrypted", "triggers.pcapng"))
    copy(pcap, ctx.path("capture-encrypted", "clean.pcapng"))
    copy(keys, ctx.path("capture-encrypted", "clean.keys"))


def s_http_errors(ctx: Ctx) -> None:
    """Real SDK server, hand-written requests (curl-like, one connection each):
    * get-405: GET /mcp at 2026-07-28, which the SDK answers 405 with an empty body (no JSON-RPC);
    * get-405-ping: the same GET, then a POST tools/list (2026-07-28) that gets its JSON result;
    * unknown-session: POST tools/list at 2025-11-25 with a session id the server never issued: 404."""
    flows: dict[str, list[tuple[str, bytes | None, dict[str, str], int]]] = {
        "get-405": [("GET", None, {"MCP-Protocol-Version": "2026-07-28"}, 405)],
        "get-405-ping": [
            ("GET", None, {"MCP-Protocol-Version": "2026-07-28"}, 405),
            (
                "POST",
                jsonrpc({"id": 1, "method": "tools/list", "params": {"_meta": meta_2026()}}),
                {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"},
                200,
            ),
        ],
        "unknown-session": [
            (
                "POST",
                jsonrpc({"id": 7, "method": "tools/list"}),
                {"MCP-Protocol-Version": "2025-11-25", "Mcp-Session-Id": "0123456789abcdef0123456789abcdef"},
                404,
            ),
        ],
    }
    made: dict[str, Path] = {}
    for name, steps in flows.items():
        port = cs.pick_port(18400)
        pcap = ctx.tmp / f"{name}.pcapng"
        with sdk_server(ctx, name, port), cs.capture(pcap, f"tcp port {port}", ctx.logdir):
            for method, body, headers, want in steps:
                c = RawHttp(port)
                c.send(method, body, {**headers, "Connection": "close"})
                if c.head() != want:
                    raise cs.ScenarioError(f"{name}: {method} got {c.status}, not {want}")
                c.rest()
                c.close()
                time.sleep(0.05)
        cs.check_capture(pcap)
        made[name] = pcap
    copy(made["get-405"], ctx.path("capture-no-mcp", "triggers.pcapng"))
    copy(made["get-405-ping"], ctx.path("capture-no-mcp", "clean.pcapng"))
    copy(made["unknown-session"], ctx.path("http-error-status", "triggers.pcapng"))
    copy(made["get-405-ping"], ctx.path("http-error-status", "clean.pcapng"))


def oversized(ctx: Ctx, name: str, size: int) -> Path:
    """HAND-WRITTEN client and server: POST tools/call echo whose JSON body is exactly `size` bytes
    (a padded text argument); the server reads it all and answers a small application/json result."""
    port = cs.pick_port(18401)
    pcap = ctx.tmp / f"{name}.pcapng"
    skeleton = {
        "id": 1,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": ""}, "_meta": meta_2026()},
    }
    pad = size - len(jsonrpc(skeleton))
    skeleton["params"]["arguments"]["text"] = "x" * pad  # type: ignore[index]
    body = jsonrpc(skeleton)
    if len(body) != size:
        raise cs.ScenarioError(f"body is {len(body)} bytes, not {size}")

    def serve(lsock: socket.socket) -> None:
        conn, _ = lsock.accept()
        with conn:
            _, _, got = read_request(conn)
            out = jsonrpc({"id": 1, "result": {"content": [{"type": "text", "text": f"{len(got)} bytes"}]}})
            conn.sendall(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                + f"content-length: {len(out)}\r\nconnection: close\r\n\r\n".encode()
                + out
            )
            wait_fin(conn)

    with hand_server(serve, port), cs.capture(pcap, f"tcp port {port}", ctx.logdir):
        a = RawHttp(port)
        wire = request_bytes(
            port, "POST", body, {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"}
        )
        for at in range(0, len(wire), 128 << 10):  # paced, so dumpcap's buffer drops nothing
            a.s.sendall(wire[at : at + (128 << 10)])
            time.sleep(0.01)
        a.head()
        a.rest()
        a.close()
    sent = sum(int(x) for x in cs.tshark_fields(pcap, f"tcp.dstport == {port}", ["tcp.len"]))
    if sent < len(wire):
        raise cs.ScenarioError(f"{name}: only {sent} of {len(wire)} request bytes were captured")
    gz = ctx.tmp / f"{name}.pcapng.gz"
    with pcap.open("rb") as src, gzip.open(gz, "wb", compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)
    log(f"  {name}: {packets(pcap)} packets, {pcap.stat().st_size} bytes, {gz.stat().st_size} gzipped")
    if gz.stat().st_size > 1_000_000:
        raise cs.ScenarioError(f"{gz.name} is over 1 MB")
    return gz


def s_oversized(ctx: Ctx) -> None:
    copy(oversized(ctx, "oversized", MAX_BODY + 1), ctx.path("oversized-http-message", "triggers.pcapng.gz"))
    copy(oversized(ctx, "at-limit", MAX_BODY), ctx.path("oversized-http-message", "clean.pcapng.gz"))


def s_posted_cancel_held(ctx: Ctx) -> None:
    """HAND-WRITTEN 2025-11-25 server and client (the real SDK server ends a cancelled stream within
    milliseconds, so it cannot show this).  On one keep-alive connection: initialize (JSON, session
    id), notifications/initialized (202), tools/call slow id 2 answered on an SSE stream with progress
    1 and 2.  The client POSTs notifications/cancelled for id 2 on a second connection (202) and
    closes that connection; the server sends nothing more on the stream of id 2 (no result, no
    -32800) for HOLD seconds after the cancel, then ends the SSE body (chunked terminator) and closes
    after the client's FIN."""
    hold = 2.0
    port = cs.pick_port(18402)
    pcap = ctx.tmp / "posted-cancel-held.pcapng"
    sid = "fixture-session-2"
    json_head = (
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {n}\r\n"
        "mcp-session-id: " + sid + "\r\nserver: cancelwire-fixture-server\r\n\r\n"
    )
    accepted = b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\nserver: cancelwire-fixture-server\r\n\r\n"

    def serve(lsock: socket.socket) -> None:
        a, _ = lsock.accept()
        with a:
            _, _, body = read_request(a)  # initialize
            out = jsonrpc(
                {
                    "id": json.loads(body)["id"],
                    "result": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "cancelwire-fixture-server", "version": "0"},
                    },
                }
            )
            a.sendall(json_head.format(status="200 OK", n=len(out)).encode() + out)
            read_request(a)  # notifications/initialized
            a.sendall(accepted)
            _, _, body = read_request(a)  # tools/call id 2
            token = json.loads(body)["params"]["_meta"]["progressToken"]
            a.sendall(SSE_HEAD)
            for n in (1, 2):
                time.sleep(0.05)
                a.sendall(sse_chunk(progress(token, n, 10)))
            b, _ = lsock.accept()
            with b:
                read_request(b)  # notifications/cancelled
                cancelled = time.monotonic()
                b.sendall(accepted)
                wait_fin(b)
            time.sleep(max(0.0, cancelled + hold - time.monotonic()))
            a.sendall(TERMINATOR)  # the stream of id 2 ends, 2 s after the cancel, with no reply
            wait_fin(a)

    with hand_server(serve, port), cs.capture(pcap, f"tcp port {port}", ctx.logdir):
        a = RawHttp(port)
        hdrs = handshake_2025(a)
        call_tool(a, 2, "slow", {}, hdrs)
        expect(a, 200, "tools/call")
        a.until(lambda b: b.count(b"notifications/progress") >= 2)
        post_cancel(port, 2, hdrs)
        a.rest()  # the client keeps reading: it is the server that holds the stream
        if b'"result"' in a.body or b'"error"' in a.body:
            raise cs.ScenarioError("the server answered id 2")
        a.close()
    cs.check_capture(pcap)
    copy(pcap, ctx.path("stream-left-open-after-abandon", "triggers-posted-cancel.pcapng"))


def s_broken_http(ctx: Ctx) -> None:
    """HAND-WRITTEN server (no real peer sends malformed HTTP): answers a 2026-07-28 POST tools/list
    with a response head whose second header line has no colon, then closes the connection."""
    port = cs.pick_port(18403)
    pcap = ctx.tmp / "broken-http.pcapng"
    out = jsonrpc({"id": 1, "result": {"tools": []}})
    broken = (
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nthis line is not a header\r\n"
        + f"content-length: {len(out)}\r\n\r\n".encode()
        + out
    )

    def serve(lsock: socket.socket) -> None:
        conn, _ = lsock.accept()
        with conn:
            read_request(conn)
            conn.sendall(broken)  # one segment: the parse error's frame
            time.sleep(0.05)
            conn.shutdown(socket.SHUT_WR)
            wait_fin(conn)

    with hand_server(serve, port), cs.capture(pcap, f"tcp port {port}", ctx.logdir):
        a = RawHttp(port)
        a.send(
            "POST",
            jsonrpc({"id": 1, "method": "tools/list", "params": {"_meta": meta_2026()}}),
            {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"},
        )
        got = b""
        while data := a.s.recv(65536):  # read raw until the server's FIN
            got += data
        if got != broken:
            raise cs.ScenarioError(f"unexpected response {got!r}")
        a.close()
    cs.check_capture(pcap)
    copy(pcap, ctx.path("http-unreadable", "triggers-parse-error.pcapng"))


# ---------------------------------------------------------------------------------------------- derived by hand


def pcap_records(path: Path, tmp: Path) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    """A capture as classic pcap (converted with editcap): the file header and (record header, bytes)."""
    classic = tmp / (path.stem + ".classic.pcap")
    subprocess.run([EDITCAP, "-F", "pcap", str(path), str(classic)], check=True, capture_output=True, timeout=30)
    raw = classic.read_bytes()
    header, at, records = raw[:24], 24, []
    while at + 16 <= len(raw):
        caplen = struct.unpack("<I", raw[at + 8 : at + 12])[0]
        records.append((raw[at : at + 16], raw[at + 16 : at + 16 + caplen]))
        at += 16 + caplen
    return header, records


def write_pcap(path: Path, header: bytes, records: list[tuple[bytes, bytes]]) -> None:
    path.write_bytes(header + b"".join(h + d for h, d in records))
    log(f"  -> {shown(path)}")


def with_seq(packet: bytes, seq: int) -> bytes:
    """An Ethernet/IPv4/TCP packet with its TCP sequence number replaced (checksums are not checked)."""
    tcp = 14 + (packet[14] & 0x0F) * 4
    return packet[: tcp + 4] + struct.pack(">I", seq) + packet[tcp + 8 :]


def s_hand_edited(ctx: Ctx) -> None:
    """HAND-EDITED copies of write-after-disconnect/clean.pcapng (real SDK client and server) for what
    no peer on loopback produces: a snaplen that cuts payloads (editcap -s 96), a retransmission whose
    bytes differ from the original (frame 19 copied after itself with progress 2 changed to 9), the
    same copy unchanged (a true retransmission), and client data after the client's FIN (frame 13
    copied after the FIN, frame 23, with its sequence number set to the FIN's)."""
    src = RULES / "write-after-disconnect" / "clean.pcapng"
    snap = ctx.path("capture-snaplen-truncated", "triggers.pcapng")
    subprocess.run([EDITCAP, "-s", "96", str(src), str(snap)], check=True, capture_output=True, timeout=30)
    log(f"  -> {shown(snap)}: editcap -s 96")
    copy(src, ctx.path("capture-snaplen-truncated", "clean.pcapng"))
    header, records = pcap_records(src, ctx.tmp)
    h19, p19 = records[18]
    if p19.count(b'"progress":2') != 1:
        raise cs.ScenarioError("frame 19 does not carry progress 2")
    changed = [*records[:19], (h19, p19.replace(b'"progress":2', b'"progress":9')), *records[19:]]
    write_pcap(ctx.path("tcp-overlap-conflict", "triggers.pcap"), header, changed)
    write_pcap(ctx.path("tcp-overlap-conflict", "clean.pcap"), header, [*records[:19], records[18], *records[19:]])
    p23 = records[22][1]
    fin_seq = struct.unpack(">I", p23[14 + (p23[14] & 0x0F) * 4 + 4 :][:4])[0]
    h13, p13 = records[12]
    after = [*records[:23], (h13, with_seq(p13, fin_seq)), *records[23:]]
    write_pcap(ctx.path("data-after-fin", "triggers.pcap"), header, after)
    write_pcap(ctx.path("data-after-fin", "clean.pcap"), header, records)


def body_cut(ctx: Ctx, name: str, missing: int) -> Path:
    """HAND-WRITTEN server (no SDK announces more bytes than it sends): answers a 2026-07-28 POST
    tools/call with an application/json result whose Content-Length is `missing` bytes more than the
    body it sends, then closes the connection (FIN)."""
    port = cs.pick_port(18404)
    pcap = ctx.tmp / f"{name}.pcapng"
    out = jsonrpc(result(1, "done"))

    def serve(lsock: socket.socket) -> None:
        conn, _ = lsock.accept()
        with conn:
            read_request(conn)
            head = f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {len(out) + missing}\r\n\r\n"
            conn.sendall(head.encode() + out)
            time.sleep(0.05)
            conn.shutdown(socket.SHUT_WR)
            wait_fin(conn)

    with hand_server(serve, port), cs.capture(pcap, f"tcp port {port}", ctx.logdir):
        a = RawHttp(port)
        call_tool(a, 1, "quick", {}, None)
        a.head()
        while a.s.recv(65536):  # until the server's FIN
            pass
        a.close()
    cs.check_capture(pcap)
    return pcap


def s_body_cut(ctx: Ctx) -> None:
    copy(body_cut(ctx, "body-cut", 40), ctx.path("response-body-cut", "triggers.pcapng"))
    copy(body_cut(ctx, "body-whole", 0), ctx.path("response-body-cut", "clean.pcapng"))


def s_h2_hand_edited(ctx: Ctx) -> None:
    """HAND-EDITED copy of sample_captures/http2/h2c-client-resets-stream.pcapng (the real SDK server under
    hypercorn, a hand-written h2c client): the HPACK block of the server's response HEADERS frame starts
    with an index no table holds (0xff 0xff 0x0f = 2174), bad HPACK that no real peer sends."""
    src = ROOT / "sample_captures" / "http2" / "h2c-client-resets-stream.pcapng"
    copy(src, ctx.path("http2-unreadable", "clean.pcapng"))
    header, records = pcap_records(src, ctx.tmp)
    head = b"\x01\x04\x00\x00\x00\x01\x88"  # HEADERS, END_HEADERS, stream 1, then :status 200 (index 8)
    at = next((i for i, (_, packet) in enumerate(records) if head in packet), None)
    if at is None:
        raise cs.ScenarioError("no response HEADERS frame starting with :status 200 on stream 1")
    h, packet = records[at]
    where = packet.index(head) + len(head) - 1
    edited = (h, packet[:where] + b"\xff\xff\x0f" + packet[where + 3 :])
    write_pcap(ctx.path("http2-unreadable", "triggers.pcap"), header, [*records[:at], edited, *records[at + 1 :]])


SCENARIOS: dict[str, Callable[[Ctx], None]] = {
    "sdk-close-stream": s_sdk_close_stream,
    "bad-server-half-close": s_bad_server_half_close,
    "stops-reading": s_stops_reading,
    "sdk-2025": s_sdk_2025,
    "capture-ends-open": s_capture_ends_open,
    "result-then-hold": s_result_then_hold,
    "message-after-disconnect": s_message_after_disconnect,
    "sse-cut": s_sse_cut,
    "tls": s_tls,
    "http-errors": s_http_errors,
    "oversized": s_oversized,
    "posted-cancel-held": s_posted_cancel_held,
    "broken-http": s_broken_http,
    "hand-edited": s_hand_edited,
    "body-cut": s_body_cut,
    "h2-hand-edited": s_h2_hand_edited,
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="*", choices=list(SCENARIOS), help="run only these scenarios")
    ap.add_argument("--out", help="write the fixture directories here instead of tests/rules")
    ap.add_argument("--keep-logs", help="copy the peers' stderr logs into this directory")
    args = ap.parse_args()
    out = Path(args.out).resolve() if args.out else RULES
    failed: list[str] = []
    with tempfile.TemporaryDirectory(prefix="cancelwire-fixtures-") as td:
        tmp = Path(td)
        ctx = Ctx(logdir=tmp / "logs", tmp=tmp, out=out)
        ctx.logdir.mkdir()
        for name, fn in SCENARIOS.items():
            if args.only and name not in args.only:
                continue
            log(name)
            try:
                fn(ctx)
            except Exception as exc:  # report and go on with the next scenario
                log(f"{name}: FAILED: {exc}")
                failed.append(name)
        if args.keep_logs:
            dest = Path(args.keep_logs)
            dest.mkdir(parents=True, exist_ok=True)
            for f in ctx.logdir.iterdir():
                shutil.copy(f, dest / f.name)
    log(f"done: {len(failed)} failed {failed}" if failed else "done: all fixtures captured")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
