"""Property tests of the settings and rule loaders: whatever a user's file holds, the loader returns a
value or raises its own error class naming the file; nothing else escapes (no traceback, exit 2)."""

from __future__ import annotations

import tempfile
import tomllib
from pathlib import Path
from typing import Any

from cancelwire import config
from cancelwire.errors import ConfigError, RuleFileError
from cancelwire.judge import catalog
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
RULE_FILES = sorted((ROOT / "rules").glob("*.toml"))
KEYS = st.sampled_from([*config.KEYS, "x", "", "a.b", "\x1b", "disabled", "CW101"])
# TOML has no null: values are drawn without None (a filter rejecting it tripped hypothesis's
# filter_too_much health check now and then)
SCALARS = st.one_of(
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.one_of(KEYS, st.text(max_size=8)), inner, max_size=4)
    ),
    max_leaves=20,
)
FUZZ = settings(
    max_examples=150, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow]
)


@FUZZ
@given(st.dictionaries(KEYS, VALUES, max_size=6))
def test_any_settings_table_is_settings_or_a_config_error(table: dict[str, Any]) -> None:
    try:
        parsed = config.parse(Path("cancelwire.toml"), table, "")
    except ConfigError as exc:
        assert str(exc).startswith("cancelwire.toml: ")
    else:
        assert parsed.race_window is None or 0 <= parsed.race_window < float("inf")
        assert parsed.max_open is None or parsed.max_open >= 1


@FUZZ
@given(st.binary(max_size=300))
def test_any_settings_bytes_are_settings_or_a_config_error(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "cancelwire.toml"
        path.write_bytes(data)
        try:
            config.load_settings(path)
        except ConfigError as exc:
            assert str(exc).startswith(f"{path}: ")


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for key, inner in value.items():
            out += _paths(inner, (*prefix, key))
    return out


@FUZZ
@given(st.sampled_from(RULE_FILES), st.data())
def test_any_change_to_a_rule_is_a_rule_or_a_rule_file_error(path: Path, data: st.DataObject) -> None:
    """One key anywhere in a real rule replaced by any value: a rule, or RuleFileError naming the file."""
    rule = tomllib.loads(path.read_text())
    where = data.draw(st.sampled_from(_paths(rule)[1:]))
    target = rule
    for key in where[:-1]:
        target = target[key]
    target[where[-1]] = data.draw(VALUES)
    try:
        catalog.rule_from(path, rule, builtin=True)
    except RuleFileError as exc:
        assert str(exc).startswith(f"{path}: ")


@FUZZ
@given(st.sampled_from(RULE_FILES), st.integers(min_value=0, max_value=3000), st.binary(min_size=1, max_size=8))
def test_any_bytes_spliced_into_a_rule_file_are_a_rule_or_an_error(path: Path, at: int, junk: bytes) -> None:
    text = path.read_bytes()
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / path.name
        copy.write_bytes(text[:at] + junk + text[at + len(junk) :])
        try:
            catalog.load_rule(copy, builtin=True)
        except RuleFileError as exc:
            assert str(exc).startswith(f"{copy}: ")
