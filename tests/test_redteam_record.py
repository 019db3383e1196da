"""`cancelwire record` against a hostile server and a hostile output path: a transcript FIFO nobody reads,
a line that never ends, and a last line that takes the recorder longer to write than the drain wait.
Real child processes and pipes, exact records (the helpers are those of tests/test_recorder.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from cancelwire import recorder
from cancelwire.recorder import _LineSplitter
from test_recorder import Host, load, python_child, without_ts

SCRIPT = Path(sys.executable).parent / "cancelwire"
HANG_GUARD = 300


def test_a_transcript_fifo_nobody_reads_is_refused_not_waited_on(tmp_path: Path) -> None:
    """Before, the recorder blocked in open() and the host waited on a server that never started."""
    fifo = tmp_path / "transcript.jsonl"
    os.mkfifo(fifo)
    proc = subprocess.run(
        [SCRIPT, "record", "-o", str(fifo), "--", "true"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
    )
    assert proc.returncode == 2, proc
    assert proc.stderr.splitlines() == [
        f"cancelwire: error: {fifo}: cannot write the transcript: it is a FIFO that nobody reads",
        "  hint: start its reader first; cancelwire never waits for one",
    ]


def test_a_line_that_never_ends_is_written_in_bounded_records() -> None:
    splitter = _LineSplitter("s2c", limit=8)
    assert splitter.feed(b"abcde", 1.0) == []
    assert splitter.feed(b"fghij", 2.0) == [{"ts": 2.0, "dir": "s2c", "line": "abcdefghij", "eol": False}]
    assert splitter.feed(b"kl\nmn", 3.0) == [{"ts": 3.0, "dir": "s2c", "line": "kl"}]
    assert splitter.finish(4.0) == [{"ts": 4.0, "dir": "s2c", "line": "mn", "eol": False}]


def test_a_server_that_never_ends_its_line_leaves_every_byte_in_the_transcript(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(recorder, "MAX_RECORD_LINE", 1000)
    child = python_child(
        """
        import sys
        for _ in range(50):
            sys.stdout.write("x" * 99); sys.stdout.flush()
        """
    )
    out = tmp_path / "t.jsonl"
    host = Host(b"")
    assert host.record(child, out) == 0
    records = without_ts(load(out))[1:-1]
    assert "".join(r["line"] for r in records) == "x" * 4950
    assert all(r["eol"] is False for r in records)
    # held until past the limit, then written: a record is at most the limit plus one read
    assert all(1000 <= len(r["line"]) < 1000 + recorder.READ_SIZE for r in records[:-1])
    assert bytes(host.stdout) == b"x" * 4950


def test_the_last_line_is_kept_however_long_writing_it_takes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The drain wait is for the end of the server's output; writing what was already read is waited for.
    Before, a last line still being written when the wait ran out was dropped without a word.

    Made deterministic: the server closes its stdout and exits only once the recorder has seen that end
    (the host then closes stdin), and writing the last line outlasts a drain wait of zero."""
    pumps: list[recorder._Pump] = []
    real_init = recorder._Pump.__init__

    def init(self: recorder._Pump, *args: Any, **kwargs: Any) -> None:
        real_init(self, *args, **kwargs)
        pumps.append(self)

    real_finish = _LineSplitter.finish

    def finish(self: _LineSplitter, ts: float) -> list[dict[str, Any]]:
        if self.direction == "s2c" and self._pieces:
            time.sleep(1.0)  # still writing when the drain wait (0 s here) is over
        return real_finish(self, ts)

    monkeypatch.setattr(recorder, "DRAIN_SECONDS", 0.0)
    monkeypatch.setattr(recorder._Pump, "__init__", init)
    monkeypatch.setattr(_LineSplitter, "finish", finish)
    host = Host(None)

    def close_stdin_once_stdout_ended() -> None:
        try:
            while not pumps:
                time.sleep(0.01)
            pumps[0].ended.wait(HANG_GUARD)
        finally:  # whatever happens here, the server is let go: the test fails, it never hangs
            host.close_stdin()

    threading.Thread(target=close_stdin_once_stdout_ended, daemon=True).start()
    child = python_child(
        """
        import os, sys
        sys.stdout.write("done"); sys.stdout.flush(); os.close(1)
        sys.stdin.buffer.read()
        """
    )
    out = tmp_path / "t.jsonl"
    assert host.record(child, out) == 0
    assert without_ts(load(out))[1:] == [
        {"dir": "s2c", "line": "done", "eol": False},
        {"event": "process-exited", "status": 0},
    ]
