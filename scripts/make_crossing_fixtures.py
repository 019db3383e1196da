#!/usr/bin/env python3
"""HAND-WRITTEN captures of an SSE result around a client's FIN, in tests/fixtures/crossing/ (see
tests/test_slow_link.py). No SDK peer can be made to lose a segment on cue, so these are written segment by
segment with `scripts/synth_capture.py`'s pcapng writer, as a capture at the client's end of a slow link
would hold them:

    .venv/bin/python scripts/make_crossing_fixtures.py [--out tests/fixtures/crossing]

Both: a 2026-07-28 Streamable HTTP `tools/call` (id 2) POSTed on one connection and answered
`200 text/event-stream`; the client closes the connection (FIN) to cancel it.

  sse-tail-before-fin.pcapng   the result's event is written in two segments; the tail is captured before
                               the client's FIN, the head was lost and is captured only as a retransmission
                               after it (acknowledging the FIN): the server had written the whole result
                               before the close. Then the server's FIN.
  sse-after-fin.pcapng         the nearest miss: the whole event is first sent after the client's FIN,
                               in segments that acknowledge it: a write after the close.
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
SYN, FIN, ACK, PSH = 0x02, 0x01, 0x10, 0x08
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


def write(out: Path, *, tail_first: bool) -> None:
    cap = Pcapng(out)
    post = request()
    segment(cap, True, C0, 0, SYN)
    segment(cap, False, S0, C0 + 1, SYN | ACK)
    segment(cap, True, C0 + 1, S0 + 1, ACK)
    segment(cap, True, C0 + 1, S0 + 1, ACK | PSH, post)
    fin = C0 + 1 + len(post)  # the client's FIN; an acknowledgement of fin + 1 covers it
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n\r\n"
    segment(cap, False, S0 + 1, fin, ACK | PSH, head)
    result = {"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "exported"}]}}
    event = f"event: message\ndata: {json.dumps(result)}\n\n".encode()
    first, second = event[:40], event[40:]
    at = S0 + 1 + len(head)
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=REPO / "tests" / "fixtures" / "crossing")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    write(args.out / "sse-tail-before-fin.pcapng", tail_first=True)
    write(args.out / "sse-after-fin.pcapng", tail_first=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
