"""Taps on the official Python SDK's transport streams: every message a session sends, with its time, into
a cancelwire transcript (the format of `model.transcript_format`, read back by the transcript reader).

Two transports are tapped, at the streams they hand the session, not inside the session:

- the in-memory pair (`mcp.shared.memory.create_client_server_memory_streams`, which `InMemoryTransport`
  and `Client(server, mode="legacy")` use): both *send* ends, so each message is stamped when its sender
  put it on the transport, the view of a wire (vantage `wire`);
- the stdio client (`mcp.client.stdio.stdio_client`): the client's end, a message to the server when
  the session writes it and one from the server when the session takes it (vantage `client`).

Each message is written before it is passed on (as `cancelwire record` does), so the file order is causal.
The SDK hands a line it could not parse to the session as an exception; it is recorded as the line the
server wrote was: not a JSON-RPC message. A message is written as the SDK's stdio transport writes it
(`model_dump_json(by_alias=True, exclude_unset=True)`).

`install` replaces the two functions in every loaded module that holds them under their own name (the
SDK's `mcp`, `mcp.client.client`, a test module that imported them before); `uninstall` puts them back.
Nothing is recorded unless a `Recorder` is active: the plugin makes one per test.
"""

from __future__ import annotations

import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import IO, Any, Self

from ..model.transcript_format import FORMAT_VERSION, HEADER_KEY
from ..recorder import Transcript

#: (module, name) of each SDK function tapped.
TAPPED = (
    ("mcp.shared.memory", "create_client_server_memory_streams"),
    ("mcp.client.stdio", "stdio_client"),
)


class SessionFile:
    """One session's transcript file, written as the session runs."""

    def __init__(self, path: Path, *, vantage: str, label: str) -> None:
        self.path = path
        self.closed = False
        stream: IO[bytes] = path.open("wb")
        self._transcript = Transcript(stream)
        header = {HEADER_KEY: FORMAT_VERSION, "transport": "stdio", "vantage": vantage, "label": label}
        self._transcript.write([{**header, "ts": time.time()}])

    def message(self, direction: str, item: object) -> None:
        """ITEM (a `SessionMessage`, or the exception the SDK hands on for a line it could not read)."""
        message = getattr(item, "message", None)
        if message is not None and hasattr(message, "model_dump_json"):
            line = message.model_dump_json(by_alias=True, exclude_unset=True)
        else:
            line = f"(not a JSON-RPC message: the SDK passed on {type(item).__name__}: {item})"
        self._transcript.write([{"ts": time.time(), "dir": direction, "line": line}])

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._transcript.close(None)


class Recorder:
    """The recordings of one test, as files in FOLDER (`session-1.jsonl`, ...)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.recordings: list[SessionFile] = []

    def open(self, *, vantage: str, label: str) -> SessionFile:
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"session-{len(self.recordings) + 1}.jsonl"
        recording = SessionFile(path, vantage=vantage, label=label)
        self.recordings.append(recording)
        return recording

    def close(self) -> None:
        for recording in self.recordings:
            recording.close()

    @property
    def all_closed(self) -> bool:
        return all(r.closed for r in self.recordings)


_active: Recorder | None = None
_originals: dict[tuple[str, str], Callable[..., Any]] = {}


@contextmanager
def recording_into(recorder: Recorder) -> Iterator[Recorder]:
    """Sessions opened inside the block are recorded by RECORDER."""
    global _active
    previous, _active = _active, recorder
    try:
        yield recorder
    finally:
        _active = previous


class _Tap:
    """A stream of the SDK's with every item recorded in one direction; everything else is the stream's own."""

    def __init__(self, inner: Any, recording: SessionFile, direction: str) -> None:
        self._inner, self._recording, self._direction = inner, recording, direction

    async def __aenter__(self) -> Self:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        result: bool | None = await self._inner.__aexit__(*exc)
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _SendTap(_Tap):
    """A send stream: each item is recorded before it is passed on."""

    async def send(self, item: Any) -> None:
        self._recording.message(self._direction, item)
        await self._inner.send(item)


class _ReceiveTap(_Tap):
    """A receive stream: each item is recorded as the session takes it (its sender's context stays the
    stream's `last_context`)."""

    async def receive(self) -> Any:
        item = await self._inner.receive()
        self._recording.message(self._direction, item)
        return item

    def __aiter__(self) -> _ReceiveTap:
        return self

    async def __anext__(self) -> Any:
        import anyio

        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None


def _memory_streams(original: Callable[..., Any]) -> Callable[..., Any]:
    @asynccontextmanager
    async def create_client_server_memory_streams() -> AsyncIterator[Any]:
        async with original() as (client, server):
            if _active is None:
                yield client, server
                return
            recording = _active.open(vantage="wire", label="in-memory transport")
            try:
                yield (
                    (client[0], _SendTap(client[1], recording, "c2s")),
                    (server[0], _SendTap(server[1], recording, "s2c")),
                )
            finally:
                recording.close()

    return create_client_server_memory_streams


def _stdio_client(original: Callable[..., Any]) -> Callable[..., Any]:
    @asynccontextmanager
    async def stdio_client(server: Any, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        async with original(server, *args, **kwargs) as (read, write):
            if _active is None:
                yield read, write
                return
            label = " ".join([str(server.command), *map(str, server.args)])
            recording = _active.open(vantage="client", label=f"stdio: {label}")
            try:
                yield _ReceiveTap(read, recording, "s2c"), _SendTap(write, recording, "c2s")
            finally:
                recording.close()

    return stdio_client


_WRAPPERS = {"create_client_server_memory_streams": _memory_streams, "stdio_client": _stdio_client}


def install() -> bool:
    """Tap the SDK's transports wherever they are bound; False when the SDK is not installed."""
    if _originals:
        return True
    try:
        import mcp.client.stdio
        import mcp.shared.memory  # noqa: F401
    except ImportError:
        return False
    for module_name, name in TAPPED:
        original = getattr(sys.modules[module_name], name)
        _originals[(module_name, name)] = original
        _rebind(original, _WRAPPERS[name](original), name)
    return True


def uninstall() -> None:
    """Put the SDK's own functions back wherever a tap stands."""
    for (module_name, name), original in _originals.items():
        _rebind(getattr(sys.modules[module_name], name), original, name)
    _originals.clear()


def _rebind(old: object, new: object, name: str) -> None:
    """NAME → NEW in every loaded module where NAME is OLD."""
    for module in list(sys.modules.values()):
        # the module's own namespace: a module-level __getattr__ (lazy imports) is never called
        if getattr(module, "__dict__", {}).get(name) is old:
            setattr(module, name, new)
