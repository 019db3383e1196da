"""TCP connection state for the capture reader: pure (no tshark, no HTTP), testable on its own.

One `TcpConnection` per `tcp.stream`. The capture reader hands it each captured segment (a
`frames.Frame` and its direction) and gets back what the segment means, in order:

* `Delivered`: payload bytes now in sequence for that direction. Segments are put back in sequence
  order: retransmitted bytes are skipped, out-of-order segments held (bounded: `MAX_HELD_SEGMENTS`,
  `MAX_HELD_BYTES`);
* `Lost`: bytes given up as missing from the capture. That happens when the peer acknowledges bytes
  the capture never held (Wireshark's "ACKed segment that wasn't captured"), when the held segments
  pass their bound, at the FIN's turn, and at the end of the capture (then also the bytes the peer
  acknowledged after the last one captured). Nothing after a gap in that
  direction is read as HTTP;
* `Closed`: the FIN, placed by sequence number, not by capture order: a FIN captured before the last
  data segment closes the direction only once that data is in (or given up as lost), and carries
  the frame of the FIN itself;
* `Reset` (the first RST), `WindowZero` (the client advertised a zero receive window; once per
  episode: the next non-zero window ends it);
* `Conflict`: a retransmission or overlapping segment whose bytes differ from the bytes already
  received for the same sequence numbers. The first bytes win, as in Zeek (`rexmit_inconsistency`:
  the original delivery stands) and Wireshark's reassembly (a conflicting overlap is flagged, the
  first fragment's data is kept); `frame` and `first_frame` name both segments. Only the last
  `MAX_HISTORY_BYTES` delivered bytes of a direction are kept to compare with;
* `AfterFin`: payload at or beyond the FIN's sequence number (a FIN ends the sender's byte stream;
  such bytes are never delivered);
* a segment whose captured payload is shorter than its TCP length (the snaplen cut it; the caller
  reports that) delivers what was captured; the rest is a gap like any lost bytes.

Payload is only put back in order once the caller says the connection is worth reading
(`reassemble`): TLS without keys and other protocols cost nothing but their flags.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Final

from .frames import Frame

SYN: Final = 0x02
RST: Final = 0x04
FIN: Final = 0x01
ACK: Final = 0x10
MAX_HELD_SEGMENTS = 256
MAX_HELD_BYTES = 4 << 20
MAX_HISTORY_BYTES = 256 << 10
"""Delivered bytes kept per direction to compare retransmissions with (a few windows' worth)."""
MAX_FIRST_ACKS = 1024
"""Segments per direction whose acknowledgement is kept until their bytes are delivered (the oldest go first:
their bytes then carry a later segment's acknowledgement, which can only say they crossed less)."""

Endpoint = tuple[str, int]


@dataclass(slots=True, init=False)
class Delivered:
    """`Final` fields and a written `__init__`, as `frames.Frame`: one is made per segment delivered. `acked` is
    not `Final`: it is left out of comparisons (`field(compare=False)`), and mypyc takes a `Final` with a value
    in the class body for a constant."""

    from_client: Final[bool]
    data: Final[bytes]
    acked: int | None = field(compare=False)
    """The peer's sequence number the sender's TCP had acknowledged when it first sent these bytes: the
    acknowledgement of the earliest captured segment holding them or later bytes (TCP sends in order, so
    bytes behind a segment were written before it, even when they are captured only as a retransmission
    after it). None when no captured segment acknowledged anything."""

    def __init__(self, from_client: bool, data: bytes, acked: int | None = None) -> None:
        self.from_client, self.data, self.acked = from_client, data, acked


@dataclass(frozen=True, slots=True)
class Lost:
    from_client: bool
    size: int
    """Bytes missing from the capture (never seen, not even retransmitted)."""


@dataclass(frozen=True, slots=True)
class Closed:
    """A FIN from that side, once every byte before it is in (or given up)."""

    from_client: bool
    frame: int
    """The frame that carried the FIN (not necessarily the one being read)."""
    ts: float | None


@dataclass(frozen=True, slots=True)
class Reset:
    """The first RST of the connection (later ones add nothing)."""

    from_client: bool


@dataclass(frozen=True, slots=True)
class WindowZero:
    """The client advertised a zero receive window: it stopped reading (start of an episode)."""


@dataclass(frozen=True, slots=True)
class Conflict:
    from_client: bool
    size: int
    """Bytes of the segment that overlap bytes already received (some of them differ)."""
    first_frame: int
    """The frame whose bytes were kept."""


@dataclass(frozen=True, slots=True)
class AfterFin:
    from_client: bool
    size: int
    """Payload bytes at or beyond the sender's FIN (dropped)."""


TcpEvent = Delivered | Lost | Closed | Reset | WindowZero | Conflict | AfterFin
_NOTHING: Final[list[TcpEvent]] = []


def client_by_handshake(src: Endpoint, dst: Endpoint, flags: int) -> Endpoint | None:
    """The client's endpoint when the segment is part of the handshake (SYN, SYN/ACK), else None."""
    if not flags & SYN:
        return None
    return dst if flags & ACK else src


@dataclass(slots=True, init=False)
class Reassembly:
    """One direction of a TCP connection, put back in sequence order; appends its events to `out`. Its
    `__init__` is written out, as in every class made per connection here: mypyc compiles it, where the
    dataclass's own runs interpreted."""

    from_client: Final[bool]
    next: int | None
    """The sequence number of the next byte to deliver."""
    held: dict[int, tuple[bytes, int]]
    """Out-of-order segments by sequence number: (bytes, frame)."""
    held_bytes: int
    fin: bool
    """A FIN was seen (it may still wait for bytes before it: `closed` says when it took effect)."""
    fin_seq: int
    fin_frame: int
    fin_ts: float | None
    closed: bool
    gap: bool
    """Bytes were lost in this direction: what follows is not read."""
    acked: int | None
    """The peer's last acknowledgement number: bytes up to it were sent, captured or not."""
    history: deque[tuple[int, bytes, int]]
    """The last delivered segments (seq, bytes, frame), at most `MAX_HISTORY_BYTES`."""
    history_bytes: int
    first_acks: list[tuple[int, int]]
    """(end, ack) of each captured segment that reached past every byte captured before it, oldest first:
    the acknowledgement the sender's TCP sent with bytes up to `end` when they first left it (bounded by
    `MAX_FIRST_ACKS`; bytes delivered are dropped from it)."""

    def __init__(self, from_client: bool, next: int | None = None) -> None:
        self.from_client, self.next = from_client, next
        self.held, self.held_bytes = {}, 0
        self.fin, self.fin_seq, self.fin_frame, self.fin_ts = False, 0, 0, None
        self.closed = self.gap = False
        self.acked = None
        self.history, self.history_bytes = deque(), 0
        self.first_acks = []

    @property
    def waiting(self) -> bool:
        """Something waits for missing bytes: held segments, or a FIN with a hole before it."""
        return bool(self.held) or (self.fin and not self.closed)

    def note_sent(self, seq: int, size: int, ack: int) -> None:
        """A captured segment of SIZE bytes at SEQ carrying acknowledgement ACK: remembered when it reaches
        past everything captured before it (a retransmission tells nothing of when its bytes were written)."""
        end = (seq + size) & 0xFFFFFFFF
        acks = self.first_acks
        if acks and _seqdiff(end, acks[-1][0]) <= 0:
            return
        if self.next is not None and not acks and _seqdiff(end, self.next) <= 0:
            return
        acks.append((end, ack))
        if len(acks) > MAX_FIRST_ACKS:
            del acks[0]

    def sent_with(self, end: int) -> int | None:
        """The acknowledgement sent with the first segment that held the byte before END (see `Delivered`);
        bytes are delivered in order, so segments ending before END serve no later bytes."""
        acks = self.first_acks
        drop = 0
        while drop < len(acks) and _seqdiff(acks[drop][0], end) < 0:
            drop += 1
        if drop:
            del acks[:drop]
        return acks[0][1] if acks else None

    def accept(self, seq: int, data: bytes, frame: int, out: list[TcpEvent]) -> None:
        """Take one segment's payload."""
        if self.next is None:
            self.next = seq
        if self.fin and _seqdiff((seq + len(data)) & 0xFFFFFFFF, self.fin_seq) > 0:
            beyond = min(len(data), _seqdiff((seq + len(data)) & 0xFFFFFFFF, self.fin_seq))
            out.append(AfterFin(self.from_client, beyond))
            data = data[: len(data) - beyond]
            if not data:
                return
        diff = _seqdiff(seq, self.next)
        if diff < 0:
            self._compare(seq, data[:-diff], frame, out)
            if diff + len(data) <= 0:
                return  # a retransmission of bytes already delivered
            seq, data, diff = self.next, data[-diff:], 0
        if diff > 0:
            self._hold(seq, data, frame, out)
            return
        self._push(seq, data, frame, out)
        self._drain(out)

    def take_fin(self, seq: int, frame: int, ts: float | None, out: list[TcpEvent]) -> None:
        """A FIN at `seq` (after the segment's payload): it takes effect once the bytes before it are in."""
        if self.fin:
            return
        self.fin, self.fin_seq, self.fin_frame, self.fin_ts = True, seq, frame, ts
        if self.next is None:
            self.next = seq
        ahead = _seqdiff(self.next, seq)
        if ahead > 0:  # bytes beyond the FIN were delivered before the FIN was captured
            out.append(AfterFin(self.from_client, ahead))
        self._close_if_due(out)

    def skip_gap(self, out: list[TcpEvent]) -> None:
        """Give up waiting for missing bytes: jump to the oldest held segment (or the pending FIN)."""
        if not self.waiting or self.next is None:
            return
        nxt = self.next
        starts = list(self.held)
        if self.fin and not self.closed:
            starts.append(self.fin_seq)
        start = min(starts, key=lambda s: _seqdiff(s, nxt))
        lost = _seqdiff(start, nxt)
        if lost > 0:
            self.gap = True
            out.append(Lost(self.from_client, lost))
            self.next = start
        self._drain(out)

    def lose_tail(self, out: list[TcpEvent]) -> None:
        """The end of the capture: bytes the peer acknowledged beyond the last one captured were sent and lost
        (checked only here, where no segment captured out of order can still come)."""
        if self.acked is None or self.next is None or self.gap:
            return
        beyond = _seqdiff(self.acked, self.next) - (1 if self.fin else 0)  # a FIN takes a sequence number
        if beyond > 0:
            self.gap = True
            out.append(Lost(self.from_client, beyond))

    # -- internals ---------------------------------------------------------------------------------

    def _push(self, seq: int, data: bytes, frame: int, out: list[TcpEvent]) -> None:
        end = (seq + len(data)) & 0xFFFFFFFF
        out.append(Delivered(self.from_client, data, self.sent_with(end) if self.first_acks else None))
        self.next = end
        history = self.history
        history.append((seq, data, frame))
        self.history_bytes += len(data)
        while self.history_bytes > MAX_HISTORY_BYTES and len(history) > 1:
            self.history_bytes -= len(history.popleft()[1])

    def _hold(self, seq: int, data: bytes, frame: int, out: list[TcpEvent]) -> None:
        old = self.held.get(seq)
        if old is not None:
            common = min(len(old[0]), len(data))
            if old[0][:common] != data[:common]:
                out.append(Conflict(self.from_client, common, old[1]))
            if len(data) <= len(old[0]):
                return
            data, frame = old[0] + data[len(old[0]) :], old[1]  # the first bytes win
        self.held_bytes += len(data) - (len(old[0]) if old is not None else 0)
        self.held[seq] = (data, frame)
        if len(self.held) > MAX_HELD_SEGMENTS or self.held_bytes > MAX_HELD_BYTES:
            self.skip_gap(out)

    def _drain(self, out: list[TcpEvent]) -> None:
        progress = True
        while self.held and progress and self.next is not None:
            progress = False
            for seq in list(self.held):
                diff = _seqdiff(seq, self.next)
                if diff > 0:
                    continue
                data, frame = self.held.pop(seq)
                self.held_bytes -= len(data)
                progress = True
                if diff < 0:
                    self._compare(seq, data[:-diff], frame, out)
                if diff + len(data) > 0:
                    self._push(self.next, data[-diff:] if diff else data, frame, out)
        self._close_if_due(out)

    def _close_if_due(self, out: list[TcpEvent]) -> None:
        if self.fin and not self.closed and self.next is not None and _seqdiff(self.fin_seq, self.next) <= 0:
            self.closed = True
            out.append(Closed(self.from_client, self.fin_frame, self.fin_ts))

    def _compare(self, seq: int, data: bytes, frame: int, out: list[TcpEvent]) -> None:
        """`data` (at `seq`) overlaps bytes already delivered: say so when they differ."""
        end = seq + len(data)
        for hseq, hdata, hframe in reversed(self.history):
            lo, hi = max(_seqdiff(seq, hseq), 0), min(_seqdiff(end, hseq), len(hdata))
            if hi <= 0:
                continue
            if lo >= len(hdata):
                break  # history is in sequence order: nothing older overlaps
            start = _seqdiff((hseq + lo) & 0xFFFFFFFF, seq)
            if hdata[lo:hi] != data[start : start + hi - lo]:
                out.append(Conflict(self.from_client, len(data), hframe))
                return


@dataclass(slots=True, init=False)
class TcpConnection:
    """Both directions of one connection, as far as the capture shows them."""

    client: Final[Endpoint]
    server: Final[Endpoint]
    up: Final[Reassembly]
    """Client → server."""
    down: Final[Reassembly]
    """Server → client."""
    reassemble: bool | None
    """Put payload back in order: True once the caller knows the connection is worth reading, False
    when it is not (its payload is never buffered and its FINs take effect at once); None while
    undecided (no payload yet), when a FIN waits for bytes before it as on a read connection."""
    zero_window: bool
    """Inside a zero-window episode of the client."""
    reset: bool

    def __init__(self, client: Endpoint, server: Endpoint, *, reassemble: bool | None = None) -> None:
        self.client, self.server = client, server
        self.up, self.down = Reassembly(True), Reassembly(False)
        self.reassemble = reassemble
        self.zero_window = self.reset = False

    @property
    def closed(self) -> bool:
        """Both sides' FINs took effect: nothing more can flow."""
        return self.up.closed and self.down.closed

    def segment(self, f: Frame, from_client: bool) -> list[TcpEvent]:
        """What one captured segment means, in order."""
        flags = f.flags
        zero = from_client and self._window_closes(f)
        other = self.down if from_client else self.up
        if flags & ACK:
            other.acked = f.ack
        payload = f.payload if self.reassemble else b""
        if not flags & (SYN | FIN | RST) and not payload and not other.waiting:
            return [WindowZero()] if zero else _NOTHING  # most segments: an ACK, or payload not read
        out: list[TcpEvent] = [WindowZero()] if zero else []
        if flags & ACK and other.waiting and other.next is not None and _seqdiff(f.ack, other.next) > 0:
            other.skip_gap(out)  # the peer has bytes the capture never held: they are lost
        flow = self.up if from_client else self.down
        if flags & SYN:
            flow.next = (f.seq + 1) & 0xFFFFFFFF
        if payload:
            if not from_client and flags & ACK:  # only the server's acknowledgements place a client's close
                flow.note_sent(f.seq, len(payload), f.ack)
            flow.accept(f.seq, payload, f.number, out)
        if flags & FIN:
            fin_seq = (f.seq + max(f.length, len(f.payload))) & 0xFFFFFFFF
            if self.reassemble is False:
                flow.next = fin_seq  # payload not read: nothing to wait for
            flow.take_fin(fin_seq, f.number, f.ts, out)
        if flags & RST and not self.reset:
            self.reset = True
            out.append(Reset(from_client))
        return out

    def _window_closes(self, f: Frame) -> bool:
        """A client segment that starts a zero-window episode (said once per episode)."""
        if f.window < 0 or f.flags & (SYN | RST | FIN):
            return False
        opens = not f.window and not self.zero_window
        self.zero_window = not f.window
        return opens

    def before_client_fin(self, acked: int | None) -> bool:
        """Server bytes sent with acknowledgement ACKED left before the server's TCP had the client's FIN
        (a TCP acknowledges everything it holds in every segment it sends): they crossed the close."""
        up = self.up
        return up.fin and acked is not None and seq_before(acked, (up.fin_seq + 1) & 0xFFFFFFFF)

    def finish(self) -> list[TcpEvent]:
        """The end of the capture: give up on every hole still waiting to be filled."""
        out: list[TcpEvent] = []
        for flow in (self.up, self.down):
            flow.skip_gap(out)
            if self.reassemble:
                flow.lose_tail(out)
        return out


def seq_before(a: int, b: int) -> bool:
    """Sequence number A comes before B (modulo 2**32, as TCP compares them)."""
    return _seqdiff(a, b) < 0


def _seqdiff(a: int, b: int) -> int:
    return ((a - b + 0x80000000) & 0xFFFFFFFF) - 0x80000000
