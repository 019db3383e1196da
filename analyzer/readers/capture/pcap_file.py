"""The records of a pcap or pcapng file, read in-process: each packet's link type, time and bytes.

Formats by their specifications: pcap (the libpcap file format, draft-ietf-opsawg-pcap: microsecond and
nanosecond magics, either byte order) and pcapng (draft-ietf-opsawg-pcapng: every Section Header Block
starts a section with its own byte order and interfaces; each Interface Description Block gives a link type,
`if_tsresol` and `if_tsoffset`; packets come in Enhanced, Simple and obsolete Packet Blocks; other blocks
are skipped). Packets are numbered from 1 in file order, as tshark numbers frames.

The file is read `CHUNK` bytes at a time and records are cut from that buffer (one read per chunk, not two
per packet). Every length is hostile: a record or block is read only once its claimed length is within
bounds (`MAX_PACKET`, `MAX_BLOCK`) and present in the file. Damage ends the reading with `Damage`, naming the
frame after which nothing more could be read; what came before it has been yielded.

The fields `struct` unpacks per packet are declared `int` before they are: `struct` gives `Any`, on which
compiled code (setup.py) does every comparison and sum through the generic object protocol.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO, Final

PCAP_MAGICS: Final = {
    b"\xd4\xc3\xb2\xa1": ("<", 1_000_000),
    b"\xa1\xb2\xc3\xd4": (">", 1_000_000),
    b"\x4d\x3c\xb2\xa1": ("<", 1_000_000_000),
    b"\xa1\xb2\x3c\x4d": (">", 1_000_000_000),
}
PCAPNG_MAGIC: Final = b"\x0a\x0d\x0d\x0a"
MAX_PACKET: Final = 262_144
"""Captured bytes of one packet: Wireshark's largest standard packet (WTAP_MAX_PACKET_SIZE_STANDARD)."""
MAX_BLOCK: Final = 16 << 20
"""A pcapng block longer than this is damage, not data (Wireshark's own bound is the same)."""
CHUNK = 1 << 20
"""Bytes read from the file at a time (a block longer than this is read whole, up to `MAX_BLOCK`)."""
SHB: Final = 0x0A0D0D0A
IDB: Final = 1
PB: Final = 2
SPB: Final = 3
EPB: Final = 6
OPT_TSRESOL: Final = 9
OPT_TSOFFSET: Final = 14


@dataclass(frozen=True, slots=True)
class Damage:
    """Why the file stops being readable, after `frame` packets were read."""

    frame: int
    detail: str
    cut: bool
    """The file ends inside a record (cut short), rather than holding a record that cannot be one."""


@dataclass(slots=True)
class Interface:
    linktype: int
    per_second: int
    """Timestamp units per second (`if_tsresol`)."""
    unit: int
    """Nanoseconds per unit when whole, else 0 (finer than a nanosecond, or a power of 2 above 2**9)."""
    offset: int = 0
    """Nanoseconds added to every timestamp (`if_tsoffset`, in seconds)."""


Packet = tuple[int, int, bytes, int]
"""(link type, nanoseconds since 1970, captured bytes, original length)."""


class _Input:
    """The file a chunk at a time: `buf[at:]` are the bytes not consumed yet."""

    __slots__ = ("at", "buf", "f")

    def __init__(self, f: BinaryIO) -> None:
        self.f = f
        self.buf = b""
        self.at = 0

    def ahead(self, size: int) -> int:
        """Have SIZE bytes from `at` in `buf` if the file still holds them; how many there are."""
        left = len(self.buf) - self.at
        if left < size:
            self.buf = self.buf[self.at :] + self.f.read(max(size - left, CHUNK))
            self.at = 0
            left = len(self.buf)
        return left

    def read(self, size: int) -> bytes:
        """The next SIZE bytes, fewer at the end of the file."""
        self.ahead(size)
        out = self.buf[self.at : self.at + size]
        self.at += len(out)
        return out


def packets(f: BinaryIO, damage: list[Damage]) -> Iterator[Packet]:
    """Every packet of the file in order; damage (at most one) is appended to `damage` when reading stops."""
    src = _Input(f)
    magic = src.read(4)
    if magic in PCAP_MAGICS:
        yield from _pcap(src, magic, damage)
    elif magic == PCAPNG_MAGIC:
        yield from _pcapng(src, damage)
    else:
        damage.append(Damage(0, f"not a pcap or pcapng file (magic {magic.hex() or 'none'})", cut=False))


def _pcap(src: _Input, magic: bytes, damage: list[Damage]) -> Iterator[Packet]:
    order, per_second = PCAP_MAGICS[magic]
    head = src.read(20)
    if len(head) < 20:
        damage.append(Damage(0, "the pcap file header is cut short", cut=True))
        return
    linktype = struct.unpack(order + "I", head[16:20])[0] & 0x0FFFFFFF  # the top bits say FCS, not the type
    unpack, ahead = struct.Struct(order + "IIII").unpack_from, src.ahead
    unit = 1_000_000_000 // per_second
    number = 0
    sec: int
    frac: int
    caplen: int
    origlen: int
    while (left := ahead(16)) >= 16:
        sec, frac, caplen, origlen = unpack(src.buf, src.at)
        if caplen > MAX_PACKET:
            damage.append(Damage(number, f"a packet record claims {caplen} bytes (more than {MAX_PACKET})", False))
            return
        if (left := ahead(16 + caplen)) < 16 + caplen:
            damage.append(Damage(number, f"a packet is cut short ({left - 16} of its {caplen} bytes)", True))
            return
        at = src.at + 16
        src.at = at + caplen
        number += 1
        yield linktype, sec * 1_000_000_000 + frac * unit, src.buf[at : at + caplen], origlen
    if left:
        damage.append(Damage(number, f"a packet record header is cut short ({left} of 16 bytes)", True))


def _pcapng(src: _Input, damage: list[Damage]) -> Iterator[Packet]:
    section = _Section(src, damage)
    while section.open():
        yield from section.blocks()
        if not section.next_section:
            return


class _Section:
    """The blocks of one pcapng file, section by section (each Section Header Block resets byte order and
    interfaces)."""

    def __init__(self, src: _Input, damage: list[Damage]) -> None:
        self.src = src
        self.damage = damage
        self.number = 0
        self.order = "<"
        self.interfaces: list[Interface] = []
        self.next_section = False
        self.little = True
        """The section's byte order (`order`) is little-endian."""
        self.pb = struct.Struct("")

    def _stop(self, detail: str, *, cut: bool) -> bool:
        self.damage.append(Damage(self.number, detail, cut))
        return False

    def open(self) -> bool:
        """Read a Section Header Block whose type (the magic) was read already."""
        rest = self.src.read(8)
        if len(rest) < 8:
            return self._stop("a section header block is cut short", cut=True)
        bom = rest[4:8]
        if bom == b"\x4d\x3c\x2b\x1a":
            self.order = "<"
        elif bom == b"\x1a\x2b\x3c\x4d":
            self.order = ">"
        else:
            return self._stop(f"a section header block has no byte-order magic ({bom.hex()})", cut=False)
        if self._body(SHB, struct.unpack(self.order + "I", rest[:4])[0], 12) < 0:
            return False
        self.interfaces = []
        self.little, self.pb = self.order == "<", struct.Struct(self.order + "HHIIII")
        return True

    def _body(self, kind: int, length: int, done: int) -> int:
        """Where in `src.buf` the rest of a block of LENGTH bytes begins, of which DONE were read (-1 for
        damage); the block is consumed, its trailing length checked."""
        if length < done + 4 or length % 4 or length > MAX_BLOCK:
            self._stop(f"a pcapng block (type {kind:#x}) claims a length of {length} bytes", cut=False)
            return -1
        src = self.src
        if (left := src.ahead(length - done)) < length - done:
            self._stop(f"a pcapng block (type {kind:#x}) is cut short ({done + left} of {length} bytes)", cut=True)
            return -1
        at = src.at
        src.at = end = at + length - done
        if struct.unpack_from(self.order + "I", src.buf, end - 4)[0] != length:
            self._stop(f"a pcapng block (type {kind:#x}) ends with another length than it starts with", cut=False)
            return -1
        return at

    def blocks(self) -> Iterator[Packet]:
        """The packets of the section; stops at the next section (`next_section`), the end or damage."""
        src, little = self.src, self.little
        self.next_section = False
        while (left := src.ahead(8)) >= 8:
            buf, at = src.buf, src.at
            kind, length = _u32(buf, at, little), _u32(buf, at + 4, little)
            if kind == SHB:  # its magic reads the same in either byte order
                src.at = at + 4
                self.next_section = True
                return
            end = at + length
            if (
                12 <= length <= MAX_BLOCK
                and not length % 4
                and end <= len(buf)
                and _u32(buf, end - 4, little) == length
            ):
                src.at, at = end, at + 8  # a sound block already in the buffer: the usual case
            else:
                src.at = at + 8
                if (at := self._body(kind, length, 8)) < 0:  # read on, or name the damage
                    return
            if kind in (EPB, PB, SPB):
                packet = self._packet(kind, src.buf, at, at + length - 12)
                if packet is None:
                    return
                self.number += 1
                yield packet
            elif kind == IDB and not self._interface(src.buf[at : at + length - 12]):
                return
        if left:
            self._stop(f"a pcapng block header is cut short ({left} of 8 bytes)", cut=True)

    def _interface(self, body: bytes) -> bool:
        if len(body) < 8:
            return self._stop("an interface description block is too short", cut=False)
        linktype = struct.unpack(self.order + "H", body[:2])[0]
        iface = Interface(linktype, 1_000_000, 1000)
        for code, value in self._options(body[8:]):
            if code == OPT_TSRESOL and value:
                v = value[0]
                exp = v & 0x7F
                if exp > (63 if v & 0x80 else 19):
                    return self._stop(f"an interface has a timestamp resolution that cannot be ({v:#x})", cut=False)
                iface.per_second = 2**exp if v & 0x80 else 10**exp
                iface.unit = 0 if 1_000_000_000 % iface.per_second else 1_000_000_000 // iface.per_second
            elif code == OPT_TSOFFSET and len(value) == 8:
                iface.offset = struct.unpack(self.order + "q", value)[0] * 1_000_000_000
        self.interfaces.append(iface)
        return True

    def _options(self, raw: bytes) -> Iterator[tuple[int, bytes]]:
        at, unpack = 0, struct.Struct(self.order + "HH").unpack_from
        while at + 4 <= len(raw):
            code, size = unpack(raw, at)
            if code == 0:
                return
            yield code, raw[at + 4 : at + 4 + size]
            at += 4 + (size + 3) // 4 * 4

    def _packet(self, kind: int, buf: bytes, at: int, end: int) -> Packet | None:
        """The packet in the block body `buf[at:end]`."""
        order = self.order
        iface_id: int
        units: int
        caplen: int
        origlen: int
        if kind == SPB:
            if end - at < 4:
                return self._stopped("a simple packet block is too short")
            (origlen,) = struct.unpack_from(order + "I", buf, at)
            iface_id, units, data = 0, -1, buf[at + 4 : min(at + 4 + origlen, end)]
        else:
            if end - at < 20:
                return self._stopped("a packet block is too short")
            high: int
            low: int
            if kind == EPB:
                little = self.little
                iface_id, high, low = _u32(buf, at, little), _u32(buf, at + 4, little), _u32(buf, at + 8, little)
                caplen, origlen = _u32(buf, at + 12, little), _u32(buf, at + 16, little)
            else:
                iface_id, _, high, low, caplen, origlen = self.pb.unpack_from(buf, at)
            if caplen > end - at - 20 or caplen > MAX_PACKET:
                return self._stopped(f"a packet block claims {caplen} captured bytes in a block of {end - at + 12}")
            units, data = (high << 32) | low, buf[at + 20 : at + 20 + caplen]
        if iface_id >= len(self.interfaces):
            return self._stopped(f"a packet names interface {iface_id}, which no interface block described")
        iface = self.interfaces[iface_id]
        if units < 0:
            ns = 0
        elif iface.unit:
            ns = units * iface.unit + iface.offset
        else:
            ns = units * 1_000_000_000 // iface.per_second + iface.offset
        return iface.linktype, ns, data, origlen

    def _stopped(self, detail: str) -> Packet | None:
        """Damage inside a packet block: None, as `_packet` gives when it has no packet."""
        self._stop(detail, cut=False)
        return None


def _u32(buf: bytes, at: int, little: bool) -> int:
    """The 32-bit field at AT, in the section's byte order. Read a byte at a time: compiled, that is a few
    instructions, where a `struct` call costs as much as the rest of a block's work."""
    if little:
        return buf[at] | buf[at + 1] << 8 | buf[at + 2] << 16 | buf[at + 3] << 24
    return buf[at] << 24 | buf[at + 1] << 16 | buf[at + 2] << 8 | buf[at + 3]
