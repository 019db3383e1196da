"""TCP connection state for the capture reader: pure (no tshark, no HTTP), testable on its own.

One `TcpConnection` per `tcp.stream`. The capture reader hands it each captured segment (direction,
sequence number, flags, window, payload) and gets back what the segment means, in order:

* `Delivered`: payload bytes now in sequence for that direction (`Flow` puts segments back in order,
  skips retransmitted bytes, holds out-of-order segments, and gives up on lost bytes after a bound);
* `Lost`: bytes given up as missing from the capture (a gap); nothing after it in that direction is
  read as HTTP;
* `Closed` (FIN), `Reset` (the first RST), `WindowZero` (the client advertised a zero receive window;
  once per episode: the next non-zero window ends it).

Payload is only put back in order once the caller says the connection is worth reading
(`reassemble`): TLS without keys and other protocols cost nothing but their flags.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SYN, RST, FIN, ACK = 0x02, 0x04, 0x01, 0x10
MAX_HELD_SEGMENTS = 256
MAX_HELD_BYTES = 4 << 20

Endpoint = tuple[str, int]


@dataclass(frozen=True, slots=True)
class Delivered:
    from_client: bool
    data: bytes


@dataclass(frozen=True, slots=True)
class Lost:
    from_client: bool
    size: int
    """Bytes missing from the capture (never seen, not even retransmitted)."""


@dataclass(frozen=True, slots=True)
class Closed:
    """A FIN from that side."""

    from_client: bool


@dataclass(frozen=True, slots=True)
class Reset:
    """The first RST of the connection (later ones add nothing)."""

    from_client: bool


@dataclass(frozen=True, slots=True)
class WindowZero:
    """The client advertised a zero receive window: it stopped reading (start of an episode)."""


TcpEvent = Delivered | Lost | Closed | Reset | WindowZero
_NOTHING: list[TcpEvent] = []


def client_by_handshake(src: Endpoint, dst: Endpoint, flags: int) -> Endpoint | None:
    """The client's endpoint when the segment is part of the handshake (SYN, SYN/ACK), else None."""
    if not flags & SYN:
        return None
    return dst if flags & ACK else src


@dataclass(slots=True)
class Flow:
    """One direction of a TCP connection, put back in sequence order (duplicates skipped)."""

    next: int | None = None
    held: dict[int, bytes] = field(default_factory=dict)
    held_bytes: int = 0
    fin: bool = False
    gap: bool = False
    """Bytes were lost in this direction: what follows is not read."""

    def accept(self, seq: int, data: bytes) -> tuple[list[bytes], int]:
        """In-order bytes this segment releases, and how many bytes were given up as lost (a gap)."""
        if self.next is None:
            self.next = seq
        diff = _seqdiff(seq, self.next)
        if diff < 0:
            if diff + len(data) <= 0:
                return [], 0  # retransmission of bytes already delivered
            data, diff = data[-diff:], 0
        if diff > 0:
            if len(data) > len(self.held.get(seq, b"")):
                self.held_bytes += len(data) - len(self.held.get(seq, b""))
                self.held[seq] = data
            if len(self.held) > MAX_HELD_SEGMENTS or self.held_bytes > MAX_HELD_BYTES:
                return self.skip_gap()
            return [], 0
        out = [data]
        self.next = (self.next + len(data)) & 0xFFFFFFFF
        out += self._drain()
        return out, 0

    def skip_gap(self) -> tuple[list[bytes], int]:
        """Give up waiting for missing bytes: jump to the oldest held segment."""
        if not self.held or self.next is None:
            return [], 0
        start = min(self.held, key=lambda s: _seqdiff(s, self.next or 0))
        lost = _seqdiff(start, self.next)
        self.next = start
        return self._drain(), max(lost, 0)

    def _drain(self) -> list[bytes]:
        out: list[bytes] = []
        progress = True
        while self.held and progress and self.next is not None:
            progress = False
            for seq in list(self.held):
                diff = _seqdiff(seq, self.next)
                if diff <= 0:
                    data = self.held.pop(seq)
                    self.held_bytes -= len(data)
                    if diff + len(data) > 0:
                        out.append(data[-diff:] if diff else data)
                        self.next = (self.next + len(data) + diff) & 0xFFFFFFFF
                    progress = True
        return out


@dataclass(slots=True)
class TcpConnection:
    """Both directions of one connection, as far as the capture shows them."""

    client: Endpoint
    server: Endpoint
    up: Flow = field(default_factory=Flow)
    """Client → server."""
    down: Flow = field(default_factory=Flow)
    """Server → client."""
    reassemble: bool = False
    """Put payload back in order (set by the caller once the connection is worth reading)."""
    zero_window: bool = False
    """Inside a zero-window episode of the client."""
    reset: bool = False

    @property
    def closed(self) -> bool:
        """Both sides sent FIN: nothing more can flow."""
        return self.up.fin and self.down.fin

    def segment(self, from_client: bool, seq: int, flags: int, window: int, payload: bytes) -> list[TcpEvent]:
        """What one captured segment means, in order."""
        zero = False
        if from_client and window >= 0 and not flags & (SYN | RST | FIN):
            if window:
                self.zero_window = False
            elif not self.zero_window:
                self.zero_window = zero = True
        if not flags & (SYN | FIN | RST) and not (payload and self.reassemble):
            return [WindowZero()] if zero else _NOTHING  # most segments: an ACK, or payload not read
        out: list[TcpEvent] = [WindowZero()] if zero else []
        flow = self.up if from_client else self.down
        if flags & SYN:
            flow.next = (seq + 1) & 0xFFFFFFFF
        if payload and self.reassemble:
            self._deliver(out, from_client, *flow.accept(seq, payload))
        if flags & FIN and not flow.fin:
            flow.fin = True
            self._deliver(out, from_client, *flow.skip_gap())
            out.append(Closed(from_client))
        if flags & RST and not self.reset:
            self.reset = True
            out.append(Reset(from_client))
        return out

    def finish(self) -> list[TcpEvent]:
        """The end of the capture: give up on every hole still waiting to be filled."""
        out: list[TcpEvent] = []
        self._deliver(out, True, *self.up.skip_gap())
        self._deliver(out, False, *self.down.skip_gap())
        return out

    def _deliver(self, out: list[TcpEvent], from_client: bool, chunks: list[bytes], lost: int) -> None:
        if lost:
            (self.up if from_client else self.down).gap = True
            out.append(Lost(from_client, lost))
        out.extend(Delivered(from_client, chunk) for chunk in chunks)


def _seqdiff(a: int, b: int) -> int:
    return ((a - b + 0x80000000) & 0xFFFFFFFF) - 0x80000000
