"""Transport facts on HTTP exchange streams, placed on the timelines of the requests they carry.

A capture sees each request's stream open, close or reset, and the bytes the server writes. A client
disconnect before the reply is the cancel where the revision says so (`cancels.disconnect`); a stream
that ends can let an answered request be finalised (`holds.settled`). A task-augmented request whose task
handle was returned is cancelled only by `tasks/cancel` (shared/PROTOCOL.md §7): the client closing its
stream afterwards is not put on its timeline, so no rule reads it as a disconnect.

A server's message on a stream (a log notification, a request of its own) is related to every client
request the stream carries; a batch POST carries up to `--max-open`. Each request's log takes such
messages one by one until it counts them in a run, with a relation to its cancel that later messages
cannot change (`ordering.steady`); from then on the stream counts them once for all those requests
(`entrylog.StreamCount`): a message costs one look at each request still taking them one by one, which
its entry limit bounds, not one per request.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from ..model import EntryKind, MessageEvent, Side, TimelineEntry, TransportEvent, TransportKind
from . import cancels, holds
from .entrylog import message_entry
from .ordering import steady
from .pending import SessionState, StreamNotes
from .request import PendingRequest

_TRANSPORT_ENTRY: Final[Mapping[TransportKind, tuple[EntryKind, Side | None]]] = {
    TransportKind.STREAM_OPENED: (EntryKind.STREAM_OPENED, Side.SERVER),
    TransportKind.CLOSED_BY_CLIENT: (EntryKind.STREAM_CLOSED_BY_CLIENT, Side.CLIENT),
    TransportKind.CLOSED_BY_SERVER: (EntryKind.STREAM_CLOSED_BY_SERVER, Side.SERVER),
    TransportKind.RESET_BY_CLIENT: (EntryKind.STREAM_RESET_BY_CLIENT, Side.CLIENT),
    TransportKind.RESET_BY_SERVER: (EntryKind.STREAM_RESET_BY_SERVER, Side.SERVER),
    TransportKind.RECEIVE_WINDOW_ZERO: (EntryKind.RECEIVE_WINDOW_ZERO, Side.CLIENT),
    TransportKind.SERVER_BYTES: (EntryKind.SERVER_BYTES, Side.SERVER),
    TransportKind.RECORDING_ENDED: (EntryKind.RECORDING_ENDED, None),
}
_CLIENT_DISCONNECTS: Final = (TransportKind.CLOSED_BY_CLIENT, TransportKind.RESET_BY_CLIENT)
_STREAM_ENDS: Final = (
    TransportKind.CLOSED_BY_CLIENT,
    TransportKind.CLOSED_BY_SERVER,
    TransportKind.RESET_BY_CLIENT,
    TransportKind.RESET_BY_SERVER,
)


def on_transport(session: SessionState, event: TransportEvent) -> list[PendingRequest]:
    """Put the event on every open request its stream carries; returns those now settled (to be
    finalised)."""
    mapped = _TRANSPORT_ENTRY.get(event.kind)
    if mapped is None or event.stream is None:
        return []  # process exit and session-level closes: facts about the session, not a request
    entry_kind, side = mapped
    settled = []
    for key in list(session.streams.get(event.stream, ())):
        item = session.open.get(key)
        if item is None:
            continue
        entry = TimelineEntry(entry_kind, side, event.seq, event.ts, event.origin, event.stream, excerpt=event.detail)
        if event.kind is TransportKind.STREAM_OPENED:
            item.sse = True
        if event.kind in _CLIENT_DISCONNECTS and not item.replied and not item.disconnected and not item.reply_unread:
            # (a reply recorded but unread may have come first: then the close cancelled nothing)
            item.disconnected = True
            session.held.setdefault(item.seq, item)
            cancels.disconnect(session, item, entry, event)
        if not (item.is_task and item.replied and event.kind in _CLIENT_DISCONNECTS):
            session.add_entry(item, entry)  # once its task handle is returned, closing its stream is not a cancel
        if event.kind in _STREAM_ENDS:
            item.stream_ended = True
            if holds.settled(session, item):
                settled.append(item)
    return settled


def on_note(session: SessionState, event: MessageEvent) -> None:
    """A server's message on a stream (not a reply, progress or cancel): on every client request it carries.

    One the capture proves crossed the client's close (`MessageEvent.crossed`) is CROSSING for each request
    (a race, as a reply that crossed it), so it is tagged one by one: a count shared since an earlier note
    would tag it like the others, and a share begun on it would tag the notes after it like it."""
    notes = session.stream_notes.get(event.stream or "")
    if notes is None:
        return
    crossed = event.crossed
    if crossed:
        _unshare(session, notes, event.stream or "")
    entry = message_entry(EntryKind.RELATED_MESSAGE, Side.SERVER, event)
    notes.counter.add(entry)  # for the requests sharing the count; those that join below start after it
    counter, start = notes.counter, session.start
    sharing = []
    for seq, item in notes.eager.items():
        tagged = session.add_entry(item, entry, crossed=crossed)
        cancel = item.cancel
        if (
            not crossed
            and (
                cancel is None
                or steady(
                    cancel, item.requester, vantage=start.vantage, proof_seq=item.proof_seq, crossed=start.crossed
                )
            )
            and item.log.share(counter, tagged)
        ):
            sharing.append(seq)
    for seq in sharing:
        del notes.eager[seq]


def _unshare(session: SessionState, notes: StreamNotes, stream: str) -> None:
    """Every request of `stream` whose log shares its count (`notes`) takes its share and each note one by
    one again (rare: only a note that crossed a close needs it)."""
    for key in session.streams.get(stream, ()):
        item = session.open.get(key)
        if item is not None and item.log.shared is not None:
            item.log.catch_up()
            notes.eager[item.seq] = item
