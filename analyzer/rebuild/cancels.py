"""What a cancel means: whose request it names, whether its sender may send it, and by which mechanism.

Reconstruction calls these for every `notifications/cancelled` and every client disconnect; each
returns the anomalies to report. `disconnect` makes the disconnect the request's cancel where the
revision says it is one, and elsewhere remembers it; a POSTed cancel where the disconnect is the cancel
is remembered too: `unmatched_mechanism` reports either when the request is finalised without the other
half of the HTTP client's cancel (its POST, or its close).
"""

from __future__ import annotations

from ..model import (
    Anomaly,
    AnomalyName,
    CancelInfo,
    CancelMechanism,
    MessageEvent,
    Side,
    TimelineEntry,
    Transport,
    TransportEvent,
)
from . import holds
from .finished import FinishedRequests
from .pending import SessionState
from .request import PendingRequest


def stray_cancel(
    session: SessionState,
    finished: FinishedRequests,
    event: MessageEvent,
    sender: Side,
    target: int | str,
    other: PendingRequest | None,
) -> Anomaly:
    """A cancel whose target is not open: already answered, the other side's request, or never sent."""
    tomb = finished.request(session.key, sender, target)
    if tomb is not None:
        gap = event.ts - tomb.ts if event.ts is not None and tomb.ts is not None else None
        what = f"{sender} cancelled id {target!r} ({tomb.method}) after it was answered"
        return session.anomaly(
            event, AnomalyName.CANCEL_AFTER_COMPLETION, what, target, tomb.method, gap, requester=sender
        )
    if other is not None:
        what = f"{sender} cancelled id {target!r}, which is a request the {sender.other} sent"
        return session.anomaly(
            event, AnomalyName.CANCEL_UNKNOWN_REQUEST, what, target, other.method, requester=sender.other
        )
    what = f"{sender} cancelled id {target!r}, never sent"
    return session.anomaly(event, AnomalyName.CANCEL_UNKNOWN_REQUEST, what, target, requester=sender)


def cancel_problems(session: SessionState, event: MessageEvent, sender: Side, own: PendingRequest) -> list[Anomaly]:
    """A cancel of an open request by a peer that may not cancel. A POST where closing the request's
    stream is the cancel is remembered for `unmatched_mechanism` (a close may accompany it)."""
    facts = session.facts_for(own.declared_revision)
    if facts is None:
        return []
    problems: list[Anomaly] = []
    target, method, revision = own.request_id, own.method, facts.revision
    if sender is Side.SERVER and not facts.server_may_cancel:
        what = f"the server cancelled its own id {target!r}; in {revision} only the client cancels"
        problems.append(
            session.anomaly(event, AnomalyName.CANCEL_UNKNOWN_REQUEST, what, target, method, requester=sender)
        )
    http_post = session.start.transport is Transport.STREAMABLE_HTTP and not facts.http_notification_is_cancel
    if http_post and not own.disconnected:  # after the client's close, the POST only accompanies the cancel
        own.unclosed_post = event
    return problems


def may_be_ignored(session: SessionState, sender: Side, own: PendingRequest) -> bool:
    """A cancel its receiver was entitled to ignore: of `initialize` (never cancelled), by a server
    where only the client cancels (2026-07-28), or a POSTed notification where closing the request's
    stream is the cancel (Streamable HTTP, 2026-07-28). It is reported (CW104, CW105, CW107) but is
    not the request's cancel, so nothing after it is judged against it."""
    if own.method == "initialize":
        return True
    facts = session.facts_for(own.declared_revision)
    if facts is None:
        return False
    if sender is Side.SERVER and not facts.server_may_cancel:
        return True
    return session.start.transport is Transport.STREAMABLE_HTTP and not facts.http_notification_is_cancel


def disconnect(session: SessionState, item: PendingRequest, entry: TimelineEntry, event: TransportEvent) -> None:
    """The client closed a request's stream before its reply: the cancel where the revision says so
    (2026-07-28). Where a disconnect is not a cancel (2025-03-26 to 2025-11-25) the close is remembered:
    a mechanism mismatch only if no notifications/cancelled for the request follows (`unposted_close`)."""
    facts = session.facts_for(item.declared_revision)
    if facts is None or facts.http_disconnect_is_cancel:
        if item.cancel is None:
            item.cancel = CancelInfo(CancelMechanism.DISCONNECT, entry)
            holds.hold(session, item)
    elif facts.http_disconnect_is_cancel is False and item.cancel is None:
        item.unposted_close = event
    item.unclosed_post = None  # the close is the cancel the POST before it accompanied


def unmatched_mechanism(session: SessionState, item: PendingRequest, *, ended: bool) -> Anomaly | None:
    """When a request is finalised: the mismatch of a close that no POSTed cancel for it followed
    (2025-03-26 to 2025-11-25), or of a POSTed cancel with no close of the request's stream (2026-07-28).

    An HTTP client ends its own request when the call is cancelled (Go's net/http closes the connection
    of a request whose context ends) and POSTs the cancel on another connection, in either order and
    with no bound the recording could state (0.15 to 0.4 ms after the close in the Go SDK samples, after
    the server's end of the response and the client's RST in one of them); other calls of the client may
    come between. So the close is judged when nothing later can name the request any more: when its
    timeline is finalised (the recording ended, or its hold ran out after its stream ended).

    The Go SDK client does the same under 2026-07-28: it closes the call's stream, which is the cancel
    there, and POSTs notifications/cancelled too (0.3 ms before the close to 1.2 ms after it in the samples
    gosdk-client-ts2sdk-server-http-2026-07-28-*): the spec neither requires nor forbids the POST, so
    only a POST that no close of the stream accompanies is the mismatch."""
    facts = session.facts_for(item.declared_revision)
    if facts is None:
        return None
    if item.unclosed_post is not None:
        what = (
            f"notifications/cancelled POSTed for id {item.request_id!r}; in {facts.revision} the client "
            "cancels by closing the request's SSE stream"
        )
        return session.anomaly(
            item.unclosed_post,
            AnomalyName.CANCEL_MECHANISM_MISMATCH,
            what,
            item.request_id,
            item.method,
            requester=item.requester,
        )
    close = item.unposted_close
    if close is None:
        return None
    until = "before the recording ended" if ended else "while the call was held"
    what = (
        f"the client closed the stream of id {item.request_id!r} before its reply and POSTed no "
        f"notifications/cancelled for it {until}; in {facts.revision} a disconnect is not a cancel"
    )
    return session.anomaly(
        close, AnomalyName.CANCEL_MECHANISM_MISMATCH, what, item.request_id, item.method, requester=item.requester
    )
