"""`"local": true` in a peer's own log: a record its library made (the timeout error an SDK raises to its
caller), never on the wire. Read as the call's end for the caller (a `gave-up` entry), never as the peer's
reply: a client log audited alone says what it proves (CW507, exact), and --merge takes the mark as the
one word on which errors the client made itself (its heuristic only for logs without the mark)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from cancelwire.model import Anomaly, MessageEvent, TransportEvent, TransportKind
from cancelwire.readers import InputSource, ReadOptions
from cancelwire.readers.text.ndjson import READER
from cancelwire.run.pipeline import AuditOptions, audit
from cancelwire.run.results import AuditResult

MERGE = Path(__file__).resolve().parent.parent / "sample_captures" / "merge"


def _run(*paths: Path) -> AuditResult:
    return audit([str(p) for p in paths], AuditOptions(merge=len(paths) == 2))


def _findings(result: AuditResult) -> set[tuple[str, Any, str, str, tuple[str, ...]]]:
    return {
        (
            f.rule_id,
            f.request_id,
            f.severity.value,
            f.certainty.value,
            tuple(o.display().split("/")[-1] for o in f.evidence),
        )
        for f in result.findings
    }


def test_a_client_log_alone_takes_its_own_timeout_error_for_no_reply_and_says_no_cancel_was_sent() -> None:
    # before: CW305 (the server's late answer to id 3 taken for a second one) and CW307 (the task's
    # progress after tasks/result "ended" with the local error)
    name = "task-result-timeout-without-cancel"
    result = _run(MERGE / f"{name}.client.jsonl")
    assert _findings(result) == {("CW507", 3, "warning", "exact", (f"{name}.client.jsonl:13",))}
    (finding,) = result.findings
    assert finding.message == (
        "its sender gave up on tasks/result (id 3) and sent no cancel for it: the client's own library ended the "
        "call for its caller (error 408 'Timed out while waiting for response to ClientRequest. Waite'), "
        "and the client's log, which holds every message the client sent, has no notifications/cancelled for it; "
        f"the server went on: 1 message(s) for it after that (the last at {MERGE / name}.client.jsonl:23)"
    )


def test_the_other_client_logs_alone() -> None:
    abandoned = "abandoned-without-cancel"
    assert _findings(_run(MERGE / f"{abandoned}.client.jsonl")) == {
        ("CW507", 6, "error", "exact", (f"{abandoned}.client.jsonl:12",)),  # 2026-07-28 over stdio: MUST
    }
    leaves = "client-leaves-during-call"
    (finding,) = _run(MERGE / f"{leaves}.client.jsonl").findings
    assert (finding.rule_id, finding.request_id) == ("CW507", 6)  # not CW108: the call ended for its caller
    assert finding.message.endswith("the server sent nothing more for it before the log ended")


def test_a_call_given_up_on_and_then_cancelled_is_clean(tmp_path: Path) -> None:
    lines = (MERGE / "abandoned-without-cancel.client.jsonl").read_text().splitlines(keepends=True)
    cancelled = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 6}}
    cancel = json.dumps({"ts": 1796289725.5857, "dir": "send", "message": cancelled}) + "\n"
    log = tmp_path / "cancelled.client.jsonl"
    log.write_text("".join([*lines[:12], cancel, *lines[13:]]))  # cancelled: the server drops its reply
    assert _findings(_run(log)) == set()


def test_the_reader_makes_a_local_reply_the_callers_end_and_names_any_other_local_record(tmp_path: Path) -> None:
    log = tmp_path / "peer.jsonl"
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t"}}
    timeout = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "timed out"}}
    records = [
        {"ts": 1.0, "dir": "send", "message": call},
        {"ts": 2.0, "dir": "recv", "local": True, "message": timeout},
        {"ts": 3.0, "dir": "send", "local": True, "message": {"jsonrpc": "2.0", "method": "notifications/initialized"}},
        {"ts": 4.0, "dir": "recv", "local": "yes", "message": {"jsonrpc": "2.0", "id": 1, "result": {}}},
    ]
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    events = list(READER.read(InputSource(str(log), log), ReadOptions()))
    (gave_up,) = [e for e in events if isinstance(e, TransportEvent)]
    assert (gave_up.kind, gave_up.request_id, gave_up.detail, gave_up.origin.line) == (
        TransportKind.GAVE_UP_BY_CLIENT,
        1,
        "error -32001 'timed out'",
        2,
    )
    assert [(a.name, a.origin.line) for a in events if isinstance(a, Anomaly)] == [("input.unrecognized-line", 3)]
    # only `true` marks a record local
    assert [e.origin.line for e in events if isinstance(e, MessageEvent)] == [1, 4]


def test_merge_uses_the_mark_and_keeps_its_guess_for_a_log_without_it(tmp_path: Path) -> None:
    name = "task-result-timeout-without-cancel"
    server = MERGE / f"{name}.server.jsonl"
    marked = _findings(_run(MERGE / f"{name}.client.jsonl", server))
    assert marked == {("CW503", 3, "warning", "exact", (f"{name}.client.jsonl:13",))}
    unmarked = tmp_path / f"{name}.client.jsonl"
    unmarked.write_text((MERGE / f"{name}.client.jsonl").read_text().replace('"local":true,', ""))
    assert _findings(_run(unmarked, server)) == {
        ("CW503", 3, "warning", "exact", (f"{name}.client.jsonl:13",)),  # guessed: error 408, a timeout
        ("CW502", 3, "info", "exact", (f"{name}.client.jsonl:13",)),  # and taken for a message the server missed
    }


def test_the_exchange_table_does_not_take_the_local_error_for_the_last_message(tmp_path: Path) -> None:
    table = tmp_path / "x.csv"
    log = MERGE / "client-leaves-during-call.client.jsonl"
    run = [sys.executable, "-m", "cancelwire", "audit", str(log), "--exchanges", str(table), "-o", os.devnull]
    subprocess.run(run, capture_output=True, timeout=120, check=False)
    (row,) = [r for r in csv.DictReader(table.open()) if r["request_id"] == "6"]
    # the last message for the call is its 2nd progress (line 13), not the SDK's own timeout error (line 14)
    assert (row["reply"], row["reply_ts"], row["last_ts"]) == ("none", "", "1796289735.40515")
