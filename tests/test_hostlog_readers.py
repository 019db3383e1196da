"""Host-log readers: Claude Desktop, VS Code, go-sdk LoggingTransport, plain NDJSON."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest
from cancelwire.errors import InputError
from cancelwire.model import (
    Anomaly,
    Direction,
    Event,
    MessageEvent,
    MessageKind,
    Origin,
    SessionStart,
    Transport,
    TransportEvent,
    Vantage,
)
from cancelwire.readers import (
    InputSource,
    Reader,
    ReadOptions,
    choose_reader,
)
from cancelwire.readers.text import (
    claude_desktop,
    gosdk,
    ndjson,
    pysdk,
    transcript,
    vscode,
)
from cancelwire.rebuild.reconstruct import ReconstructOptions
from cancelwire.run.pipeline import AuditOptions, audit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

FIXTURES = Path(__file__).parent / "fixtures" / "hostlogs"
HOST_READERS: tuple[Reader, ...] = (claude_desktop.READER, vscode.READER, pysdk.READER, gosdk.READER, ndjson.READER)

C2S, S2C, NONE = Direction.C2S, Direction.S2C, Direction.NONE
REQ, NOTE, RES = MessageKind.REQUEST, MessageKind.NOTIFICATION, MessageKind.RESULT

INIT = '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}'
INIT_RESULT = '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","serverInfo":{"name":"s"}}}'
CALL = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","_meta":{"progressToken":"p"}}}'
PROGRESS = '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1}}'
CANCEL = '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}'


def read(reader: Reader, tmp_path: Path, data: bytes | str, options: ReadOptions | None = None) -> list[Event]:
    path = tmp_path / "input.log"
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return list(reader.read(InputSource("in.log", path), options or ReadOptions()))


def summary(events: list[Event]) -> list[tuple[object, ...]]:
    """Each event as a small tuple: what it is, its line, its session, and what matters."""
    out: list[tuple[object, ...]] = []
    for e in events:
        if isinstance(e, SessionStart):
            out.append(("start", e.origin.line, e.session_key, e.label, e.vantage.value, e.timestamps))
        elif isinstance(e, MessageEvent):
            m = e.message
            out.append(("msg", e.origin.line, e.session_key, e.direction.value, m.kind.value, m.id, m.method))
        elif isinstance(e, Anomaly):
            out.append(("anomaly", e.origin.line, e.session_key, e.name))
    return out


def test_seq_increases(tmp_path: Path) -> None:
    events = read(claude_desktop.READER, tmp_path, (FIXTURES / "mcp.log").read_bytes())
    seqs = [e.seq for e in events]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)


# ------------------------------------------------------------------ Claude Desktop


def test_claude_both_orders_metadata_stderr_backwards_time(tmp_path: Path) -> None:
    log = (
        "2025-06-18T10:00:00.100Z [alpha] [info] Initializing server... { metadata: undefined }\n"
        f"2025-06-18T10:00:00.200Z [alpha] [info] Message from client: {INIT} {{ metadata: undefined }}\n"
        "Server alpha running on stdio\n"
        f"2025-06-18T10:00:00.150Z [info] [alpha] Message from server: {INIT_RESULT}\n"
        "2025-06-18T10:00:00.300Z [alpha] [info] Server started and connected successfully\n"
        f"2025-06-18T10:00:00.400Z [alpha] [info] Message from client: {CALL} {{ metadata: {{ a: 1 }} }}\n"
    )
    events = read(claude_desktop.READER, tmp_path, log)
    key = "in.log#alpha#1"
    assert summary(events) == [
        ("start", 2, key, "alpha", "client", True),
        ("msg", 2, key, "c2s", "request", 0, "initialize"),
        ("msg", 4, key, "s2c", "result", 0, None),
        ("msg", 6, key, "c2s", "request", 1, "tools/call"),
    ]
    times = [e.ts for e in events if isinstance(e, MessageEvent)]
    assert times == [1750240800.2, 1750240800.15, 1750240800.4]  # log time, backwards kept
    start = events[0]
    assert isinstance(start, SessionStart)
    assert (start.transport, start.input_format, start.origin) == (
        Transport.STDIO,
        "claude-desktop",
        Origin("in.log", line=2),
    )


def test_claude_restart_and_two_servers(tmp_path: Path) -> None:
    log = (
        f"2025-06-18T10:00:00.000Z [a] [info] Message from client: {INIT}\n"
        f"2025-06-18T10:00:00.001Z [b] [info] Message from client: {INIT}\n"
        f"2025-06-18T10:00:00.002Z [a] [info] Message from server: {INIT_RESULT}\n"
        "2025-06-18T10:00:01.000Z [a] [info] Initializing server...\n"
        f"2025-06-18T10:00:01.001Z [a] [info] Message from client: {INIT}\n"
        f"2025-06-18T10:00:01.002Z [b] [info] Message from server: {INIT_RESULT}\n"
        f"2025-06-18T10:00:02.000Z [info] [b] Message from client: {INIT}\n"
    )
    assert summary(read(claude_desktop.READER, tmp_path, log, ReadOptions(vantage=Vantage.PROXY))) == [
        ("start", 1, "in.log#a#1", "a", "proxy", True),
        ("msg", 1, "in.log#a#1", "c2s", "request", 0, "initialize"),
        ("start", 2, "in.log#b#1", "b", "proxy", True),
        ("msg", 2, "in.log#b#1", "c2s", "request", 0, "initialize"),
        ("msg", 3, "in.log#a#1", "s2c", "result", 0, None),
        ("start", 5, "in.log#a#2", "a", "proxy", True),
        ("msg", 5, "in.log#a#2", "c2s", "request", 0, "initialize"),
        ("msg", 6, "in.log#b#1", "s2c", "result", 0, None),
        ("start", 7, "in.log#b#2", "b", "proxy", True),  # a new initialize restarts b
        ("msg", 7, "in.log#b#2", "c2s", "request", 0, "initialize"),
    ]
    starts = [e for e in read(claude_desktop.READER, tmp_path, log) if isinstance(e, SessionStart)]
    assert [s.supersedes for s in starts] == [None, None, "in.log#a#1", "in.log#b#1"]


def test_a_restart_ends_the_session_it_replaces(tmp_path: Path) -> None:
    """The unanswered call of the first run is judged where the server restarted, not at the end."""
    log = tmp_path / "mcp-server-a.log"
    log.write_text(
        f"2025-06-18T10:00:00.000Z [a] [info] Message from client: {INIT}\n"
        f"2025-06-18T10:00:00.002Z [a] [info] Message from server: {INIT_RESULT}\n"
        f"2025-06-18T10:00:00.100Z [a] [info] Message from client: {CALL}\n"
        "2025-06-18T10:00:05.000Z [a] [info] Initializing server...\n"
        f"2025-06-18T10:00:05.001Z [a] [info] Message from client: {INIT}\n"
        f"2025-06-18T10:00:05.002Z [a] [info] Message from server: {INIT_RESULT}\n"
        f"2025-06-18T10:10:00.000Z [a] [info] Message from client: {CANCEL}\n"
    )
    result = audit([str(log)])
    never = [f for f in result.findings if f.rule == "request-never-answered"]
    assert [(f.session_key, f.request_id, [o.line for o in f.evidence]) for f in never] == [
        (f"{log}#a#1", 1, [3, 5]),  # the call, then the first message of the restarted server
    ]
    assert [s.key for s in result.sessions] == [f"{log}#a#1", f"{log}#a#2"]


def test_claude_bad_lines_are_named_and_reading_goes_on(tmp_path: Path) -> None:
    log = (
        b'2025-06-18T10:00:00.000Z [a] [info] Message from client: {"jsonrpc":"2.0","id":1,\n'
        b"junk Message from server: {}\n"
        b"2025-06-18T10:00:00.100Z [a] [info] Message from server: "
        b'{"jsonrpc":"2.0","id":1,"result":{"x":"\xff"}}\n'
        b"\x00\x01\x02\xfe binary\n"
        b"2025-06-18T10:00:00.200Z [a] [info] Message from client: " + CANCEL.encode() + b"\n"
        b'2025-06-18T10:00:00.300Z [a] [info] Message from client: {"jsonrpc":"2.0","id":2,"meth'
    )
    assert summary(read(claude_desktop.READER, tmp_path, log)) == [
        ("start", 1, "in.log#a#1", "a", "client", True),
        ("anomaly", 1, "in.log#a#1", "input.non-json-line"),
        ("anomaly", 2, None, "input.unrecognized-line"),
        ("anomaly", 3, "in.log#a#1", "input.invalid-utf8"),
        ("msg", 3, "in.log#a#1", "s2c", "result", 1, None),
        ("anomaly", 4, None, "input.invalid-utf8"),  # not protocol, but the file is damaged there
        ("msg", 5, "in.log#a#1", "c2s", "notification", None, "notifications/cancelled"),
        ("anomaly", 6, "in.log#a#1", "input.truncated-line"),
    ]


# ------------------------------------------------------------------ VS Code


def test_vscode_messages_stderr_and_restart(tmp_path: Path) -> None:
    log = (
        "2025-06-18 10:00:00.000 [info] Starting server demo\n"
        "2025-06-18 10:00:00.001 [info] Connection state: Starting\n"
        "2025-06-18 10:00:00.002 [info] Starting server from LocalProcess extension host\n"
        f"2025-06-18 10:00:00.010 [debug] [editor -> server] {INIT}\n"
        "2025-06-18 10:00:00.011 [warning] [server stderr] [editor -> server] looks like a message\n"
        f"2025-06-18 10:00:00.005 [debug] [server -> editor] {INIT_RESULT}\n"
        "  at continuation line of a stack trace\n"
        "2025-06-18 10:00:01.000 [info] Starting server demo2\n"
        f"2025-06-18 10:00:01.010 [trace] [editor -> server] {INIT}\n"
        f"2025-06-18 10:00:01.020 [trace] [editor -> server] {INIT}\n"
        "[editor -> server] {}\n"
    )
    events = read(vscode.READER, tmp_path, log)
    assert summary(events) == [
        ("start", 4, "in.log#1", "demo", "client", True),
        ("msg", 4, "in.log#1", "c2s", "request", 0, "initialize"),
        ("msg", 6, "in.log#1", "s2c", "result", 0, None),
        ("start", 9, "in.log#2", "demo2", "client", True),
        ("msg", 9, "in.log#2", "c2s", "request", 0, "initialize"),
        ("start", 10, "in.log#3", "demo2", "client", True),
        ("msg", 10, "in.log#3", "c2s", "request", 0, "initialize"),
        ("anomaly", 11, "in.log#3", "input.unrecognized-line"),
    ]
    times = [e.ts for e in events if isinstance(e, MessageEvent)]
    assert times[:2] == [1750240800.01, 1750240800.005]  # local time read as UTC; backwards kept


# ------------------------------------------------------------------ go-sdk


def test_gosdk_server_side_inferred(tmp_path: Path) -> None:
    log = f"server up\nread: {INIT}\nwrite: {INIT_RESULT}\nread error: EOF\nread: {CALL}\nwrite: {PROGRESS}\n"
    events = read(gosdk.READER, tmp_path, log)
    assert summary(events) == [
        ("start", 2, "in.log#1", None, "server", False),
        ("msg", 2, "in.log#1", "c2s", "request", 0, "initialize"),
        ("msg", 3, "in.log#1", "s2c", "result", 0, None),
        ("msg", 5, "in.log#1", "c2s", "request", 1, "tools/call"),
        ("msg", 6, "in.log#1", "s2c", "notification", None, "notifications/progress"),
    ]
    assert all(e.ts is None for e in events)


def test_gosdk_client_side_from_shapes_without_initialize(tmp_path: Path) -> None:
    log = f"write: {CALL}\nread: {PROGRESS}\nwrite: {CANCEL}\n"
    assert [e[3] for e in summary(read(gosdk.READER, tmp_path, log)) if e[0] == "msg"] == ["c2s", "s2c", "c2s"]


def test_gosdk_side_assumed_once_and_vantage_override(tmp_path: Path) -> None:
    ping = '{"jsonrpc":"2.0","id":9,"method":"ping"}'
    log = f'write: {ping}\nread: {{"jsonrpc":"2.0","id":9,"result":{{}}}}\nwrite: {ping}\n'
    assert summary(read(gosdk.READER, tmp_path, log)) == [
        ("start", 1, "in.log#1", None, "client", False),
        ("anomaly", 1, "in.log#1", "input.side-assumed"),
        ("msg", 1, "in.log#1", "c2s", "request", 9, "ping"),
        ("msg", 2, "in.log#1", "s2c", "result", 9, None),
        ("msg", 3, "in.log#1", "c2s", "request", 9, "ping"),
    ]
    forced = summary(read(gosdk.READER, tmp_path, log, ReadOptions(vantage=Vantage.SERVER)))
    assert [e[3] for e in forced if e[0] == "msg"] == ["s2c", "c2s", "s2c"]
    assert not [e for e in forced if e[0] == "anomaly"]


def test_gosdk_bad_lines(tmp_path: Path) -> None:
    log = (
        b'write: {"jsonrpc":"2.0","id":1,\nLoggingTransport: failed to marshal: x\nread: \xff\xfe\n'
        b"write: " + CANCEL.encode()
    )
    assert summary(read(gosdk.READER, tmp_path, log, ReadOptions(vantage=Vantage.CLIENT))) == [
        ("start", 1, "in.log#1", None, "client", False),  # the line claims a message
        ("anomaly", 1, "in.log#1", "input.non-json-line"),
        ("anomaly", 2, "in.log#1", "input.unrecognized-line"),
        ("anomaly", 3, "in.log#1", "input.invalid-utf8"),
        ("anomaly", 3, "in.log#1", "input.non-json-line"),
        ("msg", 4, "in.log#1", "c2s", "notification", None, "notifications/cancelled"),
    ]


# ------------------------------------------------------------------ NDJSON


def test_ndjson_bare_directions_inferred(tmp_path: Path) -> None:
    sampling = '{"jsonrpc":"2.0","id":%d,"method":"sampling/createMessage","params":{}}'
    lines = [
        INIT,
        INIT_RESULT,
        '{"jsonrpc":"2.0","method":"notifications/initialized"}',
        CALL,
        PROGRESS,
        sampling % 5,
        '{"jsonrpc":"2.0","id":5,"result":{"role":"assistant"}}',  # answers the server
        CANCEL,
        '{"jsonrpc":"2.0","id":7,"method":"ping"}',
        '{"jsonrpc":"2.0","id":7,"result":{}}',
        sampling % 1,
        '{"jsonrpc":"2.0","id":1,"result":{}}',  # both sides have id 1 open
    ]
    assert summary(read(ndjson.READER, tmp_path, "\n".join(lines) + "\n")) == [
        ("start", 1, "in.log#1", None, "unknown", False),
        ("msg", 1, "in.log#1", "c2s", "request", 0, "initialize"),
        ("msg", 2, "in.log#1", "s2c", "result", 0, None),
        ("msg", 3, "in.log#1", "c2s", "notification", None, "notifications/initialized"),
        ("msg", 4, "in.log#1", "c2s", "request", 1, "tools/call"),
        ("msg", 5, "in.log#1", "s2c", "notification", None, "notifications/progress"),
        ("msg", 6, "in.log#1", "s2c", "request", 5, "sampling/createMessage"),
        ("msg", 7, "in.log#1", "c2s", "result", 5, None),
        ("msg", 8, "in.log#1", "c2s", "notification", None, "notifications/cancelled"),
        ("anomaly", 9, "in.log#1", "input.direction-unknown"),
        ("msg", 9, "in.log#1", "none", "request", 7, "ping"),
        ("anomaly", 10, "in.log#1", "input.direction-unknown"),
        ("msg", 10, "in.log#1", "none", "result", 7, None),
        ("msg", 11, "in.log#1", "s2c", "request", 1, "sampling/createMessage"),
        ("anomaly", 12, "in.log#1", "input.direction-unknown"),
        ("msg", 12, "in.log#1", "none", "result", 1, None),
    ]


def test_ndjson_recorder_shapes(tmp_path: Path) -> None:
    dir_lines = (  # msg as an object, and as JSON text in a string
        f'{{"ts": 1.5, "dir": "client->server", "msg": {INIT}}}\n'
        f'{{"ts": 1.25, "dir": "s2c", "msg": {json.dumps(INIT_RESULT)}}}\n'
    )
    events = read(ndjson.READER, tmp_path, dir_lines)
    assert summary(events)[:3] == [
        ("start", 1, "in.log#1", None, "unknown", True),
        ("msg", 1, "in.log#1", "c2s", "request", 0, "initialize"),
        ("msg", 2, "in.log#1", "s2c", "result", 0, None),
    ]
    assert [e.ts for e in events if isinstance(e, MessageEvent)] == [1.5, 1.25]
    sendrecv = (
        f'{{"direction": "recv", "message": {INIT}}}\n'
        f'{{"direction": "send", "message": {INIT_RESULT}}}\n'
        f'{{"direction": "sideways", "message": {CANCEL}}}\n'
    )
    assert summary(read(ndjson.READER, tmp_path, sendrecv)) == [
        ("start", 1, "in.log#1", None, "server", False),
        ("msg", 1, "in.log#1", "c2s", "request", 0, "initialize"),
        ("msg", 2, "in.log#1", "s2c", "result", 0, None),
        ("anomaly", 3, "in.log#1", "input.direction-unknown"),
        ("msg", 3, "in.log#1", "none", "notification", None, "notifications/cancelled"),
    ]


def test_ndjson_send_recv_side_assumed(tmp_path: Path) -> None:
    ping = '{"jsonrpc":"2.0","id":9,"method":"ping"}'
    events = summary(read(ndjson.READER, tmp_path, f'{{"direction": "send", "message": {ping}}}\n'))
    assert events == [
        ("start", 1, "in.log#1", None, "client", False),
        ("anomaly", 1, "in.log#1", "input.side-assumed"),
        ("msg", 1, "in.log#1", "c2s", "request", 9, "ping"),
    ]


def test_ndjson_bad_lines(tmp_path: Path) -> None:
    data = b"not json\n" + INIT.encode() + b"\n\xff\xfe\x00\n[]\n" + b'{"jsonrpc":"2.0","id":0,"res'
    assert summary(read(ndjson.READER, tmp_path, data)) == [
        ("anomaly", 1, "in.log#1", "input.non-json-line"),
        ("start", 2, "in.log#1", None, "unknown", False),
        ("msg", 2, "in.log#1", "c2s", "request", 0, "initialize"),
        ("anomaly", 3, "in.log#1", "input.invalid-utf8"),
        ("anomaly", 3, "in.log#1", "input.non-json-line"),
        ("anomaly", 4, "in.log#1", "jsonrpc.batch"),
        ("anomaly", 4, "in.log#1", "jsonrpc.empty-batch"),
        ("anomaly", 5, "in.log#1", "input.truncated-line"),
    ]


# ------------------------------------------------------------------ paired fixtures and sniffing

FIXTURE_FORMATS = {
    "session.capture.jsonl": "cancelwire-transcript",
    "mcp.log": "claude-desktop",
    "mcp-server-slow-demo.log": "claude-desktop",
    "vscode-slow-demo.log": "vscode",
    "vscode-2025-slow-demo.log": "vscode",
    "pysdk-sse-server-debug.log": "python-sdk-log",
    "pysdk-basic-debug.log": "python-sdk-log",
    "pysdk-mcp-logger-debug.log": "python-sdk-log",
    "gosdk-client.log": "go-sdk",
    "gosdk-server.log": "go-sdk",
    "session.ndjson": "ndjson",
    "session-dir.jsonl": "ndjson",
    "session-sendrecv.jsonl": "ndjson",
}


@pytest.mark.parametrize("name", sorted(FIXTURE_FORMATS))
def test_sniffing_picks_the_right_reader(name: str) -> None:
    assert choose_reader(InputSource(name, FIXTURES / name), None).name == FIXTURE_FORMATS[name]


def test_sniffers_do_not_claim_each_other() -> None:
    readers: tuple[Reader, ...] = (transcript.READER, *HOST_READERS)
    for name, expected in FIXTURE_FORMATS.items():
        head = (FIXTURES / name).read_bytes()[:65536]
        claimed = [r.name for r in readers if r.sniff(head)]
        assert claimed == [expected], name


def sessions_of(name: str) -> dict[str, list[tuple[str, str, object, str | None]]]:
    source = InputSource(name, FIXTURES / name)
    reader = choose_reader(source, None)
    out: dict[str, list[tuple[str, str, object, str | None]]] = defaultdict(list)
    for e in reader.read(source, ReadOptions()):
        assert not isinstance(e, Anomaly), e
        if isinstance(e, MessageEvent):
            m = e.message
            out[e.session_key].append((e.direction.value, m.kind.value, m.id, m.method))
    return dict(out)


def test_paired_fixtures_hold_the_same_session() -> None:
    (reference,) = sessions_of("session.capture.jsonl").values()
    assert [(d, k, m) for d, k, _, m in reference] == [
        ("c2s", "request", "initialize"),
        ("s2c", "result", None),
        ("c2s", "notification", "notifications/initialized"),
        ("c2s", "request", "tools/list"),
        ("s2c", "result", None),
        ("c2s", "request", "tools/call"),
        ("s2c", "notification", "notifications/progress"),
        ("s2c", "notification", "notifications/progress"),
        ("c2s", "notification", "notifications/cancelled"),
    ]
    claude = sessions_of("mcp.log")
    assert sorted(claude) == ["mcp.log#other-demo#1", "mcp.log#slow-demo#1", "mcp.log#slow-demo#2"]
    for key, seq in claude.items():
        assert seq == reference, key
    for name in FIXTURE_FORMATS:
        if name != "mcp.log":
            assert list(sessions_of(name).values()) == [reference], name


def test_fixture_vantages() -> None:
    def start(name: str) -> SessionStart:
        source = InputSource(name, FIXTURES / name)
        return next(e for e in choose_reader(source, None).read(source, ReadOptions()) if isinstance(e, SessionStart))

    assert start("gosdk-client.log").vantage is Vantage.CLIENT
    assert start("gosdk-server.log").vantage is Vantage.SERVER
    assert start("session-sendrecv.jsonl").vantage is Vantage.CLIENT
    assert start("session.ndjson").vantage is Vantage.UNKNOWN
    assert start("vscode-slow-demo.log").label == "slow-demo"


def test_gzip_input_is_read(tmp_path: Path) -> None:
    path = tmp_path / "mcp.log.gz"
    path.write_bytes(gzip.compress((FIXTURES / "mcp.log").read_bytes()))
    source = InputSource("mcp.log.gz", path)
    reader = choose_reader(source, None)
    assert reader.name == "claude-desktop"
    assert sum(isinstance(e, MessageEvent) for e in reader.read(source, ReadOptions())) == 27


# ------------------------------------------------------------------ hostile input


def _events_or_input_error(reader: Reader, path: Path) -> Iterator[Event]:
    try:
        yield from reader.read(InputSource("fuzz", path), ReadOptions())
    except InputError:
        return


@pytest.mark.parametrize("reader", HOST_READERS, ids=lambda r: r.name)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data=st.binary(max_size=2000)
    | st.lists(
        st.sampled_from(
            [
                b"read: ",
                b"write: ",
                b"2025-06-18T10:00:00.000Z [a] [info] Message from client: ",
                b"2025-06-18 10:00:00.000 [info] [server -> editor] ",
                b'{"jsonrpc":"2.0","id":1,"method":"initialize"}',
                b'{"direction":"send","message":',
                b'{"dir":"c2s","msg":',
                b"\n",
                b"\xff",
                b"}",
                b"[",
                b"\x00",
                CANCEL.encode(),
                b" { metadata: undefined }",
                b"Initializing server...",
            ]
        ),
        max_size=40,
    ).map(b"".join)
)
def test_arbitrary_bytes_give_only_events(reader: Reader, tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "fuzz.log"
    path.write_bytes(data)
    for event in _events_or_input_error(reader, path):
        assert isinstance(event, SessionStart | MessageEvent | TransportEvent | Anomaly)


@pytest.mark.parametrize("reader", HOST_READERS, ids=lambda r: r.name)
def test_reading_goes_on_after_garbage(reader: Reader, tmp_path: Path) -> None:
    good = {
        "claude-desktop": f"2025-06-18T10:00:00.000Z [a] [info] Message from client: {CANCEL}",
        "vscode": f"2025-06-18 10:00:00.000 [info] [editor -> server] {CANCEL}",
        "go-sdk": f"write: {CANCEL}",
        "python-sdk-log": f"DEBUG:mcp.server.sse:Received JSON: b'{CANCEL}'",
        "ndjson": CANCEL,
    }[reader.name].encode()
    data = b"\x00\xff\xfe\x89PNG\r\n\x1a\n" + bytes(range(256)) + b"\n" + good + b"\n"
    events = read(reader, tmp_path, data, ReadOptions(vantage=Vantage.CLIENT))
    assert ("input.invalid-utf8", 1) in [(e.name, e.origin.line) for e in events if isinstance(e, Anomaly)]
    messages = [e for e in events if isinstance(e, MessageEvent)]
    # lines 1-4 are garbage (bytes(range(256)) holds a newline), line 5 is the good one
    assert [(m.origin.line, m.message.method) for m in messages] == [(5, "notifications/cancelled")]


def test_finished_requests_are_remembered_per_input_across_sessions(tmp_path: Path) -> None:
    """Memory for finished requests is bounded per input: a busy second server pushes out the first's."""
    log = tmp_path / "mcp.log"
    lines = [
        f"2025-06-18T10:00:00.000Z [a] [info] Message from client: {INIT}",
        f"2025-06-18T10:00:00.001Z [a] [info] Message from server: {INIT_RESULT}",
    ]
    for n in range(1, 4):
        for server in "ab":
            call = CALL.replace('"id":1', f'"id":{n}').replace('"p"', f'"{server}{n}"')
            reply = f'{{"jsonrpc":"2.0","id":{n},"result":{{}}}}'
            lines.append(f"2025-06-18T10:00:0{n}.000Z [{server}] [info] Message from client: {call}")
            lines.append(f"2025-06-18T10:00:0{n}.100Z [{server}] [info] Message from server: {reply}")
    lines.append(f"2025-06-18T10:00:09.000Z [a] [info] Message from client: {CANCEL}")  # a's id 1, long done
    log.write_text("\n".join(lines) + "\n")

    def late_cancel(max_tombstones: int) -> list[tuple[str, str | None]]:
        options = AuditOptions(reconstruct=ReconstructOptions(max_tombstones=max_tombstones))
        return [(f.rule, f.session_key) for f in audit([str(log)], options).findings]

    assert late_cancel(50_000) == [("cancel-after-completion", f"{log}#a#1")]
    # a: initialize and 3 calls, b: 3 calls; with 4 remembered, a's first two are forgotten (noted
    # once for the input, in the session whose request finished when forgetting began)
    assert sorted(late_cancel(4)) == [
        ("cancel-unknown-request", f"{log}#a#1"),
        ("finished-requests-forgotten", f"{log}#b#1"),
    ]
