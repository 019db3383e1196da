"""What the bodies of a capture's HTTP exchanges hold: JSON-RPC messages, SSE events, and their faults.

A request body and an `application/json` response body become `MessageEvent`s at the frame that
completed them; an SSE response (`text/event-stream`) becomes one per event whose data is JSON-RPC,
at the frame that completed that event. SSE blocks without data (priming events, comments, `retry`)
are SERVER_BYTES transport events; an event cut by the end of the stream is `sse.partial-event`.
A body with a Content-Encoding is decoded (`encoding`) before any of this; one that cannot be is named
(`http.body-not-decoded`, `http.body-decode-failed`, `http.body-inflate-limit`) as a reply not read.
"""

from __future__ import annotations

from typing import Any, Final

from ...model import (
    Anomaly,
    AnomalyName,
    Direction,
    Message,
    MessageEvent,
    Origin,
    RequestId,
    Revision,
    Side,
    TransportKind,
)
from ...model.jsonrpc import decode_text
from ..http.encoding import DecodeProblem, decoder_for
from ..http.http1 import MAX_BODY_BYTES
from ..http.sse import DISPATCHED, SseEvent
from ..inflate import DEFAULT_LIMITS
from .sessions import Build, Exchange, Sessions, WaitsFor

# Read per message, so bound once: an enum member read off its class is an attribute look-up on Python 3.11
_S2C: Final = Direction.S2C

MAX_HELD_PER_CONNECTION = 32 << 20
"""Response bytes held at once on one TCP connection (JSON bodies and SSE events not complete yet): two of
the largest read. HTTP/2 multiplexes up to 1000 streams, each with a body or event up to 16 MiB; no real
session has this much in flight on one connection."""
MAX_HELD_BYTES = 128 << 20
"""Response bytes held at once in the whole capture (over all its connections)."""


class Bodies:
    """Turns body bytes into events through `Sessions`; counts the JSON-RPC messages seen.

    Response bodies and SSE events are held until they end, within a budget: one that would take the bytes
    held on its connection past MAX_HELD_PER_CONNECTION, or in the capture past MAX_HELD_BYTES, is dropped
    and named (`capture.response-budget-exceeded`), so memory follows the budget, not what a peer leaves open."""

    def __init__(self, sessions: Sessions, max_ratio: float = DEFAULT_LIMITS.max_ratio) -> None:
        self.sessions = sessions
        self.max_ratio = max_ratio
        """How far an encoded body may inflate (`--max-inflate-ratio`)."""
        self.messages = 0
        """JSON-RPC messages seen (also unreadable MCP bodies): 0 at the end means "no MCP traffic"."""
        self.held = 0
        """Response bytes held now, over every connection."""
        self._held_on: dict[int, int] = {}
        """Response bytes held now, by TCP stream (connections holding none are left out)."""
        self._held_by: dict[str, int] = {}
        """Response bytes held now, by exchange id (exchanges holding none are left out)."""

    def json(
        self,
        ex: Exchange,
        body: bytes,
        direction: Direction,
        what: str,
        sent: list[tuple[Build, Message]] | None = None,
    ) -> None:
        """Every JSON-RPC message of a body (or an SSE event's data), and the problems found in it; a
        request body's messages go to `sent` instead (they wait for the answer's status)."""
        s = self.sessions
        decoded = decode_text(body)
        ts, origin, revision = s.ts, s.origin(), ex.revision
        if decoded is None:
            shown = body[:120].decode("utf-8", "replace")
            detail = f"{ex.id}: {what} is not JSON: {shown!r}"
            s.for_exchange(ex, _problem(ts, origin, AnomalyName.HTTP_NON_JSON_BODY, detail))
            return
        if decoded.batch:
            size = len(decoded.messages) + len(decoded.problems)
            detail = f"{ex.id}: {what} is a JSON array of {size} messages (a batch)"
            s.for_exchange(ex, _problem(ts, origin, AnomalyName.JSONRPC_BATCH, detail))
        for problem in decoded.problems:
            s.for_exchange(ex, _problem(ts, origin, problem.name, f"{ex.id}: {problem.detail}"))
        for message in decoded.messages:
            if ex.request_unread and message.method is None:
                continue  # a reply to the request we could not read (named in its body-too-large anomaly)
            self.messages += 1
            if direction is _S2C and message.id is not None and message.id == ex.request_id and message.method is None:
                ex.answered = True
            build = _message(ts, origin, direction, message, ex.id, revision, s.crossed)
            if sent is not None:
                sent.append((build, message))
            else:
                s.for_exchange(ex, build)

    def encoded(self, ex: Exchange, coding: str | None) -> None:
        """The response head names a Content-Encoding: the body read (JSON or SSE) is decoded as it comes,
        or named at once as not read."""
        if ex.sse is None and ex.body is None:
            return  # a body that is not read anyway
        ex.decoder = decoder_for(coding, self.max_ratio)
        if ex.decoder is not None and ex.decoder.problem is not None:
            self._undecoded(ex, ex.decoder.problem)

    def decoded_request(self, ex: Exchange, body: bytes) -> bytes | None:
        """A whole request body with a Content-Encoding, decoded; None (named) when it cannot be."""
        decoder = decoder_for(ex.request_coding, self.max_ratio)
        if decoder is None:
            return body
        out = bytearray()
        for piece in decoder.feed(body):
            out += piece
            if len(out) > MAX_BODY_BYTES:
                detail = f"{ex.id}: request body of more than {MAX_BODY_BYTES} decoded bytes skipped"
                self.sessions.anomaly(ex.key, AnomalyName.HTTP_BODY_TOO_LARGE, detail + _NOT_JUDGED)
                return None
        decoder.finish()
        if decoder.problem is not None:
            detail = f"{ex.id}: request body: {decoder.problem.detail}"
            self.sessions.anomaly(ex.key, decoder.problem.name, detail + _NOT_JUDGED)
            return None
        return bytes(out)

    def response_data(self, ex: Exchange, data: bytes) -> None:
        decoder = ex.decoder
        if decoder is None:
            self._response_bytes(ex, data)
            return
        if ex.body is not None and ex.body_size > MAX_BODY_BYTES:
            return  # too large already (named at its end): not inflated further
        fresh = decoder.problem is None
        for piece in decoder.feed(data):
            self._response_bytes(ex, piece)
            if ex.body is not None and ex.body_size > MAX_BODY_BYTES:
                break
        if fresh and decoder.problem is not None:
            self._undecoded(ex, decoder.problem)

    def _undecoded(self, ex: Exchange, problem: DecodeProblem) -> None:
        """The response's bytes stop being decoded: named as a reply not read; what is held of it is let go."""
        self._unread(ex, problem.name, f"{ex.id}: response body: {problem.detail}")
        if ex.sse is not None:
            ex.sse.finish()  # the event it stopped inside is part of what the anomaly names
            self._hold(ex, 0)
        else:
            self._release(ex)

    def _response_bytes(self, ex: Exchange, data: bytes) -> None:
        """Response body bytes as sent (decoded, when the body is encoded)."""
        if ex.sse is not None:
            for event in ex.sse.feed(data):
                self._sse_event(ex, event)
            passed = self._hold(ex, ex.sse.buffered)
            if passed is not None:
                self._over_budget(ex, f"an SSE event not read after {ex.sse.buffered} bytes", passed)
                ex.sse.drop_pending()
                self._hold(ex, ex.sse.buffered)
        elif ex.body is not None:
            ex.body_size += len(data)
            room = MAX_BODY_BYTES - len(ex.body)
            if room > 0:
                kept = data[:room]
                passed = self._hold(ex, len(ex.body) + len(kept))
                if passed is None:
                    ex.body += kept
                else:
                    self._over_budget(ex, f"response body not read after {ex.body_size} bytes", passed)
                    self._release(ex)

    def response_body_end(self, ex: Exchange) -> None:
        """A complete `application/json` response body: its messages, or why they are not read."""
        if ex.body is None:
            return
        too_large = ex.body_size > MAX_BODY_BYTES
        if ex.decoder is not None and not too_large:
            ex.decoder.finish()
            if ex.decoder.problem is not None:
                self._undecoded(ex, ex.decoder.problem)
                return
        if too_large:
            size = f"more than {MAX_BODY_BYTES} decoded" if ex.decoder is not None else str(ex.body_size)
            self._unread(
                ex,
                AnomalyName.HTTP_BODY_TOO_LARGE,
                f"{ex.id}: response body of {size} bytes; only {MAX_BODY_BYTES} read",
            )
        elif ex.body:
            self.json(ex, bytes(ex.body), Direction.S2C, "response body")
        self._release(ex)

    def cut_body(self, ex: Exchange, how: str) -> None:
        """The connection ended inside a JSON response body (fewer bytes than its Content-Length, or
        no last chunk): name it, and read what came if it is whole JSON after all."""
        if ex.body is None or ex.status == 0:
            return
        declared = f" of the {ex.content_length} announced" if ex.content_length is not None else ""
        came = f"{ex.body_size}{declared} response body bytes"
        if ex.decoder is not None:  # Content-Length counts the encoded bytes
            came = f"{ex.body_size} response body bytes (decoded from {ex.decoder.compressed}{declared} encoded)"
        body = bytes(ex.body)
        self._release(ex)
        decoded = decode_text(body) if body and ex.body_size <= MAX_BODY_BYTES else None
        detail = f"{ex.id}: {how} after {came}"
        if decoded is not None and decoded.messages:
            s = self.sessions
            s.anomaly(
                ex.key,
                AnomalyName.HTTP_BODY_TRUNCATED,
                f"{detail}; the bytes that came are whole JSON and are read",
                request_id=ex.request_id,
                method=ex.request_method,
            )
            self.json(ex, body, Direction.S2C, "response body (cut)")
        else:
            self._unread(ex, AnomalyName.HTTP_BODY_TRUNCATED, f"{detail}; its JSON-RPC reply is lost")

    def _hold(self, ex: Exchange, size: int) -> str | None:
        """The exchange now holds `size` response bytes; or, when that passes the budget, nothing changes and
        the budget it would pass is returned."""
        grow = size - self._held_by.get(ex.id, 0)
        if not grow:
            return None  # the common case: an SSE event or body read whole in one chunk holds nothing between chunks
        on = self._held_on.get(ex.stream, 0) + grow
        if grow > 0 and on > MAX_HELD_PER_CONNECTION:
            return f"{MAX_HELD_PER_CONNECTION >> 20} MiB on its connection"
        if grow > 0 and self.held + grow > MAX_HELD_BYTES:
            return f"{MAX_HELD_BYTES >> 20} MiB in the capture"
        self.held += grow
        _put(self._held_on, ex.stream, on)
        _put(self._held_by, ex.id, size)
        return None

    def _over_budget(self, ex: Exchange, what: str, passed: str) -> None:
        self._unread(
            ex,
            AnomalyName.CAPTURE_RESPONSE_BUDGET_EXCEEDED,
            f"{ex.id}: {what}: the responses held at once (other streams still open) would pass {passed}; "
            "its JSON-RPC messages are lost",
        )

    def _unread(self, ex: Exchange, name: AnomalyName, detail: str) -> None:
        """Name a response (or an SSE event of it) that is recorded but not read. It answers the exchange's
        request, if it carried one: reconstruction must not take that request's silence for no reply."""
        ts, origin, request_id, method = self.sessions.ts, self.sessions.origin(), ex.request_id, ex.request_method
        self.sessions.for_exchange(
            ex,
            lambda seq, key: Anomaly(
                seq, ts, origin, key, name, detail, request_id, method, requester=Side.CLIENT, reply_unread=True
            ),
        )

    def _release(self, ex: Exchange) -> None:
        """The exchange's body is read or dropped: its bytes leave the budget."""
        ex.body = None
        self._hold(ex, 0)

    def partial(self, ex: Exchange) -> None:
        """The SSE stream ended inside an event: name what was cut (a client discards it)."""
        if ex.sse is None:
            return
        self._hold(ex, 0)
        partial = ex.sse.finish()
        if partial is None:
            return
        request_id: RequestId | None = None
        method: str | None = None
        readable = False
        if partial.data:
            decoded = decode_text(partial.data)
            if decoded is not None and decoded.messages:
                request_id, method = decoded.messages[0].id, decoded.messages[0].method
                readable = True
        shown = partial.raw[:200].decode("utf-8", "replace")
        self.sessions.resolve(ex, None)
        detail = (
            f"{ex.id}: the SSE stream stopped inside an event at byte {partial.start} (a client discards it): {shown!r}"
        )
        if ex.request_id is not None and (not readable or (method is None and request_id == ex.request_id)):
            self._unread(
                ex, AnomalyName.SSE_PARTIAL_EVENT, detail
            )  # it may be (or is) the reply to the stream's request
        else:
            self.sessions.anomaly(ex.key, AnomalyName.SSE_PARTIAL_EVENT, detail, request_id=request_id, method=method)

    def _sse_event(self, ex: Exchange, event: SseEvent) -> None:
        s = self.sessions
        if ex.waits_for is WaitsFor.FIRST_EVENT:
            s.first_event(ex, event)
        if event.oversized:
            if event.dropped:
                return  # named when it was dropped
            self._unread(
                ex,
                AnomalyName.SSE_EVENT_TOO_LARGE,
                f"{ex.id}: an SSE event of {event.end - event.start} bytes was skipped",
            )
            return
        if event.event == "endpoint":
            return  # legacy HTTP+SSE setup: where to POST; no message
        if event.event != DISPATCHED and event.data is not None and event.data.strip():
            self._undispatched(ex, event)
            return
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

    def _undispatched(self, ex: Exchange, event: SseEvent) -> None:
        """The server wrote data in an event no client reads: bytes on the stream, no message (named, with
        the request its data would have answered)."""
        s = self.sessions
        s.transport(ex, TransportKind.SERVER_BYTES, f"SSE event of type {event.event!r}")
        detail, request_id, method = event.undispatched(ex.id)
        ts, origin, name = s.ts, s.origin(), AnomalyName.SSE_EVENT_NOT_DISPATCHED
        s.for_exchange(ex, lambda seq, key: Anomaly(seq, ts, origin, key, name, detail, request_id, method))


_NOT_JUDGED: Final = "; replies on this exchange are not judged either"


def _put(table: dict[Any, int], key: Any, value: int) -> None:
    """Set a count, leaving zeros out (tables stay as small as what is held)."""
    if value:
        table[key] = value
    else:
        table.pop(key, None)


def _problem(ts: float | None, origin: Origin, name: AnomalyName, detail: str) -> Build:
    return lambda seq, key: Anomaly(seq, ts, origin, key, name, detail)


def _message(
    ts: float | None,
    origin: Origin,
    direction: Direction,
    message: Message,
    stream: str,
    revision: Revision | None,
    crossed: bool,
) -> Build:

    return lambda seq, key: MessageEvent(seq, ts, origin, key, direction, message, stream, revision, crossed)
