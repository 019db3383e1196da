"""Hostile and damaged input: every problem is named with file and line, and reading goes on."""

from __future__ import annotations

import json
from pathlib import Path

from cancelwire.errors import InputError
from cancelwire.model import Anomaly, MessageEvent, SessionStart, TransportEvent
from cancelwire.readers import InputSource, ReadOptions
from cancelwire.readers.text.transcript import READER
from cancelwire.run.pipeline import audit
from hypothesis import given, settings
from hypothesis import strategies as st

HEADER = json.dumps({"cancelwire_transcript": 1, "transport": "stdio", "vantage": "proxy"})


def _rec(ts: float, direction: str, msg: dict[str, object] | str) -> bytes:
    line = msg if isinstance(msg, str) else json.dumps(msg)
    return (json.dumps({"ts": ts, "dir": direction, "line": line}) + "\n").encode()


CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "w"}}
CANCEL = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
LATE = {"jsonrpc": "2.0", "id": 1, "result": {}}


def _audit_bytes(tmp_path: Path, data: bytes) -> tuple[list[tuple[str, int | None]], list[str]]:
    path = tmp_path / "damaged.jsonl"
    path.write_bytes(data)
    result = audit([str(path)])
    assert all(i.error is None for i in result.inputs)
    findings = [(f.rule, f.evidence[0].line) for f in result.findings]
    return findings, [c.outcome.value for c in result.cancellations]


def test_damage_in_the_middle_is_named_by_line_and_the_rest_is_judged(tmp_path: Path) -> None:
    data = (
        HEADER.encode()
        + b"\n"
        + _rec(1.0, "c2s", CALL)  # line 2
        + b'{"ts": 1.1, "dir": "s2c", "line": "{\\"jsonrpc\n'  # line 3: half a line
        + b"\x00\x01\xfe\xff garbage \x9c\n"  # line 4: binary garbage
        + _rec(1.2, "c2s", CANCEL)  # line 5
        + b'{"ts": 1.3, "dir": "s2c", "line": "caf\xe9"}\n'  # line 6: invalid UTF-8
        + _rec(9.0, "s2c", LATE)  # line 7: a late result, still judged
    )
    findings, outcomes = _audit_bytes(tmp_path, data)
    assert sorted(findings) == [
        ("invalid-utf8", 6),
        ("non-json-on-stdio", 6),
        ("response-after-cancel", 5),
        ("unreadable-line", 3),
    ]
    assert outcomes == ["late-result-violation"]


def test_cut_last_line_is_truncated_input(tmp_path: Path) -> None:
    data = HEADER.encode() + b"\n" + _rec(1.0, "c2s", CALL) + _rec(1.1, "c2s", CANCEL)[:30]
    findings, _ = _audit_bytes(tmp_path, data)
    assert ("truncated-input", 3) in findings


def test_a_50_mb_line_is_skipped_without_holding_it_and_later_lines_count(tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    with path.open("wb") as fh:
        fh.write(HEADER.encode() + b"\n" + _rec(1.0, "c2s", CALL))
        fh.write(b'{"ts": 1.05, "dir": "s2c", "line": "' + b"x" * (50 << 20) + b'"}\n')  # line 3
        fh.write(_rec(1.1, "c2s", CANCEL) + _rec(5.0, "s2c", LATE))
    result = audit([str(path)])
    assert sorted((f.rule, f.evidence[0].line) for f in result.findings) == [
        ("line-too-long", 3),
        ("response-after-cancel", 4),
    ]


def test_newer_transcript_version_is_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "future.jsonl"
    path.write_text(json.dumps({"cancelwire_transcript": 99}) + "\n")
    result = audit([str(path)])
    assert result.inputs[0].error == (f"{path}:1: transcript format version 99 is newer than this cancelwire reads (1)")


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=2000))
def test_transcript_reader_survives_arbitrary_bytes(tmp_path_factory: object, data: bytes) -> None:
    folder = tmp_path_factory.mktemp("fuzz")  # type: ignore[attr-defined]
    path = folder / "x.jsonl"
    path.write_bytes(data)
    try:
        for event in READER.read(InputSource(str(path), path), ReadOptions()):
            assert isinstance(event, SessionStart | MessageEvent | TransportEvent | Anomaly)
    except InputError:
        pass


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                CALL,
                CANCEL,
                LATE,
                {"jsonrpc": "2.0", "id": None, "result": 1},
                [CALL, LATE],
                {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1}},
                "not json",
                17,
            ]
        ),
        min_size=1,
        max_size=30,
    )
)
def test_whole_pipeline_survives_any_message_sequence(tmp_path_factory: object, messages: list[object]) -> None:
    folder = tmp_path_factory.mktemp("seq")  # type: ignore[attr-defined]
    path = folder / "x.jsonl"
    path.write_bytes(b"".join(_rec(float(i), "c2s" if i % 2 else "s2c", m) for i, m in enumerate(messages)))  # type: ignore[arg-type]
    result = audit([str(path)])
    assert result.inputs[0].error is None
