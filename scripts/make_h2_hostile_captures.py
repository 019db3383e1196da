#!/usr/bin/env python3
"""Regenerate the hostile HTTP/2 captures: the fixtures of http2-frame-flood and http2-stream-error
(tests/rules/<slug>/) and the HTTP/2 reproducers of the replayed corpus (tests/corpus/pcap/h2-*); and
the fixtures of http2-capture-joined-mid-connection, cut with Wireshark's `editcap` from a real sample
(``--only mid-connection``: no capture, a second).

    .venv/bin/python scripts/make_h2_hostile_captures.py [--only NAME ...] [--out-rules DIR] [--out-corpus DIR]

Needs root (or capture rights on ``lo``) and tshark; about a minute. Every file is a real capture
(tshark on the loopback interface, ``tcp port PORT``) of two HAND-WRITTEN peers in this process,
since no real peer sends these bytes on purpose:

* the server is the `h2` package over a socket (a well-behaved HTTP/2 endpoint): it answers each
  POST with ``200 text/event-stream``, one progress event and the JSON-RPC result; when its h2 refuses
  what the client sent it answers as h2 does (GOAWAY, RST_STREAM) and closes. On its second
  connection it ignores the client's RST_STREAM and still writes the result as raw DATA frames;
* the client opens two connections (h2c with prior knowledge). The first POSTs ``tools/call`` id 1,
  reads the whole reply, then sends the hostile frames of the scenario (built with hyperframe and
  hpack, never by editing a file) and closes. The second POSTs ``tools/call`` id 2, resets the
  stream after the progress event, and the server writes the result anyway: ``write-after-disconnect``
  and ``response-after-cancel`` there show that the rest of the capture is still analysed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import h2.connection
import h2.events
from h2.config import H2Configuration
from h2.errors import ErrorCodes
from hpack import Encoder
from hyperframe.frame import (
    ContinuationFrame,
    DataFrame,
    HeadersFrame,
    PingFrame,
    PriorityFrame,
    SettingsFrame,
    WindowUpdateFrame,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent / "peers"))

import capture_samples as cs  # reused: ports, tshark capture, checks
from http_raw_clients import VERSION, tools_call_request

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "tests" / "rules"
CORPUS = ROOT / "tests" / "corpus" / "pcap"


def log(text: str) -> None:
    print(f"[h2-hostile] {text}", flush=True)


def sse(message: dict[str, object]) -> bytes:
    return b"event: message\ndata: " + json.dumps(message, separators=(",", ":")).encode() + b"\n\n"


def request_headers(port: int) -> list[tuple[str, str]]:
    return [
        (":method", "POST"),
        (":authority", f"127.0.0.1:{port}"),
        (":scheme", "http"),
        (":path", "/mcp"),
        ("accept", "application/json, text/event-stream"),
        ("content-type", "application/json"),
        ("mcp-protocol-version", VERSION),
        ("mcp-method", "tools/call"),
        ("mcp-name", "slow_write"),
    ]


# ---------------------------------------------------------------------------------------------- server


def serve_connection(sock: socket.socket, ignore_reset: bool) -> None:
    """HAND-WRITTEN h2c server for one connection: progress and result per POST (see module docstring)."""
    conn = h2.connection.H2Connection(H2Configuration(client_side=False, header_encoding="utf-8"))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    bodies: dict[int, bytes] = {}
    sock.settimeout(3)
    while True:
        try:
            data = sock.recv(65536)
        except (TimeoutError, ConnectionError):
            break
        if not data:
            break
        try:
            events = conn.receive_data(data)
        except h2.exceptions.ProtocolError:
            sock.sendall(conn.data_to_send())  # h2's GOAWAY
            break
        for event in events:
            if isinstance(event, h2.events.DataReceived):
                conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                bodies[event.stream_id] = bodies.get(event.stream_id, b"") + event.data
            elif isinstance(event, h2.events.StreamEnded):
                answer(conn, sock, event.stream_id, bodies.pop(event.stream_id, b""))
            elif isinstance(event, h2.events.StreamReset) and ignore_reset:
                late = DataFrame(event.stream_id, sse(result(2)))
                late.flags.add("END_STREAM")
                sock.sendall(late.serialize())  # its h2 would refuse: raw bytes on the reset stream
        sock.sendall(conn.data_to_send())
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_WR)


def result(req_id: int) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": req_id, "result": {"content": [{"type": "text", "text": "done"}], "isError": False}}


def answer(conn: h2.connection.H2Connection, sock: socket.socket, sid: int, body: bytes) -> None:
    req_id = json.loads(body)["id"]
    progress = {
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {"progressToken": req_id, "progress": 1},
    }
    conn.send_headers(sid, [(":status", "200"), ("content-type", "text/event-stream")])
    conn.send_data(sid, sse(progress))
    sock.sendall(conn.data_to_send())
    if req_id == 2:
        return  # the client resets it: the result follows the reset (see serve_connection)
    time.sleep(0.05)
    conn.send_data(sid, sse(result(req_id)), end_stream=True)


# ---------------------------------------------------------------------------------------------- client


class Client:
    def __init__(self, port: int) -> None:
        self.port = port
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.conn = h2.connection.H2Connection(H2Configuration(client_side=True, header_encoding="utf-8"))
        self.conn.initiate_connection()
        self.flush()

    def flush(self) -> None:
        self.sock.sendall(self.conn.data_to_send())

    def call(self, sid: int, req_id: int) -> None:
        body = tools_call_request(self.port, req_id, "slow_write", {"steps": 3}).split(b"\r\n\r\n", 1)[1]
        self.conn.send_headers(sid, request_headers(self.port))
        self.conn.send_data(sid, body, end_stream=True)
        self.flush()

    def read_until(self, done: Callable[[list[h2.events.Event]], bool]) -> None:
        seen: list[h2.events.Event] = []
        deadline = time.monotonic() + 5
        while not done(seen) and time.monotonic() < deadline:
            data = self.sock.recv(65536)
            if not data:
                return
            seen += self.conn.receive_data(data)
            self.flush()

    def close(self, drain: float = 0.3) -> None:
        time.sleep(drain)
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_WR)
            self.sock.settimeout(2)
            while self.sock.recv(65536):
                pass
        self.sock.close()


def ended(seen: list[h2.events.Event]) -> bool:
    return any(isinstance(e, h2.events.StreamEnded) for e in seen)


def progressed(seen: list[h2.events.Event]) -> bool:
    return any(isinstance(e, h2.events.DataReceived) for e in seen)


# ---------------------------------------------------------------------------------------------- hostile bytes


def priority_flood(port: int) -> bytes:
    return PriorityFrame(1, depends_on=0, stream_weight=16).serialize() * 12_000


def ping_flood(port: int) -> bytes:
    return PingFrame(0, b"cancelwr").serialize() * 12_000


def settings_flood(port: int) -> bytes:
    return SettingsFrame(0, {SettingsFrame.INITIAL_WINDOW_SIZE: 65535}).serialize() * 12_000


def tiny_data(port: int) -> bytes:
    return headers(3, port, end=False) + DataFrame(3, b" ").serialize() * 20_000


def continuation_flood(port: int) -> bytes:
    return HeadersFrame(3, b"\x83").serialize() + ContinuationFrame(3, b"").serialize() * 100


def hpack_bomb(port: int) -> bytes:
    encoder = Encoder()
    first = encoder.encode([*request_headers(port), ("x-bomb", "b" * 3000)])
    return headers(3, port, block=first) + headers(5, port, block=encoder.encode([("x-bomb", "b" * 3000)] * 30))


def oversized_frame(port: int) -> bytes:
    return (2 << 20).to_bytes(3, "big") + b"\x00\x00\x00\x00\x00\x03" + b"x" * 1000


def stream_backwards(port: int) -> bytes:
    return headers(7, port) + headers(5, port)


def bad_padding(port: int) -> bytes:
    return headers(3, port, end=False) + b"\x00\x00\x02\x00\x08\x00\x00\x00\x03\x05x"


def window_overflow(port: int) -> bytes:
    return WindowUpdateFrame(1, window_increment=2**31 - 1).serialize() * 2


def window_within(port: int) -> bytes:
    return WindowUpdateFrame(1, window_increment=1000).serialize() * 2


def few_priorities(port: int) -> bytes:
    return PriorityFrame(1, depends_on=0, stream_weight=16).serialize() * 500


def headers(sid: int, port: int, end: bool = True, block: bytes | None = None) -> bytes:
    frame = HeadersFrame(sid, block if block is not None else Encoder().encode(request_headers(port)))
    frame.flags.add("END_HEADERS")
    if end:
        frame.flags.add("END_STREAM")
    return frame.serialize()


# ---------------------------------------------------------------------------------------------- scenarios

TARGETS: dict[str, tuple[Path, Callable[[int], bytes], bool]] = {
    # name: (output file, hostile bytes, sent while stream 1's response is still open)
    "flood-triggers": (RULES / "http2-frame-flood" / "triggers.pcapng", priority_flood, False),
    "flood-clean": (RULES / "http2-frame-flood" / "clean.pcapng", few_priorities, False),
    "stream-error-triggers": (RULES / "http2-stream-error" / "triggers.pcapng", window_overflow, True),
    "stream-error-clean": (RULES / "http2-stream-error" / "clean.pcapng", window_within, True),
    "ping-flood": (CORPUS / "h2-ping-flood.pcapng", ping_flood, False),
    "settings-flood": (CORPUS / "h2-settings-flood.pcapng", settings_flood, False),
    "tiny-data": (CORPUS / "h2-tiny-data-frames.pcapng", tiny_data, False),
    "continuation-flood": (CORPUS / "h2-continuation-flood.pcapng", continuation_flood, False),
    "hpack-bomb": (CORPUS / "h2-hpack-bomb.pcapng", hpack_bomb, False),
    "oversized-frame": (CORPUS / "h2-oversized-frame.pcapng", oversized_frame, False),
    "stream-backwards": (CORPUS / "h2-stream-id-backwards.pcapng", stream_backwards, False),
    "bad-padding": (CORPUS / "h2-invalid-padding.pcapng", bad_padding, False),
}


def record(name: str, out: Path, hostile: Callable[[int], bytes], early: bool, tmp: Path) -> None:
    port = cs.pick_port(18600)
    pcap = tmp / f"{name}.pcapng"
    with server(port), cs.capture(pcap, f"tcp port {port}", tmp):
        first = Client(port)
        first.call(1, 1)
        first.read_until(progressed if early else ended)
        first.sock.sendall(hostile(port))
        first.read_until(ended)
        first.close()
        second = Client(port)
        second.call(1, 2)
        second.read_until(progressed)
        second.conn.reset_stream(1, ErrorCodes.CANCEL)
        second.flush()
        second.close(drain=0.5)
    cs.check_capture(pcap, want_http=False)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(pcap.read_bytes())
    log(f"{name} -> {out.relative_to(ROOT)}")


@contextlib.contextmanager
def server(port: int) -> Iterator[None]:
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("127.0.0.1", port))
    lsock.listen(4)
    lsock.settimeout(10)

    def run() -> None:
        for ignore_reset in (False, True):
            sock, _ = lsock.accept()
            with sock:
                serve_connection(sock, ignore_reset)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield
    finally:
        thread.join(15)
        lsock.close()


def mid_connection() -> None:
    """sample_captures/http2/curl-h2c-upgrade-max-time.pcapng (real curl and the SDK server under hypercorn)
    from its frame 14 on (`editcap -r`): the capture joins the connection after the upgrade, the
    preface, SETTINGS and stream 1, with curl's HEADERS of tools/call on stream 3 as its first frame."""
    source = ROOT / "sample_captures" / "http2" / "curl-h2c-upgrade-max-time.pcapng"
    folder = RULES / "http2-capture-joined-mid-connection"
    folder.mkdir(parents=True, exist_ok=True)
    editcap = shutil.which("editcap") or "/usr/bin/editcap"
    cut = folder / "triggers.pcapng"
    subprocess.run([editcap, "-r", str(source), str(cut), "14-37"], check=True, capture_output=True, timeout=30)
    shutil.copyfile(source, folder / "clean.pcapng")
    log(f"mid-connection -> {cut.relative_to(ROOT)} (frames 14-37 of {source.name}), clean.pcapng (all of it)")
    later = CORPUS / "h2-joined-by-a-server-frame.pcapng"  # from the 2nd progress event: the server speaks first
    subprocess.run([editcap, "-r", str(source), str(later), "23-37"], check=True, capture_output=True, timeout=30)
    log(f"mid-connection -> {later.relative_to(ROOT)} (frames 23-37)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="*", choices=[*TARGETS, "mid-connection"])
    args = ap.parse_args()
    failed = []
    if not args.only or "mid-connection" in args.only:
        mid_connection()
    with tempfile.TemporaryDirectory(prefix="cancelwire-h2-hostile-") as td:
        for name, (out, hostile, early) in TARGETS.items():
            if args.only and name not in args.only:
                continue
            try:
                record(name, out, hostile, early, Path(td))
            except (cs.ScenarioError, OSError) as exc:
                log(f"{name}: FAILED: {exc}")
                failed.append(name)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
