"""stdio cancels waiting for an ordering proof are indexed per requester (issue 19): a reply costs what it
can prove. 5,000 unanswered cancels then 40,000 server pings took 24 s (every ping's reply walked the whole
waiting list, and a reply to a server request proves nothing, so nothing ever left it)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cancelwire import audit
from cancelwire.rebuild import holds
from transcripts import Line, write_transcript
from work import counting

_INIT: list[Line] = [
    (1.0, "c2s", {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}}),
    (1.0, "s2c", {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-11-25", "capabilities": {}}}),
]


def _waiting_cancels(path: Path, cancels: int, pings: int, *, client_ping: bool) -> Path:
    """`cancels` cancelled tools/calls, `pings` server pings the client answers, then (when `client_ping`)
    a client ping the server answers, and a late result to the first call."""
    lines = list(_INIT)
    for i in range(1, cancels + 1):
        lines.append((2.0, "c2s", {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "t"}}))
        lines.append((2.0, "c2s", {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": i}}))
    for i in range(pings):
        lines.append((3.0, "s2c", {"jsonrpc": "2.0", "id": f"s{i}", "method": "ping"}))
        lines.append((3.0, "c2s", {"jsonrpc": "2.0", "id": f"s{i}", "result": {}}))
    if client_ping:
        lines.append((4.0, "c2s", {"jsonrpc": "2.0", "id": "p", "method": "ping"}))
        lines.append((4.0, "s2c", {"jsonrpc": "2.0", "id": "p", "result": {}}))
    lines.append((5.0, "s2c", {"jsonrpc": "2.0", "id": 1, "result": {"content": []}}))
    return write_transcript(path, lines)


def _late_reply(path: Path) -> list[tuple[str, object, str]]:
    with audit([str(path)]) as result:
        return [(f.rule, f.request_id, f.certainty.value) for f in result.findings]


def test_server_pings_prove_nothing_about_client_cancels(tmp_path: Path) -> None:
    path = _waiting_cancels(tmp_path / "s.jsonl", 3, 5, client_ping=False)
    assert _late_reply(path) == [("response-after-cancel", 1, "inferred")]


def test_a_client_ping_answered_proves_the_cancels_before_it(tmp_path: Path) -> None:
    path = _waiting_cancels(tmp_path / "c.jsonl", 3, 5, client_ping=True)
    assert _late_reply(path) == [("response-after-cancel", 1, "exact")]


def _proof_work(tmp_path: Path, cancels: int) -> int:
    path = _waiting_cancels(tmp_path / f"w{cancels}.jsonl", cancels, 200, client_ping=True)
    with counting(holds.prove_order) as count, audit([str(path)]):
        pass
    return count.lines


@pytest.mark.sources  # counts the lines of `holds` functions run (conftest.py)
def test_a_reply_costs_what_it_proves(tmp_path: Path) -> None:
    """n vs 4n waiting cancels under the same 200 server pings: the pings' replies cost a few lines each
    whatever n is; only the client ping's reply walks the cancels, as it proves every one of them.
    (Before the index: 25,376 and 100,901 lines, every reply walking every waiting cancel.)"""
    small, large = _proof_work(tmp_path, 25), _proof_work(tmp_path, 100)
    per_proven = 8
    assert large - small <= per_proven * 75  # linear in what is proven
    assert small - per_proven * 25 <= 4 * 200  # a reply that proves nothing costs a few lines, not n
