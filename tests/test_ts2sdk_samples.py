"""The TypeScript SDK 2.4.0 samples (sample_captures/ts2sdk/, README there): exact findings and outcomes
with every rule enabled.

What the SDK does: its client cancels with notifications/cancelled, except on a 2026-07-28 Streamable HTTP
connection, where it closes the call's stream; its server aborts the handler's signal and never answers an
aborted call, but lets the handler's progress out (stdio, and the 2025-era sessionful HTTP transport). Its
2.x HTTP entry (createMcpHandler) serves 2025-era traffic statelessly, a fresh server for every POST, so a
POSTed notifications/cancelled reaches a server that never saw the call: the call runs on and answers.
The Go SDK v1.7.0 client against this server speaks 2026-07-28 and on HTTP both closes the call's stream
and POSTs notifications/cancelled: the close is the cancel, the POST no mismatch. The TS 2.x client against
the Go SDK server: the Go server answers every cancelled call (its handler's `context canceled`, or the
result of a handler that ignores the cancel).

Also: on stdio the replier's first reply is not timed for the race window (`SessionState.time_reply`). A
2026-07-28 stdio session has no handshake, so its first request (here tools/list) waits in the pipe while
Node starts (0.9 s); that round trip used to widen the race window to 0.896 s and hid the progress 0.5 s
after the cancel (line 11) of ts2sdk-stdio-2026-07-28-cancel-ignoring-tool.jsonl."""

from __future__ import annotations

from pathlib import Path

import pytest
from cancelwire.run.pipeline import audit

from tests.test_gosdk_samples import Verdict, _verdicts
from tests.transcripts import Line, write_transcript

SAMPLES = Path(__file__).resolve().parent.parent / "sample_captures" / "ts2sdk"

_CLEAN = (set(), [(2, "verified-by-read", "exact")])
_CLEAN_MODERN = (set(), [(1, "verified-by-read", "exact")])
_GO_CLEAN = (set(), [(3, "verified-by-read", "exact")])


def _go_answers(request_id: int, severity: str, evidence: tuple[int, int]) -> Verdict:
    """The Go server's `context canceled` result right after the cancel (cancel, result)."""
    finding = ("response-after-cancel", request_id, severity, "exact", evidence)
    return {finding}, [(request_id, "late-result-violation", "exact")]


EXPECTED: dict[str, Verdict] = {
    # stdio, both revisions: the cancel aborts the handler; no reply; read_ledger after it
    "ts2sdk-stdio-2025-11-25-cancel-early.jsonl": _CLEAN,
    "ts2sdk-stdio-2025-11-25-cancel-slow-tool.jsonl": _CLEAN,
    "ts2sdk-stdio-2026-07-28-cancel-early.jsonl": _CLEAN_MODERN,
    "ts2sdk-stdio-2026-07-28-cancel-slow-tool.jsonl": _CLEAN_MODERN,
    # the tool that ignores its signal: the SDK sends its progress after the cancel (a SHOULD-level
    # warning in 2025-11-25, CAN-4's MUST NOT in 2026-07-28) and drops its result
    "ts2sdk-stdio-2025-11-25-cancel-ignoring-tool.jsonl": (
        {("progress-after-cancel", 2, "warning", "inferred", (11, 14, 16))},
        [(2, "verified-by-read", "exact")],
    ),
    "ts2sdk-stdio-2026-07-28-cancel-ignoring-tool.jsonl": (
        {("progress-after-cancel", 1, "error", "inferred", (8, 11, 13))},
        [(1, "verified-by-read", "exact")],
    ),
    # the result was in the pipe before the cancel: a late cancel, legal, and no cancelled call
    "ts2sdk-stdio-2025-11-25-result-crosses-cancel.jsonl": (
        {("cancel-after-completion", 2, "info", "inferred", (11,))},
        [],
    ),
    "ts2sdk-stdio-2026-07-28-result-crosses-cancel.jsonl": (
        {("cancel-after-completion", 1, "info", "inferred", (8,))},
        [],
    ),
    # HTTP 2025-11-25 through createMcpHandler's stateless fallback: the cancel's POST goes to a fresh
    # server; the call's stream carries progress and the result after it
    "ts2sdk-http-2025-11-25-cancel-early.pcapng": (
        {
            ("response-after-cancel", 2, "warning", "inferred", (30, 40)),
            ("progress-after-cancel", 2, "warning", "inferred", (30, 33, 35, 37)),
            ("stream-left-open-after-abandon", 2, "warning", "inferred", (30, 40)),
        },
        [(2, "late-result-violation", "inferred")],
    ),
    "ts2sdk-http-2025-11-25-cancel-slow-tool.pcapng": (
        {
            ("response-after-cancel", 2, "warning", "inferred", (32, 39)),
            ("progress-after-cancel", 2, "warning", "inferred", (32, 35, 37)),
            ("stream-left-open-after-abandon", 2, "warning", "inferred", (32, 39)),
        },
        [(2, "late-result-violation", "inferred")],
    ),
    "ts2sdk-http-2025-11-25-cancel-ignoring-tool.pcapng": (
        {
            ("response-after-cancel", 2, "warning", "inferred", (32, 40)),
            ("progress-after-cancel", 2, "warning", "inferred", (32, 36, 38)),
            ("stream-left-open-after-abandon", 2, "warning", "inferred", (32, 40)),
        },
        [(2, "late-result-violation", "inferred")],
    ),
    "ts2sdk-http-2025-11-25-result-crosses-cancel.pcapng": (
        {("cancel-after-completion", 2, "info", "inferred", (32,))},
        [],
    ),
    # the 2025-era sessionful transport: the cancel reaches the call's server, which never answers, and
    # leaves the call's SSE stream open until the session ends (DELETE)
    "ts2sdk-http-sessions-2025-11-25-cancel-slow-tool.pcapng": (
        {("stream-left-open-after-abandon", 2, "warning", "exact", (32, 51))},
        [(2, "verified-by-read", "exact")],
    ),
    "ts2sdk-http-sessions-2025-11-25-cancel-ignoring-tool.pcapng": (
        {
            ("stream-left-open-after-abandon", 2, "warning", "exact", (32, 55)),
            ("progress-after-cancel", 2, "warning", "inferred", (32, 36, 38)),
        },
        [(2, "verified-by-read", "exact")],
    ),
    # HTTP 2026-07-28: the client closes the call's stream (no notification); the server's per-request
    # transport closes and writes nothing more, even for the tool that ignores its signal
    "ts2sdk-http-2026-07-28-cancel-early.pcapng": _CLEAN_MODERN,
    "ts2sdk-http-2026-07-28-cancel-slow-tool.pcapng": _CLEAN_MODERN,
    "ts2sdk-http-2026-07-28-cancel-ignoring-tool.pcapng": _CLEAN_MODERN,
    # the response was complete (frame 19) when the client reset the connection (21): no cancel at all
    "ts2sdk-http-2026-07-28-result-crosses-cancel.pcapng": (set(), []),
    # cross-implementation pairs with the Python SDK (mcp 2.3.0)
    "ts2sdk-client-pysdk-server-stdio-2025-11-25-cancel.jsonl": _CLEAN,
    "ts2sdk-client-pysdk-server-stdio-2026-07-28-cancel.jsonl": _CLEAN_MODERN,
    "pysdk-client-ts2sdk-server-stdio-2025-11-25-cancel.jsonl": (set(), [(3, "verified-by-read", "exact")]),
    "pysdk-client-ts2sdk-server-stdio-2026-07-28-cancel.jsonl": _CLEAN,
    "pysdk-client-ts2sdk-server-http-2025-11-25-cancel.pcapng": (
        {
            ("response-after-cancel", 3, "warning", "inferred", (53, 64)),
            ("progress-after-cancel", 3, "warning", "inferred", (53, 60, 62)),
            ("stream-left-open-after-abandon", 3, "warning", "inferred", (53, 64)),
        },
        [(3, "late-result-violation", "inferred")],
    ),
    "pysdk-client-ts2sdk-server-http-2026-07-28-cancel.pcapng": _CLEAN,
    # the Go SDK v1.7.0 client (gopeer) against the TS 2.x server: 2026-07-28 only (server/discover
    # first). stdio: the cancel aborts the handler as with the TS client
    "gosdk-client-ts2sdk-server-stdio-2026-07-28-cancel-early.jsonl": _GO_CLEAN,
    "gosdk-client-ts2sdk-server-stdio-2026-07-28-cancel-slow-tool.jsonl": _GO_CLEAN,
    "gosdk-client-ts2sdk-server-stdio-2026-07-28-cancel-ignoring-tool.jsonl": (
        {("progress-after-cancel", 3, "error", "inferred", (10, 13, 15))},
        [(3, "verified-by-read", "exact")],
    ),
    # the result (line 9) waited unread in the Go client while it cancelled (line 10, 1 ms later)
    "gosdk-client-ts2sdk-server-stdio-2026-07-28-result-crosses-cancel.jsonl": (
        {("cancel-after-completion", 3, "info", "inferred", (10,))},
        [],
    ),
    # HTTP: the Go client closes the call's connection (the cancel) and POSTs notifications/cancelled
    # too, in either order (FIN 13 then POST 17; POST 19 then FIN 21; FIN 16 then POST 22): the POST
    # only accompanies the close, so no cancel-mechanism-mismatch; the server writes nothing more
    "gosdk-client-ts2sdk-server-http-2026-07-28-cancel-early.pcapng": _GO_CLEAN,
    "gosdk-client-ts2sdk-server-http-2026-07-28-cancel-slow-tool.pcapng": _GO_CLEAN,
    "gosdk-client-ts2sdk-server-http-2026-07-28-cancel-ignoring-tool.pcapng": _GO_CLEAN,
    # the response complete (14), the connection kept alive, the cancel POSTed on it (16): a late cancel
    "gosdk-client-ts2sdk-server-http-2026-07-28-result-crosses-cancel.pcapng": (
        {("cancel-after-completion", 3, "info", "inferred", (16,))},
        [],
    ),
    # the TS 2.x client against the Go SDK v1.7.0 server (2025-11-25 on both transports, 2026-07-28 on
    # stdio). The Go handler returns its cancelled context's error at once: a `context canceled` result
    # right after the cancel, so written after it (exact); an error under 2026-07-28 (CAN-4)
    "ts2sdk-client-gosdk-server-stdio-2025-11-25-cancel-early.jsonl": _go_answers(2, "warning", (9, 10)),
    "ts2sdk-client-gosdk-server-stdio-2025-11-25-cancel-slow-tool.jsonl": _go_answers(2, "warning", (10, 11)),
    "ts2sdk-client-gosdk-server-stdio-2026-07-28-cancel-early.jsonl": _go_answers(1, "error", (6, 7)),
    "ts2sdk-client-gosdk-server-stdio-2026-07-28-cancel-slow-tool.jsonl": _go_answers(1, "error", (7, 8)),
    "ts2sdk-client-gosdk-server-http-2025-11-25-cancel-early.pcapng": _go_answers(2, "warning", (32, 33)),
    "ts2sdk-client-gosdk-server-http-2025-11-25-cancel-slow-tool.pcapng": _go_answers(2, "warning", (34, 37)),
    # stamp_ledger ignores the cancel and answers with its ledger 1.5 s later: a plain result, inferred. On
    # stdio the SDK drops the handler's progress on the cancelled context; on HTTP it sends it (37, 39)
    "ts2sdk-client-gosdk-server-stdio-2025-11-25-cancel-ignoring-tool.jsonl": (
        {("response-after-cancel", 2, "warning", "inferred", (10, 11))},
        [(2, "late-result-violation", "inferred")],
    ),
    "ts2sdk-client-gosdk-server-stdio-2026-07-28-cancel-ignoring-tool.jsonl": (
        {("response-after-cancel", 1, "error", "inferred", (7, 8))},
        [(1, "late-result-violation", "inferred")],
    ),
    "ts2sdk-client-gosdk-server-http-2025-11-25-cancel-ignoring-tool.pcapng": (
        {
            ("progress-after-cancel", 2, "warning", "inferred", (34, 37, 39)),
            ("response-after-cancel", 2, "warning", "inferred", (34, 41)),
            ("stream-left-open-after-abandon", 2, "warning", "inferred", (34, 43)),
        },
        [(2, "late-result-violation", "inferred")],
    ),
    # the result waited unread in the TS client (its event loop blocked) while it aborted
    "ts2sdk-client-gosdk-server-stdio-2025-11-25-result-crosses-cancel.jsonl": (
        {("cancel-after-completion", 2, "info", "inferred", (10,))},
        [],
    ),
    "ts2sdk-client-gosdk-server-stdio-2026-07-28-result-crosses-cancel.jsonl": (
        {("cancel-after-completion", 1, "info", "inferred", (7,))},
        [],
    ),
    "ts2sdk-client-gosdk-server-http-2025-11-25-result-crosses-cancel.pcapng": (
        {("cancel-after-completion", 2, "info", "inferred", (36,))},
        [],
    ),
}


def test_every_sample_is_covered() -> None:
    assert sorted(p.name for p in SAMPLES.iterdir() if p.suffix in (".jsonl", ".pcapng")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_ts2sdk_sample(name: str) -> None:
    assert _verdicts(SAMPLES / name) == EXPECTED[name]


def _call(request_id: int, meta: dict[str, object]) -> dict[str, object]:
    params = {"name": "stamp_ledger", "arguments": {}, "_meta": meta}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def _progress(n: int) -> dict[str, object]:
    return {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": n}}


MODERN = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
CANCEL = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}


def _session(first_reply_after: float) -> list[Line]:
    """A 2026-07-28 stdio session: tools/list answered FIRST_REPLY_AFTER seconds later, then a call
    cancelled at 10.0 whose progress goes on at 10.1 (a round trip of 0.1 s)."""
    listed = {"jsonrpc": "2.0", "id": 0, "result": {"tools": []}}
    return [
        (1.0, "c2s", {"jsonrpc": "2.0", "id": 0, "method": "tools/list", "params": {"_meta": MODERN}}),
        (1.0 + first_reply_after, "s2c", listed),
        (9.0, "c2s", _call(1, {**MODERN, "progressToken": 1})),
        (9.5, "s2c", _progress(1)),
        (10.0, "c2s", CANCEL),
        (10.1, "s2c", _progress(2)),
    ]


@pytest.mark.parametrize("first_reply_after", [0.001, 0.9])
def test_the_first_stdio_reply_does_not_widen_the_race_window(tmp_path: Path, first_reply_after: float) -> None:
    """Whether the server took 1 ms or 0.9 s (its start-up) to answer its first request, progress 0.1 s
    after the cancel is past the proxy's 50 ms window: an error under 2026-07-28."""
    result = audit([str(write_transcript(tmp_path / "t.jsonl", _session(first_reply_after)))])
    assert [(f.rule, f.severity.value, [o.line for o in f.evidence]) for f in result.findings] == [
        ("progress-after-cancel", "error", [6, 7])
    ]


def test_the_next_round_trip_still_sets_the_window(tmp_path: Path) -> None:
    """The reverse: only the first reply is left out. A second request answered 0.5 s later is then the
    fastest round trip shown, so progress 0.1 s after the cancel may have crossed it: no finding."""
    lines = _session(0.001)
    second = {"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {"_meta": MODERN}}
    lines[2:2] = [(2.0, "c2s", second), (2.5, "s2c", {"jsonrpc": "2.0", "id": 5, "result": {"tools": []}})]
    result = audit([str(write_transcript(tmp_path / "t.jsonl", lines))])
    assert [f.rule for f in result.findings] == []
