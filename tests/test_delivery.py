"""What a redirected, refused or unprocessed (HTTP/2 GOAWAY) POST delivered (`analyzer/readers/http/delivery.py`):
nothing, so its messages go on no timeline; exact verdicts on the real SDK's redirect sample, the hand-written
refusals (captures and HAR) and GOAWAY frames, and the order the held request messages keep."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from cancelwire.model import Anomaly, Direction, Message, MessageEvent, Side, Vantage
from cancelwire.model.jsonrpc import decode_text
from cancelwire.readers.capture.sessions import MAX_BACKLOG, Build, Exchange, Sessions
from cancelwire.readers.http.delivery import Delivery, answers, delivered, of_status
from cancelwire.reports.document import build
from cancelwire.run.pipeline import audit

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_captures" / "redirect"
FIXTURES = ROOT / "tests" / "rules"
NEEDS_TSHARK = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed")


def _report(path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.chdir(ROOT)
    return build(audit([str(path.relative_to(ROOT))]))


def _findings(report: dict[str, Any]) -> set[tuple[Any, ...]]:
    return {
        (f["rule_id"], f["severity"], f["request_id"], tuple(e.get("frame") or e.get("line") for e in f["evidence"]))
        for f in report["findings"]
    }


def _calls(report: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(c["request_id"], c["mechanism"], c["outcome"]) for c in report["cancellations"]]


# -- the samples -----------------------------------------------------------------------------------


@NEEDS_TSHARK
def test_sdk_mount_redirect_is_no_reused_id(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real SDK client follows Starlette's 307 from /mcp to /mcp/ and sends each POST again with the same id:
    the redirected POST delivered nothing, so the second is no duplicate in-flight id (CW303 before), the
    redirected initialize opens no second session with an unanswered initialize (CW108 before), and the cancel
    sent again at frame 94 is the one that cancels id 3 (its redirected POST's body, after the 307, was lost)."""
    report = _report(SAMPLES / "sdk-http-mount-redirect-cancel.pcapng", monkeypatch)
    assert _findings(report) == {
        ("CW101", "warning", 3, (94, 100)),
        ("CW216", "info", 1, (6,)),
        ("CW216", "info", None, (28, 50, 70, 92)),
    }
    assert _calls(report) == [(3, "notification", "late-result-violation")]
    assert len(report["sessions"]) == 1


@NEEDS_TSHARK
@pytest.mark.parametrize(
    ("path", "status"),
    [
        (SAMPLES / "handwritten-cancel-refused-404.pcapng", "404 Not Found"),
        (FIXTURES / "cancel-not-delivered" / "triggers-502.pcapng", "502 Bad Gateway"),
    ],
)
def test_refused_cancel_cancelled_nothing(path: Path, status: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cancel of id 2 (frame 20) got an HTTP error: the server never had it, so its progress and result
    after it are no CW102/CW101 (as before), and id 2 is no cancelled call."""
    report = _report(path, monkeypatch)
    assert _findings(report) == {("CW217", "warning", 2, (20,)), ("CW205", "info", None, (22,))}
    assert _calls(report) == []
    (cw205,) = [f for f in report["findings"] if f["rule_id"] == "CW205"]
    assert cw205["message"].endswith(f"tcp1/0: HTTP {status} to POST /mcp")


@NEEDS_TSHARK
def test_accepted_cancel_still_cancels(monkeypatch: pytest.MonkeyPatch) -> None:
    report = _report(FIXTURES / "cancel-not-delivered" / "clean-202.pcapng", monkeypatch)
    assert _findings(report) == {("CW101", "warning", 2, (20, 29)), ("CW102", "warning", 2, (20, 27))}
    assert _calls(report) == [(2, "notification", "late-result-violation")]


@NEEDS_TSHARK
def test_dead_session_404_leaves_no_unanswered_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real SDK server's 404 to a session it never issued, with a JSON-RPC error naming no request: the
    request was refused, not left unanswered (CW108 before)."""
    report = _report(FIXTURES / "http-error-status" / "triggers.pcapng", monkeypatch)
    assert _findings(report) == {("CW205", "info", 7, (6,))}


def test_har_refused_cancel(monkeypatch: pytest.MonkeyPatch) -> None:
    report = _report(FIXTURES / "cancel-not-delivered" / "triggers.har", monkeypatch)
    assert _findings(report) == {("CW217", "warning", 3, (339,)), ("CW205", "info", None, (339,))}
    assert _calls(report) == []


def test_har_redirect(monkeypatch: pytest.MonkeyPatch) -> None:
    report = _report(FIXTURES / "post-redirected" / "triggers.har", monkeypatch)
    assert _findings(report) == {("CW216", "info", 3, (257,))}


# -- HTTP/2 GOAWAY ---------------------------------------------------------------------------------------


@NEEDS_TSHARK
def test_goaway_unprocessed_streams_delivered_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """GOAWAY(last_stream=1) (frame 10) while stream 3 holds tools/call id 2 (8) and stream 5 its cancel (9):
    RFC 9113 6.8, never processed. The tools/call the client sends again on a second connection (18) is its
    only delivery (CW303 duplicate-in-flight-id at 18 before), the cancel cancelled nothing (CW217; before,
    it counted as a cancel the server got), and the unprocessed POSTs are said (CW218, once per session)."""
    report = _report(FIXTURES / "post-not-processed" / "triggers.pcapng", monkeypatch)
    assert _findings(report) == {("CW217", "warning", 2, (9,)), ("CW218", "info", 2, (8, 9))}
    assert _calls(report) == []
    (cw218,) = [f for f in report["findings"] if f["rule_id"] == "CW218"]
    assert cw218["message"].endswith(
        "tcp0/h2s3: the server's HTTP/2 GOAWAY says it never processed POST /mcp: tools/call (id 2) not delivered "
        "by it (a client may send it again on a new connection) (and 1 more like it)"
    )
    assert len(report["sessions"]) == 1


@NEEDS_TSHARK
def test_goaway_above_the_streams_keeps_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same up to a GOAWAY(last_stream=5) and no re-send: both streams may have been processed, so the
    cancel is one the server got (its call cancelled, outcome unknown) and nothing is said."""
    report = _report(FIXTURES / "post-not-processed" / "clean.pcapng", monkeypatch)
    assert _findings(report) == set()
    assert _calls(report) == [(2, "notification", "outcome-unverified")]


# -- 4xx/5xx with a JSON-RPC body ----------------------------------------------------------------------


def _har_error(tmp_path: Path, body: str, status: int) -> Path:
    """The redirect fixture's HAR with its entry 3 answered `status` with the JSON `body` and nothing after it."""
    har = json.loads((FIXTURES / "post-redirected" / "triggers.har").read_text())
    entry = har["log"]["entries"][3]
    entry["response"]["status"] = status
    entry["response"]["content"] = {"size": len(body), "mimeType": "application/json", "text": body}
    del har["log"]["entries"][4:]
    path = tmp_path / "error.har"
    path.write_text(json.dumps(har, indent=2))
    return path


def test_error_naming_the_request_is_its_reply(tmp_path: Path) -> None:
    """400 with a JSON-RPC error for id 3: the request reached the MCP layer and is answered."""
    body = '{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Invalid params"}}'
    result = audit([str(_har_error(tmp_path, body, 400))])
    assert sorted((f.rule_id, f.request_id) for f in result.findings) == [("CW205", 3)]
    assert result.sessions[0].requests == 3


def test_error_naming_no_request_refuses_it(tmp_path: Path) -> None:
    """404 with the SDK's id-null error: the request never reached a session (no CW108 for it)."""
    body = '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Session not found"}}'
    result = audit([str(_har_error(tmp_path, body, 404))])
    assert sorted((f.rule_id, f.request_id) for f in result.findings) == [("CW205", 3)]
    assert result.sessions[0].requests == 2


# -- the fact itself ---------------------------------------------------------------------------------


def _message(text: str) -> Message:
    decoded = decode_text(text.encode())
    assert decoded is not None
    return decoded.messages[0]


CALL = _message('{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x"}}')
CANCEL = _message('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}')


@pytest.mark.parametrize(
    ("status", "fate"),
    [(0, None), (100, None), (101, None), (200, Delivery.DELIVERED), (202, Delivery.DELIVERED)]
    + [(s, Delivery.REDIRECTED) for s in (301, 302, 303, 307, 308)]
    + [(s, Delivery.REFUSED) for s in (400, 404, 405, 413, 429, 500, 502, 503, 504)],
)
def test_status_classes(status: int, fate: Delivery | None) -> None:
    assert of_status(status) is fate


def test_only_an_answered_request_survives_a_refusal() -> None:
    assert delivered(None, CANCEL, False) and delivered(Delivery.DELIVERED, CANCEL, False)
    assert not delivered(Delivery.REDIRECTED, CALL, True)
    assert not delivered(Delivery.REFUSED, CALL, False)
    assert delivered(Delivery.REFUSED, CALL, True)
    assert not delivered(Delivery.REFUSED, CANCEL, True)
    assert not delivered(Delivery.UNPROCESSED, CALL, True) and not delivered(Delivery.UNPROCESSED, CANCEL, False)
    assert answers(b'{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"no"}}', 3)
    assert not answers(b'{"jsonrpc":"2.0","id":null,"error":{"code":-1,"message":"no"}}', 3)
    assert not answers(b"Session not found", 3)


# -- order -------------------------------------------------------------------------------------------


def _exchange(sessions: Sessions, number: int) -> Exchange:
    ex = Exchange(0, number, "POST", "/mcp", "s1", None, ("10.0.0.1", 5000), ("10.0.0.2", 80))
    sessions.start_request(ex)
    return ex


def _sent(sessions: Sessions, ex: Exchange, message: Message) -> list[tuple[Build, Message]]:
    origin = sessions.origin()
    build: Build = lambda seq, key: MessageEvent(seq, 1.0, origin, key, Direction.C2S, message, ex.id, None)  # noqa: E731
    return [(build, message)]


def test_held_request_keeps_its_place_and_seq() -> None:
    """A request whose answer is not known yet keeps its place: what came after it (a cancel POSTed on
    another connection, answered first) waits behind it, and `seq` follows the output's order."""
    sessions = Sessions("cap", Vantage.CLIENT)
    call, cancel = _exchange(sessions, 0), _exchange(sessions, 1)
    sessions.frame = 10
    sessions.request_body(call, _sent(sessions, call, CALL))
    sessions.frame = 11
    sessions.request_body(cancel, _sent(sessions, cancel, CANCEL))
    cancel.status = 202
    sessions.answered(cancel)
    assert [type(e).__name__ for e in sessions.out] == ["SessionStart"]
    call.status = 200
    sessions.answered(call)
    kinds = [(type(e).__name__, getattr(getattr(e, "message", None), "method", None)) for e in sessions.out]
    assert kinds == [
        ("SessionStart", None),
        ("MessageEvent", "tools/call"),
        ("MessageEvent", "notifications/cancelled"),
    ]
    seqs = [e.seq for e in sessions.out]
    assert seqs == sorted(seqs) and len(set(seqs)) == 3


def test_refused_cancel_in_its_place() -> None:
    sessions = Sessions("cap", Vantage.CLIENT)
    ex = _exchange(sessions, 0)
    sessions.request_body(ex, _sent(sessions, ex, CANCEL))
    ex.status = 404
    sessions.answered(ex)
    (start, anomaly) = sessions.out
    assert isinstance(anomaly, Anomaly)
    assert (anomaly.name, anomaly.request_id, anomaly.requester) == ("http.cancel-not-delivered", 3, Side.CLIENT)
    assert anomaly.seq > start.seq


def test_backlog_is_bounded() -> None:
    """An answer that does not come: past MAX_BACKLOG events behind it the request goes out as delivered."""
    sessions = Sessions("cap", Vantage.CLIENT)
    ex = _exchange(sessions, 0)
    sessions.request_body(ex, _sent(sessions, ex, CALL))
    for n in range(MAX_BACKLOG + 1):
        sessions.anomaly(None, "http.parse-error", f"filler {n}")
    assert ex.sent is None and ex.slot is None
    assert isinstance(sessions.out[1], MessageEvent)
    assert len(sessions.out) == MAX_BACKLOG + 3
