"""The inputs added in session 13 under attack: HAR files, host logs and `--merge`.

Each test names the class it guards; the reproducers of each class are replayed from
tests/corpus/{har,hostlog,merge}/ (scripts/make_redteam_fixtures.py writes them).
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from cancelwire.errors import InputError
from cancelwire.merge.align import Item, Travel, fit_clock
from cancelwire.model.timestamps import plausible
from cancelwire.readers import InputSource, ReadOptions
from cancelwire.readers.har.reader import READER as HAR
from cancelwire.readers.har.scan import Scanner
from cancelwire.readers.text.hostlog import MAX_SESSIONS
from cancelwire.readers.text.vscode import READER as VSCODE
from fuzzing import RAW_CONTROL, ROOT, fuzz_settings, run_cli
from hypothesis import given
from hypothesis import strategies as st

CORPUS = ROOT / "tests" / "corpus"
HOSTILE_INPUTS = {
    "har": [str(CORPUS / "har" / "escapes-everywhere.har")],
    "claude-desktop": [str(CORPUS / "hostlog" / "claude-escape-in-server-tag.log")],
    "merge": [str(CORPUS / "merge" / "clock-1e308.merge"), "--merge"],
}
#: Besides RAW_CONTROL, what must not reach a terminal or a comment raw: C1 controls, bidi and zero-width.
INVISIBLE = re.compile(r"[\x80-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


# -- every output format, on hostile recordings -------------------------------------------------


def _check_format(fmt: str, out: str) -> None:
    if fmt in ("text", "md", "github"):
        assert not RAW_CONTROL.search(out) and not INVISIBLE.search(out), fmt
    if fmt == "md":
        assert "@attacker" not in out and "](http" not in out and "http://evil" not in out
        assert not re.search(r"(?<!\\)<script", out)
    if fmt == "github":
        assert all(line.startswith("::") for line in out.splitlines()), out
    if fmt == "html":
        assert "<script>x" not in out
    if fmt == "junit":
        ET.fromstring(out.encode())  # XML 1.0 forbids most control characters: it must still parse
    if fmt in ("json", "sarif"):
        json.loads(out)


@pytest.mark.parametrize("kind", sorted(HOSTILE_INPUTS))
@pytest.mark.parametrize("fmt", ["text", "json", "md", "html", "sarif", "junit", "github"])
def test_hostile_recordings_stay_inert_in_every_format(kind: str, fmt: str) -> None:
    run = run_cli(["audit", *HOSTILE_INPUTS[kind], "--format", fmt, "--color", "never"])
    assert run.status in (0, 1), run
    assert "Traceback" not in run.stderr and not RAW_CONTROL.search(run.stderr), run.stderr
    _check_format(fmt, run.stdout)


@pytest.mark.parametrize("kind", sorted(HOSTILE_INPUTS))
def test_hostile_recordings_write_no_formula_into_the_exchange_table(kind: str, tmp_path: Path) -> None:
    table = tmp_path / "exchanges.csv"
    run = run_cli(["audit", *HOSTILE_INPUTS[kind], "--format", "json", "--exchanges", str(table)])
    assert run.status in (0, 1), run
    rows = list(csv.reader(io.StringIO(table.read_text())))
    assert len(rows) > 1
    assert not [cell for row in rows[1:] for cell in row if cell.startswith(("=", "+", "@", "\t", "\r"))]


# -- HAR ----------------------------------------------------------------------------------------


class _CountingBytes(bytes):
    """A chunk that tallies the bytes its `count` calls scan."""

    scanned = 0

    def count(self, sub, start=None, end=None):  # type: ignore[no-untyped-def, override]
        first = 0 if start is None else start
        last = len(self) if end is None else end
        _CountingBytes.scanned += max(0, last - first)
        return super().count(sub, start, end)


class _Stream:
    def __init__(self, data: bytes) -> None:
        self._data, self._at = data, 0

    def read(self, size: int = -1, /) -> bytes:
        piece = self._data[self._at : self._at + size]
        self._at += len(piece)
        return _CountingBytes(piece)


def test_har_lines_are_counted_once_however_many_entries_a_chunk_holds() -> None:
    """Each entry's line was counted from its chunk's start: 2,000 small entries in a 1 MiB chunk scanned
    about 1,000 times the chunk (a 200 MB HAR of small entries took 9 minutes)."""
    entry = b'{"startedDateTime":"2026-07-24T09:30:00Z","request":{"method":"GET","url":"u"}},\n'
    data = b'{"log":{"creator":{"name":"x"},"entries":[\n' + entry * 20_000 + b"{}]}}\n"
    _CountingBytes.scanned = 0
    pieces = list(Scanner(_Stream(data)).pieces())
    assert len(pieces) == 20_002  # the creator and every entry
    assert pieces[-2].line == 20_001
    assert _CountingBytes.scanned <= 3 * len(data)


timings = st.one_of(st.floats(), st.integers(-(2**70), 2**70), st.sampled_from([-1, None, "1", True]))
stamps = st.one_of(
    st.sampled_from(["0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "2026-07-24T09:30:00+14:00", "1969-12-31T23:00Z"]),
    st.datetimes().map(lambda d: d.isoformat()),
    st.text(max_size=30),
)


@fuzz_settings(60)
@given(
    started=st.lists(stamps, min_size=1, max_size=4),
    phases=st.dictionaries(st.sampled_from(["blocked", "dns", "connect", "send", "wait", "receive"]), timings),
    text=st.text(max_size=20),
)
def test_har_times_are_clock_readings_or_none(
    tmp_path_factory: pytest.TempPathFactory, started: list[str], phases: dict[str, object], text: str
) -> None:
    """Whatever startedDateTime and timings an entry claims (year 0001, NaN, 2^70 ms), every event's time
    is a clock reading or none, and nothing but InputError escapes."""
    call = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": text}})
    entries = [
        {
            "startedDateTime": stamp,
            "request": {"method": "POST", "url": text, "postData": {"text": call}},
            "response": {"status": 200, "content": {"text": '{"jsonrpc":"2.0","id":1,"result":{}}'}},
            "timings": phases,
        }
        for stamp in started
    ]
    path = tmp_path_factory.mktemp("har") / "times.har"
    path.write_text(json.dumps({"log": {"creator": {"name": text}, "entries": entries}}))
    try:
        events = list(HAR.read(InputSource(path.name, path), ReadOptions()))
    except InputError:
        return
    assert all(e.ts is None or plausible(e.ts) for e in events)


def test_a_python_written_har_with_nan_timings_is_read(tmp_path: Path) -> None:
    call = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    entry = (
        '{"startedDateTime":"2026-07-24T09:30:00Z","request":{"method":"POST","url":"u","postData":{"text":'
        + json.dumps(call)
        + '}},"response":{"status":200,"content":{"text":"{\\"jsonrpc\\":\\"2.0\\",\\"id\\":1,\\"result\\":{}}"}},'
        '"timings":{"send":NaN,"wait":Infinity,"receive":-Infinity}}'
    )
    path = tmp_path / "nan.har"
    path.write_text('{"log":{"entries":[' + entry + "]}}")
    events = list(HAR.read(InputSource(path.name, path), ReadOptions()))
    kinds = [type(e).__name__ for e in events]
    assert kinds == ["SessionStart", "MessageEvent", "MessageEvent"]
    assert {e.ts for e in events} == {1784885400.0}


# -- host logs ----------------------------------------------------------------------------------

log_stamps = st.one_of(
    st.sampled_from(["0000-01-01 00:00:00.000", "9999-12-31 23:59:59.999", "2026-13-45 99:99:99.000"]),
    st.datetimes().map(lambda d: d.strftime("%Y-%m-%d %H:%M:%S.%f")),
)


@fuzz_settings(60)
@given(lines=st.lists(st.tuples(log_stamps, st.sampled_from(["[editor -> server]", "[server -> editor]"])), max_size=8))
def test_host_log_times_are_clock_readings_or_none_and_each_bad_one_is_named(
    tmp_path_factory: pytest.TempPathFactory, lines: list[tuple[str, str]]
) -> None:
    message = '{"jsonrpc":"2.0","method":"notifications/initialized"}'
    path = tmp_path_factory.mktemp("log") / "vscode.log"
    path.write_text("".join(f"{stamp} [debug] {marker} {message}\n" for stamp, marker in lines))
    events = list(VSCODE.read(InputSource(path.name, path), ReadOptions()))
    assert all(e.ts is None or plausible(e.ts) for e in events)
    named = {e.origin.line for e in events if getattr(e, "name", "") == "input.implausible-time"}
    untimed = {e.origin.line for e in events if type(e).__name__ == "MessageEvent" and e.ts is None}
    assert named == untimed


# -- --merge ------------------------------------------------------------------------------------

clock_values = st.one_of(
    st.floats(), st.sampled_from([1e308, -1e308, math.inf, math.nan, 0.0, 2.0**32]), st.floats(1.7e9, 1.8e9)
)


@fuzz_settings(100)
@given(
    sightings=st.lists(
        st.tuples(
            clock_values, clock_values, st.sampled_from([Travel.A_TO_B, Travel.B_TO_A, Travel.SAME]), st.integers(0, 3)
        ),
        max_size=12,
    )
)
def test_the_clock_fit_never_raises_and_is_finite_or_none(sightings: list[tuple[float, float, Travel, int]]) -> None:
    """A peer log stamped 1e308 made statistics.pstdev raise in the fit: --merge exited 3 in every format."""
    seen = [
        (Item(n, ta, flow, ("c2s", ex)), Item(n, tb, flow, ("c2s", ex)))
        for n, (ta, tb, flow, ex) in enumerate(sightings)
    ]
    fit = fit_clock(seen)
    if fit is not None:
        assert all(math.isfinite(v) for v in (fit.offset, fit.drift, fit.t0, fit.uncertainty))


def test_one_recording_given_twice_to_merge_is_refused() -> None:
    recording = str(ROOT / "sample_captures/merge/abandoned-without-cancel.server.jsonl")
    run = run_cli(["audit", recording, recording, "--merge"])
    assert run.status == 2
    assert f"--merge was given one recording twice ({recording} and {recording})" in run.stderr


# -- many sessions in one input -----------------------------------------------------------------


def test_a_har_of_more_sessions_than_the_cap_reads_the_first_and_names_the_rest(tmp_path: Path) -> None:
    """Every Mcp-Session-Id kept its session's state to the end: memory grew with the sessions, not the
    open requests (a 23 MB host log of 200,000 sessions took 640 MB)."""
    ping = json.dumps(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    entry = (
        '{"startedDateTime":"2026-07-24T09:30:00Z","request":{"method":"POST","url":"u","headers":'
        '[{"name":"Mcp-Session-Id","value":"s%d"}],"postData":{"text":' + ping + '}},"response":{"status":202}}'
    )
    path = tmp_path / "sessions.har"
    path.write_text('{"log":{"entries":[' + ",".join(entry % n for n in range(MAX_SESSIONS + 2)) + "]}}")
    events = list(HAR.read(InputSource(path.name, path), ReadOptions()))
    starts = [e for e in events if type(e).__name__ == "SessionStart"]
    refused = [e for e in events if getattr(e, "name", "") == "input.too-many-sessions"]
    assert len(starts) == MAX_SESSIONS
    assert [e.detail for e in refused] == [
        f"entry {n}: session sessions.har#s{n} is past the first {MAX_SESSIONS} sessions of this input: "
        "its messages are not read"
        for n in (MAX_SESSIONS, MAX_SESSIONS + 1)
    ]


# -- text that other programs act on: GitHub runner commands, SARIF links and placeholders -------

#: Pieces a hostile peer puts in a method, tool name, cancel reason, error message or stderr line.
RUNNER_VOCABULARY = [
    "##[add-mask]secret",
    "##[stop-commands]tok",
    "##[error]forged",
    "##[set-output name=x]y",
    "::error::forged",
    "\xa0::warning::x",
    "[click](https://evil)",
    "{0}",
    "}{",
    "\\[",
    "#",
    "[",
    "::",
]
#: In a SARIF message.text: an escape pair, a doubled brace, or a lone special character (a failure).
_SARIF_TOKEN = re.compile(r"\\.|\{\{|\}\}|(?P<bare>[\[\]{}])")


def _runner_recording(pieces: list[str]) -> str:
    name = "".join(pieces)
    messages = [
        ("c2s", {"id": 1, "method": "tools/list"}),
        ("s2c", {"id": 1, "result": {"tools": [{"name": name, "inputSchema": {"type": "object"}}]}}),
        ("c2s", {"id": 2, "method": "tools/call", "params": {"name": name, "arguments": {}}}),
        ("c2s", {"method": "notifications/cancelled", "params": {"requestId": 2, "reason": name}}),
        ("s2c", {"id": 2, "error": {"code": -32000, "message": name}}),
        ("c2s", {"id": 3, "method": name}),
        ("c2s", {"method": "notifications/cancelled", "params": {"requestId": 3}}),
        ("s2c", {"id": 3, "result": {}}),
    ]
    lines = [
        json.dumps({"ts": 1_700_000_000 + n, "dir": d, "line": json.dumps({"jsonrpc": "2.0", **m})})
        for n, (d, m) in enumerate(messages)
    ]
    lines.append(json.dumps({"ts": 1_700_000_009, "dir": "stderr", "line": name}))
    return "\n".join(lines) + "\n"


@fuzz_settings(30)
@given(
    pieces=st.lists(st.sampled_from(RUNNER_VOCABULARY) | st.text(max_size=4), min_size=1, max_size=6),
    fmt=st.sampled_from(["text", "github", "sarif", "json", "md", "junit"]),
)
def test_recorded_runner_commands_and_sarif_syntax_stay_inert(pieces: list[str], fmt: str) -> None:
    """No line of stdout or stderr holds a raw `##[` or starts (after white space) with `::name::` other
    than our own annotations; no SARIF message holds a bare `[`, `]`, `{` or `}` from the recording."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "run.jsonl"
        path.write_text(_runner_recording(pieces), encoding="utf-8")
        run = run_cli(["audit", str(path), "--format", fmt, "--color", "never", "--verbose"])
    assert run.status in (0, 1, 2), run
    for line in (run.stdout + run.stderr).splitlines():
        assert "##[" not in line, line
        if fmt != "github":
            assert not re.match(r"\s*::[^:]*::", line), line
    if fmt == "github":
        assert all(line.startswith("::") for line in run.stdout.splitlines()), run.stdout
    if fmt == "sarif" and run.stdout:
        for result in json.loads(run.stdout)["runs"][0]["results"]:
            text = result["message"]["text"]
            recorded = text[: text.rindex(" [")]  # the ` [certainty]` is ours
            assert not [m for m in _SARIF_TOKEN.finditer(recorded) if m.group("bare")], text
