"""Record the MCP Python SDK server's own debug log of a real session with a cancel in it.

    .venv/bin/python scripts/make_pysdk_log_fixtures.py            record anew, then render the variants
    .venv/bin/python scripts/make_pysdk_log_fixtures.py --render   only re-render from the committed log

Recording: this script starts itself with `--serve PORT`: a real SDK `MCPServer` (`slow-demo`, one
tool `slow_count` that reports progress every 0.2 s) over the legacy HTTP+SSE transport on loopback,
with Python logging at DEBUG in the format most posted logs use
(`%(asctime)s - %(name)s - %(levelname)s - %(message)s`) on stderr, which becomes
`pysdk-sse-server-debug.log` unchanged. At that level the SDK logs each POSTed message
(`mcp.server.sse ... Received JSON: b'...'`) and sse-starlette each event it writes
(`sse_starlette.sse ... chunk: b'event: message\\r\\ndata: ...'`). The real SDK client
(`mcp.client.sse.sse_client` + `ClientSession`) calls the tool with a progress callback and, after
the second progress notification, cancels the call's anyio scope, so the SDK sends
`notifications/cancelled`.

Rendering: `pysdk-basic-debug.log` is the same log as `logging.basicConfig(level=DEBUG)` writes it
(`LEVEL:name:message`, no time: order only); `pysdk-mcp-logger-debug.log` keeps only the `mcp`
loggers' lines (what `logging.getLogger("mcp").setLevel(DEBUG)` alone gives: the server's writes
appear only as `Sending message via SSE: SessionMessage(...)` reprs, no sse-starlette chunks).
"""

import argparse
import logging
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "hostlogs"
LOG = OUT / "pysdk-sse-server-debug.log"
FORMAT = "%(asctime)s - %(name)s - %(levelname)s - %(message)s"
_LINE = re.compile(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) - (\S+) - ([A-Z]+) - (.*)")


def serve(port: int) -> None:
    import anyio

    logging.basicConfig(level=logging.DEBUG, format=FORMAT, stream=sys.stderr)  # before the SDK's own setup
    from mcp.server.mcpserver import Context, MCPServer

    server = MCPServer("slow-demo")

    @server.tool()
    async def slow_count(steps: int, ctx: Context) -> str:
        """Counts slowly, reporting progress at each step."""
        for i in range(steps):
            await ctx.report_progress(i + 1, steps, f"step {i + 1}")
            await anyio.sleep(0.2)
        return "done"

    server.run("sse", host="127.0.0.1", port=port)


async def client(url: str) -> None:
    from make_hostlog_fixtures import cancel_after_second_progress
    from mcp.client.session import ClientSession
    from mcp.client.sse import sse_client

    async with sse_client(url) as (read, write), ClientSession(read, write) as session:
        await cancel_after_second_progress(session)


def record() -> None:
    import anyio

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with LOG.open("wb") as log:
        server = subprocess.Popen([sys.executable, __file__, "--serve", str(port)], stderr=log)
        try:
            deadline = time.monotonic() + 60  # a loaded machine is only slower
            while time.monotonic() < deadline and server.poll() is None:
                with socket.socket() as conn:
                    if conn.connect_ex(("127.0.0.1", port)) == 0:
                        break
                time.sleep(0.2)
            anyio.run(client, f"http://127.0.0.1:{port}/sse")
        finally:
            server.terminate()
            server.wait(timeout=30)


def render() -> None:
    basic, mcp_only = [], []
    for line in LOG.read_text(encoding="utf-8").splitlines():
        match = _LINE.fullmatch(line)
        if match is None:
            basic.append(line)  # uvicorn's own lines and continuations, as they were
            continue
        _, name, level, message = match.groups()
        basic.append(f"{level}:{name}:{message}")
        if name.startswith("mcp."):
            mcp_only.append(line)
    (OUT / "pysdk-basic-debug.log").write_text("\n".join(basic) + "\n", encoding="utf-8")
    (OUT / "pysdk-mcp-logger-debug.log").write_text("\n".join(mcp_only) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--render", action="store_true", help="only re-render from the committed log")
    parser.add_argument("--serve", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return
    if not args.render:
        record()
    render()


if __name__ == "__main__":
    main()
