"""Each rule against its own fixtures, with only that rule enabled: exact findings, never counts.

tests/rules/<slug>/ holds `triggers.*` (must fire) and `clean.*` (the nearest miss, must not), each
with `<name>.expect.toml`:

    [options]                 # optional: protocol, vantage, race_window, input_format, keylog, max_tombstones,
                              # max_tools, capture_reader
    [[finding]]               # every expected finding, exactly
    request_id = 2            # omit for findings with no request
    severity = "warning"
    certainty = "exact"
    evidence = [7, 10]        # lines (or frames) of the fixture, in the order the finding lists them

A `--merge` rule's fixture is a directory `triggers/` (or `clean/`) holding the two recordings, merged
in name order; its evidence entries are "FILE:LINE" strings.
    [[known_miss]]            # a finding we know we do not produce yet, with the reason
    request_id = 5
    reason = "..."
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
from cancelwire.judge.catalog import load_catalog
from cancelwire.model import Origin, Vantage
from cancelwire.readers import ReadOptions
from cancelwire.readers.base import CaptureReaderChoice
from cancelwire.rebuild.reconstruct import ReconstructOptions
from cancelwire.run.pipeline import AuditOptions, audit

HERE = Path(__file__).parent / "rules"
RULES = {r.slug: r for r in load_catalog() if r.status != "removed"}


def _fixtures() -> list[tuple[str, Path]]:
    found = []
    for directory in sorted(p for p in HERE.iterdir() if p.is_dir()):
        for expect in sorted(directory.glob("*.expect.toml")):
            name = expect.name.removesuffix(".expect.toml")
            inputs = [p for p in directory.glob(f"{name}.*") if not p.name.endswith((".expect.toml", ".keys"))]
            inputs += [p for p in directory.glob(name) if p.is_dir()]
            assert len(inputs) == 1, f"{expect}: expected exactly one input named {name}.*, found {inputs}"
            found.append((directory.name, inputs[0]))
    return found


def _options(slug: str, table: dict[str, Any], base: Path) -> AuditOptions:
    vantage = Vantage(table["vantage"]) if "vantage" in table else None
    keylog = base / table["keylog"] if "keylog" in table else None
    return AuditOptions(
        input_format=table.get("input_format"),
        read=ReadOptions(
            vantage=vantage, keylog=keylog, capture_reader=CaptureReaderChoice(table.get("capture_reader", "auto"))
        ),
        reconstruct=ReconstructOptions(
            protocol=table.get("protocol"),
            race_window=table.get("race_window"),
            max_tombstones=table.get("max_tombstones", ReconstructOptions().max_tombstones),
            max_tools=table.get("max_tools", ReconstructOptions().max_tools),
        ),
        select=frozenset({slug}),
        merge=table.get("merge", False),
    )


def _key(item: dict[str, Any]) -> tuple[Any, ...]:
    return (item.get("request_id"), item["severity"], item.get("certainty", "exact"), tuple(item["evidence"]))


@pytest.mark.parametrize(("slug", "fixture"), _fixtures(), ids=lambda v: v if isinstance(v, str) else v.name)
def test_rule_fixture(slug: str, fixture: Path) -> None:
    assert slug in RULES, f"tests/rules/{slug} matches no rule"
    expect = tomllib.loads(fixture.with_name(fixture.name.split(".")[0] + ".expect.toml").read_text())
    paths = sorted(str(p) for p in fixture.iterdir()) if fixture.is_dir() else [str(fixture)]
    result = audit(paths, _options(slug, expect.get("options", {}), fixture.parent))
    assert all(i.error is None for i in result.inputs), [i.error for i in result.inputs]
    actual = {
        (f.request_id, f.severity.value, f.certainty.value, tuple(_place(o, fixture.is_dir()) for o in f.evidence))
        for f in result.findings
    }
    assert {f.rule for f in result.findings} <= {slug}
    expected = {_key(item) for item in expect.get("finding", [])}
    assert actual == expected
    for miss in expect.get("known_miss", []):
        assert miss.get("request_id") not in {a[0] for a in actual}, f"known miss now fires: {miss['reason']}"


def _place(origin: Origin, named: bool) -> int | str | None:
    place = origin.frame or origin.line
    return f"{Path(origin.source).name}:{place}" if named else place


def test_every_rule_has_a_trigger_and_a_clean_fixture() -> None:
    missing = []
    for slug in RULES:
        names = {p.name.split(".")[0] for p in (HERE / slug).glob("*.expect.toml")} if (HERE / slug).is_dir() else set()
        if not {"triggers", "clean"} <= names:
            missing.append(slug)
    assert missing == []


def test_every_fixture_directory_matches_a_rule() -> None:
    assert sorted(p.name for p in HERE.iterdir() if p.is_dir() and p.name not in RULES) == []
