"""Cancelled requests held open: when they may be finalised, and what later messages prove about them.

A cancelled (or disconnected) request stays open after its cancel, since a late reply or a verifying
read may still come; it is judged `hold_seconds` of recording time after its cancel at the latest, so
memory follows held cancels, not input size. While held, a reply to a later request can prove that
the receiver had read the cancel (stdio pipes are read in order), and a successful read can verify
what a cancelled side-effecting call did.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Final

from ..model import TimelineEntry, ToolEffect, Transport
from .pending import SessionState
from .request import PendingRequest

# Read per message, so bound once: an enum member read off its class is an attribute look-up on Python 3.11
_STDIO: Final = Transport.STDIO


def hold(session: SessionState, item: PendingRequest) -> None:
    """A cancelled request stays open: a late reply or a verifying read can still come."""
    session.held.setdefault(item.seq, item)
    if session.start.transport is _STDIO:
        session.awaiting_proof.setdefault(item.requester, {})[item.seq] = item
    if item.tool is not None:
        session.awaiting_read[item.seq] = item


def settled(session: SessionState, item: PendingRequest) -> bool:
    """Nothing later can change this timeline's verdicts: finalise it now and free it.

    Answered on stdio; answered with its stream ended on HTTP, unless cancelled or disconnected,
    which stay open for what the server may still write (bounded by open streams)."""
    if not item.replied:
        return False
    if session.start.transport is _STDIO:
        return True
    return not item.held and (not item.sse or item.stream_ended)


def expired(session: SessionState, now: float, hold_seconds: float) -> Iterator[PendingRequest]:
    """Held requests whose hold is over at recording time `now`, oldest cancel first.

    The caller finalises each one before asking for the next (finalising removes it from `held`)."""
    while session.held:
        item = next(iter(session.held.values()))
        cancelled_at = item.cancel.entry.ts if item.cancel else item.log.entries[-1].ts
        if cancelled_at is None or now - cancelled_at <= hold_seconds:
            # nothing expires before the oldest does: look again only then (or a second from now)
            session.next_expiry_check = now + 1.0 if cancelled_at is None else cancelled_at + hold_seconds
            return
        if session.start.transport is not _STDIO and not item.stream_ended:
            return  # an open HTTP stream is still watched (bounded by open connections)
        yield item


def prove_order(session: SessionState, answered: PendingRequest, reply_seq: int) -> None:
    """stdio: a reply to a request sent after a cancel proves the cancel was read (in-order pipes).

    Only the cancels of the same requester are looked at (its pipe is the one read in order), oldest
    first, up to the first one sent after the answered request: a reply costs what it proves, plus one."""
    waiting = session.awaiting_proof.get(answered.requester)
    if waiting is None:
        return
    proven = []
    for key, item in waiting.items():
        cancel = item.cancel  # every waiting request has one
        if cancel is None or cancel.entry.seq >= answered.seq:
            break  # in cancel order: no later cancel is proven by this reply either
        item.proof_seq = reply_seq
        proven.append(key)
    for key in proven:
        del waiting[key]
    if not waiting:
        del session.awaiting_proof[answered.requester]


def verify_reads(
    session: SessionState,
    read: PendingRequest,
    reply: TimelineEntry,
    verifying_reads: Mapping[str, tuple[str, ...]],
) -> None:
    """A successful later read may have checked what a cancelled side-effecting call did. Only one that
    succeeded: a JSON-RPC error or a tool result marked `isError` checked nothing."""
    read_name = "resources/read" if read.method == "resources/read" else read.tool
    if read_name is None:
        return
    is_read = read.method == "resources/read" or session.tool_effects.get(read_name) is ToolEffect.READ_ONLY
    for key, item in list(session.awaiting_read.items()):
        if item.cancel is None or item.cancel.entry.seq > read.seq or item is read or item.tool is None:
            continue
        mapped = verifying_reads.get(item.tool)
        if (mapped is not None and read_name in mapped) or (mapped is None and is_read):
            item.verified_by = replace(reply, method=read_name)
            del session.awaiting_read[key]
