"""`--otlp-endpoint URL`: the traces of `--format otlp` sent to a collector over OTLP/HTTP.

Where: URL is a base endpoint, as `OTEL_EXPORTER_OTLP_ENDPOINT` and the Collector's `otlphttp` `endpoint` are
(OTLP exporter specification, "Endpoint URLs for OTLP/HTTP"): `v1/traces` is appended to its path
(`http://localhost:4318` -> `http://localhost:4318/v1/traces`, `https://host/otlp/` -> `https://host/otlp/v1/traces`),
and a URL whose path already ends in `/v1/traces` is used as given. Only `http` and `https`; no proxy is used.
An `https` collector's certificate is verified with the system's roots (or `SSL_CERT_FILE`), or with the CA
certificates of `--otlp-certificate` alone (a private CA, as `OTEL_EXPORTER_OTLP_CERTIFICATE` does), and
`--otlp-client-certificate`/`--otlp-client-key` present a client certificate (mutual TLS): `tls_context`.

What: `http/protobuf` (the default, what collectors expect): an `ExportTraceServiceRequest` of the official
`opentelemetry-proto` classes, `Content-Type: application/x-protobuf` (the extra `cancelwire[otlp]`);
`http/json`: the OTLP/JSON of `--format otlp`, `application/json`. The spans go in requests of at most
`MAX_SPANS` spans, in order, so a large audit does not make one body a collector refuses as too large.

How long: each request, with its retries, is bounded by the timeout (`--otlp-timeout`, 10 s as the
specification's default): a watchdog shuts the socket when it is spent, so a collector that accepts and never
answers, or answers a byte at a time, costs no more. The answers 429, 502, 503 and 504 are retried (the
specification's retryable codes): after the answer's `Retry-After` (seconds or an HTTP date) when it says one,
else after 1, 2, 4 ... s, each with a random jitter of up to half either way (so many CI jobs refused at once
do not come back at once), never past the timeout (a `Retry-After` beyond it ends the send at once). Any other
answer than 2xx, a refused connection or the timeout ends the send with an `OtlpSendError` naming the URL and
the status, with the start of the body made inert (a collector's answer is hostile text like any recording's).
"""

from __future__ import annotations

import base64
import contextlib
import email.utils
import http.client
import json
import math
import random
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..errors import CancelwireError
from ..support import inert
from ..support.files import read_regular

DEFAULT_TIMEOUT = 10.0
"""Seconds a request may take with its retries (the OTLP exporter specification's default)."""
MAX_SPANS = 1000
"""Spans per request."""
MAX_ANSWER_BYTES = 64 * 1024
"""The most of an answer's body that is read."""
SHOWN_CHARS = 200
"""The most of an answer's body an error shows."""
RETRYABLE = frozenset({429, 502, 503, 504})
MAX_ATTEMPTS = 5
"""Tries of one request, retries included (each within the timeout)."""
PROTOCOLS = {"http/protobuf": "application/x-protobuf", "http/json": "application/json"}
TRACES_PATH = "v1/traces"
MAX_PEM_BYTES = 1 << 20
"""The largest certificate or key file read (a CA bundle of a few hundred certificates is far less)."""
_OWN_HEADERS = frozenset({"content-type", "content-length", "host", "connection", "transfer-encoding"})
_TOKEN = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


class OtlpSendError(CancelwireError):
    """The traces could not be delivered (exit 2); the reports written to files stay written."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where the traces are POSTed."""

    url: str
    """The URL as the user gave it (for messages)."""
    https: bool
    host: str
    port: int
    path: str
    """Path (and query) of the traces URL."""

    @property
    def traces_url(self) -> str:
        return f"{'https' if self.https else 'http'}://{_netloc(self.host, self.port, self.https)}{self.path}"


@dataclass(frozen=True, slots=True)
class Sent:
    """What a send delivered."""

    spans: int
    requests: int
    rejected: int
    """Spans a collector said it rejected (a partial success)."""
    said: str
    """The collector's message with a partial success, inert; empty when none."""


@dataclass(frozen=True, slots=True)
class _Channel:
    """How each request goes: where, as what, with which headers and TLS settings, within how long."""

    target: Endpoint
    protocol: str
    headers: tuple[tuple[str, str], ...]
    timeout: float
    tls: ssl.SSLContext | None


def endpoint(url: str) -> Endpoint:
    """URL as a base endpoint (`v1/traces` appended unless its path ends with it); ValueError when it is not an
    http(s) URL with a host."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"needs an http:// or https:// URL, not {url!r}")
    if not parts.hostname or parts.username is not None or parts.password is not None:
        raise ValueError(f"needs a host and no user or password in the URL: {url!r}")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise ValueError(f"not a port in {url!r}") from None
    path = parts.path
    if not path.rstrip("/").endswith("/" + TRACES_PATH):
        path = path + ("" if path.endswith("/") else "/") + TRACES_PATH
    query = f"?{parts.query}" if parts.query else ""
    if any(ord(c) < 0x21 or ord(c) == 0x7F for c in path + query):
        raise ValueError(f"the URL holds spaces or control characters: {url!r}")
    return Endpoint(url, parts.scheme == "https", parts.hostname, port, path + query)


def header(text: str) -> tuple[str, str]:
    """`--otlp-header NAME=VALUE`; ValueError when NAME is no HTTP token, is one cancelwire sets itself, or VALUE
    holds a control character."""
    name, equals, value = text.partition("=")
    name, value = name.strip(), value.strip()
    if not equals or not name or not set(name) <= _TOKEN:
        raise ValueError(f"needs NAME=VALUE with NAME an HTTP header name, not {text!r}")
    if name.lower() in _OWN_HEADERS:
        raise ValueError(f"{name} is set by cancelwire itself")
    if any((ord(c) < 0x20 and c != "\t") or ord(c) == 0x7F for c in value):
        raise ValueError(f"the value of {name} holds a control character")
    return name, value


def check_protocol(protocol: str) -> None:
    """`http/protobuf` needs the official classes: a clear error naming the extra when they are missing."""
    if protocol == "http/protobuf":
        _request_class()


def tls_context(
    *, certificate: Path | None = None, client_certificate: Path | None = None, client_key: Path | None = None
) -> ssl.SSLContext:
    """The TLS settings of an `https` endpoint: the collector verified with CERTIFICATE's CA certificates (PEM)
    instead of the system's when given, and CLIENT_CERTIFICATE (with CLIENT_KEY, or a key in the same file)
    presented when given. Each file is a regular file of at most MAX_PEM_BYTES; CancelwireError naming the file
    when one cannot be used. An encrypted key is refused, never asked a passphrase for."""
    context = ssl.create_default_context()
    if certificate is not None:
        pem = read_regular(certificate, limit=MAX_PEM_BYTES, what="certificate", error=CancelwireError)
        try:
            context = ssl.create_default_context(cadata=pem.decode("ascii"))
        except (UnicodeDecodeError, ssl.SSLError, ValueError) as exc:
            raise CancelwireError(
                f"{certificate}: no CA certificate in it that TLS can use ({_reason(exc)})",
                "give the collector's CA certificates in PEM (-----BEGIN CERTIFICATE-----)",
            ) from None
    if client_certificate is not None:
        for path in (client_certificate, client_key):
            if path is not None:
                read_regular(path, limit=MAX_PEM_BYTES, what="certificate or key", error=CancelwireError)
        try:
            context.load_cert_chain(client_certificate, client_key, password=_no_passphrase)
        except (ssl.SSLError, ValueError) as exc:
            files = f"{client_certificate}" + (f" and {client_key}" if client_key else "")
            raise CancelwireError(
                f"{files}: not a client certificate and its key that TLS can use ({_reason(exc)})",
                "give the certificate and its unencrypted private key in PEM",
            ) from None
    return context


def _no_passphrase() -> bytes:
    raise ValueError("the key is encrypted; cancelwire never asks for a passphrase")


def _reason(exc: Exception) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return f"not PEM text: byte {exc.start} is not ASCII"
    reason = getattr(exc, "reason", None) or str(exc)
    return inert.terminal(str(reason)[:SHOWN_CHARS])


def send(
    document: dict[str, Any],
    target: Endpoint,
    *,
    protocol: str = "http/protobuf",
    headers: tuple[tuple[str, str], ...] = (),
    timeout: float = DEFAULT_TIMEOUT,
    tls: ssl.SSLContext | None = None,
    sleep: Callable[[float], None] = time.sleep,
    jitter: Callable[[], float] = random.random,
) -> Sent:
    """Every span of DOCUMENT (an OTLP/JSON `TracesData`, `otlp.traces`) POSTed to TARGET, MAX_SPANS at a time.
    TLS: the settings of an `https` TARGET (`tls_context`); the system's defaults when None. JITTER gives a
    number in [0, 1) that spreads each backoff from half to one and a half times its step."""
    channel = _Channel(target, protocol, headers, timeout, tls)
    encode = _protobuf if protocol == "http/protobuf" else _json
    sent = requests = rejected = 0
    said = ""
    for batch, spans in batches(document, MAX_SPANS):
        try:
            answer = _deliver(channel, encode(batch), sleep, jitter)
        except OtlpSendError as exc:
            if sent:
                raise OtlpSendError(f"{exc.message} (after {sent} span(s) were taken)", exc.hint) from None
            raise
        lost, message = _partial(answer, protocol)
        sent, requests, rejected = sent + spans, requests + 1, rejected + lost
        said = said or message
    return Sent(sent, requests, rejected, said)


def batches(document: dict[str, Any], limit: int = MAX_SPANS) -> Iterator[tuple[dict[str, Any], int]]:
    """DOCUMENT's resources and spans, in order, as requests of at most LIMIT spans (and how many each has)."""
    batch: list[dict[str, Any]] = []
    count = 0
    for resource in document.get("resourceSpans", []):
        for scope in resource["scopeSpans"]:
            spans = scope["spans"]
            for start in range(0, max(len(spans), 1), limit):
                chunk = spans[start : start + limit]
                if count and count + len(chunk) > limit:
                    yield {"resourceSpans": batch}, count
                    batch, count = [], 0
                part = {"scope": scope["scope"], "spans": chunk}
                batch.append({"resource": resource["resource"], "scopeSpans": [part]})
                count += len(chunk)
    if batch:
        yield {"resourceSpans": batch}, count


@dataclass(frozen=True, slots=True)
class _Answer:
    status: int
    reason: str
    body: bytes
    retry_after: str | None


def _deliver(channel: _Channel, body: bytes, sleep: Callable[[float], None], jitter: Callable[[], float]) -> _Answer:
    """BODY POSTed until a final answer, within the channel's timeout and MAX_ATTEMPTS attempts."""
    target = channel.target
    deadline = time.monotonic() + channel.timeout
    wait = 1.0
    for attempt in range(1, MAX_ATTEMPTS + 1):
        answer = _post(channel, body, deadline)
        if 200 <= answer.status < 300:
            return answer
        if answer.status not in RETRYABLE:
            raise _refused(target, answer, "")
        if attempt == MAX_ATTEMPTS:
            raise _refused(target, answer, f"{attempt} times")
        said = _retry_after(answer.retry_after)
        pause = wait * (0.5 + jitter()) if said is None else said
        if pause >= deadline - time.monotonic():
            raise _refused(target, answer, f"{attempt} time(s); the next try was due in {pause:g} s, past the timeout")
        sleep(pause)
        wait *= 2
    raise AssertionError("unreachable: the last attempt returns or raises")


def _post(channel: _Channel, body: bytes, deadline: float) -> _Answer:
    target, protocol, headers, timeout = channel.target, channel.protocol, channel.headers, channel.timeout
    left = max(deadline - time.monotonic(), 0.001)
    if target.https:
        context = channel.tls or ssl.create_default_context()
        conn: http.client.HTTPConnection = http.client.HTTPSConnection(
            target.host, target.port, timeout=left, context=context
        )
    else:
        conn = http.client.HTTPConnection(target.host, target.port, timeout=left)
    fired = threading.Event()
    watchdog = threading.Timer(left, _shut, (conn, fired))
    watchdog.daemon = True
    watchdog.start()
    try:
        conn.request("POST", target.path, body=body, headers={"Content-Type": PROTOCOLS[protocol], **dict(headers)})
        response = conn.getresponse()
        data = response.read(MAX_ANSWER_BYTES)
        return _Answer(response.status, response.reason or "", data, response.getheader("Retry-After"))
    except ssl.SSLCertVerificationError as exc:
        raise OtlpSendError(
            f"{target.traces_url}: the collector's certificate was refused: {inert.terminal(str(exc))}",
            "is it signed by a CA this machine trusts? --otlp-certificate FILE names a private CA",
        ) from None
    except (OSError, http.client.HTTPException) as exc:
        if fired.is_set() or isinstance(exc, TimeoutError):
            raise OtlpSendError(
                f"{target.traces_url}: no answer within the {timeout:g} s timeout",
                "is a collector listening there? --otlp-timeout SECONDS waits longer",
            ) from None
        wants_client = isinstance(exc, ssl.SSLError) and exc.reason == "TLSV13_ALERT_CERTIFICATE_REQUIRED"
        raise OtlpSendError(
            f"{target.traces_url}: cannot send the traces: {inert.terminal(str(exc) or type(exc).__name__)}",
            "the collector wants a client certificate: --otlp-client-certificate FILE"
            if wants_client
            else "is a collector listening there (OTLP/HTTP, port 4318 by default)?",
        ) from None
    finally:
        watchdog.cancel()
        conn.close()


def _shut(conn: http.client.HTTPConnection, fired: threading.Event) -> None:
    """The timeout is spent: wake whatever waits on the socket."""
    fired.set()
    sock = conn.sock
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def _retry_after(value: str | None) -> float | None:
    """A `Retry-After` (delay-seconds or an HTTP date) in seconds from now; None when absent or unreadable."""
    if value is None:
        return None
    text = value.strip()
    if text.isdigit():
        return float(min(int(text[:12]), 10**9))
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    seconds = when.timestamp() - time.time()
    return max(0.0, seconds) if math.isfinite(seconds) else None


def _refused(target: Endpoint, answer: _Answer, tries: str) -> OtlpSendError:
    text = answer.body.decode("utf-8", "replace")
    shown = inert.terminal(text[:SHOWN_CHARS] + ("…" if len(text) > SHOWN_CHARS else ""))
    status = f"{answer.status} {inert.terminal(answer.reason[:SHOWN_CHARS])}".rstrip()
    message = f"{target.traces_url}: the collector answered {status}" + (f", {tries}" if tries else "")
    return OtlpSendError(message + (f": {shown}" if shown else " (no body)"))


def _partial(answer: _Answer, protocol: str) -> tuple[int, str]:
    """A 2xx answer's partial success: spans rejected and the collector's message (0 and '' when none)."""
    if not answer.body:
        return 0, ""
    try:
        if protocol == "http/protobuf":
            from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

            parsed = ExportTraceServiceResponse.FromString(answer.body).partial_success
            rejected, message = int(parsed.rejected_spans), str(parsed.error_message)
        else:
            partial = json.loads(answer.body).get("partialSuccess") or {}
            rejected, message = int(partial.get("rejectedSpans") or 0), str(partial.get("errorMessage") or "")
    except Exception:  # a 2xx body that is no response message (protobuf or JSON) says nothing more
        return 0, ""
    return max(rejected, 0), inert.terminal(message[:SHOWN_CHARS])


def _json(batch: dict[str, Any]) -> bytes:
    return json.dumps(batch, ensure_ascii=False).encode("utf-8")


def _protobuf(batch: dict[str, Any]) -> bytes:
    """BATCH as an `ExportTraceServiceRequest`: OTLP/JSON writes ids in hex, protobuf's JSON mapping reads bytes
    in base64, so the ids are converted and the rest is parsed as written."""
    from google.protobuf import json_format

    for resource in batch["resourceSpans"]:
        resource["scopeSpans"] = [
            {**scope, "spans": [_base64_ids(span) for span in scope["spans"]]} for scope in resource["scopeSpans"]
        ]
    return bytes(json_format.ParseDict(batch, _request_class()()).SerializeToString())


def _base64_ids(span: dict[str, Any]) -> dict[str, Any]:
    ids = ("traceId", "spanId", "parentSpanId")
    return span | {key: base64.b64encode(bytes.fromhex(span[key])).decode() for key in ids if key in span}


def _request_class() -> Any:
    try:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    except ImportError:
        raise CancelwireError(
            "--otlp-endpoint: sending OTLP/HTTP protobuf needs the opentelemetry-proto classes",
            "pip install 'cancelwire[otlp]' (or --otlp-protocol http/json)",
        ) from None
    return ExportTraceServiceRequest


def _netloc(host: str, port: int, https: bool) -> str:
    shown = f"[{host}]" if ":" in host else host
    return shown if port == (443 if https else 80) else f"{shown}:{port}"
