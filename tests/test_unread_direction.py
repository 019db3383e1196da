"""A direction the reader no longer reads blinds the absence rules for the requests whose replies come on it
(issue 19). Before, after a TCP gap the peer's ACK covers, an unparsable response (an over-long header line), an
HTTP/2 flood or a malformed HTTP/2 frame, every later request on that connection was `request-never-answered
[exact]` and a cancelled call there `outcome-unverified` "no reply" [exact], although the replies are in the
capture; and on stdio a reply skipped as an over-long line left its cancelled call "no reply" [exact]. Fixtures:
tests/fixtures/silence/ (scripts/synth_silence.py fixtures)."""

from __future__ import annotations

import json
import shutil
from typing import Any

import pytest
from cancelwire.model import (
    Anomaly,
    AnomalyName,
    Direction,
    EntryKind,
    Message,
    MessageEvent,
    MessageKind,
    Origin,
    SessionStart,
    Side,
    Transport,
    TransportEvent,
    TransportKind,
    Vantage,
)
from cancelwire.rebuild.reconstruct import ReconstructOptions, Reconstructor
from fuzzing import ROOT, run_cli

NEEDS_TSHARK = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed")
FIXTURES = "tests/fixtures/silence"
NOT_JUDGED = (
    "a request's response was recorded but could not be read (its other requests are judged), so not judged: "
    "request-never-answered, stream-left-open-after-abandon, capture-ended-with-stream-open"
)
UNREAD = (
    3,
    "outcome-unverified",
    "inferred",
    "a response was recorded but could not be read, 'export' has no annotations, and no later read checked what it did",
)
READ = (3, "late-result-violation", "inferred", "the reply left after the cancel reached the receiver")
STILL_SILENT = ("request-never-answered", 4, "exact")


def _audit(name: str) -> dict[str, Any]:
    run = run_cli(["audit", str(ROOT / FIXTURES / name), "--format", "json", "--fail-on", "never"])
    assert run.status == 0, run
    report: dict[str, Any] = json.loads(run.stdout)
    return report


def _found(report: dict[str, Any]) -> list[tuple[str, Any, str]]:
    return [(f["rule"], f["request_id"], f["certainty"]) for f in report["findings"]]


def _calls(report: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(c["request_id"], c["outcome"], c["certainty"], c["explanation"]) for c in report["cancellations"]]


def _notes(report: dict[str, Any]) -> list[str]:
    return [note.split(": ", 1)[1] for note in report["unjudged"] if "could not be read" in note]


@NEEDS_TSHARK
@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("h1-gap.pcapng", ("http-unreadable", None, "exact")),
        ("h1-long-line.pcapng", ("http-unreadable", None, "exact")),
        ("h2-flood.pcapng", ("http2-frame-flood", None, "exact")),
        ("h2-bad-frame.pcapng", ("http2-unreadable", None, "exact")),
    ],
)
def test_requests_answered_on_a_direction_no_longer_read_are_not_judged_silent(
    name: str, why: tuple[str, None, str]
) -> None:
    """id 2 (answered after the break) and id 3 (cancelled, answered after the break, later on the same
    connection) are not judged silent; id 4, on a connection still read, still is."""
    report = _audit(name)
    assert sorted(_found(report), key=str) == sorted([STILL_SILENT, why], key=str)
    assert _calls(report) == [UNREAD]
    assert _notes(report) == [NOT_JUDGED]


@NEEDS_TSHARK
@pytest.mark.parametrize("name", ["h1-gap-none.pcapng", "h2-flood-none.pcapng"])
def test_the_same_replies_read_are_judged(name: str) -> None:
    """The reverse: nothing lost, no flood; id 2 answered, id 3's late reply read, id 4 silent."""
    report = _audit(name)
    assert _found(report) == [("response-after-cancel", 3, "inferred"), STILL_SILENT]
    assert _calls(report) == [READ]
    assert _notes(report) == []


@NEEDS_TSHARK
def test_an_http_sse_session_whose_get_stream_is_not_read_judges_none_of_its_replies_absent() -> None:
    """HTTP+SSE: every reply comes on the GET stream; after its gap, id 2 (open) and id 3 (sent later on
    another connection, cancelled) are not judged silent. The reverse, nothing lost: the late reply is read."""
    report = _audit("legacy-gap.pcapng")
    assert _found(report) == [("http-unreadable", None, "exact"), ("sse-event-cut-off", None, "exact")]
    assert _calls(report) == [UNREAD]
    assert _notes(report) == [NOT_JUDGED.replace(" stream-left-open-after-abandon,", "")]  # Streamable HTTP only
    read = _audit("legacy-gap-none.pcapng")
    assert _found(read) == [("response-after-cancel", 3, "inferred")]
    assert _calls(read) == [READ]


def test_a_reply_skipped_as_an_over_long_line_leaves_its_call_unverified_inferred() -> None:
    """stdio: the reply to the cancelled id 2 is a 17 MiB line (skipped); id 3, sent after it, is still
    judged never answered [exact]."""
    report = _audit("stdio-long-line.jsonl.gz")
    assert _found(report) == [("request-never-answered", 3, "exact"), ("line-too-long", None, "exact")]
    assert _calls(report) == [(2, *UNREAD[1:])]
    assert _notes(report) == [
        "a request's response was recorded but could not be read (its other requests are judged), so not judged: "
        "request-never-answered"
    ]  # the rules of HTTP streams are not listed: stdio has none
    read = _audit("stdio-long-line-none.jsonl.gz")
    assert _found(read) == [("response-after-cancel", 2, "inferred"), ("request-never-answered", 3, "exact")]
    assert _calls(read) == [(2, *READ[1:])]


# -- reconstruction: what each kind of marker blinds ---------------------------------------------------------


def _request(seq: int, sender: Side, request_id: int, stream: str | None) -> MessageEvent:
    direction = Direction.C2S if sender is Side.CLIENT else Direction.S2C
    message = Message(MessageKind.REQUEST, request_id, "tools/call", {"name": "x"}, "{}")
    return MessageEvent(seq, float(seq), Origin("cap", frame=seq), "s", direction, message, stream)


def _unread(events: list[Any]) -> dict[tuple[Side, int], frozenset[EntryKind]]:
    start = SessionStart(0, 0.0, Origin("cap"), "s", Transport.STREAMABLE_HTTP, Vantage.WIRE, "pcap")
    rebuild = Reconstructor("cap", "pcap", ReconstructOptions())
    timelines = list(rebuild.run([start, *events]))
    return {
        (t.requester, t.request_id): t.unrecorded
        for t in timelines
        if hasattr(t, "request_id") and t.reply_unread and isinstance(t.request_id, int)
    }


def test_each_marker_blinds_the_requests_whose_replies_come_where_it_says() -> None:
    replies = frozenset({EntryKind.RESULT, EntryKind.ERROR_RESULT})
    server_side = replies | {EntryKind.STREAM_CLOSED_BY_SERVER, EntryKind.STREAM_RESET_BY_SERVER}
    origin = Origin("cap", frame=10)
    events: list[Any] = [
        _request(1, Side.CLIENT, 1, "tcp0/0"),
        _request(2, Side.CLIENT, 2, "tcp1/0"),
        _request(3, Side.SERVER, 7, "tcp1/1"),
        TransportEvent(4, 4.0, origin, "s", TransportKind.REPLIES_UNREAD, "tcp0/0", "gap"),
        Anomaly(5, 5.0, origin, "s", AnomalyName.CAPTURE_TCP_GAP, "c2s", requester=Side.SERVER, reply_unread=True),
        _request(6, Side.SERVER, 8, "tcp1/1"),  # after the marker: judged as usual
    ]
    assert _unread(events) == {(Side.CLIENT, 1): server_side, (Side.SERVER, 7): replies}
    get_stream = TransportEvent(4, 4.0, origin, "s", TransportKind.REPLIES_UNREAD, None, "GET stream")
    assert _unread([*events[:3], get_stream]) == {(Side.CLIENT, 1): server_side, (Side.CLIENT, 2): server_side}
    line = Anomaly(4, 4.0, origin, "s", AnomalyName.INPUT_LINE_TOO_LONG, "line", reply_unread=True)
    assert _unread([*events[:3], line]) == {
        (Side.CLIENT, 1): replies,
        (Side.CLIENT, 2): replies,
        (Side.SERVER, 7): replies,
    }
