"""HAND-WRITTEN, DELIBERATELY MISBEHAVING Streamable HTTP "MCP server" (plain blocking sockets).

Not the SDK, and not a model of any real server: it exists only so the sample captures contain a
server that violates 2026-07-28 CAN-4/CAN-12 (after the client closed the request's stream it MUST
NOT emit anything further for the request).  The SDK server never does this (see sdk-http-cancel-*),
so a real peer could not produce this capture.

Behaviour, for ONE connection and ONE POST:
  * reads the request head and Content-Length body, answers ``200`` with ``text/event-stream`` and
    ``Transfer-Encoding: chunked`` (what uvicorn sends too);
  * writes SSE ``message`` events every 150 ms: progress 1..4, then the tools/call result, then a
    progress 5 *after* the result, then the chunked terminator - whatever the client does.  Before
    each write it peeks the socket (MSG_PEEK|MSG_DONTWAIT) to learn whether the client has sent a
    FIN or a RST, and never lets that stop it.

Log (``--log``): the same JSONL shape as the SDK server's tee, plus ``peer`` (``open`` / ``fin`` /
``rst``: what the peek saw just before the write) and ``send_error`` when ``sendall`` raised, i.e.
the bytes were NOT put on the wire.

Usage: http_bad_server.py --port P --log FILE [--max-seconds S]; prints READY once listening.
"""

from __future__ import annotations

import argparse
import json
import select
import socket
import sys
import time
from typing import Any


def note(text: str) -> None:
    print(f"[bad-server {time.time():.6f}] {text}", file=sys.stderr, flush=True)


def peer_state(conn: socket.socket) -> str:
    # select() first: with a socket timeout set, Python's recv() would wait for readability.
    readable, _, _ = select.select([conn], [], [], 0)
    if not readable:
        return "open"
    try:
        data = conn.recv(1, socket.MSG_PEEK)
    except (ConnectionResetError, BrokenPipeError):
        return "rst"
    return "fin" if data == b"" else "open"


def sse_chunk(message: dict[str, Any]) -> bytes:
    event = b"event: message\r\ndata: " + json.dumps(message, separators=(",", ":")).encode() + b"\r\n\r\n"
    return f"{len(event):x}\r\n".encode() + event + b"\r\n"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--max-seconds", type=float, default=20.0)
    args = ap.parse_args()

    log = open(args.log, "w", encoding="utf-8")  # noqa: SIM115
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("127.0.0.1", args.port))
    lsock.listen(1)
    lsock.settimeout(args.max_seconds)
    print("READY", flush=True)

    conn, addr = lsock.accept()
    conn.settimeout(args.max_seconds)
    base = {"exchange": 0, "conn": f"{addr[0]}:{addr[1]}", "http": "POST /mcp"}

    def write_log(direction: str, message: Any, **extra: Any) -> None:
        rec = {"ts": round(time.time(), 6), "dir": direction, **base, **extra, "message": message}
        log.write(json.dumps(rec, separators=(",", ":")) + "\n")
        log.flush()

    raw = b""
    while b"\r\n\r\n" not in raw:
        raw += conn.recv(65536)
    head, _, body = raw.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v.strip())
    while len(body) < length:
        body += conn.recv(65536)
    request = json.loads(body)
    write_log("recv", request)
    req_id = request["id"]
    token = request.get("params", {}).get("_meta", {}).get("progressToken", req_id)

    conn.sendall(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
        b"transfer-encoding: chunked\r\nserver: cancelwire-bad-server\r\n\r\n"
    )

    def progress(n: int) -> dict[str, Any]:
        return {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": token, "progress": n, "total": 4, "message": f"step {n}"},
        }

    result = {
        "jsonrpc": "2.0",
        "id": req_id,
        "result": {"content": [{"type": "text", "text": "done anyway"}], "isError": False},
    }
    plan: list[tuple[dict[str, Any] | None, bytes]] = [(progress(n), sse_chunk(progress(n))) for n in (1, 2, 3, 4)]
    plan += [(result, sse_chunk(result)), (progress(5), sse_chunk(progress(5))), (None, b"0\r\n\r\n")]
    for message, data in plan:
        time.sleep(0.15)
        peer = peer_state(conn)
        try:
            conn.sendall(data)
            err = None
        except OSError as exc:  # EPIPE / ECONNRESET: nothing reached the wire
            err = f"{type(exc).__name__}: {exc.strerror}"
        note(
            f"wrote {'chunk terminator' if message is None else message.get('method', 'result')}"
            f" (peer {peer}){' -> ' + err if err else ''}"
        )
        if message is not None:
            write_log("send", message, peer=peer, **({"send_error": err} if err else {}))
    time.sleep(0.2)
    conn.close()
    lsock.close()
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
