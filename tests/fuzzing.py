"""Shared pieces of the fuzz tests and `scripts/robustness.py`: budgets, samples, mutations, strategies.

The budget: every fuzz test runs a fixed, derandomised number of examples (reproducible in CI, no example
database). `CANCELWIRE_FUZZ_EXAMPLES=N` multiplies each test's default by N/10 and explores with fresh
randomness, for long local runs:

    CANCELWIRE_FUZZ_EXAMPLES=1000 .venv/bin/python -m pytest -q tests/test_fuzz_*.py

Mutations are plain functions of (bytes, random.Random) so the robustness script draws them from a seed
and the hypothesis strategies draw them from a hypothesis-controlled `Random` (which shrinks).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import gzip
import io
import json
import os
import random
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
LONG_RUN = os.environ.get("CANCELWIRE_FUZZ_EXAMPLES")
RAW_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
"""What must never reach a terminal raw: C0 controls but tab and newline, and DEL."""


def fuzz_settings(examples: int, *, slow_data: bool = False) -> settings:
    """`examples` in CI (derandomised, no database); scaled by CANCELWIRE_FUZZ_EXAMPLES for long runs.

    `slow_data`: the strategies draw whole sample files and mutate them, which hypothesis flags as
    too slow / too large to generate; that is the point here, not a mistake in the strategy.
    """
    checks = [HealthCheck.too_slow, HealthCheck.data_too_large] if slow_data else []
    if LONG_RUN:
        return settings(
            max_examples=max(1, examples * int(LONG_RUN) // 10),
            deadline=None,
            suppress_health_check=checks,
        )
    return settings(max_examples=examples, deadline=None, derandomize=True, database=None, suppress_health_check=checks)


PENDING: dict[str, str] = {}
"""Failure classes whose fix has not landed on main: the fuzzers leave these inputs out (and say so) until
it does; their reproducers wait in tests/corpus/pending/ (its README says what each is)."""


# ---------------------------------------------------------------------------------------------- samples

READER_SAMPLES: dict[str, tuple[str, ...]] = {
    "cancelwire-transcript": (
        "sample_captures/stdio/sdk-cancel-slow-tool.jsonl",
        "sample_captures/stdio/handwritten-server-late-result-after-cancel.jsonl",
        "sample_captures/stdio/handwritten-client-cancels-unknown-id.jsonl",
        "sample_captures/stdio/sdk-cancel-then-verify-by-read.jsonl",
    ),
    "claude-desktop": ("tests/fixtures/hostlogs/mcp.log", "tests/fixtures/hostlogs/mcp-server-slow-demo.log"),
    "vscode": ("tests/fixtures/hostlogs/vscode-slow-demo.log", "tests/fixtures/hostlogs/vscode-2025-slow-demo.log"),
    "python-sdk-log": (
        "tests/fixtures/hostlogs/pysdk-sse-server-debug.log",
        "tests/fixtures/hostlogs/pysdk-mcp-logger-debug.log",
    ),
    "go-sdk": ("tests/fixtures/hostlogs/gosdk-client.log", "tests/fixtures/hostlogs/gosdk-server.log"),
    "ndjson": (
        "tests/fixtures/hostlogs/session.ndjson",
        "tests/fixtures/hostlogs/session-sendrecv.jsonl",
        "tests/fixtures/hostlogs/session-dir.jsonl",
    ),
    "har": (
        "sample_captures/har/mitmdump-sdk-cancel-notification.har",
        "sample_captures/har/browser-chromium-cancel.har",
        "sample_captures/har/chromium-chrome-har-cancel.har",  # postData.params, an aborted fetch without _error
        "tests/rules/har-request-failed/triggers.har",
    ),
    "mcpsnoop": (
        "tests/fixtures/mcpsnoop/stdio-late-result-after-cancel.jsonl",
        "tests/fixtures/mcpsnoop/http-sdk-cancel-notification.jsonl",
    ),
    "inspector": (
        "tests/fixtures/inspector/history-late-result-after-cancel.json",
        "tests/fixtures/inspector/network-sdk-cancel-notification.json",
    ),
    "mitmproxy": (
        "sample_captures/mitmproxy/mitmdump-sdk-cancel-notification.flows",
        "sample_captures/mitmproxy/mitmdump-h2-client-resets-stream.flows",
    ),
    "otlp": (
        "sample_captures/otlp/sdk-stdio-cancel-handler-runs-on.server.otlp.jsonl",
        "sample_captures/otlp/sdk-stdio-cancel-handler-runs-on.client.otlp.jsonl",
    ),
    "pcap": (
        "sample_captures/http/sdk-http-cancel-close-stream.pcapng",
        "sample_captures/http/bad-server-writes-after-disconnect.pcapng",
        "sample_captures/http2/bad-h2-server-writes-after-reset.pcapng",
        "tests/rules/http-error-status/triggers.pcapng",
        "tests/rules/sse-event-cut-off/triggers.pcapng",
        "sample_captures/http/sdk-http-gzip-sse-cancel.pcapng",  # Content-Encoding: gzip SSE streams
    ),
}
"""Real recordings per reader (`--input-format` names), smallest useful ones: mutation starts from these."""

TEXT_READERS = tuple(name for name in READER_SAMPLES if name != "pcap")


@functools.cache
def sample_bytes(reader: str) -> tuple[bytes, ...]:
    return tuple((ROOT / path).read_bytes() for path in READER_SAMPLES[reader])


# ---------------------------------------------------------------------------------------------- mutations

CONTROL_BYTES = (
    b"\x00",
    b"\x1b[2J",
    b"\x1b]0;pwned\x07",
    b"\r",
    b"\x7f",
    b"\x08\x08\x08",
    b"\x0c",
    b"\x85",
    b"\xe2\x80\xae",
)
HUGE_NUMBERS = (b"18446744073709551616", b"1e400", b"-1e400", b"9" * 400, b"-0", b"1.7976931348623157e309", b"NaN")
DEEP_NEST = 100_000


@dataclass(frozen=True, slots=True)
class Mutated:
    op: str
    data: bytes
    damaged: tuple[int, int]
    """Byte range of `data` that differs from the original (everything outside it is the original, shifted);
    (0, len(data)) when the whole input changed shape (gzip, CR endings)."""


def _pos(data: bytes, rng: random.Random) -> int:
    return rng.randrange(len(data) + 1)


def _line_start(data: bytes, rng: random.Random) -> int:
    starts = [0, *(m.end() for m in re.finditer(rb"\n", data))]
    return rng.choice(starts)


def _whole(op: str, data: bytes) -> Mutated:
    return Mutated(op, data, (0, len(data)))


def _replace(op: str, data: bytes, start: int, end: int, new: bytes) -> Mutated:
    return Mutated(op, data[:start] + new + data[end:], (start, start + len(new)))


def bit_flips(data: bytes, rng: random.Random, donor: bytes) -> Mutated:
    if not data:
        return _whole("bit-flips", data)
    out = bytearray(data)
    touched = [rng.randrange(len(out)) for _ in range(rng.randint(1, 8))]
    for at in touched:
        out[at] ^= 1 << rng.randrange(8)
    return Mutated("bit-flips", bytes(out), (min(touched), max(touched) + 1))


def truncation(data: bytes, rng: random.Random, donor: bytes) -> Mutated:
    cut = _pos(data, rng)
    return Mutated("truncation", data[:cut], (cut, cut))


def duplication(data: bytes, rng: random.Random, donor: bytes) -> Mutated:
    start = _pos(data, rng)
    end = min(len(data), start + rng.randint(1, 4096))
    return _replace("duplication", data, end, end, data[start:end])


def splice(data: bytes, rng: random.Random, donor: bytes) -> Mutated:
    """The start of this input, then the rest of another from a random point (two files glued)."""
    cut, other = _pos(data, rng), _pos(donor, rng)
    return _replace("splice", data, cut, len(data), donor[other:])


def half_line(data: bytes, rng: random.Random, donor: bytes) -> Mutated:
    """One line cut in the middle, its newline kept: a writer killed mid-line, then restarted."""
    start = _line_start(data, rng)
    end = data.find(b"\n", start)
    end = len(data) if end < 0 else end
    cut = start + (end - start) // 2
    return Mutated("half-line", data[:cut] + data[end:], (cut, cut))


def control_bytes(data: bytes, rng: random.Random, donor: bytes) -> Mutated:
    at = _pos(data, rng)
    return _replace("control-bytes", data, at, at, rng.choice(CONTROL_BYTES) * rng.randint(1, 3))


def deep_nesting(data: bytes, rng: random.Random, donor: bytes) -> Mutated:
    """Thousands of unclosed brackets inside a message (sometimes with the rest of its line cut)."""
    braces = [m.start() for m in re.finditer(rb"[{\[]", data)]
    at = rng.choice(braces) if braces and rng.random() < 0.7 else _line_start(data, rng)
    nest = rng.choice((b"[", b'{"a":')) * rng.choice((1_000, DEEP_NEST))
    if rng.random() < 0.5:
        end = data.find(b"\n", at)
        return _replace("deep-nesting", data, at, len(data) if end < 0 else end, nest)
    return _replace("deep-nesting", data, at, at, nest)


def huge_number(data: bytes, rng: random.Random, donor: bytes) -> Mutated:
    numbers = list(re.finditer(rb"(?<![\w.])-?\d+(?:\.\d+)?", data))
    if not numbers:
        return control_bytes(data, rng, donor)
    found = rng.choice(numbers)
    return _replace("huge-number", data, found.start(), found.end(), rng.choice(HUGE_NUMBERS))


WRONG_TYPED_LITERALS = (b"5", b"0", b"true", b"false", b"null", b"1e308", b"-1e308", b"18446744073709551616")
WRONG_TYPED_LITERALS += (b"[]", b"[[1,[2,[3]]]]", b"{}", b"[{},[],true]")
"""JSON values a member of another type may be replaced by: no quotes, so they fit raw and escaped JSON alike."""
_MEMBER = re.compile(rb'\\?"[A-Za-z_/][\w/.-]{0,40}\\?"\s*:\s*')


def _value_end(data: bytes, start: int) -> int:
    """Where the JSON value at `start` ends, roughly: brackets counted, a (possibly escaped) string to its
    closing quote, else up to the next `,` `}` `]` (good enough to replace a value with another)."""
    if data[start : start + 1] in (b"[", b"{"):
        depth = 0
        for at in range(start, min(len(data), start + 100_000)):
            char = data[at : at + 1]
            depth += (char in (b"[", b"{")) - (char in (b"]", b"}"))
            if depth == 0:
                return at + 1
        return start
    escaped = data[start : start + 2] == b'\\"'
    if escaped or data[start : start + 1] == b'"':
        close = data.find(b'\\"' if escaped else b'"', start + (2 if escaped else 1))
        return start if close < 0 else close + (2 if escaped else 1)
    found = re.compile(rb"[,}\]\n]").search(data, start)
    return found.start() if found else len(data)


def wrong_type(data: bytes, rng: random.Random, donor: bytes) -> Mutated:
    """One member's value (`"tools": [...]`, `"progress": 3`, `"taskId": "t"`, in raw or escaped JSON)
    replaced by a value of another type: a number, a boolean, a huge float, nested lists or an object."""
    members = list(_MEMBER.finditer(data))
    if not members:
        return huge_number(data, rng, donor)
    start = rng.choice(members).end()
    return _replace("wrong-type", data, start, _value_end(data, start), rng.choice(WRONG_TYPED_LITERALS))


def lone_surrogate(data: bytes, rng: random.Random, donor: bytes) -> Mutated:
    """A JSON escape of half a surrogate pair (what json.dumps writes for a non-UTF-8 file name)."""
    quotes = [m.end() for m in re.finditer(rb'\\?"', data)]
    at = rng.choice(quotes) if quotes else _pos(data, rng)
    escape = rng.choice((b"\\udcff", b"\\ud800", b"\\\\udcff", b"\xed\xb3\xbf"))
    return _replace("lone-surrogate", data, at, at, escape)


_INTEGER_ID = re.compile(rb'(\\?)"(?:id|requestId)\\?"\s*:\s*(-?\d{1,20})(?=[,}\s])')
_STRING_ID = re.compile(rb'(\\?)"(?:id|requestId)\\?"\s*:\s*\\?"(-?\d{1,20})\\?"')


def retyped_id(data: bytes, rng: random.Random, donor: bytes) -> Mutated:
    """An integer id (or cancel's requestId) written as a string, or a string of digits as an integer, in
    raw or escaped JSON (issue 19: the tables merged the ids 1 and "1", which are two requests)."""
    found = list(_INTEGER_ID.finditer(data)) + list(_STRING_ID.finditer(data))
    if not found:
        return wrong_type(data, rng, donor)
    match = rng.choice(found)
    quote = match.group(1) + b'"'
    start, end = match.start(2), match.end(2)
    if match.re is _STRING_ID:  # drop the quotes around the digits
        return _replace("retyped-id", data, start - len(quote), end + len(quote), match.group(2))
    return _replace("retyped-id", data, start, end, quote + match.group(2) + quote)


_EVENT = re.compile(rb"data: .{1,2000}?(?:\n\n|\\n\\n)", re.S)


def repeated_event(data: bytes, rng: random.Random, donor: bytes) -> Mutated:
    """One SSE event (raw, or escaped in a HAR's JSON), else one line, repeated 50 or 500 times in place:
    a flood of one message (issue 19: a server notification went on every request of its stream, a reply
    walked every waiting cancel; each must cost once, not once per open request)."""
    events = list(_EVENT.finditer(data))
    if events:
        event = rng.choice(events)
        start, end = event.start(), event.end()
    else:
        start = _line_start(data, rng)
        newline = data.find(b"\n", start)
        end = len(data) if newline < 0 else newline + 1
    copies = rng.choice((50, 500))
    return _replace(f"repeated-event-{copies}", data, start, end, data[start:end] * copies)


def bom(data: bytes, rng: random.Random, donor: bytes) -> Mutated:
    return _replace("bom", data, 0, 0, b"\xef\xbb\xbf")


def cr_only(data: bytes, rng: random.Random, donor: bytes) -> Mutated:
    return _whole("cr-only", data.replace(b"\r\n", b"\n").replace(b"\n", b"\r"))


def crlf(data: bytes, rng: random.Random, donor: bytes) -> Mutated:
    return _whole("crlf", data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"))


def gzipped(data: bytes, rng: random.Random, donor: bytes) -> Mutated:
    """The input gzip-compressed, sometimes cut short or with garbage after it (a damaged .gz)."""
    packed = gzip.compress(data, mtime=0)
    tail = rng.choice(("whole", "cut", "trailing"))
    if tail == "cut":
        packed = packed[: rng.randint(10, max(10, len(packed) - 1))]
    elif tail == "trailing":
        packed += bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
    return _whole(f"gzip-{tail}", packed)


Mutation = Callable[[bytes, random.Random, bytes], Mutated]
MUTATIONS: tuple[Mutation, ...] = (
    bit_flips,
    truncation,
    duplication,
    splice,
    half_line,
    control_bytes,
    deep_nesting,
    huge_number,
    wrong_type,
    retyped_id,
    repeated_event,
    lone_surrogate,
    bom,
    cr_only,
    crlf,
    gzipped,
)


def mutate(
    data: bytes, rng: random.Random, donor: bytes, rounds: int = 1, ops: tuple[Mutation, ...] = MUTATIONS
) -> Mutated:
    """`rounds` random mutations in a row; the damaged range is the whole input after more than one."""
    result = Mutated("none", data, (0, 0))
    for _ in range(rounds):
        step = rng.choice(ops)(result.data, rng, donor)
        op = step.op if result.op == "none" else f"{result.op}+{step.op}"
        damaged = step.damaged if result.op == "none" else (0, len(step.data))
        result = Mutated(op, step.data, damaged)
    return result


def mutated_sample(reader: str, index: int, donor: int, rng: random.Random, rounds: int) -> Mutated:
    """Sample `index` of `reader`, mutated `rounds` times, sample `donor` for splices (short to print)."""
    samples = sample_bytes(reader)
    return mutate(samples[index % len(samples)], rng, samples[donor % len(samples)], rounds)


def mutated_samples(reader: str, max_rounds: int = 3) -> st.SearchStrategy[Mutated]:
    """One of the reader's samples, mutated 1..max_rounds times, another sample as the splice donor."""
    count = len(READER_SAMPLES[reader])
    return st.builds(
        mutated_sample,
        st.just(reader),
        st.integers(0, count - 1),
        st.integers(0, count - 1),
        st.randoms(use_true_random=False),
        st.integers(1, max_rounds),
    )


# ---------------------------------------------------------------------------------------------- JSON-RPC

CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "w", "_meta": {"progressToken": 1}}}
STEP = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 1}}
CANCEL = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
REPLY = {"jsonrpc": "2.0", "id": 1, "result": {}}
SIMPLE_MESSAGES = (CALL, STEP, CANCEL, REPLY)
"""One call's life: the messages of tests/test_entry_limit.py's sequences."""

GAPS = (0.001, 0.03, 0.5)

ids = st.one_of(
    st.integers(-(2**70), 2**70),
    st.sampled_from([1, 2, 0, -1, "1", "", "a\x1b[2J", 1.5, None, True, [1], {"x": 1}]),
    st.text(max_size=8),
)
methods = st.sampled_from(
    [
        "initialize",
        "notifications/initialized",
        "tools/call",
        "tools/list",
        "resources/read",
        "notifications/cancelled",
        "notifications/progress",
        "ping",
        "x\x1b]0;t\x07",
        "",
    ]
)
json_leaves = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(), st.text(max_size=10))
json_values = st.recursive(
    json_leaves,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)


@st.composite
def messages(draw: st.DrawFn) -> object:
    """A JSON-RPC-shaped value, often valid, with fields drawn to hit id/method/params edge cases."""
    shape = draw(st.sampled_from(["request", "notification", "result", "error", "batch", "known", "any"]))
    if shape == "known":
        return draw(st.sampled_from(SIMPLE_MESSAGES))
    if shape == "any":
        return draw(json_values)
    if shape == "batch":
        return draw(st.lists(st.sampled_from(SIMPLE_MESSAGES), max_size=3))
    message: dict[str, object] = {"jsonrpc": draw(st.sampled_from(["2.0", "2.0", "1.0", 2]))}
    if shape in ("request", "result", "error"):
        message["id"] = draw(ids)
    if shape in ("request", "notification"):
        message["method"] = draw(methods)
        params = draw(
            st.fixed_dictionaries(
                {},
                optional={
                    "requestId": ids,
                    "progressToken": ids,
                    "progress": json_leaves,
                    "name": st.text(max_size=8),
                    "protocolVersion": st.sampled_from(["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "x"]),
                    "_meta": st.fixed_dictionaries({}, optional={"progressToken": ids}),
                },
            )
        )
        message["params"] = params
    elif shape == "result":
        message["result"] = draw(json_values)
    else:
        message["error"] = {"code": draw(st.integers(-(2**40), 2**40)), "message": draw(st.text(max_size=8))}
    return message


WRONG_TYPED = st.one_of(
    st.sampled_from(
        [5, 0, -1, True, False, None, 1e308, -1e308, 2**64, 2**70, "", "x", [], {}, [[1, [2]]], {"a": [{}]}]
    ),
    json_values,
)
"""A value for a member that should hold another type: numbers, booleans, huge floats, nested lists, objects."""

SERVER_SENT = frozenset({"elicitation/create", "sampling/createMessage", "notifications/progress"})
SERVER_SENT |= {"notifications/tasks/status"}
KNOWN_EXCHANGES: tuple[tuple[str, dict[str, object], dict[str, object] | None], ...] = (
    (
        "initialize",
        {"protocolVersion": "2025-11-25", "capabilities": {"tasks": {}}, "clientInfo": {"name": "c", "version": "0"}},
        {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "0"}},
    ),
    (
        "server/discover",
        {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientInfo": {}}},
        {"supportedVersions": ["2026-07-28"], "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s"}}},
    ),
    (
        "tools/list",
        {"cursor": "c"},
        {"tools": [{"name": "w", "annotations": {"readOnlyHint": True}}], "nextCursor": "n"},
    ),
    (
        "tools/call",
        {"name": "w", "arguments": {"a": 1}, "_meta": {"progressToken": 0}},
        {"content": [], "isError": False},
    ),
    (
        "tools/call",
        {"name": "w", "task": {"ttl": 1000}, "_meta": {"progressToken": 0}},
        {"task": {"taskId": "t", "status": "working", "pollInterval": 100, "ttl": 1000}},
    ),
    ("tasks/get", {"taskId": "t"}, {"taskId": "t", "status": "working", "pollInterval": 100, "ttl": 1000}),
    ("tasks/cancel", {"taskId": "t"}, {"taskId": "t", "status": "cancelled"}),
    (
        "tasks/result",
        {"taskId": "t"},
        {"content": [], "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "t"}}},
    ),
    ("tasks/list", {}, {"tasks": [{"taskId": "t", "status": "working"}]}),
    ("resources/read", {"uri": "file:///x"}, {"contents": [{"uri": "file:///x", "text": "t"}]}),
    ("resources/list", {}, {"resources": [{"uri": "file:///x", "name": "x"}]}),
    (
        "elicitation/create",
        {"message": "m", "requestedSchema": {"type": "object"}},
        {"action": "accept", "content": {}},
    ),
    ("sampling/createMessage", {"messages": [], "maxTokens": 5}, {"role": "assistant", "content": {"type": "text"}}),
    ("notifications/progress", {"progressToken": 0, "progress": 1, "total": 2, "message": "m"}, None),
    ("notifications/cancelled", {"requestId": 0, "reason": "r"}, None),
    ("notifications/tasks/status", {"taskId": "t", "status": "cancelled", "pollInterval": 100}, None),
)
"""Requests (method, params, result) and notifications (result None) of known methods, with every member the
code reads; `0` in a progress token or request id stands for the latest request's id."""


def _members(value: object, at: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    """Every member path inside a params or result object (object keys and list items, at any depth)."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    found: list[tuple[str | int, ...]] = []
    for key, item in items:
        found += [(*at, key), *_members(item, (*at, key))]
    return found


@st.composite
def wrong_typed(draw: st.DrawFn, template: dict[str, object], latest: int) -> object:
    """`template` (a copy, `0` ids made `latest`) with up to three members, or itself, of a wrong type."""
    value = json.loads(json.dumps(template).replace(": 0", f": {latest}"))
    paths = _members(value)
    top = [(), *(path for path in paths if len(path) == 1)]  # the members the code reads most, drawn more often
    for _ in range(draw(st.sampled_from([1, 1, 2, 3, 0]))):
        path = draw(st.sampled_from(top) | st.sampled_from(paths or top))
        if not path:
            return draw(WRONG_TYPED)
        node = value
        try:
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = draw(WRONG_TYPED)
        except (KeyError, IndexError, TypeError):  # an earlier replacement took the path away
            pass
    return value


@st.composite
def wrong_typed_steps(draw: st.DrawFn) -> list[tuple[str, object, float]]:
    """A session of known methods whose params and results have members of the wrong type (a number where
    an array belongs, `true`, 1e308, nested lists, objects): requests, their progress and cancels, replies."""
    steps: list[tuple[str, object, float]] = []
    latest = 0
    for index, (method, params, result) in enumerate(draw(st.permutations(KNOWN_EXCHANGES))):  # each gets its turn
        sender, other = ("s2c", "c2s") if method in SERVER_SENT else ("c2s", "s2c")
        gap = draw(st.sampled_from(GAPS))
        latest = latest if result is None else index + 1
        message: dict[str, object] = {"jsonrpc": "2.0", "method": method, "params": draw(wrong_typed(params, latest))}
        if result is None:
            steps.append((sender, message, gap))
            continue
        steps.append((sender, {**message, "id": latest}, gap))
        if draw(st.booleans()):
            steps.append(
                (sender, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": latest}}, gap)
            )
        if draw(st.sampled_from([True, True, False])):
            steps.append((other, {"jsonrpc": "2.0", "id": latest, "result": draw(wrong_typed(result, latest))}, gap))
    return steps


@st.composite
def cost_steps(draw: st.DrawFn) -> list[tuple[str, object, float]]:
    """Issue 19's cost shapes, small: cancelled calls left waiting for an ordering proof while the server
    pings (its replies prove nothing) and sometimes the client pings (its reply proves them); tools/list
    results naming new tools each time; the ids 1 and "1" side by side; late replies after long gaps."""
    calls = draw(st.lists(st.sampled_from([1, "1", 2, "2", 3, "x"]), min_size=1, max_size=5, unique=True))
    steps: list[tuple[str, object, float]] = []
    for call in calls:
        steps.append(
            ("c2s", {"jsonrpc": "2.0", "id": call, "method": "tools/call", "params": {"name": f"t{call}"}}, 0.01)
        )
        if draw(st.booleans()):
            steps.append(
                ("c2s", {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": call}}, 0.01)
            )
    for n in range(draw(st.integers(0, 6))):
        what = draw(st.sampled_from(["server-ping", "client-ping", "tools", "late-reply"]))
        gap = draw(st.sampled_from([0.001, 0.5, 400.0]))
        if what == "tools":
            names = draw(st.lists(st.sampled_from([*(f"t{c}" for c in calls), "a", "b", "c", "d"]), max_size=5))
            tools = [{"name": name, "annotations": {"readOnlyHint": draw(st.booleans())}} for name in names]
            steps.append(("c2s", {"jsonrpc": "2.0", "id": f"l{n}", "method": "tools/list"}, gap))
            steps.append(("s2c", {"jsonrpc": "2.0", "id": f"l{n}", "result": {"tools": tools}}, 0.001))
        elif what == "late-reply":
            steps.append(("s2c", {"jsonrpc": "2.0", "id": draw(st.sampled_from(calls)), "result": {}}, gap))
        else:
            asker, answerer = ("s2c", "c2s") if what == "server-ping" else ("c2s", "s2c")
            ping_id = draw(st.sampled_from([f"p{n}", 100 + n, str(100 + n)]))
            steps.append((asker, {"jsonrpc": "2.0", "id": ping_id, "method": "ping"}, gap))
            steps.append((answerer, {"jsonrpc": "2.0", "id": ping_id, "result": {}}, 0.001))
    return steps


simple_steps = st.lists(
    st.tuples(st.sampled_from(["c2s", "s2c"]), st.sampled_from(SIMPLE_MESSAGES), st.sampled_from(GAPS)),
    min_size=1,
    max_size=40,
)
"""(direction, message, gap before it): sequences of one call's messages in any order and timing."""


def timed(steps: list[tuple[str, object, float]]) -> list[tuple[float, str, object]]:
    """Steps as transcript lines `(ts, dir, message)`, each `gap` seconds after the one before."""
    lines, ts = [], 1.0
    for direction, message, gap in steps:
        ts += gap
        lines.append((ts, direction, message))
    return lines


hostile_steps = st.lists(
    st.tuples(st.sampled_from(["c2s", "s2c"]), messages(), st.sampled_from([*GAPS, 0.0, 400.0])),
    min_size=1,
    max_size=30,
)
"""Like `simple_steps`, with any JSON-RPC-shaped message: odd ids, methods, params, batches, non-objects."""


# ---------------------------------------------------------------------------------------------- the CLI


@dataclass(frozen=True, slots=True)
class CliRun:
    status: int
    stdout: str
    stderr: str


def run_cli(argv: list[str]) -> CliRun:
    """`cancelwire.cli.main.main(argv)` in this process, its output captured; an escaping exception propagates.

    An exception raised where Python can only print it ("Exception ignored in ..." from a `__del__` at
    garbage collection) reaches a user's terminal as a traceback too: it is added to `stderr` as one.
    """
    from cancelwire.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    ignored: list[str] = []
    hook = sys.unraisablehook
    sys.unraisablehook = lambda u: ignored.append(f"{u.exc_type.__name__}: {u.exc_value} in {u.object!r}")
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = main(argv)
            except SystemExit as exc:  # argparse usage errors
                status = exc.code if isinstance(exc.code, int) else 2
        gc.collect()
    finally:
        sys.unraisablehook = hook
    traces = "".join(f"Traceback (exception ignored at exit): {text}\n" for text in ignored)
    return CliRun(status, out.getvalue(), err.getvalue() + traces)
