"""What the HTTP answer to a POST says about the JSON-RPC messages in the POST's body: whether they
reached the MCP server. Decided here once, for captures (HTTP/1.1 and HTTP/2, `capture_http`) and
HAR files (`har_events`):

* 2xx: delivered.
* 3xx (a redirect, e.g. Starlette's 307 from `/mcp` to `/mcp/` under `Mount("/mcp", ...)`): not
  delivered. A redirect is no answer of the MCP server; a client that follows it sends the POST again
  at the `Location`, and that POST is the delivery (`http.redirected`, CW216).
* 4xx and 5xx: not delivered. "If the server cannot accept the input, it MUST return an HTTP error
  status code" (Streamable HTTP): 404 after the session expired, 400 for a bad header, 405, 413, 429,
  and a gateway's 502/503/504, whose upstream may or may not have seen the message but did not accept
  it as far as the client can know (`http.error-status`, CW205). A request the answer's JSON-RPC body
  answers by its id is the exception: that error is the request's reply, so the request did reach
  the MCP layer. A refused `notifications/cancelled` cancelled nothing: `http.cancel-not-delivered`
  (CW217) names the call it was for, and that call is judged as never cancelled by it.
* Unprocessed: the server's HTTP/2 GOAWAY names a last stream id below the POST's stream before any
  answer came: "streams ... with identifiers higher than the last stream identifier ... were not
  processed" (RFC 9113 6.8), and a client may send them again on a new connection, which is then
  their delivery. Not delivered (`http2.unprocessed`, CW218, once per session); a cancel in it is
  CW217 as for a refused POST.
* No final status (the connection or the recording ended first): unknown, read as delivered (a
  message that may have reached the server stays on its timeline, as before).

An undelivered message is not put on any timeline: a re-sent POST with the same id is then the
request's only delivery, not a reused id, and a refused cancel is no cancel.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from ...model import AnomalyName, Message, RequestId, Side
from ...model.jsonrpc import decode_text


class Delivery(StrEnum):
    """Whether a POST's messages reached the MCP server, by the HTTP answer."""

    DELIVERED = "delivered"
    """2xx, or no final status (unknown: kept, as before)."""
    REDIRECTED = "redirected"
    """3xx: the client may send them again at the Location; that is their delivery."""
    REFUSED = "refused"
    """4xx or 5xx: the server (or a gateway in front of it) did not accept them."""
    UNPROCESSED = "unprocessed"
    """HTTP/2 GOAWAY below the stream, no answer: the server never processed it (RFC 9113 6.8)."""


def of_status(status: int) -> Delivery | None:
    """The delivery a final status means; None for no final status yet (0, or 1xx)."""
    if status < 200:
        return None
    if status < 300:
        return Delivery.DELIVERED
    return Delivery.REDIRECTED if status < 400 else Delivery.REFUSED


def delivered(delivery: Delivery | None, message: Message, answered: bool) -> bool:
    """Whether `message` of the POST body reached the server: `answered` says the answer's JSON-RPC
    body replied to it (only a request can be answered)."""
    if delivery is None or delivery is Delivery.DELIVERED:
        return True
    return delivery is Delivery.REFUSED and answered and message.method is not None and message.id is not None


def answers(body: bytes, request_id: RequestId | None) -> bool:
    """An answer's JSON body replies to the request `request_id` (a JSON-RPC error naming it)."""
    if request_id is None:
        return False
    decoded = decode_text(body)
    return decoded is not None and any(m.id == request_id and m.method is None for m in decoded.messages)


def cancelled_id(message: Message) -> RequestId | None:
    """The request a `notifications/cancelled` names, if it names one validly."""
    if message.method != "notifications/cancelled":
        return None
    value = message.payload.get("requestId")
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None
    return value


def named(messages: Sequence[Message]) -> str:
    """The messages for a finding's detail: `tools/call (id 3)`, `notifications/cancelled (of id 3)`."""
    parts = []
    for m in messages[:5]:
        if (target := cancelled_id(m)) is not None:
            parts.append(f"{m.method} (of id {target!r})")
        elif m.method is not None:
            parts.append(f"{m.method} (id {m.id!r})" if m.id is not None else m.method)
        else:
            parts.append(f"{m.kind.value} (id {m.id!r})")
    more = f" and {len(messages) - 5} more" if len(messages) > 5 else ""
    return ", ".join(parts) + more


@dataclass(frozen=True, slots=True)
class Undelivered:
    """An anomaly a reader emits for messages that were not delivered."""

    name: AnomalyName
    detail: str
    request_id: RequestId | None
    method: str | None
    requester: Side | None


def undelivered(
    delivery: Delivery, where: str, status: int, target: str, location: str | None, dropped: Sequence[Message]
) -> list[Undelivered]:
    """What says `dropped` were not delivered: a redirect once per POST (an HTTP error is named by
    `http.error-status` where the answer's status is read), a stream the server never processed once
    per POST, and each refused or unprocessed cancel, for its call."""
    first = dropped[0]
    rid, method = (first.id, first.method) if first.method is not None else (None, None)
    if delivery is Delivery.REDIRECTED:
        return [
            Undelivered(
                AnomalyName.HTTP_REDIRECTED,
                redirect_detail(where, status, target, location, dropped),
                rid,
                method,
                None,
            )
        ]
    said = []
    if delivery is Delivery.UNPROCESSED:
        detail = (
            f"{where}: the server's HTTP/2 GOAWAY says it never processed POST {target}: {named(dropped)} not "
            "delivered by it (a client may send it again on a new connection)"
        )
        said.append(Undelivered(AnomalyName.HTTP2_UNPROCESSED, detail, rid, method, None))
    cancels = refused_cancels(dropped)
    answered_by = answer(delivery, status)
    said += [
        Undelivered(
            AnomalyName.HTTP_CANCEL_NOT_DELIVERED,
            cancel_detail(where, answered_by, target, cid),
            cid,
            None,
            Side.CLIENT,
        )
        for _, cid in cancels
    ]
    return said


def answer(delivery: Delivery, status: int) -> str:
    """What kept a POST's messages from the server, for details: `HTTP 404`, or the GOAWAY."""
    if delivery is Delivery.UNPROCESSED:
        return "the server's HTTP/2 GOAWAY (it never processed the stream)"
    return f"HTTP {status}"


def redirect_detail(where: str, status: int, target: str, location: str | None, messages: Sequence[Message]) -> str:
    """The `http.redirected` detail: what was not delivered, and where the client may send it again."""
    to = f" to {location}" if location else ""
    return (
        f"{where}: HTTP {status}{to} for POST {target}: {named(messages)} not delivered by it "
        "(a client that follows the redirect sends it again there)"
    )


def refused_cancels(messages: Iterable[Message]) -> list[tuple[Message, RequestId]]:
    """The cancels among undelivered messages, each with the request it was for."""
    return [(m, target) for m in messages if (target := cancelled_id(m)) is not None]


def cancel_detail(where: str, answer: str, target: str, cancelled: RequestId) -> str:
    """The `http.cancel-not-delivered` detail; `answer` says what kept it from the server."""
    return (
        f"{where}: {answer} to POST {target} holding the notifications/cancelled of id {cancelled!r}; "
        "the call is judged as never cancelled by it"
    )
