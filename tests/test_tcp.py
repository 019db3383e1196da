"""The TCP connection state of the capture reader, on its own: no tshark, no HTTP."""

from __future__ import annotations

from cancelwire.readers.capture.frames import Frame
from cancelwire.readers.capture.tcp import (
    ACK,
    FIN,
    RST,
    SYN,
    AfterFin,
    Closed,
    Conflict,
    Delivered,
    Lost,
    Reassembly,
    Reset,
    TcpConnection,
    TcpEvent,
    WindowZero,
    client_by_handshake,
)

C, S = ("10.0.0.1", 40000), ("10.0.0.2", 8000)
PSH = 0x08
_frames = iter(range(1, 1 << 30))


def seg(
    tcp: TcpConnection,
    from_client: bool,
    seq: int,
    flags: int,
    payload: bytes = b"",
    *,
    ack: int = 0,
    window: int = 65535,
    length: int | None = None,
    number: int | None = None,
) -> list[TcpEvent]:
    """Feed one segment (frame numbers count up unless given)."""
    src, dst = (C, S) if from_client else (S, C)
    frame = Frame(
        number=number if number is not None else next(_frames),
        ts=1.0,
        stream=0,
        src=src[0],
        dst=dst[0],
        sport=src[1],
        dport=dst[1],
        seq=seq,
        ack=ack,
        flags=flags,
        window=window,
        payload=payload,
        length=len(payload) if length is None else length,
        decrypted=(),
    )
    return tcp.segment(frame, from_client)


def conn() -> TcpConnection:
    tcp = TcpConnection(C, S, reassemble=True)
    seg(tcp, True, 100, SYN)
    seg(tcp, False, 500, SYN | ACK, ack=101)
    return tcp


def accept(flow: Reassembly, seq: int, data: bytes, frame: int = 1) -> list[TcpEvent]:
    out: list[TcpEvent] = []
    flow.accept(seq, data, frame, out)
    return out


def skip(flow: Reassembly) -> list[TcpEvent]:
    out: list[TcpEvent] = []
    flow.skip_gap(out)
    return out


def test_flow_reorders_and_skips_duplicates() -> None:
    flow = Reassembly(True, next=1)
    assert accept(flow, 1, b"abc") == [Delivered(True, b"abc")]
    assert accept(flow, 1, b"abc") == []  # retransmission, same bytes
    assert accept(flow, 7, b"ghi") == []  # out of order: held
    assert accept(flow, 4, b"def") == [Delivered(True, b"def"), Delivered(True, b"ghi")]
    assert accept(flow, 8, b"hijk") == [Delivered(True, b"jk")]  # overlap: only the new bytes
    assert accept(flow, 20, b"zz") == []
    assert skip(flow) == [Lost(True, 8), Delivered(True, b"zz")]  # bytes 12..19 never came
    assert flow.gap


def test_flow_wraps_around_the_sequence_space() -> None:
    flow = Reassembly(False, next=0xFFFFFFFE)
    assert accept(flow, 0xFFFFFFFE, b"ab") == [Delivered(False, b"ab")]
    assert accept(flow, 2, b"ef") == []
    assert accept(flow, 0, b"cd") == [Delivered(False, b"cd"), Delivered(False, b"ef")]
    assert flow.next == 4


def test_the_handshake_names_the_client() -> None:
    assert client_by_handshake(C, S, SYN) == C
    assert client_by_handshake(S, C, SYN | ACK) == C
    assert client_by_handshake(C, S, ACK) is None


def test_segments_in_order_out_of_order_and_the_fin() -> None:
    tcp = conn()
    assert seg(tcp, True, 101, ACK | PSH, b"GET ") == [Delivered(True, b"GET ")]
    assert seg(tcp, True, 109, ACK | PSH, b"HTTP") == []  # held: 105..108 not here yet
    assert seg(tcp, True, 105, ACK | PSH, b"/ x ") == [Delivered(True, b"/ x "), Delivered(True, b"HTTP")]
    assert seg(tcp, False, 501, ACK, ack=113) == []
    assert seg(tcp, True, 113, FIN | ACK, number=90) == [Closed(True, 90, 1.0)]
    assert not tcp.closed
    assert seg(tcp, False, 501, FIN | ACK, number=91) == [Closed(False, 91, 1.0)]
    assert tcp.closed


def test_a_fin_captured_before_the_last_data_waits_for_it() -> None:
    """Capture order FIN, then data: the FIN is placed by its sequence number, after the data."""
    tcp = conn()
    assert seg(tcp, True, 101, ACK | PSH, b"GET ") == [Delivered(True, b"GET ")]
    assert seg(tcp, True, 109, FIN | ACK, number=40) == []  # 105..108 not here yet: the FIN waits
    assert seg(tcp, True, 105, ACK | PSH, b"/ x ", number=41) == [Delivered(True, b"/ x "), Closed(True, 40, 1.0)]


def test_a_fin_with_a_hole_the_peer_acknowledged_gives_the_hole_up() -> None:
    tcp = conn()
    assert seg(tcp, False, 511, ACK, b"late") == []  # 501..510 missing
    assert seg(tcp, False, 515, FIN | ACK, number=50) == []  # waits for 501..510
    # the client acknowledges the FIN: it had every byte, the capture lost 10 of them
    assert seg(tcp, True, 101, ACK, ack=516) == [Lost(False, 10), Delivered(False, b"late"), Closed(False, 50, 1.0)]
    assert tcp.down.gap and not tcp.up.gap


def test_an_ack_past_held_data_gives_the_hole_up_at_once() -> None:
    tcp = conn()
    assert seg(tcp, False, 511, ACK, b"late") == []
    assert seg(tcp, True, 101, ACK, ack=511) == [Lost(False, 10), Delivered(False, b"late")]


def test_the_end_of_the_capture_gives_up_on_holes_and_places_waiting_fins() -> None:
    tcp = conn()
    seg(tcp, True, 111, ACK, b"xy")
    seg(tcp, True, 113, FIN | ACK, number=60)
    assert tcp.finish() == [Lost(True, 10), Delivered(True, b"xy"), Closed(True, 60, 1.0)]
    assert tcp.finish() == []


def test_overlapping_bytes_that_differ_are_reported_and_the_first_win() -> None:
    tcp = conn()
    assert seg(tcp, True, 101, ACK, b"abcdef", number=10) == [Delivered(True, b"abcdef")]
    assert seg(tcp, True, 101, ACK, b"abcdef", number=11) == []  # a true retransmission: silent
    assert seg(tcp, True, 104, ACK, b"XYZghi", number=12) == [Conflict(True, 3, 10), Delivered(True, b"ghi")]
    assert seg(tcp, True, 120, ACK, b"held", number=13) == []
    assert seg(tcp, True, 120, ACK, b"HELD!", number=14) == [Conflict(True, 4, 13)]
    assert tcp.up.held[120] == (b"held!", 13)  # the first bytes, extended by the new tail


def test_payload_after_the_fin_is_not_delivered() -> None:
    tcp = conn()
    seg(tcp, True, 101, ACK | PSH, b"GET ")
    assert seg(tcp, True, 105, FIN | ACK, number=70) == [Closed(True, 70, 1.0)]
    assert seg(tcp, True, 106, ACK | PSH, b"more") == [AfterFin(True, 4)]
    assert seg(tcp, True, 105, ACK | PSH, b"!more") == [AfterFin(True, 5)]


def test_a_snaplen_cut_segment_leaves_a_gap() -> None:
    tcp = conn()
    assert seg(tcp, True, 101, ACK, b"GET /", length=100) == [Delivered(True, b"GET /")]
    assert seg(tcp, True, 201, ACK, b"next", length=4) == []  # 106..200 never captured
    assert seg(tcp, False, 501, ACK, ack=205) == [Lost(True, 95), Delivered(True, b"next")]


def test_zero_window_once_per_episode_and_only_from_the_client() -> None:
    tcp = conn()
    assert seg(tcp, True, 101, ACK, window=0) == [WindowZero()]
    assert seg(tcp, True, 101, ACK, window=0) == []
    assert seg(tcp, False, 501, ACK, window=0) == []
    assert seg(tcp, True, 101, ACK, window=512) == []
    assert seg(tcp, True, 101, ACK, window=0) == [WindowZero()]


def test_only_the_first_reset_counts() -> None:
    tcp = conn()
    assert seg(tcp, False, 501, RST, window=0) == [Reset(False)]
    assert seg(tcp, True, 101, RST, window=0) == []


def test_payload_is_not_reassembled_unless_asked_and_its_fin_closes_at_once() -> None:
    tcp = TcpConnection(C, S, reassemble=False)
    assert seg(tcp, True, 1, ACK, b"\x16\x03\x01") == []
    assert tcp.up.held == {} and tcp.up.next is None
    assert seg(tcp, True, 4, FIN | ACK, number=80) == [Closed(True, 80, 1.0)]


def _acked(events: list[TcpEvent]) -> list[tuple[bytes, int | None]]:
    return [(e.data, e.acked) for e in events if isinstance(e, Delivered)]


def test_server_bytes_carry_the_acknowledgement_they_first_left_with() -> None:
    """The client's FIN is at 101 (covered by ack 102). A segment sent before the server had it acks 101;
    one sent after acks 102: only the first crossed the close."""
    tcp = conn()
    seg(tcp, True, 101, ACK | FIN, ack=501)
    assert _acked(seg(tcp, False, 501, ACK | PSH, b"head", ack=101)) == [(b"head", 101)]
    assert tcp.before_client_fin(101)
    assert _acked(seg(tcp, False, 505, ACK | PSH, b"tail", ack=102)) == [(b"tail", 102)]
    assert not tcp.before_client_fin(102)
    assert not tcp.before_client_fin(None)


def test_a_head_captured_only_as_a_retransmission_takes_the_tail_s_first_acknowledgement() -> None:
    """The tail (505..509) is captured first, sent before the client's FIN reached the server (ack 101);
    the head (501..505) only as a retransmission after it, acking the FIN. TCP sends in order: the head
    was written before the tail, so both left before the close."""
    tcp = conn()
    assert _acked(seg(tcp, False, 505, ACK | PSH, b"tail", ack=101)) == []  # held: the head is missing
    seg(tcp, True, 101, ACK | FIN, ack=501)
    assert _acked(seg(tcp, False, 501, ACK | PSH, b"head", ack=102)) == [(b"head", 101), (b"tail", 101)]


def test_before_the_client_s_fin_nothing_crossed_it() -> None:
    tcp = conn()
    seg(tcp, False, 501, ACK | PSH, b"early", ack=101)
    assert not tcp.before_client_fin(101)  # no FIN from the client yet
