"""Tests as an MCP server author writes them (run by tests/test_pytest_plugin.py through pytester):
the official SDK's `Client` against `servers.py`, in memory and over stdio, under the SDK's anyio setup."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
import servers
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

pytestmark = pytest.mark.anyio
STDIO = StdioServerParameters(command=sys.executable, args=[str(Path(servers.__file__).resolve())])


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def cancel_after_progress(client: Any, tool: str, arguments: dict[str, Any], progress: int = 1) -> None:
    """`call_tool` in a task cancelled once PROGRESS progress notifications arrived (the SDK then sends
    `notifications/cancelled`)."""
    seen = anyio.Event()
    count = 0

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        nonlocal count
        count += 1
        if count >= progress:
            seen.set()

    async with anyio.create_task_group() as tg:

        async def call() -> None:
            await client.call_tool(tool, arguments, progress_callback=on_progress)
            raise AssertionError(f"{tool} finished although it was cancelled")

        tg.start_soon(call)
        with anyio.fail_after(10):
            await seen.wait()
        tg.cancel_scope.cancel()


async def test_polite_in_memory() -> None:
    async with Client(servers.server, mode="legacy", cache=None) as client:
        await client.list_tools()  # the tool is read-only: a cancelled call of it is clean
        await cancel_after_progress(client, "count", {"steps": 4})
        assert (await client.call_tool("add", {"a": 1, "b": 2})).structured_content == {"result": 3}


async def test_polite_in_memory_audit(cancelwire_audit: Any) -> None:
    async with Client(servers.server, mode="legacy", cache=None) as client:
        await client.list_tools()  # the tool is read-only: a cancelled call of it is clean
        await cancel_after_progress(client, "count", {"steps": 4})
    audit = cancelwire_audit()
    assert [str(o) for o in audit.outcomes] == ["clean"]
    assert audit.findings == ()
    assert audit.passed


async def stubborn_call(client: Any) -> None:
    """The stubborn tool cancelled after its first progress, waited for until it has sent the rest."""
    await cancel_after_progress(client, servers.HOSTILE_NAME, {"steps": 3})
    with anyio.fail_after(10):
        while "stubborn_count" not in servers.FINISHED:
            await anyio.sleep(0.05)
    servers.FINISHED.clear()


async def test_stubborn_in_memory() -> None:
    async with Client(servers.server, mode="legacy", cache=None) as client:
        await stubborn_call(client)


@pytest.fixture
async def held_client() -> Any:
    async with Client(servers.server, mode="legacy", cache=None) as client:
        yield client


async def test_stubborn_in_a_fixture_session(held_client: Any) -> None:
    await stubborn_call(held_client)


async def test_blocking_over_stdio() -> None:
    async with Client(STDIO, cache=None) as client:
        with pytest.raises(MCPError, match="timed out"):
            await client.call_tool("blocking_count", {"seconds": 2.0}, read_timeout_seconds=0.3)
        # the server answers in order: this reply comes after the late one
        assert (await client.call_tool("add", {"a": 1, "b": 2})).structured_content == {"result": 3}


async def test_polite_over_stdio() -> None:
    async with Client(STDIO, cache=None) as client:
        await client.list_tools()  # the tool is read-only: a cancelled call of it is clean
        await cancel_after_progress(client, "count", {"steps": 4})
        assert (await client.call_tool("add", {"a": 1, "b": 2})).structured_content == {"result": 3}
