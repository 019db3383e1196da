"""Every reader on hostile bytes: only `Event`s come out, only `InputError` escapes, reading goes on.

Inputs are arbitrary bytes and mutations of real recordings (tests/fuzzing.py: bit flips, truncation,
duplication, splices, control bytes, deep nesting, huge numbers, lone surrogates, BOM, CR-only, gzip).
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest
from cancelwire.errors import InputError
from cancelwire.model import Direction, Event, MessageEvent
from cancelwire.readers import READERS, InputSource, Reader, ReadOptions, choose_reader
from fuzzing import READER_SAMPLES, TEXT_READERS, Mutated, fuzz_settings, mutated_samples, sample_bytes
from hypothesis import given
from hypothesis import strategies as st

BY_NAME = {reader.name: reader for reader in READERS}
FRAGMENTS = (
    b"\n",
    b"\r",
    b"\xef\xbb\xbf",
    b"\xff",
    b"\x00",
    b"\x1b[2J",
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}',
    b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}',
    b'{"cancelwire_transcript":1,"transport":"stdio","vantage":"proxy"}',
    b'{"ts":1.0,"dir":"c2s","line":',
    b'{"direction":"send","message":',
    b"2025-06-18T10:00:00.000Z [a] [info] Message from client: ",
    b"2025-06-18 10:00:00.000 [info] [server -> editor] ",
    b"read: ",
    b"write: ",
    b"2025-06-09 23:52:01,694 - mcp.server.sse - DEBUG - Received JSON: b'",
    b"chunk: b'event: message\\r\\ndata: ",
    b"Sending message via SSE: SessionMessage(message=JSONRPCResponse(jsonrpc='2.0', id=1, result={",
    b"'",
    b")",
    b'"\\udcff"',
    b"18446744073709551616",
    b"[" * 2000,
    b"}",
)
hostile_bytes = st.binary(max_size=3000) | st.lists(st.sampled_from(FRAGMENTS), max_size=40).map(b"".join)


def read_all(reader: Reader, path: Path) -> Iterator[Event]:
    """The reader's events, checked one by one; an `InputError` ends the input (allowed), nothing else may."""
    try:
        last_seq = 0
        for event in reader.read(InputSource(path.name, path), ReadOptions()):
            assert isinstance(event, Event), event
            assert event.origin.source == path.name
            assert event.seq > last_seq, (event, last_seq)
            last_seq = event.seq
            yield event
    except InputError as exc:
        assert str(exc).startswith(path.name), exc


def check_input(reader: Reader, path: Path) -> list[Event]:
    events = list(read_all(reader, path))
    with contextlib.suppress(InputError):  # sniffing the same bytes is safe too: a reader or "cannot tell"
        choose_reader(InputSource(path.name, path), None)
    return events


@pytest.mark.parametrize("name", TEXT_READERS)
@fuzz_settings(60)
@given(data=hostile_bytes)
def test_text_reader_on_arbitrary_bytes(tmp_path_factory: pytest.TempPathFactory, name: str, data: bytes) -> None:
    path = tmp_path_factory.mktemp("bytes") / "input.log"
    path.write_bytes(data)
    check_input(BY_NAME[name], path)


@pytest.mark.parametrize("name", TEXT_READERS)
@fuzz_settings(80, slow_data=True)
@given(mutated=st.data())
def test_text_reader_on_mutated_recordings(
    tmp_path_factory: pytest.TempPathFactory, name: str, mutated: st.DataObject
) -> None:
    case: Mutated = mutated.draw(mutated_samples(name), label="mutated")
    path = tmp_path_factory.mktemp("mutated") / "input.log"
    path.write_bytes(case.data)
    check_input(BY_NAME[name], path)


@pytest.mark.skipif("pcap" not in BY_NAME, reason="no pcap reader")
@fuzz_settings(12, slow_data=True)
@given(mutated=mutated_samples("pcap", max_rounds=1))
def test_pcap_reader_on_mutated_captures(tmp_path_factory: pytest.TempPathFactory, mutated: Mutated) -> None:
    """tshark runs per example (about 0.3 s), so fewer examples; the robustness script runs hundreds."""
    path = tmp_path_factory.mktemp("pcap") / "input.pcapng"
    path.write_bytes(mutated.data)
    check_input(BY_NAME["pcap"], path)


def _messages_by_line(events: list[Event]) -> dict[int, list[tuple[object, ...]]]:
    by_line: dict[int, list[tuple[object, ...]]] = {}
    for e in events:
        if isinstance(e, MessageEvent) and e.origin.line is not None:
            m = e.message
            by_line.setdefault(e.origin.line, []).append((e.direction, m.kind, m.id, m.method))
    return by_line


def _half_line_cases() -> Iterator[tuple[str, str, int]]:
    # a HAR or an Inspector export is one JSON document, and a mitmproxy flow file no lines: their cuts are
    # tested in tests/test_har_reader.py, tests/test_inspector.py and tests/test_mitmproxy.py
    for name in (n for n in TEXT_READERS if n not in ("har", "inspector", "mitmproxy")):
        for path in READER_SAMPLES[name]:
            yield name, path, 0


@pytest.mark.parametrize(("name", "sample", "_"), list(_half_line_cases()), ids=lambda v: str(v).rsplit("/", 1)[-1])
def test_reading_goes_on_after_a_half_line(tmp_path: Path, name: str, sample: str, _: int) -> None:
    """Each message line in turn cut in the middle of its JSON (its newline kept): every other line's messages still
    arrive unchanged, and the damaged line is cited by some event (nothing vanishes unsaid)."""
    reader = BY_NAME[name]
    (original,) = (data for path, data in zip(READER_SAMPLES[name], sample_bytes(name), strict=True) if path == sample)
    whole = tmp_path / "whole.log"
    whole.write_bytes(original)
    expected = _messages_by_line(list(read_all(reader, whole)))
    lines = original.split(b"\n")
    assert len(expected) >= 3, "a sample with messages on several lines"
    for number in expected:
        cut = list(lines)
        line = cut[number - 1]
        start = max(0, line.find(b"{"))  # cut inside the message, not in a host log's prefix
        cut[number - 1] = line[: start + (len(line) - start) // 2]
        path = tmp_path / f"cut-{number}.log"
        path.write_bytes(b"\n".join(cut))
        events = list(read_all(reader, path))
        got = _messages_by_line(events)
        for line_number, messages in expected.items():
            if line_number != number:  # unchanged, but a direction inferred from the lost line may be unknown
                assert len(got.get(line_number, [])) == len(messages), f"line {number} cut: line {line_number} lost"
                for was, now in zip(messages, got[line_number], strict=True):
                    assert now[1:] == was[1:] and now[0] in (was[0], Direction.NONE), f"line {number} cut"
        assert any(e.origin.line == number for e in events), f"line {number} cut: nothing says so"


def test_mutations_keep_the_outside_of_the_damaged_range() -> None:
    """The robustness script's drop count relies on it: bytes outside `damaged` are the original's."""
    import random

    from fuzzing import MUTATIONS

    data, donor = sample_bytes("cancelwire-transcript")[:2]
    for mutation, seed in itertools.product(MUTATIONS, range(20)):
        case = mutation(data, random.Random(seed), donor)
        start, end = case.damaged
        assert case.data[:start] == data[:start], case.op
        if case.op not in ("splice",) and not case.op.startswith(("gzip", "cr", "bit")):
            tail = len(case.data) - end
            assert tail == 0 or case.data[end:] == data[len(data) - tail :], case.op


RLO = "\u202e".encode()


@pytest.mark.parametrize(("name", "sample", "_"), list(_half_line_cases()), ids=lambda v: str(v).rsplit("/", 1)[-1])
def test_a_damaged_prefix_is_never_dropped_silently(tmp_path: Path, name: str, sample: str, _: int) -> None:
    """Each message line in turn with a byte of its prefix (what comes before the JSON) replaced by an RLO: the
    line is still cited by some event (a message, or an anomaly saying it holds one that was not read)."""
    reader = BY_NAME[name]
    (original,) = (data for path, data in zip(READER_SAMPLES[name], sample_bytes(name), strict=True) if path == sample)
    whole = tmp_path / "whole.log"
    whole.write_bytes(original)
    lines = original.split(b"\n")
    for number in _messages_by_line(list(read_all(reader, whole))):
        line = lines[number - 1]
        for at in range(0, line.find(b"{"), 5):
            damaged = list(lines)
            damaged[number - 1] = line[:at] + RLO + line[at + 1 :]
            path = tmp_path / f"damaged-{number}-{at}.log"
            path.write_bytes(b"\n".join(damaged))
            cited = {e.origin.line for e in read_all(reader, path)}
            assert number in cited, f"line {number}, byte {at} damaged: nothing says so"
