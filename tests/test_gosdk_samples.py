"""The Go SDK v1.7.0 samples (sample_captures/gosdk/, README there): exact findings and outcomes with
every rule enabled, and the nearest reverse cases, made from the same samples.

Issue 18: a reply that says it was cancelled is written after the cancel (class 1); a stream rule
judges the stream that carried the request's response (class 2); a read that failed verified nothing
(class 6)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cancelwire.run.pipeline import audit

SAMPLES = Path(__file__).resolve().parent.parent / "sample_captures" / "gosdk"

Verdict = tuple[set[tuple[str, object, str, str, tuple[int | None, ...]]], list[tuple[object, str, str]]]


def _verdicts(path: Path) -> Verdict:
    result = audit([str(path)])
    assert all(i.error is None for i in result.inputs)
    findings = {
        (f.rule, f.request_id, f.severity.value, f.certainty.value, tuple(o.frame or o.line for o in f.evidence))
        for f in result.findings
    }
    return findings, [(c.request_id, c.outcome.value, c.certainty.value) for c in result.cancellations]


# CW107 on every HTTP sample: the client closed the call's stream (a disconnect is no cancel in
# 2025-11-25) and POSTed its cancel only after; CW201: the server's writes on the closed stream.
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
        {
            ("cancel-mechanism-mismatch", 4, "warning", "exact", (32,)),
            ("write-after-disconnect", 4, "warning", "inferred", (32, 40)),
            ("response-after-cancel", 4, "warning", "exact", (36, 40)),
        },
        [(4, "late-result-violation", "exact")],
    ),
    # class 6, reverse: no reply, and read_ledger succeeded (frame 44): verified by that read
    "gosdk-http-cancel-no-reply.pcapng": (
        {
            ("cancel-mechanism-mismatch", 4, "warning", "exact", (37,)),
            ("write-after-disconnect", 4, "warning", "inferred", (37, 40)),
        },
        [(4, "verified-by-read", "exact")],
    ),
    # class 2 on HTTP/1.1: FIN (33), the server's end of the body (34), RST (35), then the cancel's POST
    # (39): the call's stream was closed before the client gave up; frame 53 is the GET stream's.
    # class 6: read_ledger answered isError "ledger unavailable" (46): nothing verified
    "gosdk-http-cancel-read-fails.pcapng": (
        {
            ("cancel-mechanism-mismatch", 4, "warning", "exact", (33,)),
            ("write-after-disconnect", 4, "warning", "exact", (33, 34)),
        },
        [(4, "outcome-unverified", "exact")],
    ),
    # class 2 on HTTP/2: RST_STREAM of the call's stream 11 (46) before the cancel on stream 13 (47-48);
    # frame 69 is the standalone GET stream's (5)
    "gosdk-h2c-cancel-stream-reset-first.pcapng": (
        {("cancel-mechanism-mismatch", 4, "warning", "exact", (46,))},
        [(4, "verified-by-read", "exact")],
    ),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_gosdk_sample(name: str) -> None:
    assert _verdicts(SAMPLES / name) == EXPECTED[name]


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
