"""The HTTP/2 flood guard counts a rate, not a lifetime (issue 19). Before, it counted the frames that carry
nothing over the connection's life: an SSE stream sending a 3-byte keep-alive comment once a second tripped it
after 2.8 hours and the reply that followed was lost (`h2-keepalive.pcapng.gz`: http2-frame-flood and
request-never-answered [exact]). A real flood still trips it (`h2-keepalive-burst.pcapng.gz`, the same frames
100 us apart; tests/rules/http2-frame-flood/triggers.pcapng)."""

from __future__ import annotations

import json
import shutil
from typing import Any

import hyperframe.frame as hf
import pytest
from cancelwire.readers.http import http2_bounds
from cancelwire.readers.http.http2 import PREFACE, Http2Connection
from cancelwire.readers.http.http2_events import Flood
from fuzzing import ROOT, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

NEEDS_TSHARK = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed")


def _audit(name: str) -> dict[str, Any]:
    run = run_cli(["audit", str(ROOT / "tests/fixtures/silence" / name), "--format", "json", "--fail-on", "never"])
    assert run.status == 0, run
    report: dict[str, Any] = json.loads(run.stdout)
    return report


@NEEDS_TSHARK
def test_hours_of_keep_alive_comments_are_no_flood() -> None:
    """10 800 keep-alive DATA frames of 3 bytes, one a second, then the result: read, nothing to say."""
    report = _audit("h2-keepalive.pcapng.gz")
    assert report["findings"] == []
    assert report["unjudged"] == []


@NEEDS_TSHARK
def test_the_same_frames_at_once_are_a_flood() -> None:
    """The reverse: the 10 356th frame passes the bound (10 000 at once, about 340 more in the 1.035 s they
    took, two for each of the connection's 7 HEADERS/DATA frames); the result after it is not read, so the call
    is not judged silent, and the client's close after it is no cancel."""
    report = _audit("h2-keepalive-burst.pcapng.gz")
    found = [(f["rule"], f["request_id"], f["certainty"], f["evidence"][0]["frame"]) for f in report["findings"]]
    assert found == [("http2-frame-flood", None, "exact", 10364)]
    assert report["findings"][0]["message"].endswith(
        "tcp stream 0: server→client HTTP/2 flood at frame 10364: DataFrame on stream 3: 10356 frames that carry "
        "no request or response (10353 DATA under 16 bytes, 3 SETTINGS) in 1.035 s against 7 HEADERS/DATA frames "
        "on the connection (limit 10000 more than twice that, and 330 more a second); that direction is not read "
        "further"
    )
    assert report["cancellations"] == []


def _pings(reader: Http2Connection, count: int, spacing: float) -> list[Any]:
    out = reader.feed_client(PREFACE + hf.SettingsFrame(0).serialize(), 0.0)
    for n in range(count):
        out += reader.feed_client(hf.PingFrame(0, opaque_data=n.to_bytes(8, "big")).serialize(), n * spacing)
    return out


def test_the_bound_is_a_rate_per_direction(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http2_bounds, "MAX_IDLE_FRAMES", 100)
    monkeypatch.setattr(http2_bounds, "IDLE_FRAMES_PER_SECOND", 10)
    assert _pings(Http2Connection(), 5_000, 0.1) == []  # 10 a second: as fast as they come back
    flood = _pings(Http2Connection(), 5_000, 0.05)  # 20 a second, 10 back: the 100 are gone after 10 s
    assert [type(e) for e in flood] == [Flood]
    assert flood[0].detail == (
        "PingFrame on stream 0: 199 frames that carry no request or response (198 PING, 1 SETTINGS) in 9.850 s "
        "against 0 HEADERS/DATA frames on the connection (limit 100 more than twice that, and 10 more a second)"
    )
    assert _pings(Http2Connection(), 99, 0.0) == []  # at once, within the bucket (the preface's SETTINGS is one)
    assert [type(e) for e in _pings(Http2Connection(), 100, 0.0)] == [Flood]
    untimed = Http2Connection()  # no capture time: nothing comes back (a lifetime count, as before)
    untimed.feed_client(PREFACE + hf.SettingsFrame(0).serialize())
    out = [e for n in range(200) for e in untimed.feed_client(hf.PingFrame(0).serialize())]
    assert [type(e) for e in out] == [Flood]


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 400), st.floats(0.0, 2.0, allow_nan=False))
def test_frames_that_come_no_faster_than_they_come_back_are_never_a_flood(count: int, spacing: float) -> None:
    """Any number of PINGs: spaced at least 1/rate apart they never trip the bucket; at once, only past it."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(http2_bounds, "MAX_IDLE_FRAMES", 50)
        patch.setattr(http2_bounds, "IDLE_FRAMES_PER_SECOND", 10)
        flooded = bool(_pings(Http2Connection(), count, spacing))
    if spacing >= 0.1:
        assert not flooded
    elif spacing == 0.0:
        assert flooded == (count + 1 > 50)  # the preface's SETTINGS counts too
