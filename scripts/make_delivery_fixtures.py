#!/usr/bin/env python3
"""Write the HAR fixtures of CW216 post-redirected and CW217 cancel-not-delivered (tests/rules/post-redirected/,
tests/rules/cancel-not-delivered/).

    .venv/bin/python scripts/make_delivery_fixtures.py

HAND-WRITTEN: rendered with the helpers of scripts/make_har_fixtures.py in the shape Chromium DevTools
writes (each file says so in `log.comment`), not browser recordings. The capture fixtures and samples
of the same rules are real loopback captures (scripts/capture_redirect_samples.py).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from make_har_fixtures import ROOT, URL, entry, handshake, har, rpc, sse, write

CALL = rpc(
    id=3, method="tools/call", params={"name": "slow_write", "arguments": {"steps": 3}, "_meta": {"progressToken": 3}}
)
RESULT = rpc(id=3, result={"content": [{"type": "text", "text": "wrote 3 records"}]})


def redirected(at: float, body: str, status: int = 307) -> dict[str, Any]:
    """A POST answered with a redirect to the endpoint with a trailing slash (Starlette's Mount)."""
    e = entry(at, body, status=status, mime="x-unknown", reply="", wait=2.0)
    e["response"]["headers"].append({"name": "location", "value": URL + "/"})
    e["response"]["redirectURL"] = URL + "/"
    return e


def post_redirected() -> tuple[Any, Any]:
    """Triggers: tools/call id 3 POSTed to /mcp gets 307 to /mcp/ and is sent again there (200).
    Clean: the same call POSTed to /mcp/ at once; a GET answered 307 carries no message."""
    again = entry(1.1, CALL, url=URL + "/", reply=RESULT)
    get = entry(0.9, None, method="GET", status=307, reply="", mime="x-unknown")
    return har([*handshake(), redirected(1.0, CALL), again]), har([*handshake(), get, again])


def cancel_not_delivered() -> tuple[Any, Any]:
    """Triggers: tools/call id 3 answered on an SSE stream (progress 1, then the result at its end);
    its cancel, POSTed at 1.5 s, gets 404 (the session is gone): the result is no late result.
    Clean: the same cancel accepted (202)."""
    progress = rpc(method="notifications/progress", params={"progressToken": 3, "progress": 1, "total": 3})
    call = entry(1.0, CALL, mime="text/event-stream", reply=sse(progress, RESULT), wait=50.0, receive=1000.0)
    cancel = rpc(method="notifications/cancelled", params={"requestId": 3, "reason": "user pressed stop"})
    refused = entry(1.5, cancel, status=404, mime="text/plain", reply="Session not found", wait=3.0)
    accepted = entry(1.5, cancel, status=202, reply=None, wait=3.0)
    return har([*handshake(), call, refused]), har([*handshake(), call, accepted])


def main() -> None:
    for slug, (triggers, clean) in (
        ("post-redirected", post_redirected()),
        ("cancel-not-delivered", cancel_not_delivered()),
    ):
        folder = ROOT / "tests" / "rules" / slug
        write(folder / "triggers.har", triggers)
        write(folder / "clean.har", clean)


if __name__ == "__main__":
    main()
