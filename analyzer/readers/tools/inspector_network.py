"""The MCP Inspector's network log export: one entry per HTTP fetch its client made.

Each entry (clients/web of @modelcontextprotocol/inspector 2.12.0) is
`{"id", "timestamp", "method", "url", "requestHeaders", "requestBody", "responseStatus", "responseStatusText",
"responseHeaders", "responseBody", "duration"}`, or, when the fetch threw before a response came,
`{..., "error", "duration"}`. `timestamp` is when the fetch started and `duration` how long until its
response's headers (or the error). A POST's body is read after: `responseBody` is the whole JSON reply or
SSE stream once it has ended, cut at 64 KiB (`... [truncated]`, or a JSON body withheld). A `GET` stream's
events are counted, never kept.

Read as: the POST's JSON-RPC messages (client → server) at `timestamp`; a JSON reply's messages at
`timestamp + duration`; the `data` events of an SSE reply placed there too, the earliest they can have
come, but without a time: the log does not say when a streamed event came, so it cannot order one against
a later fetch. But a client cancels only a call it has no reply to: the reply of a call whose cancel a
later fetch POSTed is placed after that cancel. A fetch that threw an abort
(`AbortError`, "aborted") is the client closing its stream at that moment: the cancel itself under
2026-07-28. A POST answered 200 whose `responseBody` is missing had its body read cut by the client
(the same close, at an unknown time) or was still open when the log was exported: read as the client's
close, and said so. Any other error is a request that got no response (CW215). Sessions are keyed by
`Mcp-Session-Id` (request's, else response's), else the URL's host; the transport is Streamable HTTP.

What a network log cannot show (`UNRECORDED`, not judged): stream resets, a client that stops reading,
bytes written after the client left, and what a `GET` stream carried.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

from ...model import (
    TCP_ONLY_KINDS,
    Anomaly,
    AnomalyName,
    Direction,
    Event,
    MessageEvent,
    MessageKind,
    Origin,
    RequestId,
    SessionStart,
    Transport,
    TransportEvent,
    TransportKind,
    Vantage,
)
from ...model.jsonrpc import decode_text
from ..event_factory import EventFactory
from ..http.sse import SseParser
from ..text.hostlog import MAX_SESSIONS
from .timing import Timed, Unreadable, later, timestamp

UNRECORDED = TCP_ONLY_KINDS
_ABORT = re.compile(r"abort", re.IGNORECASE)
_CUT = (" [truncated]", "[truncated JSON body withheld")
_SESSION_CHARS = 128


def events(
    entries: list[Any], lines: list[int], factory: EventFactory, vantage: Vantage, timed: Timed
) -> Iterator[Event]:
    """The events of a network log's entries, in time order."""
    log = _Network(factory, vantage, timed)
    log.cancels = _cancels(entries)
    for index, entry in enumerate(entries):
        log.entry(index, lines[index] if index < len(lines) else 1, entry)
    if not log.started and not log.skipped:
        yield factory.anomaly(
            1, None, None, AnomalyName.HAR_NO_MCP, f"none of the {len(entries)} fetches carries JSON-RPC"
        )
    yield from log.timed.events()


class _Network:
    def __init__(self, factory: EventFactory, vantage: Vantage, timed: Timed) -> None:
        self.factory = factory
        self.vantage = vantage
        self.timed = timed
        self.started: set[str] = set()
        """Session keys given out (at most `MAX_SESSIONS`)."""
        self.opened: set[str] = set()
        """Session keys whose `SessionStart` was emitted."""
        self.skipped = 0
        self.cancels: dict[tuple[str, RequestId], tuple[float, int]] = {}
        """(session, request id) → the time and entry of the first fetch that POSTed its cancel."""

    def entry(self, index: int, line: int, entry: Any) -> None:
        if not isinstance(entry, dict) or not isinstance(entry.get("url"), str):
            self.skipped += 1
            why = entry if isinstance(entry, Unreadable) else "not an object with a url"  # a damaged entry says why
            what = f"fetch {index} skipped: {why}"
            self.timed.add(None, index, lambda: iter([self._anomaly(line, None, AnomalyName.INPUT_BAD_RECORD, what)]))
            return
        body, reply = _text(entry.get("requestBody")), _text(entry.get("responseBody"))
        request = decode_text(body) if body else None
        mcp = request is not None or (reply is not None and '"jsonrpc"' in reply) or _session(entry) is not None
        if not mcp:
            return
        key = self._key(entry)
        if key is None:
            self.skipped += 1
            what = f"fetch {index}: a session past the first {MAX_SESSIONS} of this input: not read"
            self.timed.add(
                None, index, lambda: iter([self._anomaly(line, None, AnomalyName.INPUT_TOO_MANY_SESSIONS, what)])
            )
            return
        ts = timestamp(entry.get("timestamp"))
        ended = later(ts, entry.get("duration"))
        fetch = _Fetch(self, index, line, key, entry)
        self.timed.add(ts, index, lambda: fetch.start(ts, body))
        at, order = ended or ts, float(index)
        called = next((m.id for m in request.messages if m.kind is MessageKind.REQUEST), None) if request else None
        cancel = self.cancels.get((_group(entry), called)) if called is not None and _streamed(entry) else None
        if cancel is not None and (at is None or cancel[0] >= at):
            at, order = cancel[0], cancel[1] + 0.5  # its client cancelled it unanswered: the reply came after
        self.timed.add(at, order, lambda: fetch.end(ended, reply))

    def _key(self, entry: dict[str, Any]) -> str | None:
        key = f"{self.factory.source}#{_group(entry)}"
        if key not in self.started:
            if len(self.started) >= MAX_SESSIONS:
                return None
            self.started.add(key)
        return key

    def _anomaly(self, line: int, key: str | None, name: AnomalyName, what: str, **extra: Any) -> Anomaly:
        return replace(self.factory.anomaly(line, None, key, name, what), **extra)


class _Fetch:
    """One fetch's events; made when their turn in time comes."""

    def __init__(self, log: _Network, index: int, line: int, key: str, entry: dict[str, Any]) -> None:
        self.log, self.index, self.line, self.key, self.entry = log, index, line, key, entry
        self.stream = f"fetch{index}"
        self.session_id = _session(entry)
        """The `Mcp-Session-Id` that keys its session (`_group`), if one does."""
        self.request_id: RequestId | None = None
        self.method: str | None = None
        headers = entry.get("requestHeaders")
        version = headers.get("mcp-protocol-version") if isinstance(headers, dict) else None
        self.revision = version[:20] if isinstance(version, str) else None

    def start(self, ts: float | None, body: str | None) -> Iterator[Event]:
        factory = self.log.factory
        yield from self._session(ts)
        if body is None:
            return
        for event in factory.messages(body, line=self.line, ts=ts, session_key=self.key, direction=Direction.C2S):
            if isinstance(event, MessageEvent):
                if event.message.id is not None and self.request_id is None and event.message.method is not None:
                    self.request_id, self.method = event.message.id, event.message.method
                event = replace(event, stream=self.stream, revision_hint=self.revision)
            yield event

    def end(self, ts: float | None, reply: str | None) -> Iterator[Event]:
        entry = self.entry
        error, status = entry.get("error"), entry.get("responseStatus")
        if isinstance(error, str):
            if _ABORT.search(error):
                yield self._close(ts, f"the fetch was aborted: {error[:80]!r}")
            else:
                what = (
                    f"fetch {self.index}: {entry.get('method')} {entry['url'][:120]} got no response ({error[:80]!r})"
                )
                yield self._anomaly(AnomalyName.HAR_REQUEST_FAILED, what)
            return
        if not isinstance(status, int) or isinstance(status, bool):
            yield self._anomaly(AnomalyName.INPUT_BAD_RECORD, f"fetch {self.index}: neither a status nor an error")
            return
        if status >= 400:
            yield self._anomaly(
                AnomalyName.HTTP_ERROR_STATUS, f"fetch {self.index}: HTTP {status} on {entry['url'][:120]}"
            )
        if reply is None:
            if status == 200 and entry.get("method") == "POST":
                yield self._close(
                    None, "the response body is missing: the client aborted its read, or it was open at export"
                )
            return
        if reply.endswith(_CUT[0]) or reply.startswith(_CUT[1]):
            yield self._anomaly(
                AnomalyName.INPUT_TRUNCATED_LINE,
                f"fetch {self.index}: the Inspector kept only the first 64 KiB of the reply; not read",
            )
            return
        streamed = _streamed(self.entry)
        at = None if streamed else ts  # a streamed reply came at some time after the headers: not recorded
        for text in self._texts(reply, streamed):
            for event in self.log.factory.messages(
                text, line=self.line, ts=at, session_key=self.key, direction=Direction.S2C
            ):
                yield replace(event, stream=self.stream) if isinstance(event, MessageEvent) else event

    def _texts(self, reply: str, streamed: bool) -> Iterator[str]:
        if streamed:
            parser = SseParser()
            blocks = parser.feed(reply.encode("utf-8", "replace") + b"\n\n")  # a last event without its blank line
            yield from (b.data for b in blocks if b.data)
        elif reply.strip():
            yield reply

    def _session(self, ts: float | None) -> Iterator[Event]:
        if self.key in self.log.opened:
            return
        self.log.opened.add(self.key)
        yield SessionStart(
            self.log.factory.next_seq(),
            ts,
            Origin(self.log.factory.source, line=self.line),
            self.key,
            Transport.STREAMABLE_HTTP,
            self.log.vantage,
            "inspector",
            label=self.key.partition("#")[2],
            unrecorded=UNRECORDED,
            session_id=self.session_id,
        )

    def _close(self, ts: float | None, detail: str) -> Event:
        origin = Origin(self.log.factory.source, line=self.line)
        kind = TransportKind.CLOSED_BY_CLIENT
        return TransportEvent(self.log.factory.next_seq(), ts, origin, self.key, kind, self.stream, detail)

    def _anomaly(self, name: AnomalyName, what: str) -> Anomaly:
        return self.log._anomaly(self.line, self.key, name, what, request_id=self.request_id, method=self.method)


def _streamed(entry: dict[str, Any]) -> bool:
    headers = entry.get("responseHeaders")
    kind = headers.get("content-type") if isinstance(headers, dict) else None
    return isinstance(kind, str) and "event-stream" in kind


def _group(entry: dict[str, Any]) -> str:
    """The session an entry belongs to: its `Mcp-Session-Id`, else its URL's host."""
    sid = _session(entry)
    return sid if sid is not None else (urlsplit(entry["url"]).netloc[:_SESSION_CHARS] or "unknown")


def _cancels(entries: list[Any]) -> dict[tuple[str, RequestId], tuple[float, int]]:
    """Where each request's cancel was POSTed: (session, request id) → (time, entry), the first of each."""
    found: dict[tuple[str, RequestId], tuple[float, int]] = {}
    for index, entry in enumerate(entries):
        body = (
            _text(entry.get("requestBody")) if isinstance(entry, dict) and isinstance(entry.get("url"), str) else None
        )
        if body is None or "notifications/cancelled" not in body:
            continue
        ts, decoded = timestamp(entry.get("timestamp")), decode_text(body)
        if ts is None or decoded is None:
            continue
        for m in decoded.messages:
            target = m.payload.get("requestId") if m.method == "notifications/cancelled" else None
            if isinstance(target, str | int) and not isinstance(target, bool):
                found.setdefault((_group(entry), target), (ts, index))
    return found


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _session(entry: dict[str, Any]) -> str | None:
    for side in ("requestHeaders", "responseHeaders"):
        headers = entry.get(side)
        value = headers.get("mcp-session-id") if isinstance(headers, dict) else None
        if isinstance(value, str) and value:
            return value[:_SESSION_CHARS]
    return None
