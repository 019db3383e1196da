"""`--redact`: no payload value of the samples survives in any output, and the verdicts stay the same."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from cancelwire.reports.document import build
from cancelwire.reports.formats import FORMATS as ALL_FORMATS
from cancelwire.run import redact
from cancelwire.run.pipeline import AuditOptions, audit
from test_reports import ROOT, SAMPLES

#: Where a message carries payload (what the peers said), as the MCP schema defines it; identifiers
#: inside these (a content block's `type`) are left out below. Written here independently of
#: redact.KEPT, so a path redact.py forgot shows up as a leak.
PAYLOAD = (("params", "arguments"), ("params", "message"), ("params", "reason"), ("params", "data"), ("error",))
RESULT_IDS = {
    ("protocolVersion",),
    ("supportedVersions",),
    ("serverInfo", "name"),
    ("serverInfo", "version"),
    ("resultType",),
}
#: Shorter strings ("r1", "text") can occur in a report by chance.
MIN_CHARS = 5


def _strings(value: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], str]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, (*path, key))
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item, (*path, "*"))
    elif isinstance(value, str):
        yield path, value


def _payload_of(message: Any) -> set[str]:
    if not isinstance(message, dict):
        return set()
    found = set()
    for path, value in _strings(message):
        if path[:1] == ("result",):
            rest = tuple(p for p in path[1:] if p != "*")
            if rest in RESULT_IDS or rest[-1:] in (("type",), ("name",)) or rest[:1] == ("_meta",):
                continue  # identifiers: tool names in tools/list, content block types, versions
            found.add(value)
        elif (path[:2] in PAYLOAD or path[:1] in PAYLOAD) and path[-1:] != ("code",):
            found.add(value)
    return found


def _messages(sample: Path) -> Iterator[Any]:
    """Every JSON-RPC message a sample holds: its transcript lines, or (a capture) its server's log."""
    for path in (sample, sample.with_suffix(".server.jsonl")):
        if not path.exists() or path.suffix != ".jsonl":
            continue
        for line in path.read_text().splitlines():
            record = json.loads(line)
            if "message" in record:
                yield record["message"]
            elif "line" in record:
                try:
                    yield json.loads(record["line"])
                except json.JSONDecodeError:
                    yield {"error": {"message": record["line"]}}  # a line that is not JSON: all payload


def _keys(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        yield from value
        for item in value.values():
            yield from _keys(item)
    elif isinstance(value, list):
        for item in value:
            yield from _keys(item)


def payload_strings() -> set[str]:
    """Every payload string of the samples, but those that are also an object key somewhere in them
    (`"required": ["entry"]` in a tool's schema names the key `entry`): keys are structure, and kept;
    and those cancelwire's own text holds."""
    found: set[str] = set()
    keys: set[str] = set()
    for sample in SAMPLES:
        for message in _messages(ROOT / sample):
            found |= _payload_of(message)
            keys.update(_keys(message))
    texts = (p for d in ("analyzer", "rules", "templates") for p in (ROOT / d).rglob("*"))
    ours = "".join(p.read_text() for p in texts if p.suffix in (".py", ".toml", ".j2", ".md", ".json"))
    # a word cancelwire writes itself ("written", in a rule's summary) cannot tell a leak from its own text
    return {s for s in found - keys if len(s.strip()) >= MIN_CHARS and s not in ours}


FORMATS = tuple(ALL_FORMATS)  # every entry of the table: a new format is checked here without a change
assert FORMATS[0] == "text"  # written with -o, the others with --report


def _outputs(tmp_path: Path, *flags: str) -> dict[str, str]:
    """Every format of one audit of every sample, plus the exchange table (CSV; and Parquet when redacted)
    and a dataset."""
    out = tmp_path / ("redacted" if flags else "plain")
    out.mkdir()
    reports = [f"--report={fmt}={out / fmt}" for fmt in FORMATS[1:]]
    base = [sys.executable, "-m", "cancelwire", "audit", *map(str, SAMPLES), "-q", *flags, "--fail-on", "never"]
    first = [*base, "-o", str(out / "text"), *reports, "--exchanges", str(out / "x.csv"), "--dataset", str(out / "ds")]
    parquet = [*base, "-o", str(out / "again"), "--exchanges", str(out / "x.parquet")]
    for command in (first, parquet) if flags else (first,):
        proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr
    texts = {fmt: (out / fmt).read_text() for fmt in FORMATS}
    texts["csv"] = (out / "x.csv").read_text()
    if flags:
        texts["parquet"] = pd.read_parquet(out / "x.parquet").to_csv()
    texts["dataset"] = "".join(pd.read_parquet(part).to_csv() for part in sorted((out / "ds").rglob("*.parquet")))
    return texts


def test_no_payload_value_of_the_samples_survives_in_any_output(tmp_path: Path) -> None:
    secrets = payload_strings()
    plain = _outputs(tmp_path)
    shown = {s for s in secrets if any(s in text for text in plain.values())}
    # the check has teeth: the reports do show recorded payload without --redact
    assert {"user pressed stop", "written anyway", "step 1"} <= shown and len(shown) >= 20
    redacted = _outputs(tmp_path, "--redact")
    leaks = {fmt: sorted(s for s in secrets if s in text) for fmt, text in redacted.items()}
    assert leaks == {fmt: [] for fmt in redacted}
    assert "<str 17>" in redacted["json"]  # "user pressed stop", by type and length
    assert "redact = on (from command line)" in redacted["text"]


@pytest.mark.parametrize("sample", SAMPLES, ids=str)
def test_verdicts_are_the_same_redacted(sample: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)

    def verdicts(options: AuditOptions) -> tuple[list[Any], list[Any], list[Any]]:
        with audit([str(sample)], options) as result:
            report = build(result)
        findings = [
            {k: f[k] for k in ("rule_id", "severity", "request_id", "evidence", "certainty")}
            for f in report["findings"]
        ]
        calls = [(c["request_id"], c["outcome"], c["certainty"], c["explanation"]) for c in report["cancellations"]]
        timelines = [
            [(e["kind"], e["relation"], e["evidence"]) for e in c["timeline"]] for c in report["cancellations"]
        ]
        return findings, calls, timelines

    assert verdicts(AuditOptions(redact=True)) == verdicts(AuditOptions())


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        (
            '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow_write","arguments":'
            '{"record":"r1","n":12.5,"ok":true,"z":null,"l":[1,"a\\"b"]},"_meta":{"progressToken":"tok-2"}}}',
            '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow_write","arguments":'
            '{"record":"<str 2>","n":"<float 4>","ok":"<bool>","z":null,"l":["<int 1>","<str 3>"]},'
            '"_meta":{"progressToken":"tok-2"}}}',
        ),
        (  # an excerpt cut at its bound, inside a value
            '{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"written anyw… (5000 chars)',
            '{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"<str 12…>"… (5000 chars)',
        ),
        (
            '{"jsonrpc":"2.0","method":"notifications/cancelled",'
            '"params":{"requestId":2,"reason":"user pressed stop"}}',
            '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"<str 17>"}}',
        ),
        (
            '{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"t","description":"does x",'
            '"annotations":{"readOnlyHint":true,"title":"T"}}]}}',
            '{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"t","description":"<str 6>",'
            '"annotations":{"readOnlyHint":true,"title":"<str 1>"}}]}}',
        ),
        (
            '{"jsonrpc":"2.0","id":"x","error":{"code":-32602,"message":"no such file /home/me","data":{"p":"/x"}}}',
            '{"jsonrpc":"2.0","id":"x","error":{"code":-32602,"message":"<str 21>","data":{"p":"<str 2>"}}}',
        ),
        ('{"a": NaN, "b": "secret"}', '{"a": <str 19>'),  # not JSON from there on
        ("client FIN before the response finished", "<str 39>"),
        (
            '[{"jsonrpc":"2.0","id":1,"method":"x","params":{"q":"s"}}]',
            '[{"jsonrpc":"2.0","id":1,"method":"x","params":{"q":"<str 1>"}}]',
        ),
        ('{"params":{"name":{"k":"v"}}}', '{"params":{"name":{"k":"<str 1>"}}}'),  # only a name that is a string
        ("", ""),
    ],
)
def test_excerpts_keep_ids_methods_and_names_and_nothing_else(raw: str, shown: str) -> None:
    assert redact.excerpt(raw) == shown


def test_scrub_keeps_the_shape() -> None:
    value = {"a": [1, 2.5, True, None, "xyz"], "b": {"c": ""}}
    assert redact.scrub(value) == {"a": ["<int 1>", "<float 3>", "<bool>", None, "<str 3>"], "b": {"c": "<str 0>"}}


def test_the_same_session_hint_names_only_what_redaction_keeps(tmp_path: Path) -> None:
    """CW506 (pipeline._hint_same_sessions) is made after every input's audit, from the sessions the
    redacting sink passed on: its text names input paths, session keys and a count, all kept by --redact,
    so it reads the same with and without it, and holds no payload string of the recordings."""
    merge = ROOT / "sample_captures" / "merge"
    secrets = {s for p in merge.glob("*.jsonl") for m in _messages(p) for s in _payload_of(m) if len(s) >= MIN_CHARS}
    secrets |= {p.read_text().splitlines()[0] for p in merge.glob("*.transcript.jsonl")}  # the header's command

    def hints(*flags: str) -> list[str]:
        command = [sys.executable, "-m", "cancelwire", "audit", str(merge), "--format", "json", *flags]
        proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
        return [f["message"] for f in json.loads(proc.stdout)["findings"] if f["rule_id"] == "CW506"]

    redacted = hints("--redact")
    assert len(redacted) == 8 and redacted == hints()
    assert [s for s in sorted(secrets) if any(s in hint for hint in redacted)] == []
