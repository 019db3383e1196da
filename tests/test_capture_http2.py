"""HTTP/2 streams as MCP transport facts (`readers/capture_http2.py`), without tshark: real h2 endpoints
write the bytes, the capture's HTTP layer reads them as the pcap reader would hand them over, and the
transport events each close, reset, GOAWAY and stall gives are compared whole."""

from __future__ import annotations

from typing import Any

import h2.connection
from cancelwire.model import Anomaly, MessageEvent, TransportEvent, Vantage
from cancelwire.readers.capture.conn import Conn, ConnKind
from cancelwire.readers.capture.over_http1 import HttpCapture
from cancelwire.readers.capture.sessions import Sessions
from cancelwire.readers.capture.tcp import Closed, Reset, TcpConnection, WindowZero
from h2.config import H2Configuration
from h2.errors import ErrorCodes
from hyperframe.frame import DataFrame
from test_http2 import BODY, REQUEST, SSE, Wire

EVENT = (
    b'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress",'
    b'"params":{"progressToken":1,"progress":1}}\n\n'
)


class Capture:
    """One HTTP/2 connection of a capture: what both endpoints write reaches the HTTP layer, frame by frame."""

    def __init__(self, prior_knowledge: bool = True) -> None:
        """With `prior_knowledge`, two h2 endpoints that have exchanged their prefaces; else no byte yet."""
        self.sessions = Sessions("cap.pcapng", Vantage.WIRE)
        self.http = HttpCapture(self.sessions)
        self.conn = Conn(0, TcpConnection(("10.0.0.1", 50000), ("10.0.0.2", 443)))
        self.conn.tcp.reassemble = True
        self.conn.kind = ConnKind.HTTP
        self.frame = 0
        if prior_knowledge:
            self.wire = Wire()
            self.deliver()

    def deliver(self) -> None:
        """Hand over what the endpoints wrote since the last call, as one frame per direction."""
        wire = self.wire
        up, down = bytes(wire.up), bytes(wire.down)
        wire.up.clear()
        wire.down.clear()
        for from_client, data in ((True, up), (False, down)):
            if data:
                self.frame += 1
                self.sessions.frame = self.frame
                self.http.bytes(self.conn, from_client, data)

    def step(self, act: Any) -> None:
        act(self.wire)
        self.wire.pump()
        self.deliver()

    def tcp(self, event: Any) -> None:
        self.frame += 1
        self.sessions.frame = self.frame
        self.http.tcp(self.conn, [event])

    def facts(self) -> list[tuple[Any, ...]]:
        out: list[tuple[Any, ...]] = []
        for e in [*self.sessions.out, *self.sessions.waiting()]:  # a request without an answer holds the rest
            if isinstance(e, TransportEvent):
                out.append((e.origin.frame, e.kind.value, e.stream))
            elif isinstance(e, MessageEvent):
                out.append((e.origin.frame, e.message.kind.value, e.stream))
            elif isinstance(e, Anomaly):
                out.append((e.origin.frame, e.name, e.detail))
        return out


def _call(wire: Wire) -> None:
    wire.post(1, BODY)
    wire.respond(1, EVENT)


def test_a_client_goaway_with_an_error_closes_every_open_stream() -> None:
    cap = Capture()
    cap.step(_call)
    cap.step(lambda w: (w.post(3, BODY), w.respond(3, EVENT)))
    cap.step(lambda w: w.client.close_connection(ErrorCodes.CANCEL))
    assert [f for f in cap.facts() if f[1] == "closed-by-client"] == [
        (7, "closed-by-client", "tcp0/h2s1"),
        (7, "closed-by-client", "tcp0/h2s3"),
    ]


def test_a_client_goaway_without_error_lets_streams_finish() -> None:
    cap = Capture()
    cap.step(_call)
    cap.step(lambda w: w.client.close_connection(ErrorCodes.NO_ERROR))
    last = DataFrame(1, EVENT)  # the server's h2 no longer sends once it read the GOAWAY: raw frame
    last.flags.add("END_STREAM")
    cap.wire.down += last.serialize()
    cap.deliver()
    assert cap.facts()[-3:] == [
        (4, "notification", "tcp0/h2s1"),
        (6, "notification", "tcp0/h2s1"),
        (6, "closed-by-server", "tcp0/h2s1"),
    ]


def test_the_servers_goaway_drops_streams_it_never_processed() -> None:
    cap = Capture()
    cap.step(lambda w: w.post(1, BODY))
    cap.step(lambda w: w.post(3, BODY))
    cap.step(lambda w: w.server.close_connection(ErrorCodes.NO_ERROR, last_stream_id=1))
    assert cap.facts()[-1] == (5, "closed-by-server", "tcp0/h2s3")


def test_a_client_fin_closes_open_streams_once_and_server_bytes_after_it_are_named() -> None:
    cap = Capture()
    cap.step(_call)
    cap.tcp(Closed(True, 4, 0.0))
    cap.step(lambda w: w.server.send_data(1, EVENT))
    cap.tcp(Closed(True, 4, 0.0))  # a second FIN event adds nothing
    assert cap.facts()[-3:] == [
        (4, "closed-by-client", "tcp0/h2s1"),
        (6, "server-bytes", "tcp0/h2s1"),
        (6, "notification", "tcp0/h2s1"),
    ]
    assert [f[1] for f in cap.facts()].count("closed-by-client") == 1


def test_a_zero_tcp_window_stalls_every_stream_being_answered() -> None:
    cap = Capture()
    cap.step(_call)
    cap.step(lambda w: w.post(3, BODY))  # no response head yet: not being answered
    cap.step(lambda w: (w.post(5, BODY), w.respond(5, EVENT)))
    cap.tcp(WindowZero())
    assert [f for f in cap.facts() if f[1] == "receive-window-zero"] == [
        (cap.frame, "receive-window-zero", "tcp0/h2s1"),
        (cap.frame, "receive-window-zero", "tcp0/h2s5"),
    ]


def test_a_tcp_reset_resets_every_open_stream_and_ends_them() -> None:
    """The server's frames captured after the client's RST left before it arrived: the streams stay open to
    read them until the capture ends (tests/test_slow_link.py); the server's RST ends them at once."""
    for from_client, kind in ((True, "reset-by-client"), (False, "reset-by-server")):
        cap = Capture()
        cap.step(_call)
        cap.step(lambda w: (w.post(3, BODY), w.respond(3, EVENT)))
        cap.tcp(Reset(from_client))
        assert [f for f in cap.facts() if f[1] == kind] == [
            (cap.frame, kind, "tcp0/h2s1"),
            (cap.frame, kind, "tcp0/h2s3"),
        ]
        assert sorted(cap.conn.exchanges) == ([1, 3] if from_client else [])
        cap.http.finish(cap.conn)
        assert cap.conn.exchanges == {}
        assert [f[1] for f in cap.facts()].count(kind) == 2


def test_a_protocol_error_is_an_anomaly_naming_frame_and_stream() -> None:
    cap = Capture()
    cap.step(lambda w: w.post(1, BODY))
    cap.frame += 1
    cap.sessions.frame = cap.frame
    cap.http.bytes(cap.conn, False, b"\x00\x00\x03\x01\x04\x00\x00\x00\x01\xff\xff\x0f")
    assert cap.facts()[-2:] == [
        (
            cap.frame,
            "http2.protocol-error",
            f"tcp stream 0: server→client HTTP/2 is not valid at frame {cap.frame}: HeadersFrame on stream 1: "
            "ProtocolError: Error decoding header block: Invalid table index 2174; that direction is not read further",
        ),
        (cap.frame, "replies-unread", "tcp0/h2s1"),  # the open stream's reply would come on that direction
    ]


# -- HTTP/1.1 Upgrade: h2c (RFC 7540 3.2) ----------------------------------------------------------


def _upgraded(capture: Capture, response: bytes, settings: bytes | None = None) -> tuple[Any, Any]:
    """An HTTP/1.1 POST asking for h2c (with a body, as servers other than hypercorn accept), answered
    `response`; the two h2 endpoints as they are after that 101."""
    client = h2.connection.H2Connection(H2Configuration(client_side=True))
    header = client.initiate_upgrade_connection() if settings is None else settings  # its preface waits
    server = h2.connection.H2Connection(H2Configuration(client_side=False))
    server.initiate_upgrade_connection(None if settings is not None else header)
    server.data_to_send()
    request = (
        b"POST /mcp HTTP/1.1\r\nHost: mcp.test\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
        b"HTTP2-Settings: " + header + b"\r\nContent-Type: application/json\r\n"
        b"Content-Length: " + str(len(BODY)).encode() + b"\r\n\r\n" + BODY
    )
    for from_client, data in ((True, request), (False, response)):
        capture.frame += 1
        capture.sessions.frame = capture.frame
        capture.http.bytes(capture.conn, from_client, data)
    return client, server


SWITCH = b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n"


def test_an_upgraded_request_is_answered_on_stream_1_and_later_requests_are_http2_streams() -> None:
    cap = Capture(prior_knowledge=False)
    client, server = _upgraded(cap, SWITCH)
    server.send_headers(1, SSE)
    server.send_data(1, EVENT, end_stream=True)
    client.send_headers(3, REQUEST)
    client.send_data(3, BODY, end_stream=True)
    for from_client, data in ((False, server.data_to_send()), (True, client.data_to_send())):
        cap.frame += 1
        cap.sessions.frame = cap.frame
        cap.http.bytes(cap.conn, from_client, data)
    assert cap.facts() == [
        (1, "request", "tcp0/0"),  # read as HTTP/1.1 before the switch
        (3, "stream-opened", "tcp0/h2s1"),
        (3, "notification", "tcp0/h2s1"),
        (3, "closed-by-server", "tcp0/h2s1"),
    ]
    assert cap.conn.open_numbers() == [3]
    held = cap.conn.exchanges[3].sent  # its request waits for the answer's status (readers/delivery.py)
    assert held is not None and [(m.kind.value, m.id) for _, m in held] == [("request", 1)]


def test_the_servers_frames_in_the_segment_of_the_101_are_read() -> None:
    cap = Capture(prior_knowledge=False)
    server = h2.connection.H2Connection(H2Configuration(client_side=False))
    server.initiate_upgrade_connection(h2.connection.H2Connection(H2Configuration()).initiate_upgrade_connection())
    server.send_headers(1, SSE)
    server.send_data(1, EVENT, end_stream=True)
    _upgraded(cap, SWITCH + server.data_to_send())
    assert [f[1] for f in cap.facts()] == ["request", "stream-opened", "notification", "closed-by-server"]


def test_a_bad_http2_settings_header_stops_the_client_direction_only() -> None:
    cap = Capture(prior_knowledge=False)
    _, server = _upgraded(cap, SWITCH, settings=b"!!not base64!!")
    server.send_headers(1, SSE)
    server.send_data(1, EVENT)
    cap.frame += 1
    cap.sessions.frame = cap.frame
    cap.http.bytes(cap.conn, False, server.data_to_send())
    assert cap.facts()[1] == (
        2,
        "http2.protocol-error",
        "tcp stream 0: client→server HTTP/2 is not valid at frame 2: the upgrade's HTTP2-Settings header: "
        "Error: Invalid base64-encoded string: number of data characters (9) cannot be 1 more than a multiple of 4; "
        "that direction is not read further",
    )
    assert [f[1] for f in cap.facts()[2:]] == ["stream-opened", "notification"]


def test_a_101_to_another_protocol_is_not_read_as_http2() -> None:
    cap = Capture(prior_knowledge=False)
    _upgraded(cap, b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
    assert cap.conn.h2 is None
    assert cap.conn.open_numbers() == [0]  # as before: the exchange stays open, nothing more is read
