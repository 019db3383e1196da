#!/usr/bin/env python3
"""Regenerate every stdio sample in sample_captures/stdio/ (see its README.md).

    .venv/bin/python scripts/record_samples.py [--only NAME ...] [--out DIR]

Every recording runs the server under the recorder exactly as a host would launch it:

    [sys.executable, "-m", "cancelwire", "record", "-o", OUT, "--", sys.executable, SERVER_SCRIPT]

The SDK samples drive the official MCP Python SDK client (`mcp.Client` over stdio) against a
real SDK server (scripts/peers/sdk_server.py). The `handwritten-*` samples use a hand-written
misbehaving peer (scripts/peers/misbehaving_server.py or scripts/peers/scripted_client.py),
because no SDK misbehaves that way. Cancels are triggered by replies (the N-th progress) or by
a client timeout with ample margin, so re-running gives the same message sequence; only
timestamps change. Every run is bounded in time; stdio only, no network.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

REPO = Path(__file__).resolve().parent.parent
PEERS = REPO / "scripts" / "peers"
sys.path.insert(0, str(PEERS))

from scripted_client import ScriptedClient  # noqa: E402

SDK_SERVER = str(PEERS / "sdk_server.py")
BAD_SERVER = str(PEERS / "misbehaving_server.py")
SCENARIO_SECONDS = 30.0
MODERN = "2026-07-28"


def recorder(out: Path) -> list[str]:
    """The recorder command line, as a host would be configured: `python -m cancelwire record -o OUT --`."""
    return [sys.executable, "-m", "cancelwire", "record", "-o", str(out), "--"]


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COVERAGE")}
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONUNBUFFERED"] = "1"
    return env


# ------------------------------------------------------------------------------------------------
# SDK client scenarios


def sdk_client(out: Path, *, mode: str = "auto") -> Any:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    command = [*recorder(out), sys.executable, SDK_SERVER]
    params = StdioServerParameters(command=command[0], args=command[1:], env=child_env(), cwd=str(REPO))
    return Client(params, mode=mode, cache=None)


class ProgressGate:
    """A progress callback that fires an event once the n-th progress notification arrived."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.seen = 0
        self.event = anyio.Event()

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.seen += 1
        if self.seen >= self.n:
            self.event.set()


async def call_cancelled_by_caller(client: Any, tool: str, arguments: dict[str, Any], after_progress: int) -> None:
    """`call_tool` inside an anyio cancel scope that is cancelled once `after_progress` progress arrived."""
    gate = ProgressGate(after_progress)
    async with anyio.create_task_group() as tg:

        async def call() -> None:
            await client.call_tool(tool, arguments, progress_callback=gate)
            raise RuntimeError(f"{tool} completed although it should have been cancelled")

        tg.start_soon(call)
        with anyio.fail_after(10):
            await gate.event.wait()
        tg.cancel_scope.cancel()


async def call_timing_out(client: Any, tool: str, arguments: dict[str, Any], timeout: float) -> None:
    from mcp.shared.exceptions import MCPError

    try:
        await client.call_tool(tool, arguments, read_timeout_seconds=timeout, progress_callback=ProgressGate(99))
    except MCPError as exc:
        if "timed out" not in str(exc):
            raise
    else:
        raise RuntimeError(f"{tool} completed although the client timeout should have fired")


# The slow tools step every 0.5 s (progress at 0.0, 0.5, 1.0, 1.5 s, result at 2.0 s). A 0.75 s
# timeout lands midway between the 2nd and 3rd progress; WAIT_PAST_END keeps the session open
# until well after the tool would have finished, so a late reply would be on the wire.
TIMEOUT = 0.75
WAIT_PAST_END = 2.0
SLOW = {"entry": "order-42", "steps": 4}


async def sdk_clean_session(out: Path) -> None:
    async with sdk_client(out, mode="legacy") as client:
        await client.list_tools()
        result = await client.call_tool("add", {"a": 2, "b": 3})
        if result.structured_content != {"result": 5}:
            raise RuntimeError(f"unexpected add result {result!r}")
        await client.send_ping()


async def sdk_clean_session_modern(out: Path) -> None:
    async with sdk_client(out) as client:
        await client.list_tools()
        await client.call_tool("add", {"a": 2, "b": 3})
        await client.call_tool("count_words", {"text": "one two three", "steps": 2}, progress_callback=ProgressGate(9))
        await client.read_resource("ledger://entries")


def sdk_cancel_slow_tool(mode: str) -> Callable[[Path], Awaitable[None]]:
    async def scenario(out: Path) -> None:
        async with sdk_client(out, mode=mode) as client:
            await client.list_tools()
            await call_timing_out(client, "append_ledger", SLOW, TIMEOUT)
            await anyio.sleep(WAIT_PAST_END)

    return scenario


async def sdk_cancel_slow_tool_2025_06_18(out: Path) -> None:
    # The 2.3.0 client always offers its newest handshake revision (2025-11-25) in `initialize`;
    # the SDK server accepts any revision it supports. Offering 2025-06-18 needs this one constant
    # changed in the client process; everything on the wire is still the SDK's own code.
    import mcp.client.session as client_session

    saved = client_session.LATEST_HANDSHAKE_VERSION
    client_session.LATEST_HANDSHAKE_VERSION = "2025-06-18"  # type: ignore[misc]
    try:
        await sdk_cancel_slow_tool("legacy")(out)
    finally:
        client_session.LATEST_HANDSHAKE_VERSION = saved  # type: ignore[misc]


async def sdk_caller_cancel_slow_tool(out: Path) -> None:
    async with sdk_client(out) as client:
        await client.list_tools()
        await call_cancelled_by_caller(client, "append_ledger", SLOW, after_progress=2)
        await anyio.sleep(WAIT_PAST_END)


async def sdk_cancel_readonly_tool(out: Path) -> None:
    async with sdk_client(out) as client:
        await client.list_tools()
        await call_cancelled_by_caller(client, "count_words", {"text": "a b c", "steps": 4}, after_progress=2)
        await anyio.sleep(WAIT_PAST_END)


async def sdk_cancel_then_verify_by_read(out: Path) -> None:
    async with sdk_client(out) as client:
        await client.list_tools()
        await call_cancelled_by_caller(client, "append_ledger", SLOW, after_progress=2)
        await anyio.sleep(WAIT_PAST_END)
        ledger = await client.call_tool("read_ledger", {})
        if ledger.structured_content != {"result": []}:
            raise RuntimeError(f"the cancelled append took effect: {ledger!r}")
        await client.read_resource("ledger://entries")


# ------------------------------------------------------------------------------------------------
# Hand-written scripted client scenarios


def scripted(out: Path, server: list[str]) -> ScriptedClient:
    return ScriptedClient([*recorder(out), *server], cwd=str(REPO), env=child_env())


def legacy_handshake(client: ScriptedClient, version: str = "2025-11-25") -> None:
    client.send(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": "cancelwire-scripted-client", "version": "0"},
            },
        }
    )
    client.expect_id(1)
    client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})


def tools_call(request_id: int, name: str, arguments: dict[str, Any], *, modern: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"progressToken": f"tok-{request_id}"}
    if modern:
        meta["io.modelcontextprotocol/protocolVersion"] = MODERN
        meta["io.modelcontextprotocol/clientInfo"] = {"name": "cancelwire-scripted-client", "version": "0"}
        meta["io.modelcontextprotocol/clientCapabilities"] = {}
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments, "_meta": meta},
    }


def cancel(request_id: int | str, reason: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": request_id, "reason": reason},
    }


def finish(client: ScriptedClient) -> None:
    status = client.close()
    if status != 0:
        raise RuntimeError(f"recorder exited with status {status}")


def hw_server_late_result(modern: bool) -> Callable[[Path], None]:
    def scenario(out: Path) -> None:
        client = scripted(out, [sys.executable, BAD_SERVER, "late-result"])
        if not modern:
            legacy_handshake(client)
        client.send(tools_call(2, "slow_write", {"record": "r1"}, modern=modern))
        client.expect_method("notifications/progress")
        client.send(cancel(2, "user pressed stop"))
        client.expect_id(2)  # the late result the server should not have sent
        finish(client)

    return scenario


def hw_server_non_json_stdout(out: Path) -> None:
    client = scripted(out, [sys.executable, BAD_SERVER, "non-json-stdout"])
    legacy_handshake(client)
    client.send(tools_call(2, "slow_write", {"record": "r1"}))
    client.expect_id(2)
    client.send({"jsonrpc": "2.0", "id": 3, "method": "ping"})
    client.expect_id(3)  # the banner printed after the result comes before this
    finish(client)


def hw_server_unanswered(out: Path) -> None:
    client = scripted(out, [sys.executable, BAD_SERVER, "unanswered"])
    legacy_handshake(client)
    client.send(tools_call(2, "slow_write", {"record": "r1"}))
    client.send({"jsonrpc": "2.0", "id": 3, "method": "ping"})
    client.expect_id(3)  # the server has read the call; it never answers it
    finish(client)


def hw_client_cancels_initialize(out: Path) -> None:
    # Against the real SDK server. A ping first (allowed before initialize) waits until the server
    # is up; then the initialize request and a cancel of it go out in one write, then a ping.
    client = scripted(out, [sys.executable, SDK_SERVER])
    client.send({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    client.expect_id(1)
    initialize = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "cancelwire-scripted-client", "version": "0"},
        },
    }
    client.send_raw(json.dumps(initialize, separators=(",", ":")) + "\n" + json.dumps(cancel(2, "changed my mind")))
    client.expect_id(2)
    client.send({"jsonrpc": "2.0", "id": 3, "method": "ping"})
    client.expect_id(3)
    finish(client)


def hw_client_cancels_unknown_id(out: Path) -> None:
    # Against the real SDK server: a cancel for id 99, which was never sent, then for the already
    # answered id 2 (a late, stale cancel); then a call proves the session still works.
    client = scripted(out, [sys.executable, SDK_SERVER])
    legacy_handshake(client)
    client.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    client.expect_id(2)
    client.send(cancel(99, "no such request"))
    client.send(cancel(2, "stale: already answered"))
    client.send({"jsonrpc": "2.0", "id": 3, "method": "ping"})
    client.expect_id(3)
    finish(client)


Scenario = Callable[[Path], Awaitable[None]] | Callable[[Path], None]
SCENARIOS: dict[str, Scenario] = {
    "sdk-clean-session": sdk_clean_session,
    "sdk-clean-session-2026-07-28": sdk_clean_session_modern,
    "sdk-cancel-slow-tool": sdk_cancel_slow_tool("auto"),
    "sdk-cancel-slow-tool-2025-11-25": sdk_cancel_slow_tool("legacy"),
    "sdk-cancel-slow-tool-2025-06-18": sdk_cancel_slow_tool_2025_06_18,
    "sdk-caller-cancel-slow-tool": sdk_caller_cancel_slow_tool,
    "sdk-cancel-readonly-tool": sdk_cancel_readonly_tool,
    "sdk-cancel-then-verify-by-read": sdk_cancel_then_verify_by_read,
    "handwritten-server-late-result-after-cancel": hw_server_late_result(modern=False),
    "handwritten-server-late-result-after-cancel-2026-07-28": hw_server_late_result(modern=True),
    "handwritten-server-non-json-stdout": hw_server_non_json_stdout,
    "handwritten-server-unanswered-request": hw_server_unanswered,
    "handwritten-client-cancels-initialize": hw_client_cancels_initialize,
    "handwritten-client-cancels-unknown-id": hw_client_cancels_unknown_id,
}


def run(name: str, out_dir: Path) -> Path:
    out = out_dir / f"{name}.jsonl"
    out.unlink(missing_ok=True)
    scenario = SCENARIOS[name]
    started = time.monotonic()

    async def bounded() -> None:
        with anyio.fail_after(SCENARIO_SECONDS):
            result = scenario(out)
            if result is not None:
                await result

    if inspect.iscoroutinefunction(scenario):
        anyio.run(bounded)
    else:
        scenario(out)  # the scripted client bounds each wait itself
    # The recorder writes its last record when the server has exited; wait for it (bounded).
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if out.exists() and b'"process-exited"' in out.read_bytes().rstrip().rsplit(b"\n", 1)[-1]:
            break
        time.sleep(0.05)
    else:
        raise RuntimeError(f"{out}: the recording did not end with process-exited")
    print(
        f"{out.relative_to(REPO) if out.is_relative_to(REPO) else out}: {time.monotonic() - started:.1f} s",
        file=sys.stderr,
    )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="*", choices=sorted(SCENARIOS), help="record only these samples")
    parser.add_argument("--out", type=Path, default=REPO / "sample_captures" / "stdio")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.only or SCENARIOS:
        run(name, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
