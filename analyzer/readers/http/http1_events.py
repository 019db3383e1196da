"""What the HTTP/1.1 reader (`http1`) tells its caller: one event per request head, request body, response
head, response body piece and response end, and a parse error per broken direction. Both halves of a
connection make them (`http1` the client's, `http1_responses` the server's); the HTTP/2 reader says the
same things in the same types (`http2`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import h11

Headers = tuple[tuple[str, str], ...]


def header(headers: Headers, name: str) -> str | None:
    """The first value of a header (names are lower case), or None."""
    name = name.lower()
    for key, value in headers:
        if key == name:
            return value
    return None


@dataclass(frozen=True, slots=True)
class RequestHead:
    exchange: int
    method: str
    target: str
    headers: Headers
    http_version: str


@dataclass(frozen=True, slots=True)
class RequestEnd:
    exchange: int
    body: bytes
    """The whole request body, or its first `MAX_BODY_BYTES` when `truncated`."""
    truncated: bool = False
    body_size: int = 0


@dataclass(frozen=True, slots=True)
class ResponseHead:
    exchange: int
    status: int
    reason: str
    headers: Headers


@dataclass(frozen=True, slots=True)
class ResponseData:
    exchange: int
    data: bytes
    """De-chunked body bytes."""


@dataclass(frozen=True, slots=True)
class ResponseEnd:
    exchange: int
    complete: bool = True
    """False when the server closed the connection in the middle of the body (chunked without the
    final chunk, or fewer bytes than Content-Length)."""
    detail: str = ""


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
