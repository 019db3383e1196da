"""Outcome gates: exact exit statuses from the command line and the settings file."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
from cancelwire.ci.gates import Triage
from cancelwire.ci.policy import DEFAULT_GATES, Gate
from cancelwire.model import Outcome, Severity
from cancelwire.run.pipeline import audit
from test_cli import ROOT, run

UNVERIFIED = str(ROOT / "sample_captures/stdio/sdk-cancel-slow-tool.jsonl")  # one outcome-unverified, no finding
VERIFIED = str(ROOT / "sample_captures/stdio/sdk-cancel-then-verify-by-read.jsonl")
READ_ONLY = str(ROOT / "sample_captures/stdio/sdk-cancel-readonly-tool.jsonl")  # clean
LATE_SHOULD = str(ROOT / "sample_captures/stdio/handwritten-server-late-result-after-cancel.jsonl")  # 2 warnings


@pytest.mark.parametrize(
    ("args", "status"),
    [
        ((UNVERIFIED,), 0),  # default gate: warning, default --fail-on: error
        ((UNVERIFIED, "--fail-on", "warning"), 1),
        ((UNVERIFIED, "--fail-on", "info"), 1),
        ((UNVERIFIED, "--fail-on", "warning", "--gate", "outcome-unverified=info"), 0),
        ((UNVERIFIED, "--fail-on", "info", "--gate", "outcome-unverified=off"), 0),
        ((UNVERIFIED, "--gate", "outcome-unverified=error"), 1),
        ((UNVERIFIED, "--gate", "outcome-unverified=error", "--fail-on", "never"), 0),
        ((VERIFIED, "--fail-on", "info"), 0),  # verified-by-read: off
        ((VERIFIED, "--fail-on", "info", "--gate", "verified-by-read=info"), 1),
        ((READ_ONLY, "--fail-on", "info"), 0),  # a read-only tool's cancel is clean
        # late-result-violation is gated through CW101 at the severity its revision gives (warning here)
        ((LATE_SHOULD,), 0),
        ((LATE_SHOULD, "--fail-on", "warning"), 1),
        ((LATE_SHOULD, "--ignore", "CW101", "--ignore", "CW102", "--fail-on", "info"), 0),
        ((LATE_SHOULD, "--ignore", "CW101", "--ignore", "CW102", "--gate", "late-result-violation=error"), 1),
    ],
)
def test_exit_status(args: tuple[str, ...], status: int) -> None:
    proc = run("audit", *args)
    assert proc.returncode == status, proc.stderr
    assert proc.stderr == ""


def test_gates_in_the_settings_file_and_the_command_line_wins(tmp_path: Path) -> None:
    (tmp_path / "cancelwire.toml").write_text('[gates]\noutcome-unverified = "error"\n')
    assert run("audit", UNVERIFIED, cwd=tmp_path).returncode == 1
    assert run("audit", UNVERIFIED, "--gate", "outcome-unverified=warning", cwd=tmp_path).returncode == 0


OUTCOMES = "clean, late-result-discarded, late-result-violation, outcome-unverified, verified-by-read"
GATES = "error, warning, info, finding, off"


@pytest.mark.parametrize(
    ("settings", "error"),
    [
        (
            '[gates]\noutcome-unverifed = "error"\n',
            f"2: gates: outcome-unverifed: unknown outcome\n  hint: one of {OUTCOMES}",
        ),
        (
            '[gates]\noutcome-unverified = "fatal"\n',
            f"2: gates: outcome-unverified: must be one of {GATES}, not 'fatal'",
        ),
        ('gates = "error"\n', "1: gates: must be a table, not 'error'"),
        (
            '[[suppress]]\nrule = "CW108"\n',
            "1: suppress #1: needs `reason`\n  hint: each suppression names a rule and why",
        ),
        ('[[suppress]]\nrule = "CW108"\nreason = " "\n', "3: suppress #1: reason: must be text, not ' '"),
        (
            '[[suppress]]\nrule = "CW108"\nreason = "x"\nline = 3\n',
            "4: suppress #1: line: unknown key\n  hint: the keys are: rule, reason, server, tool, method, path",
        ),
        ('suppress = "all"\n', "1: suppress: must be a list of tables ([[suppress]]), not 'all'"),
    ],
)
def test_bad_gates_and_suppressions_in_settings_exit_2_naming_file_and_line(
    tmp_path: Path, settings: str, error: str
) -> None:
    (tmp_path / "cancelwire.toml").write_text(settings)
    proc = run("audit", UNVERIFIED, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == f"cancelwire: error: {tmp_path / 'cancelwire.toml'}:{error}\n"


def test_bad_gate_option_is_a_usage_error() -> None:
    proc = run("audit", UNVERIFIED, "--gate", "outcome-unverified")
    assert proc.returncode == 2
    assert proc.stderr == (
        "cancelwire: error: --gate 'outcome-unverified': expected OUTCOME=GATE, e.g. outcome-unverified=error\n"
    )
    proc = run("audit", UNVERIFIED, "--gate", "unverified=error")
    assert proc.returncode == 2
    assert proc.stderr == f"cancelwire: error: --gate: unverified: unknown outcome\n  hint: one of {OUTCOMES}\n"


def test_defaults_cover_every_outcome_and_triage_counts() -> None:
    assert set(DEFAULT_GATES) == set(Outcome)
    assert DEFAULT_GATES[Outcome.OUTCOME_UNVERIFIED] is Gate.WARNING
    result = audit([UNVERIFIED, LATE_SHOULD])
    try:
        triage = Triage(result, fail_on=Severity.WARNING)
        issues = [(i.title, i.severity.value, i.location.display() if i.location else None) for i in triage]
        late = "sample_captures/stdio/handwritten-server-late-result-after-cancel.jsonl"
        assert [(t, s, w.removeprefix(f"{ROOT}/") if w else w) for t, s, w in issues] == [
            ("CW101 response-after-cancel", "warning", f"{late}:10"),
            ("CW102 progress-after-cancel", "warning", f"{late}:9"),
            ("outcome-unverified", "warning", "sample_captures/stdio/sdk-cancel-slow-tool.jsonl:9"),
        ]
        assert triage.tally().failing == 3 and triage.exit_status() == 1
        assert Triage(result, fail_on=Severity.ERROR).exit_status() == 0
    finally:
        result.close()


def test_a_suppression_with_its_reason_is_shown_in_every_format(tmp_path: Path) -> None:
    (tmp_path / "cancelwire.toml").write_text(
        '[[suppress]]\nrule = "outcome-unverified"\ntool = "append_ledger"\nreason = "appends are idempotent"\n'
    )
    described = "suppress.1 = outcome-unverified, tool append_ledger: appends are idempotent"
    text = run("audit", UNVERIFIED, "--fail-on", "warning", cwd=tmp_path)
    assert text.returncode == 0  # accepted: it no longer fails the run
    assert f"  {described} (from {tmp_path / 'cancelwire.toml'})" in text.stdout.splitlines()
    report = json.loads(run("audit", UNVERIFIED, "--format", "json", cwd=tmp_path).stdout)
    assert {
        "setting": "suppress.1",
        "value": described.split(" = ")[1],
        "source": str(tmp_path / "cancelwire.toml"),
    } in (report["run"]["settings"])
    for fmt in ("md", "html"):
        assert "appends are idempotent" in run("audit", UNVERIFIED, "--format", fmt, cwd=tmp_path).stdout
    github = run("audit", UNVERIFIED, "--format", "github", "--fail-on", "warning", cwd=tmp_path).stdout
    assert github == (
        "::notice title=cancelwire::0 new issue(s); 1 suppressed in the settings file (suppress.1: 1)"
        " (fail-on warning)\n"
    )
    sarif = json.loads(run("audit", UNVERIFIED, "--format", "sarif", cwd=tmp_path).stdout)
    (result,) = sarif["runs"][0]["results"]
    assert result["suppressions"] == [{"kind": "external", "justification": "appends are idempotent"}]
    junit = run("audit", UNVERIFIED, "--format", "junit", "--fail-on", "warning", cwd=tmp_path).stdout
    assert "    suppressed: appends are idempotent" in junit and "<failure" not in junit
    base = tmp_path / "b.jsonl"
    run("audit", UNVERIFIED, "--write-baseline", str(base), cwd=tmp_path)
    assert len(base.read_text().splitlines()) == 1  # the header only: accepted issues are not baselined
    other = (tmp_path / "cancelwire.toml").read_text().replace("append_ledger", "other_tool")
    (tmp_path / "cancelwire.toml").write_text(other)
    assert run("audit", UNVERIFIED, "--fail-on", "warning", cwd=tmp_path).returncode == 1  # the filter must match


SETTINGS = (
    '[[suppress]]\nrule = "outcome-unverified"\ntool = "append_ledger"\nreason = "appends are idempotent"\n\n'
    '[[suppress]]\nrule = "CW101"\nserver = "retired-server"\nreason = "fixed in 2.1 (#40)"\n'
)
USED = "outcome-unverified, tool append_ledger: appends are idempotent"
STALE = "CW101, server retired-server: fixed in 2.1 (#40)"


def test_each_suppression_says_what_it_matched_and_an_unused_one_is_stale_in_every_format(tmp_path: Path) -> None:
    """A CI user shrinks the settings file as they shrink a baseline: every format says how many issues
    each [[suppress]] entry accepted, and lists one that matched nothing as stale."""
    from test_reports import SCHEMA

    settings = tmp_path / "cancelwire.toml"
    settings.write_text(SETTINGS)

    def audit_as(fmt: str) -> str:
        proc = run("audit", UNVERIFIED, "--format", fmt, "--fail-on", "warning", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr  # the one issue is accepted
        return proc.stdout

    text = audit_as("text").splitlines()
    at = text.index(f"Suppressions in {settings}")
    assert text[at : at + 3] == [
        f"Suppressions in {settings}",
        f"  suppress.1  suppressed 1  {USED}",
        f"  suppress.2  stale: matched nothing, remove it  {STALE}",
    ]
    assert text[-1] == (
        "PASS: no findings in 1 session (gate: --fail-on warning; 1 suppressed; 1 stale suppression (matched nothing))"
    )
    report = json.loads(audit_as("json"))
    jsonschema.validate(report, SCHEMA)
    assert [
        (s["number"], s["rule"], s["server"], s["tool"], s["suppressed"], s["stale"]) for s in report["suppressions"]
    ] == [
        (1, "outcome-unverified", None, "append_ledger", 1, False),
        (2, "CW101", "retired-server", None, 0, True),
    ]
    md = audit_as("md")
    assert "- suppress.2: **stale**: matched nothing, remove it (CW101\\, server retired\\-server\\:" in md
    assert "- suppress.1: suppressed 1 (outcome\\-unverified\\, tool append\\_ledger\\:" in md
    html = audit_as("html")
    assert "<td><code>suppress.1</code></td><td>1</td>" in html
    assert '<tr class="stale"><td><code>suppress.2</code></td><td>stale: matched nothing, remove it</td>' in html
    assert '<li class="sub">1 suppression(s) in the settings file matched nothing (stale: they can go)</li>' in html
    sarif = json.loads(audit_as("sarif"))["runs"][0]
    assert [(s["number"], s["suppressed"], s["stale"]) for s in sarif["properties"]["suppressions"]] == [
        (1, 1, False),
        (2, 0, True),
    ]
    assert sarif["invocations"][0]["toolConfigurationNotifications"] == [
        {"level": "note", "message": {"text": f"suppress.2 matched nothing (stale, remove it): {STALE}"}}
    ]
    junit = ET.fromstring(audit_as("junit"))
    (suite,) = [s for s in junit.iter("testsuite") if s.get("name") == str(settings)]
    assert [(c.get("name"), [(e.tag, e.get("message") or e.text) for e in c]) for c in suite] == [
        ("suppress.1 outcome-unverified", [("system-out", f"suppressed 1: {USED}")]),
        ("suppress.2 CW101", [("skipped", f"stale: matched nothing, remove it ({STALE})")]),
    ]
    assert audit_as("github").splitlines() == [
        "::notice title=cancelwire::0 new issue(s); 1 suppressed in the settings file "
        "(suppress.1: 1, suppress.2: stale) (fail-on warning)",
        f"::notice file={settings},title=cancelwire stale suppression::suppress.2 matched nothing: "
        f"remove it from the settings file ({STALE})",
    ]
