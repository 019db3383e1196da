"""CW107's disconnect half (issue 18): under 2025-03-26 to 2025-11-25 a client that closes a call's
stream and POSTs its cancel (in either order, however far apart while the call is open) used the
revision's mechanism; one that closes it and POSTs no cancel before the call is judged did not.

Hand-built events of one Streamable HTTP session under 2025-11-25 (the Go SDK samples in
tests/test_gosdk_samples.py are the real cases: the cancel POSTed 0.15 to 0.4 ms after the close)."""

from __future__ import annotations

import json
from typing import Any

from cancelwire.model import (
    Anomaly,
    AnomalyName,
    Direction,
    MessageEvent,
    Origin,
    SessionStart,
    Transport,
    TransportEvent,
    TransportKind,
    Vantage,
)
from cancelwire.model.jsonrpc import classify_text
from cancelwire.rebuild.reconstruct import ReconstructOptions, Reconstructor

CALL = {"id": 2, "method": "tools/call", "params": {"name": "append_ledger", "arguments": {}}}
CANCEL = {"method": "notifications/cancelled", "params": {"requestId": 2, "reason": "context canceled"}}
PING = {"id": 3, "method": "ping"}
PONG = {"id": 3, "result": {}}

Step = tuple[float, str, str, Any]


def _anomalies(steps: list[Step], hold_seconds: float = 300.0) -> list[tuple[str, object, int | None, str]]:
    """(name, request id, frame, detail) of every anomaly; frame n+1 is step n."""
    events: list[Any] = [
        SessionStart(
            seq=0,
            ts=0.0,
            origin=Origin("h.pcapng", frame=1),
            session_key="s",
            transport=Transport.STREAMABLE_HTTP,
            vantage=Vantage.WIRE,
            input_format="pcap",
            revision="2025-11-25",
        )
    ]
    for n, (ts, what, stream, body) in enumerate(steps, start=1):
        origin = Origin("h.pcapng", frame=n + 1)
        if what == "close":
            events.append(TransportEvent(n, ts, origin, "s", body, stream))
            continue
        text = json.dumps({"jsonrpc": "2.0", **body})
        (message,) = classify_text(json.loads(text), text).messages
        events.append(MessageEvent(n, ts, origin, "s", Direction(what), message, stream=stream))
    reconstructor = Reconstructor("h.pcapng", "pcap", ReconstructOptions(hold_seconds=hold_seconds))
    return [
        (o.name.value, o.request_id, o.origin.frame, o.detail)
        for o in reconstructor.run(events)
        if isinstance(o, Anomaly)
    ]


def _close(ts: float, stream: str, kind: TransportKind) -> Step:
    return (ts, "close", stream, kind)


def test_a_cancel_posted_after_the_close_and_other_traffic_is_the_mechanism() -> None:
    """Close (frame 3), the server's end of the stream (4), another call answered (5, 6), then the
    cancel's POST (7): the client's next message was not the cancel, and the cancel still came."""
    steps: list[Step] = [
        (1.0, "c2s", "e2", CALL),
        _close(2.0, "e2", TransportKind.CLOSED_BY_CLIENT),
        _close(2.001, "e2", TransportKind.CLOSED_BY_SERVER),
        (2.002, "c2s", "e3", PING),
        (2.003, "s2c", "e3", PONG),
        (2.05, "c2s", "e4", CANCEL),
    ]
    assert _anomalies(steps) == []


def test_a_close_with_no_cancel_by_the_end_of_the_recording_is_a_mismatch() -> None:
    steps: list[Step] = [
        (1.0, "c2s", "e2", CALL),
        _close(2.0, "e2", TransportKind.CLOSED_BY_CLIENT),
        (2.002, "c2s", "e3", PING),
        (2.003, "s2c", "e3", PONG),
    ]
    assert _anomalies(steps) == [
        (
            AnomalyName.CANCEL_MECHANISM_MISMATCH.value,
            2,
            3,
            "the client closed the stream of id 2 before its reply and POSTed no notifications/cancelled for it "
            "before the recording ended; in 2025-11-25 a disconnect is not a cancel",
        )
    ]


def test_a_cancel_posted_after_the_hold_comes_too_late_to_name_the_close() -> None:
    """The call's stream ended (4) and its hold (10 s) ran out before the next event (5, at 20 s): the
    close is judged then, a mismatch at its frame; the cancel POSTed after it (7) names a finished call."""
    steps: list[Step] = [
        (1.0, "c2s", "e2", CALL),
        _close(2.0, "e2", TransportKind.CLOSED_BY_CLIENT),
        _close(2.001, "e2", TransportKind.CLOSED_BY_SERVER),
        (20.0, "c2s", "e3", PING),
        (20.001, "s2c", "e3", PONG),
        (20.002, "c2s", "e4", CANCEL),
    ]
    assert [a[:3] for a in _anomalies(steps, hold_seconds=10.0)] == [
        (AnomalyName.CANCEL_MECHANISM_MISMATCH.value, 2, 3),
        (AnomalyName.CANCEL_AFTER_COMPLETION.value, 2, 7),
    ]
    assert "POSTed no notifications/cancelled for it while the call was held" in _anomalies(steps, 10.0)[0][3]
