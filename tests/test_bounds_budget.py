"""The capture reader's budget for response bytes held at once (capture_bodies): per connection and over the
capture, for JSON bodies and SSE events alike. A body or event that would pass it is dropped and named
(CW940 response-budget-exceeded); the others are still read, and every byte leaves the budget when its
response ends. The rule's fixtures (tests/rules/response-budget-exceeded/) show it on a real-size capture.
"""

from __future__ import annotations

import json

import pytest
from cancelwire.model import Anomaly, AnomalyName, MessageEvent, Vantage
from cancelwire.readers.capture import bodies as capture_bodies
from cancelwire.readers.capture.bodies import Bodies
from cancelwire.readers.capture.sessions import Exchange, Sessions
from cancelwire.readers.http.sse import SseParser


@pytest.fixture
def small_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(capture_bodies, "MAX_HELD_PER_CONNECTION", 1000)
    monkeypatch.setattr(capture_bodies, "MAX_HELD_BYTES", 1500)


def _exchange(stream: int, number: int, *, sse: bool = False) -> Exchange:
    ex = Exchange(stream, number, "POST", "/mcp", "s1", None, ("127.0.0.1", 40000 + stream), ("127.0.0.2", 8000))
    ex.status, ex.request_id, ex.request_method, ex.key = 200, number, "tools/call", "cap#s1"
    if sse:
        ex.sse = SseParser()
    else:
        ex.body = bytearray()
    return ex


def _result(req_id: int, size: int) -> bytes:
    head = f'{{"jsonrpc":"2.0","id":{req_id},"result":{{"text":"'.encode()
    return head + b"x" * (size - len(head) - 3) + b'"}}'


def _events(bodies: Bodies) -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = []
    for event in bodies.sessions.out:
        if isinstance(event, Anomaly):
            out.append((event.name, event.request_id))
        elif isinstance(event, MessageEvent):
            out.append(("message", event.message.id))
    return out


@pytest.mark.usefixtures("small_budget")
def test_json_bodies_within_budget_per_connection_and_overall() -> None:
    bodies = Bodies(Sessions("cap", Vantage.WIRE))
    a, b, c = _exchange(0, 1), _exchange(0, 2), _exchange(1, 3)
    d = _exchange(2, 4)
    body = {ex.number: _result(ex.number, 700) for ex in (a, b, c, d)}
    for ex in (a, b, c, d):
        bodies.response_data(ex, body[ex.number][:400])
    # a: 400 on tcp0; b would make tcp0 800 (fine); c 400 on tcp1 (1200 overall); d would pass 1500 overall
    assert (bodies.held, b.body is not None, c.body is not None, d.body) == (1200, True, True, None)
    bodies.response_data(a, body[1][400:])  # tcp0 would hold 800 + 300 > 1000: a is dropped
    assert a.body is None and bodies.held == 800
    for ex in (b, c):
        bodies.response_data(ex, body[ex.number][400:])
        bodies.response_body_end(ex)
    assert bodies.held == 0
    assert _events(bodies) == [
        (AnomalyName.CAPTURE_RESPONSE_BUDGET_EXCEEDED, 4),
        (AnomalyName.CAPTURE_RESPONSE_BUDGET_EXCEEDED, 1),
        ("message", 2),
        ("message", 3),
    ]
    texts = [e.detail for e in bodies.sessions.out if isinstance(e, Anomaly)]
    assert texts == [
        "tcp2/4: response body not read after 400 bytes: the responses held at once (other streams still open) "
        "would pass 0 MiB in the capture; its JSON-RPC messages are lost",
        "tcp0/1: response body not read after 700 bytes: the responses held at once (other streams still open) "
        "would pass 0 MiB on its connection; its JSON-RPC messages are lost",
    ]


@pytest.mark.usefixtures("small_budget")
def test_an_sse_event_over_budget_is_dropped_and_the_next_one_read() -> None:
    bodies = Bodies(Sessions("cap", Vantage.WIRE))
    first, second = _exchange(0, 1, sse=True), _exchange(0, 2, sse=True)
    bodies.response_data(first, b"data: " + _result(1, 700)[:600])  # an event still open: 606 held
    bodies.response_data(second, b"data: " + _result(2, 500)[:450])  # 1062 on tcp0: dropped
    assert bodies.held == 606 and second.sse is not None and second.sse.buffered == 0
    bodies.response_data(second, _result(2, 500)[450:] + b"\n\n")  # its end: no message, no second anomaly
    bodies.response_data(second, b"data: " + json.dumps({"jsonrpc": "2.0", "id": 9, "result": {}}).encode() + b"\n\n")
    bodies.response_data(first, _result(1, 700)[600:] + b"\n\n")
    bodies.partial(first)
    bodies.partial(second)
    assert bodies.held == 0
    assert _events(bodies) == [(AnomalyName.CAPTURE_RESPONSE_BUDGET_EXCEEDED, 2), ("message", 9), ("message", 1)]


@pytest.mark.usefixtures("small_budget")
def test_a_cut_body_leaves_the_budget() -> None:
    bodies = Bodies(Sessions("cap", Vantage.WIRE))
    ex = _exchange(0, 1)
    bodies.response_data(ex, _result(1, 900)[:800])
    bodies.cut_body(ex, "the server closed the connection")
    assert (bodies.held, ex.body) == (0, None)
    again = _exchange(0, 2)
    bodies.response_data(again, _result(2, 900))
    bodies.response_body_end(again)
    assert _events(bodies) == [("http.body-truncated", 1), ("message", 2)]
