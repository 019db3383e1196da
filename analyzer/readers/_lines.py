"""Shared line handling for every text reader: bounded lines, numbering, JSON → events.

Memory stays bounded: a line longer than `max_line_bytes` is skipped while it streams past
(an `input.line-too-long` anomaly), never held whole.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from analyzer.jsonrpc import decode_text
from analyzer.model import Anomaly, Direction, Event, MessageEvent, Origin, RequestId

CHUNK = 1 << 20
DEFAULT_MAX_LINE_BYTES = 16 << 20


@dataclass(frozen=True, slots=True)
class RawLine:
    number: int
    data: bytes
    """The line without its line ending; empty when `too_long`."""
    too_long: int = 0
    """Length in bytes of a line that was skipped for its size, else 0."""
    unterminated: bool = False
    """The last line of the input had no newline (the input may have been cut)."""


def iter_lines(stream: BinaryIO, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> Iterator[RawLine]:
    number = 0
    buf = b""
    skipping = 0  # > 0 while discarding an overlong line: bytes discarded so far
    while True:
        chunk = stream.read(CHUNK)
        if not chunk:
            break
        start = 0
        if skipping:
            nl = chunk.find(b"\n")
            if nl < 0:
                skipping += len(chunk)
                continue
            number += 1
            yield RawLine(number, b"", too_long=skipping + nl)
            skipping = 0
            start = nl + 1
        data = buf + chunk[start:] if buf else chunk[start:]
        buf = b""
        pos = 0
        while True:
            nl = data.find(b"\n", pos)
            if nl < 0:
                break
            number += 1
            line = data[pos:nl]
            if line.endswith(b"\r"):
                line = line[:-1]
            if len(line) > max_line_bytes:
                yield RawLine(number, b"", too_long=len(line))
            else:
                yield RawLine(number, line)
            pos = nl + 1
        rest = data[pos:]
        if len(rest) > max_line_bytes:
            skipping = len(rest)
        else:
            buf = rest
    if skipping:
        yield RawLine(number + 1, b"", too_long=skipping, unterminated=True)
    elif buf:
        line = buf[:-1] if buf.endswith(b"\r") else buf
        yield RawLine(number + 1, line, unterminated=True)


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
        self, line: int, ts: float | None, session_key: str | None, name: str, detail: str,
        request_id: RequestId | None = None,
    ) -> Anomaly:
        return Anomaly(self.next_seq(), ts, self.origin(line), session_key, name, detail, request_id)

    def line_problems(self, raw: RawLine, session_key: str | None) -> Iterator[Anomaly]:
        """Anomalies every text format shares: size; the caller skips the line when one is yielded."""
        if raw.too_long:
            yield self.anomaly(
                raw.number, None, session_key, "input.line-too-long",
                f"line of {raw.too_long} bytes skipped (limit {DEFAULT_MAX_LINE_BYTES} bytes)",
            )

    def decode_utf8(self, raw: RawLine, ts: float | None, session_key: str | None) -> tuple[str, Anomaly | None]:
        try:
            return raw.data.decode("utf-8"), None
        except UnicodeDecodeError as exc:
            text = raw.data.decode("utf-8", "replace")
            return text, self.anomaly(
                raw.number, ts, session_key, "input.invalid-utf8",
                f"invalid UTF-8 at byte {exc.start}; decoded with replacement characters",
            )

    def messages(
        self,
        text: str | bytes,
        *,
        line: int,
        ts: float | None,
        session_key: str,
        direction: Direction,
        unterminated: bool = False,
        not_json_name: str = "input.non-json-line",
    ) -> Iterator[Event]:
        """Events for one JSON-RPC text: messages, or anomalies naming what is wrong."""
        decoded = decode_text(text)
        if decoded is None:
            shown = text if isinstance(text, str) else text.decode("utf-8", "replace")
            if unterminated:
                yield self.anomaly(
                    line, ts, session_key, "input.truncated-line",
                    f"last line has no newline and is not complete JSON (input cut?): {shown[:80]!r}",
                )
            else:
                yield self.anomaly(line, ts, session_key, not_json_name, f"not JSON: {shown[:120]!r}")
            return
        if decoded.batch:
            yield self.anomaly(
                line, ts, session_key, "jsonrpc.batch",
                f"a JSON array of {len(decoded.messages) + len(decoded.problems)} messages (a batch)",
            )
        for problem in decoded.problems:
            yield self.anomaly(line, ts, session_key, problem.name, problem.detail)
        for message in decoded.messages:
            yield MessageEvent(self.next_seq(), ts, self.origin(line), session_key, direction, message)
