"""One open request while reconstruction follows it (`PendingRequest`): what its timeline will say, and what it
still waits for. A session's table of them is `pending.SessionState`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from ..model import (
    CancelInfo,
    EntryKind,
    MessageEvent,
    RequestId,
    Revision,
    Side,
    TimelineEntry,
    TransportEvent,
)
from .entrylog import EntryLog

RequestKey = tuple[Side, RequestId]
"""A request as its session's table knows it: the two peers number their requests separately."""
_NO_KINDS: Final[frozenset[EntryKind]] = frozenset()


@dataclass(slots=True, init=False)
class PendingRequest:
    """An open request: what its timeline will say, and what it still waits for. Its `__init__` is written
    out: mypyc compiles a written one, where the dataclass's own runs interpreted (one per request)."""

    requester: Final[Side]
    request_id: Final[RequestId]
    method: Final[str]
    seq: Final[int]
    """Position of the request itself."""
    tool: Final[str | None]
    """Tool name of a `tools/call`, else None."""
    progress_token: Final[str | int | None]
    is_task: Final[bool]
    """Task-augmented (`params.task`): its progress may go on after its CreateTaskResult."""
    stream: Final[str | None]
    """HTTP exchange that carried it; None on stdio."""
    declared_revision: Final[Revision | None]
    """Revision the request declared itself (`_meta` in 2026-07-28, or its HTTP version header)."""
    log: Final[EntryLog]
    cancel: CancelInfo | None
    replied: bool
    sse: bool
    """Its reply comes on an SSE stream, which should end after the reply."""
    stream_ended: bool
    disconnected: bool
    unposted_close: TransportEvent | None
    """The client's close of its stream before the reply, where a disconnect is no cancel (2025-03-26 to
    2025-11-25), while no notifications/cancelled for it has followed (`cancels.unmatched_mechanism`)."""
    unclosed_post: MessageEvent | None
    """A notifications/cancelled POSTed for it where closing its stream is the cancel (2026-07-28), while
    the client has not closed its stream (`cancels.unmatched_mechanism`)."""
    proof_seq: int | None
    """Seq from which the receiver provably had read the cancel (stdio ordering proof)."""
    last_progress: float | None
    verified_by: TimelineEntry | None
    gave_up: TimelineEntry | None
    """Where the requester's own library ended the call for its caller (`gave_up`), if it did."""
    reply_unread: frozenset[EntryKind]
    """What its timeline cannot show while no reply was read: a response recorded but not read
    (`Anomaly.reply_unread`) hides its reply; the direction its replies come on no longer read
    (`TransportKind.REPLIES_UNREAD`) hides the server's end of its stream too."""
    window: float | None
    """The race window its entries after the cancel are judged with, fixed at the first of them."""

    def __init__(
        self,
        *,
        requester: Side,
        request_id: RequestId,
        method: str,
        seq: int,
        tool: str | None,
        progress_token: str | int | None,
        is_task: bool,
        stream: str | None,
        declared_revision: Revision | None,
        log: EntryLog,
    ) -> None:
        self.requester, self.request_id, self.method, self.seq = requester, request_id, method, seq
        self.tool, self.progress_token, self.is_task, self.stream = tool, progress_token, is_task, stream
        self.declared_revision, self.log = declared_revision, log
        self.cancel, self.replied, self.sse, self.stream_ended, self.disconnected = None, False, False, False, False
        self.unposted_close = self.unclosed_post = None
        self.proof_seq = self.last_progress = self.verified_by = self.gave_up = None
        self.reply_unread, self.window = _NO_KINDS, None

    @property
    def key(self) -> RequestKey:
        return (self.requester, self.request_id)

    @property
    def held(self) -> bool:
        """Kept open past its reply: late messages and verifying reads still matter."""
        return self.cancel is not None or self.disconnected
