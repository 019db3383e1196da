"""HAND-WRITTEN, deliberately misbehaving HTTP/2 MCP server (h2c, the `h2` package over a plain socket)
for the HTTP/2 sample captures: it ignores the client's RST_STREAM and keeps writing the stream.

No SDK server does this (the SDK under hypercorn stops at once: see h2c-client-resets-stream), so
a corpus needs a made-up peer to have a 2026-07-28 CAN-4 violation over HTTP/2 on the wire.

One connection, one request: POST tools/call (whatever it asks) is answered 200 text/event-stream;
a progress event every 150 ms. When the client resets the stream, h2 would refuse to send on it, so
the server writes the rest as raw DATA frames (hyperframe) on the reset stream: two more progress
events, then the result for the request's id, then an empty DATA frame with END_STREAM; then it
sends GOAWAY and closes. Every JSON-RPC message is logged to --log like `http_asgi_tee.py` does.

Usage: http2_bad_server.py --port P --log FILE [--max-seconds S]
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import time

import h2.connection
import h2.events
from h2.config import H2Configuration
from hyperframe.frame import DataFrame

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from http_asgi_tee import JsonlLog


def note(text: str) -> None:
    print(f"[bad-h2-server {time.time():.6f}] {text}", file=sys.stderr, flush=True)


def event(message: dict[str, object]) -> bytes:
    return b"event: message\r\ndata: " + json.dumps(message, separators=(",", ":")).encode() + b"\r\n\r\n"


def progress(token: object, n: int) -> dict[str, object]:
    params = {"progressToken": token, "progress": n, "total": 5, "message": f"step {n}"}
    return {"jsonrpc": "2.0", "method": "notifications/progress", "params": params}


class Server:
    def __init__(self, sock: socket.socket, log: JsonlLog, peer: str) -> None:
        self.sock, self.log, self.peer = sock, log, peer
        self.conn = h2.connection.H2Connection(H2Configuration(client_side=False, header_encoding="utf-8"))
        self.conn.initiate_connection()
        self.flush()
        self.reset = False

    def flush(self) -> None:
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def pump(self, timeout: float) -> list[h2.events.Event]:
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(65536)
        except TimeoutError:
            return []
        events = self.conn.receive_data(data) if data else []
        self.reset = self.reset or any(isinstance(e, h2.events.StreamReset) for e in events)
        self.flush()
        return events

    def write(self, sid: int, message: dict[str, object] | None, end: bool = False) -> None:
        body = event(message) if message is not None else b""
        if message is not None:
            self.log.write(
                {
                    "ts": time.time(),
                    "dir": "send",
                    "exchange": 0,
                    "conn": self.peer,
                    "http": "POST /mcp",
                    "peer": "reset" if self.reset else "open",
                    "message": message,
                }
            )
        if self.reset:  # h2 refuses to send on a reset stream: the raw frame goes out anyway
            frame = DataFrame(sid, body)
            if end:
                frame.flags.add("END_STREAM")
            self.sock.sendall(frame.serialize())
        else:
            self.conn.send_data(sid, body, end_stream=end)
            self.flush()


def serve(sock: socket.socket, log: JsonlLog, peer: str) -> None:
    s = Server(sock, log, peer)
    request: dict[str, object] | None = None
    sid, body = 0, b""
    while request is None:
        for e in s.pump(10):
            if isinstance(e, h2.events.RequestReceived):
                sid = e.stream_id
            elif isinstance(e, h2.events.DataReceived):
                body += e.data
                s.conn.acknowledge_received_data(e.flow_controlled_length, e.stream_id)
            elif isinstance(e, h2.events.StreamEnded):
                request = json.loads(body)
    log.write({"ts": time.time(), "dir": "recv", "exchange": 0, "conn": peer, "http": "POST /mcp", "message": request})
    params = request.get("params") if isinstance(request.get("params"), dict) else {}
    token = (params.get("_meta") or {}).get("progressToken", 1)  # type: ignore[union-attr]
    s.conn.send_headers(sid, [(":status", "200"), ("content-type", "text/event-stream"), ("cache-control", "no-cache")])
    s.flush()
    for n in range(1, 6):
        time.sleep(0.15)
        s.pump(0.001)
        s.write(sid, progress(token, n))
        note(f"progress {n} written ({'after the reset' if s.reset else 'stream open'})")
        if s.reset and n >= 4:
            break
    s.write(sid, {"jsonrpc": "2.0", "id": request.get("id"), "result": {"content": [{"type": "text", "text": "done"}]}})
    s.write(sid, None, end=True)
    note("result written")
    s.pump(0.3)
    s.conn.close_connection()
    s.flush()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--max-seconds", type=float, default=20.0)
    args = ap.parse_args()
    log = JsonlLog(args.log)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", args.port))
    listener.listen(1)
    listener.settimeout(args.max_seconds)
    print("READY", flush=True)
    try:
        sock, addr = listener.accept()
        with sock:
            serve(sock, log, f"{addr[0]}:{addr[1]}")
    finally:
        log.close()
        listener.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
