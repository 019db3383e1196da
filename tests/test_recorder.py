"""`cancelwire.recorder.record`: real child processes, real pipes, exact transcript records.

No mocks: each test runs `record()` (in-process with pipes standing in for the host, or in a
child Python process where signals are involved) around a small real program, and the last test
runs the real MCP SDK client through the recorder against a real SDK server.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from cancelwire import recorder
from cancelwire.errors import CancelwireError, InputError
from cancelwire.model import MessageEvent, SessionStart, TransportEvent
from cancelwire.readers import InputSource, ReadOptions
from cancelwire.readers.text.transcript import READER
from cancelwire.recorder import record

REPO = Path(__file__).resolve().parent.parent
SDK_SERVER = REPO / "scripts" / "peers" / "sdk_server.py"
PY = sys.executable
WAIT = 60.0
"""Ceiling for anything a test waits on (a child, a thread, a reply): generous, so a loaded machine only
makes a test slower; every wait ends as soon as its condition holds."""
# The recorder as a host would launch it, without depending on the CLI module.
RECORD_MAIN = (
    "import sys; from pathlib import Path; from cancelwire.recorder import record; "
    "raise SystemExit(record(sys.argv[2:], Path(sys.argv[1])))"
)


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


class Host:
    """Pipes standing in for the host's side of the recorder's stdin, stdout and stderr."""

    def __init__(self, stdin_data: bytes | None) -> None:
        self.stdin_r, self.stdin_w = os.pipe()
        self.stdout_r, self.stdout_w = os.pipe()
        self.stderr_r, self.stderr_w = os.pipe()
        self.stdout = bytearray()
        self.stderr = bytearray()
        self._readers = [
            threading.Thread(target=self._drain, args=(self.stdout_r, self.stdout), daemon=True),
            threading.Thread(target=self._drain, args=(self.stderr_r, self.stderr), daemon=True),
        ]
        for thread in self._readers:
            thread.start()
        if stdin_data is not None:
            os.write(self.stdin_w, stdin_data)
            self.close_stdin()

    @staticmethod
    def _drain(fd: int, into: bytearray) -> None:
        while chunk := os.read(fd, 65536):
            into.extend(chunk)
        os.close(fd)

    def close_stdin(self) -> None:
        if self.stdin_w >= 0:
            os.close(self.stdin_w)
            self.stdin_w = -1

    def record(self, command: list[str], output: Path, vantage: str = "proxy") -> int:
        try:
            return record(
                command,
                output,
                vantage=vantage,
                stdin_fd=self.stdin_r,
                stdout_fd=self.stdout_w,
                stderr_fd=self.stderr_w,
            )
        finally:
            self.close_stdin()
            for fd in (self.stdin_r, self.stdout_w, self.stderr_w):
                os.close(fd)
            for thread in self._readers:  # the host has read everything once both pipes are at EOF
                thread.join(WAIT)
                assert not thread.is_alive(), "the recorder left the host's pipe open"


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def without_ts(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for r in records:
        assert isinstance(r["ts"], float)
    stamps = [r["ts"] for r in records]
    assert stamps == sorted(stamps), "records are written in the order they were seen"
    return [{k: v for k, v in r.items() if k != "ts"} for r in records]


def python_child(code: str) -> list[str]:
    return [PY, "-c", textwrap.dedent(code)]


ECHO_CHILD = python_child(
    """
    import sys
    data = sys.stdin.buffer.read()          # until the recorder closes our stdin
    sys.stdout.buffer.write(data); sys.stdout.flush()
    sys.stderr.buffer.write(b"log one\\nlog \\xfe two"); sys.stderr.flush()
    sys.exit(3)
    """
)


def test_bytes_pass_through_unchanged_and_every_line_is_recorded(tmp_path: Path) -> None:
    sent = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\nnot utf-8: \xff\xfe end\r\n\npartial \xc3\xa9 tail'
    out = tmp_path / "t.jsonl"
    host = Host(sent)
    status = host.record(ECHO_CHILD, out)

    assert status == 3
    assert bytes(host.stdout) == sent
    assert bytes(host.stderr) == b"log one\nlog \xfe two"
    records = load(out)
    header, body, last = records[0], records[1:-1], records[-1]
    assert isinstance(header.pop("ts"), float)
    assert header == {
        "cancelwire_transcript": 1,
        "transport": "stdio",
        "vantage": "proxy",
        "command": ECHO_CHILD,
    }
    lines: list[dict[str, Any]] = [
        {"line": '{"jsonrpc":"2.0","id":1,"method":"ping"}'},
        {"line": "not utf-8: \ufffd\ufffd end\r", "b64": "bm90IHV0Zi04OiD//iBlbmQN"},
        {"line": ""},
        {"line": "partial é tail", "eol": False},
    ]
    assert without_ts([r for r in body if r["dir"] == "c2s"]) == [{"dir": "c2s", **x} for x in lines]
    assert without_ts([r for r in body if r["dir"] == "s2c"]) == [{"dir": "s2c", **x} for x in lines]
    assert without_ts([r for r in body if r["dir"] == "stderr"]) == [
        {"dir": "stderr", "line": "log one"},
        {"dir": "stderr", "line": "log \ufffd two", "b64": "bG9nIP4gdHdv", "eol": False},
    ]
    # The child echoes only after stdin EOF, so every c2s record precedes every s2c record.
    dirs = [r["dir"] for r in body if r["dir"] != "stderr"]
    assert dirs == ["c2s"] * 4 + ["s2c"] * 4
    assert without_ts([last]) == [{"event": "process-exited", "status": 3}]


def test_request_is_recorded_before_the_reply_it_causes(tmp_path: Path) -> None:
    # A line-by-line responder: each reply can exist only after its request was relayed.
    child = python_child(
        """
        import sys
        for line in sys.stdin:
            sys.stdout.write("re:" + line); sys.stdout.flush()
        """
    )
    out = tmp_path / "t.jsonl"
    host = Host(None)
    replies = 0

    def converse() -> None:
        nonlocal replies
        for n in range(20):
            os.write(host.stdin_w, f"q{n}\n".encode())
            deadline = time.monotonic() + WAIT
            while host.stdout.count(b"\n") <= n and time.monotonic() < deadline:
                time.sleep(0.001)
            replies = host.stdout.count(b"\n")
        host.close_stdin()

    talker = threading.Thread(target=converse)
    talker.start()
    assert host.record(child, out) == 0
    talker.join(WAIT)
    assert replies == 20
    body = without_ts(load(out)[1:-1])
    assert body == [
        record for n in range(20) for record in ({"dir": "c2s", "line": f"q{n}"}, {"dir": "s2c", "line": f"re:q{n}"})
    ]


def test_long_line_written_in_many_small_chunks(tmp_path: Path) -> None:
    child = python_child(
        """
        import os
        for _ in range(128):
            os.write(1, b"x" * 32768)   # 4 MiB line in 32 KiB writes
        os.write(1, b"\\nend\\n")
        """
    )
    out = tmp_path / "t.jsonl"
    host = Host(b"")
    assert host.record(child, out) == 0
    assert bytes(host.stdout) == b"x" * (128 * 32768) + b"\nend\n"
    assert without_ts(load(out)[1:]) == [
        {"dir": "s2c", "line": "x" * (128 * 32768)},
        {"dir": "s2c", "line": "end"},
        {"event": "process-exited", "status": 0},
    ]


def test_a_partial_line_keeps_its_chunks_uncopied_until_its_end() -> None:
    """A long line in many chunks costs linear work: each chunk is held as it came (the same object,
    never joined again per chunk) and joined once at the newline. A count, not a CPU time."""
    splitter = recorder._LineSplitter("s2c")
    chunks = [bytes([65 + n % 26]) * 32768 for n in range(128)]
    for chunk in chunks:
        assert splitter.feed(chunk, 1.0) == []
    assert len(splitter._pieces) == 128 and all(a is b for a, b in zip(splitter._pieces, chunks, strict=True))
    (record,) = splitter.feed(b"\nrest", 2.0)
    assert record == {"ts": 2.0, "dir": "s2c", "line": b"".join(chunks).decode()}
    assert splitter.finish(3.0) == [{"ts": 3.0, "dir": "s2c", "line": "rest", "eol": False}]


def test_returns_when_the_server_exits_while_the_host_keeps_stdin_open(tmp_path: Path) -> None:
    out = tmp_path / "t.jsonl"
    host = Host(None)  # stdin stays open: the host never closes it
    statuses: list[int] = []
    recording = threading.Thread(target=lambda: statuses.append(host.record(python_child("print('bye')"), out)))
    recording.start()
    recording.join(WAIT)  # without the fix it waits for the host's stdin for ever
    assert not recording.is_alive() and statuses == [0]
    assert without_ts(load(out)[1:]) == [
        {"dir": "s2c", "line": "bye"},
        {"event": "process-exited", "status": 0},
    ]


def test_killed_server_gives_128_plus_signal(tmp_path: Path) -> None:
    out = tmp_path / "t.jsonl"
    child = python_child("import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    assert Host(b"").record(child, out) == 128 + 9
    assert without_ts(load(out)[-1:]) == [{"event": "process-exited", "status": 137, "signal": 9}]


def test_default_output_name_in_current_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert record([PY, "-c", "pass"], None, stdin_fd=os.open(os.devnull, os.O_RDONLY)) == 0
    (written,) = tmp_path.iterdir()
    assert re.fullmatch(rf"cancelwire-\d{{8}}T\d{{6}}Z-{os.getpid()}\.jsonl", written.name)
    assert load(written)[0]["command"] == [PY, "-c", "pass"]


def test_vantage_is_written_in_the_header(tmp_path: Path) -> None:
    out = tmp_path / "t.jsonl"
    assert Host(b"").record([PY, "-c", "pass"], out, vantage="server") == 0
    assert load(out)[0]["vantage"] == "server"


def test_missing_command_is_an_input_error_naming_it(tmp_path: Path) -> None:
    out = tmp_path / "t.jsonl"
    with pytest.raises(InputError) as caught:
        record(["no-such-mcp-server-xyz", "--flag"], out)
    assert str(caught.value) == (
        "no-such-mcp-server-xyz: server command not found\n"
        "  hint: check the command after `--` (use an absolute path, or make sure it is on PATH)"
    )
    assert not out.exists(), "no half-written transcript is left behind"
    with pytest.raises(CancelwireError, match="no server command given"):
        record([], out)


def test_unwritable_output_is_an_input_error(tmp_path: Path) -> None:
    out = tmp_path / "missing-dir" / "t.jsonl"
    with pytest.raises(InputError, match=r"missing-dir/t\.jsonl: cannot write the transcript"):
        record([PY, "-c", "pass"], out)


def recorder_process(tmp_path: Path, child: list[str]) -> tuple[subprocess.Popen[bytes], Path]:
    out = tmp_path / "t.jsonl"
    proc = subprocess.Popen(
        [PY, "-c", RECORD_MAIN, str(out), *child],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=child_env(),
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"ready\n"  # relayed: the recorder and its handlers are up
    return proc, out


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_signals_are_forwarded_to_the_server(tmp_path: Path, sig: signal.Signals) -> None:
    child = python_child(
        """
        import signal, sys, time
        def caught(signum, frame):
            print(f"caught {signum}", flush=True)
            sys.exit(5)
        for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(s, caught)
        print("ready", flush=True)
        time.sleep(20)
        """
    )
    proc, out = recorder_process(tmp_path, child)
    proc.send_signal(sig)
    stdout, _ = proc.communicate(timeout=WAIT)
    assert stdout == f"caught {int(sig)}\n".encode()
    assert proc.returncode == 5
    assert without_ts(load(out)[1:]) == [
        {"dir": "s2c", "line": "ready"},
        {"dir": "s2c", "line": f"caught {int(sig)}"},
        {"event": "process-exited", "status": 5},
    ]


def test_server_killed_by_forwarded_sigterm_gives_143(tmp_path: Path) -> None:
    child = python_child("import time; print('ready', flush=True); time.sleep(20)")
    proc, out = recorder_process(tmp_path, child)
    proc.terminate()
    proc.communicate(timeout=WAIT)
    assert proc.returncode == 143
    assert without_ts(load(out)[-1:]) == [{"event": "process-exited", "status": 143, "signal": 15}]


def test_transcript_reads_back_with_the_transcript_reader(tmp_path: Path) -> None:
    out = tmp_path / "t.jsonl"
    sent = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}\n'
    Host(sent).record(ECHO_CHILD, out)
    events = list(READER.read(InputSource(str(out), out), ReadOptions()))
    assert isinstance(events[0], SessionStart)
    messages = [(e.direction.value, e.message.id, e.message.method) for e in events if isinstance(e, MessageEvent)]
    assert messages == [("c2s", 7, "tools/call"), ("s2c", 7, "tools/call")]
    assert isinstance(events[-1], TransportEvent)


def test_real_sdk_client_through_the_recorder_to_a_real_sdk_server(tmp_path: Path) -> None:
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    out = tmp_path / "sdk.jsonl"
    params = StdioServerParameters(
        command=PY, args=["-c", RECORD_MAIN, str(out), PY, str(SDK_SERVER)], env=child_env(), cwd=str(REPO)
    )

    async def session() -> None:
        with anyio.fail_after(WAIT):
            async with Client(params, mode="legacy", cache=None) as client:
                result = await client.call_tool("add", {"a": 20, "b": 22})
                assert result.structured_content == {"result": 42}

    anyio.run(session)
    deadline = time.monotonic() + WAIT
    while b"process-exited" not in out.read_bytes() and time.monotonic() < deadline:
        time.sleep(0.05)
    records = load(out)
    assert records[0]["command"] == [PY, str(SDK_SERVER)]
    wire = [(r["dir"], json.loads(r["line"])) for r in records[1:-1] if r["dir"] != "stderr"]
    (init_req,) = [m for d, m in wire if d == "c2s" and m.get("method") == "initialize"]
    (init_res,) = [m for d, m in wire if d == "s2c" and m.get("id") == init_req["id"] and "result" in m]
    assert init_res["result"]["protocolVersion"] == init_req["params"]["protocolVersion"] == "2025-11-25"
    (call,) = [m for d, m in wire if d == "c2s" and m.get("method") == "tools/call"]
    assert call["params"]["name"] == "add" and call["params"]["arguments"] == {"a": 20, "b": 22}
    (reply,) = [m for d, m in wire if d == "s2c" and m.get("id") == call["id"]]
    assert reply["result"]["structuredContent"] == {"result": 42}
    order = [(d, m.get("id"), m.get("method")) for d, m in wire]
    assert order.index(("c2s", call["id"], "tools/call")) < order.index(("s2c", call["id"], None))
    assert records[-1]["event"] == "process-exited" and records[-1]["status"] == 0
