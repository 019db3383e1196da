"""One TCP connection of a capture as the HTTP readers see it (`over_http1`, `over_http2`): what it carries,
its HTTP/1.1 or HTTP/2 machine and its open exchanges; and what the HTTP/2 side asks of the HTTP/1.1 side."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final, Protocol

from ...model import AnomalyName
from ..http.http1 import Http1Connection, HttpEvent
from ..http.http2 import Http2Connection
from .bodies import Bodies
from .sessions import Exchange, Sessions
from .tcp import Endpoint, TcpConnection


class ConnKind(StrEnum):
    """What a connection carries, decided by its first client bytes (or `--http-port`)."""

    UNKNOWN = "unknown"
    """No payload yet."""
    HTTP = "http"
    TLS = "tls"
    """TLS with nothing decrypted (yet)."""
    TLS_HTTP = "tls-http"
    """TLS whose decrypted bytes are HTTP."""
    TLS_OTHER = "tls-other"
    OTHER = "other"

    @property
    def read(self) -> bool:
        """HTTP is read on this connection (plain, or decrypted)."""
        return self is ConnKind.HTTP or self is ConnKind.TLS_HTTP


@dataclass(slots=True, init=False)
class Conn:
    """One connection read. Its `__init__` is written out, as `IdleConn`'s: mypyc compiles a written one, where
    the dataclass's own runs interpreted (`tcp.Reassembly`)."""

    stream: Final[int]
    tcp: Final[TcpConnection]
    kind: ConnKind
    http: Final[Http1Connection]
    h2: Http2Connection | None
    """Set when the client started with the HTTP/2 preface: `http` is then unused."""
    h2_midway: bool
    """No handshake was captured and the first bytes are HTTP/2 frames: the capture joined it late."""
    exchanges: Final[dict[int, Exchange]]
    """Exchanges whose response is not finished, by number."""
    answered_early: Final[dict[int, Exchange]]
    """Exchanges whose response finished before their request body did (a redirect or an error sent
    without reading the body, as Starlette does): their request's end is still to come."""
    last: Exchange | None
    """The exchange server bytes after a reset are charged to."""
    reset: bool
    """An RST ended the connection: later server bytes are only counted (SERVER_BYTES), unless it was the
    client's (`reset_by_client`)."""
    reset_by_client: bool
    """The client's RST ended it: server bytes captured after it left before it reached the server (a TCP
    that has taken a RST sends nothing more), so they are read, as crossing the close, for a grace
    (`capture_pass.grace`; then it is a `ResetConn`)."""
    replies_unread: str
    """Why the server→client direction is no longer read (a gap, a bad response, an HTTP/2 flood or bad
    frame), once it is not: the replies of its open and later exchanges are not judged as absent."""
    reported: Final[set[tuple[AnomalyName, bool]]]
    """(anomaly, from_client) said once per direction already: overlap conflicts, data after FIN."""
    opened: float | None
    """When the client's SYN was captured (None: no handshake seen)."""
    round_trip: float | None
    """SYN to SYN/ACK as captured: a round trip between the capture point and the server."""
    retires: float | None
    """Once reset: the capture time past which it is finished (`capture_pass.grace`)."""
    active: int
    """The last frame of it read (the least recently active go first when too many are open)."""

    def __init__(
        self,
        stream: int,
        tcp: TcpConnection,
        kind: ConnKind = ConnKind.UNKNOWN,
        http: Http1Connection | None = None,
        *,
        h2_midway: bool = False,
        round_trip: float | None = None,
    ) -> None:
        self.stream, self.tcp, self.kind = stream, tcp, kind
        self.http = Http1Connection() if http is None else http
        self.h2, self.h2_midway = None, h2_midway
        self.exchanges, self.answered_early, self.last = {}, {}, None
        self.reset = self.reset_by_client = False
        self.replies_unread, self.reported = "", set()
        self.opened, self.round_trip, self.retires, self.active = None, round_trip, None, 0

    def first_time(self, name: AnomalyName, from_client: bool) -> bool:
        """True the first time `name` is reported for this direction of the connection."""
        if (name, from_client) in self.reported:
            return False
        self.reported.add((name, from_client))
        return True

    def rest(self) -> IdleConn | None:
        """What the connection keeps while it is at rest (`IdleConn`), or None when it is not: HTTP/1.1 with
        no exchange open, no byte held for reassembly or parsing, neither side closed, nothing broken or reset
        (an HTTP/2 connection keeps its HPACK tables: it is never at rest)."""
        if self.exchanges or self.h2 is not None:  # the common case, after every segment: an exchange is open
            return None
        tcp, up, down = self.tcp, self.tcp.up, self.tcp.down
        if (
            self.answered_early
            or self.reset
            or self.replies_unread
            or self.reported
            or not self.kind.read
            or up.next is None
            or down.next is None
            or up.waiting
            or down.waiting
            or up.fin
            or down.fin
            or up.gap
            or down.gap
            or not self.http.at_rest
        ):
            return None
        return IdleConn(
            stream=self.stream,
            client=tcp.client,
            server=tcp.server,
            up=up.next,
            down=down.next,
            kind=self.kind,
            exchanges=self.http.exchanges,
            round_trip=self.round_trip,
        )

    def open_numbers(self) -> list[int]:
        """Exchanges whose response has not ended, oldest first."""
        return self.h2.open_exchanges() if self.h2 is not None else self.http.open_exchanges()

    def current(self) -> Exchange | None:
        """The exchange whose response is being sent (the oldest one not finished). On HTTP/1.1 the first
        of `exchanges`: they are kept in request order, each from its head to its response's end, as the
        parser's open exchanges are (read on every server segment: no list of them is made)."""
        if self.h2 is None:
            return next(iter(self.exchanges.values()), None)
        for n in self.h2.open_exchanges():
            if n in self.exchanges:
                return self.exchanges[n]
        return None


@dataclass(slots=True, init=False)
class IdleConn:
    """An HTTP/1.1 keep-alive connection at rest (`Conn.rest`): what it takes to go on reading it, a few
    hundred bytes instead of the several KiB of its parsers and retransmission history, so a capture of many
    idle connections costs memory by what is open, not by what was. Revived by its next segment that is more
    than an ACK; retransmissions of bytes from before it rested are not compared any more."""

    stream: Final[int]
    client: Final[Endpoint]
    server: Final[Endpoint]
    up: Final[int]
    """The next client→server sequence number."""
    down: Final[int]
    kind: Final[ConnKind]
    exchanges: Final[int]
    """Exchanges so far (the next one's number)."""
    round_trip: Final[float | None]
    """The handshake's round trip (`Conn.round_trip`): a keep-alive connection reset later is read for a grace
    measured by it (`capture_pass.grace`), as one never at rest is."""

    def __init__(
        self,
        *,
        stream: int,
        client: Endpoint,
        server: Endpoint,
        up: int,
        down: int,
        kind: ConnKind,
        exchanges: int,
        round_trip: float | None,
    ) -> None:
        self.stream, self.client, self.server, self.up, self.down = stream, client, server, up, down
        self.kind, self.exchanges, self.round_trip = kind, exchanges, round_trip

    def revive(self) -> Conn:
        tcp = TcpConnection(self.client, self.server, reassemble=self.kind is ConnKind.HTTP)
        tcp.up.next, tcp.down.next = self.up, self.down
        return Conn(self.stream, tcp, self.kind, Http1Connection(exchanges=self.exchanges), round_trip=self.round_trip)


@dataclass(slots=True)
class ResetConn:
    """A connection reset longer ago than its grace (`capture_pass.grace`): finished as the capture's end
    finishes one, its parsers, history and exchanges let go. A TCP that has taken a RST sends nothing more,
    so server bytes captured after it were sent before the RST reached the server, at most a round trip
    after the capture saw it; past that nothing sent before can still come, and a later server payload
    segment is counted as bytes after the reset (SERVER_BYTES on the exchange the reset ended), not read,
    nor taken for a new connection."""

    stream: int
    server: Endpoint
    down: int | None
    """The sequence number after the last server byte read (None: the server sent nothing)."""
    last: Exchange | None
    """The exchange later server bytes are charged to (`Conn.last`)."""
    reset_at: float
    grace: float
    active: int


class HttpSide(Protocol):
    """The HTTP/1.1 machinery of a capture, as its HTTP/2 side (`over_http2.Http2Capture`) uses it."""

    sessions: Sessions
    bodies: Bodies

    def server_bytes(self, ex: Exchange, size: int, why: str) -> None: ...

    def stopped(
        self, conn: Conn, ex: Exchange | None, name: AnomalyName, detail: str, *, from_client: bool
    ) -> None: ...

    def http_events(self, conn: Conn, events: list[HttpEvent]) -> None: ...
