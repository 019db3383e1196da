"""A response a capture holds but could not read (dropped over the response budget, over 16 MiB, or cut) still
proves a response was there: the request it answers is not judged as silent. Before, the CW940 fixture's
tools/call id 2 was CW108 "got no reply and no cancel ... [exact]", and the snaplen fixture's cancelled
tools/call id 3 was outcome-unverified "no reply, ..." [exact]."""

from __future__ import annotations

import json
import shutil
from typing import Any

import pytest
from cancelwire.model import Anomaly, MessageEvent, Side, Vantage
from cancelwire.readers.capture import bodies as capture_bodies
from cancelwire.readers.capture.bodies import Bodies
from cancelwire.readers.capture.sessions import Exchange, Sessions
from cancelwire.readers.http.sse import SseParser
from fuzzing import ROOT, run_cli

NEEDS_TSHARK = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed")

NOT_JUDGED = (
    "a request's response was recorded but could not be read (its other requests are judged), so not judged: "
    "request-never-answered, capture-ended-with-stream-open"
)


def _audit(name: str) -> dict[str, Any]:
    run = run_cli(["audit", str(ROOT / name), "--format", "json", "--fail-on", "never"])
    assert run.status == 0, run
    report: dict[str, Any] = json.loads(run.stdout)
    return report


def _unread_notes(report: dict[str, Any]) -> list[str]:
    return [note.split(": ", 1)[1] for note in report["unjudged"] if "could not be read" in note]


@NEEDS_TSHARK
def test_a_body_dropped_over_the_budget_is_not_judged_never_answered() -> None:
    report = _audit("tests/rules/response-budget-exceeded/triggers.pcapng.gz")
    found = [(f["rule"], f["request_id"], f["certainty"]) for f in report["findings"]]
    assert found == [("response-budget-exceeded", 2, "exact")]
    assert _unread_notes(report) == [NOT_JUDGED]


@NEEDS_TSHARK
def test_a_cancelled_call_whose_reply_was_cut_is_unverified_and_inferred() -> None:
    report = _audit("tests/corpus/pcap/snaplen-cut-mid-json.pcapng")
    found = [(f["rule"], f["request_id"]) for f in report["findings"]]
    assert found == [("http-unreadable", None), ("capture-snaplen-truncated", None), ("sse-event-cut-off", 3)]
    calls = [(c["request_id"], c["outcome"], c["certainty"], c["explanation"]) for c in report["cancellations"]]
    assert calls == [
        (
            3,
            "outcome-unverified",
            "inferred",
            "a response was recorded but could not be read, 'slow_write' may have side effects, "
            "and no later read checked what it did",
        )
    ]
    # the snaplen cut is a gap: the server→client direction is not read after it, its stream's end neither
    assert _unread_notes(report) == [
        NOT_JUDGED.replace("never-answered, ", "never-answered, stream-left-open-after-abandon, ")
    ]


def _exchange(number: int, *, sse: bool = False) -> Exchange:
    ex = Exchange(0, number, "POST", "/mcp", "s1", None, ("127.0.0.1", 40000), ("127.0.0.2", 8000))
    ex.status, ex.request_id, ex.request_method, ex.key = 200, number, "tools/call", "cap#s1"
    if sse:
        ex.sse = SseParser()
    else:
        ex.body = bytearray()
    return ex


def test_each_response_the_reader_drops_or_cuts_marks_its_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(capture_bodies, "MAX_BODY_BYTES", 100)
    bodies = Bodies(Sessions("cap", Vantage.WIRE))
    reply = b'{"jsonrpc":"2.0","id":%d,"result":{"text":"%s"}}'
    too_large, cut, whole_cut = _exchange(1), _exchange(2), _exchange(3)
    bodies.response_data(too_large, reply % (1, b"x" * 200))
    bodies.response_body_end(too_large)
    bodies.response_data(cut, (reply % (2, b"x"))[:20])
    bodies.cut_body(cut, "the server closed the connection")
    bodies.response_data(whole_cut, reply % (3, b"x"))
    bodies.cut_body(whole_cut, "the server closed the connection")  # whole JSON after all: read, not unread
    cut_event, notification = _exchange(4, sse=True), _exchange(5, sse=True)
    bodies.response_data(cut_event, b"data: " + (reply % (4, b"x"))[:20])
    bodies.partial(cut_event)
    progress = b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":2}}'
    bodies.response_data(notification, b"data: " + progress + b"\n")  # no blank line: cut, but readable
    bodies.partial(notification)
    found = [
        (e.name, e.request_id, e.requester, e.reply_unread) if isinstance(e, Anomaly) else ("message", e.message.id)
        for e in bodies.sessions.out
        if isinstance(e, Anomaly | MessageEvent)
    ]
    assert found == [
        ("http.body-too-large", 1, Side.CLIENT, True),
        ("http.body-truncated", 2, Side.CLIENT, True),
        ("http.body-truncated", 3, None, False),
        ("message", 3),
        ("sse.partial-event", 4, Side.CLIENT, True),
        ("sse.partial-event", None, None, False),
    ]
