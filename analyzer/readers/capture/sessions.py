"""Which MCP session each HTTP exchange of a capture belongs to, and the numbering of its events.

A request's `Mcp-Session-Id` names its session (`{source}#{id}`). A request without one goes to a
fallback session per client address and server (`{source}#{client}->{server_ip}:{port}`; 2026-07-28,
where POSTs stand alone), except in two cases whose events are held (memory: one exchange's events,
at most `MAX_HELD_EVENTS`) until the session is known:

* a POST carrying `initialize` waits for its response head (an `Mcp-Session-Id` there names the
  session the initialize belongs to);
* a GET waits for its first SSE event (`event: endpoint` makes it a legacy HTTP+SSE session
  `{source}#{id}` keyed by the `sessionId`/`session_id` of the endpoint URI, to which later POSTs to
  that URI belong).

Held events keep their frames; only their `seq` is assigned when they are released. The first event
of a session is preceded by its `SessionStart`.

The messages of a request body wait for the answer's status (`delivery`: a redirected or refused POST
delivered nothing). They keep their place in the output: a `Slot` holds it (and their `seq`s) while the
status is not known, and the events after it wait behind it (at most `MAX_BACKLOG`; past that the
oldest slot is let go as delivered, as an answer that never came is).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Final
from urllib.parse import parse_qs, urlsplit

from ...model import (
    Anomaly,
    AnomalyName,
    Event,
    Message,
    Origin,
    RequestId,
    Revision,
    SessionStart,
    Side,
    Transport,
    TransportEvent,
    TransportKind,
    Vantage,
)
from ..http.delivery import Delivery, answers, delivered, of_status, undelivered
from ..http.encoding import BodyDecoder
from ..http.http1 import MAX_BODY_BYTES
from ..http.sse import SseEvent, SseParser

MAX_HELD_EVENTS = 512
MAX_BACKLOG = 4096
"""Events waiting behind request messages whose delivery is not decided yet (see the module doc)."""
Build = Callable[[int, str], Event]
"""Makes an event once its `seq` and session key are known."""
Endpoint = tuple[str, int]


class WaitsFor(StrEnum):
    """What an exchange without a session key waits for before its events can be released."""

    NOTHING = "nothing"
    """Its key is known, or will be the fallback key."""
    RESPONSE = "response"
    """An `initialize` POST: the response head may carry the new session's id."""
    FIRST_EVENT = "first-event"
    """A GET without a session id: its first SSE event may be a legacy `endpoint` event."""


@dataclass(slots=True, init=False)
class Exchange:
    """One HTTP request/response pair on a connection, while its response is open. Its `__init__` is written
    out: mypyc compiles a written one, where the dataclass's own runs interpreted (`tcp.Reassembly`)."""

    stream: Final[int]
    """The TCP stream (tshark's `tcp.stream`)."""
    number: int
    """Exchange number on the connection, from 0 in request order."""
    method: Final[str]
    target: Final[str]
    session_id: str | None
    revision: Revision | None
    client: Final[Endpoint | None]
    server: Final[Endpoint]
    key: str | None
    """The session key; None while it is not known (events are held)."""
    held: list[tuple[int, float | None, Build]]
    waits_for: WaitsFor
    status: int
    sse: SseParser | None
    body: bytearray | None
    """An `application/json` response body being received (None for other bodies, or once read)."""
    body_size: int
    """Response body bytes read so far (decoded, when `decoder` is set)."""
    decoder: BodyDecoder | None
    """The response's Content-Encoding being undone (`encoding`); None for a body sent as it is."""
    request_coding: str | None
    """The request's Content-Encoding, if it had one."""
    content_length: int | None
    """The response's Content-Length, when it had a valid one."""
    request_id: RequestId | None
    request_method: str | None
    client_closed: bool
    client_closed_at: int | None
    """Where the client's RST_STREAM of it ended in the client's byte stream (TCP sequence number): a server
    segment acknowledging less was sent before the server had it (RFC 9113 6.4)."""
    last_server_bytes_frame: int
    answered: bool
    """A JSON-RPC response to this exchange's request went by (the HTTP body may still be open)."""
    request_unread: bool
    """The request body was too large to read: its replies cannot be matched and are not judged."""
    http2: bool
    """An HTTP/2 stream (`number` is its stream id)."""
    sent: list[tuple[Build, Message]] | None
    """The request body's messages, waiting for the answer's status (`delivery`)."""
    sent_at: tuple[int, float]
    """Frame and time the request body ended: where those messages belong."""
    slot: Slot | None
    """Their place in the output, while the session is known and the status is not."""
    location: str | None
    """The `Location` of a redirect answer."""
    reads_error_body: bool
    """Refused with a JSON body: whether it answers the request decides its delivery at the body's end."""
    request_ended: bool
    """The request (head and body) has been read."""
    undelivered: bool
    """The answer said the request body's messages did not reach the server."""
    id: str
    """The exchange as events name it (`MessageEvent.stream`): `tcp{stream}/{number}`, or
    `tcp{stream}/h2s{stream id}` on HTTP/2; kept, not recomputed, since every message event carries it."""

    def __init__(
        self,
        stream: int,
        number: int,
        method: str,
        target: str,
        session_id: str | None,
        revision: Revision | None,
        client: Endpoint | None,
        server: Endpoint,
        *,
        key: str | None = None,
        http2: bool = False,
        request_coding: str | None = None,
    ) -> None:
        self.stream, self.number, self.method, self.target = stream, number, method, target
        self.session_id, self.revision, self.client, self.server = session_id, revision, client, server
        self.key, self.held, self.waits_for = key, [], WaitsFor.NOTHING
        self.status, self.sse, self.body, self.body_size, self.decoder = 0, None, None, 0, None
        self.request_coding, self.content_length = request_coding, None
        self.request_id = self.request_method = None
        self.client_closed, self.client_closed_at, self.last_server_bytes_frame = False, None, 0
        self.answered = self.request_unread = False
        self.http2, self.sent, self.sent_at, self.slot = http2, None, (0, 0.0), None
        self.location = None
        self.reads_error_body = self.request_ended = self.undelivered = False
        self.id = f"tcp{stream}/h2s{number}" if http2 else f"tcp{stream}/{number}"

    def remains(self) -> Exchange:
        """What is kept of it once its connection is finished after a reset (`conn.ResetConn`), for server
        bytes captured later (`over_http1.server_bytes`): where they are named, its id and session, and the
        frame last named. Its request, parsers and bodies go (issue 20: 1.3 KiB a reset connection, 0.4 now;
        the big capture has 1,100 of them at its end)."""
        kept = Exchange(self.stream, self.number, self.method, "", None, None, None, self.server, key=self.key)
        kept.id, kept.http2, kept.held = self.id, self.http2, self.held
        kept.last_server_bytes_frame = self.last_server_bytes_frame
        return kept

    def stage(self) -> str:
        """Where the exchange stood when its connection or stream closed: for details that people read."""
        if not self.status:
            return "before any response"
        if self.answered:
            return "after the JSON-RPC response, before the HTTP body ended"
        return "before the response finished"


@dataclass(slots=True, init=False)
class Slot:
    """The place in the output of one request body's messages, and their reserved `seq`s."""

    seq: Final[int]
    """The first reserved `seq`."""
    ex: Final[Exchange]
    events: list[Event] | None
    """Filled when the delivery is decided."""

    def __init__(self, seq: int, ex: Exchange) -> None:
        self.seq, self.ex, self.events = seq, ex, None


class Sessions:
    """Session keys, SessionStarts, held events and `seq` numbering for one capture."""

    def __init__(self, source: str, vantage: Vantage) -> None:
        self.source = source
        self.vantage = vantage
        self.out: list[Event] = []
        """Events ready to be yielded, in `seq` order."""
        self.seq = 0
        self.frame = 0
        """The frame being read (the origin of what it completes)."""
        self.ts: float | None = None
        self.crossed = False
        """The server bytes being read left before the client's close reached the server (`MessageEvent.crossed`)."""
        self.acked: int | None = None
        """The acknowledgement the server bytes being read first left with (`tcp.Delivered.acked`)."""
        self._started: set[str] = set()
        self._legacy: dict[str, str] = {}
        """Session id (or endpoint URI) from a legacy `endpoint` event → session key."""
        self._legacy_keys: set[str] = set()
        self.replies_unread: dict[str, str] = {}
        """HTTP+SSE sessions whose GET stream (where all their replies come) is no longer read, and why."""
        self._labels: dict[str, str] = {}
        self._ids: dict[str, str] = {}
        """Session key → the session id it was keyed by (`SessionStart.session_id`)."""
        self._queue: deque[Event | Slot] = deque()
        self._origin = Origin(source)
        """The last origin made (`origin`)."""
        """Events behind a slot not filled yet (empty: events go straight to `out`)."""

    # -- events ------------------------------------------------------------------------------------

    def origin(self, frame: int | None = None) -> Origin:
        at = (frame if frame is not None else self.frame) or None
        if at != self._origin.frame:  # the events of one frame share their origin (records are immutable)
            self._origin = Origin(self.source, frame=at)
        return self._origin

    def emit(self, key: str, frame: int, ts: float | None, build: Build) -> None:
        if key not in self._started:
            self._start(key, frame, ts)
        self.seq += 1
        self._put(build(self.seq, key))

    def _start(self, key: str, frame: int, ts: float | None) -> None:
        self._started.add(key)
        transport = Transport.HTTP_SSE if key in self._legacy_keys else Transport.STREAMABLE_HTTP
        self.seq += 1
        self._put(
            SessionStart(
                self.seq,
                ts,
                self.origin(frame),
                key,
                transport,
                self.vantage,
                "pcap",
                label=self._labels.get(key),
                session_id=self._ids.get(key),
            )
        )

    def legacy(self, key: str | None) -> bool:
        """An HTTP+SSE session (its replies come on its GET stream)."""
        return key in self._legacy_keys

    def waiting(self) -> list[Event]:
        """Events made but not in `out` yet: they wait, in order, behind request messages whose delivery
        is not decided (those are not among them)."""
        return [e for item in self._queue for e in (item.events or [] if isinstance(item, Slot) else [item])]

    def _put(self, event: Event) -> None:
        queue = self._queue
        if not queue:
            self.out.append(event)
            return
        queue.append(event)
        if len(queue) > MAX_BACKLOG:
            head = queue[0]  # the oldest slot not filled: filled ones at the head are drained at once
            if type(head) is Slot:
                self.settle(head.ex, unknown=True)

    def anomaly(
        self,
        key: str | None,
        name: AnomalyName,
        detail: str,
        *,
        request_id: RequestId | None = None,
        method: str | None = None,
        frame: int | None = None,
        unread_from: Side | None = None,
    ) -> None:
        """An anomaly at the current frame (or at `frame`), in its session (or in none); `unread_from`: the
        reader stopped reading where that side's replies come (`Anomaly.reply_unread` without a request)."""
        ts, origin = self.ts, self.origin(frame)
        requester, unread = (unread_from.other, True) if unread_from is not None else (None, False)
        if key is not None:

            def build(seq: int, k: str) -> Event:
                return Anomaly(
                    seq, ts, origin, k, name, detail, request_id, method, requester=requester, reply_unread=unread
                )

            self.emit(key, frame or self.frame, ts, build)
        else:
            self.seq += 1
            self._put(Anomaly(self.seq, ts, origin, None, name, detail, request_id, method))

    def for_exchange(self, ex: Exchange, build: Build) -> None:
        """Emit an exchange's event now, or hold it while its session is not known yet."""
        if ex.key is None:
            ex.held.append((self.frame, self.ts, build))
            if len(ex.held) > MAX_HELD_EVENTS:
                self.resolve(ex, None)
            return
        self.emit(ex.key, self.frame, self.ts, build)

    def transport(
        self, ex: Exchange, kind: TransportKind, detail: str = "", *, at: tuple[int, float | None] | None = None
    ) -> None:
        """A transport event of the exchange at the current frame, or `at` (frame, ts) of an earlier one."""
        ts, origin, stream = self.ts, self.origin(), ex.id
        if at is not None:
            ts, origin = at[1], self.origin(at[0])
        self.for_exchange(ex, lambda seq, k: TransportEvent(seq, ts, origin, k, kind, stream, detail))

    # -- delivery --------------------------------------------------------------------------------

    def request_body(self, ex: Exchange, sent: list[tuple[Build, Message]]) -> None:
        """The messages of a request body that ended at the current frame: out at once when the answer's
        status is known already (Starlette answers a redirect before the body has come), else kept
        in place until it is."""
        if not sent:
            return
        ex.sent, ex.sent_at = sent, (self.frame, self.ts or 0.0)
        if ex.status >= 200 and not ex.reads_error_body:
            self.settle(ex)
        elif ex.key is not None:  # an unknown session holds its events anyway (`for_exchange`)
            if ex.key not in self._started:
                self._start(ex.key, self.frame, self.ts)
            ex.slot = Slot(self.seq + 1, ex)
            self.seq += len(sent)  # each message is either kept or makes at most one anomaly
            self._queue.append(ex.slot)

    def answered(self, ex: Exchange) -> None:
        """The answer's status is known (and its JSON body read, when refused): decide now."""
        if ex.sent is not None and ex.status >= 200 and not ex.reads_error_body:
            self.settle(ex)

    def settle(self, ex: Exchange, *, unknown: bool = False, unprocessed: bool = False) -> None:
        """Put the request body's messages out, or what says they were not delivered (`delivery`);
        `unknown`: the answer never came (or came too late to wait for), so they are kept;
        `unprocessed`: the server's HTTP/2 GOAWAY says it never processed the stream."""
        sent, ex.sent = ex.sent, None
        if sent is None:
            return
        if ex.reads_error_body and ex.body is not None and ex.body_size <= MAX_BODY_BYTES:
            ex.answered = answers(bytes(ex.body), ex.request_id)  # before the reply goes out: after the request
        delivery = Delivery.UNPROCESSED if unprocessed else None if unknown else of_status(ex.status)
        if delivery is None or delivery is Delivery.DELIVERED:  # nearly every POST: no test per message
            builds = [build for build, _ in sent]
        else:
            builds = [build for build, message in sent if delivered(delivery, message, ex.answered)]
            dropped = [message for _, message in sent if not delivered(delivery, message, ex.answered)]
            if dropped:
                ex.undelivered = True
                builds += self._not_delivered(ex, delivery, dropped)
        slot, ex.slot = ex.slot, None
        frame, ts = ex.sent_at
        if slot is None:
            for build in builds:
                if ex.key is not None:
                    self.emit(ex.key, frame, ts, build)
                else:
                    ex.held.append((frame, ts, build))
            return
        key = ex.key or self.fallback_key(ex.client, ex.server)
        slot.events = [build(slot.seq + n, key) for n, build in enumerate(builds)]
        queue, out = self._queue, self.out
        while queue:
            head = queue[0]
            if isinstance(head, Slot):
                if head.events is None:
                    break
                out.extend(head.events)
            else:
                out.append(head)
            queue.popleft()

    def _not_delivered(self, ex: Exchange, delivery: Delivery, dropped: list[Message]) -> list[Build]:
        """The anomalies that say so (`delivery.undelivered`); undelivered, they start no session."""
        frame, ts = ex.sent_at
        origin = self.origin(frame)
        builds: list[Build] = []
        for u in undelivered(delivery, ex.id, ex.status, ex.target, ex.location, dropped):
            if ex.key is None or ex.key not in self._started:
                self.anomaly(None, u.name, u.detail, request_id=u.request_id, method=u.method, frame=frame)
            else:
                builds.append(_anomaly(ts, origin, u.name, u.detail, u.request_id, u.method, u.requester))
        return builds

    # -- keys --------------------------------------------------------------------------------------

    def resolve(self, ex: Exchange, key: str | None) -> None:
        """The exchange's session is known (`key`, or the fallback key): release what it held."""
        if ex.key is not None:
            return
        ex.key = key or self.fallback_key(ex.client, ex.server)
        ex.waits_for = WaitsFor.NOTHING
        held, ex.held = ex.held, []
        for frame, ts, build in held:
            self.emit(ex.key, frame, ts, build)

    def fallback_key(self, client: Endpoint | None, server: Endpoint) -> str:
        """Without a session id (2026-07-28, or before one is issued): one session per client address
        and server, so two clients' request ids are never taken for one sender's."""
        ip, port = server
        address = client[0] if client is not None else "?"
        key = f"{self.source}#{address}->{ip}:{port}"
        self._labels.setdefault(key, f"{address} -> {ip}:{port}")
        return key

    def by_session_id(self, session_id: str, server: Endpoint) -> str:
        key = self._legacy.get(session_id) or f"{self.source}#{session_id}"
        self._labels.setdefault(key, f"{server[0]}:{server[1]}")
        self._ids.setdefault(key, session_id)
        return key

    def start_request(self, ex: Exchange) -> None:
        """Give a new request its key when its head tells it, or say what it waits for."""
        if ex.session_id:
            ex.key = self.by_session_id(ex.session_id, ex.server)
            return
        legacy = self._legacy_session(ex.target)
        if legacy is not None:
            ex.key = legacy
        elif ex.method == "GET":
            ex.waits_for = WaitsFor.FIRST_EVENT

    def first_event(self, ex: Exchange, event: SseEvent) -> None:
        """A GET's first SSE event: a legacy `endpoint` event starts an HTTP+SSE session."""
        sid = _endpoint_session(event) if event.event == "endpoint" else None
        if sid is None:
            self.resolve(ex, None)
            return
        key = f"{self.source}#{sid}"
        self._legacy[sid] = key
        self._legacy[urlsplit((event.data or "").strip())._replace(scheme="", netloc="").geturl()] = key
        self._legacy_keys.add(key)
        self._labels.setdefault(key, f"{ex.server[0]}:{ex.server[1]}")
        self._ids.setdefault(key, sid)
        self.resolve(ex, key)

    def _legacy_session(self, target: str) -> str | None:
        if not self._legacy:
            return None
        if target in self._legacy:
            return self._legacy[target]
        query = parse_qs(urlsplit(target).query)
        for name in ("sessionId", "session_id"):
            for value in query.get(name, []):
                if value in self._legacy:
                    return self._legacy[value]
        return None


def _anomaly(
    ts: float | None,
    origin: Origin,
    name: AnomalyName,
    detail: str,
    request_id: RequestId | None,
    method: str | None,
    requester: Side | None = None,
) -> Build:
    return lambda seq, key: Anomaly(seq, ts, origin, key, name, detail, request_id, method, requester=requester)


def _endpoint_session(event: SseEvent) -> str | None:
    """The session id in a legacy `endpoint` event's URI (`sessionId` or `session_id`), else the URI."""
    uri = (event.data or "").strip()
    if not uri:
        return None
    query = parse_qs(urlsplit(uri).query)
    for name in ("sessionId", "session_id"):
        if query.get(name):
            return query[name][0]
    return uri
