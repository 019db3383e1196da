"""--merge on real SDK sessions recorded at two points at once (sample_captures/merge/, sample_captures/http/):
exact findings, the clock offset recovered, messages lost between the recorders, verdicts made exact."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from cancelwire.reports.document import build
from cancelwire.run.pipeline import AuditOptions, audit
from cancelwire.run.results import AuditResult

ROOT = Path(__file__).resolve().parent.parent
MERGE = ROOT / "sample_captures" / "merge"
HTTP = ROOT / "sample_captures" / "http"
GOLDEN = Path(__file__).parent / "golden" / "merge"
SCHEMA = json.loads((ROOT / "analyzer" / "report.schema.json").read_text())
SERVER_OFFSET = 3600.25
"""scripts/record_merge_samples.py runs the server log's clock this far ahead (and 80 ppm fast: at most
2.4 ms more over a 30 s scenario)."""

Seen = set[tuple[str, Any, str, str, tuple[str, ...]]]


def _run(*names: Path) -> AuditResult:
    return audit([str(p) for p in names], AuditOptions(merge=len(names) == 2))


def _findings(result: AuditResult) -> Seen:
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


def _pair(name: str, first: str, second: str) -> tuple[Path, Path]:
    return MERGE / f"{name}.{first}.jsonl", MERGE / f"{name}.{second}.jsonl"


def test_progress_after_the_cancel_is_inferred_from_the_proxy_and_exact_with_the_server_log() -> None:
    transcript, server = _pair("shielded-tool-progress-after-cancel", "transcript", "server")
    name = "shielded-tool-progress-after-cancel"
    assert _findings(_run(transcript)) == {
        ("CW102", 6, "error", "inferred", tuple(f"{name}.transcript.jsonl:{n}" for n in (15, 16, 17))),
    }
    merged = _run(transcript, server)
    assert _findings(merged) == {
        ("CW102", 6, "error", "exact", tuple(f"{name}.server.jsonl:{n}" for n in (14, 15, 16)))
    }
    (summary,) = merged.merges
    assert (summary.lost, summary.unrecorded, summary.abandoned) == (0, 0, 0)
    assert [(r.role, r.vantage, r.messages, r.matched) for r in summary.recordings] == [
        ("primary", "server", 22, 22),
        ("secondary", "proxy", 22, 22),
    ]


def test_a_reply_the_proxy_calls_a_late_violation_was_written_before_the_server_read_the_cancel() -> None:
    transcript, server = _pair("blocked-server-reply-after-timeout", "transcript", "server")
    name = "blocked-server-reply-after-timeout"
    alone = _run(transcript)
    assert _findings(alone) == {
        ("CW101", 6, "error", "inferred", (f"{name}.transcript.jsonl:13", f"{name}.transcript.jsonl:14"))
    }
    assert [(c.outcome.value, c.certainty.value) for c in alone.cancellations] == [
        ("late-result-violation", "inferred")
    ]
    # the server's log: the result left (line 12) before the cancel was read (line 13), and the transcript
    # relayed the cancel (line 13) before the result (line 14): they crossed in flight, proven by the two
    merged = _run(transcript, server)
    assert _findings(merged) == {
        ("CW103", 6, "info", "exact", (f"{name}.transcript.jsonl:13", f"{name}.server.jsonl:12"))
    }
    (call,) = merged.cancellations
    assert (call.request_id, call.outcome.value, call.certainty.value) == (6, "late-result-discarded", "exact")
    assert call.timeline is not None
    assert [(e.kind.value, e.relation, e.certainty.value, e.origin.display()) for e in call.timeline.entries] == [
        ("request", None, "exact", f"{server}:11"),
        ("cancel", None, "exact", f"{transcript}:13"),  # where it was sent, before the result came back
        ("result", "crossing", "exact", f"{server}:12"),
    ]
    client = MERGE / f"{name}.client.jsonl"  # the client's own log says the same as the transcript
    assert {(f.rule_id, f.certainty.value) for f in _run(client, server).findings} == {("CW103", "exact")}


def test_a_call_the_client_gave_up_on_without_a_cancel_and_what_the_server_did_after() -> None:
    client, server = _pair("abandoned-without-cancel", "client", "server")
    name = "abandoned-without-cancel"
    merged = _run(client, server)
    assert _findings(merged) == {
        ("CW503", 6, "error", "exact", (f"{name}.client.jsonl:12",)),
    }
    (never,) = [f for f in merged.findings if f.rule_id == "CW503"]
    assert "made its own error for it" in never.message
    assert f"wrote 1 message(s) for it (the last at {server}:12)" in never.message
    went_on = float(never.message.split("went on for ")[1].split(" s")[0])
    assert 0.5 < went_on < 1.0  # the tool ran 1.5 s; the client gave up after 0.75 s
    (summary,) = merged.merges
    assert (summary.lost, summary.unrecorded, summary.abandoned) == (0, 0, 1)  # its own error was no message


def test_a_message_written_after_the_client_left_is_lost() -> None:
    client, server = _pair("client-leaves-during-call", "client", "server")
    name = "client-leaves-during-call"
    merged = _run(client, server)
    assert _findings(merged) == {
        ("CW503", 6, "error", "exact", (f"{name}.client.jsonl:14",)),
        ("CW501", 6, "warning", "exact", (f"{name}.server.jsonl:14",)),
    }
    (lost,) = [f for f in merged.findings if f.rule_id == "CW501"]
    assert "error -32000 'Connection closed' for id 6" in lost.message


def test_the_python_sdk_1_30_caller_that_times_out_on_tasks_result_sends_no_cancel() -> None:
    """mcp 1.30.0 (the last Python SDK with tasks): the caller waits on tasks/result (id 3) with
    read_timeout_seconds=0.8 and gives up (client log line 13, its SDK's own error 408). Its SDK sends
    nothing: no notifications/cancelled for tasks/result (CAN-7, SHOULD from 2025-03-26: a warning) and
    no tasks/cancel for the task. The server runs the task to its end and answers tasks/result (server
    log line 22). Alone, the transcript shows nothing wrong; only the client's own log beside the
    server's can show it."""
    name = "task-result-timeout-without-cancel"
    client, server = _pair(name, "client", "server")
    assert _findings(_run(MERGE / f"{name}.transcript.jsonl")) == set()
    merged = _run(client, server)
    assert _findings(merged) == {
        ("CW503", 3, "warning", "exact", (f"{name}.client.jsonl:13",)),
    }
    (never,) = [f for f in merged.findings if f.rule_id == "CW503"]
    assert never.message.startswith("the client gave up on tasks/result (id 3) but no cancel reached the server")
    assert f"wrote 1 message(s) for it (the last at {server}:22)" in never.message
    (summary,) = merged.merges
    assert (summary.lost, summary.unrecorded, summary.abandoned) == (0, 0, 1)  # its own error was no message
    (session,) = merged.sessions
    assert (session.revision, session.vantage.value) == ("2025-11-25", "server")


@pytest.mark.parametrize(
    ("name", "first", "second"),
    [
        ("shielded-tool-progress-after-cancel", "transcript", "server"),
        ("blocked-server-reply-after-timeout", "transcript", "server"),
        ("abandoned-without-cancel", "client", "server"),
        ("client-leaves-during-call", "client", "server"),
        ("client-leaves-during-call", "transcript", "server"),
        ("task-result-timeout-without-cancel", "client", "server"),
    ],
)
def test_the_server_clock_offset_is_recovered(name: str, first: str, second: str) -> None:
    (summary,) = _run(*_pair(name, first, second)).merges
    clock = summary.clock
    assert clock is not None and clock.consistent
    assert abs(clock.offset - SERVER_OFFSET) < 0.005
    assert clock.uncertainty < 0.005


def test_either_order_of_inputs_gives_the_same_findings() -> None:
    client, server = _pair("client-leaves-during-call", "client", "server")
    assert _findings(_run(client, server)) == _findings(_run(server, client))


def test_progress_the_server_wrote_after_the_client_stopped_reading_never_reached_the_wire() -> None:
    """The SDK server under a hand-written client that stops reading (sample_captures/http/README.md):
    195 progress notifications handed to uvicorn never reached the wire, and the server's log shows one
    more written after the client's RST (frame 26): a write after the disconnect no capture can show."""
    name = "http-client-stops-reading"
    merged = _run(HTTP / f"{name}.pcapng", HTTP / f"{name}.server.jsonl")
    seen = {
        (f.rule_id, f.request_id, f.certainty.value, f.evidence[0].display().split("/")[-1]) for f in merged.findings
    }
    assert seen == {
        ("CW102", 1, "exact", f"{name}.pcapng#26"),
        ("CW201", 1, "exact", f"{name}.pcapng#26"),
        ("CW202", 1, "exact", f"{name}.pcapng#20"),
        ("CW206", 1, "exact", f"{name}.pcapng#26"),
        ("CW501", 1, "exact", f"{name}.server.jsonl:19"),
    }
    (lost,) = [f for f in merged.findings if f.rule_id == "CW501"]
    assert len(lost.evidence) + lost.more_evidence == 196
    (late,) = [f for f in merged.findings if f.rule_id == "CW201"]
    assert late.evidence[-1].display().endswith(f"{name}.server.jsonl:214")  # "after_disconnect": true
    (summary,) = merged.merges
    assert summary.recordings[1].transport_facts == 3


@pytest.mark.parametrize("name", sorted(p.name.removesuffix(".server.jsonl") for p in MERGE.glob("*.server.jsonl")))
def test_merged_report_matches_golden_and_schema(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    first = "client" if name.startswith(("abandoned", "client-leaves", "task-result")) else "transcript"
    pair = [f"sample_captures/merge/{name}.{first}.jsonl", f"sample_captures/merge/{name}.server.jsonl"]
    report = build(audit(pair, AuditOptions(merge=True)))
    report["tool"]["version"] = report["run"]["generated"] = "X"
    jsonschema.validate(report, SCHEMA)
    golden = GOLDEN / f"{name}.json"
    text = json.dumps(report, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
    if os.environ.get("CANCELWIRE_UPDATE_GOLDEN"):
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(text)
    assert text == golden.read_text()


def test_cli_merge_prints_the_clock_and_each_recording(tmp_path: Path) -> None:
    client, server = _pair("abandoned-without-cancel", "client", "server")
    proc = subprocess.run(
        [sys.executable, "-m", "cancelwire", "audit", "--merge", str(client), str(server)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    at = lines.index(f"Merged recordings of {server}#1")
    assert lines[at + 1].startswith(f"  {server} clock = {client} clock +3600.2")
    assert lines[at + 2] == f"  primary {server} [ndjson, vantage server]: 18 message(s), 18 in both, 0 only here"
    assert lines[at + 3] == (  # the client's own timeout error is the fact taken, not a message
        f"  secondary {client} [ndjson, vantage client]: 18 message(s), 18 in both, 0 only here,"
        " 1 transport fact(s) taken"
    )
    assert (
        lines[at + 4]
        == "  lost between them: 0; missing from one: 0; calls given up with no cancel reaching the server: 1"
    )


def test_cli_merge_needs_exactly_two_inputs(tmp_path: Path) -> None:
    client, _ = _pair("abandoned-without-cancel", "client", "server")
    proc = subprocess.run(
        [sys.executable, "-m", "cancelwire", "audit", "--merge", str(client)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 2
    assert "--merge takes two recordings of one session; got 1 inputs" in proc.stderr
