"""One HAR 1.2 entry, as far as MCP cares: who, when (from `startedDateTime` plus its timings), what
status, which bodies, and how it failed.

Every field but `request` and `startedDateTime` may be missing or of the wrong type in files found in
the wild; a missing optional field is read as absent, never as an error. Timings follow HAR 1.2: the
phases `blocked`, `dns`, `connect` (which includes `ssl`), `send`, `wait`, `receive` run one after
another in milliseconds, and -1 (or anything not a non-negative number) means the phase did not
happen or was not recorded. Browser extras (`_initiator`, `_resourceType`, `_priority`, ...) are
ignored; `response._error` (Chromium, mitmproxy) is read. Exporters keep bodies decoded; a base64 body whose bytes
are still gzip or deflate, as its Content-Encoding says (what an exporter without the decoder keeps), is decoded
(`http.encoding`), within the inflate ratio; one that does not decode makes the entry unreadable.
"""

from __future__ import annotations

import binascii
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from ...model.timestamps import plausible
from ..http.encoding import BodyDecoder, codings
from ..inflate import DEFAULT_LIMITS

MAX_HEADERS = 1000
"""Headers read per message; a real request has a few dozen."""
SESSION_ID = "mcp-session-id"
MAX_PARAMS = 10_000
"""`postData.params` pairs read per body; a JSON-RPC message has four members."""
MAX_INFLATED = 64 << 20
"""Bytes an encoded body is inflated to at most (an entry's own limit, `scan.MAX_ENTRY_BYTES`)."""
_BEFORE_SEND = ("blocked", "dns", "connect")
#: `_error` texts that say the client gave up on the request (the browser or the client behind the
#: proxy closed it): Chromium's net::ERR_ABORTED, Firefox's NS_BINDING_ABORTED, mitmproxy's
#: "Client disconnected.".
ABANDONED = ("ERR_ABORTED", "NS_BINDING_ABORTED", "Client disconnected")


class EntryProblem(Exception):
    """Why an entry cannot be read (it is skipped, and named)."""


@dataclass(frozen=True, slots=True)
class HarExchange:
    """One entry's request and response."""

    index: int
    """Entry number from 0, in file order."""
    line: int
    """Line of the file where the entry starts (its evidence)."""
    method: str
    url: str
    host: str
    """`host:port` of the URL (the fallback session of requests without a session id)."""
    request_headers: dict[str, str]
    response_headers: dict[str, str]
    request_session_ids: tuple[str, ...]
    """The distinct `Mcp-Session-Id` values of the request, in order (more than one is a conflict)."""
    response_session_ids: tuple[str, ...]
    """The same for the response (the server assigns the id on `initialize` and may echo it later)."""
    started: float
    """`startedDateTime`, epoch seconds (UTC)."""
    sent: float
    """When the request was sent: started + blocked + dns + connect + send."""
    first_byte: float
    """When the response began: sent + wait."""
    ended: float
    """When the response ended: first_byte + receive."""
    status: int
    """0 when there was no response."""
    request_body: str | None
    request_mime: str
    response_body: str | None
    """None when the HAR holds no text for it."""
    response_mime: str
    response_size: int
    """`content.size` (bytes of the body), -1 when unknown."""
    error: str | None
    """`response._error`: why the request failed or was given up."""
    response_timed: bool
    """The response phases (`wait`, `receive`) were recorded: `ended` is when it really ended."""
    unfinished: bool = False
    """The response's bytes came (`content.size`) but its load never finished: `_transferSize` covers its head
    only (`bodySize` 0) and no text is kept. chrome-har writes a fetch the page aborted (Chromium's
    net::ERR_ABORTED after the response head) so, with no `_error`; a load that finished counts its body."""
    reset_by_client: bool = False
    """The client reset the request's HTTP/2 stream (mitmproxy's flow files say so; a HAR does not)."""
    recording: str = "the HAR"
    """How the details name the file the exchange was read from."""
    unit: str = "entry"
    """What the details call one exchange of it ("entry 5")."""
    missing: str | None = None
    """Why the response body may be missing, when the file can say (else its `content.size` is quoted)."""

    @property
    def abandoned(self) -> bool:
        """The HAR says the client gave up on the request (see `ABANDONED`, `unfinished` and `reset_by_client`)."""
        return (
            self.unfinished
            or self.reset_by_client
            or (self.error is not None and any(mark in self.error for mark in ABANDONED))
        )

    def header(self, name: str) -> str | None:
        """A request header, else the same response header (`Mcp-Session-Id` comes back on initialize)."""
        return self.request_headers.get(name) or self.response_headers.get(name)


def parse(value: Any, index: int, line: int) -> HarExchange:
    """The entry `value` (already JSON-decoded), or `EntryProblem` saying what is missing."""
    if not isinstance(value, dict):
        raise EntryProblem(f"an entry must be an object, not a JSON {type(value).__name__}")
    request = value.get("request")
    if not isinstance(request, dict):
        raise EntryProblem('no "request" object')
    response = _object(value.get("response"))
    start = started(value.get("startedDateTime"))
    timings = _object(value.get("timings"))
    sent = start + (sum(_ms(timings, k) for k in _BEFORE_SEND) + _ms(timings, "send")) / 1000
    wait, receive = _ms(timings, "wait"), _ms(timings, "receive")
    first_byte = sent + wait / 1000
    ended = first_byte + receive / 1000
    if not timings:  # no phases at all: only the total `time`
        first_byte = ended = start + _ms(value, "time") / 1000
    content = _object(response.get("content"))
    post = _object(request.get("postData"))
    url = _text(request.get("url"))
    status = response.get("status")
    error = response.get("_error")
    return HarExchange(
        index=index,
        line=line,
        method=_text(request.get("method")).upper(),
        url=url,
        host=urlsplit(url).netloc if "//" in url else url,
        request_headers=_headers(request.get("headers")),
        response_headers=_headers(response.get("headers")),
        request_session_ids=_values(request.get("headers"), SESSION_ID),
        response_session_ids=_values(response.get("headers"), SESSION_ID),
        started=start,
        sent=sent,
        first_byte=first_byte,
        ended=ended,
        status=status if isinstance(status, int) and not isinstance(status, bool) and status > 0 else 0,
        request_body=_body(post, _headers(request.get("headers")).get("content-encoding")) or _from_params(post),
        request_mime=_text(post.get("mimeType")),
        response_body=_body(content, _headers(response.get("headers")).get("content-encoding")),
        response_mime=_text(content.get("mimeType")) or _headers(response.get("headers")).get("content-type", ""),
        response_size=_size(content.get("size")),
        error=error if isinstance(error, str) and error else None,
        response_timed=wait > 0 or receive > 0 or not timings,
        unfinished=_unfinished(response, content),
    )


def _unfinished(response: dict[str, Any], content: dict[str, Any]) -> bool:
    """See `HarExchange.unfinished`."""
    transfer, body = response.get("_transferSize"), response.get("bodySize")
    return (
        "text" not in content
        and _size(content.get("size")) > 0
        and _size(transfer) >= 0
        and isinstance(body, int)
        and not isinstance(body, bool)
        and body == 0
    )


def _from_params(post: dict[str, Any]) -> str | None:
    """A JSON body kept as `postData.params` without `text`, as chrome-har writes every `application/json` body
    (`toNameValuePairs(JSON.parse(body))`: a member per pair, an array member as one pair per element, a top-level
    array as members "0", "1", ...), put back as JSON text. A member given twice is an array again (one of one
    element cannot be told from its element: no JSON-RPC member is such an array)."""
    params = post.get("params")
    if "text" in post or not isinstance(params, list) or "json" not in _text(post.get("mimeType")).lower():
        return None
    members: dict[str, Any] = {}
    for item in params[:MAX_PARAMS]:
        name = item.get("name") if isinstance(item, dict) else None
        if not isinstance(name, str) or "value" not in item:
            continue
        if name in members:
            held = members[name]
            members[name] = _Repeated([*held, item["value"]] if isinstance(held, _Repeated) else [held, item["value"]])
        else:
            members[name] = item["value"]
    if not members:
        return None
    names = list(members)
    whole: Any = members
    if names == [str(n) for n in range(len(names))]:  # a batch: JSON.parse gave an array
        whole = [members[n] for n in names]
    return json.dumps(whole, ensure_ascii=False)


class _Repeated(list[Any]):
    """Values of a member named more than once (an array member, split into pairs)."""


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _size(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else -1


def _ms(table: dict[str, Any], key: str) -> float:
    """A phase in milliseconds; 0 when absent, -1, or not a finite non-negative number."""
    value = table.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    return float(value) if 0 <= value < 1e12 else 0.0  # (compared first: float() of a huge int overflows)


def started(value: Any) -> float:
    if not isinstance(value, str):
        raise EntryProblem('no "startedDateTime"')
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise EntryProblem(f"startedDateTime {value[:60]!r} is not an ISO 8601 time") from None
    if when.tzinfo is None:  # HAR 1.2 requires the offset; without one, UTC is the only honest guess
        when = when.replace(tzinfo=UTC)
    started = when.timestamp()
    if not plausible(started):  # year 0001 or 9999: entries are ordered by it, so it cannot be left out
        raise EntryProblem(f"startedDateTime {value[:60]!r} cannot be a clock reading (before 1970 or after 2106)")
    return started


def _headers(value: Any) -> dict[str, str]:
    """Header name (lower case) -> first value."""
    headers: dict[str, str] = {}
    if not isinstance(value, list):
        return headers
    for item in value[:MAX_HEADERS]:
        if isinstance(item, dict):
            name, text = item.get("name"), item.get("value")
            if isinstance(name, str) and isinstance(text, str):
                headers.setdefault(name.lower(), text)
    return headers


def _values(value: Any, name: str) -> tuple[str, ...]:
    """The distinct non-empty values of header `name` (lower case), in order: `_headers` keeps only the
    first, which would hide two that disagree."""
    if not isinstance(value, list):
        return ()
    found: dict[str, None] = {}
    for item in value[:MAX_HEADERS]:
        if isinstance(item, dict) and isinstance(item.get("name"), str) and item["name"].lower() == name:
            text = item.get("value")
            if isinstance(text, str) and text:
                found[text] = None
    return tuple(found)


def _body(table: dict[str, Any], coding: str | None = None) -> str | None:
    """A postData's or content's text, base64-decoded when `encoding` says so (and then inflated when its
    bytes are still in the gzip or deflate of the message's Content-Encoding)."""
    text = table.get("text")
    if not isinstance(text, str):
        return None
    encoding = table.get("encoding")
    if encoding in (None, ""):
        return text
    if encoding != "base64":
        raise EntryProblem(f"unknown body encoding {str(encoding)[:40]!r}")
    try:
        raw = binascii.a2b_base64(text, strict_mode=True)
    except binascii.Error as exc:
        raise EntryProblem(f"a base64 body that does not decode: {exc}") from None
    if coding and still_encoded(raw):
        raw = inflated(raw, coding)
    return raw.decode("utf-8", "replace")


def still_encoded(raw: bytes) -> bool:
    """gzip's magic, or a zlib header (deflate): no JSON or SSE text starts so."""
    return raw[:2] == b"\x1f\x8b" or (len(raw) > 1 and raw[0] & 0x0F == 8 and ((raw[0] << 8) | raw[1]) % 31 == 0)


def inflated(raw: bytes, coding: str) -> bytes:
    decoder = BodyDecoder(codings(coding), DEFAULT_LIMITS.max_ratio)
    out = bytearray()
    for piece in decoder.feed(raw):
        out += piece
        if len(out) > MAX_INFLATED:
            raise EntryProblem(f"a {coding[:40]!r} body that inflates past {MAX_INFLATED} bytes")
    decoder.finish()
    if decoder.problem is not None:
        raise EntryProblem(f"a body in Content-Encoding that does not decode: {decoder.problem.detail}")
    return bytes(out)
