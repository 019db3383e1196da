"""The capture's frames read in-process (`--capture-reader direct`): the same `Frame`s tshark's field pass
gives (`tshark_fields.parse_line`), from the file itself (`pcap_file`, `packets`), without starting tshark.

What tshark adds above the bytes is done as tshark 4.0 does it with the pass's settings (no sequence
analysis, no reassembly): `tcp.stream` numbers conversations (an address and port pair, either way round)
in order of their first TCP segment, and a SYN whose sequence number differs from the first one seen in
that direction starts a new stream (ports reused); `tcp.window_size` is the window shifted by the sender's
window scale once both SYNs carried the option. Times are tshark's `frame.time_epoch`: the nanoseconds of
the file, as a float rounded once.

What it does not read is named, never dropped: IP fragments (`capture.ip-fragment`; tshark reassembles
them, this reader does not), packets of a link type or a tunnel (IP in IP, GRE) it does not know
(`capture.link-unknown`; `auto` reads
such a capture with tshark instead when its interface blocks say so up front), and damage to the file
(`capture.truncated`, naming the frame after which nothing more could be read).
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Iterator
from operator import truediv
from pathlib import Path
from typing import BinaryIO, Final

from ...errors import InputError
from ...model import AnomalyName
from ...model.timestamps import EARLIEST, LATEST
from .frames import Frame, ReadProblem
from .packets import KNOWN_LINKTYPES, NoSegment, Segment, decode
from .pcap_file import EPB, IDB, MAX_BLOCK, PB, PCAP_MAGICS, PCAPNG_MAGIC, SPB, Damage, packets

SYN_ONLY: Final = 0x02
SYN: Final = 0x02
ACK: Final = 0x10
SHOWN_FRAMES = 10
MAX_LEADING_BLOCKS = 64
"""Blocks looked at before the first packet to find the interfaces (`linktypes_known`)."""
"""Frames named in an anomaly's detail (the count says how many more)."""


class DirectFrames:
    """The frames of one capture file, and afterwards what could not be read (`problems`)."""

    def __init__(self, path: Path, name: str) -> None:
        self.path = path
        self.name = name
        self.conversations: dict[tuple[str, int, str, int], int] = {}
        """(lower address, its port, higher address, its port) -> the conversation's latest stream. Kept to
        the end, as tshark numbers them (a segment of ports seen long ago is still that stream)."""
        self.bases = array("q")
        """Per stream and direction (2 * stream + 0: from the lower address and port of the key, + 1: from
        the higher), the first sequence number; -1 before the direction's first segment."""
        self.scales = array("b")
        """Per stream and direction, the window scale: -1 unknown (no SYN seen), -2 not scaled (a SYN
        without the option), else the shift. With its key, about 200 B a conversation, where an object and
        two lists per conversation made it about 410 B (issue 20: 5,759 of them in the big capture)."""
        self.streams = 0
        self.fragments: list[int] = [0]
        """[count, first frames...]"""
        self.unknown: dict[int, list[int]] = {}
        """Link type -> [count, first frame]."""
        self.tunnels: list[int] = [0, 0]
        """[count, first frame] of IP-in-IP and GRE packets."""
        self.damage: list[Damage] = []
        self.count = 0

    def frames(self) -> Iterator[Frame | int]:
        """Every frame: a `Frame` for a TCP segment, the frame's number for any other packet."""
        with self.path.open("rb") as f:
            number = 0
            for linktype, ns, data, reported in packets(f, self.damage):
                number += 1
                seg = decode(linktype, data, max(reported, len(data)))
                if type(seg) is tuple:
                    yield self._frame(number, ns, seg)
                    continue
                if seg is NoSegment.FRAGMENT:
                    self._note_fragment(number)
                elif seg is NoSegment.UNKNOWN_LINK:
                    self.unknown.setdefault(linktype, [0, number])[0] += 1
                elif seg is NoSegment.TUNNEL:
                    self.tunnels[1] = self.tunnels[1] or number
                    self.tunnels[0] += 1
                yield number
            self.count = number

    def _frame(self, number: int, ns: int, seg: Segment) -> Frame:
        src, dst, sport, dport, seq, ack, flags, window, payload, length, scale = seg
        side = 0 if src < dst or (src == dst and sport <= dport) else 1
        key = (src, sport, dst, dport) if side == 0 else (dst, dport, src, sport)
        stream = self.conversations.get(key)
        bases = self.bases
        if stream is None or (flags & 0x12 == SYN_ONLY and bases[2 * stream + side] not in (-1, seq)):
            stream = self.conversations[key] = self.streams
            self.streams += 1
            bases.extend((-1, -1))
            self.scales.extend((-1, -1))
        at = 2 * stream + side
        if bases[at] == -1:
            bases[at] = seq
        if flags & SYN:
            _syn_scale(self.scales, at, at if key[:2] == key[2:] else at ^ 1, flags, scale)
        elif (shift := self.scales[at]) >= 0:
            window <<= shift
        ts = truediv(ns, 1_000_000_000)  # exactly rounded, as tshark's decimal text; mypyc's `/` rounds ns first
        plausible = EARLIEST <= ts < LATEST
        return Frame(
            number,
            ts if plausible else None,
            stream,
            src,
            dst,
            sport,
            dport,
            seq,
            ack,
            flags,
            window,
            payload,
            length,
            (),
            "" if plausible else "{}.{:09d}".format(*divmod(ns, 1_000_000_000)),
        )

    def _note_fragment(self, number: int) -> None:
        self.fragments[0] += 1
        if len(self.fragments) <= SHOWN_FRAMES:
            self.fragments.append(number)

    def problems(self) -> list[ReadProblem]:
        """What was not read, once every frame is: IP fragments, unknown link types, damage."""
        if self.damage and self.count == 0:
            raise InputError(
                self.name, f"cannot read it as a capture: {self.damage[0].detail}", "is it a pcap/pcapng capture?"
            )
        out: list[ReadProblem] = []
        if self.fragments[0]:
            count, *first = self.fragments
            more = f" and {count - len(first)} more" if count > len(first) else ""
            out.append(
                ReadProblem(
                    AnomalyName.CAPTURE_IP_FRAGMENT,
                    f"{count} frame(s) are IP fragments, which this reader does not reassemble: frames "
                    f"{', '.join(map(str, first))}{more}; their TCP bytes are missing from the audit "
                    "(--capture-reader tshark reassembles them)",
                    first[0],
                )
            )
        for linktype, (count, first_frame) in sorted(self.unknown.items()):
            out.append(
                ReadProblem(
                    AnomalyName.CAPTURE_LINK_UNKNOWN,
                    f"{count} frame(s) have link type {linktype}, which this reader does not decode, the first "
                    f"frame {first_frame}; they were not read (--capture-reader tshark may read them)",
                    first_frame,
                )
            )
        if self.tunnels[0]:
            count, first_frame = self.tunnels
            out.append(
                ReadProblem(
                    AnomalyName.CAPTURE_LINK_UNKNOWN,
                    f"{count} frame(s) carry IP in IP or GRE, which this reader does not decode, the first frame "
                    f"{first_frame}; what they carry was not read (--capture-reader tshark reads it)",
                    first_frame,
                )
            )
        for damage in self.damage:
            detail = (
                f"the capture ends in the middle of a packet after frame {damage.frame}; everything before it was "
                f"read ({damage.detail})"
                if damage.cut
                else f"the capture cannot be read past frame {damage.frame}: {damage.detail}; everything before it "
                "was read"
            )
            out.append(ReadProblem(AnomalyName.CAPTURE_TRUNCATED, detail, None))
        return out


def _syn_scale(scale: array[int], side: int, other: int, flags: int, shift: int) -> None:
    """A SYN's window is never scaled; it says the sender's shift. Once the SYN/ACK is seen, scaling is on
    only when both sides offered it (RFC 7323 2.2). SIDE and OTHER index `scale` (the sender's direction
    and its peer's: SIDE itself when a socket talks to itself)."""
    if shift >= 0:
        scale[side] = shift
    if flags & ACK and (scale[side] == -1 or scale[other] == -1):
        scale[side] = scale[other] = -2


def linktypes_known(path: Path) -> bool:
    """Whether every interface the file declares before its first packet has a link type this reader
    decodes (pcap: the file header; pcapng: the interface blocks ahead of the first packet block). A file
    that is not a capture at all says True: the direct reader names what is wrong with it."""
    with path.open("rb") as f:
        magic = f.read(4)
        if magic in PCAP_MAGICS:
            head = f.read(20)
            order = PCAP_MAGICS[magic][0]
            return len(head) < 20 or struct.unpack(order + "I", head[16:20])[0] & 0x0FFFFFFF in KNOWN_LINKTYPES
        if magic != PCAPNG_MAGIC:
            return True
        return _pcapng_linktypes_known(f)


def _pcapng_linktypes_known(f: BinaryIO) -> bool:
    rest = f.read(8)
    if len(rest) < 8:
        return True
    order = "<" if rest[4:8] == b"\x4d\x3c\x2b\x1a" else ">"
    length = struct.unpack(order + "I", rest[:4])[0]
    f.seek(length - 12, 1)
    for _ in range(MAX_LEADING_BLOCKS):  # interface blocks come before the packets that use them
        head = f.read(8)
        if len(head) < 8 or head[:4] == PCAPNG_MAGIC:
            return True
        kind, length = struct.unpack(order + "II", head)
        if kind in (EPB, PB, SPB) or length < 12 or length > MAX_BLOCK:
            return True
        body = f.read(length - 8)
        if kind == IDB and len(body) >= 2 and struct.unpack(order + "H", body[:2])[0] not in KNOWN_LINKTYPES:
            return False
    return True
