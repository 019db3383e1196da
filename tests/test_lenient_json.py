"""JSON that orjson refuses but RFC 8259 allows is still JSON: a lone surrogate escape ("\\udcff", what
Python's json.dumps writes for a file name that is not UTF-8) must not turn a late reply into "not JSON"."""

from __future__ import annotations

import json
from pathlib import Path

from cancelwire.model import MessageKind
from cancelwire.model.jsonrpc import decode_text
from cancelwire.run.pipeline import audit


def test_lone_surrogates_parse_and_become_replacement_characters() -> None:
    text = json.dumps({"jsonrpc": "2.0", "id": 2, "result": {"name": "a\udcffb", "\ud800k": ["\udfff", "😀"]}})
    assert "\\udcff" in text
    decoded = decode_text(text)
    assert decoded is not None
    (message,) = decoded.messages
    assert message.kind is MessageKind.RESULT
    assert message.payload == {"name": "a\ufffdb", "\ufffdk": ["\ufffd", "😀"]}


def test_what_is_not_json_stays_not_json_without_raising() -> None:
    assert decode_text("[" * 100_000) is None
    assert decode_text('{"jsonrpc": "2.0", "id": 1, "result": NaN}') is None
    assert decode_text("not json") is None


def test_late_reply_with_a_surrogate_escape_is_a_response_after_cancel(tmp_path: Path) -> None:
    line = json.dumps({"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "\udcff"}]}})
    records = [
        {"cancelwire_transcript": 1, "transport": "stdio", "vantage": "proxy"},
        {"ts": 2, "dir": "c2s", "line": json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call"})},
        {
            "ts": 2.5,
            "dir": "c2s",
            "line": '{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}',
        },
        {"ts": 5, "dir": "s2c", "line": line},
    ]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    with audit([str(path)]) as result:
        assert [(f.rule, f.request_id, [o.line for o in f.evidence]) for f in result.findings] == [
            ("response-after-cancel", 2, [3, 4])
        ]
        assert [c.outcome.value for c in result.cancellations] == ["late-result-violation"]
