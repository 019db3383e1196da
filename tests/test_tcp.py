"""The TCP connection state of the capture reader, on its own: no tshark, no HTTP."""

from __future__ import annotations

from cancelwire.readers.tcp import (
    ACK,
    FIN,
    RST,
    SYN,
    Closed,
    Delivered,
    Flow,
    Lost,
    Reset,
    TcpConnection,
    WindowZero,
    client_by_handshake,
)

C, S = ("10.0.0.1", 40000), ("10.0.0.2", 8000)
PSH = 0x08


def conn() -> TcpConnection:
    tcp = TcpConnection(C, S, reassemble=True)
    tcp.segment(True, 100, SYN, 65535, b"")
    tcp.segment(False, 500, SYN | ACK, 65535, b"")
    return tcp


def test_flow_reorders_and_skips_duplicates() -> None:
    flow = Flow(next=1)
    assert flow.accept(1, b"abc") == ([b"abc"], 0)
    assert flow.accept(1, b"abc") == ([], 0)  # retransmission
    assert flow.accept(7, b"ghi") == ([], 0)  # out of order: held
    assert flow.accept(4, b"def") == ([b"def", b"ghi"], 0)
    assert flow.accept(8, b"hijk") == ([b"jk"], 0)  # overlap: only the new bytes
    assert flow.accept(20, b"zz") == ([], 0)
    assert flow.skip_gap() == ([b"zz"], 8)  # bytes 12..19 never came


def test_flow_wraps_around_the_sequence_space() -> None:
    flow = Flow(next=0xFFFFFFFE)
    assert flow.accept(0xFFFFFFFE, b"ab") == ([b"ab"], 0)
    assert flow.accept(2, b"ef") == ([], 0)
    assert flow.accept(0, b"cd") == ([b"cd", b"ef"], 0)
    assert flow.next == 4


def test_the_handshake_names_the_client() -> None:
    assert client_by_handshake(C, S, SYN) == C
    assert client_by_handshake(S, C, SYN | ACK) == C
    assert client_by_handshake(C, S, ACK) is None


def test_segments_in_order_out_of_order_and_the_fin() -> None:
    tcp = conn()
    assert tcp.segment(True, 101, ACK | PSH, 65535, b"GET ") == [Delivered(True, b"GET ")]
    assert tcp.segment(True, 109, ACK | PSH, 65535, b"HTTP") == []  # held: 105..108 not here yet
    assert tcp.segment(True, 105, ACK | PSH, 65535, b"/ x ") == [Delivered(True, b"/ x "), Delivered(True, b"HTTP")]
    assert tcp.segment(False, 501, ACK, 65535, b"") == []
    assert tcp.segment(True, 113, FIN | ACK, 65535, b"") == [Closed(True)]
    assert not tcp.closed
    assert tcp.segment(False, 501, FIN | ACK, 65535, b"") == [Closed(False)]
    assert tcp.closed


def test_a_fin_gives_up_on_a_hole_before_it() -> None:
    tcp = conn()
    assert tcp.segment(False, 511, ACK, 65535, b"late") == []  # 501..510 missing
    assert tcp.segment(False, 515, FIN | ACK, 65535, b"") == [Lost(False, 10), Delivered(False, b"late"), Closed(False)]
    assert tcp.down.gap and not tcp.up.gap


def test_the_end_of_the_capture_gives_up_on_holes() -> None:
    tcp = conn()
    tcp.segment(True, 111, ACK, 65535, b"xy")
    assert tcp.finish() == [Lost(True, 10), Delivered(True, b"xy")]
    assert tcp.finish() == []


def test_zero_window_once_per_episode_and_only_from_the_client() -> None:
    tcp = conn()
    assert tcp.segment(True, 101, ACK, 0, b"") == [WindowZero()]
    assert tcp.segment(True, 101, ACK, 0, b"") == []
    assert tcp.segment(False, 501, ACK, 0, b"") == []
    assert tcp.segment(True, 101, ACK, 512, b"") == []
    assert tcp.segment(True, 101, ACK, 0, b"") == [WindowZero()]


def test_only_the_first_reset_counts() -> None:
    tcp = conn()
    assert tcp.segment(False, 501, RST, 0, b"") == [Reset(False)]
    assert tcp.segment(True, 101, RST, 0, b"") == []


def test_payload_is_not_reassembled_unless_asked() -> None:
    tcp = TcpConnection(C, S)
    assert tcp.segment(True, 1, ACK, 65535, b"\x16\x03\x01") == []
    assert tcp.up.held == {} and tcp.up.next is None
