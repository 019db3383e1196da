"""`pytest --cancelwire` with the real MCP Python SDK: inner test files (tests/pytest_plugin/) run through
pytester, each a test as a server author writes it, against the SDK's `MCPServer` in memory and over stdio.

Exact verdicts: the late answer over stdio fails with CW101 and its late-result-violation, the polite
server passes, the cancelled read-only call is `clean`. No test reads a time: the late answer comes after
the cancel because the server blocks its event loop for 2 s against a 0.3 s client timeout, and the
progress after the cancel because the tool shields its steps (a loaded machine only widens both gaps).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cancelwire.pytest_plugin.hooks import folder_name

pytest_plugins = ["pytester"]

INNER = Path(__file__).parent / "pytest_plugin"
BLOCKING = "test_inner.py::test_blocking_over_stdio"
POLITE = ("test_polite_in_memory", "test_polite_in_memory_audit", "test_polite_over_stdio")
STUBBORN = ("test_stubborn_in_memory", "test_stubborn_in_a_fixture_session")
GATE_UNVERIFIED = '[gates]\noutcome-unverified = "error"\n'


@pytest.fixture
def inner(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    for name in ("CI", "BUILD_NUMBER"):  # on CI pytest repeats each failure's whole text in the short summary
        monkeypatch.delenv(name, raising=False)
    pytester.makepyfile(servers=(INNER / "servers.py").read_text(), test_inner=(INNER / "inner_tests.py").read_text())
    pytester.syspathinsert()
    return pytester


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "anyio", *args, timeout=120)


def _outcomes(result: pytest.RunResult) -> dict[str, str]:
    """Test name → PASSED / FAILED / ERROR, from `-rA`'s short summary (a test that passed its call and
    failed at teardown is listed twice: ERROR)."""
    found: dict[str, str] = {}
    for line in result.outlines:
        match = re.match(r"(PASSED|FAILED|ERROR) test_inner\.py::(\w+)", line)
        if match and found.get(match[2]) in (None, "PASSED"):
            found[match[2]] = match[1]
    return found


def test_help_shows_the_options(pytester: pytest.Pytester) -> None:
    help_text = pytester.runpytest("--help").stdout.str()
    assert "--cancelwire " in help_text
    assert "--cancelwire-dir=DIR" in help_text


def test_without_the_option_every_test_passes(inner: pytest.Pytester) -> None:
    result = _run(inner, "-rA")
    assert _outcomes(result) == dict.fromkeys((*POLITE, *STUBBORN, "test_blocking_over_stdio"), "PASSED")


def test_a_late_answer_fails_the_test_and_the_polite_server_passes(inner: pytest.Pytester) -> None:
    result = _run(inner, "-rA", "--cancelwire")
    outcomes = _outcomes(result)
    assert outcomes == {
        **dict.fromkeys((*POLITE, *STUBBORN), "PASSED"),  # CW102 is a warning under 2025-11-25: below the gate
        "test_blocking_over_stdio": "FAILED",
    }
    text = result.stdout.str()
    failure = text[text.index("__ test_blocking_over_stdio __") : text.index("short test summary")]
    assert "cancelwire: the MCP session(s) this test opened fail the gate" in failure
    assert re.search(r"session-1\.jsonl:\d+  error  CW101 response-after-cancel  server answered tools/call", failure)
    assert "tools/call blocking_count  by notification  -> late-result-violation [inferred]" in failure
    assert "FAIL: 1 error in 1 session (gate: --fail-on error)" in failure


def test_the_projects_gates_decide(inner: pytest.Pytester) -> None:
    """The settings file's `[gates]` fail the stubborn tool's unverified outcome; a session a fixture held
    is audited after the fixture closed it, and fails at teardown. The hostile tool name stays inert."""
    inner.makefile(".toml", cancelwire=GATE_UNVERIFIED)
    result = _run(inner, "-rA", "--cancelwire", "-k", "stubborn")
    assert _outcomes(result) == {"test_stubborn_in_memory": "FAILED", "test_stubborn_in_a_fixture_session": "ERROR"}
    text = result.stdout.str()
    assert "ERROR at teardown of test_stubborn_in_a_fixture_session" in text
    ours = re.findall(
        r"cancelwire: the MCP session\(s\) this test opened fail the gate\n.*?\n(?:FAIL|PASS): [^\n]*", text, re.S
    )
    assert len(ours) == 2
    for failure in ours:
        assert "gates.outcome-unverified = error (from " in failure
        assert "tools/call stubborn\\x1b]0;owned\\x07\\x1b[2J  by notification  -> outcome-unverified" in failure
        assert "\x1b" not in failure and "\x07" not in failure  # (the SDK's own warning on stderr prints them raw)
        assert failure.endswith("1 outcome-unverified (error) in 1 session (gate: --fail-on error)")


def test_the_fixture_gives_the_audit_without_the_option(inner: pytest.Pytester) -> None:
    result = _run(inner, "-rA", "-k", "test_polite_in_memory_audit")
    assert _outcomes(result) == {"test_polite_in_memory_audit": "PASSED"}


def test_the_folder_keeps_recordings_and_reports(inner: pytest.Pytester) -> None:
    result = _run(inner, "-rA", "--cancelwire-dir", "kept", "-k", "blocking or polite_over")
    assert _outcomes(result) == {"test_blocking_over_stdio": "FAILED", "test_polite_over_stdio": "PASSED"}
    for name, status in ((BLOCKING, "fail"), ("test_inner.py::test_polite_over_stdio", "pass")):
        folder = inner.path / "kept" / folder_name(name)
        assert sorted(p.name for p in folder.iterdir()) == ["report.json", "report.txt", "session-1.jsonl"]
        header = json.loads((folder / "session-1.jsonl").read_text().splitlines()[0])
        assert header["vantage"] == "client"
        assert header["label"].startswith("stdio: ")
        report = json.loads((folder / "report.json").read_text())
        assert report["sessions"][0]["source"] == f"kept/{folder.name}/session-1.jsonl"
        assert (folder / "report.txt").read_text().splitlines()[-1].lower().startswith(status)


def test_a_folder_that_cannot_be_made_is_a_usage_error(inner: pytest.Pytester) -> None:
    (inner.path / "taken").write_text("a file, not a folder")
    result = _run(inner, "--cancelwire-dir", "taken/sub", "-k", "polite_in_memory_audit")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "cancelwire: --cancelwire-dir taken/sub: Not a directory" in result.stderr.str()


def test_folder_names_are_safe_and_distinct() -> None:
    assert folder_name("tests/test_x.py::test_y[a/b]").startswith("tests_test_x.py_test_y_a_b-")
    names = {folder_name(n) for n in ("t.py::a[1]", "t.py::a[2]", "t.py::a/1", "../../etc")}
    assert len(names) == 4
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+-[0-9a-f]{8}", n) and not n.startswith(".") for n in names)
