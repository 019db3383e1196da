"""What a reply says of itself: that the request it answers was cancelled.

A receiver that writes "I was cancelled" had read the cancel before it wrote, however close in time:
an ordering proof read from the reply's content, apart from any timing window. The proof is a JSON-RPC
error (the code SDKs use for a cancelled request, or a message that names the cancel), or a tool result
marked `isError` whose text is a runtime's own words for a cancelled operation (`CancelWords`). Each
word is data here, in one place; what a reply says is matched against it, never shown from the reply.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from enum import Enum
from typing import Final

from ..model import Certainty, Message, MessageKind, TimelineEntry, record

# Read per message, so bound once: an enum member read off its class is an attribute look-up on Python 3.11
_ERROR: Final = MessageKind.ERROR
_RESULT: Final = MessageKind.RESULT

#: The error code SDKs use for "request cancelled" (LSP's RequestCancelled, adopted by the MCP SDKs).
REQUEST_CANCELLED_CODE = -32800
#: A tool result's text longer than this is not searched (the words are short; a body is not a proof).
MAX_TEXT = 4096


class CancelWords(Enum):
    """A runtime's or SDK's own words for an operation cancelled under it: (lower-case text, whose)."""

    GO_CONTEXT_CANCELED = ("context canceled", "Go's context.Canceled")
    PYTHON_CANCELLED_ERROR = ("cancellederror", "Python's asyncio.CancelledError")
    SDK_REQUEST_CANCELLED = ("request cancelled", 'the MCP SDKs\' "Request cancelled"')
    JS_ABORT_ERROR = ("aborterror", "JavaScript's AbortError")
    JS_OPERATION_ABORTED = ("this operation was aborted", "JavaScript's AbortSignal reason")

    @property
    def text(self) -> str:
        return self.value[0]

    @property
    def whose(self) -> str:
        return self.value[1]


@record
class SaidCancelled:
    """A reply's own word that its request was cancelled, and how sure that makes its order."""

    certainty: Certainty
    """EXACT: the protocol's code, an error naming the cancel, or a result whose whole text is a runtime's
    words; INFERRED: the words inside a longer text (a wrapped error may be another operation's)."""
    words: str
    """What it said, in our words (for the finding and the outcome)."""


def tagged(entry: TimelineEntry, message: Message) -> tuple[TimelineEntry, Certainty | None]:
    """The reply's timeline entry, with what it says of its cancel, and how sure that places it after the
    cancel (None: it says nothing of one)."""
    said = says_cancelled(message)
    if said is None:
        return entry, None
    return replace(entry, said_cancelled=said.words), said.certainty


def says_cancelled(message: Message) -> SaidCancelled | None:
    """The reply's word that it answers a cancelled request, or None."""
    if message.kind is _ERROR:
        return _error(message)
    if message.kind is _RESULT and message.payload.get("isError") is True:
        return _tool_error(message)
    return None


def _error(message: Message) -> SaidCancelled | None:
    if message.payload.get("code") == REQUEST_CANCELLED_CODE:
        return SaidCancelled(Certainty.EXACT, f"error code {REQUEST_CANCELLED_CODE}, request cancelled")
    text = message.payload.get("message")
    if not isinstance(text, str):
        return None
    lowered = text[:MAX_TEXT].lower()
    words = next((w for w in CancelWords if w.text in lowered), None)
    if words is not None:
        return SaidCancelled(Certainty.EXACT, f"an error that reads {words.whose}, {words.text!r}")
    if "cancel" in lowered:
        return SaidCancelled(Certainty.EXACT, "an error whose message names the cancel")
    return None


def _tool_error(message: Message) -> SaidCancelled | None:
    """A tool result marked isError whose text is a runtime's words for a cancelled operation."""
    for text in _texts(message):
        lowered = text.strip().rstrip(".").lower()
        whole = next((w for w in CancelWords if lowered == w.text), None)
        if whole is not None:
            return SaidCancelled(Certainty.EXACT, f"an isError result that reads {whole.whose}, {whole.text!r}")
        inside = next((w for w in CancelWords if w.text in lowered), None)
        if inside is not None:
            said = f"an isError result whose text contains {inside.whose}, {inside.text!r}"
            return SaidCancelled(Certainty.INFERRED, said)
    return None


def _texts(message: Message) -> Iterator[str]:
    content = message.payload.get("content")
    if not isinstance(content, list):
        return
    for item in content[:8]:
        if isinstance(item, dict) and item.get("type") == "text":
            text = item.get("text")
            if isinstance(text, str) and len(text) <= MAX_TEXT:
                yield text
