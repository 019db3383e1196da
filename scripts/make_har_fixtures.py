#!/usr/bin/env python3
"""Render the browser-style HAR sample and the HAR rule fixtures.

    .venv/bin/python scripts/make_har_fixtures.py

Not recordings: these files are rendered here, in the shape Chromium's DevTools writes ("Save all as
HAR with content": `_initiator`, `_priority`, `_resourceType`, `_transferSize`, `_error`, timings with
-1 for phases that did not happen, `connection`, `pageref`), with some optional fields left out as
other exporters do. Each file says so in `log.comment`. The mitmproxy sample is a real recording
(scripts/record_har.py).

Writes sample_captures/har/browser-chromium-cancel.har and tests/rules/har-*/{triggers,clean}.har.
"""

from __future__ import annotations

import base64
import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
T0 = datetime(2026, 7, 24, 9, 30, 0, tzinfo=UTC).timestamp()
URL = "https://mcp.example.test/mcp"
SID = "4f1c2b7e9a0d4c3b8e6f5a2d1c0b9e8f"
COMMENT = (
    "Rendered by cancelwire scripts/make_har_fixtures.py in the shape Chromium DevTools writes; "
    "not a browser recording."
)
TOOLS = {
    "tools": [
        {"name": "echo", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}},
        {"name": "slow_write", "inputSchema": {"type": "object"}, "annotations": {"destructiveHint": True}},
    ]
}


def rpc(**fields: Any) -> str:
    return json.dumps({"jsonrpc": "2.0", **fields}, separators=(",", ":"))


def sse(*messages: str) -> str:
    return "".join(f"event: message\ndata: {m}\n\n" for m in messages)


def entry(
    at: float,
    body: str | None,
    *,
    status: int = 200,
    mime: str = "application/json",
    reply: str | None = "",
    wait: float = 20.0,
    receive: float = 1.0,
    error: str | None = None,
    sid: str | None = SID,
    base64_reply: bool = False,
    method: str = "POST",
    url: str = URL,
    resource: str = "fetch",
) -> dict[str, Any]:
    """One entry as Chromium writes it; `at` in seconds after T0."""
    headers = [
        {"name": "content-type", "value": "application/json"},
        {"name": "accept", "value": "application/json, text/event-stream"},
    ]
    if sid:
        headers.append({"name": "mcp-session-id", "value": sid})
        headers.append({"name": "mcp-protocol-version", "value": "2025-11-25"})
    request: dict[str, Any] = {
        "method": method,
        "url": url,
        "httpVersion": "http/2.0",
        "headers": headers,
        "queryString": [],
    }
    if body is not None:
        request["postData"] = {"mimeType": "application/json", "text": body}
    content: dict[str, Any] = {"size": len(reply or ""), "mimeType": mime}
    if reply is not None:
        content["text"] = base64.b64encode(reply.encode()).decode() if base64_reply else reply
        if base64_reply:
            content["encoding"] = "base64"
    response: dict[str, Any] = {
        "status": status,
        "statusText": "",
        "httpVersion": "http/2.0",
        "headers": [],
        "content": content,
    }
    if sid:
        response["headers"] = [{"name": "mcp-session-id", "value": sid}, {"name": "content-type", "value": mime}]
    response["redirectURL"] = ""
    response["_transferSize"] = len(reply or "") + 120
    response["_error"] = error
    timings = {"blocked": 0.4, "dns": -1, "ssl": -1, "connect": -1, "send": 0.2, "wait": wait, "receive": receive}
    return {
        "_initiator": {
            "type": "script",
            "stack": {
                "callFrames": [
                    {
                        "functionName": "send",
                        "url": "https://app.example.test/mcp-client.js",
                        "lineNumber": 120,
                        "columnNumber": 8,
                    }
                ]
            },
        },
        "_priority": "High",
        "_resourceType": resource,
        "connection": "443",
        "pageref": "page_1",
        "request": request,
        "response": response,
        "serverIPAddress": "203.0.113.7",
        "startedDateTime": datetime.fromtimestamp(T0 + at, UTC).isoformat().replace("+00:00", "Z"),
        "time": 0.6 + wait + max(receive, 0),
        "timings": timings,
    }


def page_entry(url: str, body: str, mime: str, resource: str) -> dict[str, Any]:
    """A GET of the web page itself: traffic the reader must leave alone."""
    return entry(0.0, None, method="GET", url=url, reply=body, mime=mime, sid=None, resource=resource)


def har(entries: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "log": {
            "version": "1.2",
            "creator": {"name": "WebInspector", "version": "537.36"},
            "pages": [
                {
                    "startedDateTime": datetime.fromtimestamp(T0, UTC).isoformat().replace("+00:00", "Z"),
                    "id": "page_1",
                    "title": "https://app.example.test/",
                    "pageTimings": {"onContentLoad": 210.5, "onLoad": 380.2},
                }
            ],
            "entries": entries,
            "comment": COMMENT,
        }
    }


def handshake() -> list[dict[str, Any]]:
    init = rpc(
        id=1,
        method="initialize",
        params={"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "web-app", "version": "1"}},
    )
    result = rpc(
        id=1,
        result={
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "demo", "version": "1"},
        },
    )
    first = entry(0.0, init, mime="text/event-stream", reply=sse(result), sid=None)
    first["response"]["headers"] = [
        {"name": "mcp-session-id", "value": SID},
        {"name": "content-type", "value": "text/event-stream"},
    ]
    listed = entry(0.2, rpc(id=2, method="tools/list"), reply=rpc(id=2, result=TOOLS))
    return [first, entry(0.1, rpc(method="notifications/initialized"), status=202, reply=None), listed]


def browser_sample() -> dict[str, Any]:
    """A web client calls slow_write, gives up after 1 s: it POSTs notifications/cancelled and aborts
    the fetch (Chromium records net::ERR_ABORTED, status 0, no body); then an echo answered in base64."""
    call = rpc(
        id=3,
        method="tools/call",
        params={"name": "slow_write", "arguments": {"steps": 10}, "_meta": {"progressToken": 3}},
    )
    aborted = entry(
        1.0, call, status=0, mime="text/event-stream", reply=None, wait=1010.0, receive=-1, error="net::ERR_ABORTED"
    )
    aborted["response"]["content"] = {"size": 0, "mimeType": "x-unknown"}
    del aborted["response"]["headers"]
    cancel = entry(
        2.0,
        rpc(method="notifications/cancelled", params={"requestId": 3, "reason": "user pressed stop"}),
        status=202,
        reply=None,
        wait=5.0,
    )
    echo = entry(
        2.5,
        rpc(id=4, method="tools/call", params={"name": "echo", "arguments": {"text": "hi"}}),
        reply=rpc(id=4, result={"content": [{"type": "text", "text": "hi"}]}),
        base64_reply=True,
    )
    page = page_entry("https://app.example.test/mcp-client.js", "console.log(1)", "text/javascript", "script")
    for optional in ("_initiator", "connection", "serverIPAddress"):
        del page[optional]  # missing optional fields, as other exporters write them
    del echo["timings"]["dns"], echo["response"]["redirectURL"]
    return har([page, *handshake(), aborted, cancel, echo])


def rule_fixtures() -> dict[str, tuple[Any, Any]]:
    call = rpc(id=3, method="tools/call", params={"name": "echo", "arguments": {"text": "hi"}})
    reply = rpc(id=3, result={"content": [{"type": "text", "text": "hi"}]})
    answered = entry(1.0, call, reply=reply)
    reset = entry(1.0, call, status=0, reply=None, error="net::ERR_CONNECTION_RESET", wait=-1, receive=-1)
    abandoned = entry(1.0, call, status=0, reply=None, error="net::ERR_ABORTED", wait=300.0, receive=-1)
    bad64 = entry(1.0, call, reply=reply, base64_reply=True)
    bad64["response"]["content"]["text"] = bad64["response"]["content"]["text"][:-3]
    unrecorded = entry(1.0, call, reply=None)
    unrecorded["response"]["content"]["size"] = len(reply)
    page = page_entry("https://app.example.test/", "<html></html>", "text/html", "document")
    pinged = entry(1.5, rpc(id=4, method="ping"), reply=rpc(id=4, result={}))
    return {
        "har-session-id-conflict": (har(conflicting_session_ids(answered)), har([*handshake(), answered])),
        "har-replies-not-recorded": (har(legacy_posts(call)), har([*handshake(), answered])),
        "har-request-failed": (har([*handshake(), reset]), har([*handshake(), abandoned])),
        "har-entry-unreadable": (
            har([*handshake(), bad64]),
            har([*handshake(), entry(1.0, call, reply=reply, base64_reply=True)]),
        ),
        "har-body-not-recorded": (har([*handshake(), unrecorded]), har([*handshake(), answered])),
        "har-no-mcp": (har([page]), har([page, *handshake()])),
        "har-invalid-json": (None, har([*handshake(), answered])),
        "har-entry-out-of-order": (har([*handshake(), pinged, answered]), har([*handshake(), pinged, answered])),
    }


def conflicting_session_ids(answered: dict[str, Any]) -> list[dict[str, Any]]:
    """The client re-initializes with its old session id (the server assigns SID), and a call carries
    two session ids, the server echoing SID: both entries are put in session SID, and named."""
    first, *rest = handshake()
    first = copy.deepcopy(first)
    first["request"]["headers"].append({"name": "mcp-session-id", "value": "0ld5e55100"})
    twice = copy.deepcopy(answered)
    twice["request"]["headers"].insert(2, {"name": "Mcp-Session-Id", "value": "0ld5e55100"})
    return [first, *rest, twice]


def legacy_posts(call: str) -> list[dict[str, Any]]:
    """An HTTP+SSE (2024-11-05) session's POSTs, each accepted with 202 "Accepted" (the Python SDK's
    text): the replies went on the GET stream, which the HAR holds no body of (mitmproxy streams it,
    browsers keep none for an EventSource), so that entry is not MCP traffic to the reader."""
    url = "https://mcp.example.test/messages/?session_id=6b1f0c2d9e8a4f7b"
    init = rpc(
        id=1,
        method="initialize",
        params={"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "web-app", "version": "1"}},
    )
    posts = [init, rpc(method="notifications/initialized"), rpc(id=2, method="tools/list"), call]
    stream = entry(0.0, None, method="GET", url="https://mcp.example.test/sse", mime="text/event-stream", sid=None)
    stream["response"]["content"] = {"size": 0, "mimeType": "text/event-stream"}
    accepted = [
        entry(0.05 + n / 10, body, status=202, mime="text/plain", reply="Accepted", sid=None, url=url)
        for n, body in enumerate(posts)
    ]
    return [stream, *accepted]


def write(path: Path, value: Any) -> str:
    text = json.dumps(value, indent=2) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return text


def main() -> None:
    write(ROOT / "sample_captures" / "har" / "browser-chromium-cancel.har", browser_sample())
    for slug, (triggers, clean) in rule_fixtures().items():
        folder = ROOT / "tests" / "rules" / slug
        text = write(folder / "clean.har", clean)
        if triggers is None:  # the clean file cut inside its last entry's response: a HAR whose writer stopped
            (folder / "triggers.har").write_text(text[: text.rindex('"status": 200')])
        elif slug == "har-entry-out-of-order":  # the call's entry names its start twice: the first a minute late
            late = datetime.fromtimestamp(T0 + 60, UTC).isoformat().replace("+00:00", "Z")
            text = json.dumps(triggers, indent=2) + "\n"
            at = text.rindex('"startedDateTime"')
            (folder / "triggers.har").write_text(f'{text[:at]}"startedDateTime": "{late}",\n      {text[at:]}')
        else:
            write(folder / "triggers.har", triggers)


if __name__ == "__main__":
    main()
