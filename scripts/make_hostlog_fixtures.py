"""Record one real MCP session and render it into every host-log format cancelwire reads.

    .venv/bin/python scripts/make_hostlog_fixtures.py            record a new session, then render
    .venv/bin/python scripts/make_hostlog_fixtures.py --render   re-render from the committed capture

Recording: the real MCP Python SDK client (`mcp.client.stdio.stdio_client` + `ClientSession`)
starts this script with `--relay`, which starts this script again with `--serve`: a real SDK
`MCPServer` over stdio with one slow tool (`slow_count`) that reports progress every 0.2 s.
The client calls the tool with a progress callback, and after the second progress
notification cancels the call by cancelling its anyio scope, which makes the SDK send
`notifications/cancelled`. The relay copies both pipes unchanged and writes each line it
passes, with the time it saw it, to `session.capture.jsonl` (a cancelwire transcript).

Rendering (the real hosts cannot run here): each captured line is written, unchanged, in the
documented line format of each host. Claude Desktop gets server stderr lines, a restart and a
second server interleaved; times in the VS Code log are written as UTC wall-clock time.
"""

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp.client.session import ClientSession

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "hostlogs"
CAPTURE = OUT / "session.capture.jsonl"
SERVER = "slow-demo"
OTHER = "other-demo"


# --------------------------------------------------------------------------- recording


def serve() -> None:
    import anyio
    from mcp.server.mcpserver import Context, MCPServer

    server = MCPServer(SERVER)

    @server.tool()
    async def slow_count(steps: int, ctx: Context) -> str:
        """Counts slowly, reporting progress at each step."""
        for i in range(steps):
            print(f"{SERVER}: slow_count step {i + 1}/{steps}", file=sys.stderr, flush=True)
            await ctx.report_progress(i + 1, steps, f"step {i + 1}")
            await anyio.sleep(0.2)
        return "done"

    print(f"{SERVER}: starting on stdio", file=sys.stderr, flush=True)
    server.run("stdio")


def relay(capture: Path, command: list[str]) -> None:
    """Run `command`, copy our stdin to it and its stdout/stderr back, logging every line."""
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lock = threading.Lock()
    with capture.open("w", encoding="utf-8") as log:
        header = {
            "cancelwire_transcript": 1,
            "transport": "stdio",
            "vantage": "proxy",
            "command": ["python", "make_hostlog_fixtures.py", "--serve"],
            "ts": time.time(),
        }
        log.write(json.dumps(header) + "\n")

        def pump(src: IO[bytes], dst: IO[bytes] | None, direction: str) -> None:
            for line in iter(src.readline, b""):
                with lock:
                    record = {"ts": time.time(), "dir": direction, "line": line.rstrip(b"\r\n").decode()}
                    log.write(json.dumps(record) + "\n")
                    log.flush()
                if dst is not None:
                    dst.write(line)
                    dst.flush()
            if dst is not None and direction == "c2s":
                dst.close()

        assert child.stdin and child.stdout and child.stderr
        threads = [
            threading.Thread(target=pump, args=(sys.stdin.buffer, child.stdin, "c2s"), daemon=True),
            threading.Thread(target=pump, args=(child.stdout, sys.stdout.buffer, "s2c")),
            threading.Thread(target=pump, args=(child.stderr, None, "stderr")),
        ]
        for thread in threads:
            thread.start()
        status = child.wait()
        for thread in threads[1:]:
            thread.join()
        with lock:
            log.write(json.dumps({"ts": time.time(), "event": "process-exited", "status": status}) + "\n")
    sys.stdout.flush()
    os._exit(0)  # the stdin pump may still block in a read; nothing is left to relay


async def client(capture: Path) -> None:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    me = str(Path(__file__).resolve())
    params = StdioServerParameters(
        command=sys.executable, args=[me, "--relay", str(capture), "--", sys.executable, me, "--serve"]
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await cancel_after_second_progress(session)


async def cancel_after_second_progress(session: "ClientSession") -> None:
    """The scenario both host-log fixtures record: slow_count cancelled after its second progress."""
    import anyio

    await session.initialize()
    await session.list_tools()
    second_progress = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        if progress >= 2:
            second_progress.set()

    async with anyio.create_task_group() as group:

        async def call() -> None:
            await session.call_tool("slow_count", {"steps": 20}, progress_callback=on_progress)

        group.start_soon(call)
        await second_progress.wait()
        group.cancel_scope.cancel()  # the SDK sends notifications/cancelled for the call
    await anyio.sleep(0.6)  # let late server output (if any) reach the recording


# --------------------------------------------------------------------------- rendering


def load_capture() -> list[dict[str, Any]]:
    records = [json.loads(line) for line in CAPTURE.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in records if r.get("dir") in ("c2s", "s2c", "stderr")]


def iso_z(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{int(ts * 1000) % 1000:03d}Z"


def vscode_time(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S.") + f"{int(ts * 1000) % 1000:03d}"


def claude_lines(
    records: list[dict[str, Any]], server: str, shift: float, *, swap: bool = False, backwards: bool = False
) -> list[tuple[float, str]]:
    """One server's session as Claude Desktop writes it to mcp.log.

    `swap` writes the level before the server name; `backwards` stamps the second server message
    a few milliseconds before the line above it (host log time is not wire time). Each item is
    (capture time, line): lines are merged by capture time, whatever time they show.
    """

    def prefix(ts: float) -> str:
        return f"{iso_z(ts)} [info] [{server}]" if swap else f"{iso_z(ts)} [{server}] [info]"

    t0 = records[0]["ts"] + shift
    started = "Server started and connected successfully"
    out = [
        (t0 - 0.02, f"{prefix(t0 - 0.02)} Initializing server... {{ metadata: undefined }}"),
        (t0 - 0.01, f"{prefix(t0 - 0.01)} {started} {{ metadata: undefined }}"),
    ]
    replies = 0
    for i, r in enumerate(records):
        ts = r["ts"] + shift
        if r["dir"] == "stderr":
            out.append((ts, r["line"].replace(SERVER, server)))  # the server's stderr, unprefixed
            continue
        who = "client" if r["dir"] == "c2s" else "server"
        replies += who == "server"
        shown = out[-1][0] - 0.004 if backwards and who == "server" and replies == 2 else ts
        tail = " { metadata: undefined }" if i % 2 == 0 else ""  # the host writes it on most lines
        out.append((ts, f"{prefix(shown)} Message from {who}: {r['line']}{tail}"))
    end = records[-1]["ts"] + shift
    out.append((end + 0.01, f"{prefix(end + 0.01)} Client transport closed {{ metadata: undefined }}"))
    return out


def render_claude(records: list[dict[str, Any]]) -> str:
    """slow-demo's session, other-demo's interleaved by time, then slow-demo restarted."""
    duration = records[-1]["ts"] - records[0]["ts"] + 0.1
    first = claude_lines(records, SERVER, 0.0, backwards=True)
    other = claude_lines(records, OTHER, duration / 2)
    restart = claude_lines(records, SERVER, duration + 1.0, swap=True)
    merged = sorted(first + other, key=lambda item: item[0])  # stable: keeps each server's order
    return "".join(text + "\n" for _, text in merged + restart)


def render_vscode(records: list[dict[str, Any]]) -> str:
    t0 = records[0]["ts"]
    out = [
        f"{vscode_time(t0 - 0.03)} [info] Starting server {SERVER}",
        f"{vscode_time(t0 - 0.03)} [info] Connection state: Starting",
        f"{vscode_time(t0 - 0.02)} [info] Starting server from LocalProcess extension host",
        f"{vscode_time(t0 - 0.02)} [info] Connection state: Running",
    ]
    for r in records:
        if r["dir"] == "stderr":
            out.append(f"{vscode_time(r['ts'])} [warning] [server stderr] {r['line']}")
        else:
            arrow = "[editor -> server]" if r["dir"] == "c2s" else "[server -> editor]"
            out.append(f"{vscode_time(r['ts'])} [debug] {arrow} {r['line']}")
    out.append(f"{vscode_time(records[-1]['ts'] + 0.01)} [info] Connection state: Stopped")
    return "\n".join(out) + "\n"


def render_vscode_2025(records: list[dict[str, Any]]) -> str:
    """The first VS Code builds with MCP (March 2025): `[Client Says]` / `[Server Says]` at info
    level, the server's stderr lines with no marker (as github.com/microsoft/vscode/issues/244377
    quotes the channel, 2025-03-23, and as that build's extension-host stdio launcher wrote it)."""
    out = []
    for r in records:
        marker = {"c2s": "[Client Says] ", "s2c": "[Server Says] ", "stderr": ""}[r["dir"]]
        out.append(f"{vscode_time(r['ts'])} [info] {marker}{r['line']}")
    return "\n".join(out) + "\n"


def render_gosdk(records: list[dict[str, Any]], side: str) -> str:
    out = []
    for r in records:
        if r["dir"] == "stderr":
            continue  # LoggingTransport logs only messages (a server's own stderr is elsewhere)
        written = (r["dir"] == "c2s") == (side == "client")
        out.append(f"{'write' if written else 'read'}: {r['line']}")
    return "\n".join(out) + "\n"


def render_ndjson(records: list[dict[str, Any]], shape: str) -> str:
    out = []
    for r in records:
        if r["dir"] == "stderr":
            continue
        message = json.loads(r["line"])
        if shape == "bare":
            out.append(r["line"])
        elif shape == "dir":
            way = "client->server" if r["dir"] == "c2s" else "server->client"
            out.append(json.dumps({"ts": r["ts"], "dir": way, "msg": message}))
        else:  # recorded by the client: it sends c2s and receives s2c
            way = "send" if r["dir"] == "c2s" else "recv"
            out.append(json.dumps({"ts": r["ts"], "direction": way, "message": message}))
    return "\n".join(out) + "\n"


def render() -> None:
    records = load_capture()
    files = {
        "mcp.log": render_claude(records),
        f"mcp-server-{SERVER}.log": "".join(text + "\n" for _, text in claude_lines(records, SERVER, 0.0)),
        f"vscode-{SERVER}.log": render_vscode(records),
        f"vscode-2025-{SERVER}.log": render_vscode_2025(records),
        "gosdk-client.log": render_gosdk(records, "client"),
        "gosdk-server.log": render_gosdk(records, "server"),
        "session.ndjson": render_ndjson(records, "bare"),
        "session-dir.jsonl": render_ndjson(records, "dir"),
        "session-sendrecv.jsonl": render_ndjson(records, "sendrecv"),
    }
    for name, text in files.items():
        (OUT / name).write_text(text, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--render", action="store_true", help="only re-render from the committed capture")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--relay", metavar="CAPTURE", help=argparse.SUPPRESS)
    parser.add_argument("command", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve()
    elif args.relay:
        relay(Path(args.relay), args.command)
    else:
        if not args.render:
            import anyio

            OUT.mkdir(parents=True, exist_ok=True)
            anyio.run(client, CAPTURE)
        render()


if __name__ == "__main__":
    main()
