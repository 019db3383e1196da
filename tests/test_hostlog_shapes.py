"""Host-log line shapes as users post them: each shape's events, directions and times, and the findings
on a cancel answered late. The shapes and where they were seen are in each reader's docstring."""

from __future__ import annotations

from pathlib import Path

import pytest
from cancelwire.model import Anomaly, Event, MessageEvent, SessionStart
from cancelwire.readers import InputSource, Reader, ReadOptions, choose_reader
from cancelwire.readers.text import vscode
from cancelwire.run.pipeline import audit

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


# ------------------------------------------------------------------ the Python SDK server's debug log

PY_INIT = '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}}'
PY_INIT_RESULT = '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","serverInfo":{"name":"s"}}}'
PY_CALL = '{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"q","arguments":{}}}'
PY_CANCEL = '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":11,"reason":"aborted"}}'
PY_LATE = '{"jsonrpc":"2.0","id":11,"result":{"content":[{"type":"text","text":"rows"}],"isError":false}}'


def chunk(message: str) -> str:
    return "chunk: b'event: message\\r\\ndata: " + message + "\\r\\n\\r\\n'"


def pysdk_log(prefix: str) -> str:
    """A server's debug log in a logging format; `prefix` takes the logger name and the time."""
    lines = [
        ("00,100", "mcp.server.sse", f"Received JSON: b'{PY_INIT}'"),
        ("00,101", "mcp.server.sse", "Validated client message: jsonrpc='2.0' id=0 method='initialize'"),
        ("00,102", "sse_starlette.sse", "chunk: b'event: endpoint\\r\\ndata: /messages/?session_id=ab\\r\\n\\r\\n'"),
        ("00,105", "sse_starlette.sse", chunk(PY_INIT_RESULT)),
        ("01,000", "mcp.server.sse", f"Received JSON: b'{PY_CALL}'"),
        ("03,000", "mcp.server.sse", f"Received JSON: b'{PY_CANCEL}'"),
        ("03,500", "sse_starlette.sse", chunk(PY_LATE)),
        ("04,000", "sse_starlette.sse", "ping: b': ping - 2025-03-28 10:00:04.000000+00:00\\r\\n\\r\\n'"),
        ("04,100", "mcp.server.sse", 'Received JSON: b\'{"jsonrpc":"2.0","id":12,"meth'),  # cut by the logger
        ("04,200", "mcp.server.sse", f"Recieved JSON: b'{PY_CALL}'"),  # a damaged marker: said, not dropped
    ]
    return "".join(prefix.format(time=f"2025-03-28 10:00:{t}", name=n) + text + "\n" for t, n, text in lines)


PYSDK_FORMATS = {
    "asctime": "{time} - {name} - DEBUG - ",  # the format most posted logs use
    "basic": "DEBUG:{name}:",  # logging.basicConfig(level=DEBUG): no time, order only
    "compose": "mcp-server-1   | {time} [{name}] DEBUG: ",  # docker compose in front of a custom format
}


@pytest.mark.parametrize("fmt", sorted(PYSDK_FORMATS))
def test_pysdk_debug_log_events_directions_times(tmp_path: Path, fmt: str) -> None:
    reader, events = read(tmp_path, pysdk_log(PYSDK_FORMATS[fmt]), "server.log")
    timed = fmt != "basic"
    t0 = 1743156000.0  # 2025-03-28 10:00:00, local time read as UTC

    def at(seconds: float) -> float | None:
        return t0 + seconds if timed else None

    assert reader.name == "python-sdk-log"
    assert summary(events) == [
        ("start", 1, "server.log#1", "server", timed),
        ("msg", 1, "c2s", "request", 0, "initialize", at(0.1)),
        ("msg", 4, "s2c", "result", 0, None, at(0.105)),
        ("msg", 5, "c2s", "request", 11, "tools/call", at(1.0)),
        ("msg", 6, "c2s", "notification", None, "notifications/cancelled", at(3.0)),
        ("msg", 7, "s2c", "result", 11, None, at(3.5)),
        ("anomaly", 9, "input.non-json-line"),
        ("anomaly", 10, "input.unrecognized-line"),
    ]


@pytest.mark.parametrize("fmt", sorted(PYSDK_FORMATS))
def test_pysdk_debug_log_judges_a_late_reply_exactly(tmp_path: Path, fmt: str) -> None:
    """The server's own log: it read the cancel before it wrote the result, so the verdict is exact."""
    path = tmp_path / "server.log"
    path.write_text(pysdk_log(PYSDK_FORMATS[fmt]), encoding="utf-8")
    result = audit([str(path)])
    assert [(f.rule, f.request_id, f.certainty.value, [o.line for o in f.evidence]) for f in result.findings] == [
        ("response-after-cancel", 11, "exact", [6, 7]),
        ("unreadable-line", None, "exact", [9, 10]),
    ]
    assert [(c.request_id, c.outcome.value) for c in result.cancellations] == [(11, "late-result-violation")]
    assert [(s.transport.value, s.vantage.value) for s in result.sessions] == [("http-sse", "server")]


def test_pysdk_repr_lines_when_no_chunks_are_logged(tmp_path: Path) -> None:
    """Only the `mcp` loggers at DEBUG: the writes are the SDK's reprs (2.x, and 1.x with its root=
    wrapper); an error's ErrorData becomes an object, unset (None) members are left out."""
    log = (
        f"Received JSON: b'{PY_CALL}'\n"
        "Sending message via SSE: SessionMessage(message=JSONRPCNotification(jsonrpc='2.0', "
        "method='notifications/progress', params={'progressToken': 3, 'progress': 1, 'total': None}), metadata=None)\n"
        "Sending message via SSE: SessionMessage(message=JSONRPCMessage(root=JSONRPCError(jsonrpc='2.0', id=11, "
        "error=ErrorData(code=-32800, message='Request cancelled', data=None))), metadata=None)\n"
        "Sending session message to writer: SessionMessage(message=JSONRPCRequest(jsonrpc='2.0', id=11, method='x'))\n"
        "Sending message via SSE: SessionMessage(message=JSONRPCResponse(jsonrpc='2.0', id=11, result={'a': "
        + "[" * 300
        + "]" * 300
        + "}), metadata=None)\n"
    )
    _, events = read(tmp_path, log, "server.log")
    assert summary(events) == [
        ("start", 1, "server.log#1", "server", False),
        ("msg", 1, "c2s", "request", 11, "tools/call", None),
        ("msg", 2, "s2c", "notification", None, "notifications/progress", None),
        ("msg", 3, "s2c", "error", 11, None, None),
        ("anomaly", 5, "input.non-json-line"),  # nested past Python's parser limit: named, not read
    ]
    progress, error = (e for e in events if isinstance(e, MessageEvent) and e.direction.value == "s2c")
    assert dict(progress.message.payload) == {"progressToken": 3, "progress": 1, "total": None}
    assert error.message.payload == {"code": -32800, "message": "Request cancelled"}


def test_pysdk_real_server_log_reads_the_recorded_session() -> None:
    """pysdk-sse-server-debug.log is a real SDK server's log (scripts/make_pysdk_log_fixtures.py)."""
    fixtures = Path(__file__).parent / "fixtures" / "hostlogs"
    result = audit([str(fixtures / "pysdk-sse-server-debug.log")])
    assert list(result.findings) == []
    assert [(c.request_id, c.method, c.outcome.value) for c in result.cancellations] == [
        (3, "tools/call", "outcome-unverified")
    ]


# ------------------------------------------------------------------ logs that hold no messages: named, not guessed

UNREADABLE = {
    "mcp-remote": (
        "[26682] Using transport strategy: http-first\n[26682] [Local→Remote] tools/call\n[26682] [Remote→Local] 1\n",
        "this is mcp-remote's stderr: it names each message's method or id only, with no body and no time, "
        "so calls and cancels cannot be rebuilt from it",
    ),
    "mcp-remote-debug": (
        "[2026-04-05T10:00:00.000Z][26682] [Local→Remote] tools/call\n"
        '[2026-04-05T10:00:00.001Z][26682] Local → Remote message {"method":"tools/call","id":5,'
        '"params":"{\\"name\\":\\"slow\\"}"}\n'
        '[2026-04-05T10:00:02.000Z][26682] Remote → Local message {"id":5,"result":"result-present"}\n',
        "this is mcp-remote's --debug log: it keeps each message's method and id, params cut at 500 characters, "
        "and neither result bodies nor the params of what the server sends, so calls, progress and cancels "
        "cannot be rebuilt from it",
    ),
    "claude-code": (
        '2026-10-03T04:26:18.442Z [DEBUG] MCP server "spike001": Starting connection with timeout of 30000ms\n'
        '2026-10-03T04:26:19.001Z [DEBUG] MCP server "spike001": Calling MCP tool: slow\n',
        "this is a Claude Code debug log: it records tool calls, connections and server stderr, "
        "not the JSON-RPC messages",
    ),
}


@pytest.mark.parametrize("kind", sorted(UNREADABLE))
def test_logs_without_messages_are_named(tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]) -> None:
    from cancelwire.cli.main import main

    text, what = UNREADABLE[kind]
    path = tmp_path / "posted.log"
    path.write_text(text, encoding="utf-8")
    assert main(["audit", str(path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"cancelwire: error: {path}: {what}"
    assert err[1].startswith("  hint: record the ") and "`cancelwire record -o FILE --`" in err[1]
