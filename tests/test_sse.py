"""The text/event-stream parser, byte by byte, without tshark."""

from __future__ import annotations

import pytest
from cancelwire.readers.http.sse import PartialEvent, SseEvent, SseParser


def feed_all(data: bytes, step: int | None = None, max_event_bytes: int = 1 << 20) -> list[SseEvent]:
    parser = SseParser(max_event_bytes=max_event_bytes)
    if step is None:
        return parser.feed(data)
    out: list[SseEvent] = []
    for i in range(0, len(data), step):
        out.extend(parser.feed(data[i : i + step]))
    return out


STREAM = (
    b": keep-alive comment\n\n"
    b"id: 0\nretry: 3000\ndata:\n\n"
    b'event: message\nid: 1\ndata: {"jsonrpc":"2.0",\n'
    b'data:  "id":1}\n\n'
)


def test_blocks_fields_and_offsets() -> None:
    events = feed_all(STREAM)
    assert events == [
        SseEvent(
            start=0,
            end=22,
            event="message",
            data=None,
            id=None,
            last_event_id="",
            retry=None,
            comments=("keep-alive comment",),
        ),
        SseEvent(start=22, end=47, event="message", data="", id="0", last_event_id="0", retry=3000),
        SseEvent(
            start=47,
            end=len(STREAM),
            event="message",
            data='{"jsonrpc":"2.0",\n "id":1}',
            id="1",
            last_event_id="1",
            retry=None,
        ),
    ]
    assert STREAM[events[1].start : events[1].end] == b"id: 0\nretry: 3000\ndata:\n\n"


@pytest.mark.parametrize("step", [1, 2, 3, 7, 64])
def test_any_split_gives_the_same_events(step: int) -> None:
    assert feed_all(STREAM, step) == feed_all(STREAM)


@pytest.mark.parametrize("newline", [b"\r\n", b"\r", b"\n"])
@pytest.mark.parametrize("step", [None, 1])
def test_line_endings(newline: bytes, step: int | None) -> None:
    body = newline.join([b"event: endpoint", b"data: /messages?sessionId=abc", b"", b"data: x", b"", b""])
    events = feed_all(body, step)
    assert [(e.event, e.data) for e in events] == [("endpoint", "/messages?sessionId=abc"), ("message", "x")]
    # a block is complete at the \r of a final \r\n: its \n may never come
    assert events[-1].end == len(body) - (1 if newline == b"\r\n" else 0)


def test_crlf_split_across_feeds_is_one_line_ending() -> None:
    parser = SseParser()
    assert parser.feed(b"data: a\r") == []
    # the \n completes "\r\n"; the next \r is already the blank line (dispatch does not wait for \n)
    events = parser.feed(b"\n\r")
    assert [(e.data, e.end) for e in events] == [("a", 10)]
    assert parser.feed(b"\n") == []  # the \n of that last "\r\n" is not a second blank line
    assert parser.feed(b"data: b\n\n")[0].start == 11


def test_bom_is_skipped_even_when_split() -> None:
    parser = SseParser()
    assert parser.feed(b"\xef") == []
    assert parser.feed(b"\xbb") == []
    events = parser.feed(b"\xbfdata: x\n\n")
    assert [(e.data, e.start, e.end) for e in events] == [("x", 3, 12)]


def test_field_without_colon_and_space_rules() -> None:
    events = feed_all(b"data\n\ndata:no-space\ndata:  two\nevent\n\n")
    assert [e.data for e in events] == ["", "no-space\n two"]
    assert events[1].event == "message"


def test_id_with_nul_is_ignored_and_last_event_id_persists() -> None:
    events = feed_all(b"id: 7\ndata: a\n\nid: x\x00y\ndata: b\n\ndata: c\n\n")
    assert [(e.id, e.last_event_id) for e in events] == [("7", "7"), (None, "7"), (None, "7")]


def test_retry_must_be_digits() -> None:
    events = feed_all(b"retry: 12a\n\nretry: 250\n\n")
    assert [e.retry for e in events] == [None, 250]


def test_blank_lines_between_blocks_are_not_events() -> None:
    events = feed_all(b"\n\n\ndata: a\n\n\n\n")
    assert [(e.data, e.start) for e in events] == [("a", 3)]


def test_invalid_utf8_is_replaced() -> None:
    events = feed_all(b"data: \xff\xfe\n\n")
    assert events[0].data == "\ufffd\ufffd"


def test_partial_event_at_end() -> None:
    parser = SseParser()
    events = parser.feed(b'data: done\n\nid: 9\ndata: {"jsonrpc":"2.0","id":9,"result":{}}\ndata: more')
    assert [e.data for e in events] == ["done"]
    partial = parser.finish()
    assert partial == PartialEvent(
        start=12,
        raw=b'id: 9\ndata: {"jsonrpc":"2.0","id":9,"result":{}}\ndata: more',
        data='{"jsonrpc":"2.0","id":9,"result":{}}\nmore',
        event="message",
        id="9",
    )
    assert parser.finish() is None


def test_complete_block_leaves_nothing_partial() -> None:
    parser = SseParser()
    parser.feed(b"data: a\n\n")
    assert parser.finish() is None


def test_oversized_block_is_counted_not_kept() -> None:
    body = b"data: " + b"x" * 100 + b"\n\ndata: ok\n\n"
    events = feed_all(body, 7, max_event_bytes=32)
    assert [(e.data, e.oversized, e.start, e.end) for e in events] == [
        (None, True, 0, 108),
        ("ok", False, 108, len(body)),
    ]
