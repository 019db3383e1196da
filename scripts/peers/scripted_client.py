"""HAND-WRITTEN SCRIPTED MCP CLIENT (stdio), for sample recordings only. Not an SDK.

Writes the JSON-RPC lines it is told to, in order, and waits for given replies before going on,
so every recording it drives has a fixed message sequence. Each wait is bounded.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any

Message = dict[str, Any]


class ScriptedClient:
    def __init__(self, command: list[str], *, cwd: str | None = None, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=cwd, env=env, bufsize=0
        )
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.received: list[Message | str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def send(self, message: Message) -> None:
        self.send_raw(json.dumps(message, separators=(",", ":")))

    def send_raw(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text.encode() + b"\n")
        self.proc.stdin.flush()

    def expect(self, match: Callable[[Message], bool], what: str, timeout: float = 10.0) -> Message:
        """Read lines until one matches; non-JSON lines and other messages are kept in `received`."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"scripted client: no {what} within {timeout} s")
            try:
                raw = self.lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if raw is None:
                raise EOFError(f"scripted client: server closed stdout before {what}")
            try:
                message = json.loads(raw)
            except ValueError:
                self.received.append(raw.decode("utf-8", "replace"))
                continue
            self.received.append(message)
            if isinstance(message, dict) and match(message):
                return message

    def expect_id(self, request_id: int | str, timeout: float = 10.0) -> Message:
        return self.expect(
            lambda m: m.get("id") == request_id and "method" not in m, f"reply to {request_id!r}", timeout
        )

    def expect_method(self, method: str, timeout: float = 10.0) -> Message:
        return self.expect(lambda m: m.get("method") == method, method, timeout)

    def close(self, timeout: float = 10.0) -> int:
        """Close stdin (the spec's stdio shutdown), then wait; kill if the server hangs."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.terminate()
            return self.proc.wait(5)
