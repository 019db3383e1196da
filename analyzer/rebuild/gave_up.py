"""A peer library's own end of a call for its caller (`GAVE_UP_BY_*`: a `"local": true` record in a peer's
log, such as the timeout error an SDK raises to its caller) on that call's timeline, and what the
requester's own log then proves.

It is no message: the receiver never saw it and may still work and answer, so the call stays open and
its reply, when one comes, is the receiver's answer (not a second one). When the recording is the
requester's own log, it holds every message the requester sent: a call it gave up on with no
`notifications/cancelled` for it by the call's end is a cancel never sent, exactly
(`cancel.not-sent-on-give-up`, CW507). With `--merge` the other recording shows what reached the
receiver, and `merge.facts.abandoned_calls` (CW503) judges it instead. A log that does not say its
transport (an MCP Inspector protocol history) raises it with none: in 2026-07-28 the notification is the
cancel on stdio only (on Streamable HTTP it is closing the stream, which such a log never shows), so the
engine does not judge it there.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from ..model import Anomaly, AnomalyName, EntryKind, Side, TimelineEntry, TransportEvent, TransportKind, Vantage
from .pending import SessionState
from .request import PendingRequest

REQUESTER: Final = {TransportKind.GAVE_UP_BY_CLIENT: Side.CLIENT, TransportKind.GAVE_UP_BY_SERVER: Side.SERVER}
_OWN_LOG: Final = {Side.CLIENT: Vantage.CLIENT, Side.SERVER: Vantage.SERVER}


def on_gave_up(session: SessionState, event: TransportEvent) -> bool:
    """Put a `GAVE_UP_BY_*` fact on its open call's timeline (the first one only); False for other kinds.
    A call already answered or never seen has no timeline left to end."""
    requester = REQUESTER.get(event.kind)
    if requester is None:
        return False
    item = session.open.get((requester, event.request_id)) if event.request_id is not None else None
    if item is not None and item.gave_up is None:
        entry = TimelineEntry(
            EntryKind.GAVE_UP, requester, event.seq, event.ts, event.origin, item.stream, excerpt=event.detail
        )
        item.gave_up = entry
        session.add_entry(item, entry)
    return True


def unsent_cancel(session: SessionState, item: PendingRequest, *, ended: bool) -> Iterator[Anomaly]:
    """At the end of a call its requester gave up on: the anomaly when the requester's own log holds no
    cancel for it (nothing else it sent could be missing from that log)."""
    gave_up = item.gave_up
    if gave_up is None or item.cancel is not None or session.start.vantage is not _OWN_LOG[item.requester]:
        return
    who, peer = item.requester.value, item.requester.other.value
    log = item.log
    receiver = item.requester.other
    later = [(i, e) for i, e in enumerate(log.entries) if e.seq > gave_up.seq and e.side is receiver]
    if later:
        count = sum(1 + log.extra.get(i, 0) for i, _ in later)
        went_on = (
            f"; the {peer} went on: {count} message(s) for it after that (the last at {later[-1][1].origin.display()})"
        )
    else:
        went_on = f"; the {peer} sent nothing more for it" + (" before the log ended" if ended else "")
    detail = (
        f"the {who}'s own library ended the call for its caller ({gave_up.excerpt}), and the {who}'s log, "
        f"which holds every message the {who} sent, has no notifications/cancelled for it{went_on}"
    )
    yield Anomaly(
        seq=gave_up.seq,
        ts=gave_up.ts,
        origin=gave_up.origin,
        session_key=session.start.session_key,
        name=AnomalyName.CANCEL_NOT_SENT_ON_GIVE_UP,
        detail=detail,
        request_id=item.request_id,
        method=item.method,
        revision=session.revision_for(item.declared_revision)[0],
        transport=None if session.start.transport_assumed else session.start.transport,
        requester=item.requester,
    )
