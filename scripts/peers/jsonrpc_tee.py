"""A log of every JSON-RPC message one MCP SDK peer reads and writes, taken inside its process.

`TeeRead` and `TeeWrite` wrap the `SessionMessage` streams the SDK's transport hands its session:
a message is logged as `recv` when the session takes it from the transport (the moment the peer has
read it) and as `send` when the session hands it to the transport (before it reaches the pipe). One
JSON object per line, the shape `cancelwire audit` reads as a one-sided log (ndjson reader):

    {"ts": 1796227392.28, "dir": "recv", "message": {"jsonrpc": "2.0", "id": 2, "method": "tools/call", ...}}

`Clock` can run the log's clock off the host's by an offset and a drift, so that two logs written on
one machine stand for two machines whose clocks disagree (the merge tests recover both).
"""

from __future__ import annotations

import json
import threading
import time
from typing import IO, Any


class Clock:
    """`time.time()` shifted by OFFSET seconds and running DRIFT_PPM parts per million fast."""

    def __init__(self, offset: float = 0.0, drift_ppm: float = 0.0) -> None:
        self.offset = offset
        self.drift = drift_ppm * 1e-6
        self.start = time.time()

    def now(self) -> float:
        t = time.time()
        return t + self.offset + self.drift * (t - self.start)


class Log:
    """The log file: one flushed JSON line per record, under a lock (the SDK may write from threads)."""

    def __init__(self, stream: IO[str], clock: Clock | None = None) -> None:
        self.stream = stream
        self.clock = clock or Clock()
        self.lock = threading.Lock()

    def write(self, direction: str, message: dict[str, Any], **extra: Any) -> None:
        record = {"ts": round(self.clock.now(), 6), "dir": direction, **extra, "message": message}
        with self.lock:
            self.stream.write(json.dumps(record, separators=(",", ":")) + "\n")
            self.stream.flush()


def as_json(item: Any) -> dict[str, Any] | None:
    """The JSON-RPC object a `SessionMessage` carries (None for the exceptions a read stream passes on)."""
    message = getattr(item, "message", None)
    if message is None:
        return None
    dumped: dict[str, Any] = message.model_dump(by_alias=True, mode="json", exclude_unset=True)
    return dumped


class TeeRead:
    """A receive stream that logs each message as the session takes it."""

    def __init__(self, inner: Any, log: Log) -> None:
        self.inner = inner
        self.log = log

    async def receive(self) -> Any:
        item = await self.inner.receive()
        body = as_json(item)
        if body is not None:
            self.log.write("recv", body)
        return item

    def __aiter__(self) -> TeeRead:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except Exception as exc:  # anyio's EndOfStream / ClosedResourceError end the iteration
            if type(exc).__name__ in ("EndOfStream", "ClosedResourceError", "BrokenResourceError"):
                raise StopAsyncIteration from exc
            raise

    async def __aenter__(self) -> TeeRead:
        await self.inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self.inner.__aexit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class TeeWrite:
    """A send stream that logs each message as the session hands it to the transport."""

    def __init__(self, inner: Any, log: Log) -> None:
        self.inner = inner
        self.log = log

    async def send(self, item: Any) -> None:
        body = as_json(item)
        if body is not None:
            self.log.write("send", body)
        await self.inner.send(item)

    async def __aenter__(self) -> TeeWrite:
        await self.inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self.inner.__aexit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
