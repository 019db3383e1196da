"""Text inputs as they come: CR line endings, a UTF-8 BOM, transcript headers of the wrong shape,
JSON nested past any recursion limit, and lines far larger than memory should hold."""

from __future__ import annotations

import io
import json
import tracemalloc
from pathlib import Path

from cancelwire.model import Anomaly, SessionStart, Transport, Vantage
from cancelwire.readers import ReadOptions, choose_reader
from cancelwire.readers.lines import RawLine, iter_lines
from cancelwire.readers.source import InputSource
from cancelwire.readers.text import claude_desktop
from cancelwire.readers.text.transcript import READER
from cancelwire.run.pipeline import audit

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_captures" / "stdio" / "handwritten-client-cancels-unknown-id.jsonl"
CLAUDE = ROOT / "tests" / "fixtures" / "hostlogs" / "mcp.log"


def _findings(path: Path) -> list[tuple[str, int | None]]:
    return sorted((f.rule, f.evidence[0].line) for f in audit([str(path)]).findings)


class _Trickle:
    """A stream that hands over a few bytes per read, as a slow pipe does."""

    def __init__(self, data: bytes, step: int) -> None:
        self.data = data
        self.step = step

    def read(self, size: int = -1, /) -> bytes:
        out, self.data = self.data[: self.step], self.data[self.step :]
        return out


def test_cr_only_line_endings_read_like_lf(tmp_path: Path) -> None:
    """Classic Mac OS line endings gave zero sessions (the whole file was one line)."""
    path = tmp_path / "cr.jsonl"
    path.write_bytes(SAMPLE.read_bytes().replace(b"\n", b"\r"))
    assert _findings(path) == _findings(SAMPLE) != []
    assert len(audit([str(path)]).sessions) == 1


def test_line_endings_are_decided_by_the_first_line() -> None:
    assert list(iter_lines(io.BytesIO(b"a\rb\r\nc\rd"))) == [
        RawLine(1, b"a"),
        RawLine(2, b"b"),
        RawLine(3, b"c"),
        RawLine(4, b"d", unterminated=True),
    ]
    # an LF file keeps a lone CR inside a line (a progress bar on stderr), and drops the CR of CRLF
    assert list(iter_lines(io.BytesIO(b"a\nb\rc\r\n"))) == [RawLine(1, b"a"), RawLine(2, b"b\rc")]
    # a pipe handing over one byte at a time: the first line ending is still found, and a CRLF
    # split between two reads is one line ending
    assert list(iter_lines(_Trickle(b"ab\rcd\r\ne\r", 1))) == [RawLine(1, b"ab"), RawLine(2, b"cd"), RawLine(3, b"e")]


def test_a_utf8_bom_is_dropped_for_sniffing_and_reading(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + SAMPLE.read_bytes())
    source = InputSource(path.name, path)
    assert choose_reader(source, None).name == "cancelwire-transcript"  # was: unknown format
    (start,) = [e for e in READER.read(source, ReadOptions()) if isinstance(e, SessionStart)]
    assert (start.origin.line, start.vantage) == (1, Vantage.PROXY)  # the header was read (it was dropped)
    assert _findings(path) == _findings(SAMPLE)
    log = tmp_path / "mcp.log"
    log.write_bytes(b"\xef\xbb\xbf" + CLAUDE.read_bytes())
    assert choose_reader(InputSource(log.name, log), None).name == "claude-desktop"


def _header_events(tmp_path: Path, header: dict[str, object]) -> list[tuple[str, object, object]]:
    path = tmp_path / "h.jsonl"
    path.write_text(json.dumps(header) + "\n" + SAMPLE.read_text().split("\n", 1)[1])
    out: list[tuple[str, object, object]] = []
    for e in READER.read(InputSource(path.name, path), ReadOptions()):
        if isinstance(e, SessionStart):
            out.append(("start", e.transport, e.vantage))
        elif isinstance(e, Anomaly):
            out.append((e.name, e.origin.line, e.detail))
    return out


def test_unknown_header_values_are_named_not_silently_defaulted(tmp_path: Path) -> None:
    header = {"cancelwire_transcript": 1, "transport": "carrier-pigeon", "vantage": "moon"}
    assert _header_events(tmp_path, header) == [
        ("start", Transport.STDIO, Vantage.UNKNOWN),
        (
            "input.bad-record",
            1,
            "header: unknown vantage 'moon' (one of client, server, proxy, wire, unknown); read as unknown",
        ),
        (
            "input.bad-record",
            1,
            "header: unknown transport 'carrier-pigeon' (one of stdio, streamable-http, http-sse); read as stdio",
        ),
    ]


def test_header_values_of_the_wrong_type_are_named_not_a_traceback(tmp_path: Path) -> None:
    header = {"cancelwire_transcript": 1, "command": ["python", 1, {"x": [2]}], "label": 7, "vantage": ["proxy"]}
    assert _header_events(tmp_path, header) == [
        ("start", Transport.STDIO, Vantage.UNKNOWN),
        (
            "input.bad-record",
            1,
            "header: unknown vantage ['proxy'] (one of client, server, proxy, wire, unknown); read as unknown",
        ),
        ("input.bad-record", 1, "header: command must be a list of strings; not used"),
        ("input.bad-record", 1, "header: label must be a string; not used"),
    ]
    path = tmp_path / "v.jsonl"
    path.write_text(json.dumps({"cancelwire_transcript": "1"}) + "\n")
    assert audit([str(path)]).inputs[0].error == f"{path}:1: transcript format version '1' is not an integer"


def test_deeply_nested_json_in_a_claude_desktop_line_is_not_json_not_a_crash(tmp_path: Path) -> None:
    """100k nested `[` made the standard library's json recurse until RecursionError."""
    prefix = "2025-06-18T10:00:00.456Z [srv] [info] Message from client: "
    lines = [prefix + "[" * 100_000 + " { metadata: {} }", prefix + "[" * 100_000 + "]" * 100_000 + " tail"]
    path = tmp_path / "mcp.log"
    path.write_text("\n".join(lines) + "\n")
    events = list(claude_desktop.READER.read(InputSource(path.name, path), ReadOptions()))
    assert [(e.name, e.origin.line) for e in events if isinstance(e, Anomaly)] == [
        ("input.non-json-line", 1),
        ("input.non-json-line", 2),  # complete, but deeper than the JSON parser's limit
    ]


def test_metadata_is_cut_after_the_json_whatever_the_strings_hold() -> None:
    strip = claude_desktop._strip_metadata
    assert strip('{"a":"} { metadata: \\" ]"} { metadata: {x: 1} }') == '{"a":"} { metadata: \\" ]"}'
    assert strip('[1,{"b":[2]}] trailing words') == '[1,{"b":[2]}]'
    assert strip('{"cut": "half') == '{"cut": "half'


def test_one_huge_line_is_never_held(tmp_path: Path) -> None:
    """The splitter keeps at most about two chunks whatever the line's length (a 5 GB line is the
    same as this 64 MiB one with a 1 MiB limit: bytes past the limit are counted and dropped)."""
    path = tmp_path / "one-line.jsonl"
    with path.open("wb") as out:
        for _ in range(64):
            out.write(b"x" * (1 << 20))
        out.write(b"\nok\n")
    tracemalloc.start()
    try:
        with path.open("rb") as stream:
            lines = list(iter_lines(stream, max_line_bytes=1 << 20))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert lines == [RawLine(1, b"", too_long=64 << 20), RawLine(2, b"ok")]
    assert peak < 8 << 20
