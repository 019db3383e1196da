"""Hand-written HTTP/2 MCP clients (the `h2` package over a plain socket, h2c with prior knowledge)
for the HTTP/2 sample captures.

These are NOT the SDK. They exist because the SDK client over HTTP/2 (httpx2/httpcore2) never resets
a stream: when a call is abandoned it only forgets the stream (see sample_captures/http2/README.md).
Each speaks just enough 2026-07-28 Streamable HTTP (one POST, the routing headers, the `_meta`
version; the body is the one `http_raw_clients.tools_call_request` builds) to get an SSE reply.

  reset          PORT   POST tools/call slow_write(steps=10) on stream 1; after the 3rd progress
                        event send RST_STREAM(CANCEL) on it (the 2026-07-28 cancel on HTTP/2:
                        closing the request's stream); stay 1.5 s reading whatever still comes;
                        then GOAWAY(NO_ERROR) and close.
  stops-reading  PORT   SETTINGS_INITIAL_WINDOW_SIZE 1024 and no connection window beyond 65535;
                        POST tools/call flood(count=200, pad=200); read, but never grant window
                        (no WINDOW_UPDATE): the server's stream window runs out while it has more
                        to send; after 2 s send RST_STREAM(CANCEL), stay 0.5 s, GOAWAY and close.

  reset-after    PORT HOST SECONDS   POST tools/call slow_write(steps=1) on stream 1 to HOST; SECONDS
                        later send RST_STREAM(CANCEL) on it whatever came; stay 1.5 s; GOAWAY, close.

Usage: http2_raw_clients.py MODE PORT [HOST SECONDS]
"""

from __future__ import annotations

import socket
import sys
import time

import h2.connection
import h2.events
from h2.config import H2Configuration
from h2.errors import ErrorCodes
from h2.settings import SettingCodes

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from http_raw_clients import VERSION, tools_call_request


def note(text: str) -> None:
    print(f"[h2-raw-client {time.time():.6f}] {text}", file=sys.stderr, flush=True)


class Client:
    def __init__(self, port: int, settings: dict[int, int] | None = None, host: str = "127.0.0.1") -> None:
        self.port = port
        self.sock = socket.create_connection((host, port), timeout=10)
        self.conn = h2.connection.H2Connection(H2Configuration(client_side=True, header_encoding="utf-8"))
        self.conn.initiate_connection()
        if settings:
            self.conn.update_settings(settings)
        self.flush()

    def flush(self) -> None:
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def post(self, stream_id: int, name: str, arguments: dict[str, object]) -> None:
        body = tools_call_request(self.port, 1, name, arguments).split(b"\r\n\r\n", 1)[1]
        headers = [
            (":method", "POST"),
            (":authority", f"127.0.0.1:{self.port}"),
            (":scheme", "http"),
            (":path", "/mcp"),
            ("accept", "application/json, text/event-stream"),
            ("content-type", "application/json"),
            ("content-length", str(len(body))),
            ("mcp-protocol-version", VERSION),
            ("mcp-method", "tools/call"),
            ("mcp-name", name),
        ]
        self.conn.send_headers(stream_id, headers)
        self.conn.send_data(stream_id, body, end_stream=True)
        self.flush()

    def read(self, until: float, stop: object = None, grant: bool = True) -> list[h2.events.Event]:
        """Events until `until` (monotonic) or until `stop(events)` says so; grants window if `grant`."""
        seen: list[h2.events.Event] = []
        while time.monotonic() < until:
            self.sock.settimeout(max(0.01, until - time.monotonic()))
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                break
            if not data:
                note("server closed the connection")
                break
            for event in self.conn.receive_data(data):
                seen.append(event)
                if grant and isinstance(event, h2.events.DataReceived):
                    self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            self.flush()
            if stop is not None and stop(seen):  # type: ignore[operator]
                break
        return seen

    def close(self) -> None:
        self.conn.close_connection()
        self.flush()
        self.sock.close()


def progress_count(events: list[h2.events.Event]) -> int:
    return sum(e.data.count(b"notifications/progress") for e in events if isinstance(e, h2.events.DataReceived))


def reset(port: int) -> None:
    c = Client(port)
    c.post(1, "slow_write", {"steps": 10})
    events = c.read(time.monotonic() + 10, lambda seen: progress_count(seen) >= 3)
    note(f"{progress_count(events)} progress events seen; RST_STREAM(CANCEL) on stream 1")
    c.conn.reset_stream(1, ErrorCodes.CANCEL)
    c.flush()
    later = c.read(time.monotonic() + 1.5)
    note(f"after the reset: {len(later)} h2 events ({[type(e).__name__ for e in later]})")
    c.close()


def reset_after(port: int, host: str, seconds: float) -> None:
    c = Client(port, host=host)
    c.post(1, "slow_write", {"steps": 1})
    c.read(time.monotonic() + seconds)
    note(f"{seconds} s after the call: RST_STREAM(CANCEL) on stream 1")
    c.conn.reset_stream(1, ErrorCodes.CANCEL)
    c.flush()
    later = c.read(time.monotonic() + 1.5)
    note(f"after the reset: {len(later)} h2 events ({[type(e).__name__ for e in later]})")
    c.close()


def stops_reading(port: int) -> None:
    c = Client(port, {SettingCodes.INITIAL_WINDOW_SIZE: 1024})
    c.post(1, "flood", {"count": 200, "pad": 200})
    events = c.read(time.monotonic() + 2.0, grant=False)
    note(f"read {progress_count(events)} progress events without granting window; RST_STREAM(CANCEL)")
    c.conn.reset_stream(1, ErrorCodes.CANCEL)
    c.flush()
    c.read(time.monotonic() + 0.5, grant=False)
    c.close()


def main() -> int:
    mode, port = sys.argv[1], int(sys.argv[2])
    if mode == "reset-after":
        reset_after(port, sys.argv[3], float(sys.argv[4]))
        return 0
    {"reset": reset, "stops-reading": stops_reading}[mode](port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
