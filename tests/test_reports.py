"""Whole-pipeline checks: golden JSON reports of every shipped sample, the JSON schema, escaping."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from cancelwire.audit import audit
from cancelwire.report import build, render

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).parent / "golden"
SCHEMA = json.loads((ROOT / "analyzer" / "report.schema.json").read_text())
SAMPLES = sorted(
    p.relative_to(ROOT)
    for p in (ROOT / "sample_captures").rglob("*")
    if p.is_file()
    and p.suffix in (".jsonl", ".pcapng", ".pcap", ".log", ".gz")
    and not p.name.endswith((".server.jsonl", ".client.jsonl"))
)


def _masked(report: dict[str, Any]) -> dict[str, Any]:
    report["tool"]["version"] = "X"
    return report


@pytest.mark.parametrize("sample", SAMPLES, ids=str)
def test_sample_report_matches_golden_and_schema(sample: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    report = _masked(build(audit([str(sample)])))
    jsonschema.validate(report, SCHEMA)
    golden = GOLDEN / (str(sample).replace("/", "__") + ".json")
    text = json.dumps(report, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
    if os.environ.get("CANCELWIRE_UPDATE_GOLDEN"):
        golden.write_text(text)
    assert golden.exists(), f"no golden report for {sample}; run with CANCELWIRE_UPDATE_GOLDEN=1 and review it"
    assert text == golden.read_text()


def test_every_golden_file_has_its_sample() -> None:
    names = {str(s).replace("/", "__") + ".json" for s in SAMPLES}
    assert sorted(p.name for p in GOLDEN.glob("*.json") if p.name not in names) == []


HOSTILE = '<script>alert("x")</script>'


def _hostile_transcript(tmp_path: Path) -> Path:
    call = {"jsonrpc": "2.0", "id": HOSTILE, "method": "tools/call", "params": {"name": HOSTILE}}
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": HOSTILE}}
    lines = [
        {"ts": 1.0, "dir": "c2s", "line": json.dumps(call)},
        {"ts": 1.5, "dir": "c2s", "line": json.dumps(cancel)},
        {"ts": 2.0, "dir": "s2c", "line": HOSTILE + " | `md` *injection*"},
    ]
    path = tmp_path / "hostile.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def test_html_report_escapes_captured_content_and_loads_nothing(tmp_path: Path) -> None:
    html = render(audit([str(_hostile_transcript(tmp_path))]), "html")
    assert HOSTILE not in html
    assert "&lt;script&gt;alert(" in html
    for needle in ("http://", "https://", "<link", "<script", "@import", "src="):
        assert needle not in html


def test_markdown_report_cannot_break_its_tables(tmp_path: Path) -> None:
    md = render(audit([str(_hostile_transcript(tmp_path))]), "md")
    assert HOSTILE not in md
    for line in md.splitlines():
        if line.startswith("| error") or line.startswith("| warning"):
            assert line.count(" | ") == 4, line  # five cells: captured pipes are escaped


def test_json_report_of_hostile_input_validates(tmp_path: Path) -> None:
    report = build(audit([str(_hostile_transcript(tmp_path))]))
    jsonschema.validate(report, SCHEMA)
    assert report["cancellations"][0]["request_id"] == HOSTILE
