"""`cancelwire record`: a stdio proxy that an MCP host launches in place of the server.

    host ──stdin──▶ recorder ──stdin──▶ server
    host ◀─stdout── recorder ◀─stdout── server
    host ◀─stderr── recorder ◀─stderr── server

Bytes pass through unchanged in both directions: each pipe has its own thread doing unbuffered
`os.read`s, and every chunk is relayed as soon as it is read. Lines are split only for the
transcript (the JSON Lines format described in `transcript_format`).

Ordering guarantee: one lock serialises the transcript, and each chunk's records are written
(and flushed to the OS) *before* the chunk is relayed. So a message is always in the transcript
before its receiver can see it, and anything the receiver sends in reply comes later in the file:
the file order is causal, which is what an audit of "what happened after the cancel" relies on.
Writing a few records costs microseconds, far below anything a host could measure.

`ts` is `time.time()` when the read that completed the line returned. A line that is not valid
UTF-8 is stored decoded with replacement characters plus `"b64"` holding the exact bytes; a
final line that ended without a newline (EOF) is still written, with `"eol": false`.

Nothing here prints: stdout is the protocol. Errors are raised as `CancelwireError`/`InputError`.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import IO, Any

from .errors import CancelwireError, InputError, OutputError
from .model.transcript_format import FORMAT_VERSION, HEADER_KEY
from .support.outputs import open_nonblocking

__all__ = ["FORWARDED_SIGNALS", "Transcript", "default_output_path", "record"]

FORWARDED_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
READ_SIZE = 1 << 16
STDIN_POLL_SECONDS = 0.2
"""How often the host-stdin thread checks whether the server is gone (a wake-up, not a delay)."""
DRAIN_SECONDS = 5.0
"""After the server exits, how long to wait for its stdout/stderr EOF (a grandchild may hold them)."""
MAX_RECORD_LINE = 64 << 20
"""Bytes of one line held before they are written as a record of their own (`"eol": false`): a server
that never ends its line cannot make the recorder hold it all (readers name lines this long anyway)."""
_WRITABLE = "choose a writable path with -o FILE"


def default_output_path(now: float | None = None, pid: int | None = None) -> Path:
    """`cancelwire-<UTC timestamp>-<pid>.jsonl` in the current directory."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() if now is None else now))
    return Path(f"cancelwire-{stamp}-{os.getpid() if pid is None else pid}.jsonl")


class Transcript:
    """The transcript file: one lock, one flushed JSON object per line, closed exactly once."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self._lock = threading.Lock()
        self._closed = False
        self.write_error: OSError | None = None

    def write(self, records: list[dict[str, Any]]) -> None:
        if not records:
            return
        data = b"".join(json.dumps(r, ensure_ascii=False).encode("utf-8") + b"\n" for r in records)
        with self._lock:
            if self._closed or self.write_error is not None:
                return
            try:
                self._stream.write(data)
                self._stream.flush()
            except OSError as exc:  # disk full etc.: keep relaying, report at the end
                self.write_error = exc

    def close(self, final: dict[str, Any] | None) -> None:
        """FINAL (if any) as the last record, then the file closed."""
        if final is not None:
            self.write([final])
        with self._lock:
            self._closed = True
            with contextlib.suppress(OSError):
                self._stream.close()


class _LineSplitter:
    """Cuts one direction's byte stream into transcript records; holds at most one partial line.

    The partial line is kept as a list of pieces, so a long line arriving in many chunks costs
    linear time (no re-concatenation per chunk).
    """

    def __init__(self, direction: str, limit: int | None = None) -> None:
        self.direction = direction
        self.limit = MAX_RECORD_LINE if limit is None else limit
        self._pieces: list[bytes] = []
        self._held = 0

    def feed(self, chunk: bytes, ts: float) -> list[dict[str, Any]]:
        if b"\n" not in chunk:
            if chunk:
                self._pieces.append(chunk)
                self._held += len(chunk)
            return self.finish(ts) if self._held >= self.limit else []
        first, *middle, rest = chunk.split(b"\n")
        head = b"".join([*self._pieces, first]) if self._pieces else first
        self._pieces = [rest] if rest else []
        self._held = len(rest)
        return [self._record(line, ts, eol=True) for line in (head, *middle)]

    def finish(self, ts: float) -> list[dict[str, Any]]:
        """What is held of an unfinished line, as a record without its end (at EOF, or past the limit)."""
        if not self._pieces:
            return []
        rest = b"".join(self._pieces)
        self._pieces = []
        self._held = 0
        return [self._record(rest, ts, eol=False)]

    def _record(self, raw: bytes, ts: float, *, eol: bool) -> dict[str, Any]:
        record: dict[str, Any] = {"ts": ts, "dir": self.direction}
        try:
            record["line"] = raw.decode("utf-8")
        except UnicodeDecodeError:
            record["line"] = raw.decode("utf-8", "replace")
            record["b64"] = base64.b64encode(raw).decode("ascii")
        if not eol:
            record["eol"] = False
        return record


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class _Pump(threading.Thread):
    """Relays one pipe: read a chunk, record its complete lines, relay the chunk unchanged."""

    def __init__(
        self,
        name: str,
        src: int,
        dst: int | None,
        splitter: _LineSplitter,
        transcript: Transcript,
        *,
        stop: threading.Event | None = None,
        on_eof: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(name=f"cancelwire-{name}", daemon=True)
        self.src = src
        self.dst = dst
        self.splitter = splitter
        self.transcript = transcript
        self.stop = stop
        self.on_eof = on_eof
        self.relay_error: OSError | None = None
        self.ended = threading.Event()
        """Set at EOF: what is left to do is writing what was read, so it is waited for."""

    def run(self) -> None:
        try:
            while True:
                if self.stop is not None and not self._wait_readable():
                    break
                try:
                    chunk = os.read(self.src, READ_SIZE)
                except OSError:
                    chunk = b""
                if not chunk:
                    break
                # Record first, then relay: the file order stays causal (see module docstring).
                self.transcript.write(self.splitter.feed(chunk, time.time()))
                self._relay(chunk)
        finally:
            self.ended.set()
            self.transcript.write(self.splitter.finish(time.time()))
            if self.on_eof is not None:
                self.on_eof()

    def _wait_readable(self) -> bool:
        """Block until `src` is readable; False once `stop` is set (the server is gone)."""
        stop = self.stop
        while stop is not None and not stop.is_set():
            try:
                ready, _, _ = select.select([self.src], [], [], STDIN_POLL_SECONDS)
            except (OSError, ValueError):
                return True  # not selectable: let os.read decide
            if ready:
                return True
        return False

    def _relay(self, chunk: bytes) -> None:
        if self.dst is None or self.relay_error is not None:
            return
        try:
            _write_all(self.dst, chunk)
        except OSError as exc:
            # The reader went away (EPIPE). Keep draining and recording so the other side never blocks.
            self.relay_error = exc


def _spawn(command: list[str]) -> subprocess.Popen[bytes]:
    try:
        return subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0
        )
    except FileNotFoundError as exc:
        raise InputError(
            command[0],
            "server command not found",
            "check the command after `--` (use an absolute path, or make sure it is on PATH)",
        ) from exc
    except PermissionError as exc:
        raise InputError(
            command[0], "server command is not executable", "check its permissions (chmod +x) or the path"
        ) from exc
    except OSError as exc:
        raise InputError(command[0], f"cannot start the server command: {exc.strerror or exc}") from exc


def _open_output(path: Path) -> IO[bytes]:
    """The transcript, opened without waiting: a FIFO nobody reads is an error, never a host left hanging."""
    try:
        fd = open_nonblocking(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, "the transcript")
    except OutputError as exc:
        raise InputError(str(path), exc.message.removeprefix(f"{path}: "), exc.hint or _WRITABLE) from None
    return os.fdopen(fd, "wb")


def _exit_status(returncode: int) -> tuple[int, int | None]:
    """Shell convention: a child killed by signal S gives 128+S."""
    if returncode < 0:
        return 128 - returncode, -returncode
    return returncode, None


def record(
    command: list[str],
    output: Path | None,
    *,
    vantage: str = "proxy",
    stdin_fd: int = 0,
    stdout_fd: int = 1,
    stderr_fd: int = 2,
) -> int:
    """Run `command` as a stdio MCP server, relay its pipes, and write a transcript to `output`.

    Returns the server's exit status (128+signal when it was killed). `output=None` writes
    `default_output_path()`. SIGTERM, SIGINT and SIGHUP received while the server runs are
    forwarded to it (only when called from the main thread, where Python allows handlers).
    When the host closes our stdin, the server's stdin is closed. The `*_fd` arguments are the
    host side of the pipes (for tests); they are never closed.
    """
    if not command:
        raise CancelwireError("no server command given", "usage: cancelwire record [-o FILE] -- COMMAND...")
    path = output if output is not None else default_output_path()
    child, stream = _start(command, path)
    transcript = Transcript(stream)
    header = {HEADER_KEY: FORMAT_VERSION, "transport": "stdio", "vantage": vantage, "command": list(command)}
    transcript.write([{**header, "ts": time.time()}])
    returncode = _relay(child, transcript, stdin_fd=stdin_fd, stdout_fd=stdout_fd, stderr_fd=stderr_fd)
    status, killed_by = _exit_status(returncode)
    final: dict[str, Any] = {"ts": time.time(), "event": "process-exited", "status": status}
    if killed_by is not None:
        final["signal"] = killed_by
    transcript.close(final)
    for pipe in (child.stdout, child.stderr, child.stdin):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()
    if (error := transcript.write_error) is not None:
        raise InputError(
            str(path),
            f"the transcript is incomplete: writing failed ({error.strerror or error})",
            "check free disk space and permissions, then record again",
        )
    return status


def _start(command: list[str], path: Path) -> tuple[subprocess.Popen[bytes], IO[bytes]]:
    """The transcript file opened and the server started; a server that cannot start leaves no new file."""
    created = not path.exists()
    stream = _open_output(path)
    try:
        child = _spawn(command)
    except CancelwireError:
        stream.close()
        if created:
            with contextlib.suppress(OSError):
                path.unlink()
        raise
    return child, stream


def _relay(
    child: subprocess.Popen[bytes], transcript: Transcript, *, stdin_fd: int, stdout_fd: int, stderr_fd: int
) -> int:
    """Relay the three pipes until the server exits (signals forwarded to it meanwhile); its return code."""
    if child.stdin is None or child.stdout is None or child.stderr is None:  # pragma: no cover - PIPE given
        raise CancelwireError("internal error: the server's pipes were not created")
    child_stdin = child.stdin

    def close_child_stdin() -> None:
        with contextlib.suppress(OSError):
            child_stdin.close()

    server_gone = threading.Event()
    pumps = [
        _Pump("stdout", child.stdout.fileno(), stdout_fd, _LineSplitter("s2c"), transcript),
        _Pump("stderr", child.stderr.fileno(), stderr_fd, _LineSplitter("stderr"), transcript),
    ]
    stdin_pump = _Pump(
        "stdin",
        stdin_fd,
        child_stdin.fileno(),
        _LineSplitter("c2s"),
        transcript,
        stop=server_gone,
        on_eof=close_child_stdin,
    )
    with _signals_forwarded_to(child):
        for pump in (*pumps, stdin_pump):
            pump.start()
        returncode = child.wait()
        deadline = time.monotonic() + DRAIN_SECONDS
        for pump in pumps:
            # the wait is for EOF (a grandchild may hold the pipe); a pump past EOF only writes what it read
            if pump.ended.wait(max(0.0, deadline - time.monotonic())):
                pump.join()
        server_gone.set()
        stdin_pump.join(STDIN_POLL_SECONDS * 5)
    return returncode


@contextlib.contextmanager
def _signals_forwarded_to(child: subprocess.Popen[bytes]) -> Iterator[None]:
    """SIGTERM, SIGINT and SIGHUP go to the server while it runs (Python allows handlers only in the main thread)."""

    def forward(signum: int, _frame: FrameType | None) -> None:
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signum)

    previous: dict[signal.Signals, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for sig in FORWARDED_SIGNALS:
            previous[sig] = signal.signal(sig, forward)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
