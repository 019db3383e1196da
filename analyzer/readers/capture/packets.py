"""One captured packet down to its TCP segment: link layer, IPv4 or IPv6, TCP, by the protocols' specs.

Link types (the LINKTYPE_ values of pcap and pcapng): Ethernet with any number of 802.1Q / 802.1ad tags,
Linux cooked captures v1 (SLL) and v2 (SLL2), BSD loopback (NULL, host byte order either way; LOOP, network
order) and raw IPv4/IPv6. IPv6 extension headers are walked to TCP. IP fragments are not reassembled: a
fragment is named (`NoSegment.FRAGMENT`) and its bytes are not read as TCP.
"""

from __future__ import annotations

import socket
import struct
from enum import IntEnum
from typing import Final

ETHERNET: Final = 1
NULL: Final = 0
RAW: Final = 101
RAW_OLD: Final = 12
RAW_OLD2: Final = 14
LOOP: Final = 108
SLL: Final = 113
SLL2: Final = 276
IPV4: Final = 228
IPV6: Final = 229
KNOWN_LINKTYPES: Final = frozenset({ETHERNET, NULL, RAW, RAW_OLD, RAW_OLD2, LOOP, SLL, SLL2, IPV4, IPV6})
ETH_IPV4: Final = 0x0800
ETH_IPV6: Final = 0x86DD
VLAN_TAGS: Final = frozenset({0x8100, 0x88A8, 0x9100})
BSD_AF_INET6: Final = frozenset({24, 28, 30, 10})
"""AF_INET6 on NetBSD/OpenBSD, FreeBSD, macOS, Linux: a NULL/LOOP header names the family by the OS's number."""
IPV6_EXTENSIONS: Final = frozenset({0, 43, 60, 135, 139, 140})
"""Hop-by-hop, routing, destination options, mobility, HIP, shim6: length in 8-octet units after the first."""
TCP: Final = 6
IPV6_FRAGMENT: Final = 44
IPV6_AH: Final = 51
TUNNELS: Final = frozenset({4, 41, 47})
"""IPv4 in IP, IPv6 in IP, GRE: tshark decodes what they carry; this reader names them (`NoSegment.TUNNEL`)."""


class NoSegment(IntEnum):
    """Why a packet gives no TCP segment."""

    NOT_TCP = 0
    """Not IP, not TCP, or a TCP header that cannot be one (tshark gives no stream for it either)."""
    FRAGMENT = 1
    """An IP fragment: not reassembled."""
    UNKNOWN_LINK = 2
    TUNNEL = 3
    """IP in IP or GRE: what it carries is not read."""


Segment = tuple[str, str, int, int, int, int, int, int, bytes, int, int]
"""(src, dst, sport, dport, seq, ack, flags, window as sent, captured payload, TCP payload length, window
scale option of a SYN or -1)."""

MAX_ADDRESSES: Final = 4096
_ADDRESSES: Final[dict[bytes, str]] = {}


def decode(linktype: int, data: bytes, reported: int) -> Segment | NoSegment:
    """The TCP segment in one packet of REPORTED bytes on the wire (DATA may be fewer: the snaplen), or why
    there is none. An IP length past the packet's end counts to its end, as in Wireshark."""
    if linktype == ETHERNET:
        return _ether(data, 12, reported)
    if linktype in (RAW, RAW_OLD, RAW_OLD2, IPV4, IPV6):
        return _ip(data, 0, reported)
    if linktype == SLL:
        return _ether(data, 14, reported)
    if linktype == SLL2:
        return _ether(data, 0, reported, start=20)
    if linktype in (NULL, LOOP):
        if len(data) < 4:
            return NoSegment.NOT_TCP
        little, big = struct.unpack_from("<I", data)[0], struct.unpack_from(">I", data)[0]
        family = min(little, big)  # host byte order of the writer, whichever that was (LOOP: network order)
        return _ip(data, 4, reported) if family == 2 or family in BSD_AF_INET6 else NoSegment.NOT_TCP
    return NoSegment.UNKNOWN_LINK


def _ether(data: bytes, at: int, reported: int, start: int = -1) -> Segment | NoSegment:
    """The ethertype at AT (then VLAN tags), the network layer after it (or at START when given)."""
    if len(data) < at + 2:
        return NoSegment.NOT_TCP
    kind = _u16(data, at)
    at += 2
    while kind in VLAN_TAGS and len(data) >= at + 4:
        kind = _u16(data, at + 2)
        at += 4
    if kind != ETH_IPV4 and kind != ETH_IPV6:
        return NoSegment.NOT_TCP
    return _ip(data, start if start >= 0 else at, reported)


def _ip(data: bytes, at: int, reported: int) -> Segment | NoSegment:
    if len(data) < at + 1:
        return NoSegment.NOT_TCP
    version = data[at] >> 4
    if version == 4:
        return _ipv4(data, at, reported)
    if version == 6:
        return _ipv6(data, at, reported)
    return NoSegment.NOT_TCP


def _ipv4(data: bytes, at: int, reported: int) -> Segment | NoSegment:
    if len(data) < at + 20:
        return NoSegment.NOT_TCP
    ihl = (data[at] & 0x0F) * 4
    total = _u16(data, at + 2) or reported - at  # 0: a segmentation offload capture, as Wireshark reads it
    if ihl < 20 or total < ihl:
        return NoSegment.NOT_TCP
    if _u16(data, at + 6) & 0x3FFF:  # more fragments, or an offset
        return NoSegment.FRAGMENT
    if data[at + 9] != TCP:
        return NoSegment.TUNNEL if data[at + 9] in TUNNELS else NoSegment.NOT_TCP
    return _tcp(
        data, at + ihl, min(at + total, reported), _addr(data[at + 12 : at + 16]), _addr(data[at + 16 : at + 20])
    )


def _ipv6(data: bytes, at: int, reported: int) -> Segment | NoSegment:
    if len(data) < at + 40:
        return NoSegment.NOT_TCP
    end = min(at + 40 + (_u16(data, at + 4) or reported - at - 40), reported)  # 0: a jumbogram (length in an option)
    nxt, here = data[at + 6], at + 40
    while nxt != TCP:
        if len(data) < here + 8:
            return NoSegment.NOT_TCP
        if nxt == IPV6_FRAGMENT:
            if _u16(data, here + 2) & 0xFFF9:  # an offset or more fragments (an atomic fragment is whole)
                return NoSegment.FRAGMENT
            size = 8
        elif nxt in IPV6_EXTENSIONS:
            size = (data[here + 1] + 1) * 8
        elif nxt == IPV6_AH:
            size = (data[here + 1] + 2) * 4
        else:
            return NoSegment.TUNNEL if nxt in TUNNELS else NoSegment.NOT_TCP
        nxt, here = data[here], here + size
    return _tcp(data, here, end, _addr(data[at + 8 : at + 24]), _addr(data[at + 24 : at + 40]))


def _tcp(data: bytes, at: int, end: int, src: str, dst: str) -> Segment | NoSegment:
    if len(data) < at + 20:
        return NoSegment.NOT_TCP
    offset_flags = _u16(data, at + 12)
    header = (offset_flags >> 12) * 4
    length = end - at - header
    if header < 20 or length < 0 or len(data) < at + header:
        return NoSegment.NOT_TCP
    flags = offset_flags & 0x0FFF
    scale = _window_scale(data, at + 20, at + header) if flags & 0x02 else -1
    sport, dport = _u16(data, at), _u16(data, at + 2)
    seq, ack, window = _u32(data, at + 4), _u32(data, at + 8), _u16(data, at + 14)
    return src, dst, sport, dport, seq, ack, flags, window, data[at + header : end], length, scale


def _window_scale(data: bytes, at: int, end: int) -> int:
    """The window scale option of a SYN (RFC 7323: a shift of at most 14), or -1 without one."""
    while at < end:
        kind = data[at]
        if kind == 0:
            break
        if kind == 1:
            at += 1
            continue
        if at + 1 >= end or data[at + 1] < 2:
            break
        if kind == 3 and data[at + 1] == 3 and at + 2 < end:
            return min(data[at + 2], 14)
        at += data[at + 1]
    return -1


def _u16(data: bytes, at: int) -> int:
    """The big-endian 16-bit field at AT. Header fields are read a byte at a time: compiled, that is a few
    instructions, where a `struct` call costs as much as the rest of a packet's header work."""
    return data[at] << 8 | data[at + 1]


def _u32(data: bytes, at: int) -> int:
    """The big-endian 32-bit field at AT."""
    return data[at] << 24 | data[at + 1] << 16 | data[at + 2] << 8 | data[at + 3]


def _addr(raw: bytes) -> str:
    """An address as tshark prints it (dotted IPv4; IPv6 compressed as RFC 5952, by the C library); the last
    `MAX_ADDRESSES` seen are kept, as a capture holds few and every packet names two."""
    text = _ADDRESSES.get(raw)
    if text is None:
        if len(_ADDRESSES) >= MAX_ADDRESSES:
            _ADDRESSES.clear()
        text = _ADDRESSES[raw] = socket.inet_ntop(socket.AF_INET if len(raw) == 4 else socket.AF_INET6, raw)
    return text
