"""HAR 1.2 files (browser developer tools, mitmproxy, Charles, Proxyman): MCP exchanges as events.

Every entry whose request or response body is JSON-RPC (or an SSE stream of it), or that carries an
`Mcp-Session-Id`, becomes events; other traffic in the file is left alone (counted in `har.no-mcp`
when there is no MCP at all). Sessions are keyed by `Mcp-Session-Id` (the request's, else the
response's, as on `initialize`), else by the URL's host. The vantage is the tool that wrote the file
(`log.creator.name`): a browser is the client, a proxy is a proxy.

Times come from `startedDateTime` plus the entry's timings (`har_entry`): the request's messages at
the end of `send`, a JSON reply at the first response byte. A HAR keeps a finished SSE body but not
when each event arrived: every event but the last is placed at the first response byte (the earliest
it can have come), the last at the response's end (where the stream ended after it). Events of all
entries are put in time order (entries are written in the order they finished, by mitmproxy, or
started, by browsers) in a heap: an event leaves it once no entry still to come can start before it
(`bounds`: what the file proves), or, past `MAX_REORDER` events or the events of `MAX_REORDER_BYTES`
of entries, the earliest is let go so memory stays bounded whatever the file's size. An entry that then
starts before events already let go is out of the order the file proves: it is named
(`har.entry-out-of-order`, inferred, with how far), and its messages come after those events.

What a HAR cannot show, and is therefore not judged (`UNRECORDED`, reported by the engine): stream
resets, a client that stops reading, and bytes written after the client left (the recorder drops
them). A request the client gave up on (`_error` net::ERR_ABORTED, mitmproxy "Client disconnected.")
is a client close of its stream at the time the HAR gives, or at an unknown time when it gives none.
"""

from __future__ import annotations

import heapq
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from ...errors import InputError
from ...model import TCP_ONLY_KINDS, Anomaly, AnomalyName, EntryKind, Event, Origin, SessionStart, Transport, Vantage
from ..base import ReadOptions
from ..source import InputSource, InputStream, Seekable
from ..text.hostlog import MAX_SESSIONS
from .entry import EntryProblem, HarExchange, parse
from .entry_events import LEGACY_UNRECORDED, Make, exchange_events
from .order import EntryIndex
from .scan import HarSyntaxError, Part, Piece, Scanner

MAX_REORDER = 100_000
"""Events held to put entries in time order: past it (or past `MAX_REORDER_BYTES`) the earliest is let
go, and a later, earlier event comes out of order (the report then says timestamps go backwards)."""
MAX_REORDER_BYTES = 128 << 20
"""The entries (as JSON bytes) whose events are held at most: held events keep their parsed bodies."""
UNRECORDED = TCP_ONLY_KINDS
_SNIFF = re.compile(rb'\A\s*\{\s*"log"\s*:\s*\{')
#: `log.creator.name` (lower case) prefix -> where the file was written.
_VANTAGES = (
    (("webinspector", "firefox", "chrome", "edge", "safari"), Vantage.CLIENT),
    (("mitmproxy", "charles", "proxyman", "fiddler", "burp", "zap", "owasp"), Vantage.PROXY),
)


def vantage_of(creator: str) -> Vantage:
    name = creator.strip().lower()
    for prefixes, vantage in _VANTAGES:
        if name.startswith(prefixes):
            return vantage
    return Vantage.UNKNOWN


@dataclass(order=True, slots=True)
class _Queued:
    ts: float
    index: int
    order: int
    key: str = field(compare=False)
    origin: Origin = field(compare=False)
    make: Make = field(compare=False)
    weight: int = field(compare=False)
    """Its share of its entry's bytes."""


class HarReader:
    name = "har"

    def sniff(self, head: bytes) -> bool:
        return _SNIFF.match(head) is not None

    def read(self, source: InputSource, options: ReadOptions) -> Iterator[Event]:
        with source.seekable() as plain:
            if plain is not None:
                yield from self._by_start(source, options, *plain)
                return
        events = HarEvents(source.name, options)
        with source.open_binary(options.inflate) as stream:
            scanner = Scanner(stream)
            try:
                for piece in scanner.pieces():
                    yield from events.piece(piece)
            except HarSyntaxError as exc:
                _not_har(source, scanner, exc)
                yield from events.broken(exc)
            _not_har(source, scanner, None)
            yield from events.finish(scanner.entries)
            if stream.problem is not None:  # a damaged or capped .gz: why the file ended early
                yield events.anomaly(scanner.line, stream.problem.name, stream.problem.detail)

    def _by_start(self, source: InputSource, options: ReadOptions, raw: Seekable, base: int) -> Iterator[Event]:
        """A HAR on disk, its entries read in the order they started (`order`)."""
        events = HarEvents(source.name, options)
        index = EntryIndex()
        raw.seek(base)
        scanner = Scanner(InputStream(source.name, raw))  # a read error names the input
        broken: HarSyntaxError | None = None
        try:
            for piece in scanner.pieces():
                if piece.part is Part.ENTRY and piece.data is not None:
                    index.add(piece)
                else:
                    yield from events.piece(piece)  # the creator, or an entry that is no entry (named)
        except HarSyntaxError as exc:
            _not_har(source, scanner, exc)
            broken = exc
        _not_har(source, scanner, None)
        order = index.by_start()
        for n, at in enumerate(order):
            data = read_at(source, raw, base + index.offsets[at], index.sizes[at])
            yield from events.piece(Piece(Part.ENTRY, index.numbers[at], index.lines[at], index.offsets[at], data))
            yield from events.release(index.next_start(order, n))
        if broken is not None:
            yield from events.broken(broken)
        yield from events.finish(scanner.entries)


def read_at(source: InputSource, raw: Seekable, offset: int, size: int) -> bytes:
    try:
        raw.seek(offset)
        return raw.read(size)
    except OSError as exc:
        raise InputError(source.name, f"cannot read: {exc.strerror or exc}") from exc


def _not_har(source: InputSource, scanner: Scanner, exc: HarSyntaxError | None) -> None:
    """No `log.entries` array was found (by the error `exc`, or by the end of the file): not a HAR."""
    if scanner.seen_entries:
        return
    if exc is not None:
        raise InputError(source.name, f"not a readable HAR file: {exc}", "check that it is a whole HAR 1.2 export")
    raise InputError(source.name, "no log.entries array: not a HAR 1.2 file")


class HarEvents:
    """Entries -> events in time order, with `seq`, sessions and their `SessionStart`s."""

    def __init__(
        self,
        source: str,
        options: ReadOptions,
        *,
        input_format: str = "har",
        unrecorded: frozenset[EntryKind] = UNRECORDED,
    ) -> None:
        self.source = source
        self.options = options
        self.input_format = input_format
        self.unrecorded = unrecorded
        self._let_go = -math.inf
        """The latest time of an event let go so far."""
        self._forced = False
        """The reorder buffer was full: an event was let go before the file proved its order."""
        self.vantage = options.session_vantage(Vantage.UNKNOWN)
        self.seq = 0
        self.mcp = 0
        self._heap: list[_Queued] = []
        self._held_bytes = 0
        self._order = 0
        self._started: set[str] = set()
        self._legacy: set[str] = set()
        self._ids: dict[str, str] = {}
        """Session key → the `Mcp-Session-Id` that keyed it (as many as sessions: MAX_SESSIONS)."""
        """Sessions seen to be HTTP+SSE (2024-11-05): see `entry_events.EntryEvents.legacy`."""

    def piece(self, piece: Piece) -> Iterator[Event]:
        if piece.data is None:
            yield self.anomaly(
                piece.line, AnomalyName.HAR_ENTRY_UNREADABLE, f"entry {piece.index} skipped: {piece.problem}"
            )
            return
        try:
            value = _loads(piece.data)
        except orjson.JSONDecodeError as exc:
            where = f"byte {piece.offset + exc.pos}" if isinstance(exc.pos, int) else f"byte {piece.offset}"
            what = f"{piece.part.value} {piece.index} skipped: not JSON at {where}: {exc.msg}"
            yield self.anomaly(piece.line, AnomalyName.HAR_ENTRY_UNREADABLE, what)
            return
        if piece.part is Part.CREATOR:
            name = value.get("name") if isinstance(value, dict) else None
            self.vantage = self.options.session_vantage(vantage_of(name if isinstance(name, str) else ""))
            return
        try:
            exchange = parse(value, piece.index, piece.line)
        except EntryProblem as exc:
            yield self.anomaly(piece.line, AnomalyName.HAR_ENTRY_UNREADABLE, f"entry {piece.index} skipped: {exc}")
            return
        yield from self.exchange(exchange, len(piece.data))

    def exchange(self, exchange: HarExchange, size: int) -> Iterator[Event]:
        """One exchange (of `size` bytes in the file) into the time order."""
        origin = self.origin(exchange)
        entry = exchange_events(exchange, origin, self.source)
        if entry is None:
            return
        self.mcp += 1
        if entry.legacy:
            self._legacy.add(entry.key)  # bounded: a key is added once, and keys are capped at MAX_SESSIONS
        if entry.session_id and entry.key not in self._ids and len(self._ids) < MAX_SESSIONS:
            self._ids[entry.key] = entry.session_id
        weight = size // max(1, len(entry.timed))
        earliest = min((ts for ts, _ in entry.timed), default=math.inf)
        if earliest < self._let_go:
            yield from self._hold(self._out_of_order(exchange.index, earliest, entry.key, origin))
        for ts, make in entry.timed:
            yield from self._hold(_Queued(ts, exchange.index, self._next(), entry.key, origin, make, weight))

    def broken(self, exc: HarSyntaxError) -> Iterator[Event]:
        yield from self._drain()
        what = f"not JSON at line {exc.line}, byte {exc.offset}: {exc.what}; the entries after it are not read"
        yield self.anomaly(exc.line, AnomalyName.HAR_INVALID_JSON, what)

    def finish(self, entries: int) -> Iterator[Event]:
        yield from self._drain()
        if self.mcp == 0:
            yield self.anomaly(
                1, AnomalyName.HAR_NO_MCP, f"none of the {entries} entries carries JSON-RPC or an Mcp-Session-Id"
            )

    # -- ordering --------------------------------------------------------------------------------

    def _next(self) -> int:
        self._order += 1
        return self._order

    def release(self, until: float) -> Iterator[Event]:
        """Every held event no later than `until`: no entry still to come starts before it (`order`)."""
        while self._heap and self._heap[0].ts <= until:
            yield from self._emit(heapq.heappop(self._heap))

    def _hold(self, item: _Queued) -> Iterator[Event]:
        heapq.heappush(self._heap, item)
        self._held_bytes += item.weight
        while len(self._heap) > MAX_REORDER or self._held_bytes > MAX_REORDER_BYTES:
            self._forced = True
            yield from self._emit(heapq.heappop(self._heap))

    def _out_of_order(self, index: int, earliest: float, key: str, origin: Origin) -> _Queued:
        """An entry that starts before events already let go (the buffer was full, or the file was read in one
        pass): named, never silently."""
        gap = self._let_go - earliest
        why = (
            f"the reorder buffer let them go at its limit ({MAX_REORDER} events, or the events of "
            f"{MAX_REORDER_BYTES >> 20} MiB of entries) before the file proved their order"
            if self._forced
            else "it names a later startedDateTime first (a key given twice), by which it was put in order"
        )
        detail = (
            f"entry {index} starts {gap:.3f} s before events already read: {why}; its messages come after them, "
            "so what their order says is inferred"
        )
        name = AnomalyName.HAR_ENTRY_OUT_OF_ORDER
        make: Make = lambda seq, k: Anomaly(seq, earliest, origin, k, name, detail, gap=gap)  # noqa: E731
        return _Queued(earliest, index, self._next(), key, origin, make, 0)

    def _drain(self) -> Iterator[Event]:
        while self._heap:
            yield from self._emit(heapq.heappop(self._heap))

    def _emit(self, item: _Queued) -> Iterator[Event]:
        self._held_bytes -= item.weight
        self._let_go = max(self._let_go, item.ts)
        key = item.key
        if key not in self._started:
            if len(self._started) >= MAX_SESSIONS:  # a HAR of a million Mcp-Session-Ids: bounded state
                what = f"entry {item.index}: session {key} is past the first {MAX_SESSIONS} sessions of this input"
                yield self.anomaly(
                    item.origin.line or 1, AnomalyName.INPUT_TOO_MANY_SESSIONS, what + ": its messages are not read"
                )
                return
            self._started.add(key)
            self.seq += 1
            legacy = key in self._legacy  # known unless the reorder buffer let this session go early
            yield SessionStart(
                seq=self.seq,
                ts=item.ts,
                origin=item.origin,
                session_key=key,
                transport=Transport.HTTP_SSE if legacy else Transport.STREAMABLE_HTTP,
                vantage=self.vantage,
                input_format=self.input_format,
                label=key.partition("#")[2],
                unrecorded=self.unrecorded | LEGACY_UNRECORDED if legacy else self.unrecorded,
                session_id=self._ids.get(key),
            )
        self.seq += 1
        yield item.make(self.seq, key)

    def anomaly(self, line: int, name: AnomalyName, detail: str) -> Anomaly:
        self.seq += 1
        return Anomaly(self.seq, None, Origin(self.source, line=line), None, name, detail)

    # -- where an entry's events belong -----------------------------------------------------------

    def origin(self, exchange: HarExchange) -> Origin:
        return Origin(self.source, line=exchange.line)


def _loads(data: bytes) -> Any:
    """An entry's JSON. Tools written in Python (`json.dumps`) write a timing they could not measure as
    `NaN` or `Infinity`, which is not JSON: such an entry is read by the standard library (which takes
    them, and a number past a double as `inf`); a phase that is not finite counts as not recorded, as
    HAR's -1 does. The scanner has bounded the entry's depth, so that parser cannot recurse deeply."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        try:
            return json.loads(data)
        except ValueError:
            raise exc from None


READER = HarReader()
