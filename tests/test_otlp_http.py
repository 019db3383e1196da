"""`--otlp-endpoint URL`: the traces of `--format otlp` POSTed over OTLP/HTTP to loopback receivers that decode
them with the official classes (`ExportTraceServiceRequest`); a collector that refuses, is busy, never answers
or is not there ends the run with exit 2, naming the URL and what it said, and the report files are written.

Every receiver listens on 127.0.0.1 on a port of the system's choosing; nothing waits on a clock but the one
test whose collector never answers, and it asserts the error, not the time it took."""

from __future__ import annotations

import http.server
import json
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cancelwire.cli.main import main
from cancelwire.reports import otlp_http
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from test_otlp import CAPTURE, SESSION_ID, parsed

ROOT = Path(__file__).resolve().parents[1]
Reply = tuple[int, dict[str, str], bytes]
"""What a receiver answers: status, headers, body."""


class Receiver:
    """A loopback OTLP/HTTP receiver answering each POST with the next of its REPLIES (the last one again)."""

    def __init__(self, replies: list[Reply], tls: ssl.SSLContext | None = None) -> None:
        self.replies = replies
        self.seen: list[tuple[str, dict[str, str], bytes]] = []
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                status, headers, answer = receiver.replies[min(len(receiver.seen), len(receiver.replies)) - 1]
                self.send_response(status)
                for name, value in {"Content-Length": str(len(answer)), **headers}.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if tls is not None:  # the handshake runs in the handler's thread, on its first read
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True, do_handshake_on_connect=False)
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


OK: Reply = (200, {"Content-Type": "application/x-protobuf"}, ExportTraceServiceResponse().SerializeToString())


def _audit(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    status = main(["audit", CAPTURE, "-q", *args])
    return status, capsys.readouterr().err


@pytest.fixture(autouse=True)
def _at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def _names(request: ExportTraceServiceRequest) -> list[str]:
    return [span.name for r in request.resource_spans for s in r.scope_spans for span in s.spans]


def test_the_traces_reach_the_collector_as_protobuf(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    written = tmp_path / "traces.json"
    with Receiver([OK]) as receiver:
        status, err = _audit(
            capsys,
            "--report",
            f"otlp={written}",
            "--otlp-endpoint",
            receiver.url,
            "--otlp-header",
            "x-api-key=s3cret",
        )
    assert status == 0, err  # the capture's findings are warnings: the exit status means what it meant
    ((path, headers, body),) = receiver.seen
    assert path == "/v1/traces"
    assert headers["content-type"] == "application/x-protobuf" and headers["x-api-key"] == "s3cret"
    request = ExportTraceServiceRequest.FromString(body)
    assert _names(request) == ["mcp session 127.0.0.1:18102", "initialize", "tools/list", "tools/call slow_write"]
    call = request.resource_spans[0].scope_spans[0].spans[3]
    attributes = {a.key: a.value.string_value for a in call.attributes}
    assert attributes["mcp.session.id"] == SESSION_ID and attributes["error.type"] == "-32800"
    assert [e.name for e in call.events] == ["cancelwire.cancel", "cancelwire.finding"]
    # the same spans, ids and all, as the report file holds
    from_file = parsed(json.loads(written.read_text()))
    assert list(request.resource_spans) == list(from_file.resource_spans)
    assert err.endswith(f"cancelwire: {receiver.url}/v1/traces: sent 4 span(s) in 1 request(s)\n")


def test_json_as_the_file_writes_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    written = tmp_path / "traces.json"
    with Receiver([(200, {}, b"{}")]) as receiver:
        status, err = _audit(
            capsys,
            "--report",
            f"otlp={written}",
            "--otlp-endpoint",
            receiver.url + "/otlp/",
            "--otlp-protocol",
            "http/json",
        )
    assert status == 0, err
    ((path, headers, body),) = receiver.seen
    assert (path, headers["content-type"]) == ("/otlp/v1/traces", "application/json")
    assert json.loads(body) == json.loads(written.read_text())


def test_a_refusal_is_an_error_and_the_reports_are_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hostile = b"\x1b]0;owned\x07bad request\n::error::forged" + b"x" * 500
    written = tmp_path / "report.json"
    with Receiver([(400, {"Content-Type": "text/plain"}, hostile)]) as receiver:
        status, err = _audit(capsys, "--format", "json", "-o", str(written), "--otlp-endpoint", receiver.url)
    assert status == 2
    assert len(receiver.seen) == 1  # 400 is not retried
    (line,) = [line for line in err.splitlines() if "error" in line]
    assert line.startswith(f"cancelwire: error: {receiver.url}/v1/traces: the collector answered 400 Bad Request: ")
    assert "\\x1b]0;owned\\x07bad request\\n::error::forged" in line and "\x1b" not in err
    assert line.endswith("x…") and len(line) < 400  # the body's first 200 characters
    assert json.loads(written.read_text())["summary"]  # the report file is in place


def test_busy_then_accepted(capsys: pytest.CaptureFixture[str]) -> None:
    busy: Reply = (503, {"Retry-After": "0"}, b"")
    with Receiver([busy, busy, OK]) as receiver:
        status, err = _audit(capsys, "--otlp-endpoint", receiver.url)
    assert status == 0, err
    bodies = [body for _, _, body in receiver.seen]
    assert len(bodies) == 3 and bodies[0] == bodies[1] == bodies[2]  # the same request, retried


def _document(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> dict[str, Any]:
    out = tmp_path / "t.json"
    assert main(["audit", CAPTURE, "-q", "--report", f"otlp={out}"]) == 0
    capsys.readouterr()
    document: dict[str, Any] = json.loads(out.read_text())
    return document


def test_retries_wait_as_told_within_the_timeout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document = _document(capsys, tmp_path)
    waits: list[float] = []
    replies: list[Reply] = [(429, {}, b""), (502, {}, b""), (504, {"Retry-After": "2"}, b""), OK]
    with Receiver(replies) as receiver:
        sent = otlp_http.send(
            document, otlp_http.endpoint(receiver.url), timeout=60, sleep=waits.append, jitter=lambda: 0.5
        )
    assert (sent.spans, sent.requests, sent.rejected) == (4, 1, 0)
    assert waits == [1.0, 2.0, 2.0]  # backoff 1, 2 (the jitter's middle), then the answer's Retry-After
    # a Retry-After past the timeout ends the send at once, without waiting for it
    with (
        Receiver([(503, {"Retry-After": "3600"}, b"busy")]) as receiver,
        pytest.raises(otlp_http.OtlpSendError) as caught,
    ):
        otlp_http.send(document, otlp_http.endpoint(receiver.url), timeout=60, sleep=waits.append)
    assert str(caught.value) == (
        f"{receiver.url}/v1/traces: the collector answered 503 Service Unavailable, 1 time(s); "
        "the next try was due in 3600 s, past the timeout: busy"
    )
    assert waits == [1.0, 2.0, 2.0]
    # and a collector that stays busy is given up after MAX_ATTEMPTS
    with Receiver([(503, {"Retry-After": "0"}, b"")]) as receiver:
        with pytest.raises(otlp_http.OtlpSendError, match=r"answered 503 Service Unavailable, 5 times \(no body\)$"):
            otlp_http.send(document, otlp_http.endpoint(receiver.url), sleep=waits.append)
        assert len(receiver.seen) == otlp_http.MAX_ATTEMPTS


def test_a_failure_after_some_requests_says_what_was_taken(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(otlp_http, "MAX_SPANS", 3)
    with Receiver([OK, (413, {}, b"too large")]) as receiver:
        status, err = _audit(capsys, "--otlp-endpoint", receiver.url)
    assert status == 2
    assert [
        len(ExportTraceServiceRequest.FromString(body).resource_spans[0].scope_spans[0].spans)
        for *_, body in receiver.seen
    ] == [3, 1]
    assert "answered 413 Request Entity Too Large: too large (after 3 span(s) were taken)" in err


def test_a_partial_success_is_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    answer = ExportTraceServiceResponse()
    answer.partial_success.rejected_spans = 2
    answer.partial_success.error_message = "too old\x1b[2J"
    with Receiver([(200, {}, answer.SerializeToString())]) as receiver:
        status, err = _audit(capsys, "--otlp-endpoint", receiver.url)
    assert status == 0
    assert err.endswith("sent 4 span(s) in 1 request(s); it rejected 2: too old\\x1b[2J\n")


@pytest.fixture
def silent() -> Iterator[str]:
    """A collector that accepts the connection, reads nothing and never answers, until the test is over."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    done = threading.Event()

    def hold() -> None:
        listener.settimeout(0.1)
        while not done.is_set():
            try:
                held.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    done.set()
    thread.join()
    for conn in held:
        conn.close()
    listener.close()


def test_a_collector_that_never_answers_costs_the_timeout(silent: str, capsys: pytest.CaptureFixture[str]) -> None:
    status, err = _audit(capsys, "--otlp-endpoint", silent, "--otlp-timeout", "0.5")
    assert status == 2
    assert f"cancelwire: error: {silent}/v1/traces: no answer within the 0.5 s timeout" in err


def test_nothing_listening(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
    status, err = _audit(capsys, "--otlp-endpoint", f"http://127.0.0.1:{port}")
    assert status == 2
    assert f"cancelwire: error: http://127.0.0.1:{port}/v1/traces: cannot send the traces: " in err
    assert "Connection refused" in err


@pytest.mark.parametrize(
    ("url", "traces_url"),
    [
        ("http://localhost:4318", "http://localhost:4318/v1/traces"),
        ("http://localhost:4318/", "http://localhost:4318/v1/traces"),
        ("https://collector.example/otlp", "https://collector.example/otlp/v1/traces"),
        ("https://collector.example:443/otlp/v1/traces", "https://collector.example/otlp/v1/traces"),
        ("http://[::1]:4318/v1/traces/", "http://[::1]:4318/v1/traces/"),
        ("http://h/p?tenant=a", "http://h/p/v1/traces?tenant=a"),
    ],
)
def test_the_endpoint_is_a_base_url(url: str, traces_url: str) -> None:
    assert otlp_http.endpoint(url).traces_url == traces_url


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--otlp-endpoint", "localhost:4318"], "needs an http:// or https:// URL"),
        (["--otlp-endpoint", "http://user:pw@h"], "no user or password"),
        (["--otlp-endpoint", "http://h:99999"], "not a port"),
        (["--otlp-endpoint", "http://h", "--otlp-header", "bad name=1"], "NAME an HTTP header name"),
        (["--otlp-endpoint", "http://h", "--otlp-header", "Content-Type=x"], "set by cancelwire itself"),
        (["--otlp-endpoint", "http://h", "--otlp-timeout", "0"], "more than 0"),
        (["--otlp-timeout", "1"], "--otlp-timeout needs --otlp-endpoint URL"),
    ],
)
def test_bad_options_are_refused_before_the_audit(
    args: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        status = main(["audit", "nothing-here.jsonl", *args])
    except SystemExit as exc:  # argparse
        status = int(str(exc.code))
    assert status == 2
    assert said in capsys.readouterr().err


def test_batches_keep_order_and_bound_spans() -> None:
    def resource(name: str, spans: int) -> dict[str, Any]:
        found = [{"name": f"{name}{n}"} for n in range(spans)]
        return {"resource": {"name": name}, "scopeSpans": [{"scope": {}, "spans": found}]}

    document = {"resourceSpans": [resource("a", 3), resource("b", 5), resource("c", 1)]}
    shape: Callable[[dict[str, Any]], list[list[str]]] = lambda batch: [  # noqa: E731
        [s["name"] for s in r["scopeSpans"][0]["spans"]] for r in batch["resourceSpans"]
    ]
    assert [(shape(batch), n) for batch, n in otlp_http.batches(document, limit=4)] == [
        ([["a0", "a1", "a2"]], 3),
        ([["b0", "b1", "b2", "b3"]], 4),
        ([["b4"], ["c0"]], 2),
    ]
