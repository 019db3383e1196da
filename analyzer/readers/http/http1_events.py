"""What the HTTP/1.1 reader (`http1`) tells its caller: one event per request head, request body, response
head, response body piece and response end, and a parse error per broken direction. Both halves of a
connection make them (`http1` the client's, `http1_responses` the server's); the HTTP/2 reader says the
same things in the same types (`http2`).

The events made per message have `Final` fields and a written `__init__`: mypyc compiles a written one, where a
dataclass's own runs interpreted (several times slower on every message), and keeps `Final` fields read-only
after it, as mypy does."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

import h11

Headers = tuple[tuple[str, str], ...]


def header(headers: Headers, name: str) -> str | None:
    """The first value of a header (names are lower case), or None."""
    name = name.lower()
    for key, value in headers:
        if key == name:
            return value
    return None


@dataclass(slots=True, init=False)
class RequestHead:
    exchange: Final[int]
    method: Final[str]
    target: Final[str]
    headers: Final[Headers]
    http_version: Final[str]

    def __init__(self, exchange: int, method: str, target: str, headers: Headers, http_version: str) -> None:
        self.exchange, self.method, self.target, self.headers = exchange, method, target, headers
        self.http_version = http_version


@dataclass(slots=True, init=False)
class RequestEnd:
    exchange: Final[int]
    body: Final[bytes]
    """The whole request body, or its first `MAX_BODY_BYTES` when `truncated`."""
    truncated: Final[bool]
    body_size: Final[int]

    def __init__(self, exchange: int, body: bytes, truncated: bool = False, body_size: int = 0) -> None:
        self.exchange, self.body, self.truncated, self.body_size = exchange, body, truncated, body_size


@dataclass(slots=True, init=False)
class ResponseHead:
    exchange: Final[int]
    status: Final[int]
    reason: Final[str]
    headers: Final[Headers]

    def __init__(self, exchange: int, status: int, reason: str, headers: Headers) -> None:
        self.exchange, self.status, self.reason, self.headers = exchange, status, reason, headers


@dataclass(slots=True, init=False)
class ResponseData:
    exchange: Final[int]
    data: Final[bytes]
    """De-chunked body bytes."""

    def __init__(self, exchange: int, data: bytes) -> None:
        self.exchange, self.data = exchange, data


@dataclass(slots=True, init=False)
class ResponseEnd:
    exchange: Final[int]
    complete: Final[bool]
    """False when the server closed the connection in the middle of the body (chunked without the
    final chunk, or fewer bytes than Content-Length)."""
    detail: Final[str]

    def __init__(self, exchange: int, *, complete: bool = True, detail: str = "") -> None:
        self.exchange, self.complete, self.detail = exchange, complete, detail


@dataclass(frozen=True, slots=True)
class ParseError:
    from_client: bool
    """True for a bad request (client bytes), False for a bad response (server bytes)."""
    detail: str
    exchange: int | None = None


HttpEvent = RequestHead | RequestEnd | ResponseHead | ResponseData | ResponseEnd | ParseError


def text(raw: bytes) -> str:
    """A start-line field as h11 gives it (bytes), as the events say it."""
    return raw.decode("latin-1")


def fields(raw: Iterable[tuple[bytes, bytes]]) -> Headers:
    """h11's header fields as the events say them: lower-case names."""
    return tuple((name.decode("latin-1").lower(), value.decode("latin-1")) for name, value in raw)


def body_data(event: h11.Data) -> bytes | bytearray:
    """h11's body bytes: typed `bytes`, handed as a bytearray, so read untyped (compiled code checks types)."""
    data: bytes | bytearray = getattr(event, "data")  # noqa: B009
    return data
