"""A reply's own word that its request was cancelled (`rebuild.cancel_words`): which words, how sure."""

from __future__ import annotations

from typing import Any

import pytest
from cancelwire.model import Certainty, Message, MessageKind
from cancelwire.rebuild.cancel_words import CancelWords, says_cancelled


def _error(code: int, message: str) -> Message:
    return Message(MessageKind.ERROR, 1, None, {"code": code, "message": message}, "")


def _tool_result(text: str, *, is_error: Any = True) -> Message:
    return Message(MessageKind.RESULT, 1, None, {"content": [{"type": "text", "text": text}], "isError": is_error}, "")


@pytest.mark.parametrize(
    ("message", "certainty"),
    [
        # the JSON-RPC errors the tool always took as proof
        (_error(-32800, "x"), Certainty.EXACT),
        (_error(-1, "Request Cancelled by user"), Certainty.EXACT),
        (_error(0, "Request cancelled"), Certainty.EXACT),  # python-sdk 1.x's answer to a cancel
        # JavaScript's words in an error
        (_error(-32603, "AbortError: This operation was aborted"), Certainty.EXACT),
        (_error(-32603, "This operation was aborted"), Certainty.EXACT),
        # a tool result marked isError, whole text a runtime's words (the Go SDK v1.7.0's own reply)
        (_tool_result("context canceled"), Certainty.EXACT),
        (_tool_result("Context canceled."), Certainty.EXACT),
        (_tool_result("CancelledError"), Certainty.EXACT),
        (_tool_result("this operation was aborted"), Certainty.EXACT),
        # the words inside a longer text: a wrapped error may be another operation's
        (_tool_result("fetch ledger: context canceled"), Certainty.INFERRED),
        (_tool_result("Error executing tool append: CancelledError()"), Certainty.INFERRED),
    ],
)
def test_words_that_say_cancelled(message: Message, certainty: Certainty) -> None:
    said = says_cancelled(message)
    assert said is not None and said.certainty is certainty


@pytest.mark.parametrize(
    "message",
    [
        _error(-32603, "internal error"),
        _tool_result("ledger unavailable"),  # a tool that failed for its own reason
        _tool_result("context canceled", is_error=False),  # a successful answer that mentions the words
        _tool_result("context canceled", is_error="true"),  # not the boolean the schema says
        Message(MessageKind.RESULT, 1, None, {"message": "cancelled"}, ""),
        Message(MessageKind.RESULT, 1, None, {"content": "context canceled", "isError": True}, ""),
        Message(MessageKind.NOTIFICATION, None, "notifications/cancelled", {"reason": "context canceled"}, ""),
    ],
)
def test_words_that_do_not(message: Message) -> None:
    assert says_cancelled(message) is None


def test_what_it_said_is_ours_not_the_replys() -> None:
    hostile = "context canceled\x1b[2J"
    said = says_cancelled(_error(-1, hostile))
    assert said is not None and "\x1b" not in said.words
    assert said.words == f"an error that reads {CancelWords.GO_CONTEXT_CANCELED.whose}, 'context canceled'"
