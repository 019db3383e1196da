"""mitmproxy's own flow files (`mitmproxy`): what `mitmdump -w FILE` (or the console's and the web UI's save)
writes, one tnetstring dict per flow (`mitmproxy_tnetstring`), in the order flows ended.

Each HTTP flow is read as the HAR reader reads an entry (`mitmproxy_flow` makes a `HarExchange` of it, and
`har.reader.HarEvents` puts the events of all flows in time order: a file on disk read by start, `_by_start`; a
gzip file or a pipe in one pass, within the reorder buffer's bound), so a flow says
what a HAR entry says, with mitmproxy's own words: its `error` records how the client left. "Client
disconnected." (HTTP/1.1: the client closed the connection before the response ended) is the client's close
of the request's stream, and "stream reset by client (CANCEL)" (HTTP/2) its reset of the stream: on Streamable
HTTP either is the cancel itself from 2026-07-28. A body mitmproxy streamed is not stored (`stream_large_bodies`,
or an addon's `flow.response.stream`, which an SSE session through mitmproxy needs to run live): such a
response is named (CW928 `har-body-not-recorded`, as for a HAR without the body) and its request left out.

Evidence is `FILE:N`, the Nth flow of the file (a flow file has no lines; a frame number would send a reader to
Wireshark). The vantage is a proxy's; sessions are keyed by
`Mcp-Session-Id`, else by the upstream host. Times are mitmproxy's clock at each end of each message (the
request's and the response's `timestamp_start` and `timestamp_end`, the error's `timestamp`); SSE events
within a kept body carry no time of their own (placed as in a HAR: at the first byte, the last at the end).

What a flow file cannot show (`UNRECORDED`, not judged): TCP itself (a FIN is not told from an RST on
HTTP/1.1, no window), a server's reset, and bytes written after the client left.

The frames are followed while they can be: a flow whose content is not a readable HTTP flow is skipped and
named; a frame that cannot be followed (a cut file, a length past `MAX_FLOW_BYTES`) ends the reading with an
`InputError` naming the flow and its byte offset, after the flows before it are judged.
"""

from __future__ import annotations

import math
import re
from array import array
from collections.abc import Iterator

from ...errors import InputError
from ...model import TCP_ONLY_KINDS, Anomaly, AnomalyName, EntryKind, Event, Origin, Vantage
from ..base import InputSource, ReadOptions
from ..har.entry import HarExchange
from ..har.reader import HarEvents, read_at
from ..source import InputStream, Seekable
from .mitmproxy_flow import FlowProblem, http_flow
from .mitmproxy_tnetstring import TnetError, next_flow, parse, stopped

UNRECORDED = TCP_ONLY_KINDS - {EntryKind.STREAM_RESET_BY_CLIENT}
"""What a flow file cannot show: it records a client's HTTP/2 reset, not TCP nor a server's reset."""
_SNIFF = re.compile(rb"\A[1-9]\d{0,9}:([1-9]\d?):")
_CREATED = re.compile(rb"17:timestamp_created;\d{1,2}:([0-9.e+-]{1,40})\^")
_CREATED_WITHIN = 64 << 10
"""Where a flow's `timestamp_created` is looked for: mitmproxy writes it before the request and its bodies."""
_KEY = re.compile(rb"[A-Za-z_]{1,40}")


class MitmproxyReader:
    name = "mitmproxy"

    def sniff(self, head: bytes) -> bool:
        """A dict whose first key is a short name of the length its prefix says (`NNN:7:version;...`)."""
        found = _SNIFF.match(head)
        if found is None:
            return False
        size, at = int(found.group(1)), found.end()
        return _KEY.fullmatch(head[at : at + size]) is not None and head[at + size : at + size + 1] in (b";", b",")

    def read(self, source: InputSource, options: ReadOptions) -> Iterator[Event]:
        flows = _FlowEvents(source.name, options, input_format=self.name, unrecorded=UNRECORDED)
        flows.vantage = options.session_vantage(Vantage.PROXY)
        with source.seekable() as plain:
            if plain is not None:
                yield from _by_start(source, flows, *plain)
                return
        number, offset = 0, 0
        with source.open_binary(options.inflate) as stream:
            while True:
                try:
                    data = next_flow(stream, offset, source.name)
                except TnetError as exc:
                    yield from flows.finish(number)
                    raise _broken(source, number, exc) from None
                if data is None:
                    break
                number += 1
                yield from flows.flow(number, offset, data)
                offset += len(data)
            problem = stream.problem
        if problem is not None:  # a damaged or capped .gz: why the file ended early
            yield flows.bad(number, problem.name, problem.detail)
        yield from flows.finish(number)


def _by_start(source: InputSource, flows: _FlowEvents, raw: Seekable, base: int) -> Iterator[Event]:
    """A flow file on disk, its flows read in the order they started: mitmdump writes a flow when it ends, so a
    long call comes long after the cancel that names it. A first pass notes where each flow is and when it was
    created (its `timestamp_created`, at or before any of its events; -inf without one, so read first); the
    second reads them in that order, and an event leaves the time order once no flow still to read was created
    before it. Memory: the events of the flows open at that time, and 32 bytes per flow."""
    raw.seek(base)
    stream = InputStream(source.name, raw)
    starts, offsets, sizes = array("d"), array("q"), array("q")
    broken: TnetError | None = None
    offset = 0
    while True:
        try:
            data = next_flow(stream, offset, source.name)
        except TnetError as exc:
            broken = exc
            break
        if data is None:
            break
        found = _CREATED.search(data, 0, _CREATED_WITHIN)
        starts.append(_created(found.group(1)) if found else -math.inf)
        offsets.append(offset)
        sizes.append(len(data))
        offset += len(data)
    order = sorted(range(len(starts)), key=starts.__getitem__)
    for n, at in enumerate(order):
        yield from flows.flow(at + 1, offsets[at], read_at(source, raw, base + offsets[at], sizes[at]))
        yield from flows.release(starts[order[n + 1]] if n + 1 < len(order) else math.inf)
    yield from flows.finish(len(starts))
    if broken is not None:
        raise _broken(source, len(starts), broken)


def _created(text: bytes) -> float:
    try:
        return float(text)
    except ValueError:
        return -math.inf


def _broken(source: InputSource, read: int, exc: TnetError) -> InputError:
    if read == 0:
        return InputError(source.name, f"not a mitmproxy flow file: {exc.what}")
    return stopped(source.name, read + 1, exc)


class _FlowEvents(HarEvents):
    """The HAR reader's ordering, with a flow's number as its evidence (`FILE:N`: a flow file has no lines)."""

    def flow(self, number: int, offset: int, data: bytes) -> Iterator[Event]:
        try:
            exchange = http_flow(parse(data, offset), number)
        except (TnetError, FlowProblem) as exc:
            where = exc.offset if isinstance(exc, TnetError) else offset
            yield self.bad(number, AnomalyName.INPUT_BAD_RECORD, f"flow {number} (byte {where}) skipped: {exc}")
            return
        if exchange is not None:
            yield from self.exchange(exchange, len(data))

    def origin(self, exchange: HarExchange) -> Origin:
        return Origin(self.source, line=exchange.index)

    def bad(self, number: int, name: AnomalyName, detail: str) -> Anomaly:
        self.seq += 1
        return Anomaly(self.seq, None, Origin(self.source, line=max(1, number)), None, name, detail)

    def finish(self, entries: int) -> Iterator[Event]:
        while self._heap:  # every held event, in time order
            yield from self.release(float("inf"))
        if self.mcp == 0 and entries:
            what = f"none of the {entries} flows carries JSON-RPC or an Mcp-Session-Id"
            yield self.bad(1, AnomalyName.HAR_NO_MCP, what)


READER = MitmproxyReader()
