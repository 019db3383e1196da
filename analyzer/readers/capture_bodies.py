"""What the bodies of a capture's HTTP exchanges hold: JSON-RPC messages, SSE events, and their faults.

A request body and an `application/json` response body become `MessageEvent`s at the frame that
completed them; an SSE response (`text/event-stream`) becomes one per event whose data is JSON-RPC,
at the frame that completed that event. SSE blocks without data (priming events, comments, `retry`)
are SERVER_BYTES transport events; an event cut by the end of the stream is `sse.partial-event`.
"""

from __future__ import annotations

from ..jsonrpc import decode_text
from ..model import Anomaly, Direction, Message, MessageEvent, Origin, RequestId, Revision, TransportKind
from .capture_sessions import Build, Exchange, Sessions, WaitsFor
from .http1 import MAX_BODY_BYTES
from .sse import SseEvent


class Bodies:
    """Turns body bytes into events through `Sessions`; counts the JSON-RPC messages seen."""

    def __init__(self, sessions: Sessions) -> None:
        self.sessions = sessions
        self.messages = 0
        """JSON-RPC messages seen (also unreadable MCP bodies): 0 at the end means "no MCP traffic"."""

    def json(self, ex: Exchange, body: bytes, direction: Direction, what: str) -> None:
        """Every JSON-RPC message of a body (or an SSE event's data), and the problems found in it."""
        s = self.sessions
        decoded = decode_text(body)
        ts, origin, revision = s.ts, s.origin(), ex.revision
        if decoded is None:
            shown = body[:120].decode("utf-8", "replace")
            detail = f"{ex.id}: {what} is not JSON: {shown!r}"
            s.for_exchange(ex, _problem(ts, origin, "http.non-json-body", detail))
            return
        if decoded.batch:
            size = len(decoded.messages) + len(decoded.problems)
            detail = f"{ex.id}: {what} is a JSON array of {size} messages (a batch)"
            s.for_exchange(ex, _problem(ts, origin, "jsonrpc.batch", detail))
        for problem in decoded.problems:
            s.for_exchange(ex, _problem(ts, origin, problem.name, f"{ex.id}: {problem.detail}"))
        for message in decoded.messages:
            if ex.request_unread and message.method is None:
                continue  # a reply to the request we could not read (named in its body-too-large anomaly)
            self.messages += 1
            if (
                direction is Direction.S2C
                and message.id is not None
                and message.id == ex.request_id
                and message.method is None
            ):
                ex.answered = True
            s.for_exchange(ex, _message(ts, origin, direction, message, ex.id, revision))

    def response_data(self, ex: Exchange, data: bytes) -> None:
        if ex.sse is not None:
            for event in ex.sse.feed(data):
                self._sse_event(ex, event)
        elif ex.body is not None:
            ex.body_size += len(data)
            room = MAX_BODY_BYTES - len(ex.body)
            if room > 0:
                ex.body += data[:room]

    def response_body_end(self, ex: Exchange) -> None:
        """A complete `application/json` response body: its messages, or why they are not read."""
        if ex.body is None:
            return
        if ex.body_size > MAX_BODY_BYTES:
            self.sessions.anomaly(
                ex.key,
                "http.body-too-large",
                f"{ex.id}: response body of {ex.body_size} bytes; only {MAX_BODY_BYTES} read",
            )
        elif ex.body:
            self.json(ex, bytes(ex.body), Direction.S2C, "response body")
        ex.body = None

    def cut_body(self, ex: Exchange, how: str) -> None:
        """The connection ended inside a JSON response body (fewer bytes than its Content-Length, or
        no last chunk): name it, and read what came if it is whole JSON after all."""
        if ex.body is None or ex.status == 0:
            return
        declared = f" of the {ex.content_length} announced" if ex.content_length is not None else ""
        body, ex.body = bytes(ex.body), None
        decoded = decode_text(body) if body and ex.body_size <= MAX_BODY_BYTES else None
        judged = (
            "the bytes that came are whole JSON and are read"
            if decoded is not None and decoded.messages
            else "its JSON-RPC reply is lost"
        )
        self.sessions.anomaly(
            ex.key,
            "http.body-truncated",
            f"{ex.id}: {how} after {ex.body_size}{declared} response body bytes; {judged}",
            request_id=ex.request_id,
            method=ex.request_method,
        )
        if decoded is not None and decoded.messages:
            self.json(ex, body, Direction.S2C, "response body (cut)")

    def partial(self, ex: Exchange) -> None:
        """The SSE stream ended inside an event: name what was cut (a client discards it)."""
        if ex.sse is None:
            return
        partial = ex.sse.finish()
        if partial is None:
            return
        request_id: RequestId | None = None
        method: str | None = None
        if partial.data:
            decoded = decode_text(partial.data)
            if decoded is not None and decoded.messages:
                request_id, method = decoded.messages[0].id, decoded.messages[0].method
        shown = partial.raw[:200].decode("utf-8", "replace")
        self.sessions.resolve(ex, None)
        self.sessions.anomaly(
            ex.key,
            "sse.partial-event",
            f"{ex.id}: the SSE stream stopped inside an event at byte {partial.start} "
            f"(a client discards it): {shown!r}",
            request_id=request_id,
            method=method,
        )

    def _sse_event(self, ex: Exchange, event: SseEvent) -> None:
        s = self.sessions
        if ex.waits_for is WaitsFor.FIRST_EVENT:
            s.first_event(ex, event)
        if event.oversized:
            s.anomaly(
                ex.key, "sse.event-too-large", f"{ex.id}: an SSE event of {event.end - event.start} bytes was skipped"
            )
            return
        if event.event == "endpoint":
            return  # legacy HTTP+SSE setup: where to POST; no message
        if event.data is None or not event.data.strip():
            parts = [
                f"id={event.id}" if event.id is not None else "",
                f"retry={event.retry}" if event.retry is not None else "",
                f"comment={event.comments[0]!r:.60}" if event.comments else "",
            ]
            what = "priming event" if event.data is not None and event.id is not None else "SSE block without data"
            s.transport(ex, TransportKind.SERVER_BYTES, " ".join([what, *filter(None, parts)]))
            return
        what = f"SSE event (id={event.id})" if event.id is not None else "SSE event"
        self.json(ex, event.data.encode(), Direction.S2C, what)


def _problem(ts: float | None, origin: Origin, name: str, detail: str) -> Build:
    return lambda seq, key: Anomaly(seq, ts, origin, key, name, detail)


def _message(
    ts: float | None, origin: Origin, direction: Direction, message: Message, stream: str, revision: Revision | None
) -> Build:
    return lambda seq, key: MessageEvent(seq, ts, origin, key, direction, message, stream, revision)
