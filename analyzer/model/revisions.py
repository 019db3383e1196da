"""What each MCP protocol revision says about the facts reconstruction and the engine depend on.

Each fact cites the spec page it comes from (see shared PROTOCOL.md for the digest). Rule files hold
their own per-revision levels; a test checks that they agree with this table.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import REVISIONS, Revision

#: `params._meta` key carrying the revision in every 2026-07-28 request (Lifecycle, 2026-07-28).
META_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"


@dataclass(frozen=True, slots=True)
class RevisionFacts:
    revision: Revision
    handshake: bool
    """`initialize` negotiates the revision (Lifecycle; removed in 2026-07-28)."""
    batches: bool
    """JSON arrays are legal messages (Basic / Messages, 2025-03-26 only)."""
    unique_ids_per_session: bool
    """Ids are never reused by a sender in a session (≤2025-11-25); later only among unanswered ids."""
    server_may_cancel: bool
    """The server may cancel its own requests (Cancellation utility ≤2025-11-25); in 2026-07-28 only
    to end a client's `subscriptions/listen`."""
    http_disconnect_is_cancel: bool | None
    """Closing a request's SSE stream cancels it (2026-07-28, Streamable HTTP); False where a disconnect
    SHOULD NOT count as a cancel (2025-03-26 to 2025-11-25); None where the transport had no such rule."""
    http_notification_is_cancel: bool
    """A POSTed `notifications/cancelled` is the HTTP cancel (≤2025-11-25)."""
    task_progress: bool = False
    """A task-augmented request's progress token lives until its task ends (Tasks, Task Progress
    Notifications, 2025-11-25); the 2026-07-28 Tasks extension supports no progress on tasks."""
    null_id_error: bool = False
    """An error answering a request whose id could not be read may carry a null id (JSON-RPC 2.0; the
    MCP schema allows it from 2025-11-25)."""
    task_cancel_cooperative: bool = False
    """`tasks/cancel` only asks, and a cancelled task may still complete (the Tasks extension,
    2026-07-28); in 2025-11-25 the receiver marks the task cancelled and it stays so (TSK-1)."""


FACTS: dict[Revision, RevisionFacts] = {
    "2024-11-05": RevisionFacts("2024-11-05", True, False, True, True, None, True),
    "2025-03-26": RevisionFacts("2025-03-26", True, True, True, True, False, True),
    "2025-06-18": RevisionFacts("2025-06-18", True, False, True, True, False, True),
    "2025-11-25": RevisionFacts(
        "2025-11-25", True, False, True, True, False, True, task_progress=True, null_id_error=True
    ),
    "2026-07-28": RevisionFacts(
        "2026-07-28", False, False, False, False, True, False, null_id_error=True, task_cancel_cooperative=True
    ),
}
assert tuple(FACTS) == REVISIONS  # the table covers every known revision (a code invariant, not input)


def facts(revision: Revision | None) -> RevisionFacts | None:
    return FACTS.get(revision) if revision else None
