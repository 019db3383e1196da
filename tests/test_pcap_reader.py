"""The capture reader against real tshark captures of tiny loopback HTTP peers made in the test.

Each scenario is a scripted raw-socket server and client on 127.0.0.1, captured with
`tshark -i lo -f "tcp port P" -w FILE`. Events are compared exactly (kind, direction, id, method,
stream), and the frame of every message and TCP event is checked against tshark's own view of that
frame (its payload holds the message's last bytes; FIN/RST/zero-window flags are really there).
"""

from __future__ import annotations

import contextlib
import gzip
import json
import shutil
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import pytest
from cancelwire import audit
from cancelwire.errors import InputError
from cancelwire.model import Anomaly, Event, MessageEvent, SessionStart, TransportEvent
from cancelwire.readers import InputSource, ReadOptions
from cancelwire.readers.base import CaptureReaderChoice
from cancelwire.readers.capture.reader import READER
from cancelwire.readers.capture.tshark_fields import parse_line, tshark_command

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from loopback import CaptureError, loopback_capture

TSHARK = shutil.which("tshark")
pytestmark = pytest.mark.skipif(TSHARK is None, reason="tshark is not installed")
HOST = "127.0.0.1"
_ports = iter(range(18300 + (int(time.time()) % 50) * 20, 65000))


# ---------------------------------------------------------------------------------------------- harness


WAIT = 60.0
"""Ceiling for anything the tests wait on (a peer's reply, a thread, tshark): generous, so a loaded
machine only makes a test slower; waits end as soon as their condition holds."""


@contextmanager
def capture(port: int, path: Path) -> Iterator[None]:
    """Capture loopback traffic on one port (scripts/loopback.py, shared with the benchmark)."""
    try:
        with loopback_capture(path, f"tcp port {port}"):
            yield
    except CaptureError as exc:
        pytest.skip(f"cannot capture on lo: {exc}")


class Served:
    """A scripted server's threads: the accept loop and one handler per connection."""

    def __init__(self) -> None:
        self.threads: list[threading.Thread] = []

    def join(self) -> None:
        """Until every connection was accepted and handled (and closed): its last packets are sent."""
        for thread in self.threads:  # the accept loop is first and adds the handlers before it ends
            thread.join(WAIT)
            assert not thread.is_alive(), "the scripted server did not finish"


def serve(port: int, handler: Callable[[socket.socket], None], conns: int = 1) -> Served:
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((HOST, port))
    listener.listen()
    served = Served()

    def run() -> None:
        with listener:
            for _ in range(conns):
                conn, _ = listener.accept()
                served.threads.append(threading.Thread(target=_handle, args=(handler, conn), daemon=True))
                served.threads[-1].start()

    served.threads.append(threading.Thread(target=run, daemon=True))
    served.threads[0].start()
    return served


def _handle(handler: Callable[[socket.socket], None], conn: socket.socket) -> None:
    with conn, contextlib.suppress(OSError):
        handler(conn)


def recv_until(sock: socket.socket, marker: bytes, timeout: float = WAIT) -> bytes:
    sock.settimeout(timeout)
    buf = b""
    while marker not in buf:
        data = sock.recv(65536)
        if not data:
            break
        buf += data
    return buf


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def post(body: dict[str, Any], session: str | None = None, target: str = "/mcp") -> bytes:
    raw = json.dumps(body, separators=(",", ":")).encode()
    head = (
        f"POST {target} HTTP/1.1\r\nHost: {HOST}\r\nContent-Type: application/json\r\n"
        "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-06-18\r\n"
    )
    if session:
        head += f"Mcp-Session-Id: {session}\r\n"
    return head.encode() + b"Content-Length: %d\r\n\r\n" % len(raw) + raw


SSE_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
RESULT_2 = b'{"jsonrpc":"2.0","id":2,"result":{"content":[]}}'
PROGRESS = b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}'


def read(path: Path, **options: Any) -> list[Event]:
    return list(READER.read(InputSource(path.name, path), ReadOptions(**options)))


def summary(events: list[Event]) -> list[tuple[Any, ...]]:
    """Events without seq/ts/frame: what happened, in order."""
    out: list[tuple[Any, ...]] = []
    for e in events:
        key = e.session_key.split("#", 1)[1] if e.session_key else None
        if isinstance(e, SessionStart):
            out.append(("session", key, e.transport.value))
        elif isinstance(e, MessageEvent):
            out.append((e.direction.value, e.message.kind.value, e.message.id, e.message.method, e.stream, key))
        elif isinstance(e, TransportEvent):
            out.append((e.kind.value, e.stream, key))
        else:
            out.append(("anomaly", e.name, key))
    return out


def frames(path: Path) -> dict[int, tuple[int, bytes]]:
    """tshark's own view: frame number → (tcp flags, tcp payload)."""
    assert TSHARK is not None
    out = subprocess.run(
        [TSHARK, "-r", str(path), "-n", "-T", "fields", "-e", "frame.number", "-e", "tcp.flags", "-e", "tcp.payload"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    table: dict[int, tuple[int, bytes]] = {}
    for line in out.splitlines():
        number, flags, payload = [*line.split("\t"), "", ""][:3]
        table[int(number)] = (int(flags or "0", 16), bytes.fromhex(payload))
    return table


def check_frames(path: Path, events: list[Event]) -> None:
    """Each message's frame holds the end of that message; FIN/RST events sit on FIN/RST frames."""
    table = frames(path)
    for e in events:
        frame = e.origin.frame
        assert frame is not None and frame in table, e
        flags, payload = table[frame]
        if isinstance(e, MessageEvent):
            tail = json.dumps(e.message.id if e.message.id is not None else e.message.method).encode()
            assert tail in payload or e.message.excerpt.encode()[-8:] in payload, (e, payload)
        elif isinstance(e, TransportEvent) and e.kind.value in ("closed-by-client",):
            assert flags & 0x01, e
        elif isinstance(e, TransportEvent) and e.kind.value.startswith("reset"):
            assert flags & 0x04, e


# ---------------------------------------------------------------------------------------------- scenarios


def scenario_keepalive(port: int) -> None:
    """initialize (JSON + Mcp-Session-Id), tools/call answered by chunked SSE, 202: one connection."""

    def server(c: socket.socket) -> None:
        recv_until(c, b'"initialize"}')
        r = b'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18"}}'
        c.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: sess-1\r\n"
            b"Content-Length: %d\r\n\r\n" % len(r) + r
        )
        recv_until(c, b'"x"}}')
        c.sendall(SSE_HEAD)
        for piece in (
            b"id: 0\nretry: 1000\ndata:\n\n",
            b": ping\n\n",
            b"data: " + PROGRESS + b"\n\n",
            b"id: 1\ndata: " + RESULT_2 + b"\n\n",
        ):
            time.sleep(0.03)
            c.sendall(chunk(piece))
        time.sleep(0.03)
        c.sendall(b"0\r\n\r\n")
        recv_until(c, b"initialized")
        c.sendall(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
        recv_until(c, b"never")

    served = serve(port, server)
    with socket.create_connection((HOST, port)) as s:
        s.sendall(post({"jsonrpc": "2.0", "id": 1, "method": "initialize"}))
        recv_until(s, b'18"}}')
        s.sendall(post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "x"}}, "sess-1"))
        recv_until(s, b"0\r\n\r\n")
        s.sendall(post({"jsonrpc": "2.0", "method": "notifications/initialized"}, "sess-1"))
        recv_until(s, b"\r\n\r\n")
    served.join()


def scenario_cancel_by_close(port: int) -> None:
    """Client closes the SSE stream after a progress event; the server then writes the result anyway."""

    def server(c: socket.socket) -> None:
        recv_until(c, b'"x"}}')
        c.sendall(SSE_HEAD)
        time.sleep(0.03)
        c.sendall(chunk(b"data: " + PROGRESS + b"\n\n"))
        recv_until(c, b"never")  # the client's FIN
        time.sleep(0.05)
        c.sendall(chunk(b"data: " + RESULT_2 + b"\n\n"))  # write after disconnect: the client answers RST
        recv_until(c, b"never")  # ends with the RST (ConnectionResetError)

    served = serve(port, server)
    s = socket.create_connection((HOST, port))
    s.sendall(post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "x"}}, "s-2"))
    recv_until(s, b'progress":1}}\n\n\r\n')
    s.close()
    served.join()


def scenario_stops_reading(port: int) -> None:
    """A client with a tiny receive buffer that never reads while the server floods SSE events."""
    stop, flooded = threading.Event(), threading.Event()

    def server(c: socket.socket) -> None:
        recv_until(c, b'"x"}}')
        c.sendall(SSE_HEAD)
        c.settimeout(0.5)
        event = chunk(b"data: " + PROGRESS + b"\n\n")
        try:
            for _ in range(5000):
                c.sendall(event)
        except (TimeoutError, OSError):
            pass  # blocked for 0.5 s: both buffers are full, the client has advertised a zero window
        flooded.set()
        stop.wait(WAIT)

    serve(port, server)
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
    s.connect((HOST, port))
    s.sendall(post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "x"}}, "s-3"))
    assert flooded.wait(WAIT), "the server never filled the client's window"
    _open_until_captured.append((s, stop))  # both ends stay open until the capture has stopped


_open_until_captured: list[tuple[socket.socket, threading.Event]] = []


def scenario_keepalive_late_json(port: int) -> None:
    """A POSTed cancel (second connection) for a tools/call whose JSON reply comes after it; the first
    connection is then kept alive (a ping on it) and still open when the capture ends."""
    stop, cancelled = threading.Event(), threading.Event()

    def server(c: socket.socket) -> None:
        first = recv_until(c, b"}}")
        if b"notifications/cancelled" in first:
            c.sendall(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
            cancelled.set()
            recv_until(c, b"never")
            return
        cancelled.wait(WAIT)
        time.sleep(0.05)
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(RESULT_2))
        c.sendall(RESULT_2)
        recv_until(c, b'"ping"}')
        pong = b'{"jsonrpc":"2.0","id":3,"result":{}}'
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(pong) + pong)
        stop.wait(WAIT)

    serve(port, server, conns=2)
    a = socket.create_connection((HOST, port))
    a.sendall(post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "x"}}, "s-9"))
    time.sleep(0.05)  # the call's connection is accepted first
    with socket.create_connection((HOST, port)) as b:
        b.sendall(post({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}, "s-9"))
        recv_until(b, b"\r\n\r\n")
    recv_until(a, b"content")
    time.sleep(1.2)  # longer than CW202's second: the stream must not read as left open
    a.sendall(post({"jsonrpc": "2.0", "id": 3, "method": "ping"}, "s-9"))
    recv_until(a, b'"result":{}}')
    _open_until_captured.append((a, stop))


def scenario_server_reset(port: int) -> None:
    """The server sends one event and half of the next, then aborts the connection (RST)."""
    received = threading.Event()

    def server(c: socket.socket) -> None:
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # each send its own segment, none held back
        recv_until(c, b'"x"}}')
        c.sendall(SSE_HEAD + chunk(b"data: " + PROGRESS + b"\n\n"))
        time.sleep(0.05)
        c.sendall(chunk(b'id: 7\ndata: {"jsonrpc":"2.0","id":2,'))
        received.wait(WAIT)  # an abort drops unsent data: reset only once the client has it all
        c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        c.close()

    served = serve(port, server)
    with socket.create_connection((HOST, port)) as s:
        s.sendall(post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "x"}}, "s-4"))
        recv_until(s, b'"id":2,')
        received.set()
        with contextlib.suppress(OSError):
            recv_until(s, b"never")
    served.join()


def scenario_legacy(port: int) -> None:
    """2024-11-05 HTTP+SSE: GET /sse → endpoint event; POST to it (202); the reply on the GET stream."""
    streams: list[socket.socket] = []
    got_post = threading.Event()

    def server(c: socket.socket) -> None:
        head = recv_until(c, b"\r\n\r\n")
        if head.startswith(b"GET"):
            streams.append(c)
            c.sendall(SSE_HEAD + chunk(b"event: endpoint\ndata: /messages?sessionId=abc\n\n"))
            got_post.wait(WAIT)
            time.sleep(0.05)
            c.sendall(chunk(b'event: message\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\n\n'))
            recv_until(c, b"never")
        else:
            if b"initialize" not in head:
                recv_until(c, b"initialize")
            c.sendall(b"HTTP/1.1 202 Accepted\r\nContent-Length: 8\r\n\r\nAccepted")
            got_post.set()
            recv_until(c, b"never")

    served = serve(port, server, conns=2)
    get = socket.create_connection((HOST, port))
    get.sendall(f"GET /sse HTTP/1.1\r\nHost: {HOST}\r\nAccept: text/event-stream\r\n\r\n".encode())
    recv_until(get, b"sessionId=abc\n\n")
    with socket.create_connection((HOST, port)) as p:
        p.sendall(post({"jsonrpc": "2.0", "id": 1, "method": "initialize"}, target="/messages?sessionId=abc"))
        recv_until(p, b"\r\n\r\nAccepted")
        recv_until(get, b"result")
    get.close()
    served.join()


def scenario_sessionless(port: int) -> None:
    """2026-07-28 style: no session ids; a 400 with a JSON-RPC error, then a call cancelled by closing."""

    def server(c: socket.socket) -> None:
        recv_until(c, b'"bad"}')
        err = b'{"jsonrpc":"2.0","id":1,"error":{"code":-32020,"message":"version mismatch"}}'
        c.sendall(
            b"HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(err) + err
        )
        recv_until(c, b'"x"}}')
        c.sendall(SSE_HEAD)
        recv_until(c, b"never")

    served = serve(port, server)
    with socket.create_connection((HOST, port)) as s:
        s.sendall(post({"jsonrpc": "2.0", "id": 1, "method": "bad"}))
        recv_until(s, b'mismatch"}}')
        s.sendall(post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "x"}}))
        recv_until(s, b"chunked\r\n\r\n")
    served.join()


def scenario_not_http(port: int) -> None:
    def server(c: socket.socket) -> None:
        c.sendall(b"220 hello\r\n")
        recv_until(c, b"\r\n")
        c.sendall(b"250 ok\r\n")

    served = serve(port, server)
    with socket.create_connection((HOST, port)) as s:
        recv_until(s, b"\r\n")
        s.sendall(b"EHLO x\r\n")
        recv_until(s, b"ok\r\n")
    served.join()


def make(name: str, scenario: Callable[[int], None], directory: Path) -> tuple[Path, int]:
    port = next(_ports)
    path = directory / f"{name}.pcapng"
    with capture(port, path):
        scenario(port)
    return path, port


@pytest.fixture(scope="module")
def captures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, int]]:
    directory = tmp_path_factory.mktemp("captures")
    made = {
        name: make(name, fn, directory)
        for name, fn in [
            ("keepalive", scenario_keepalive),
            ("cancel_by_close", scenario_cancel_by_close),
            ("stops_reading", scenario_stops_reading),
            ("server_reset", scenario_server_reset),
            ("legacy", scenario_legacy),
            ("sessionless", scenario_sessionless),
            ("not_http", scenario_not_http),
            ("keepalive_late_json", scenario_keepalive_late_json),
        ]
    }
    for sock, stop in _open_until_captured:
        stop.set()
        sock.close()
    return made


# ---------------------------------------------------------------------------------------------- tests


def test_keepalive_json_sse_and_202_on_one_connection(captures: dict[str, tuple[Path, int]]) -> None:
    path, _ = captures["keepalive"]
    events = read(path)
    assert summary(events) == [
        ("session", "sess-1", "streamable-http"),
        ("c2s", "request", 1, "initialize", "tcp0/0", "sess-1"),
        ("s2c", "result", 1, None, "tcp0/0", "sess-1"),
        ("closed-by-server", "tcp0/0", "sess-1"),
        ("c2s", "request", 2, "tools/call", "tcp0/1", "sess-1"),
        ("stream-opened", "tcp0/1", "sess-1"),
        ("server-bytes", "tcp0/1", "sess-1"),
        ("server-bytes", "tcp0/1", "sess-1"),
        ("s2c", "notification", None, "notifications/progress", "tcp0/1", "sess-1"),
        ("s2c", "result", 2, None, "tcp0/1", "sess-1"),
        ("closed-by-server", "tcp0/1", "sess-1"),
        ("c2s", "notification", None, "notifications/initialized", "tcp0/2", "sess-1"),
    ]
    check_frames(path, events)
    details = [e.detail for e in events if isinstance(e, TransportEvent)]
    assert details[0] == "end of the response body"  # of initialize's JSON reply: its stream ends there
    assert details[2:4] == ["priming event id=0 retry=1000", "SSE block without data comment='ping'"]
    assert all(e.revision_hint == "2025-06-18" for e in events if isinstance(e, MessageEvent))
    assert [e.seq for e in events] == list(range(1, len(events) + 1))


def test_a_keepalive_stream_ends_with_its_own_response(captures: dict[str, tuple[Path, int]]) -> None:
    """Issue 7: on a kept-alive connection a request's stream ends where its response body ends, not
    at the connection's close (here: never), so the late JSON reply is CW101 and no stream is left open."""
    path, _ = captures["keepalive_late_json"]
    events = read(path)
    assert [row for row in summary(events) if row[0] != "session"] == [
        ("c2s", "request", 2, "tools/call", "tcp0/0", "s-9"),
        ("c2s", "notification", None, "notifications/cancelled", "tcp1/0", "s-9"),
        ("s2c", "result", 2, None, "tcp0/0", "s-9"),
        ("closed-by-server", "tcp0/0", "s-9"),
        ("c2s", "request", 3, "ping", "tcp0/1", "s-9"),
        ("s2c", "result", 3, None, "tcp0/1", "s-9"),
        ("closed-by-server", "tcp0/1", "s-9"),
    ]
    check_frames(path, events)
    with audit([str(path)]) as result:
        assert [(f.rule, f.request_id) for f in result.findings] == [("response-after-cancel", 2)]
        assert [(c.request_id, c.outcome.value) for c in result.cancellations] == [(2, "late-result-violation")]


def test_cancel_by_close_then_write_after_disconnect(captures: dict[str, tuple[Path, int]]) -> None:
    path, _ = captures["cancel_by_close"]
    events = read(path)
    assert summary(events) == [
        ("session", "s-2", "streamable-http"),
        ("c2s", "request", 2, "tools/call", "tcp0/0", "s-2"),
        ("stream-opened", "tcp0/0", "s-2"),
        ("s2c", "notification", None, "notifications/progress", "tcp0/0", "s-2"),
        ("closed-by-client", "tcp0/0", "s-2"),
        ("server-bytes", "tcp0/0", "s-2"),
        ("s2c", "result", 2, None, "tcp0/0", "s-2"),
        ("reset-by-client", "tcp0/0", "s-2"),
    ]
    check_frames(path, events)
    server_bytes, result = events[5], events[6]
    assert server_bytes.origin.frame == result.origin.frame


def test_client_that_stops_reading(captures: dict[str, tuple[Path, int]]) -> None:
    path, _ = captures["stops_reading"]
    events = read(path)
    rows = summary(events)
    assert rows[:3] == [
        ("session", "s-3", "streamable-http"),
        ("c2s", "request", 2, "tools/call", "tcp0/0", "s-3"),
        ("stream-opened", "tcp0/0", "s-3"),
    ]
    kinds = [r[0] for r in rows]
    assert kinds.count("receive-window-zero") == 1
    assert rows[-1] == ("recording-ended", "tcp0/0", "s-3")
    assert set(kinds[3:-1]) <= {"s2c", "receive-window-zero", "anomaly"}
    assert kinds.count("s2c") >= 1
    anomalies = [e for e in events if isinstance(e, Anomaly)]
    assert [a.name for a in anomalies] in ([], ["sse.partial-event"])
    zero = next(e for e in events if isinstance(e, TransportEvent) and e.kind.value == "receive-window-zero")
    assert zero.origin.frame is not None
    tshark_zero = subprocess.run(
        [str(TSHARK), "-r", str(path), "-n", "-Y", "tcp.analysis.zero_window", "-T", "fields", "-e", "frame.number"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    assert str(zero.origin.frame) == tshark_zero[0]


def test_server_reset_mid_event(captures: dict[str, tuple[Path, int]]) -> None:
    path, _ = captures["server_reset"]
    events = read(path)
    assert summary(events) == [
        ("session", "s-4", "streamable-http"),
        ("c2s", "request", 2, "tools/call", "tcp0/0", "s-4"),
        ("stream-opened", "tcp0/0", "s-4"),
        ("s2c", "notification", None, "notifications/progress", "tcp0/0", "s-4"),
        ("reset-by-server", "tcp0/0", "s-4"),
        ("anomaly", "sse.partial-event", "s-4"),
    ]
    check_frames(path, events)
    partial = events[-1]
    assert isinstance(partial, Anomaly) and "id: 7" in partial.detail


def test_legacy_http_sse(captures: dict[str, tuple[Path, int]]) -> None:
    path, _ = captures["legacy"]
    events = read(path)
    assert summary(events) == [
        ("session", "abc", "http-sse"),
        ("stream-opened", "tcp0/0", "abc"),
        ("c2s", "request", 1, "initialize", "tcp1/0", "abc"),
        ("s2c", "result", 1, None, "tcp0/0", "abc"),
        ("closed-by-client", "tcp0/0", "abc"),
        ("closed-by-server", "tcp0/0", "abc"),  # the server's FIN cuts its open chunked body
    ]
    check_frames(path, events)


def test_sessionless_error_status_and_close(captures: dict[str, tuple[Path, int]]) -> None:
    path, port = captures["sessionless"]
    events = read(path)
    key = f"{HOST}->{HOST}:{port}"
    assert summary(events) == [
        ("session", key, "streamable-http"),
        ("c2s", "request", 1, "bad", "tcp0/0", key),
        ("anomaly", "http.error-status", key),
        ("s2c", "error", 1, None, "tcp0/0", key),
        ("closed-by-server", "tcp0/0", key),
        ("c2s", "request", 2, "tools/call", "tcp0/1", key),
        ("stream-opened", "tcp0/1", key),
        ("closed-by-client", "tcp0/1", key),
        ("closed-by-server", "tcp0/1", key),
    ]
    error = events[2]
    assert isinstance(error, Anomaly) and error.request_id == 1 and error.method == "bad"
    assert "HTTP 400 Bad Request" in error.detail


def test_not_http_capture(captures: dict[str, tuple[Path, int]]) -> None:
    path, port = captures["not_http"]
    events = read(path)
    assert [(type(e).__name__, getattr(e, "name", None)) for e in events] == [("Anomaly", "capture.no-mcp")]
    assert "no HTTP connection (sniffed by an HTTP/1.1 request line or the HTTP/2 preface" in events[0].detail  # type: ignore[union-attr]
    forced = read(path, http_ports=(port,))
    assert [getattr(e, "name", None) for e in forced] == ["http.parse-error", "capture.no-mcp"]


def test_truncated_capture_keeps_what_came_before(captures: dict[str, tuple[Path, int]], tmp_path: Path) -> None:
    path, _ = captures["keepalive"]
    cut = tmp_path / "cut.pcapng"
    data = path.read_bytes()
    last_frame = max(frames(path))
    cut.write_bytes(data[:-150])
    events = read(cut)
    names = [e.name for e in events if isinstance(e, Anomaly)]
    assert "capture.truncated" in names
    full = summary(read(path))
    assert summary([e for e in events if not isinstance(e, Anomaly)])[:5] == full[:5]
    truncated = next(e for e in events if isinstance(e, Anomaly) and e.name == "capture.truncated")
    assert truncated.origin.frame is not None and truncated.origin.frame < last_frame


def test_gzip_capture_reads_the_same(captures: dict[str, tuple[Path, int]], tmp_path: Path) -> None:
    path, _ = captures["keepalive"]
    zipped = tmp_path / "keepalive.pcapng.gz"
    zipped.write_bytes(gzip.compress(path.read_bytes()))
    assert READER.sniff(InputSource(zipped.name, zipped).head())
    assert summary(read(zipped)) == summary(read(path))


def test_not_a_capture_is_an_input_error(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.pcap"
    bogus.write_bytes(b"\xd4\xc3\xb2\xa1 but not really a capture at all" * 3)
    with pytest.raises(InputError, match=r"bogus\.pcap: tshark cannot read it"):
        read(bogus)


@pytest.mark.parametrize(
    "magic", [b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d", b"\x0a\x0d\x0d\x0a"]
)
def test_sniff_magic_numbers(magic: bytes) -> None:
    assert READER.sniff(magic + b"\x00" * 20)


def test_sniff_rejects_text() -> None:
    assert not READER.sniff(b'{"ts": 1, "dir": "c2s", "line": "{}"}\n')


def test_tshark_command_and_line_parsing() -> None:
    cmd = tshark_command("tshark", Path("x.pcapng"), None)
    assert cmd[:4] == ["tshark", "-r", "x.pcapng", "-n"] and "tcp.payload" in cmd
    line = b"7\t1.5\t0\t10.0.0.1\t\t10.0.0.2\t\t5000\t80\t1\t9\t2\t0x0018\t512\t7b7d\n"
    frame = parse_line(line)
    assert frame is not None and not isinstance(frame, int)
    assert (frame.number, frame.src, frame.dport, frame.flags, frame.payload) == (7, "10.0.0.1", 80, 0x18, b"{}")
    assert (frame.seq, frame.ack, frame.length) == (1, 9, 2)
    assert parse_line(b"8\t2.0" + b"\t" * 13 + b"\n") == 8


def test_keylog_decrypts_tls(tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    made = subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
        ],
        capture_output=True,
        check=False,
    )
    if made.returncode != 0:
        pytest.skip("openssl cannot make a test certificate")
    keylog = tmp_path / "keys.log"
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(str(cert), str(key))
    server_ctx.keylog_filename = str(keylog)
    client_ctx = ssl.create_default_context()
    client_ctx.check_hostname = False
    client_ctx.verify_mode = ssl.CERT_NONE

    def server(c: socket.socket) -> None:
        with server_ctx.wrap_socket(c, server_side=True) as t:
            recv_until(t, b'"x"}}')
            t.sendall(SSE_HEAD)
            t.sendall(chunk(b"data: " + RESULT_2 + b"\n\n"))
            t.sendall(b"0\r\n\r\n")
            recv_until(t, b"never")

    port = next(_ports)
    path = tmp_path / "tls.pcapng"
    with capture(port, path):
        served = serve(port, server)
        with client_ctx.wrap_socket(socket.create_connection((HOST, port))) as s:
            s.sendall(post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "x"}}, "t-1"))
            recv_until(s, b"0\r\n\r\n")
        served.join()
    assert summary(read(path, keylog=keylog)) == [
        ("session", "t-1", "streamable-http"),
        ("c2s", "request", 2, "tools/call", "tcp0/0", "t-1"),
        ("stream-opened", "tcp0/0", "t-1"),
        ("s2c", "result", 2, None, "tcp0/0", "t-1"),
        ("closed-by-server", "tcp0/0", "t-1"),
    ]
    plain = read(path)
    assert [getattr(e, "name", None) for e in plain] == ["capture.encrypted", "capture.no-mcp"]
    assert "tcp streams 0 " in plain[0].detail  # type: ignore[union-attr]


# ---------------------------------------------------------------------------------------------- samples

SAMPLES = Path(__file__).resolve().parent.parent / "sample_captures" / "http"


def sample(name: str) -> Path:
    path = SAMPLES / name
    if not path.exists():
        pytest.skip(f"{name} not generated (scripts/capture_samples.py)")
    return path


def messages(events: list[Event]) -> list[tuple[Any, ...]]:
    return [r for r in summary(events) if r[0] in ("c2s", "s2c")]


def kinds_in_order(events: list[Event], stream: str) -> list[str]:
    return [e.kind.value for e in events if isinstance(e, TransportEvent) and e.stream == stream]


def test_sample_bad_server_writes_after_disconnect() -> None:
    events = read(sample("bad-server-writes-after-disconnect.pcapng"))
    rows = summary(events)
    progress = ("s2c", "notification", None, "notifications/progress", "tcp0/0")
    assert [r[:5] for r in messages(events)] == [
        ("c2s", "request", 1, "tools/call", "tcp0/0"),
        progress,
        progress,
        progress,
        progress,
        ("s2c", "result", 1, None, "tcp0/0"),
        progress,
    ]
    closed = rows.index(next(r for r in rows if r[0] == "closed-by-client"))
    result = rows.index(next(r for r in rows if r[:2] == ("s2c", "result")))
    assert closed < result and rows[result - 1][0] == "server-bytes"
    assert kinds_in_order(events, "tcp0/0")[-1] == "reset-by-client"


def test_sample_cancel_close_stream_with_and_without_tls() -> None:
    plain = read(sample("sdk-http-cancel-close-stream.pcapng"))
    keys = sample("sdk-http-tls.keys")
    tls = read(sample("sdk-http-tls.pcapng"), keylog=keys)
    for events in (plain, tls):
        assert [r[:5] for r in messages(events)] == [
            ("c2s", "request", 1, "tools/list", "tcp0/0"),
            ("s2c", "result", 1, None, "tcp0/0"),
            ("c2s", "request", 2, "tools/call", "tcp0/1"),
            *[("s2c", "notification", None, "notifications/progress", "tcp0/1")] * 3,
        ]
        assert kinds_in_order(events, "tcp0/1")[:2] == ["stream-opened", "closed-by-client"]
        assert kinds_in_order(events, "tcp0/1")[-1] == "closed-by-server"
        assert all(e.revision_hint == "2026-07-28" for e in events if isinstance(e, MessageEvent))
    nokeys = read(sample("sdk-http-tls.pcapng"))
    assert [getattr(e, "name", None) for e in nokeys] == ["capture.encrypted", "capture.no-mcp"]


def test_sample_legacy_sse_counts_a_retransmission_once() -> None:
    events = read(sample("sdk-legacy-sse.pcapng"))
    assert {e.transport.value for e in events if isinstance(e, SessionStart)} == {"http-sse"}
    rows = messages(events)
    assert [r[1:4] for r in rows].count(("notification", None, "notifications/initialized")) == 1
    assert rows[-1][1:4] == ("notification", None, "notifications/cancelled")
    assert {r[4] for r in rows if r[0] == "s2c"} == {"tcp0/0"}


def test_sample_negative_inputs() -> None:
    truncated = read(sample("truncated.pcapng"))
    names = [e.name for e in truncated if isinstance(e, Anomaly)]
    assert names == ["capture.truncated"]
    assert [e.origin.frame for e in truncated if isinstance(e, Anomaly)] == [42]
    assert kinds_in_order(truncated, "tcp3/0")[-1] == "recording-ended"
    unrelated = read(sample("unrelated-traffic.pcapng"))
    assert [getattr(e, "name", None) for e in unrelated] == ["capture.no-mcp"]


def test_missing_tshark_says_how_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import pyshark.tshark.tshark as pyshark_tshark
    from cancelwire.errors import ToolMissingError

    def not_found(*args: Any, **kwargs: Any) -> str:
        raise pyshark_tshark.TSharkNotFoundException("no tshark")

    monkeypatch.setattr("shutil.which", lambda name: None)
    monkeypatch.setattr(pyshark_tshark, "get_process_path", not_found)
    capture_file = tmp_path / "x.pcapng"
    capture_file.write_bytes(b"\x0a\x0d\x0d\x0a" + b"\x00" * 28)
    with pytest.raises(ToolMissingError, match="apt-get install tshark"):
        read(capture_file, capture_reader=CaptureReaderChoice.TSHARK)


def test_stopping_early_stops_tshark(captures: dict[str, tuple[Path, int]]) -> None:
    path, _ = captures["keepalive"]
    tshark = ReadOptions(capture_reader=CaptureReaderChoice.TSHARK)
    events = cast(Generator[Event, None, None], READER.read(InputSource(path.name, path), tshark))
    first = next(events)
    assert isinstance(first, SessionStart)
    events.close()  # the generator's finally kills and reaps tshark; nothing is left running


def test_lost_segment_is_a_tcp_gap(captures: dict[str, tuple[Path, int]], tmp_path: Path) -> None:
    path, _ = captures["keepalive"]
    editcap = shutil.which("editcap")
    if editcap is None:
        pytest.skip("editcap is not installed")
    lost = next(n for n, (_, payload) in frames(path).items() if b"notifications/progress" in payload)
    holed = tmp_path / "holed.pcapng"
    subprocess.run([editcap, str(path), str(holed), str(lost)], check=True, capture_output=True)
    events = read(holed)
    gaps = [e for e in events if isinstance(e, Anomaly)]
    assert [(g.name, g.session_key) for g in gaps] == [("capture.tcp-gap", "holed.pcapng#sess-1")]
    assert "server→client bytes missing" in gaps[0].detail
    rows = summary(events)
    # everything before the hole, and the client's later request, are still read; nothing after the hole
    assert ("s2c", "notification", None, "notifications/progress", "tcp0/1", "sess-1") not in rows
    assert ("s2c", "result", 2, None, "tcp0/1", "sess-1") not in rows
    assert rows[-5:] == [
        ("anomaly", "capture.tcp-gap", "sess-1"),  # found when the client acknowledges bytes the capture lacks
        ("replies-unread", "tcp0/1", "sess-1"),  # its answer is on the direction no longer read
        ("c2s", "notification", None, "notifications/initialized", "tcp0/2", "sess-1"),
        ("replies-unread", "tcp0/2", "sess-1"),  # so is the answer of every later exchange on the connection
        ("closed-by-client", "tcp0/1", "sess-1"),  # as far as the capture shows, tcp0/1 never ended
    ]


def test_ipv6_line_and_pyshark_single_frame_lookup() -> None:
    line = b"3\t1.0\t2\t\t::1\t\t::1\t40000\t8000\t100\t7\t0\t0x0011\t0\t\n"
    frame = parse_line(line)
    assert frame is not None and not isinstance(frame, int)
    assert (frame.src, frame.dst, frame.flags, frame.window, frame.payload) == ("::1", "::1", 0x11, 0, b"")
    clean = SAMPLES / "sdk-http-clean.pcapng"
    if not clean.exists():
        pytest.skip("sample captures not generated")
    from cancelwire.readers.capture.frame import frame_details

    packet = frame_details(clean, 12)
    assert int(packet.number) == 12 and int(packet.tcp.flags, 16) & 0x01  # the client's FIN


RULES = Path(__file__).resolve().parent / "rules"


def scenario_request_then_fin(port: int) -> None:
    """A client that sends its POST (head and body in two segments) and half-closes at once; the
    server answers JSON."""

    def server(c: socket.socket) -> None:
        recv_until(c, b'"x"}}')
        body = b'{"jsonrpc":"2.0","id":2,"result":{}}'
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        recv_until(c, b"never")

    thread = serve(port, server)
    with socket.create_connection((HOST, port)) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        head, body = post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "x"}}).split(
            b"\r\n\r\n"
        )
        s.sendall(head + b"\r\n\r\n")
        time.sleep(0.1)  # the body in a segment of its own, the last one before the FIN
        s.sendall(body)
        s.shutdown(socket.SHUT_WR)
        recv_until(s, b"{}}")
    thread.join()


def test_a_fin_captured_before_the_last_data_segment_keeps_the_request(tmp_path: Path) -> None:
    """The client's FIN frame moved before its data frame (what a capture on two queues can record):
    the FIN is placed by sequence number, so the request is still read and the close comes after it."""
    editcap, mergecap = shutil.which("editcap"), shutil.which("mergecap")
    if editcap is None or mergecap is None:
        pytest.skip("editcap/mergecap are not installed")
    port = next(_ports)
    path = tmp_path / "fin.pcapng"
    with capture(port, path):
        scenario_request_then_fin(port)
    table = frames(path)
    data = next(n for n, (_, payload) in table.items() if payload.startswith(b'{"jsonrpc"'))
    fin = next(n for n, (flags, _) in table.items() if n > data and flags & 0x01)
    pieces = []
    order = (("a", f"1-{data - 1}"), ("b", str(fin)), ("c", f"{data}-{fin - 1}"), ("d", f"{fin + 1}-{max(table)}"))
    for name, keep in order:
        piece = tmp_path / f"{name}.pcapng"
        subprocess.run([editcap, "-r", str(path), str(piece), keep], check=True, capture_output=True)
        pieces.append(str(piece))
    swapped = tmp_path / "swapped.pcapng"
    subprocess.run([mergecap, "-a", "-w", str(swapped), *pieces], check=True, capture_output=True)
    rows = summary(read(swapped))
    key = f"{HOST}->{HOST}:{port}"
    assert rows[:2] == [("session", key, "streamable-http"), ("c2s", "request", 2, "tools/call", "tcp0/0", key)]
    assert ("s2c", "result", 2, None, "tcp0/0", key) in rows
    events = read(swapped)
    closed = [e for e in events if isinstance(e, TransportEvent) and e.kind.value == "closed-by-client"]
    assert closed == [] or closed[0].origin.frame == data  # the FIN's own frame, now numbered `data`


def test_data_after_fin_is_named_and_never_a_traceback() -> None:
    trigger = RULES / "data-after-fin" / "triggers.pcap"
    for options in ({}, {"http_ports": (18391,)}):
        events = read(trigger, **options)
        after = [e for e in events if isinstance(e, Anomaly) and e.name == "capture.data-after-fin"]
        assert [(a.origin.frame, a.detail) for a in after] == [
            (
                24,
                "tcp stream 0: the client sent 303 payload bytes after its FIN; "
                "they are not read (a FIN ends the sender's byte stream)",
            )
        ]
        assert not any(isinstance(e, Anomaly) and e.name == "http.parse-error" for e in events)


def test_snaplen_is_named_instead_of_no_mcp() -> None:
    events = read(RULES / "capture-snaplen-truncated" / "triggers.pcapng")
    names = [e.name for e in events if isinstance(e, Anomaly)]
    assert "capture.no-mcp" not in names and names.count("capture.snaplen-truncated") == 1
    cut = next(e for e in events if isinstance(e, Anomaly) and e.name == "capture.snaplen-truncated")
    assert cut.origin.frame == 4 and "30 of its 291 payload bytes" in cut.detail


def test_frame_lookup_on_a_capture_cut_short() -> None:
    """A frame before the damage is shown; one past it is "no such frame" with tshark's reason, and
    pyshark's destructor prints nothing (it used to print a TSharkCrashException traceback at exit)."""
    from cancelwire.errors import InputError
    from cancelwire.readers.capture.frame import frame_details

    cut = Path(__file__).resolve().parent / "corpus/pcap/frame-of-a-cut-capture.pcapng"
    assert int(frame_details(cut, 3).number) == 3
    with pytest.raises(
        InputError, match=r"no such frame: tshark stopped early \(.*cut short in the middle of a packet"
    ):
        frame_details(cut, 30)
