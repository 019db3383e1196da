"""HAND-WRITTEN MISBEHAVING MCP SERVER (stdio), for sample recordings only. Not an SDK.

No SDK misbehaves this way on purpose, so this plain-Python peer speaks JSON-RPC lines on
stdin/stdout itself, deterministically: every reaction is triggered by a line it read (pauses
only space out what it then writes), so re-recording gives the same message sequence.

    python scripts/peers/misbehaving_server.py BEHAVIOUR

BEHAVIOUR:
  late-result      tools/call of `slow_write` sends progress 0, then waits; when it reads
                   `notifications/cancelled` for that call it still sends progress 1 and 2 and
                   then the result, 0.2 s apart (violates CAN-3, PRG-3; CAN-4 in 2026-07-28)
  non-json-stdout  prints a banner line that is not JSON on stdout before answering initialize,
                   and another after the tools/call result (violates STD-2)
  unanswered       never answers tools/call; exits when stdin closes, leaving it open

Speaks 2025-11-25 after `initialize`; a request whose `params._meta` names protocol version
2026-07-28 is answered in that revision's shape (`resultType`, no handshake needed).
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
AFTER_CANCEL_PAUSE = 0.2
TOOLS = [
    {
        "name": "slow_write",
        "description": "Writes a record slowly (no annotations: possibly destructive).",
        "inputSchema": {"type": "object", "properties": {"record": {"type": "string"}}},
    }
]


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def send_raw(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def is_modern(params: dict[str, Any]) -> bool:
    meta = params.get("_meta") or {}
    return meta.get("io.modelcontextprotocol/protocolVersion") == MODERN


def result(request: dict[str, Any], value: dict[str, Any]) -> dict[str, Any]:
    if is_modern(request.get("params") or {}):
        value = {**value, "resultType": "complete"}
    return {"jsonrpc": "2.0", "id": request["id"], "result": value}


def progress(token: Any, value: int, total: int) -> None:
    send(
        {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {
                "progressToken": token,
                "progress": value,
                "total": total,
                "message": f"step {value + 1}",
            },
        }
    )


def main(behaviour: str) -> int:
    pending_call: dict[str, Any] | None = None
    for raw in sys.stdin:
        message = json.loads(raw)
        method = message.get("method")
        params = message.get("params") or {}
        if method == "initialize":
            if behaviour == "non-json-stdout":
                send_raw("misbehaving-server v0 starting up (this banner should have gone to stderr)")
            send(
                result(
                    message,
                    {
                        "protocolVersion": LEGACY,
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": f"misbehaving-server-{behaviour}", "version": "0"},
                    },
                )
            )
        elif method == "tools/list":
            send(result(message, {"tools": TOOLS}))
        elif method == "ping":
            send(result(message, {}))
        elif method == "tools/call":
            token = (params.get("_meta") or {}).get("progressToken")
            if behaviour == "late-result":
                pending_call = message
                if token is not None:
                    progress(token, 0, 3)
            elif behaviour == "unanswered":
                pending_call = message  # never answered
            else:
                send(result(message, {"content": [{"type": "text", "text": "written"}], "isError": False}))
                if behaviour == "non-json-stdout":
                    send_raw("DEBUG: slow_write done")
        elif method == "notifications/cancelled":
            if (
                behaviour == "late-result"
                and pending_call is not None
                and params.get("requestId") == pending_call["id"]
            ):
                # The misbehaviour: keep going after the cancel as if nothing happened. The pauses
                # only make it plain from timing alone that each line left well after the cancel was
                # read (a proxy cannot see when the server read it); the sequence does not depend on them.
                token = ((pending_call.get("params") or {}).get("_meta") or {}).get("progressToken")
                if token is not None:
                    time.sleep(AFTER_CANCEL_PAUSE)
                    progress(token, 1, 3)
                    time.sleep(AFTER_CANCEL_PAUSE)
                    progress(token, 2, 3)
                time.sleep(AFTER_CANCEL_PAUSE)
                send(
                    result(
                        pending_call,
                        {"content": [{"type": "text", "text": "written anyway"}], "isError": False},
                    )
                )
                pending_call = None
        elif "id" in message and method is not None:
            send(
                {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "error": {"code": -32601, "message": "Method not found"},
                }
            )
        # other notifications (initialized, ...) need nothing
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "late-result"))
