"""Classify one decoded JSON value into JSON-RPC messages, or name what is wrong with it."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import orjson

from . import Message, MessageKind
from .anomalies import AnomalyName

EXCERPT_CHARS: Final = 400
_ABSENT: Final[Any] = object()
"""A member that is not there (a JSON `null` is there, as None)."""
# Read per message, so bound once: on Python 3.11 reading an enum member off its class (`MessageKind.REQUEST`)
# runs `EnumType.__getattr__`'s hook, about 150 ns against 20 for a global (docs/benchmark.md).
_REQUEST: Final = MessageKind.REQUEST
_NOTIFICATION: Final = MessageKind.NOTIFICATION
_RESULT: Final = MessageKind.RESULT
_ERROR: Final = MessageKind.ERROR
INVALID_PARAMS = -32602
"""JSON-RPC's "Invalid params" error code; `tasks/cancel` for a task already final is answered with it (TSK-2)."""


def error_status(code: int | str) -> str:
    """What a task entry says of an error answer (`TimelineEntry.status`): `error -32602`."""
    return f"error {code}"


def error_code(error: Mapping[str, Any]) -> int | None:
    """An error reply's `code` (its payload: the `error` object), when it is an integer a 64-bit column holds."""
    code = error.get("code")
    if isinstance(code, int) and not isinstance(code, bool) and -(2**63) <= code < 2**63:
        return code
    return None


CANCEL_REJECTED = error_status(INVALID_PARAMS)
"""The status of a `tasks/cancel` answered INVALID_PARAMS: the task was already final."""


def json_kind(value: Any) -> str:
    """A JSON value's type in a word or two, never its content (a hostile peer chose it)."""
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an object" if isinstance(value, dict) else "an array"


@dataclass(frozen=True, slots=True)
class Problem:
    """A message-level problem; becomes an `Anomaly` with this name."""

    name: AnomalyName
    detail: str


@dataclass(slots=True, init=False)
class Decoded:
    """What one JSON text holds. One per message: `Final` fields and a written `__init__`, which mypyc
    compiles (a dataclass's own `__init__` runs interpreted)."""

    messages: Final[tuple[Message, ...]]
    problems: Final[tuple[Problem, ...]]
    batch: Final[bool]
    """True when the value was a JSON array (a batch, legal only in 2025-03-26)."""

    def __init__(self, messages: tuple[Message, ...], problems: tuple[Problem, ...], batch: bool = False) -> None:
        self.messages, self.problems, self.batch = messages, problems, batch


def excerpt(text: str | bytes) -> str:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return text if len(text) <= EXCERPT_CHARS else text[:EXCERPT_CHARS] + f"… ({len(text)} chars)"


INEXACT: Final = Problem(AnomalyName.JSONRPC_INVALID_MESSAGE, "an integer beyond 64 bits was read as a float")
"""An internal signal, never reported: orjson reads an integer beyond 64 bits as a float, so an id, a
`requestId` or a `progressToken` that is one is read again, exactly, by the standard library. (A `Problem`
has a name; this one is read again before any problem is reported.)"""


def decode_text(text: str | bytes) -> Decoded | None:
    """Parse JSON text; None when it is not JSON at all (the caller names that anomaly)."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        value = _lenient_loads(text)
        if value is _ABSENT:
            return None
        return classify(value, excerpt(text), exact=True)
    return classify_text(value, text)


def classify_text(value: Any, text: str | bytes) -> Decoded:
    """`classify` for a VALUE orjson parsed from TEXT: read again exactly when an id needs it."""
    decoded = classify(value, excerpt(text))
    if INEXACT in decoded.problems:
        exact = _lenient_loads(text)  # _ABSENT only past the standard library's nesting limit
        decoded = classify(value if exact is _ABSENT else exact, excerpt(text), exact=True)
    return decoded


def dumps(value: Any, *, indent: bool = False) -> bytes:
    """JSON bytes for VALUE; exact for integers beyond 64 bits, which orjson cannot write."""
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2 if indent else None)
    except orjson.JSONEncodeError:
        return json.dumps(value, indent=2 if indent else None, ensure_ascii=False).encode("utf-8", "replace")


_SURROGATE: Final = re.compile(r"[\ud800-\udfff]")  # escapes read by re: mypyc refuses surrogates in literals


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _lenient_loads(text: str | bytes) -> Any:
    """JSON that orjson refuses but RFC 8259 allows: a lone surrogate escape such as "\\udcff" (what
    Python's json.dumps writes for a file name that is not UTF-8). Parsed by the standard library, with
    every lone surrogate replaced by U+FFFD so no later stage meets one; `_ABSENT` when it is not JSON
    (NaN and Infinity are not; nesting past the standard library's recursion limit is reported as not
    JSON instead of raising). Only reached when orjson fails, so the hot path never pays for it."""
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return _ABSENT
    return _without_surrogates(value)


def loads_any(text: str | bytes) -> tuple[bool, Any]:
    """`(True, value)` for any JSON text, not only JSON-RPC (orjson, else the standard library as in
    `_lenient_loads`: ids past 64 bits, lone surrogates replaced); `(False, None)` when it is not JSON."""
    try:
        return True, orjson.loads(text)
    except orjson.JSONDecodeError:
        value = _lenient_loads(text)
    return (False, None) if value is _ABSENT else (True, value)


def _clean(text: str) -> str:
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _without_surrogates(value: Any) -> Any:
    """VALUE with lone surrogates replaced in every string, key or item (iteratively: no recursion)."""
    if isinstance(value, str):
        return _clean(value)
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            items = [(_clean(k), v) for k, v in node.items()]
            node.clear()
            for key, item in items:
                node[key] = _clean(item) if isinstance(item, str) else item
                if isinstance(item, dict | list):
                    stack.append(item)
        elif isinstance(node, list):
            for index, item in enumerate(node):
                if isinstance(item, str):
                    node[index] = _clean(item)
                elif isinstance(item, dict | list):
                    stack.append(item)
    return value


def _id_problem(msg_id: Any, exact: bool) -> Problem | None:
    """What is wrong with an id that is not a plain str, int or null (an int subclass may be fine)."""
    if isinstance(msg_id, str | int) and not isinstance(msg_id, bool):
        return None
    if type(msg_id) is float and not exact:
        return INEXACT
    return Problem(AnomalyName.JSONRPC_INVALID_MESSAGE, f"id must be a string or an integer, got {msg_id!r:.60}")


def classify(value: Any, raw_excerpt: str, *, exact: bool = False) -> Decoded:
    """The messages in VALUE; EXACT when its integers are exact (a float id then is a float)."""
    if isinstance(value, list):
        if not value:
            return Decoded(
                (), (Problem(AnomalyName.JSONRPC_EMPTY_BATCH, "an empty JSON array is not a message"),), True
            )
        messages: list[Message] = []
        problems: list[Problem] = []
        for item in value:
            one = classify_one(item, excerpt(dumps(item)), exact=exact)
            if isinstance(one, Message):
                messages.append(one)
            else:
                problems.append(one)
        return Decoded(tuple(messages), tuple(problems), True)
    one = classify_one(value, raw_excerpt, exact=exact)
    if isinstance(one, Message):
        return Decoded((one,), ())
    return Decoded((), (one,))


def classify_one(value: Any, raw_excerpt: str, *, exact: bool = False) -> Message | Problem:
    """One JSON value (not a batch): the message it is, or the problem that keeps it from being one;
    `INEXACT` when an id or token is a float that may be an integer beyond 64 bits (not EXACT).

    Written for mypyc, which compiles it (setup.py): `dict.get` on a value known to be a dict and `type(x)`
    are direct C calls there, where a bound method or `__class__` goes through the generic call path."""
    if not isinstance(value, dict):
        return Problem(AnomalyName.JSONRPC_INVALID_MESSAGE, f"a JSON {type(value).__name__} is not a JSON-RPC message")
    if value.get("jsonrpc") != "2.0":
        return Problem(AnomalyName.JSONRPC_INVALID_MESSAGE, 'missing or wrong "jsonrpc": "2.0" member')
    msg_id = value.get("id", _ABSENT)
    id_type = type(msg_id)
    if not (id_type is int or id_type is str or msg_id is None or msg_id is _ABSENT):
        problem = _id_problem(msg_id, exact)
        if problem is not None:
            return problem
    method = value.get("method")
    if method is not None:
        return _request(value, method, msg_id, raw_excerpt, exact)
    return _response(value, msg_id, raw_excerpt)


def _request(value: dict[str, Any], method: Any, msg_id: Any, raw_excerpt: str, exact: bool) -> Message | Problem:
    """A request, or a notification when it has no id."""
    if not isinstance(method, str):
        return Problem(AnomalyName.JSONRPC_INVALID_MESSAGE, "method must be a string")
    params = value.get("params")
    payload: dict[str, Any] = params if isinstance(params, dict) else {}
    if msg_id is _ABSENT:
        if not exact and (type(payload.get("requestId")) is float or type(payload.get("progressToken")) is float):
            return INEXACT
        return Message(_NOTIFICATION, None, method, payload, raw_excerpt, False)
    meta = payload.get("_meta")
    if not exact and isinstance(meta, dict) and type(meta.get("progressToken")) is float:
        return INEXACT
    return Message(_REQUEST, msg_id, method, payload, raw_excerpt, msg_id is None)


def _response(value: dict[str, Any], msg_id: Any, raw_excerpt: str) -> Message | Problem:
    """A result or an error."""
    result = value.get("result", _ABSENT)
    error = value.get("error", _ABSENT)
    if result is not _ABSENT and error is not _ABSENT:
        return Problem(AnomalyName.JSONRPC_RESULT_AND_ERROR, "a response carries both result and error")
    if result is _ABSENT and error is _ABSENT:
        return Problem(AnomalyName.JSONRPC_INVALID_MESSAGE, "neither a request (method) nor a response (result/error)")
    if msg_id is _ABSENT:
        return Problem(AnomalyName.JSONRPC_INVALID_MESSAGE, "a response without an id member")
    if result is not _ABSENT:
        return Message(_RESULT, msg_id, None, result if isinstance(result, dict) else {}, raw_excerpt, msg_id is None)
    if not isinstance(error, dict) or not isinstance(error.get("code"), int):
        return Problem(AnomalyName.JSONRPC_INVALID_MESSAGE, "error must be an object with an integer code")
    return Message(_ERROR, msg_id, None, error, raw_excerpt, msg_id is None)
