"""Hand-built pcap and pcapng files for the direct capture reader's tests (tests/test_capture_direct.py):
packets from the link layer up (Ethernet with VLAN tags, Linux cooked v1/v2, BSD loopback, raw IP; IPv4,
IPv6 with extension headers and fragments; TCP with options), in either byte order and any timestamp
resolution. Built by the formats' specifications; tshark reads every one of them."""

from __future__ import annotations

import socket
import struct

ETHERNET, NULL, RAW, LOOP, SLL, SLL2, IPV4, IPV6 = 1, 0, 101, 108, 113, 276, 228, 229


def tcp(sport: int, dport: int, seq: int, ack: int, flags: int, payload: bytes = b"", window: int = 512) -> bytes:
    """A TCP segment; a SYN carries MSS, SACK-permitted and a window scale of 7 (NOPs between)."""
    options = b"\x02\x04\x05\xb4\x04\x02\x01\x03\x03\x07" + b"\x00\x00" if flags & 0x02 else b""
    offset = (20 + len(options)) // 4
    head = struct.pack("!HHIIHHHH", sport, dport, seq, ack, offset << 12 | flags, window, 0, 0)
    return head + options + payload


def ipv4(src: str, dst: str, segment: bytes, *, frag: int = 0x4000, proto: int = 6) -> bytes:
    """An IPv4 packet (DF set by default; FRAG is the flags and offset word)."""
    return (
        struct.pack("!BBHHHBBH", 0x45, 0, 20 + len(segment), 1, frag, 64, proto, 0)
        + socket.inet_aton(src)
        + socket.inet_aton(dst)
        + segment
    )


def ipv6(src: str, dst: str, segment: bytes, *, extensions: bytes = b"", first: int = 6) -> bytes:
    """An IPv6 packet; EXTENSIONS are the headers between it and SEGMENT, FIRST the next header after it."""
    body = extensions + segment
    return (
        struct.pack("!IHBB", 0x60000000, len(body), first, 64)
        + socket.inet_pton(socket.AF_INET6, src)
        + socket.inet_pton(socket.AF_INET6, dst)
        + body
    )


def hop_by_hop(nxt: int) -> bytes:
    return bytes([nxt, 0]) + b"\x01\x04\x00\x00\x00\x00"  # a PadN option filling 8 bytes


def fragment_header(nxt: int, offset: int, more: bool) -> bytes:
    return struct.pack("!BBHI", nxt, 0, offset << 3 | int(more), 0x1234)


def ether(ip: bytes, tags: tuple[int, ...] = ()) -> bytes:
    """Ethernet II; TAGS are 802.1Q/802.1ad tag types, outermost first, each with VLAN 5."""
    kind = 0x0800 if ip[0] >> 4 == 4 else 0x86DD
    head = b"\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02"
    for tag in tags:
        head += struct.pack("!HH", tag, 5)
    return head + struct.pack("!H", kind) + ip


def sll(ip: bytes) -> bytes:
    kind = 0x0800 if ip[0] >> 4 == 4 else 0x86DD
    return struct.pack("!HHH8sH", 0, 772, 6, b"\x00" * 8, kind) + ip


def sll2(ip: bytes) -> bytes:
    kind = 0x0800 if ip[0] >> 4 == 4 else 0x86DD
    return struct.pack("!HHIHBB8s", kind, 0, 1, 772, 0, 6, b"\x00" * 8) + ip


def null(ip: bytes, order: str) -> bytes:
    family = 2 if ip[0] >> 4 == 4 else 30
    return struct.pack(order + "I", family) + ip


def pcap(packets: list[tuple[int, int, bytes]], *, linktype: int, order: str = "<", nano: bool = False) -> bytes:
    """A pcap file: PACKETS are (seconds, fraction in µs or ns, bytes)."""
    magic = 0xA1B23C4D if nano else 0xA1B2C3D4
    out = struct.pack(order + "IHHiIII", magic, 2, 4, 0, 0, 262144, linktype)
    for sec, frac, data in packets:
        out += struct.pack(order + "IIII", sec, frac, len(data), len(data)) + data
    return out


def block(kind: int, body: bytes, order: str) -> bytes:
    body += b"\x00" * (-len(body) % 4)
    return struct.pack(order + "II", kind, len(body) + 12) + body + struct.pack(order + "I", len(body) + 12)


def section(order: str) -> bytes:
    return block(0x0A0D0D0A, struct.pack(order + "IHHq", 0x1A2B3C4D, 1, 0, -1), order)


def interface(linktype: int, order: str, tsresol: int | None = None, tsoffset: int | None = None) -> bytes:
    options = b""
    if tsresol is not None:
        options += struct.pack(order + "HH", 9, 1) + bytes([tsresol]) + b"\x00" * 3
    if tsoffset is not None:
        options += struct.pack(order + "HHq", 14, 8, tsoffset)
    if options:
        options += struct.pack(order + "HH", 0, 0)
    return block(1, struct.pack(order + "HHI", linktype, 0, 0) + options, order)


def epb(iface: int, units: int, data: bytes, order: str, *, caplen: int | None = None) -> bytes:
    size = len(data) if caplen is None else caplen
    body = struct.pack(order + "IIIII", iface, units >> 32, units & 0xFFFFFFFF, size, len(data)) + data
    return block(6, body, order)
