"""Hand-written, deliberately misbehaving HTTP MCP clients (raw sockets) for the sample captures.

These are NOT the SDK.  They exist because the SDK client never behaves this way; each one speaks
just enough 2026-07-28 Streamable HTTP (one POST, the routing headers, ``_meta`` version) to get an
SSE reply from the server, then misbehaves on purpose.

  stops-reading  PORT    SO_RCVBUF=4096 before connect; POST tools/call flood(count=400, pad=200);
                         read the response head and the first few hundred bytes, then stop reading
                         for 3 s without closing (the receive window drops to zero while the server
                         still has data), then close() with unread data in the receive buffer (Linux
                         answers that with a RST, not a FIN).
  half-close     PORT    POST tools/call slow_write(steps=6); read until 2 progress events arrived;
                         shutdown(SHUT_WR) (a FIN: the client abandons the exchange); keep reading
                         (so the server's writes after the FIN are visible and ACKed) until the
                         result arrived; close().  Later server writes hit a closed socket and the
                         kernel answers with a RST.

Usage: http_raw_clients.py MODE PORT
"""

from __future__ import annotations

import json
import socket
import sys
import time

VERSION = "2026-07-28"


def note(text: str) -> None:
    print(f"[raw-client {time.time():.6f}] {text}", file=sys.stderr, flush=True)


def tools_call_request(port: int, req_id: int, name: str, arguments: dict[str, object]) -> bytes:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": req_id,
            "method": "tools/call",
            "params": {
                "name": name,
                "arguments": arguments,
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": VERSION,
                    "io.modelcontextprotocol/clientInfo": {"name": "cancelwire-raw-client", "version": "0"},
                    "io.modelcontextprotocol/clientCapabilities": {},
                    "progressToken": req_id,
                },
            },
        },
        separators=(",", ":"),
    ).encode()
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
        f"MCP-Protocol-Version: {VERSION}\r\nMcp-Method: tools/call\r\nMcp-Name: {name}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def stops_reading(port: int) -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(10)
    s.connect(("127.0.0.1", port))
    s.sendall(tools_call_request(port, 1, "flood", {"count": 400, "pad": 200}))
    got = b""
    while b"\r\n\r\n" not in got or len(got) < 600:
        chunk = s.recv(256)
        if not chunk:
            break
        got += chunk
    status_line = got.split(b"\r\n", 1)[0]
    note(f"read {len(got)} bytes (status line {status_line!r}); now not reading for 3 s")
    time.sleep(3.0)
    note("closing with unread data in the receive buffer (expect RST)")
    s.close()


def half_close(port: int) -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(("127.0.0.1", port))
    s.sendall(tools_call_request(port, 1, "slow_write", {"steps": 6}))
    buf = b""

    def read_until(done: object) -> None:
        nonlocal buf
        while not done():  # type: ignore[operator]
            chunk = s.recv(4096)
            if not chunk:
                note("server closed")
                return
            buf += chunk

    read_until(lambda: buf.count(b"notifications/progress") >= 2)
    note("2 progress events seen; shutdown(SHUT_WR) -> FIN")
    s.shutdown(socket.SHUT_WR)
    read_until(lambda: b'"result"' in buf)
    note("the result arrived after our FIN; close()")
    s.close()


def main() -> int:
    mode, port = sys.argv[1], int(sys.argv[2])
    {"stops-reading": stops_reading, "half-close": half_close}[mode](port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
