"""Numbering events in source order and turning a line's JSON text into message events or anomalies.

Shared by every text reader; the anomaly names here are the ones every text format can produce.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Final

from orjson import JSONDecodeError
from orjson import loads as _loads

from ..model import (
    Anomaly,
    AnomalyName,
    Direction,
    Event,
    Message,
    MessageEvent,
    MessageKind,
    Origin,
    RequestId,
    TransportEvent,
    TransportKind,
)
from ..model.jsonrpc import EXCERPT_CHARS, classify_one, decode_text, excerpt
from ..model.timestamps import plausible
from .lines import DEFAULT_MAX_LINE_BYTES, RawLine

_JSONRPC_MEMBER: Final = re.compile(r'"jsonrpc"\s*:\s*"2\.0"')


def holds_jsonrpc(text: str) -> bool:
    """True when a line holds what looks like a JSON-RPC 2.0 object (a substring test first: cheap)."""
    return '"jsonrpc"' in text and _JSONRPC_MEMBER.search(text) is not None


class EventFactory:
    """Numbers events in source order and turns JSON text into message events or anomalies."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.seq = 0

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def origin(self, line: int) -> Origin:
        return Origin(self.source, line=line)

    def anomaly(
        self,
        line: int,
        ts: float | None,
        session_key: str | None,
        name: AnomalyName,
        detail: str,
        request_id: RequestId | None = None,
    ) -> Anomaly:
        return Anomaly(self.next_seq(), ts, self.origin(line), session_key, name, detail, request_id)

    def unread_message(self, line: int, session_key: str | None, text: str, why: str) -> Anomaly:
        """A line that holds a JSON-RPC message the reader could not take as one (a damaged prefix,
        or a program's own output): said, never dropped silently."""
        return self.anomaly(
            line, None, session_key, AnomalyName.INPUT_UNRECOGNIZED_LINE, f"{why}; not read: {text[:80]!r}"
        )

    def implausible_time(self, line: int, session_key: str | None, ts: float) -> Anomaly:
        shown = "not a date" if ts != ts else f"{ts:.17g} s since 1970"
        what = f"the line's time ({shown}) cannot be a clock reading (before 1970 or after 2106)"
        return self.anomaly(
            line, None, session_key, AnomalyName.INPUT_IMPLAUSIBLE_TIME, what + "; its messages are kept without a time"
        )

    def local_replies(
        self, line: int, ts: float | None, session_key: str, direction: Direction, messages: Sequence[Message]
    ) -> Iterator[Event]:
        """A record a peer's log marks `"local": true`: its own library made it, no peer sent it. A reply
        to a request of the side it goes to is that library giving its caller up on the call (the call's
        end for the caller, a `GAVE_UP_BY_*` fact); anything else local is named and not read."""
        if ts is not None and not plausible(ts):
            yield self.implausible_time(line, session_key, ts)
            ts = None
        for m in messages:
            if (
                m.kind in (MessageKind.RESULT, MessageKind.ERROR)
                and m.id is not None
                and direction is not Direction.NONE
            ):
                kind = (
                    TransportKind.GAVE_UP_BY_CLIENT if direction is Direction.S2C else TransportKind.GAVE_UP_BY_SERVER
                )
                origin, said = self.origin(line), m.payload.get("message")
                what = f"error {m.payload.get('code')!r} {said[:60]!r}" if isinstance(said, str) else m.kind.value
                yield TransportEvent(self.next_seq(), ts, origin, session_key, kind, None, what, request_id=m.id)
            else:
                why = "a local record (made by the recording side's own library, never on the wire) that ends no call"
                yield self.unread_message(line, session_key, m.excerpt, why)

    def line_problems(self, raw: RawLine, session_key: str | None) -> Iterator[Anomaly]:
        """Anomalies every text format shares (size, an input ended early); the caller skips the line
        when one is yielded. What was not read may hold a reply to any request open then, of either peer
        (`Anomaly.reply_unread` without a request id): their silence proves nothing."""
        if raw.problem is not None:
            name, detail = raw.problem.name, raw.problem.detail
        elif raw.too_long:
            name = AnomalyName.INPUT_LINE_TOO_LONG
            detail = f"line of {raw.too_long} bytes skipped (limit {DEFAULT_MAX_LINE_BYTES} bytes)"
        else:
            return
        yield Anomaly(self.next_seq(), None, self.origin(raw.number), session_key, name, detail, reply_unread=True)

    def text_of(self, raw: RawLine, session_key: str | None) -> tuple[str | None, list[Anomaly]]:
        """A line's text, and the anomalies to report for it; no text when the line is skipped (size)."""
        problems = list(self.line_problems(raw, session_key))
        if problems:
            return None, problems
        text, bad_utf8 = self.decode_utf8(raw, None, session_key)
        return text, [bad_utf8] if bad_utf8 is not None else []

    def decode_utf8(self, raw: RawLine, ts: float | None, session_key: str | None) -> tuple[str, Anomaly | None]:
        try:
            return raw.data.decode("utf-8"), None
        except UnicodeDecodeError as exc:
            text = raw.data.decode("utf-8", "replace")
            return text, self.anomaly(
                raw.number,
                ts,
                session_key,
                AnomalyName.INPUT_INVALID_UTF8,
                f"invalid UTF-8 at byte {exc.start}; decoded with replacement characters",
            )

    def simple_message(
        self, text: str, line: int, ts: float | None, session_key: str, direction: Direction
    ) -> MessageEvent | None:
        """The common case on the hot path: `text` is one valid JSON-RPC object (parsed once).
        None for anything else, which `messages` then handles and names."""
        try:
            value = _loads(text)
        except JSONDecodeError:
            return None
        if value.__class__ is not dict:
            return None
        one = classify_one(value, text if len(text) <= EXCERPT_CHARS else excerpt(text))
        if one.__class__ is not Message:
            return None
        self.seq += 1
        return MessageEvent(self.seq, ts, Origin(self.source, line), session_key, direction, one)

    def messages(
        self,
        text: str | bytes,
        *,
        line: int,
        ts: float | None,
        session_key: str,
        direction: Direction,
        unterminated: bool = False,
        not_json_name: AnomalyName = AnomalyName.INPUT_NON_JSON_LINE,
    ) -> Iterator[Event]:
        """Events for one JSON-RPC text: messages, or anomalies naming what is wrong. A `ts` that is no
        clock reading (NaN: a stamp that is not a date) is named and the messages keep no time."""
        if ts is not None and not plausible(ts):
            yield self.implausible_time(line, session_key, ts)
            ts = None
        if text.__class__ is str:
            event = self.simple_message(text, line, ts, session_key, direction)
            if event is not None:
                yield event
                return
        decoded = decode_text(text)
        if decoded is None:
            shown = text if isinstance(text, str) else text.decode("utf-8", "replace")
            if unterminated:
                yield self.anomaly(
                    line,
                    ts,
                    session_key,
                    AnomalyName.INPUT_TRUNCATED_LINE,
                    f"last line has no newline and is not complete JSON (input cut?): {shown[:80]!r}",
                )
            else:
                yield self.anomaly(line, ts, session_key, not_json_name, f"not JSON: {shown[:120]!r}")
            return
        if decoded.batch:
            yield self.anomaly(
                line,
                ts,
                session_key,
                AnomalyName.JSONRPC_BATCH,
                f"a JSON array of {len(decoded.messages) + len(decoded.problems)} messages (a batch)",
            )
        for problem in decoded.problems:
            yield self.anomaly(line, ts, session_key, problem.name, problem.detail)
        for message in decoded.messages:
            yield MessageEvent(self.next_seq(), ts, self.origin(line), session_key, direction, message)
