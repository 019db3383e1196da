"""ASGI middleware that tees every JSON-RPC message an HTTP MCP server receives and sends.

Used by ``http_sdk_server.py`` (which wraps the real MCP Python SDK app with it) to write the
``<capture>.server.jsonl`` log that sits beside each sample capture.  It sits at the lowest point
of the SDK server that is still reachable without patching the SDK: between uvicorn and the
Starlette app, so it sees the request body bytes the server read and every response body chunk
the server handed to uvicorn.

One JSON object per line::

    {"ts": 1712345678.123456,          # time.time() when the message was seen
     "dir": "recv" | "send",
     "exchange": 3,                    # index of the HTTP request in this server process (0-based)
     "conn": "127.0.0.1:54321",        # the client's address:port of that HTTP request
     "http": "POST /mcp",              # method and path of the exchange
     "sse_id": "...",                  # only for an SSE event that carried an ``id:`` field
     "after_disconnect": true,         # only if uvicorn had already reported http.disconnect
     "message": {...}}                 # the JSON-RPC message exactly as decoded from the bytes

"send" is logged after uvicorn's ``send()`` returned, i.e. the bytes were accepted by uvicorn
(its transport buffer or the kernel); they are *not* guaranteed to have reached the wire when the
peer has gone away (a reset connection drops whatever is still buffered).
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from typing import Any


class JsonlLog:
    def __init__(self, path: str) -> None:
        self._fh = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed in close()
        self._lock = threading.Lock()

    def write(self, obj: dict[str, Any]) -> None:
        line = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
        with self._lock:
            self._fh.write(line + "\n")
            self._fh.flush()

    def close(self) -> None:
        self._fh.close()


class SSEParser:
    """Incremental text/event-stream parser (WHATWG rules, enough for MCP): yields (id, data)."""

    def __init__(self) -> None:
        self._buf = b""
        self._data: list[str] = []
        self._id: str | None = None

    def feed(self, chunk: bytes) -> list[tuple[str | None, str]]:
        out: list[tuple[str | None, str]] = []
        self._buf += chunk
        while True:
            idx = [i for i in (self._buf.find(b"\r\n"), self._buf.find(b"\n"), self._buf.find(b"\r")) if i >= 0]
            if not idx:
                break
            i = min(idx)
            sep = 2 if self._buf[i : i + 2] == b"\r\n" else 1
            if self._buf[i : i + 1] == b"\r" and i + 1 == len(self._buf):
                break  # maybe a \r\n split across chunks
            line = self._buf[:i].decode("utf-8", "replace")
            self._buf = self._buf[i + sep :]
            if line == "":
                if self._data:
                    out.append((self._id, "\n".join(self._data)))
                self._data = []
                self._id = None
                continue
            if line.startswith(":"):
                continue
            field, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if field == "data":
                self._data.append(value)
            elif field == "id":
                self._id = value
        return out


def _decode_messages(raw: bytes | str) -> list[Any]:
    try:
        obj = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return []
    if isinstance(obj, list):  # a batch: log each member
        return [m for m in obj if isinstance(m, dict)]
    return [obj] if isinstance(obj, dict) else []


class TeeMiddleware:
    def __init__(self, app: Any, log: JsonlLog) -> None:
        self.app = app
        self.log = log
        self._counter = itertools.count()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        exchange = next(self._counter)
        client = scope.get("client") or ("?", 0)
        base = {
            "exchange": exchange,
            "conn": f"{client[0]}:{client[1]}",
            "http": f"{scope.get('method')} {scope.get('path')}",
        }
        state: dict[str, Any] = {"body": b"", "disconnected": False, "ctype": "", "json": b""}
        sse = SSEParser()

        def emit(direction: str, message: Any, **extra: Any) -> None:
            rec: dict[str, Any] = {"ts": round(time.time(), 6), "dir": direction, **base, **extra}
            if state["disconnected"]:
                rec["after_disconnect"] = True
            rec["message"] = message
            self.log.write(rec)

        async def tee_receive() -> dict[str, Any]:
            msg = await receive()
            if msg["type"] == "http.request":
                state["body"] += msg.get("body", b"")
                if not msg.get("more_body", False) and state["body"]:
                    for m in _decode_messages(state["body"]):
                        emit("recv", m)
                    state["body"] = b""
            elif msg["type"] == "http.disconnect":
                state["disconnected"] = True
            return msg

        async def tee_send(msg: dict[str, Any]) -> None:
            chunk, more = msg.get("body", b""), msg.get("more_body", False)  # GZipMiddleware compresses msg in place
            await send(msg)
            if msg["type"] == "http.response.start":
                for k, v in msg.get("headers", []):
                    if k.lower() == b"content-type":
                        state["ctype"] = v.decode("latin-1").lower()
            elif msg["type"] == "http.response.body":
                if state["ctype"].startswith("text/event-stream"):
                    for ev_id, data in sse.feed(chunk):
                        for m in _decode_messages(data):
                            emit("send", m, **({"sse_id": ev_id} if ev_id else {}))
                elif state["ctype"].startswith("application/json"):
                    state["json"] += chunk
                    if not more:
                        for m in _decode_messages(state["json"]):
                            emit("send", m)
                        state["json"] = b""

        await self.app(scope, tee_receive, tee_send)
