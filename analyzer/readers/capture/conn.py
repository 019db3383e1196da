"""One TCP connection of a capture as the HTTP readers see it (`over_http1`, `over_http2`): what it carries,
its HTTP/1.1 or HTTP/2 machine and its open exchanges; and what the HTTP/2 side asks of the HTTP/1.1 side."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

from ...model import AnomalyName
from ..http.http1 import Http1Connection, HttpEvent
from ..http.http2 import Http2Connection
from .bodies import Bodies
from .sessions import Exchange, Sessions
from .tcp import TcpConnection


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


@dataclass(slots=True)
class Conn:
    stream: int
    tcp: TcpConnection
    kind: ConnKind = ConnKind.UNKNOWN
    http: Http1Connection = field(default_factory=Http1Connection)
    h2: Http2Connection | None = None
    """Set when the client started with the HTTP/2 preface: `http` is then unused."""
    h2_midway: bool = False
    """No handshake was captured and the first bytes are HTTP/2 frames: the capture joined it late."""
    exchanges: dict[int, Exchange] = field(default_factory=dict)
    """Exchanges whose response is not finished, by number."""
    answered_early: dict[int, Exchange] = field(default_factory=dict)
    """Exchanges whose response finished before their request body did (a redirect or an error sent
    without reading the body, as Starlette does): their request's end is still to come."""
    last: Exchange | None = None
    """The exchange server bytes after a reset are charged to."""
    reset: bool = False
    """An RST ended the connection: later server bytes are only counted (SERVER_BYTES), unless it was the
    client's (`reset_by_client`)."""
    reset_by_client: bool = False
    """The client's RST ended it: server bytes captured after it left before it reached the server (a TCP
    that has taken a RST sends nothing more), so they are read, as crossing the close."""
    reported: set[tuple[AnomalyName, bool]] = field(default_factory=set)
    """(anomaly, from_client) said once per direction already: overlap conflicts, data after FIN."""

    def first_time(self, name: AnomalyName, from_client: bool) -> bool:
        """True the first time `name` is reported for this direction of the connection."""
        if (name, from_client) in self.reported:
            return False
        self.reported.add((name, from_client))
        return True

    def open_numbers(self) -> list[int]:
        """Exchanges whose response has not ended, oldest first."""
        return self.h2.open_exchanges() if self.h2 is not None else self.http.open_exchanges()

    def current(self) -> Exchange | None:
        """The exchange whose response is being sent (the oldest one not finished)."""
        for n in self.open_numbers():
            if n in self.exchanges:
                return self.exchanges[n]
        return None


class HttpSide(Protocol):
    """The HTTP/1.1 machinery of a capture, as its HTTP/2 side (`over_http2.Http2Capture`) uses it."""

    sessions: Sessions
    bodies: Bodies

    def server_bytes(self, ex: Exchange, size: int, why: str) -> None: ...

    def http_events(self, conn: Conn, events: list[HttpEvent]) -> None: ...
