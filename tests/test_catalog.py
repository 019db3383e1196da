"""The catalogue as a whole: every file loads, names line up with the code, docs render."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from cancelwire import revisions
from cancelwire.catalog import load_catalog
from cancelwire.cli import explain_text
from cancelwire.errors import RuleFileError

ROOT = Path(__file__).resolve().parent.parent
RULES = load_catalog()
ANOMALY = re.compile(r'"((?:input|jsonrpc|cancel|progress|reconstruct|capture|http|sse|stdio)\.[a-z0-9-]+)"')


def _emitted_names() -> set[str]:
    names: set[str] = set()
    for path in (ROOT / "analyzer").rglob("*.py"):
        names |= set(ANOMALY.findall(path.read_text()))
    return names


def test_every_anomaly_the_code_emits_has_a_rule_and_every_rule_name_is_emitted() -> None:
    ruled = {name for rule in RULES for name in rule.condition.anomalies}
    emitted = _emitted_names()
    assert sorted(emitted - ruled) == []
    assert sorted(ruled - emitted) == []


def test_ids_and_slugs_are_unique_and_in_range() -> None:
    assert len({r.id for r in RULES}) == len(RULES) == len({r.slug for r in RULES})
    assert all(r.id[2] in "12349" for r in RULES)


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
    readme = (ROOT / "README.md").read_text()
    rows = re.findall(r"^\| (CW\d{3}) \| `([a-z0-9-]+)` \|", readme, flags=re.M)
    assert rows == [(r.id, r.slug) for r in RULES]


def _copy_rule(tmp_path: Path, name: str, edit: tuple[str, str]) -> Path:
    source = next((ROOT / "rules").glob("CW101-*.toml")).read_text()
    folder = tmp_path / "mine"
    folder.mkdir()
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


def test_public_api_is_pinned() -> None:
    import cancelwire

    assert cancelwire.__all__ == ["AuditOptions", "AuditResult", "__version__", "audit"]
    result = cancelwire.audit([str(ROOT / "sample_captures" / "stdio" / "sdk-cancel-readonly-tool.jsonl")])
    assert [c.outcome.value for c in result.cancellations] == ["clean"]
