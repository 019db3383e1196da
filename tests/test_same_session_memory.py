"""The same-session hint's memory (`merge.same_session.Requests`): the earliest `MAX_REQUESTS` requests
of every session are kept until the session ends, which on a capture is its end (issue 20)."""

from __future__ import annotations

import tracemalloc

import orjson
from cancelwire.merge.same_session import MAX_REQUESTS, Requests, _unpacked
from cancelwire.model import (
    EntryKind,
    Origin,
    RequestTimeline,
    RevisionBasis,
    Side,
    TimelineEntry,
    ToolEffect,
    Transport,
    Vantage,
)


def _timeline(session: str, seq: int, *, ts: float | None = 1.0, reply: bool = True) -> RequestTimeline:
    request = {"jsonrpc": "2.0", "id": seq, "method": "tools/call", "params": {"name": "slow", "arguments": {}}}
    entries = [
        TimelineEntry(EntryKind.REQUEST, Side.CLIENT, seq, ts, Origin("f"), excerpt=orjson.dumps(request).decode())
    ]
    if reply:
        said = {"jsonrpc": "2.0", "id": seq, "result": {"content": [{"type": "text", "text": f"done {seq % 3}"}]}}
        entries.append(
            TimelineEntry(
                EntryKind.RESULT, Side.SERVER, seq + 1, None, Origin("f"), excerpt=orjson.dumps(said).decode()
            )
        )
    return RequestTimeline(
        session_key=session,
        requester=Side.CLIENT,
        request_id=seq,
        method="tools/call",
        tool="slow",
        tool_effect=ToolEffect.UNKNOWN,
        progress_token=None,
        revision=None,
        revision_basis=RevisionBasis.ASSUMED,
        transport=Transport.STDIO,
        vantage=Vantage.CLIENT,
        stream=None,
        entries=tuple(entries),
        cancel=None,
    )


def test_the_earliest_requests_are_kept_with_what_was_not_recorded() -> None:
    seen = Requests()
    for seq in [500, 40, *range(1_000, 1_100), 7]:
        seen.add(_timeline("s", seq, ts=None if seq == 7 else seq / 10, reply=seq != 40))
    kept = [_unpacked(entry) for entry in seen.pop("s")]
    assert len(kept) == MAX_REQUESTS
    assert [(ts, said is None, got) for _, ts, said, got in kept[:3]] == [
        (None, False, None),
        (4.0, True, None),
        (50.0, False, None),
    ]
    assert [ts for _, ts, _, _ in kept[3:]] == [seq / 10 for seq in range(1_000, 1_000 + MAX_REQUESTS - 3)]
    assert len({key for key, *_ in kept}) == MAX_REQUESTS  # one key per id
    assert len({said for _, _, said, _ in kept[2:]}) == 3  # the replies say one of three things
    assert seen.pop("s") == ()


def test_a_session_s_requests_are_remembered_in_little_memory() -> None:
    """Issue 20: 603 sessions of the big capture kept 32 requests each to its end, about 10 KB a session.
    Traced memory for 200 sessions of 32 requests each (their timelines made before): 85 B a request
    packed in bytes, 268 B as tuples of strings and floats (digests as hex text)."""
    sessions = 200
    timelines = [_timeline(f"s{n}", seq) for n in range(sessions) for seq in range(MAX_REQUESTS)]
    seen = Requests()
    tracemalloc.start()
    try:
        for timeline in timelines:
            seen.add(timeline)
        per_request = tracemalloc.get_traced_memory()[0] / len(timelines)
    finally:
        tracemalloc.stop()
    assert len(seen.pop("s0")) == MAX_REQUESTS
    assert per_request <= 100, per_request
