"""One mitmproxy HTTP flow (its state as a flow file holds it) as the exchange the HAR reader judges.

The state of an HTTP flow (`HTTPFlow.get_state` in mitmproxy 11.0.2, flow format 21) is a dict:
`version`, `type` ("http"; "tcp", "udp", "dns" flows are not HTTP), `id`, `request` and `response` (each with
`http_version`, `headers` as [name, value] byte pairs, `content` (the raw body, still in its Content-Encoding;
null when it was not stored), `timestamp_start`, `timestamp_end`; the request's `method`, `scheme`, `host`,
`port`, `path`; the response's `status_code`), `error` (`msg`, `timestamp`: why the flow ended without its
response ending), `client_conn` and `server_conn` (with `alpn`), and more that MCP does not need.

Versions: mitmproxy's `io/compat.py` migrates older files step by step; of what is read here only these
changed, and are read as they were: the version was a tuple (0, 11) .. (3, 0) before it was a number (4 .. 21);
keys were bytes before (0, 18); the status was `code` and the body `body` (for a while) before (0, 16), and
the HTTP version a tuple `httpversion` before (0, 14). A version past `NEWEST` is not guessed at.

What a body that is null means: mitmproxy stores a body only once it has ended and only when it was not
streamed (`stream_large_bodies`, or an addon's `flow.response.stream`): a response that ended with no body
stored was streamed; one that did not end (the client left, a stream still open at exit) may have been either.
"""

from __future__ import annotations

from typing import Any

from ...model.timestamps import plausible
from ..har.entry import SESSION_ID, EntryProblem, HarExchange, inflated, still_encoded

NEWEST = 21
"""The newest flow format this reader knows (mitmproxy 11 and 12 write it)."""
OLDEST = (0, 11)
MAX_HEADERS = 1000
CLIENT_GONE = "Client disconnected."
RESET = "stream reset by client"
BOTH_H2 = (
    "mitmproxy writes this for a reset by either peer when it speaks HTTP/2 to both, so which one reset the "
    "stream is not recorded"
)
STREAMED = "mitmproxy streamed it (stream_large_bodies, or an addon's flow.response.stream), so stored none"
UNENDED = "the response had not ended when mitmproxy wrote the flow; it stores a body only once it ends"


_Ended = tuple[str | None, float | None, bool]


class FlowProblem(ValueError):
    """Why a flow cannot be read (it is skipped, and named)."""


def http_flow(state: Any, number: int) -> HarExchange | None:
    """The exchange of flow `number` (from 1); None for a flow that is no HTTP flow; `FlowProblem` otherwise."""
    if not isinstance(state, dict):
        raise FlowProblem(f"a flow must be a dict, not a {type(state).__name__}")
    version = _version(state.get("version"))
    kind = _text(state.get("type"), "http")
    if kind != "http":
        return None
    request = state.get("request")
    if not isinstance(request, dict):
        raise FlowProblem("an HTTP flow without its request")
    response = state.get("response")
    response = response if isinstance(response, dict) else {}
    started = _time(request.get("timestamp_start"), "the request's timestamp_start")
    sent = _when(request.get("timestamp_end")) or started
    first_byte = _when(response.get("timestamp_start")) or sent
    ended = _when(response.get("timestamp_end"))
    message, failed, reset = _error(state, request, version)
    request_headers, response_headers = _headers(request.get("headers")), _headers(response.get("headers"))
    status = response.get("status_code", response.get("code"))
    status = status if isinstance(status, int) and not isinstance(status, bool) and 0 < status < 1000 else 0
    body = response.get("content", response.get("body"))
    host = f"{_text(request.get('host'), '')[:200]}:{_port(request.get('port'))}"
    return HarExchange(
        index=number,
        line=1,
        method=_text(request.get("method"), "").upper()[:20],
        url=f"{_text(request.get('scheme'), 'http')[:10]}://{host}{_text(request.get('path'), '')[:2000]}",
        host=host,
        request_headers=_first(request_headers),
        response_headers=_first(response_headers),
        request_session_ids=_values(request_headers),
        response_session_ids=_values(response_headers),
        started=started,
        sent=sent,
        first_byte=first_byte,
        ended=ended or failed or first_byte,
        status=status,
        request_body=_body(request.get("content", request.get("body")), request_headers),
        request_mime=_first(request_headers).get("content-type", ""),
        response_body=_body(body, response_headers) if status else None,
        response_mime=_first(response_headers).get("content-type", ""),
        response_size=len(body) if isinstance(body, bytes | str) else -1,
        error=message,
        response_timed=True,
        reset_by_client=reset,
        recording="the flow file",
        unit="flow",
        missing=STREAMED if ended is not None and message is None else UNENDED,
    )


def _error(state: dict[str, Any], request: dict[str, Any], version: int | tuple[int, ...]) -> _Ended:
    """The flow's error message, its time, and whether it is the client's HTTP/2 reset."""
    error = state.get("error")
    error = error if isinstance(error, dict) else {}
    message = _text(error.get("msg"), "")[:200] or None
    reset = message is not None and message.startswith(RESET) and _http2(request, version)
    if reset and _upstream_h2(state):
        message, reset = f"{message} ({BOTH_H2})", False
    return message, _when(error.get("timestamp")), reset


def _version(value: Any) -> int | tuple[int, ...]:
    if isinstance(value, int) and not isinstance(value, bool):
        if 4 <= value <= NEWEST:
            return value
        if value > NEWEST:
            raise FlowProblem(f"flow format version {value} is newer than cancelwire reads (up to {NEWEST})")
    if isinstance(value, list) and 2 <= len(value) <= 3 and all(isinstance(v, int) for v in value):
        old = tuple(value[:2])
        if OLDEST <= old <= (3, 0):
            return old
    raise FlowProblem(f"not a flow format version mitmproxy wrote: {str(value)[:40]!r}")


def _http2(request: dict[str, Any], version: int | tuple[int, ...]) -> bool:
    """The client side spoke HTTP/2 (mitmproxy's reset message names the client only then)."""
    return isinstance(version, int) and _text(request.get("http_version"), "") == "HTTP/2.0"


def _upstream_h2(state: dict[str, Any]) -> bool:
    """mitmproxy spoke HTTP/2 to the server too: its reset message is then the same for either peer's reset."""
    server = state.get("server_conn")
    return isinstance(server, dict) and _text(server.get("alpn"), "") == "h2"


def _text(value: Any, default: str) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value if isinstance(value, str) else default


def _time(value: Any, what: str) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool) and plausible(float(value)):
        return float(value)
    raise FlowProblem(f"{what} is not a clock reading: {str(value)[:40]!r}")


def _when(value: Any) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and plausible(float(value))
    return float(value) if ok else None


def _port(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 65536 else 0


def _headers(value: Any) -> list[tuple[str, str]]:
    """(name in lower case, value) pairs, in order; a pair that is not two texts is left out."""
    pairs: list[tuple[str, str]] = []
    for item in value[:MAX_HEADERS] if isinstance(value, list) else ():
        if isinstance(item, list) and len(item) == 2 and all(isinstance(v, bytes | str) for v in item):
            pairs.append((_text(item[0], "").lower(), _text(item[1], "")))
    return pairs


def _first(pairs: list[tuple[str, str]]) -> dict[str, str]:
    found: dict[str, str] = {}
    for name, value in pairs:
        found.setdefault(name, value)
    return found


def _values(pairs: list[tuple[str, str]]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(value for name, value in pairs if name == SESSION_ID and value))


def _body(value: Any, headers: list[tuple[str, str]]) -> str | None:
    """A stored body as text, inflated when its Content-Encoding left it in gzip or deflate."""
    if isinstance(value, str):
        return str(value)
    if not isinstance(value, bytes):
        return None
    raw: bytes = value
    coding = _first(headers).get("content-encoding")
    if coding and still_encoded(raw):
        try:
            raw = inflated(raw, coding)
        except EntryProblem as exc:
            raise FlowProblem(str(exc)) from None
    return raw.decode("utf-8", "replace")
