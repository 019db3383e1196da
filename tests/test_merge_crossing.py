"""--merge proves a crossing: the recording nearer the receiver has a message before the cancel, the one
nearer the canceller has it after. The merged view calls it CROSSING, exact, and draws it so."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from cancelwire.run.pipeline import AuditOptions, audit
from cancelwire.run.results import AuditResult

OFFSET = 100.0
"""The server's clock runs this far ahead of the client's."""
T0 = 1_780_000_000.0
INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}
READY = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}}


def _rpc(**fields: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", **fields}


def _log(path: Path, lines: list[tuple[float, str, dict[str, Any]]], offset: float = 0.0) -> Path:
    path.write_text("".join(json.dumps({"ts": T0 + offset + t, "dir": d, "message": m}) + "\n" for t, d, m in lines))
    return path


def _handshake(client: bool) -> list[tuple[float, str, dict[str, Any]]]:
    out, into = ("send", "recv") if client else ("recv", "send")
    lag = 0.0 if client else 0.01
    return [
        (0.00 + lag, out, _rpc(id=1, method="initialize", params=INIT)),
        (0.02 if client else 0.011, into, _rpc(id=1, result=READY)),
        (0.03 + lag, out, _rpc(method="notifications/initialized")),
    ]


def _closing(client: bool) -> list[tuple[float, str, dict[str, Any]]]:
    out, into = ("send", "recv") if client else ("recv", "send")
    ping, pong = _rpc(id=9, method="ping"), _rpc(id=9, result={})
    return [(1.0 if client else 1.01, out, ping), (1.02 if client else 1.011, into, pong)]


def _merged(tmp_path: Path, client: list[Any], server: list[Any]) -> tuple[AuditResult, Path, Path]:
    c = _log(tmp_path / "client.jsonl", _handshake(True) + client + _closing(True))
    s = _log(tmp_path / "server.jsonl", _handshake(False) + server + _closing(False), OFFSET)
    return audit([str(c), str(s)], AuditOptions(merge=True)), c, s


def _seen(result: AuditResult) -> set[tuple[str, Any, str, tuple[str, ...]]]:
    return {
        (f.rule_id, f.request_id, f.certainty.value, tuple(o.display() for o in f.evidence)) for f in result.findings
    }


def test_progress_and_reply_the_server_wrote_before_it_read_the_clients_cancel(tmp_path: Path) -> None:
    call = _rpc(id=2, method="tools/call", params={"name": "t", "arguments": {}, "_meta": {"progressToken": "p"}})
    cancel = _rpc(method="notifications/cancelled", params={"requestId": 2})
    progress = _rpc(method="notifications/progress", params={"progressToken": "p", "progress": 1})
    result = _rpc(id=2, result={"content": []})
    client = [(0.10, "send", call), (0.50, "send", cancel), (0.52, "recv", progress), (0.53, "recv", result)]
    server = [(0.11, "recv", call), (0.505, "send", progress), (0.506, "send", result), (0.51, "recv", cancel)]
    merged, c, s = _merged(tmp_path, client, server)
    # before: the server's order alone decided: "answered, then a cancel came" (CW106 inferred), no cancelled call
    assert _seen(merged) == {("CW103", 2, "exact", (f"{c}:5", f"{s}:6"))}
    (cancelled,) = merged.cancellations
    assert (cancelled.outcome.value, cancelled.certainty.value) == ("late-result-discarded", "exact")
    assert cancelled.timeline is not None
    assert [(e.kind.value, e.relation, e.certainty.value, e.origin.display()) for e in cancelled.timeline.entries] == [
        ("request", None, "exact", f"{s}:4"),
        ("cancel", None, "exact", f"{c}:5"),  # where the client sent it, on the server's clock
        ("progress", "crossing", "exact", f"{s}:5"),
        ("result", "crossing", "exact", f"{s}:6"),
    ]
    cancel_entry = cancelled.timeline.entries[1]
    assert cancel_entry.ts is not None and abs(cancel_entry.ts - (T0 + OFFSET + 0.50)) < 0.02


def test_a_reply_the_client_wrote_before_it_read_the_servers_cancel(tmp_path: Path) -> None:
    """The server cancels its own sampling request; its log (the merged order) has the cancel, then the
    reply 0.1 s later: alone, timing calls that a violation (CW101 inferred). The client's log shows it
    wrote the reply before it read the cancel."""
    ask = _rpc(id=7, method="sampling/createMessage", params={"messages": [], "maxTokens": 5})
    cancel = _rpc(method="notifications/cancelled", params={"requestId": 7})
    reply = _rpc(id=7, result={"role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m"})
    client = [(0.20, "recv", ask), (0.30, "send", reply), (0.40, "recv", cancel)]
    server = [(0.15, "send", ask), (0.35, "send", cancel), (0.45, "recv", reply)]
    merged, _, s = _merged(tmp_path, client, server)
    assert _seen(merged) == {("CW103", 7, "exact", (f"{s}:5", f"{s}:6"))}
    (cancelled,) = merged.cancellations
    assert (cancelled.outcome.value, cancelled.certainty.value) == ("late-result-discarded", "exact")


def _cancelled_call(tmp_path: Path, server_writes_at: float) -> tuple[AuditResult, Path, Path]:
    """tools/call id 2, cancelled by the client at 0.50 and answered by the server at SERVER_WRITES_AT
    (it reads the cancel at 0.51); the client gets the result at 0.53."""
    call = _rpc(id=2, method="tools/call", params={"name": "t", "arguments": {}})
    cancel = _rpc(method="notifications/cancelled", params={"requestId": 2})
    result = _rpc(id=2, result={"content": []})
    client = [(0.10, "send", call), (0.50, "send", cancel), (0.53, "recv", result)]
    server = [(0.11, "recv", call), (0.51, "recv", cancel), (server_writes_at, "send", result)]
    return _merged(tmp_path, client, sorted(server, key=lambda line: line[0]))


def test_the_same_order_in_both_recordings_is_no_crossing(tmp_path: Path) -> None:
    merged, _, s = _cancelled_call(tmp_path, 0.52)
    assert _seen(merged) == {("CW101", 2, "exact", (f"{s}:5", f"{s}:6"))}  # read, then answered: a violation


def test_the_diagram_of_merged_recordings_draws_the_crossing(tmp_path: Path) -> None:
    _, c, s = _cancelled_call(tmp_path, 0.505)
    args = [sys.executable, "-m", "cancelwire", "diagram", "--request", "2", "--merge", str(c), str(s)]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert 'data-kind="response" data-dir="s2c" data-seq="2" data-finding="CW103" data-certainty="exact"' in proc.stdout
    assert "crossed the cancel in flight" in proc.stdout
