"""What the capture reader extracts equals what the peers really sent, message for message.

Each sample capture has the server's own log beside it (`<name>.server.jsonl`, written by the
server process: see sample_captures/http/README.md and sample_captures/http2/README.md). Per
direction, the JSON-RPC messages we rebuild from the packets must be exactly the messages in that
log, in order.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cancelwire.model import Direction, MessageEvent
from cancelwire.model.jsonrpc import classify
from cancelwire.readers import InputSource, ReadOptions
from cancelwire.readers.capture.reader import READER

SAMPLES = Path(__file__).resolve().parent.parent / "sample_captures"
FOLDERS = (SAMPLES / "http", SAMPLES / "http2")
Key = tuple[str, str, Any, Any, str]


def _key(direction: str, message: Any) -> Key:
    (parsed,) = classify(message, "").messages
    return (direction, parsed.kind.value, parsed.id, parsed.method, json.dumps(parsed.payload, sort_keys=True))


def _from_capture(name: str) -> list[Key]:
    path = SAMPLES / f"{name}.pcapng"
    keys = path.with_suffix(".keys")
    options = ReadOptions(keylog=keys if keys.exists() else None)
    return [
        _key("c2s" if e.direction is Direction.C2S else "s2c", json.loads(_full(e)))
        for e in READER.read(InputSource(str(path), path), options)
        if isinstance(e, MessageEvent)
    ]


def _full(event: MessageEvent) -> str:
    m = event.message
    body: dict[str, Any] = {"jsonrpc": "2.0"}
    if m.method is not None:
        body["method"] = m.method
        body["params"] = dict(m.payload)
        if m.id is not None:
            body["id"] = m.id
        return json.dumps(body)
    body["id"] = m.id
    body["result" if m.kind.value == "result" else "error"] = dict(m.payload)
    return json.dumps(body)


def _from_log(name: str) -> list[Key]:
    keys = []
    for line in (SAMPLES / f"{name}.server.jsonl").read_text().splitlines():
        entry = json.loads(line)
        if "send_error" in entry:
            continue  # the write failed (EPIPE): never on the wire
        message = entry["message"]
        if "method" in message and "params" not in message:
            message = {**message, "params": {}}  # the reader gives absent params as {}
        keys.append(_key("c2s" if entry["dir"] == "recv" else "s2c", message))
    return keys


def _per_direction(keys: list[Key], direction: str) -> list[Key]:
    return [k for k in keys if k[0] == direction]


CAPTURES = sorted(
    f"{folder.name}/{p.name.removesuffix('.server.jsonl')}" for folder in FOLDERS for p in folder.glob("*.server.jsonl")
)
STOPPED_READING = {"http/http-client-stops-reading", "http2/h2c-client-stops-reading"}


@pytest.mark.parametrize("name", CAPTURES)
def test_extracted_messages_equal_the_server_log(name: str) -> None:
    wire, log = _from_capture(name), _from_log(name)
    assert _per_direction(wire, "c2s") == _per_direction(log, "c2s")
    if name in STOPPED_READING:
        # the server handed 200+ progress notifications to its HTTP server, but the client stopped reading:
        # only the first ones reached the wire (flow control), in order
        sent = _per_direction(log, "s2c")
        on_wire = _per_direction(wire, "s2c")
        assert 0 < len(on_wire) < len(sent)
        assert on_wire == sent[: len(on_wire)]
    else:
        assert _per_direction(wire, "s2c") == _per_direction(log, "s2c")
