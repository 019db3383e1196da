"""Hostile captures written frame by frame, for the bounds fixtures and the memory measurements.

A peer that holds a thousand HTTP/2 responses open at 12 MiB each is not something a loopback recording
can make in a test's time, and no real peer does it on purpose; so these captures are written here:
IPv4/TCP segments (handshake, data, FIN) in a pcapng (LINKTYPE_RAW), carrying bytes that real protocol
engines produced: HTTP/2 frames from the `h2` package (both ends, so every frame is valid on its own
connection) and HTTP/1.1 text. Checksums are left zero (tshark does not check them by default).

    .venv/bin/python scripts/synth_capture.py h2-bodies OUT STREAMS MIB [--end]
    .venv/bin/python scripts/synth_capture.py h2-sse OUT STREAMS MIB [--end]
    .venv/bin/python scripts/synth_capture.py h1-bodies OUT CONNECTIONS MIB
    .venv/bin/python scripts/synth_capture.py h2-goaway OUT
    .venv/bin/python scripts/synth_capture.py h2-goaway-processed OUT
    .venv/bin/python scripts/synth_capture.py h1-sse-event OUT --event TYPE
    .venv/bin/python scripts/synth_capture.py h1-encoded OUT --coding gzip|zstd|bomb|damaged
    .venv/bin/python scripts/synth_capture.py h2-end-after-reset OUT [--end]

`h2-bodies`: one connection, STREAMS tools/call POSTs answered `200 application/json`, their bodies of MIB
MiB each sent round-robin in 16 KiB DATA frames (all in flight at once); with `--end` each body ends as
whole JSON, else none ends (the capture stops with them open). `h2-sse`: the same as `text/event-stream`,
each body one SSE event. `h1-bodies`: CONNECTIONS connections, each
one POST answered with a Content-Length body of MIB MiB of which all but the last byte is sent.
`h2-goaway` (a HAND-WRITTEN flow, no server we know does it on purpose): initialize on stream 1, tools/call
id 2 on stream 3 and its notifications/cancelled on stream 5; the server answers GOAWAY(last_stream=1)
(RFC 9113 6.8: streams 3 and 5 never processed) and closes; the client sends the tools/call again on a
second connection and gets its result. `h2-goaway-processed`, the nearest miss: the same up to the GOAWAY,
whose last_stream=5 says both were processed (the server closes with them open), and no re-send.
`h1-sse-event` (a HAND-WRITTEN server: no SDK server names its events): Streamable HTTP over HTTP/1.1,
2025-11-25; initialize answered as JSON with a session id, then tools/call id 2 answered as a chunked
`text/event-stream` whose one event, of type TYPE (`--event debug`; `message` for the nearest miss), holds
the call's result, and which then ends; the client then cancels id 2 on a second connection (202).
`h1-encoded` (a HAND-WRITTEN server, for what no recording of a sane server shows): the same exchange, the
result of tools/call id 2 a Content-Length `application/json` body with a Content-Encoding: `gzip` (Python's
gzip, what GZipMiddleware writes), `zstd` (Debian's /usr/bin/zstd: a coding cancelwire does not read), `bomb`
(gzip -9 of the result followed by 32 MiB of spaces, which JSON allows: 33 KB inflating to 32 MiB) or
`damaged` (the gzip result with a byte of its deflate data flipped).
`h2-end-after-reset` (a HAND-WRITTEN flow): 2026-07-28, tools/call id 1 on stream 1 answered as
`text/event-stream` with one progress event; the client resets stream 1 (RST_STREAM CANCEL, the cancel);
after the reset reached it, the server sends an empty DATA frame with END_STREAM on the stream (the end of
the response, no payload); with `--end` it sends the call's result in that frame instead (a write: the
nearest miss, which must fire). Both connection ends are `h2` state machines.
"""

from __future__ import annotations

import argparse
import gzip
import json
import struct
import subprocess
from collections.abc import Iterator
from pathlib import Path

import h2.connection
import h2.events
from h2.config import H2Configuration
from h2.settings import SettingCodes

SEGMENT = 60_000
"""TCP payload bytes per frame (below the IPv4 length limit)."""
T0 = 1_796_227_626.0


class Pcapng:
    """A little-endian pcapng with one LINKTYPE_RAW interface, written frame by frame."""

    def __init__(self, path: Path) -> None:
        self.out = path.open("wb")
        self.ts = T0
        shb = struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1)
        self._block(0x0A0D0D0A, shb)
        self._block(1, struct.pack("<HHI", 101, 0, 0))  # LINKTYPE_RAW, snaplen 0 (none)

    def _block(self, kind: int, body: bytes) -> None:
        size = 12 + len(body)
        self.out.write(struct.pack("<II", kind, size) + body + struct.pack("<I", size))

    def packet(self, data: bytes) -> None:
        self.ts += 0.0001
        units = int(self.ts * 1_000_000)
        padded = data + b"\0" * (-len(data) % 4)
        self._block(6, struct.pack("<IIIII", 0, units >> 32, units & 0xFFFFFFFF, len(data), len(data)) + padded)

    def close(self) -> None:
        self.out.close()


class Tcp:
    """One TCP connection between 127.0.0.1:cport and 127.0.0.2:8000, its sequence numbers kept."""

    def __init__(self, cap: Pcapng, cport: int) -> None:
        self.cap, self.cport = cap, cport
        self.seq = {True: 1000, False: 5000}
        self._segment(True, b"", 0x02)
        self._segment(False, b"", 0x12)
        self._segment(True, b"", 0x10)

    def _segment(self, from_client: bool, payload: bytes, flags: int) -> None:
        src, dst = (b"\x7f\0\0\x01", b"\x7f\0\0\x02") if from_client else (b"\x7f\0\0\x02", b"\x7f\0\0\x01")
        sport, dport = (self.cport, 8000) if from_client else (8000, self.cport)
        ack = self.seq[not from_client] if flags != 0x02 else 0
        seq = self.seq[from_client]
        tcp = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, 5 << 4, flags, 65535, 0, 0)
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp) + len(payload), 0, 0, 64, 6, 0, src, dst)
        self.cap.packet(ip + tcp + payload)
        self.seq[from_client] = (seq + len(payload) + (1 if flags & 0x03 else 0)) & 0xFFFFFFFF

    def send(self, from_client: bool, data: bytes) -> None:
        for at in range(0, len(data), SEGMENT):
            self._segment(from_client, data[at : at + SEGMENT], 0x18)

    def fin(self, from_client: bool) -> None:
        self._segment(from_client, b"", 0x11)


def call(req_id: int) -> bytes:
    params = {"name": "export", "arguments": {}, "_meta": {"progressToken": req_id}}
    return json.dumps({"jsonrpc": "2.0", "id": req_id, "method": "tools/call", "params": params}).encode()


def body_chunks(req_id: int, size: int, end: bool, sse: bool = False) -> Iterator[bytes]:
    """A JSON result of about `size` bytes (a text of 'x's) in 16 KiB pieces; whole JSON only if `end`;
    as one SSE event (`data: ` before it) when `sse`."""
    head = f'{{"jsonrpc":"2.0","id":{req_id},"result":{{"content":[{{"type":"text","text":"'.encode()
    head = b"data: " + head if sse else head
    tail = b'"}],"isError":false}}' + (b"\n\n" if sse else b"")
    yield head
    left = size - len(head) - len(tail)
    while left > 0:
        yield b"x" * min(16_384, left)
        left -= 16_384
    if end:
        yield tail


def h2_bodies(out: Path, streams: int, mib: float, end: bool, media: str = "application/json") -> None:
    cap = Pcapng(out)
    tcp = Tcp(cap, 40000)
    client = h2.connection.H2Connection(H2Configuration(client_side=True, header_encoding="utf-8"))
    server = h2.connection.H2Connection(H2Configuration(client_side=False, header_encoding="utf-8"))
    client.initiate_connection()
    client.update_settings({SettingCodes.INITIAL_WINDOW_SIZE: 2**31 - 1})
    client.increment_flow_control_window(2**31 - 1 - 65_535)
    server.initiate_connection()
    server.update_settings({SettingCodes.MAX_CONCURRENT_STREAMS: 1000})

    def flush() -> None:
        for sender, receiver, from_client in ((client, server, True), (server, client, False)):
            data = sender.data_to_send()
            if data:
                tcp.send(from_client, data)
                receiver.receive_data(data)

    flush()
    flush()
    sids = [1 + 2 * n for n in range(streams)]
    for n, sid in enumerate(sids):
        headers = [(":method", "POST"), (":authority", "127.0.0.2:8000"), (":scheme", "http"), (":path", "/mcp")]
        client.send_headers(sid, [*headers, ("content-type", "application/json")])
        client.send_data(sid, call(n + 1), end_stream=True)
    flush()
    for sid in sids:
        server.send_headers(sid, [(":status", "200"), ("content-type", media)])
    flush()
    sse = media == "text/event-stream"
    pieces = [body_chunks(n + 1, int(mib * (1 << 20)), end, sse) for n in range(streams)]
    while pieces:
        for sid, piece in list(zip(sids, pieces, strict=True)):
            chunk = next(piece, None)
            if chunk is None:
                server.end_stream(sid)
                sids.remove(sid)
                pieces.remove(piece)
            else:
                server.send_data(sid, chunk)
        flush()
    cap.close()


def h1_bodies(out: Path, connections: int, mib: float) -> None:
    cap = Pcapng(out)
    size = int(mib * (1 << 20))
    for n in range(connections):
        tcp = Tcp(cap, 40000 + n)
        body = call(n + 1)
        head = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.2:8000\r\n"
        head += f"Content-Type: application/json\r\nContent-Length: {len(body)}"
        tcp.send(True, head.encode() + b"\r\n\r\n" + body)
        answer = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {size}\r\n\r\n"
        tcp.send(False, answer.encode() + b"".join(body_chunks(n + 1, size, False))[: size - 1])
    cap.close()


def post(tcp: Tcp, message: dict[str, object], sid: str | None) -> None:
    """A client's JSON-RPC POST on TCP, as the SDK's client sends it (session id and revision once known)."""
    body = json.dumps(message).encode()
    head = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.2:8000\r\nContent-Type: application/json\r\n"
    head += "Accept: application/json, text/event-stream\r\n"
    if sid is not None:
        head += f"Mcp-Session-Id: {sid}\r\nMCP-Protocol-Version: 2025-11-25\r\n"
    tcp.send(True, f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)


def h1_sse_event(out: Path, event: str, coding: str | None = None) -> None:
    """See the module doc (`h1-sse-event`; with `coding`, `h1-encoded`)."""
    cap = Pcapng(out)
    calls, cancels = Tcp(cap, 40000), Tcp(cap, 40001)
    session = "3f1c0b5e9d2a4c7e8f60a1b2c3d4e5f6"

    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "synth", "version": "1"}}
    post(calls, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}, None)
    info = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "synth"}}
    result = json.dumps({"jsonrpc": "2.0", "id": 1, "result": info}).encode()
    head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: {session}\r\n"
    calls.send(False, f"{head}Content-Length: {len(result)}\r\n\r\n".encode() + result)
    params = {"name": "export", "arguments": {}}
    post(calls, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}, session)
    answer = json.dumps({"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "done"}]}})
    if coding is not None:
        body = encoded(answer.encode(), coding)
        head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: {coding_header(coding)}\r\n"
        calls.send(False, f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
    else:
        calls.send(False, b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
        block = f"event: {event}\ndata: {answer}\n\n".encode()
        calls.send(False, f"{len(block):x}\r\n".encode() + block + b"\r\n0\r\n\r\n")
    cancel: dict[str, object] = {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": 2, "reason": "slow"},
    }
    post(cancels, cancel, session)
    cancels.send(False, b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
    for tcp in (cancels, calls):
        tcp.fin(True)
        tcp.fin(False)
    cap.close()


def coding_header(coding: str) -> str:
    return "zstd" if coding == "zstd" else "gzip"


def encoded(body: bytes, coding: str) -> bytes:
    """`body` in the coding `h1-encoded` names (deterministic: gzip's header time is fixed at 0)."""
    if coding == "zstd":
        return subprocess.run(["/usr/bin/zstd", "-q", "-c", "-19"], input=body, capture_output=True, check=True).stdout
    if coding == "bomb":
        return gzip.compress(body + b" " * (32 << 20), compresslevel=9, mtime=0)
    packed = bytearray(gzip.compress(body, mtime=0))
    if coding == "damaged":
        packed[len(packed) // 2] ^= 0xFF  # inside the deflate data, before the CRC
    return bytes(packed)


class H2Pair:
    """A client and a server `h2` connection over one `Tcp`, their frames written as they go."""

    def __init__(self, cap: Pcapng, cport: int) -> None:
        self.tcp = Tcp(cap, cport)
        self.client = h2.connection.H2Connection(H2Configuration(client_side=True, header_encoding="utf-8"))
        self.server = h2.connection.H2Connection(H2Configuration(client_side=False, header_encoding="utf-8"))
        self.client.initiate_connection()
        self.server.initiate_connection()
        self.flush()

    def flush(self) -> None:
        for sender, receiver, from_client in ((self.client, self.server, True), (self.server, self.client, False)):
            data = sender.data_to_send()
            if data:
                self.tcp.send(from_client, data)
                receiver.receive_data(data)

    def post(self, sid: int, message: dict[str, object], session: str | None) -> None:
        headers = [(":method", "POST"), (":authority", "127.0.0.2:8000"), (":scheme", "http"), (":path", "/mcp")]
        headers += [("content-type", "application/json"), ("accept", "application/json, text/event-stream")]
        headers += [("mcp-session-id", session)] if session else []
        self.client.send_headers(sid, headers)
        self.client.send_data(sid, json.dumps(message).encode(), end_stream=True)
        self.flush()

    def answer(self, sid: int, message: dict[str, object], session: str) -> None:
        headers = [(":status", "200"), ("content-type", "application/json"), ("mcp-session-id", session)]
        self.server.send_headers(sid, headers)
        self.server.send_data(sid, json.dumps(message).encode(), end_stream=True)
        self.flush()

    def close(self) -> None:
        self.tcp.fin(True)
        self.tcp.fin(False)


def h2_goaway(out: Path, last_stream: int) -> None:
    cap = Pcapng(out)
    session, version = "goaway-session-1", "2025-06-18"
    info = {"name": "synth", "version": "1"}
    init = {"protocolVersion": version, "capabilities": {}, "clientInfo": info}
    first = H2Pair(cap, 40000)
    first.post(1, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}, None)
    ready = {"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": info}
    first.answer(1, {"jsonrpc": "2.0", "id": 1, "result": ready}, session)
    first.post(3, json.loads(call(2)), session)
    cancel = {"requestId": 2, "reason": "user gave up"}
    first.post(5, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel}, session)
    first.server.close_connection(last_stream_id=last_stream)
    first.flush()
    first.close()
    if last_stream >= 5:
        cap.close()
        return
    second = H2Pair(cap, 40001)
    second.post(1, json.loads(call(2)), session)
    done = {"content": [{"type": "text", "text": "exported"}], "isError": False}
    second.answer(1, {"jsonrpc": "2.0", "id": 2, "result": done}, session)
    second.close()
    cap.close()


def h2_end_after_reset(out: Path, result: bool) -> None:
    cap = Pcapng(out)
    pair = H2Pair(cap, 40000)
    version = "2026-07-28"
    params = {"name": "export", "arguments": {}, "_meta": {"progressToken": 1, "protocolVersion": version}}
    headers = [(":method", "POST"), (":authority", "127.0.0.2:8000"), (":scheme", "http"), (":path", "/mcp")]
    headers += [("content-type", "application/json"), ("accept", "application/json, text/event-stream")]
    headers += [("mcp-protocol-version", version), ("mcp-method", "tools/call"), ("mcp-name", "export")]
    pair.client.send_headers(1, headers)
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    pair.client.send_data(1, json.dumps(message).encode(), end_stream=True)
    pair.flush()
    pair.server.send_headers(1, [(":status", "200"), ("content-type", "text/event-stream")])
    progress = {"progressToken": 1, "progress": 1, "total": 3}
    note = {"jsonrpc": "2.0", "method": "notifications/progress", "params": progress}
    pair.server.send_data(1, f"data: {json.dumps(note)}\n\n".encode())
    pair.flush()
    pair.client.reset_stream(1, error_code=8)  # CANCEL
    reset = pair.client.data_to_send()
    pair.tcp.send(True, reset)
    # the server's frame is made before its h2 state machine reads the reset (h2 refuses a closed stream),
    # but it goes on the wire after the reset arrived: its ack covers the reset
    done = {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "exported"}]}}
    pair.server.send_data(1, f"data: {json.dumps(done)}\n\n".encode() if result else b"", end_stream=True)
    pair.tcp.send(False, pair.server.data_to_send())
    pair.close()
    cap.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    kinds = ["h2-bodies", "h2-sse", "h1-bodies", "h2-goaway", "h2-goaway-processed", "h1-sse-event", "h1-encoded"]
    kinds.append("h2-end-after-reset")
    ap.add_argument("kind", choices=kinds)
    ap.add_argument("out", type=Path)
    ap.add_argument("count", type=int, nargs="?", default=0)
    ap.add_argument("mib", type=float, nargs="?", default=0.0)
    ap.add_argument("--end", action="store_true")
    ap.add_argument("--event", default="debug", help="h1-sse-event: the SSE event type of the result")
    ap.add_argument("--coding", choices=["gzip", "zstd", "bomb", "damaged"], default="gzip", help="h1-encoded")
    args = ap.parse_args()
    if args.kind == "h1-encoded":
        h1_sse_event(args.out, "message", args.coding)
    elif args.kind == "h1-sse-event":
        h1_sse_event(args.out, args.event)
    elif args.kind == "h2-end-after-reset":
        h2_end_after_reset(args.out, args.end)
    elif args.kind.startswith("h2-goaway"):
        h2_goaway(args.out, 5 if args.kind == "h2-goaway-processed" else 1)
    elif args.kind.startswith("h2-"):
        media = "text/event-stream" if args.kind == "h2-sse" else "application/json"
        h2_bodies(args.out, args.count, args.mib, args.end, media)
    else:
        h1_bodies(args.out, args.count, args.mib)


if __name__ == "__main__":
    main()
