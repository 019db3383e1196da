"""The records of a pcap or pcapng file, read in-process: each packet's link type, time and bytes.

Formats by their specifications: pcap (the libpcap file format, draft-ietf-opsawg-pcap: microsecond and
nanosecond magics, either byte order) and pcapng (draft-ietf-opsawg-pcapng: every Section Header Block
starts a section with its own byte order and interfaces; each Interface Description Block gives a link type,
`if_tsresol` and `if_tsoffset`; packets come in Enhanced, Simple and obsolete Packet Blocks; other blocks
are skipped). Packets are numbered from 1 in file order, as tshark numbers frames.

Every length is hostile: a record or block is read only once its claimed length is within bounds
(`MAX_PACKET`, `MAX_BLOCK`) and present in the file. Damage ends the reading with `Damage`, naming the
frame after which nothing more could be read; what came before it has been yielded.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

PCAP_MAGICS = {
    b"\xd4\xc3\xb2\xa1": ("<", 1_000_000),
    b"\xa1\xb2\xc3\xd4": (">", 1_000_000),
    b"\x4d\x3c\xb2\xa1": ("<", 1_000_000_000),
    b"\xa1\xb2\x3c\x4d": (">", 1_000_000_000),
}
PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"
MAX_PACKET = 262_144
"""Captured bytes of one packet: Wireshark's largest standard packet (WTAP_MAX_PACKET_SIZE_STANDARD)."""
MAX_BLOCK = 16 << 20
"""A pcapng block longer than this is damage, not data (Wireshark's own bound is the same)."""
BOM = 0x1A2B3C4D
SHB, IDB, PB, SPB, EPB = 0x0A0D0D0A, 1, 2, 3, 6
OPT_TSRESOL, OPT_TSOFFSET = 9, 14


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
    offset: int = 0
    """Seconds added to every timestamp (`if_tsoffset`)."""


Packet = tuple[int, int, int, bytes, int]
"""(link type, seconds, nanoseconds, captured bytes, original length)."""


def packets(f: BinaryIO, damage: list[Damage]) -> Iterator[Packet]:
    """Every packet of the file in order; damage (at most one) is appended to `damage` when reading stops."""
    magic = f.read(4)
    if magic in PCAP_MAGICS:
        yield from _pcap(f, magic, damage)
    elif magic == PCAPNG_MAGIC:
        yield from _pcapng(f, damage)
    else:
        damage.append(Damage(0, f"not a pcap or pcapng file (magic {magic.hex() or 'none'})", cut=False))


def _pcap(f: BinaryIO, magic: bytes, damage: list[Damage]) -> Iterator[Packet]:
    order, per_second = PCAP_MAGICS[magic]
    head = f.read(20)
    if len(head) < 20:
        damage.append(Damage(0, "the pcap file header is cut short", cut=True))
        return
    linktype = struct.unpack(order + "I", head[16:20])[0] & 0x0FFFFFFF  # the top bits say FCS, not the type
    record = struct.Struct(order + "IIII")
    read, unpack = f.read, record.unpack
    number = 0
    while True:
        rh = read(16)
        if len(rh) < 16:
            if rh:
                damage.append(Damage(number, f"a packet record header is cut short ({len(rh)} of 16 bytes)", True))
            return
        sec, frac, caplen, origlen = unpack(rh)
        if caplen > MAX_PACKET:
            damage.append(Damage(number, f"a packet record claims {caplen} bytes (more than {MAX_PACKET})", False))
            return
        data = read(caplen)
        if len(data) < caplen:
            damage.append(Damage(number, f"a packet is cut short ({len(data)} of its {caplen} bytes)", True))
            return
        number += 1
        ns = frac * 1000 if per_second == 1_000_000 else frac
        yield linktype, sec + ns // 1_000_000_000, ns % 1_000_000_000, data, origlen


def _pcapng(f: BinaryIO, damage: list[Damage]) -> Iterator[Packet]:
    section = _Section(f, damage)
    head: bytes = PCAPNG_MAGIC
    while section.open(head):
        yield from section.blocks()
        head = section.next_section
        if not head:
            return


class _Section:
    """The blocks of one pcapng file, section by section (each Section Header Block resets byte order and
    interfaces)."""

    def __init__(self, f: BinaryIO, damage: list[Damage]) -> None:
        self.f = f
        self.damage = damage
        self.number = 0
        self.order = "<"
        self.interfaces: list[Interface] = []
        self.next_section = b""

    def _stop(self, detail: str, *, cut: bool) -> bool:
        self.damage.append(Damage(self.number, detail, cut))
        return False

    def open(self, magic: bytes) -> bool:
        """Read a Section Header Block whose type (MAGIC) was read already."""
        rest = self.f.read(8)
        if len(rest) < 8:
            return self._stop("a section header block is cut short", cut=True)
        bom = rest[4:8]
        if bom == b"\x4d\x3c\x2b\x1a":
            self.order = "<"
        elif bom == b"\x1a\x2b\x3c\x4d":
            self.order = ">"
        else:
            return self._stop(f"a section header block has no byte-order magic ({bom.hex()})", cut=False)
        length = struct.unpack(self.order + "I", rest[:4])[0]
        body = self._body(SHB, length, 12)
        if body is None:
            return False
        self.interfaces = []
        return True

    def _body(self, kind: int, length: int, done: int) -> bytes | None:
        """The rest of a block of LENGTH bytes of which DONE were read, trailing length checked."""
        if length < done + 4 or length % 4 or length > MAX_BLOCK:
            self._stop(f"a pcapng block (type {kind:#x}) claims a length of {length} bytes", cut=False)
            return None
        body = self.f.read(length - done)
        if len(body) < length - done:
            self._stop(f"a pcapng block (type {kind:#x}) is cut short ({done + len(body)} of {length} bytes)", cut=True)
            return None
        if struct.unpack(self.order + "I", body[-4:])[0] != length:
            self._stop(f"a pcapng block (type {kind:#x}) ends with another length than it starts with", cut=False)
            return None
        return body[:-4]

    def blocks(self) -> Iterator[Packet]:
        """The packets of the section; stops at the next section (`next_section`), the end or damage."""
        read, unpack = self.f.read, struct.Struct(self.order + "II").unpack
        self.next_section = b""
        while True:
            head = read(8)
            if len(head) < 8:
                if head:
                    self._stop(f"a pcapng block header is cut short ({len(head)} of 8 bytes)", cut=True)
                return
            if head[:4] == PCAPNG_MAGIC:
                self.f.seek(-4, 1)
                self.next_section = PCAPNG_MAGIC
                return
            kind, length = unpack(head)
            body = self._body(kind, length, 8)
            if body is None:
                return
            if kind in (EPB, PB, SPB):
                packet = self._packet(kind, body)
                if packet is None:
                    return
                self.number += 1
                yield packet
            elif kind == IDB and not self._interface(body):
                return

    def _interface(self, body: bytes) -> bool:
        if len(body) < 8:
            return self._stop("an interface description block is too short", cut=False)
        linktype = struct.unpack(self.order + "H", body[:2])[0]
        iface = Interface(linktype, 1_000_000)
        for code, value in self._options(body[8:]):
            if code == OPT_TSRESOL and value:
                v = value[0]
                exp = v & 0x7F
                if exp > (63 if v & 0x80 else 19):
                    return self._stop(f"an interface has a timestamp resolution that cannot be ({v:#x})", cut=False)
                iface.per_second = 2**exp if v & 0x80 else 10**exp
            elif code == OPT_TSOFFSET and len(value) == 8:
                iface.offset = struct.unpack(self.order + "q", value)[0]
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

    def _packet(self, kind: int, body: bytes) -> Packet | None:
        order = self.order
        if kind == SPB:
            if len(body) < 4:
                return self._stopped("a simple packet block is too short")
            (origlen,) = struct.unpack(order + "I", body[:4])
            iface_id, units, data = 0, None, body[4 : 4 + origlen]
        else:
            if len(body) < 20:
                return self._stopped("a packet block is too short")
            if kind == EPB:
                iface_id, high, low, caplen, origlen = struct.unpack(order + "IIIII", body[:20])
            else:
                iface_id, _, high, low, caplen, origlen = struct.unpack(order + "HHIIII", body[:20])
            if caplen > len(body) - 20 or caplen > MAX_PACKET:
                return self._stopped(f"a packet block claims {caplen} captured bytes in a block of {len(body) + 12}")
            units, data = (high << 32) | low, body[20 : 20 + caplen]
        if iface_id >= len(self.interfaces):
            return self._stopped(f"a packet names interface {iface_id}, which no interface block described")
        iface = self.interfaces[iface_id]
        if units is None:
            return iface.linktype, 0, 0, data, origlen
        per = iface.per_second
        sec, rest = divmod(units, per)
        return iface.linktype, sec + iface.offset, rest * 1_000_000_000 // per, data, origlen

    def _stopped(self, detail: str) -> Packet | None:
        """Damage inside a packet block: None, as `_packet` gives when it has no packet."""
        self._stop(detail, cut=False)
        return None
