"""HAR files as Chromium tooling writes them (issue 18 class 4): chrome-har's `postData.params` bodies and its
aborted fetches (sample_captures/har/chromium-chrome-har-cancel.har, recorded by scripts/record_chromium_har.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cancelwire.model import Anomaly, MessageEvent, Origin, TransportEvent
from cancelwire.readers import InputSource, ReadOptions
from cancelwire.readers.har.entry import EntryProblem, parse
from cancelwire.readers.har.entry_events import exchange_events
from cancelwire.readers.har.reader import READER
from cancelwire.reports.document import build
from cancelwire.run.pipeline import audit
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_captures" / "har" / "chromium-chrome-har-cancel.har"


def _events(path: Path) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for e in READER.read(InputSource(path.name, path), ReadOptions()):
        if isinstance(e, MessageEvent):
            out.append((e.origin.line, e.message.kind.value, e.message.id, e.stream))
        elif isinstance(e, TransportEvent):
            out.append((e.origin.line, e.kind.value, e.stream))
        elif isinstance(e, Anomaly):
            out.append((e.origin.line, e.name.value, e.request_id, e.reply_unread))
    return out


def test_chrome_har_of_a_web_client_that_cancels_and_aborts() -> None:
    """Chromium 156 driven over the DevTools protocol, chrome-har 1.3.1: every request body is `postData.params`
    (no text), so before this every reply was a response to an unknown id (3 errors, 0 requests). The call
    (entry 5, line 848) is aborted after its cancel (line 1025): chrome-har keeps its head, 640 bytes counted and
    no body, and no `_error`. Read as the client's close, with the bytes that came named as not kept."""
    report = build(audit([str(SAMPLE)]))
    findings = [(f["rule_id"], f["severity"], f["certainty"], f["request_id"]) for f in report["findings"]]
    assert findings == [("CW928", "warning", "exact", 3)]
    assert report["findings"][0]["message"] == (
        "a response body is missing from the recording: entry 5: 640 bytes of the response came before the client "
        "aborted the fetch; the HAR keeps none"
    )
    cancels = [(c["request_id"], c["tool"], c["mechanism"], c["outcome"]) for c in report["cancellations"]]
    assert cancels == [(3, "slow_write", "notification", "outcome-unverified")]
    assert _events(SAMPLE) == [
        (331, "request", 1, "har2"),
        (331, "stream-opened", "har2"),
        (331, "result", 1, "har2"),
        (331, "closed-by-server", "har2"),
        (489, "notification", None, "har3"),
        (693, "request", 2, "har4"),
        (693, "stream-opened", "har4"),
        (693, "result", 2, "har4"),
        (693, "closed-by-server", "har4"),
        (848, "request", 3, "har5"),
        (848, "stream-opened", "har5"),
        (1025, "notification", None, "har6"),
        (848, "har.body-not-recorded", 3, True),  # what came may hold the reply: not read, not "unanswered"
        (848, "closed-by-client", "har5"),  # the abort, at the entry's end (after the cancel)
        (1235, "request", 4, "har7"),
        (1235, "stream-opened", "har7"),
        (1235, "result", 4, "har7"),
        (1235, "closed-by-server", "har7"),
    ]  # the DELETE (entry 8, 200 with no body and content size 0) is an empty body, not one left out


def _entry(post: dict[str, Any], response: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "startedDateTime": "2026-12-04T20:01:06.063Z",
        "request": {"method": "POST", "url": "http://127.0.0.1:1/mcp", "postData": post},
        "response": response or {"status": 202, "content": {"size": 0}},
    }


def _params(value: Any) -> list[dict[str, Any]]:
    """chrome-har's `toNameValuePairs(JSON.parse(body))` (lib/util.js), for the test's inputs."""
    pairs: list[dict[str, Any]] = []
    for name, member in value.items() if isinstance(value, dict) else enumerate(value):
        for one in member if isinstance(member, list) else [member]:
            pairs.append({"name": str(name), "value": one})
    return pairs


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "w", "arguments": {"a": [1, 2]}}},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "é", "reason": None}},
        [{"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"jsonrpc": "2.0", "id": 2, "method": "ping"}],  # a batch
        {"jsonrpc": "2.0", "id": 1, "result": {}, "tags": ["a", "b"]},  # an array member: two pairs of one name
    ],
)
def test_post_data_params_are_put_back_as_the_json_they_came_from(message: Any) -> None:
    post = {"mimeType": "application/json", "params": _params(message)}
    assert json.loads(parse(_entry(post), 0, 1).request_body or "") == message


def test_text_wins_and_what_is_no_json_body_stays_unread() -> None:
    text = '{"jsonrpc":"2.0","id":1,"method":"ping"}'
    pairs = [{"name": "jsonrpc", "value": "2.0"}, {"name": "id", "value": 9}]
    assert parse(_entry({"mimeType": "application/json", "text": text, "params": pairs}), 0, 1).request_body == text
    form = {"mimeType": "application/x-www-form-urlencoded", "params": pairs}
    assert parse(_entry(form), 0, 1).request_body is None
    for hostile in ([1, "x", None, {"name": 3, "value": 1}, {"value": 2}], "params", {"name": "id"}):
        assert parse(_entry({"mimeType": "application/json", "params": hostile}), 0, 1).request_body is None


def test_a_finished_load_without_text_is_a_body_left_out_not_an_abort() -> None:
    """The reverse: chrome-har without bodies asked for (no text anywhere) counts a finished load's body in
    bodySize; only a head-only transfer with bytes counted is an abort. A DevTools `_error` with a status is one."""
    content = {"mimeType": "text/event-stream", "size": 640}
    finished = {"status": 200, "content": content, "bodySize": 370, "_transferSize": 640}
    post = {"mimeType": "application/json", "text": '{"jsonrpc":"2.0","id":3,"method":"tools/call"}'}
    assert not parse(_entry(post, finished), 0, 1).abandoned
    assert parse(_entry(post, {**finished, "bodySize": 0, "_transferSize": 270}), 0, 1).abandoned
    assert parse(_entry(post, {**finished, "_error": "net::ERR_ABORTED"}), 0, 1).abandoned
    assert not parse(
        _entry(post, {**finished, "bodySize": 0, "_transferSize": 270, "content": {**content, "text": ""}}), 0, 1
    ).abandoned


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(
    params=st.one_of(_JSON, st.lists(st.one_of(_JSON, st.fixed_dictionaries({"name": _JSON, "value": _JSON})))),
    mime=st.sampled_from(["application/json", "application/json; charset=utf-8", "text/plain", 7]),
    response=st.fixed_dictionaries(
        {
            "status": _JSON,
            "bodySize": _JSON,
            "_transferSize": _JSON,
            "content": st.dictionaries(st.sampled_from(["size", "text", "mimeType"]), _JSON),
        }
    ),
)
def test_any_params_or_response_shape_reads_or_is_named(params: Any, mime: Any, response: Any) -> None:
    """Hostile `postData.params` and response sizes: an entry is read (its body JSON text or None) or refused with
    `EntryProblem`, never anything else; whatever comes back goes through the events without an exception."""
    try:
        ex = parse(_entry({"mimeType": mime, "params": params}, response), 0, 1)
    except EntryProblem:
        return
    assert ex.request_body is None or isinstance(json.loads(ex.request_body), dict | list)
    exchange_events(ex, Origin("x.har", line=1), "x.har")
