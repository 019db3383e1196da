#!/usr/bin/env python3
"""Regenerate the captures in sample_captures/redirect/ and the capture fixtures of
tests/rules/cancel-not-delivered/ (see their README.md files).

    .venv/bin/python scripts/capture_redirect_samples.py [--only NAME ...] [--out DIR]

Needs root (or capture rights on ``lo``) and tshark; only loopback traffic, recorded the way
scripts/capture_samples.py records (its helpers and those of scripts/make_capture_fixtures.py).

* ``sdk-http-mount-redirect-cancel``: the real SDK server mounted under ``Mount("/mcp", ...)``
  (``peers/http_mounted_server.py``) and the real SDK client (``peers/http_sdk_client.py
  cancel-notification``) POSTing to ``/mcp``: every request is answered ``307`` to ``/mcp/`` and sent
  again there, the cancel too.
* ``handwritten-cancel-refused-STATUS``: HAND-WRITTEN 2025-11-25 client and server (no SDK refuses a
  cancel this way on purpose): tools/call id 2 answered on an SSE stream with progress; the cancel POSTed
  on a second connection is answered 404 (a session the server no longer knows, plain text), 502 (a
  gateway that could not reach the server, HTML) or 202 (accepted: the nearest miss); the server, which
  never received a refused cancel, goes on with progress 3 and the result.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import capture_samples as cs
import make_capture_fixtures as fx

OUT = cs.ROOT / "sample_captures" / "redirect"
FIXTURES = cs.ROOT / "tests" / "rules" / "cancel-not-delivered"


def answer(status: str, media: str, body: bytes) -> bytes:
    return f"HTTP/1.1 {status}\r\ncontent-type: {media}\r\ncontent-length: {len(body)}\r\n\r\n".encode() + body


REFUSALS = {
    404: answer("404 Not Found", "text/plain", b"Session not found"),
    502: answer("502 Bad Gateway", "text/html", b"<html><body><h1>502 Bad Gateway</h1></body></html>"),
    202: b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n",
}


def s_mounted(ctx: cs.Ctx, out: Path) -> None:
    name = "sdk-http-mount-redirect-cancel"
    port = cs.pick_port(18121)
    pcap, slog = out / f"{name}.pcapng", out / f"{name}.server.jsonl"
    argv = [cs.PY, str(cs.PEERS / "http_mounted_server.py"), "--port", str(port), "--log", str(slog)]
    server = cs.Proc(f"{name}-server", [*argv, "--max-seconds", "40"], ctx.logdir)
    try:
        server.wait_ready()
        with cs.capture(pcap, f"tcp port {port}", ctx.logdir):
            client = [
                cs.PY,
                str(cs.PEERS / "http_sdk_client.py"),
                "cancel-notification",
                f"http://127.0.0.1:{port}/mcp",
            ]
            cs.run_client(f"{name}-client", client, ctx.logdir)
    finally:
        server.stop()
    cs.check_capture(pcap)
    redirects = cs.tshark_fields(pcap, "http.response.code == 307", ["frame.number"])
    if not redirects:
        raise cs.ScenarioError(f"{name}: no 307 in the capture")
    cs.log(f"  307 frames: {redirects}; {slog.name}: {cs.jsonl_lines(slog)} messages (port {port})")


def s_cancel_refused(ctx: cs.Ctx, out: Path, status: int, pcap: Path) -> None:
    """HAND-WRITTEN server and client (see the module doc); the cancel's answer is REFUSALS[status]."""
    port = cs.pick_port(18122 + status % 100)
    sid = "fixture-session-refused"
    json_head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {n}\r\nmcp-session-id: " + sid
    accepted = REFUSALS[202]

    def serve(lsock: fx.socket.socket) -> None:
        a, _ = lsock.accept()
        with a:
            _, _, body = fx.read_request(a)  # initialize
            info = {"name": "cancelwire-fixture-server", "version": "0"}
            init = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": info}
            reply = fx.jsonrpc({"id": fx.json.loads(body)["id"], "result": init})
            a.sendall(json_head.format(n=len(reply)).encode() + b"\r\n\r\n" + reply)
            fx.read_request(a)  # notifications/initialized
            a.sendall(accepted)
            _, _, body = fx.read_request(a)  # tools/call id 2
            token = fx.json.loads(body)["params"]["_meta"]["progressToken"]
            a.sendall(fx.SSE_HEAD)
            for n in (1, 2):
                fx.time.sleep(0.05)
                a.sendall(fx.sse_chunk(fx.progress(token, n, 3)))
            b, _ = lsock.accept()
            with b:
                fx.read_request(b)  # notifications/cancelled
                b.sendall(REFUSALS[status])
                fx.wait_fin(b)
            fx.time.sleep(0.1)  # it never saw a refused cancel: it finishes the call
            a.sendall(fx.sse_chunk(fx.progress(token, 3, 3)))
            a.sendall(fx.sse_chunk(fx.result(2, "wrote 3 records")) + fx.TERMINATOR)
            fx.wait_fin(a)

    with fx.hand_server(serve, port), cs.capture(pcap, f"tcp port {port}", ctx.logdir):
        a = fx.RawHttp(port)
        hdrs = fx.handshake_2025(a)
        fx.call_tool(a, 2, "slow_write", {"steps": 3}, hdrs)
        fx.expect(a, 200, "tools/call")
        a.until(lambda got: got.count(b"notifications/progress") >= 2)
        b = fx.RawHttp(port)
        cancel = {"method": "notifications/cancelled", "params": {"requestId": 2, "reason": "caller cancelled"}}
        b.send("POST", fx.jsonrpc(cancel), hdrs)
        fx.expect(b, status, "the cancel")
        b.rest()
        b.close()
        a.rest()
        a.close()
    cs.check_capture(pcap)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="write every capture here instead")
    ap.add_argument("--only", nargs="*", help="run only these")
    args = ap.parse_args()
    out = Path(args.out).resolve() if args.out else OUT
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="cancelwire-capture-") as td:
        logdir = Path(td) / "logs"
        logdir.mkdir()
        ctx = cs.Ctx(logdir=logdir, tmp=Path(td))
        fixtures = Path(args.out).resolve() if args.out else FIXTURES
        runs = {
            "sdk-http-mount-redirect-cancel": lambda: s_mounted(ctx, out),
            "handwritten-cancel-refused-404": lambda: s_cancel_refused(
                ctx, out, 404, out / "handwritten-cancel-refused-404.pcapng"
            ),
            "triggers-502": lambda: s_cancel_refused(ctx, out, 502, fixtures / "triggers-502.pcapng"),
            "clean-202": lambda: s_cancel_refused(ctx, out, 202, fixtures / "clean-202.pcapng"),
        }
        try:
            for name, run in runs.items():
                if not args.only or name in args.only:
                    cs.log(name)
                    run()
        except cs.ScenarioError as exc:
            cs.log(f"FAILED: {exc}")
            for f in logdir.iterdir():
                print(f"--- {f.name}\n{f.read_text(errors='replace')[-3000:]}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
