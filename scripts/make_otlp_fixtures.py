#!/usr/bin/env python3
"""Write the fixtures of the trace rules (tests/rules/handler-*/{triggers,clean}/) from the real OTLP sample.

Each fixture is sample_captures/otlp/sdk-stdio-cancel-handler-runs-on (a real MCP Python SDK 2.3.0 session and
the server's real spans, see that folder's README), as `a-transcript.jsonl` and `b-server.otlp.jsonl`, audited
with --merge; a clean fixture leaves out one of the two cancelled calls (its request, progress and cancel in the
transcript, its span in the trace), so only the other, which the rule must not flag, is left:

  handler-ran-after-cancel   triggers: both calls (id 6 ran on)  clean: without id 6 (id 7 stopped)
  handler-stopped-at-cancel  triggers: both calls (id 7 stopped) clean: without id 7 (id 6 ran on)

    .venv/bin/python scripts/make_otlp_fixtures.py
"""

from __future__ import annotations

import json
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "sample_captures" / "otlp" / "sdk-stdio-cancel-handler-runs-on"
RULES = REPO / "tests" / "rules"


def without_call(lines: list[str], request_id: int, transcript: bool) -> list[str]:
    """LINES less every line of the call REQUEST_ID: in a transcript its request, progress, cancel and reply; in
    a trace its span (one ended span a line)."""
    kept = []
    for line in lines:
        record = json.loads(line)
        if transcript:
            message = json.loads(record["line"]) if "line" in record else {}
            params = message.get("params", {})
            ours = request_id in (message.get("id"), params.get("requestId"), params.get("progressToken"))
        else:
            spans = [s for r in record["resourceSpans"] for sc in r["scopeSpans"] for s in sc["spans"]]
            ids = {
                a["value"].get("stringValue")
                for s in spans
                for a in s["attributes"]
                if a["key"] == "jsonrpc.request.id"
            }
            ours = str(request_id) in ids
        if not ours:
            kept.append(line)
    return kept


def write(folder: Path, transcript: list[str], trace: list[str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "a-transcript.jsonl").write_text("".join(transcript), encoding="utf-8")
    (folder / "b-server.otlp.jsonl").write_text("".join(trace), encoding="utf-8")


def main() -> None:
    transcript = Path(f"{SAMPLE}.transcript.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    trace = Path(f"{SAMPLE}.server.otlp.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    for slug, left_out in (("handler-ran-after-cancel", 6), ("handler-stopped-at-cancel", 7)):
        write(RULES / slug / "triggers", transcript, trace)
        write(RULES / slug / "clean", without_call(transcript, left_out, True), without_call(trace, left_out, False))


if __name__ == "__main__":
    main()
