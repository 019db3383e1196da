"""A real MCP Python SDK 1.x client driving task-augmented calls (protocol 2025-11-25), for the task samples.

Runs only in the pinned recording venv of `scripts/record_task_samples.py` (``mcp==1.30.0``). Every
request goes through the SDK's public ``ClientSession`` and its experimental task API
(``session.experimental.call_tool_as_task / get_task / get_task_result / cancel_task``); the flows
only decide when to call what. Cancels are triggered by what the server sent (the n-th status
notification), so re-running gives the same message sequence.

Flows:
  * ``cancel-working``    - ``export_ledger(steps=6)`` as a task with a progress token; after the 2nd
    progress and its status notification, ``tasks/cancel``; then ``tasks/get``, ``tasks/result``;
    waits until the work would have ended and asks ``tasks/get`` once more.
  * ``cancel-completed``  - ``export_ledger(steps=1)`` as a task, polled with ``tasks/get`` until final,
    ``tasks/result``, then ``tasks/cancel`` of the completed task (the spec wants -32602).
  * ``progress-completed`` - ``export_ledger(steps=3)`` as a task with a progress token, run to the
    end; ``tasks/result`` waits for it.
  * ``caller-timeout``    - ``export_ledger(steps=6)`` as a task; the caller waits on ``tasks/result``
    with the SDK's ``read_timeout_seconds`` of 0.8 s and gives up when it fires. Records what the
    SDK sends then (``tasks/cancel``? ``notifications/cancelled``? nothing?).

Usage: task_sdk_client.py [--log FILE] FLOW stdio -- SERVER_COMMAND...
       task_sdk_client.py [--log FILE] FLOW http URL
With ``--log FILE`` the client writes its own log (scripts/peers/jsonrpc_tee.py): every message its
session reads and writes, and the error the SDK raised to the caller who gave up (``"local": true``).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

import anyio
import mcp.types as types
from mcp import ClientSession
from mcp.shared.exceptions import McpError

TOKEN = "export-1"
WORK_SECONDS = 6 * 0.3  # export_ledger(steps=6) on the server
LINGER = 1.0


def note(text: str) -> None:
    print(f"[task-client {time.time():.6f}] {text}", file=sys.stderr, flush=True)


class Inbox:
    """The session's message handler: logs progress and status notifications; wakes who waits for the n-th status."""

    def __init__(self) -> None:
        self.progress = 0
        self.statuses: list[str] = []
        self._waiters: list[tuple[int, anyio.Event]] = []

    async def __call__(self, message: Any) -> None:
        if isinstance(message, types.ServerNotification):
            root = message.root
            if isinstance(root, types.ProgressNotification):
                self.progress += 1
                note(f"progress {root.params.progress}/{root.params.total}: {root.params.message}")
            elif isinstance(root, types.TaskStatusNotification):
                self.statuses.append(root.params.status)
                note(f"task status {root.params.status}: {root.params.statusMessage}")
        elif isinstance(message, Exception):
            note(f"session error: {message!r}")
        for n, event in self._waiters:
            if len(self.statuses) >= n:
                event.set()

    async def wait_statuses(self, n: int) -> None:
        """Until the n-th `notifications/tasks/status`, which the server sends right after its n-th progress."""
        event = anyio.Event()
        self._waiters.append((n, event))
        await event.wait()


async def start_task(session: ClientSession, steps: int, *, progress: bool = True) -> str:
    meta = {"progressToken": TOKEN} if progress else None
    created = await session.experimental.call_tool_as_task("export_ledger", {"steps": steps}, meta=meta)
    note(f"task {created.task.taskId} created, status {created.task.status}")
    return created.task.taskId


async def show_result(session: ClientSession, task_id: str) -> None:
    try:
        result = await session.experimental.get_task_result(task_id, types.GetTaskPayloadResult)
        note(f"tasks/result: {result.model_dump(mode='json', exclude_none=True)}")
    except McpError as exc:
        note(f"tasks/result error {exc.error.code}: {exc.error.message}")


async def cancel_working(session: ClientSession, inbox: Inbox) -> None:
    task_id = await start_task(session, 6)
    with anyio.fail_after(10):
        await inbox.wait_statuses(2)
    cancelled = await session.experimental.cancel_task(task_id)
    note(f"tasks/cancel answered: status {cancelled.status}")
    note(f"tasks/get: {(await session.experimental.get_task(task_id)).status}")
    await show_result(session, task_id)
    await anyio.sleep(WORK_SECONDS + LINGER)
    note(f"tasks/get after the work's end: {(await session.experimental.get_task(task_id)).status}")


async def cancel_completed(session: ClientSession, inbox: Inbox) -> None:
    task_id = await start_task(session, 1, progress=False)
    async for status in session.experimental.poll_task(task_id):
        note(f"polled: {status.status}")
    await show_result(session, task_id)
    try:
        cancelled = await session.experimental.cancel_task(task_id)
        note(f"tasks/cancel of a completed task answered with status {cancelled.status}")
    except McpError as exc:
        note(f"tasks/cancel of a completed task: error {exc.error.code}: {exc.error.message}")


async def progress_completed(session: ClientSession, inbox: Inbox) -> None:
    task_id = await start_task(session, 3)
    await show_result(session, task_id)


async def caller_timeout(session: ClientSession, inbox: Inbox) -> None:
    task_id = await start_task(session, 6)
    try:
        await session.send_request(
            types.ClientRequest(types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(taskId=task_id))),
            types.CallToolResult,
            request_read_timeout_seconds=timedelta(seconds=0.8),
        )
        raise RuntimeError("tasks/result answered before the caller's timeout")
    except McpError as exc:
        note(f"the caller gave up: error {exc.error.code}: {exc.error.message}")
        if LOG is not None:  # the client's own record of the error its SDK made (no peer sent it)
            error = {"code": exc.error.code, "message": exc.error.message}
            LOG.write("recv", {"jsonrpc": "2.0", "id": session._request_id - 1, "error": error}, local=True)
    await anyio.sleep(WORK_SECONDS + LINGER)


FLOWS = {
    "cancel-working": cancel_working,
    "cancel-completed": cancel_completed,
    "progress-completed": progress_completed,
    "caller-timeout": caller_timeout,
}


@asynccontextmanager
async def connect(transport: str, target: list[str]) -> AsyncIterator[tuple[Any, Any]]:
    if transport == "stdio":
        from mcp.client.stdio import StdioServerParameters, stdio_client

        params = StdioServerParameters(command=target[0], args=target[1:], env=dict(os.environ))
        async with stdio_client(params) as streams:
            yield streams
    else:
        from mcp.client.streamable_http import streamablehttp_client

        async with streamablehttp_client(target[0]) as (read, write, _):
            yield read, write


LOG: Any = None
"""With ``--log FILE``: the client's own log (jsonrpc_tee.Log) of what its session reads and writes."""


async def run(flow: str, transport: str, target: list[str]) -> None:
    inbox = Inbox()
    with anyio.fail_after(30):
        async with connect(transport, target) as (read, write):
            if LOG is not None:
                from jsonrpc_tee import TeeRead, TeeWrite

                read, write = TeeRead(read, LOG), TeeWrite(write, LOG)
            await drive(flow, read, write, inbox)
    note("session closed")


async def drive(flow: str, read: Any, write: Any, inbox: Inbox) -> None:
    async with ClientSession(read, write, message_handler=inbox) as s:
        init = await s.initialize()
        note(f"initialized: {init.protocolVersion}, server tasks capability {init.capabilities.tasks}")
        await s.list_tools()
        await FLOWS[flow](s, inbox)


def main() -> int:
    global LOG
    argv = sys.argv[1:]
    if argv[:1] == ["--log"]:  # the client's own log, for the --merge samples
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from jsonrpc_tee import Log

        LOG = Log(open(argv[1], "w", encoding="utf-8"))  # noqa: SIM115 (closed at exit)
        argv = argv[2:]
    flow, transport, *target = argv
    if target and target[0] == "--":
        target = target[1:]
    if flow not in FLOWS or transport not in ("stdio", "http") or not target:
        print(__doc__, file=sys.stderr)
        return 2
    anyio.run(run, flow, transport, target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
