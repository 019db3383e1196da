"""The events of one HAR entry, each with the time it is ordered by (see `har` for the placement).

Not MCP (no JSON-RPC body, no `Mcp-Session-Id`): no events. Otherwise, in the entry's order: the
request's messages; the response's status problems; a JSON reply, or the SSE stream (opened, its
events, closed by its end); or, with no response, the client's close (given up) or the failure.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlsplit

from ...model import (
    Anomaly,
    AnomalyName,
    Direction,
    EntryKind,
    Event,
    Message,
    MessageEvent,
    MessageKind,
    Origin,
    RequestId,
    Revision,
    Side,
    TransportEvent,
    TransportKind,
)
from ...model.jsonrpc import decode_text
from ..http import delivery
from ..http.sse import DISPATCHED, SseEvent, SseParser
from .entry import HarExchange
from .session_ids import choose

Make = Callable[[int, str], Event]
"""Builds an event once its `seq` and session key are known."""
Keep = Callable[[Message], bool]
"""Whether a message of a body goes on the timeline."""
Timed = tuple[float, Make]
"""The time an event is ordered by, and its maker."""

_JSONRPC = re.compile(r'\A\s*[\[{].*?"jsonrpc"', re.S)
_NO_BODY = (202, 204, 304)
_LEGACY = re.compile(r"^event:\s*endpoint\s*$", re.M)
_SESSION_PARAMS = ("session_id", "sessionId")
_MAX_QUERY = 4096
_MAX_QUERY_VALUE = 200
#: What an HTTP+SSE session's stream carries, which its HAR entries do not show (the stream is not read):
#: everything the server sends.
LEGACY_UNRECORDED = frozenset(
    {
        EntryKind.RESULT,
        EntryKind.ERROR_RESULT,
        EntryKind.PROGRESS,
        EntryKind.RELATED_MESSAGE,
        EntryKind.TASK_STATUS,
        EntryKind.TASK_RESULT,
        EntryKind.CANCEL_ANSWER,
        EntryKind.STREAM_CLOSED_BY_SERVER,
    }
)


@dataclass(frozen=True, slots=True)
class EntryEvents:
    """One entry's events and where they belong."""

    key: str
    """Its session (see `har_session`; else the URL's host)."""
    timed: list[Timed]
    """Its events with the times they are ordered by."""
    legacy: bool
    """The entry belongs to an HTTP+SSE (2024-11-05) session: a request POSTed and accepted without its
    reply (which goes on the session's SSE stream), or that stream itself. Such a stream is not read
    (docs/har.md), so the session's replies are not recorded (`LEGACY_UNRECORDED`)."""
    session_id: str | None = None
    """The `Mcp-Session-Id` that keyed it, if one did (`SessionStart.session_id`)."""


def exchange_events(ex: HarExchange, origin: Origin, source: str) -> EntryEvents | None:
    """Every event of the entry with its ordering time; None when the entry is not MCP traffic."""
    sse = "event-stream" in ex.response_mime
    request_rpc = ex.request_body is not None and _JSONRPC.match(ex.request_body[:4096]) is not None
    response_rpc = ex.response_body is not None and '"jsonrpc"' in ex.response_body
    if not (request_rpc or response_rpc or ex.header("mcp-session-id")):
        return None
    build = _Builder(ex, origin)
    aborted = ex.abandoned and ex.status > 0 and ex.response_body is None
    unrecorded = bool(ex.status) and ex.status not in _NO_BODY and not aborted and _not_recorded(ex)
    requests = _request(build)
    first = next((m for m in requests if m.kind is MessageKind.REQUEST), None)
    request_id, method = (first.id, first.method) if first is not None else (None, None)
    session = choose(ex, method)
    key = f"{source}#{session.session_id or _endpoint_session(ex) or ex.host or '?'}"
    if session.conflict is not None:
        what = f"{build.name}: {session.conflict}"
        build.timed.append(
            (ex.sent, build.anomaly(AnomalyName.HAR_SESSION_ID_CONFLICT, what, ex.sent, request_id, method))
        )
    if unrecorded:
        why = ex.missing or f"content size {ex.response_size}"
        what = f"{build.name}: the response body is not in {ex.recording} ({why})"
        if first is not None:
            what += f"; the reply to {method} (id {request_id!r}) may be in it, so its silence proves nothing"
        anomaly = build.anomaly(
            AnomalyName.HAR_BODY_NOT_RECORDED, what, ex.ended, request_id, method, Side.CLIENT, reply_unread=True
        )
        build.timed.append((ex.ended, anomaly))
        return EntryEvents(key, build.timed, legacy=False, session_id=session.session_id)
    if aborted:
        _aborted(build, sse, request_id, method)
        return EntryEvents(key, build.timed, legacy=False, session_id=session.session_id)
    if ex.status >= 400 and ex.method == "POST":
        what = f"{build.name}: HTTP {ex.status} to POST {ex.url}"
        build.timed.append(
            (ex.first_byte, build.anomaly(AnomalyName.HTTP_ERROR_STATUS, what, ex.first_byte, request_id, method))
        )
    legacy = first is not None and 200 <= ex.status < 300 and not response_rpc and not sse
    if legacy:  # the reply is not in this entry: 2024-11-05 answers on the GET stream (HTTP-3 forbids it later)
        what = f"{build.name}: {method} (id {request_id!r}) was POSTed and answered {ex.status} without its reply"
        build.timed.append(
            (ex.first_byte, build.anomaly(AnomalyName.HAR_REPLIES_ELSEWHERE, what, ex.first_byte, request_id, method))
        )
    elif ex.response_body and sse and 200 <= ex.status < 300 and _LEGACY.search(ex.response_body):
        legacy = True
        what = f"{build.name}: a legacy HTTP+SSE stream (an endpoint event): a HAR does not say when its events "
        what += "came, and they answer requests POSTed all along it, so its messages are not read"
        build.timed.append((ex.first_byte, build.anomaly(AnomalyName.HAR_ENTRY_UNREADABLE, what, ex.first_byte)))
    elif ex.response_body and sse and 200 <= ex.status < 300:
        _stream(build, ex.response_body)
    elif (
        ex.response_body
        and ex.response_body.strip()
        and (response_rpc or (ex.status < 300 and ex.status not in _NO_BODY))
    ):
        # a redirect's or an error's body that is no JSON-RPC (a proxy's HTML page) is no MCP message
        build.body(ex.response_body, Direction.S2C, ex.first_byte, "response body")
    if ex.status == 0:
        build.timed.append(_no_response(build, request_id, method))
    return EntryEvents(key, build.timed, legacy, session.session_id)


def _endpoint_session(ex: HarExchange) -> str | None:
    """An HTTP+SSE session's POST endpoint names its session in the query (the SDKs' `session_id` and
    `sessionId`): each such session apart, so a page that reconnected is not one session reusing ids."""
    if ex.method != "POST" or "?" not in ex.url:
        return None
    for name, value in parse_qsl(urlsplit(ex.url).query[:_MAX_QUERY]):
        if name in _SESSION_PARAMS and value:
            return f"{ex.host}?{name}={value[:_MAX_QUERY_VALUE]}"
    return None


def _request(build: _Builder) -> list[Message]:
    """The request body's messages: those its answer's status says reached the server go on the
    timeline (`delivery`: not a redirected or refused POST's), the others are named. Returns every message."""
    ex = build.ex
    fate = delivery.of_status(ex.status)
    # a HAR the standard library read (orjson refused it) may hold a lone surrogate escape ("\\udcff")
    answer = (ex.response_body or "").encode("utf-8", "surrogatepass") if fate is delivery.Delivery.REFUSED else b""

    def reached(m: Message) -> bool:
        return delivery.delivered(fate, m, bool(answer) and delivery.answers(answer, m.id))

    requests = build.body(ex.request_body, Direction.C2S, ex.sent, "request body", keep=reached)
    dropped = [m for m in requests if not reached(m)]
    if dropped and fate is not None:
        location = ex.response_headers.get("location")
        for u in delivery.undelivered(fate, build.name, ex.status, ex.url, location, dropped):
            build.timed.append((ex.sent, build.anomaly(u.name, u.detail, ex.sent, u.request_id, u.method, u.requester)))
    return requests


def _not_recorded(ex: HarExchange) -> bool:
    """A response with a body the HAR did not keep (no text for a body not known to be empty, or an empty text
    for a non-empty body)."""
    return (ex.response_body is None and ex.response_size != 0) or (not ex.response_body and ex.response_size > 0)


def _aborted(build: _Builder, sse: bool, request_id: RequestId | None, method: str | None) -> None:
    """The client aborted the fetch after the response head (the HAR keeps no body): the stream opened, what
    came on it is not kept (a reply may be among it), and the client closed it."""
    ex = build.ex
    if sse:
        build.transport(TransportKind.STREAM_OPENED, ex.first_byte, f"{ex.method} {ex.url}")
    if ex.response_size != 0:
        came = f"{ex.response_size} bytes" if ex.response_size > 0 else "bytes"
        what = (
            f"{build.name}: {came} of the response came before the client aborted the fetch; {ex.recording} keeps none"
        )
        if ex.missing is not None:
            what = (
                f"{build.name}: the client left before the response ended; {ex.recording} keeps no body ({ex.missing})"
            )
        anomaly = build.anomaly(
            AnomalyName.HAR_BODY_NOT_RECORDED, what, ex.ended, request_id, method, Side.CLIENT, reply_unread=True
        )
        build.timed.append((ex.ended, anomaly))
    build.timed.append(_no_response(build, request_id, method))


def _stream(build: _Builder, body: str) -> None:
    """An SSE response: opened at the first byte, its events, closed at its end."""
    ex = build.ex
    build.transport(TransportKind.STREAM_OPENED, ex.first_byte, f"{ex.method} {ex.url}")
    parser = SseParser()
    events = [
        e
        for e in parser.feed(body.encode("utf-8", "surrogatepass"))  # a lone surrogate decodes as U+FFFD
        if e.data and e.data.strip() and e.event != "endpoint"
    ]
    for n, event in enumerate(events):
        ts = ex.ended if n == len(events) - 1 else ex.first_byte
        _sse_event(build, event, ts)
    partial = parser.finish()
    if partial is not None:
        shown = partial.raw[:200].decode("utf-8", "replace")
        what = f"{build.name}: the SSE body stops inside an event at byte {partial.start} (a client discards it)"
        what += f": {shown!r}"
        build.timed.append((ex.ended, build.anomaly(AnomalyName.SSE_PARTIAL_EVENT, what, ex.ended)))
    if not ex.abandoned:
        build.transport(TransportKind.CLOSED_BY_SERVER, ex.ended, "the SSE response ended")


def _sse_event(build: _Builder, event: SseEvent, ts: float) -> None:
    if event.oversized:
        what = f"{build.name}: an SSE event of {event.end - event.start} bytes was skipped"
        build.timed.append((ts, build.anomaly(AnomalyName.SSE_EVENT_TOO_LARGE, what, ts)))
        return
    if event.event != DISPATCHED:
        detail, request_id, method = event.undispatched(build.name)
        build.timed.append((ts, build.anomaly(AnomalyName.SSE_EVENT_NOT_DISPATCHED, detail, ts, request_id, method)))
        return
    what = f"SSE event (id={event.id})" if event.id is not None else "SSE event"
    build.body(event.data or "", Direction.S2C, ts, what)


def _no_response(build: _Builder, request_id: RequestId | None, method: str | None) -> Timed:
    """No status: the client gave up (a close of the stream), or the request failed."""
    ex = build.ex
    if ex.abandoned:
        ts = ex.ended if ex.response_timed else None
        when = "" if ts is not None else "; when is not recorded"
        said = (
            f"records {ex.error!r}" if ex.error else "keeps the response head and no body of a load that never finished"
        )
        detail = f"{build.name}: {ex.recording} {said}: the client gave up on the request{when}"
        stream = build.stream
        origin = build.origin
        kind = TransportKind.RESET_BY_CLIENT if ex.reset_by_client else TransportKind.CLOSED_BY_CLIENT
        make: Make = lambda seq, key: TransportEvent(seq, ts, origin, key, kind, stream, detail)  # noqa: E731
        return ex.ended, make
    why = ex.error or "no status and no error recorded"
    target = " ".join(filter(None, (ex.method, ex.url))) or "the request"
    what = f"{build.name}: {target} got no response ({why})"
    return ex.ended, build.anomaly(AnomalyName.HAR_REQUEST_FAILED, what, ex.ended, request_id, method)


class _Builder:
    """Makes one entry's events (they share its origin, stream and revision)."""

    def __init__(self, ex: HarExchange, origin: Origin) -> None:
        self.ex = ex
        self.origin = origin
        self.stream = f"har{ex.index}"
        self.name = f"{ex.unit} {ex.index}"
        revision: Revision | None = ex.request_headers.get("mcp-protocol-version")
        self.revision = revision
        self.timed: list[Timed] = []

    def body(
        self, text: str | None, direction: Direction, ts: float, what: str, *, keep: Keep | None = None
    ) -> list[Message]:
        """The messages of one JSON body (or SSE event data), added with `ts` (only those `keep` keeps);
        problems as anomalies. Returns every message."""
        if not text:
            return []
        decoded = decode_text(text)
        if decoded is None:
            self.timed.append(
                (
                    ts,
                    self.anomaly(
                        AnomalyName.HTTP_NON_JSON_BODY, f"{self.name}: {what} is not JSON: {text[:120]!r}", ts
                    ),
                )
            )
            return []
        if decoded.batch:
            size = len(decoded.messages) + len(decoded.problems)
            self.timed.append(
                (
                    ts,
                    self.anomaly(
                        AnomalyName.JSONRPC_BATCH,
                        f"{self.name}: {what} is a JSON array of {size} messages (a batch)",
                        ts,
                    ),
                )
            )
        for problem in decoded.problems:
            self.timed.append((ts, self.anomaly(problem.name, f"{self.name}: {problem.detail}", ts)))
        for message in decoded.messages:
            if keep is None or keep(message):
                self.timed.append((ts, self._message(message, direction, ts)))
        return list(decoded.messages)

    def _message(self, message: Message, direction: Direction, ts: float) -> Make:
        origin, stream, revision = self.origin, self.stream, self.revision
        return lambda seq, key: MessageEvent(seq, ts, origin, key, direction, message, stream, revision)

    def transport(self, kind: TransportKind, ts: float, detail: str) -> None:
        origin, stream = self.origin, self.stream
        make: Make = lambda seq, key: TransportEvent(seq, ts, origin, key, kind, stream, detail)  # noqa: E731
        self.timed.append((ts, make))

    def anomaly(
        self,
        name: AnomalyName,
        detail: str,
        ts: float,
        request_id: RequestId | None = None,
        method: str | None = None,
        requester: Side | None = None,
        *,
        reply_unread: bool = False,
    ) -> Make:
        origin = self.origin
        return lambda seq, key: Anomaly(
            seq, ts, origin, key, name, detail, request_id, method, requester=requester, reply_unread=reply_unread
        )
