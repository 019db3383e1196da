"""The catalogue as a whole: every file loads, names line up with the code, docs render."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cancelwire.errors import CancelwireError, RuleFileError
from cancelwire.judge.catalog import load_catalog
from cancelwire.judge.catalog_text import explain_text
from cancelwire.model import AnomalyName, revisions

ROOT = Path(__file__).resolve().parent.parent
RULES = load_catalog()


def test_every_anomaly_the_code_emits_has_a_rule_and_every_rule_name_is_emitted() -> None:
    ruled = {str(name) for rule in RULES for name in rule.condition.anomalies}
    named = {m.value for m in AnomalyName}
    assert sorted(named - ruled) == []
    assert sorted(ruled - named) == []


def test_anomaly_names_are_written_only_as_members() -> None:
    """No string literal in the code spells an anomaly name: the code names one as `AnomalyName.X`,
    so a name cannot drift from the closed set (or escape this test under a new prefix)."""
    names = {m.value for m in AnomalyName}
    package = ROOT / "analyzer"
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}"
        for path in sorted(package.rglob("*.py"))
        if path != package / "model" / "anomalies.py"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names
    ]
    assert found == []


def test_a_member_name_spells_its_value_and_has_a_docstring() -> None:
    source = (ROOT / "analyzer" / "model" / "anomalies.py").read_text()
    for member in AnomalyName:
        assert member.name == member.value.replace(".", "_").replace("-", "_").upper()
        assert re.search(rf'^    {member.name} = "{re.escape(member.value)}"\n    """[^\n]+"""$', source, re.M), member


def test_ids_and_slugs_are_unique_and_in_range() -> None:
    assert len({r.id for r in RULES}) == len(RULES) == len({r.slug for r in RULES})
    assert all(r.id[2] in "123459" for r in RULES)


@pytest.mark.parametrize(
    ("slug", "fact"),
    [
        ("cancel-of-initialize", lambda f: f.handshake),
        ("id-reused", lambda f: f.unique_ids_per_session),
        ("batch-outside-2025-03-26", lambda f: not f.batches),
        ("cancel-mechanism-mismatch", lambda f: f.http_disconnect_is_cancel is not None),
    ],
)
def test_rule_levels_agree_with_the_revision_table(slug: str, fact: object) -> None:
    rule = next(r for r in RULES if r.slug == slug)
    expected = tuple(rev for rev, facts in revisions.FACTS.items() if fact(facts))  # type: ignore[operator]
    assert rule.revisions == expected


def test_cancel_rules_are_must_exactly_where_2026_07_28_makes_them_must() -> None:
    for slug in ("response-after-cancel", "progress-after-cancel"):
        rule = next(r for r in RULES if r.slug == slug)
        assert {rev: str(level) for rev, level in rule.levels.items()} == {
            "2024-11-05": "SHOULD",
            "2025-03-26": "SHOULD",
            "2025-06-18": "SHOULD",
            "2025-11-25": "SHOULD",
            "2026-07-28": "MUST",
        }


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.slug)
def test_explain_renders_every_section(rule) -> None:  # type: ignore[no-untyped-def]
    text = explain_text(rule)
    for part in (rule.id, rule.slug, "What it does:", "Why it matters:", "Fix:", "Example:", rule.docs.example):
        assert part in text


def test_readme_rule_table_matches_the_catalogue() -> None:
    readme = (ROOT / "docs" / "rules.md").read_text()
    rows = re.findall(r"^\| (CW\d{3}) \| `([a-z0-9-]+)` \|", readme, flags=re.M)
    assert rows == [(r.id, r.slug) for r in RULES]


def _copy_rule(tmp_path: Path, name: str, edit: tuple[str, str]) -> Path:
    source = next((ROOT / "rules").glob("CW101-*.toml")).read_text()
    folder = tmp_path / "mine"
    folder.mkdir(parents=True)
    text = source.replace('id = "CW101"', 'id = "ACME101"').replace(
        'slug = "response-after-cancel"', 'slug = "acme-late-answer"'
    )
    (folder / name).write_text(text.replace(*edit))
    return folder


def test_user_rules_load_and_bad_ones_name_file_and_key(tmp_path: Path) -> None:
    good = _copy_rule(tmp_path, "ACME101-acme-late-answer.toml", ("", ""))
    assert any(r.id == "ACME101" for r in load_catalog([good]))
    shutil.rmtree(good)
    bad = _copy_rule(tmp_path, "ACME101-acme-late-answer.toml", ('"result", "error-result"', '"respnse"'))
    expected = r"ACME101-acme-late-answer.toml: \[when\].then.event: unknown value .respnse."
    with pytest.raises(RuleFileError, match=expected):
        load_catalog([bad])


def test_a_user_rule_naming_an_unknown_anomaly_is_a_load_error(tmp_path: Path) -> None:
    """A misspelt name would load and never fire; the error names the file and a close name."""
    name = "ACME105-acme-cancel-unknown-request.toml"
    source = next((ROOT / "rules").glob("CW105-*.toml")).read_text()
    folder = tmp_path / "mine"
    folder.mkdir()
    text = source.replace('id = "CW105"', 'id = "ACME105"').replace('slug = "', 'slug = "acme-', 1)
    (folder / name).write_text(text.replace('"cancel.unknown-request"', '"cancel.unknwn-request"'))
    assert _load_error(folder) == (
        f"{folder / name}: [when].on.anomaly: unknown anomaly name 'cancel.unknwn-request'; "
        "did you mean 'cancel.unknown-request'? a rule can name only the anomalies cancelwire emits, "
        "which its built-in rules (rules/*.toml) name"
    )
    (folder / name).write_text(text.replace('"cancel.unknown-request"', '"acme.thing"'))
    assert _load_error(folder).startswith(f"{folder / name}: [when].on.anomaly: unknown anomaly name 'acme.thing'; a ")


def test_user_rules_may_not_take_the_builtin_prefix(tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    shutil.copy(next((ROOT / "rules").glob("CW101-*.toml")), folder)
    with pytest.raises(RuleFileError, match="CW prefix is reserved"):
        load_catalog([folder])


def test_unknown_placeholder_is_a_load_error(tmp_path: Path) -> None:
    folder = _copy_rule(tmp_path, "ACME101-acme-late-answer.toml", ("{gap}", "{delay}"))
    with pytest.raises(RuleFileError, match=r"message: unknown placeholder \{delay\}"):
        load_catalog([folder])


NAME = "ACME101-acme-late-answer.toml"
CW101_MESSAGE = "{sender} answered {method} (id {request_id}) {gap} after the cancel, once the cancel had reached it"


@pytest.mark.parametrize(
    ("template", "problem"),
    [
        ("{method:999999999}", "placeholder {method} takes no format spec or conversion; write {method}"),
        ("{method:{tool}}", "placeholder {method} takes no format spec or conversion; write {method}"),
        ("{method!r}", "placeholder {method} takes no format spec or conversion; write {method}"),
        ("{method.__class__}", "unknown placeholder {method.__class__}; allowed: gap, method,"),
        ("{method[0]}", "unknown placeholder {method[0]}; allowed: gap, method,"),
        ("{}", "unknown placeholder {}; allowed:"),
        ("{0}", "unknown placeholder {0}; allowed:"),
        ("{method", "not a valid template (expected '}' before end of string); write a literal brace as {{ or }}"),
        ("}", "not a valid template (Single '}' encountered in format string)"),
    ],
)
def test_message_templates_allow_only_plain_placeholders(tmp_path: Path, template: str, problem: str) -> None:
    folder = _copy_rule(tmp_path, NAME, (CW101_MESSAGE, template))
    with pytest.raises(RuleFileError) as caught:
        load_catalog([folder])
    assert str(caught.value).startswith(f"{folder / NAME}: message: {problem}")


def test_plain_placeholders_and_literal_braces_load(tmp_path: Path) -> None:
    folder = _copy_rule(tmp_path, NAME, (CW101_MESSAGE, "{{literal}} {method} {gap}"))
    assert [r.message for r in load_catalog([folder]) if r.id == "ACME101"] == ["{{literal}} {method} {gap}"]


def _load_error(folder: Path) -> str:
    with pytest.raises(RuleFileError) as caught:
        load_catalog([folder])
    return str(caught.value)


def test_special_files_in_rules_dir_are_refused_without_blocking(tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    os.mkfifo(folder / NAME)
    assert _load_error(folder) == f"{folder / NAME}: the rule file is a FIFO; it must be a regular file"
    os.unlink(folder / NAME)
    (folder / NAME).symlink_to("/dev/zero")
    assert _load_error(folder) == f"{folder / NAME}: the rule file is a character device; it must be a regular file"
    os.unlink(folder / NAME)
    (folder / NAME).mkdir()
    assert _load_error(folder) == f"{folder / NAME}: the rule file is a directory; it must be a regular file"


def test_a_fifo_in_rules_dir_is_exit_2_not_a_hang(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / NAME)
    proc = subprocess.run(
        [sys.executable, "-m", "cancelwire", "rules", "--rules", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr == f"cancelwire: error: {tmp_path / NAME}: the rule file is a FIFO; it must be a regular file\n"


def test_huge_deep_and_odd_rule_files_are_clear_errors(tmp_path: Path) -> None:
    huge = _copy_rule(tmp_path / "1", NAME, ("[docs]", "# " + "x" * 300_000 + "\n[docs]"))
    assert _load_error(huge) == f"{huge / NAME}: the rule file is larger than 256 KiB; that is not a rule file"
    deep = _copy_rule(tmp_path / "2", NAME, ('timing = "late"', "timing = " + "[" * 20_000))
    assert _load_error(deep) == f"{deep / NAME}: the rule file is nested too deeply to read"
    listed = _copy_rule(tmp_path / "3", NAME, ('status = "stable"', 'status = [[["stable"]]]'))
    assert _load_error(listed) == (
        f"{listed / NAME}: status: unknown value a list; expected one of preview, stable, deprecated, removed"
    )
    long = _copy_rule(tmp_path / "4", NAME, ('timing = "late"', 'timing = "' + "l" * 10_000 + '"'))
    assert _load_error(long) == (
        f"{long / NAME}: [when].timing: unknown value '{'l' * 60}…'; expected one of late, crossing"
    )
    within = _copy_rule(tmp_path / "5", NAME, ('timing = "late"', "within = nan"))
    assert _load_error(within).startswith(f"{within / NAME}: [when].within: goes with after + never only")


def test_closed_sets_are_enums() -> None:
    from cancelwire.judge.rule import Firing, RuleStatus, Shape

    rule = next(r for r in RULES if r.id == "CW101")
    assert rule.status is RuleStatus.STABLE and rule.firing is Firing.ONCE_PER_REQUEST
    assert rule.condition.shape is Shape.PAIR and rule.condition.timing == "late"


def test_one_helper_finds_rules_and_templates() -> None:
    from cancelwire.support.files import data_dir

    assert data_dir("rules") == ROOT / "rules" and data_dir("templates") == ROOT / "templates"
    with pytest.raises(CancelwireError, match=r"the nowhere/ folder is missing \(a broken installation\)"):
        data_dir("nowhere")
