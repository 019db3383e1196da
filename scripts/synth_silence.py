#!/usr/bin/env python3
"""Captures where the reader stops reading a direction, where an SSE stream keeps alive for hours, and where
many keep-alive connections sit idle: written frame by frame with `synth_capture` (IPv4/TCP in a pcapng,
HTTP/2 frames from the `h2` package at both ends, HTTP/1.1 as text). Every peer here is HAND-WRITTEN: no
SDK loses segments from a capture, floods, or writes a bad frame on purpose. Deterministic (fixed times).

    .venv/bin/python scripts/synth_silence.py fixtures [--out DIR]
    .venv/bin/python scripts/synth_silence.py idle OUT CONNECTIONS [--again]
    .venv/bin/python scripts/synth_silence.py resets OUT CONNECTIONS

`fixtures` writes the tests' captures into DIR (tests/fixtures/silence/):

* `h1-gap.pcapng`: Streamable HTTP over HTTP/1.1, 2025-11-25. Connection A: initialize (answered), then
  tools/call id 2, whose JSON reply is sent in three segments of which the capture lost the second; the
  client's ACK covers it (a TCP gap: A's server→client direction is not read after it). Then tools/call id 3
  on A; the client cancels id 3 on connection B (202) and the server's result for id 3 comes on A, recorded
  but after the gap. On B, tools/call id 4 is never answered (the reverse case: a direction still read); the
  capture ends 30 s later with both connections open. `h1-gap-none.pcapng` is the same with nothing lost.
* `h1-long-line.pcapng`: the same, but the reply to id 2 has a header line of 40 KiB (over h11's bound on a
  response head: the response is not valid HTTP/1.1 and A's server→client direction is not read after it).
* `legacy-gap.pcapng`: HTTP+SSE (2024-11-05), every reply on the GET stream of connection G, the POSTs (each
  202) on P: tools/call id 2, whose reply on G loses a segment the client ACKs; then tools/call id 3, cancelled,
  answered on G after the gap. `legacy-gap-none.pcapng`: nothing lost.
* `h2-flood.pcapng`, `h2-bad-frame.pcapng`: the same over HTTP/2 (h2c, prior knowledge) on streams 1, 3, 5:
  after id 2 is sent the server writes 12 000 PING frames at once (a flood), or a DATA frame on stream 0 (a
  malformed frame); id 2's reply and id 3's come after it. `h2-flood-none.pcapng`: no flood.
* `h2-keepalive.pcapng.gz` (gzip: 11 000 packets): HTTP/2, tools/call id 2 answered `text/event-stream`; the
  server sends an SSE comment `:\\n\\n` (3 bytes) once a second for 3 hours, then the result. Within what a
  real server does. `h2-keepalive-burst.pcapng.gz`: the same frames 100 us apart (a flood).

* `stdio-long-line.jsonl.gz`: a stdio transcript: tools/call id 2, cancelled; the server's reply to it is a
  line of 17 MiB (over the 16 MiB line bound: skipped); then tools/call id 3, never answered.
  `stdio-long-line-none.jsonl.gz`: the same reply at 100 bytes of text.

`idle` writes CONNECTIONS HTTP/1.1 keep-alive connections, each one tools/call answered as JSON and then left
open (no FIN), for the idle-connection memory measurement; with `--again`, each then carries a second call
(answered) and closes.

`resets` writes CONNECTIONS HTTP/1.1 connections, one every 50 ms, each a tools/call answered
`200 text/event-stream` with half an SSE event, then the client's FIN and RST (as the benchmark's clients
cancel), for the reset-connection memory measurement.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from h2.settings import SettingCodes
from hyperframe.frame import PingFrame
from synth_capture import H2Pair, Pcapng, Tcp, call, post

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "fixtures" / "silence"
SESSION = "5e1e0ce0d2a4c7e8f60a1b2c3d4e5f60"
VERSION = "2025-11-25"
INIT = {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "synth", "version": "1"}}
READY = {"protocolVersion": VERSION, "capabilities": {"tools": {}}, "serverInfo": {"name": "synth", "version": "1"}}
CANCEL = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3, "reason": "slow"}}


def result(req_id: int, text: str = "done") -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": req_id, "result": {"content": [{"type": "text", "text": text}], "isError": False}}


def lose(tcp: Tcp, from_client: bool, data: bytes) -> None:
    """Bytes the sender sent that the capture never held: its sequence numbers move on, no packet."""
    tcp.seq[from_client] = (tcp.seq[from_client] + len(data)) & 0xFFFFFFFF


def ack(tcp: Tcp, from_client: bool) -> None:
    tcp._segment(from_client, b"", 0x10)


# -- HTTP/1.1 --------------------------------------------------------------------------------------------


def json_answer(message: dict[str, object], extra: str = "") -> bytes:
    body = json.dumps(message).encode()
    head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: {SESSION}\r\n{extra}"
    return f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body


def h1_unread(out: Path, how: str) -> None:
    """`how`: "gap" (a segment of id 2's reply lost, ACKed), "long-line" (a 40 KiB header line), "none"."""
    cap = Pcapng(out)
    a, b = Tcp(cap, 40000), Tcp(cap, 40001)
    post(a, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT}, None)
    a.send(False, json_answer({"jsonrpc": "2.0", "id": 1, "result": READY}))
    post(a, json.loads(call(2)), SESSION)
    cap.ts += 1.0
    extra = f"X-Padding: {'p' * (40 << 10)}\r\n" if how == "long-line" else ""
    reply = json_answer(result(2), extra)
    if how == "gap":
        third = len(reply) // 3
        a.send(False, reply[:third])
        lose(a, False, reply[third : 2 * third])
        a.send(False, reply[2 * third :])
        ack(a, True)  # the client has every byte: the middle one is missing from the capture
    elif how == "long-line":  # in pieces, as a server writes it: h11 bounds the head it holds incomplete
        for at in range(0, len(reply), 4096):
            a.send(False, reply[at : at + 4096])
    else:
        a.send(False, reply)
    cap.ts += 1.0
    post(a, json.loads(call(3)), SESSION)
    cap.ts += 2.0
    post(b, CANCEL, SESSION)
    b.send(False, b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
    cap.ts += 0.5
    a.send(False, json_answer(result(3, "finished anyway")))
    cap.ts += 1.0
    post(b, json.loads(call(4)), SESSION)
    cap.ts += 30.0
    ack(b, False)  # the capture ends 30 s later, both connections still open
    cap.close()


def chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def sse_event(message: dict[str, object]) -> bytes:
    return chunk(b"event: message\ndata: " + json.dumps(message).encode() + b"\n\n")


def legacy_unread(out: Path, gap: bool) -> None:
    """HTTP+SSE (2024-11-05): every reply comes on the GET stream of connection G; the POSTs go on P."""
    cap = Pcapng(out)
    g, p = Tcp(cap, 40000), Tcp(cap, 40001)
    g.send(True, b"GET /sse HTTP/1.1\r\nHost: 127.0.0.2:8000\r\nAccept: text/event-stream\r\n\r\n")
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    g.send(False, head + chunk(b"event: endpoint\ndata: /messages?sessionId=abc\n\n"))

    def message(body: dict[str, object]) -> None:
        data = json.dumps(body).encode()
        head = "POST /messages?sessionId=abc HTTP/1.1\r\nHost: 127.0.0.2:8000\r\nContent-Type: application/json\r\n"
        p.send(True, f"{head}Content-Length: {len(data)}\r\n\r\n".encode() + data)
        p.send(False, b"HTTP/1.1 202 Accepted\r\nContent-Length: 8\r\n\r\nAccepted")

    init = {**INIT, "protocolVersion": "2024-11-05"}
    message({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
    g.send(False, sse_event({"jsonrpc": "2.0", "id": 1, "result": {**READY, "protocolVersion": "2024-11-05"}}))
    message({"jsonrpc": "2.0", "method": "notifications/initialized"})
    message(json.loads(call(2)))
    cap.ts += 1.0
    reply = sse_event(result(2))
    if gap:
        third = len(reply) // 3
        g.send(False, reply[:third])
        lose(g, False, reply[third : 2 * third])
        g.send(False, reply[2 * third :])
        ack(g, True)
    else:
        g.send(False, reply)
    cap.ts += 1.0
    message(json.loads(call(3)))
    cap.ts += 2.0
    message(CANCEL)
    cap.ts += 0.5
    g.send(False, sse_event(result(3, "finished anyway")))
    cap.ts += 30.0
    ack(g, True)
    cap.close()


# -- HTTP/2 ----------------------------------------------------------------------------------------------


def h2_unread(out: Path, how: str) -> None:
    """`how`: "flood" (12 000 PINGs from the server), "bad-frame" (DATA on stream 0), "none"."""
    cap = Pcapng(out)
    a = H2Pair(cap, 40000)
    b = Tcp(cap, 40001)
    a.post(1, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT}, None)
    a.answer(1, {"jsonrpc": "2.0", "id": 1, "result": READY}, SESSION)
    a.post(3, json.loads(call(2)), SESSION)
    cap.ts += 1.0
    if how == "flood":
        a.tcp.send(False, b"".join(PingFrame(0, opaque_data=n.to_bytes(8, "big")).serialize() for n in range(12_000)))
    elif how == "bad-frame":
        a.tcp.send(False, len(b"stray").to_bytes(3, "big") + b"\0\0\0\0\0\0" + b"stray")  # DATA on stream 0
    a.answer(3, result(2), SESSION)
    cap.ts += 1.0
    a.post(5, json.loads(call(3)), SESSION)
    cap.ts += 2.0
    post(b, CANCEL, SESSION)
    b.send(False, b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
    cap.ts += 0.5
    a.answer(5, result(3, "finished anyway"), SESSION)
    cap.ts += 1.0
    post(b, json.loads(call(4)), SESSION)
    cap.ts += 30.0
    ack(b, False)  # the capture ends 30 s later, both connections still open
    cap.close()


def h2_keepalive(out: Path, seconds: int, spacing: float) -> None:
    """An SSE reply that keeps alive with a 3-byte comment every `spacing` seconds, `seconds` of them."""
    cap = Pcapng(out)
    a = H2Pair(cap, 40000)
    a.client.update_settings({SettingCodes.INITIAL_WINDOW_SIZE: 2**31 - 1})
    a.client.increment_flow_control_window(2**31 - 1 - 65_535)
    a.flush()
    a.post(1, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT}, None)
    a.answer(1, {"jsonrpc": "2.0", "id": 1, "result": READY}, SESSION)
    a.post(3, json.loads(call(2)), SESSION)
    headers = [(":status", "200"), ("content-type", "text/event-stream"), ("mcp-session-id", SESSION)]
    a.server.send_headers(3, headers)
    a.flush()
    for _ in range(seconds):
        cap.ts += spacing
        a.server.send_data(3, b":\n\n")
        a.flush()
    event = b"event: message\ndata: " + json.dumps(result(2)).encode() + b"\n\n"
    a.server.send_data(3, event, end_stream=True)
    a.flush()
    a.close()
    cap.close()


def stdio_long_line(out: Path, size: int) -> None:
    """A stdio transcript: tools/call id 2, cancelled 1 s later; the server's reply to it (`size` bytes of
    text) 0.5 s after the cancel; then tools/call id 3, never answered; the transcript ends 30 s later."""
    t = 1_796_227_626.0
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT}
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2, "reason": "slow"}}
    records: list[tuple[float, str, dict[str, object]]] = [
        (t, "c2s", init),
        (t + 0.1, "s2c", {"jsonrpc": "2.0", "id": 1, "result": READY}),
        (t + 0.2, "c2s", {"jsonrpc": "2.0", "method": "notifications/initialized"}),
        (t + 1.0, "c2s", json.loads(call(2))),
        (t + 2.0, "c2s", cancel),
        (t + 2.5, "s2c", result(2, "x" * size)),
        (t + 3.0, "c2s", json.loads(call(3))),
    ]
    head = {"cancelwire_transcript": 1, "transport": "stdio", "vantage": "proxy", "command": ["synth"], "ts": t}
    with gzip.GzipFile(out, "wb", mtime=0) as packed:
        packed.write(json.dumps(head).encode() + b"\n")
        for ts, way, message in records:
            line = {"ts": ts, "dir": way, "line": json.dumps(message, separators=(",", ":"))}
            packed.write(json.dumps(line).encode() + b"\n")
        packed.write(json.dumps({"ts": t + 33.0, "event": "process-exited", "status": 0}).encode() + b"\n")


def gzipped(path: Path) -> None:
    with path.open("rb") as raw, gzip.GzipFile(path.with_suffix(path.suffix + ".gz"), "wb", mtime=0) as packed:
        shutil.copyfileobj(raw, packed)
    path.unlink()


# -- idle connections ------------------------------------------------------------------------------------


def idle(out: Path, connections: int, again: bool) -> None:
    cap = Pcapng(out)
    tcps = []
    for n in range(connections):
        tcp = Tcp(cap, 10_000 + n % 50_000)
        cap.ts += 0.001
        post(tcp, json.loads(call(n + 1)), None)
        tcp.send(False, json_answer(result(n + 1)))
        ack(tcp, True)
        tcps.append(tcp)
    for n, tcp in enumerate(tcps if again else []):
        cap.ts += 0.001
        post(tcp, json.loads(call(connections + n + 1)), None)
        tcp.send(False, json_answer(result(connections + n + 1)))
        tcp.fin(True)
        tcp.fin(False)
    cap.close()


def resets(out: Path, connections: int) -> None:
    cap = Pcapng(out)
    for n in range(connections):
        tcp = Tcp(cap, 10_000 + n % 50_000)
        post(tcp, json.loads(call(n + 1)), None)
        tcp.send(False, b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n")
        tcp.send(False, b'event: message\ndata: {"jsonrpc": "2.0", "method": "notifications/progress", ')
        tcp.fin(True)
        tcp._segment(True, b"", 0x04)
        cap.ts += 0.05
    cap.close()


def fixtures(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for how in ("gap", "none", "long-line"):
        h1_unread(out / f"h1-{how}.pcapng", how)
    (out / "h1-none.pcapng").rename(out / "h1-gap-none.pcapng")
    legacy_unread(out / "legacy-gap.pcapng", True)
    legacy_unread(out / "legacy-gap-none.pcapng", False)
    for how in ("flood", "bad-frame", "none"):
        h2_unread(out / f"h2-{how}.pcapng", how)
    (out / "h2-none.pcapng").rename(out / "h2-flood-none.pcapng")
    h2_keepalive(out / "h2-keepalive.pcapng", 3 * 3600, 1.0)
    h2_keepalive(out / "h2-keepalive-burst.pcapng", 3 * 3600, 0.0)
    gzipped(out / "h2-keepalive.pcapng")
    gzipped(out / "h2-keepalive-burst.pcapng")
    stdio_long_line(out / "stdio-long-line.jsonl.gz", 17 << 20)
    stdio_long_line(out / "stdio-long-line-none.jsonl.gz", 100)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="kind", required=True)
    fix = sub.add_parser("fixtures")
    fix.add_argument("--out", type=Path, default=OUT)
    many = sub.add_parser("idle")
    many.add_argument("out", type=Path)
    many.add_argument("connections", type=int)
    many.add_argument("--again", action="store_true", help="then a second call on each, and both FINs")
    reset = sub.add_parser("resets")
    reset.add_argument("out", type=Path)
    reset.add_argument("connections", type=int)
    args = ap.parse_args()
    if args.kind == "fixtures":
        fixtures(args.out)
    elif args.kind == "resets":
        resets(args.out, args.connections)
    else:
        idle(args.out, args.connections, args.again)


if __name__ == "__main__":
    main()
