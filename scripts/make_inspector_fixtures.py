#!/usr/bin/env python3
"""Render MCP Inspector exports under tests/fixtures/inspector/ from real recordings.

    .venv/bin/python scripts/make_inspector_fixtures.py

The Inspector (@modelcontextprotocol/inspector 2.12.0, npm) is a web application whose exports are browser
downloads; driving it headless here was not done. These files follow the export shapes defined in its
source (the bundled clients/web of the npm package: the message tracking callbacks and the message log for
the protocol history, the fetch wrapper for the network log; `JSON.stringify(entries, null, 2)`), around
the messages of real recordings:

* protocol histories from cancelwire stdio transcripts, as the Inspector's client would have logged the
  same session: each request an entry (`direction` request, `origin` client or server), its reply folded in
  as `response` with `duration`, unless the client had given the request up first: then the entry carries
  `clientError` with the `duration` to the give-up (the cancel's time) and the late reply is an entry of
  its own, as the Inspector's log does for a reply with no pending request. Notifications are entries.
* network logs from mitmdump HARs of the SDK client and server over Streamable HTTP: each fetch an entry
  with `requestBody`, `responseStatus`, headers (lower-case names), `duration` to the response's headers,
  and `responseBody` the whole body; a request whose client left (`_error` in the HAR) gets status 200 with
  an event-stream content type and no `responseBody`: the fetch resolved on the headers the SDK server
  sends at once, and the client's abort cut the body read, which is what leaves it missing.

Entry ids are made up in the Inspector's forms (a UUID per message, `<ms>-<random>` per fetch).
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "fixtures" / "inspector"
TIMEOUT = "AbortError: This operation was aborted"


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{int(ts * 1000) % 1000:03d}Z"


def history(transcript: Path, seed: int) -> list[dict[str, Any]]:
    ids = uuid.UUID(int=seed)
    records = [json.loads(line) for line in transcript.read_text(encoding="utf-8").splitlines()[1:]]
    messages = [(r["ts"], r["dir"], json.loads(r["line"])) for r in records if r.get("dir") in ("c2s", "s2c")]
    entries: list[dict[str, Any]] = []
    pending: dict[tuple[str, Any], dict[str, Any]] = {}
    for number, (ts, direction, message) in enumerate(messages):
        origin = "client" if direction == "c2s" else "server"
        entry_id = str(uuid.UUID(int=ids.int + number))
        if "method" in message and "id" in message:
            entry = {"id": entry_id, "timestamp": iso(ts), "direction": "request", "origin": origin, "message": message}
            pending[(origin, message["id"])] = entry
            entries.append(entry)
        elif "method" in message:
            entries.append(
                {
                    "id": entry_id,
                    "timestamp": iso(ts),
                    "direction": "notification",
                    "origin": origin,
                    "message": message,
                }
            )
            target = message.get("params", {}).get("requestId")
            if message["method"] == "notifications/cancelled" and (origin, target) in pending:
                given_up = pending.pop((origin, target))
                given_up["clientError"] = TIMEOUT
                given_up["duration"] = round((ts - _ts(given_up)) * 1000)
        else:
            requester = "server" if origin == "client" else "client"
            entry = pending.pop((requester, message.get("id")), None)
            if entry is not None:
                entry["response"] = message
                entry["duration"] = round((ts - _ts(entry)) * 1000)
            else:
                entries.append(
                    {
                        "id": entry_id,
                        "timestamp": iso(ts),
                        "direction": "response",
                        "origin": origin,
                        "message": message,
                    }
                )
    return entries


def _ts(entry: dict[str, Any]) -> float:
    return datetime.fromisoformat(entry["timestamp"]).timestamp()


def network(har: Path) -> list[dict[str, Any]]:
    entries = json.loads(har.read_text(encoding="utf-8"))["log"]["entries"]
    entries.sort(key=lambda e: e["startedDateTime"])
    out: list[dict[str, Any]] = []
    for index, entry in enumerate(entries):
        start = datetime.fromisoformat(entry["startedDateTime"]).timestamp()
        request, response = entry["request"], entry["response"]
        headers = {h["name"].lower(): h["value"] for h in request.get("headers", [])}
        fetch: dict[str, Any] = {
            "id": f"{int(start * 1000)}-{index:09x}",
            "timestamp": iso(start),
            "method": request["method"],
            "url": request["url"],
            "requestHeaders": headers,
        }
        body = request.get("postData", {}).get("text")
        if body:
            fetch["requestBody"] = body
        timings = entry["timings"]
        to_headers = sum(max(0.0, timings.get(k, 0.0)) for k in ("blocked", "dns", "connect", "send", "wait"))
        left = bool(entry.get("_error")) or not response["status"]
        reply_headers = {h["name"].lower(): h["value"] for h in response.get("headers", [])}
        if left:
            reply_headers.setdefault("content-type", "text/event-stream")
        fetch |= {
            "responseStatus": 200 if left else response["status"],
            "responseStatusText": "OK" if left else response.get("statusText", ""),
            "responseHeaders": reply_headers,
        }
        text = response.get("content", {}).get("text")
        if text and not left:
            fetch["responseBody"] = text
        fetch["duration"] = round(to_headers)
        out.append(fetch)
    return out


def write(path: Path, entries: list[dict[str, Any]]) -> None:
    path.write_text(json.dumps(entries, indent=2, ensure_ascii=False), encoding="utf-8")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    stdio, har = ROOT / "sample_captures" / "stdio", ROOT / "sample_captures" / "har"
    write(
        OUT / "history-late-result-after-cancel.json",
        history(stdio / "handwritten-server-late-result-after-cancel.jsonl", 1),
    )
    write(OUT / "history-sdk-cancel-slow-tool.json", history(stdio / "sdk-cancel-slow-tool.jsonl", 2))
    write(OUT / "network-sdk-cancel-notification.json", network(har / "mitmdump-sdk-cancel-notification.har"))
    write(OUT / "network-sdk-cancel-close-stream.json", network(har / "mitmdump-sdk-cancel-close-stream.har"))


if __name__ == "__main__":
    main()
