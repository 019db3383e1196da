"""The Go SDK v1.7.0 samples (sample_captures/gosdk/, README there): exact findings and outcomes with
every rule enabled, and the nearest reverse cases, made from the same samples.

Issue 18: a reply that says it was cancelled is written after the cancel (class 1); a stream rule
judges the stream that carried the request's response (class 2); a read that failed verified nothing
(class 6). The Go client closes the call's stream and POSTs its cancel (0.15 to 0.4 ms apart): under
2025-11-25 that is the revision's mechanism, no cancel-mechanism-mismatch; and write-after-disconnect
is in force only under 2026-07-28, where the close is the cancel, and never for the response's end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cancelwire.rebuild.reconstruct import ReconstructOptions
from cancelwire.run.pipeline import AuditOptions, audit

SAMPLES = Path(__file__).resolve().parent.parent / "sample_captures" / "gosdk"

Verdict = tuple[set[tuple[str, object, str, str, tuple[int | None, ...]]], list[tuple[object, str, str]]]


def _verdicts(path: Path, protocol: str | None = None) -> Verdict:
    result = audit([str(path)], AuditOptions(reconstruct=ReconstructOptions(protocol=protocol)))
    assert all(i.error is None for i in result.inputs)
    findings = {
        (f.rule, f.request_id, f.severity.value, f.certainty.value, tuple(o.frame or o.line for o in f.evidence))
        for f in result.findings
    }
    return findings, [(c.request_id, c.outcome.value, c.certainty.value) for c in result.cancellations]


# Every HTTP sample negotiates 2025-11-25: the client closed the call's stream and POSTed its cancel
# (no CW107: the POST is the cancel there), and CW201 is not in force (a disconnect is no cancel).
EXPECTED: dict[str, Verdict] = {
    # class 1: the `context canceled` result right after the cancel: written after it, exact
    "gosdk-stdio-cancel-slow-tool.jsonl": (
        {("response-after-cancel", 3, "error", "exact", (9, 10))},
        [(3, "late-result-violation", "exact")],
    ),
    # the SDKs' words: python-sdk 1.30.0's server answers a cancelled call {"code":0,"message":
    # "Request cancelled"} 1 ms after the cancel (2025-11-25, negotiated after server/discover failed)
    "gosdk-client-pysdk1-server-stdio-cancel.jsonl": (
        {("response-after-cancel", 4, "warning", "exact", (108, 110))},
        [(4, "late-result-violation", "exact")],
    ),
    "gosdk-http-cancel-reply-after-close.pcapng": (
        {("response-after-cancel", 4, "warning", "exact", (36, 40))},
        [(4, "late-result-violation", "exact")],
    ),
    # class 6, reverse: no reply, and read_ledger succeeded (frame 44): verified by that read
    "gosdk-http-cancel-no-reply.pcapng": (
        set(),
        [(4, "verified-by-read", "exact")],
    ),
    # class 2 on HTTP/1.1: FIN (33), the server's end of the body (34), RST (35), then the cancel's POST
    # (39): the call's stream was closed before the client gave up; frame 53 is the GET stream's.
    # class 6: read_ledger answered isError "ledger unavailable" (46): nothing verified
    "gosdk-http-cancel-read-fails.pcapng": (
        set(),
        [(4, "outcome-unverified", "exact")],
    ),
    # class 2 on HTTP/2: RST_STREAM of the call's stream 11 (46) before the cancel on stream 13 (47-48);
    # frame 69 is the standalone GET stream's (5)
    "gosdk-h2c-cancel-stream-reset-first.pcapng": (
        set(),
        [(4, "verified-by-read", "exact")],
    ),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_gosdk_sample(name: str) -> None:
    assert _verdicts(SAMPLES / name) == EXPECTED[name]


# The same recordings judged under 2026-07-28 (`--protocol`), where the close is the cancel. The POSTed
# cancel only accompanies it (the spec neither requires nor forbids it): no CW107, as the Go client's
# real 2026-07-28 sessions in sample_captures/ts2sdk/gosdk-client-ts2sdk-server-http-2026-07-28-*
# show. The server's end of the response after the FIN (no-reply 40, read-fails 34: the chunked body's
# terminating chunk) is no write; the `context canceled` result written on the closed stream
# (reply-after-close 40) is, and CW201 must fire on it.
UNDER_2026: dict[str, set[tuple[str, object, str, str, tuple[int | None, ...]]]] = {
    "gosdk-http-cancel-reply-after-close.pcapng": {
        ("write-after-disconnect", 4, "error", "exact", (32, 40)),
        ("response-after-cancel", 4, "error", "exact", (32, 40)),
    },
    "gosdk-http-cancel-no-reply.pcapng": set(),
    "gosdk-http-cancel-read-fails.pcapng": set(),
}


@pytest.mark.parametrize("name", sorted(UNDER_2026))
def test_gosdk_http_sample_under_2026_07_28(name: str) -> None:
    assert _verdicts(SAMPLES / name, protocol="2026-07-28")[0] == UNDER_2026[name]


def test_every_gosdk_sample_is_checked() -> None:
    assert sorted(p.name for p in SAMPLES.iterdir() if p.suffix != ".md") == sorted(EXPECTED)


def _reworded(tmp_path: Path, text: str) -> Path:
    """The stdio sample with the cancelled call's result text replaced (hand-edited: the reverse case)."""
    lines = (SAMPLES / "gosdk-stdio-cancel-slow-tool.jsonl").read_text().splitlines()
    record = json.loads(lines[9])
    message = json.loads(record["line"])
    message["result"]["content"][0]["text"] = text
    record["line"] = json.dumps(message)
    lines[9] = json.dumps(record)
    path = tmp_path / "reworded.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_tool_error_that_says_nothing_of_the_cancel_stays_a_race(tmp_path: Path) -> None:
    findings, calls = _verdicts(_reworded(tmp_path, "ledger unavailable"))
    assert findings == {("late-result-race", 3, "info", "inferred", (9, 10))}
    assert calls == [(3, "late-result-discarded", "inferred")]


def test_the_words_inside_a_longer_text_place_it_after_as_inferred(tmp_path: Path) -> None:
    findings, calls = _verdicts(_reworded(tmp_path, "append ledger: context canceled"))
    assert findings == {("response-after-cancel", 3, "error", "inferred", (9, 10))}
    assert calls == [(3, "late-result-violation", "inferred")]
