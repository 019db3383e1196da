"""Host-log line shapes as users post them: each shape's events, directions and times, and the findings
on a cancel answered late. The shapes and where they were seen are in each reader's docstring."""

from __future__ import annotations

from pathlib import Path

import pytest
from cancelwire.model import Anomaly, Event, MessageEvent, SessionStart
from cancelwire.pipeline import audit
from cancelwire.readers import InputSource, Reader, ReadOptions, choose_reader, vscode

INIT = (
    '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},'
    '"clientInfo":{"name":"Visual Studio Code","version":"1.99.0"}}}'
)
INIT_RESULT = (
    '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-03-26","capabilities":{"tools":{}},'
    '"serverInfo":{"name":"demo","version":"1"}}}'
)
INITIALIZED = '{"jsonrpc":"2.0","method":"notifications/initialized"}'
CALL = '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"validate_username","arguments":{"u":"x"}}}'
CANCEL = '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4,"reason":"user"}}'
LATE = '{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"ok"}],"isError":false}}'
LIST = '{"jsonrpc":"2.0","id":5,"method":"tools/list"}'


def summary(events: list[Event]) -> list[tuple[object, ...]]:
    out: list[tuple[object, ...]] = []
    for e in events:
        if isinstance(e, SessionStart):
            out.append(("start", e.origin.line, e.session_key, e.vantage.value, e.timestamps))
        elif isinstance(e, MessageEvent):
            m = e.message
            out.append(("msg", e.origin.line, e.direction.value, m.kind.value, m.id, m.method, e.ts))
        elif isinstance(e, Anomaly):
            out.append(("anomaly", e.origin.line, e.name))
    return out


def read(tmp_path: Path, text: str, name: str = "channel.log") -> tuple[Reader, list[Event]]:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    source = InputSource(name, path)
    reader = choose_reader(source, None)
    return reader, list(reader.read(source, ReadOptions()))


# ------------------------------------------------------------------ VS Code, both shapes

VSCODE_SHAPES = {
    # March 2025 builds: what went to stdin and every stdout line, at info level; stderr unmarked
    "2025": ("[info] [Client Says]", "[info] [Server Says]", "[info] {}", "[info] [Client Sayz]"),
    # later builds: the request handler's own log lines
    "2026": (
        "[debug] [editor -> server]",
        "[debug] [server -> editor]",
        "[warning] [server stderr] {}",
        "[debug] [editor => server]",
    ),
}


def vscode_channel(shape: str) -> str:
    c2s, s2c, stderr, damaged = VSCODE_SHAPES[shape]
    lines = [
        ("16:38:00.100", f"{c2s} {INIT}"),
        ("16:38:00.180", f"{s2c} {INIT_RESULT}"),
        ("16:38:00.181", f"{c2s} {INITIALIZED}"),
        ("16:38:00.970", f"{c2s} {CALL}"),
        ("16:38:00.975", stderr.format("validating x")),
        ("16:38:00.976", f"{s2c} validating x"),  # a print() to stdout: not JSON on the channel
        ("16:38:05.000", f"{c2s} {CANCEL}"),
        ("16:38:07.500", f"{s2c} {LATE}"),
        ("16:38:07.600", f"{damaged} {LIST}"),  # a damaged marker: said, not dropped
    ]
    return "".join(f"2025-03-23 {time} {text}\n" for time, text in lines)


@pytest.mark.parametrize("shape", sorted(VSCODE_SHAPES))
def test_vscode_shapes_events_directions_times(tmp_path: Path, shape: str) -> None:
    reader, events = read(tmp_path, vscode_channel(shape))
    t0 = 1742747880.0  # 2025-03-23 16:38:00, local time read as UTC
    assert reader is vscode.READER
    assert summary(events) == [
        ("start", 1, "channel.log#1", "client", True),
        ("msg", 1, "c2s", "request", 0, "initialize", t0 + 0.1),
        ("msg", 2, "s2c", "result", 0, None, t0 + 0.18),
        ("msg", 3, "c2s", "notification", None, "notifications/initialized", pytest.approx(t0 + 0.181)),
        ("msg", 4, "c2s", "request", 4, "tools/call", t0 + 0.97),
        ("anomaly", 6, "input.non-json-line"),
        ("msg", 7, "c2s", "notification", None, "notifications/cancelled", t0 + 5.0),
        ("msg", 8, "s2c", "result", 4, None, t0 + 7.5),
        ("anomaly", 9, "input.unrecognized-line"),
    ]


@pytest.mark.parametrize("shape", sorted(VSCODE_SHAPES))
def test_vscode_shapes_judge_a_late_reply(tmp_path: Path, shape: str) -> None:
    path = tmp_path / "channel.log"
    path.write_text(vscode_channel(shape), encoding="utf-8")
    result = audit([str(path)])
    assert [(f.rule, f.request_id, f.certainty.value, [o.line for o in f.evidence]) for f in result.findings] == [
        ("response-after-cancel", 4, "inferred", [7, 8]),
        ("unreadable-line", None, "exact", [6, 9]),
    ]
    assert [(c.request_id, c.method, c.outcome.value) for c in result.cancellations] == [
        (4, "tools/call", "late-result-violation")
    ]
