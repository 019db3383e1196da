#!/usr/bin/env python3
"""HAND-WRITTEN captures of an SSE result or notification around a client's FIN, in tests/fixtures/crossing/
(see tests/test_slow_link.py and tests/test_crossed_note.py). No SDK peer can be made to lose or hold a
segment on cue, so these are written segment by segment with `scripts/synth_capture.py`'s pcapng writer, as a
capture at the client's end of a slow link would hold them:

    .venv/bin/python scripts/make_crossing_fixtures.py [--out tests/fixtures/crossing]

Both: a 2026-07-28 Streamable HTTP `tools/call` (id 2) POSTed on one connection and answered
`200 text/event-stream`; the client closes the connection (FIN) to cancel it.

  sse-tail-before-fin.pcapng   the result's event is written in two segments; the tail is captured before
                               the client's FIN, the head was lost and is captured only as a retransmission
                               after it (acknowledging the FIN): the server had written the whole result
                               before the close. Then the server's FIN.
  sse-after-fin.pcapng         the nearest miss: the whole event is first sent after the client's FIN,
                               in segments that acknowledge it: a write after the close.
  note-before-fin.pcapng       no result: the server's next event is a `notifications/message` (a log line,
                               not progress), captured after the client's FIN but acknowledging only the
                               POST: the server wrote it before the FIN reached it, so it crossed the close.
  note-after-fin.pcapng        the nearest miss: the same segment acknowledges the FIN: a write after it.

Over HTTP/2 (h2c with prior knowledge; frames made with the `h2` package, the client as HAND-WRITTEN as
the rest: no SDK client resets its TCP connection on cue), the same call on stream 1, answered
`200 text/event-stream` at once; then a TCP RST ends the connection and the server's DATA with the
result is captured after it:

  h2-result-after-client-rst.pcapng  the RST is the client's: a TCP that has taken a RST sends nothing
                               more, so the DATA left before the RST reached the server: it crossed it.
  h2-result-after-server-rst.pcapng  the reverse: the RST is the server's; nothing it sends after is read.

Over HTTP/1.1, the same SSE exchange; the client resets the connection (RST, as an aborting client's kernel
does) and the server's event with the result is captured later. The handshake's round trip is 0.1 ms, so
the reader keeps the connection a grace of 1 s (its floor) after the RST (`capture_pass.grace`):

  h1-result-inside-grace.pcapng  the event 0.9 s after the RST: sent before the RST reached the server (a
                               TCP that has taken a RST sends nothing more): read, as crossing it.
  h1-result-past-grace.pcapng    the event 1.1 s after it: past any round trip the capture shows, the
                               connection was finished; the bytes are counted as sent after the reset,
                               not read.
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synth_capture import Pcapng

REPO = Path(__file__).resolve().parent.parent
CLIENT, SERVER = b"\x7f\0\0\x01", b"\x7f\0\0\x02"
CPORT, SPORT = 40000, 8000
SYN, FIN, RST, ACK, PSH = 0x02, 0x01, 0x04, 0x10, 0x08
C0, S0 = 1000, 5000


def segment(cap: Pcapng, from_client: bool, seq: int, ack: int, flags: int, payload: bytes = b"") -> None:
    src, dst = (CLIENT, SERVER) if from_client else (SERVER, CLIENT)
    sport, dport = (CPORT, SPORT) if from_client else (SPORT, CPORT)
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, 5 << 4, flags, 65535, 0, 0)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp) + len(payload), 0, 0, 64, 6, 0, src, dst)
    cap.packet(ip + tcp + payload)


def request() -> bytes:
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "export", "arguments": {}, "_meta": meta},
    }
    body = json.dumps(call).encode()
    head = (
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.2:8000\r\nContent-Type: application/json\r\n"
        "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
        f"Mcp-Method: tools/call\r\nMcp-Name: export\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def open_sse_exchange(cap: Pcapng) -> tuple[int, int]:
    """The handshake, the POST and the `200 text/event-stream` head: the sequence number of the client's FIN
    to come (an acknowledgement of fin + 1 covers it) and of the server's next byte."""
    post = request()
    segment(cap, True, C0, 0, SYN)
    segment(cap, False, S0, C0 + 1, SYN | ACK)
    segment(cap, True, C0 + 1, S0 + 1, ACK)
    segment(cap, True, C0 + 1, S0 + 1, ACK | PSH, post)
    fin = C0 + 1 + len(post)
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n\r\n"
    segment(cap, False, S0 + 1, fin, ACK | PSH, head)
    return fin, S0 + 1 + len(head)


def write(out: Path, *, tail_first: bool) -> None:
    cap = Pcapng(out)
    fin, at = open_sse_exchange(cap)
    result = {"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "exported"}]}}
    event = f"event: message\ndata: {json.dumps(result)}\n\n".encode()
    first, second = event[:40], event[40:]
    if tail_first:
        segment(cap, False, at + len(first), fin, ACK | PSH, second)  # the head of the event was lost
        segment(cap, True, fin, at, ACK | FIN)
        segment(cap, False, at, fin + 1, ACK | PSH, first)  # its retransmission, after the FIN
    else:
        segment(cap, True, fin, at, ACK | FIN)
        segment(cap, False, at, fin + 1, ACK | PSH, first)
        segment(cap, False, at + len(first), fin + 1, ACK | PSH, second)
    end = at + len(event)
    segment(cap, False, end, fin + 1, ACK | FIN)
    segment(cap, True, fin + 1, end + 1, ACK)
    cap.close()


def write_note(out: Path, *, crossed: bool) -> None:
    cap = Pcapng(out)
    fin, at = open_sse_exchange(cap)
    segment(cap, True, fin, at, ACK | FIN)
    note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "exporting"}}
    event = f"event: message\ndata: {json.dumps(note)}\n\n".encode()
    segment(cap, False, at, fin if crossed else fin + 1, ACK | PSH, event)
    end = at + len(event)
    segment(cap, False, end, fin + 1, ACK | FIN)
    segment(cap, True, fin + 1, end + 1, ACK)
    cap.close()


def h2_exchange() -> tuple[bytes, bytes, bytes]:
    """The client's preface, settings and call on stream 1; the server's settings and response head; the
    server's DATA with the result and the stream's end."""
    import h2.config
    import h2.connection

    client = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    server = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
    client.initiate_connection()
    post = request()
    head, body = post.split(b"\r\n\r\n", 1)
    fields = [(b":method", b"POST"), (b":scheme", b"http"), (b":authority", b"127.0.0.2:8000"), (b":path", b"/mcp")]
    fields += [tuple(line.lower().split(b": ", 1)) for line in head.split(b"\r\n")[2:]]  # type: ignore[misc]
    client.send_headers(1, fields)
    client.send_data(1, body, end_stream=True)
    asked = client.data_to_send()
    server.initiate_connection()
    server.receive_data(asked)
    server.send_headers(1, [(b":status", b"200"), (b"content-type", b"text/event-stream")])
    answered = server.data_to_send()
    result = {"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "exported"}]}}
    server.send_data(1, f"event: message\ndata: {json.dumps(result)}\n\n".encode(), end_stream=True)
    return asked, answered, server.data_to_send()


def write_h2(out: Path, *, client_resets: bool) -> None:
    cap = Pcapng(out)
    asked, answered, late = h2_exchange()
    segment(cap, True, C0, 0, SYN)
    segment(cap, False, S0, C0 + 1, SYN | ACK)
    segment(cap, True, C0 + 1, S0 + 1, ACK)
    segment(cap, True, C0 + 1, S0 + 1, ACK | PSH, asked)
    c, s = C0 + 1 + len(asked), S0 + 1
    segment(cap, False, s, c, ACK | PSH, answered)
    s += len(answered)
    if client_resets:
        segment(cap, True, c, s, RST)
    else:
        segment(cap, False, s, c, RST)
    segment(cap, False, s, c, ACK | PSH, late)
    cap.close()


def write_rst(out: Path, *, late: float) -> None:
    cap = Pcapng(out)
    fin, at = open_sse_exchange(cap)
    segment(cap, True, fin, 0, RST)
    cap.ts += late - 0.0001  # the next packet adds 0.1 ms
    result = {"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "exported"}]}}
    segment(cap, False, at, fin, ACK | PSH, f"event: message\ndata: {json.dumps(result)}\n\n".encode())
    cap.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=REPO / "tests" / "fixtures" / "crossing")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    write(args.out / "sse-tail-before-fin.pcapng", tail_first=True)
    write(args.out / "sse-after-fin.pcapng", tail_first=False)
    write_note(args.out / "note-before-fin.pcapng", crossed=True)
    write_note(args.out / "note-after-fin.pcapng", crossed=False)
    write_h2(args.out / "h2-result-after-client-rst.pcapng", client_resets=True)
    write_h2(args.out / "h2-result-after-server-rst.pcapng", client_resets=False)
    write_rst(args.out / "h1-result-inside-grace.pcapng", late=0.9)
    write_rst(args.out / "h1-result-past-grace.pcapng", late=1.1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
