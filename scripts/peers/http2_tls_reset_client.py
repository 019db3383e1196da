"""A hand-written HTTP/2 MCP client over TLS (ALPN h2) that resets its call's stream: the 2026-07-28 cancel
on HTTP/2 (RST_STREAM(CANCEL) on the request's stream), for scripts/record_mitmproxy_samples.py.

NOT the SDK: the SDK client over HTTP/2 (httpx2/httpcore2) never resets a stream when a call is abandoned
(sample_captures/http2/README.md), and mitmproxy takes HTTP/2 only over TLS. This is
`http2_raw_clients.reset_after` on a TLS socket that offers ALPN h2 and trusts CAFILE: the same POST of
tools/call slow_write(steps=10), without a progress token (so the server sends nothing before its result,
as for the SDK client's call), and RST_STREAM(CANCEL) on its stream SECONDS later; then 1.5 s reading what
still comes; GOAWAY and close.

Usage: http2_tls_reset_client.py PORT CAFILE SECONDS
"""

from __future__ import annotations

import json
import socket
import ssl
import sys
import time

import h2.connection
from h2.config import H2Configuration
from h2.errors import ErrorCodes

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from http2_raw_clients import Client, note
from http_raw_clients import tools_call_request


class TlsClient(Client):
    def __init__(self, port: int, cafile: str) -> None:  # Client's, on a TLS socket
        self.port = port
        context = ssl.create_default_context(cafile=cafile)
        context.set_alpn_protocols(["h2"])
        raw = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock = context.wrap_socket(raw, server_hostname="127.0.0.1")
        note(f"TLS {self.sock.version()}, ALPN {self.sock.selected_alpn_protocol()!r}")
        self.conn = h2.connection.H2Connection(H2Configuration(client_side=True, header_encoding="utf-8"))
        self.conn.initiate_connection()
        self.flush()

    def post(self, stream_id: int, name: str, arguments: dict[str, object]) -> None:
        body = json.loads(tools_call_request(self.port, 1, name, arguments).split(b"\r\n\r\n", 1)[1])
        del body["params"]["_meta"]["progressToken"]
        data = json.dumps(body, separators=(",", ":")).encode()
        headers = [
            (":method", "POST"),
            (":authority", f"127.0.0.1:{self.port}"),
            (":scheme", "https"),
            (":path", "/mcp"),
            ("accept", "application/json, text/event-stream"),
            ("content-type", "application/json"),
            ("content-length", str(len(data))),
            ("mcp-protocol-version", body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"]),
            ("mcp-method", "tools/call"),
            ("mcp-name", name),
        ]
        self.conn.send_headers(stream_id, headers)
        self.conn.send_data(stream_id, data, end_stream=True)
        self.flush()


def main() -> int:
    c = TlsClient(int(sys.argv[1]), sys.argv[2])
    c.post(1, "slow_write", {"steps": 10})
    events = c.read(time.monotonic() + float(sys.argv[3]))
    note(f"{len(events)} h2 events; RST_STREAM(CANCEL) on stream 1")
    c.conn.reset_stream(1, ErrorCodes.CANCEL)
    c.flush()
    later = c.read(time.monotonic() + 1.5)
    note(f"after the reset: {len(later)} h2 events ({[type(e).__name__ for e in later]})")
    c.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
