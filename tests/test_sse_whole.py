"""The SSE parser's whole-block reading (`SseParser._whole_events`) against its line parser, the oracle.

A piece that holds only whole plain blocks (what the SDKs write in one go) is read with one split; anything
else goes through the line parser. Both must give the same events, offsets and state, so every test here
feeds the same bytes to `SseParser` and to `LineParser` (the same class with the whole-block reading off):
the SSE bodies of every sample capture (real SDKs, `\\n` and `\\r\\n` line ends) as they were cut into
pieces on the wire, at every 2-way cut and at 3-way cuts around every line end; and generated streams
(hypothesis) of every field, comment, line ending, BOM, bad byte, blank-line run and cut.
"""

from __future__ import annotations

import functools
import itertools
import re
from pathlib import Path

import pytest
from cancelwire.readers import InputSource, ReadOptions, choose_reader
from cancelwire.readers.base import CaptureReaderChoice
from cancelwire.readers.http.sse import PartialEvent, SseEvent, SseParser
from hypothesis import given
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.sources  # patches and subclasses SseParser (conftest.py)


class LineParser(SseParser):
    """The oracle: every piece through the line parser."""

    def _whole_events(self, data: bytes) -> list[SseEvent] | None:
        return None


Read = tuple[list[SseEvent], PartialEvent | None, str, int, list[int]]


def _read(parser: SseParser, pieces: list[bytes]) -> Read:
    """The events, what is left at the end, and the bytes held after each piece (the memory budget's)."""
    events: list[SseEvent] = []
    held: list[int] = []
    for piece in pieces:
        events += parser.feed(piece)
        held.append(parser.buffered)
    return events, parser.finish(), parser.last_event_id, parser.offset, held


def _same(pieces: list[bytes], max_event_bytes: int = 1 << 20) -> Read:
    got = _read(SseParser(max_event_bytes), pieces)
    assert got == _read(LineParser(max_event_bytes), pieces)
    return got


@functools.cache
def _sdk_streams() -> list[tuple[bytes, ...]]:
    """The pieces every SSE parser was fed while the sample captures (direct reader), HAR files and mitmproxy
    flows were read."""
    streams: dict[int, list[bytes]] = {}
    original = SseParser.feed

    def record(parser: SseParser, data: bytes) -> list[SseEvent]:
        streams.setdefault(id(parser), []).append(bytes(data))
        return original(parser, data)

    kept: list[SseParser] = []  # alive until the end, so no id is reused
    original_init = SseParser.__init__

    def keep(parser: SseParser, *args: int) -> None:
        original_init(parser, *args)
        kept.append(parser)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(SseParser, "feed", record)
        patch.setattr(SseParser, "__init__", keep)
        options = ReadOptions(capture_reader=CaptureReaderChoice.DIRECT)
        for path in sorted((ROOT / "sample_captures").rglob("*")):
            if path.suffix in (".pcapng", ".har", ".flows"):
                source = InputSource(path.name, path)
                list(choose_reader(source, None).read(source, options))
    return [tuple(pieces) for pieces in streams.values()]


def test_sample_captures_hold_sdk_streams_of_both_line_ends() -> None:
    streams = _sdk_streams()
    bodies = [b"".join(pieces) for pieces in streams]
    assert len(streams) >= 100
    assert any(b"\r\n\r\n" in body for body in bodies)  # the Python SDK (sse-starlette)
    assert any(b"\n\n" in body and b"\r" not in body for body in bodies)  # the TypeScript and Go SDKs
    whole = [piece for pieces in streams for piece in pieces if SseParser()._whole_events(piece) is not None]
    assert len(whole) >= 220  # nearly every piece is read whole


def test_sdk_streams_as_cut_on_the_wire() -> None:
    events = 0
    for pieces in _sdk_streams():
        events += len(_same(list(pieces))[0])
    assert events >= 220


@functools.cache
def _shapes() -> list[bytes]:
    """One body (the shortest) of each shape of the SDK streams: their lines' names and line ends in order, a
    run of like blocks counted as two (cuts inside a value, or in a third like block, are alike: these keep
    the cut tests short)."""
    shortest: dict[bytes, bytes] = {}
    for pieces in _sdk_streams():
        body = b"".join(pieces)
        shape = re.sub(rb"(?m)^([^:\r\n]*):[^\r\n]*", rb"\1:", body)
        shape = re.sub(rb"(([^\r\n]*\r?\n)+?\r?\n)\1+", rb"\1\1", shape)
        if len(body) < len(shortest.get(shape, body + b"-")):
            shortest[shape] = body
    return list(shortest.values())


def test_sdk_stream_shapes_at_every_two_way_cut() -> None:
    assert len(_shapes()) >= 6
    for body in _shapes():
        for cut in range(len(body) + 1):
            _same([body[:cut], body[cut:]])


def _cuts(body: bytes) -> list[int]:
    """Every cut of a short body; of a longer one, those near its line ends."""
    if len(body) <= 128:
        return list(range(len(body) + 1))
    ends = {i for i, byte in enumerate(body) if byte in b"\r\n"}
    return sorted({p for end in ends for p in range(end - 2, end + 4) if 0 <= p <= len(body)})


def test_sdk_stream_shapes_at_three_way_cuts() -> None:
    for body in _shapes():
        cuts = _cuts(body)
        for i, first in enumerate(cuts):
            for second in cuts[i:]:
                _same([body[:first], body[first:second], body[second:]])


def test_whole_blocks_read_at_once_keep_offsets_and_last_id() -> None:
    body = b'id: 4\nevent: message\ndata: {"a":1}\n\ndata: x\n\nevent: endpoint\ndata: /m\n\n'
    events, partial, last_id, offset, _ = _same([body])
    assert [(e.start, e.end, e.event, e.data, e.id, e.last_event_id) for e in events] == [
        (0, 36, "message", '{"a":1}', "4", "4"),
        (36, 45, "message", "x", None, "4"),
        (45, 71, "endpoint", "/m", None, "4"),
    ]
    assert (partial, last_id, offset) == (None, "4", len(body))


def test_crlf_blocks_end_at_the_blank_lines_cr() -> None:
    body = b"event: message\r\ndata: a\r\n\r\nid: 2\r\ndata: b\r\n\r\n"
    events, _, last_id, offset, _ = _same([body])
    assert [(e.start, e.end, e.data) for e in events] == [(0, 26, "a"), (27, 44, "b")]
    assert (last_id, offset) == ("2", len(body))


@pytest.mark.parametrize(
    "piece",
    [
        b"data: a\ndata: b\n\n",  # two data lines
        b"data:a\n\n",  # no space after the colon
        b"data\n\n",
        b": keep-alive\n\n",
        b"retry: 10\ndata: a\n\n",
        b"id: 1\x002\ndata: a\n\n",
        b"data: a\n\n\n",  # a blank line more
        b"\ndata: a\n\n",
        b"data: a\r\n\n",  # mixed line ends
        b"data: a\r\r",
        b"data: a\n\ndata: b",  # ends inside a block
        b"other: a\n\n",
    ],
)
def test_anything_else_goes_to_the_line_parser(piece: bytes) -> None:
    assert SseParser()._whole_events(piece) is None
    _same([piece])
    _same([b"data: 0\n\n", piece, b"\n\ndata: 1\n\n"])


def test_a_piece_larger_than_an_event_may_be_goes_to_the_line_parser() -> None:
    body = b"data: " + b"x" * 40 + b"\n\ndata: y\n\n"
    events = _same([body], max_event_bytes=32)[0]
    assert [(e.oversized, e.data) for e in events] == [(True, None), (False, "y")]


def test_a_pending_line_or_cr_goes_to_the_line_parser() -> None:
    parser = SseParser()
    parser.feed(b"data: a\r")  # the \n that may follow is this line's
    assert [e.data for e in parser.feed(b"\n\r\ndata: b\r\n\r\n")] == ["a", "b"]
    _same([b"data: a\r", b"\n\r\ndata: b\r\n\r\n"])
    _same([b"\xef\xbb", b"\xbfdata: a\n\n", b"data: b\n\n"])


_VALUES = st.sampled_from(
    [b"", b"x", b" lead", b'{"jsonrpc":"2.0","id":1,"result":{}}', b"a: b", b"\xff\xfe", b"\x00", b"caf\xc3\xa9"]
)
_PLAIN = st.tuples(st.sampled_from([b"data", b"event", b"id"]), _VALUES).map(lambda nv: nv[0] + b": " + nv[1])
_ODD = st.one_of(
    st.tuples(st.sampled_from([b"retry", b"other", b"", b"da ta"]), _VALUES).map(lambda nv: nv[0] + b": " + nv[1]),
    st.sampled_from([b"data", b"data:x", b"event", b": comment", b":", b"retry: 250", b"id", b"\xef\xbb\xbfdata: a"]),
)
_EOLS = st.sampled_from([b"\n", b"\r\n", b"\r"])


@st.composite
def _streams(draw: st.DrawFn) -> tuple[bytes, list[int]]:
    """A stream and where it is cut: plain (only the lines whole-block reading takes, one line end, one blank
    line after each block, so some pieces are read whole) or anything."""
    plain = draw(st.booleans())
    lines = _PLAIN if plain else st.one_of(_PLAIN, _ODD)
    eol = draw(_EOLS)
    out = bytearray(b"\xef\xbb\xbf" if draw(st.booleans()) else b"")
    for block in draw(st.lists(st.lists(lines, min_size=1 if plain else 0, max_size=4), max_size=6)):
        for line in block:
            out += line + (eol if plain else draw(_EOLS))
        out += eol if plain else b"".join(draw(st.lists(_EOLS, min_size=0 if block else 1, max_size=2)))
    body = bytes(out)
    cuts = sorted(draw(st.lists(st.integers(0, len(body)), max_size=4)))
    return body, cuts


@given(_streams(), st.sampled_from([1 << 20, 24]))
def test_generated_streams_at_any_cuts(stream: tuple[bytes, list[int]], max_event_bytes: int) -> None:
    body, cuts = stream
    bounds = [0, *cuts, len(body)]
    _same([body[a:b] for a, b in itertools.pairwise(bounds)], max_event_bytes)
    _same([body], max_event_bytes)
