"""The least a pure-Python capture audit must do, for `scripts/bench.py pcap` ("python floor"): read a pcapng of
Ethernet/IPv4/TCP (as the bench's loopback capture is) block by block from memory, decode each packet's headers
with `struct`, find its TCP stream in a dict, and parse with orjson the JSON-RPC message of each payload that
starts with a JSON object or holds an SSE `data:` line. No reassembly, HTTP, sessions, rules or report: what is
left above this is the cost of doing those things, not of Python itself.

Usage: capture_floor.py FILE  (prints packets, payloads and messages read)
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import orjson

BLOCK = struct.Struct("<II")
EPB_HEAD = struct.Struct("<IIIII")
TCP_HEAD = struct.Struct(">HHIIBBH")
EPB = 6
ETHERNET, IPV4_HEADER = 14, 20


def _message(payload: bytes) -> bool:
    start = payload.find(b"data: ")
    if start >= 0:
        end = payload.find(b"\n", start)
        text = payload[start + 6 : end if end >= 0 else len(payload)]
    elif payload[:1] == b"{":
        text = payload
    else:
        return False
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError:
        return False
    return True


def main(path: Path) -> None:
    data = path.read_bytes()
    streams: dict[tuple[bytes, int, bytes, int], int] = {}
    packets = payloads = messages = pos = 0
    while pos + 8 <= len(data):
        kind, length = BLOCK.unpack_from(data, pos)
        if length < 12:
            break
        if kind == EPB:
            packets += 1
            ip = pos + 28 + ETHERNET
            header = (data[ip] & 15) * 4
            total = int.from_bytes(data[ip + 2 : ip + 4], "big")
            tcp = ip + header
            sport, dport, seq, _ack, offset, _flags, _window = TCP_HEAD.unpack_from(data, tcp)
            key = (data[ip + 12 : ip + 16], sport, data[ip + 16 : ip + 20], dport)
            streams[key] = streams.get(key, seq)
            size = total - header - (offset >> 4) * 4
            if size > 0:
                payloads += 1
                start = tcp + (offset >> 4) * 4
                messages += _message(data[start : start + size])
        pos += length
    print(f"{packets} packets, {payloads} payloads, {messages} messages, {len(streams)} directions")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
