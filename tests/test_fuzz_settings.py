"""The settings loader and the rule loader on hostile files: only `ConfigError` / `RuleFileError` escape.

Both files are user-supplied (a settings file is even found by walking up from the current folder), so
they get the readers' treatment: arbitrary text, real files mutated, and well-formed TOML of the wrong
shape (tables as strings or lists, deep nesting, non-finite and enormous numbers).
"""

from __future__ import annotations

import contextlib
import json
import math
import random
import re
import string
import tomllib
from pathlib import Path

import pytest
from cancelwire.config import find_settings
from cancelwire.errors import ConfigError, RuleFileError
from cancelwire.judge.catalog import PLACEHOLDERS, load_catalog, load_rule
from fuzzing import MUTATIONS, PENDING, ROOT, deep_nesting, fuzz_settings, mutate
from hypothesis import assume, given
from hypothesis import strategies as st

RULE_FILES = sorted((ROOT / "rules").glob("CW*.toml"))
SETTINGS_EXAMPLE = b"""race-window = 0.1
[verifying-reads]
transfer_funds = ["get_balance", "resources/read"]
[disabled]
capture-ended-with-stream-open = "our captures always stop mid-session"
"""

toml_leaves = st.one_of(
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(),  # nan and inf included: TOML has them
    st.text(max_size=12),
    st.sampled_from(["{method:999999999}", "{method!r:>{tool}}", "{0}", "{", "}", "{method.__class__}", "x" * 300]),
)
toml_values = st.recursive(
    toml_leaves,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def toml_value(value: object) -> str:
    """`value` as a TOML inline value (a tiny writer: tomllib only reads)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a TOML basic string for what we generate
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    assert isinstance(value, dict)
    return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + "}"


def toml_document(table: dict[str, object]) -> str:
    return "".join(f"{json.dumps(key)} = {toml_value(value)}\n" for key, value in table.items())


def reshaped(table: dict[str, object], rng: random.Random, replacement: object) -> dict[str, object]:
    """`table` with one value somewhere in it (or a new key) replaced by `replacement`."""
    out = dict(table)
    keys = list(out)
    key = rng.choice(keys) if keys and rng.random() < 0.9 else "extra"
    inner = out.get(key)
    if isinstance(inner, dict) and inner and rng.random() < 0.6:
        out[key] = reshaped(inner, rng, replacement)
    else:
        out[key] = replacement
    return out


def deep(depth: int, opener: str) -> str:
    return f"x = {opener * depth}\n"


reshaped_settings = st.builds(
    lambda rng, value: toml_document(reshaped(tomllib.loads(SETTINGS_EXAMPLE.decode()), rng, value)),
    st.randoms(use_true_random=False),
    toml_values,
)
OPS = tuple(m for m in MUTATIONS if m is not deep_nesting or "toml-deep-nesting" not in PENDING)
settings_texts = st.one_of(
    reshaped_settings,
    reshaped_settings,
    st.text(max_size=400),
    st.builds(
        lambda rng: mutate(SETTINGS_EXAMPLE, rng, SETTINGS_EXAMPLE, 2, OPS).data.decode("utf-8", "replace"),
        st.randoms(use_true_random=False),
    ),
    *(
        []
        if "toml-deep-nesting" in PENDING
        else [st.builds(deep, st.sampled_from([100, 5_000, 100_000]), st.just("["))]
    ),
)


@pytest.mark.parametrize("file_name", ["cancelwire.toml", "pyproject.toml"])
@fuzz_settings(80)
@given(text=settings_texts)
def test_settings_loader_raises_only_config_error(
    tmp_path_factory: pytest.TempPathFactory, file_name: str, text: str
) -> None:
    folder = tmp_path_factory.mktemp("settings")
    if file_name == "pyproject.toml":
        text = "[tool.cancelwire]\n" + text
    assume(not _pending_class(text))
    (folder / file_name).write_text(text, encoding="utf-8", errors="surrogateescape")
    try:
        settings = find_settings(folder)
    except ConfigError as exc:
        assert str(exc).startswith(str(folder / file_name)), exc
        return
    for seconds in (settings.race_window, settings.hold):  # nothing can quietly turn verdicts off
        assert seconds is None or (math.isfinite(seconds) and seconds >= 0), settings
    assert settings.max_open is None or settings.max_open >= 1, settings


def _pending_class(text: str) -> bool:
    """The input belongs to a failure class whose fix has not landed (see fuzzing.PENDING)."""
    try:
        table = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError):
        return False
    table = table.get("tool", {}).get("cancelwire", table) if isinstance(table.get("tool"), dict) else table
    misshapen = any(not isinstance(table.get(key, {}), dict) for key in ("verifying-reads", "disabled"))
    window = table.get("race-window")
    huge = isinstance(window, int) and abs(window) > 1e308
    return ("settings-shape" in PENDING and misshapen) or ("settings-huge-number" in PENDING and huge)


FUZZED_NAME = "XY100-fuzzed-rule.toml"


def rule_texts(rng: random.Random, value: object, how: str) -> str:
    """A real rule renamed to `FUZZED_NAME` (so validation goes past id and file name), then damaged:
    its bytes mutated, or one value anywhere in it replaced by a value of any shape."""
    original = rng.choice(RULE_FILES).read_text()
    table = tomllib.loads(original) | {"id": "XY100", "slug": "fuzzed-rule"}
    if how == "bytes":
        renamed = re.sub(
            r'(?m)^slug = ".*"$', 'slug = "fuzzed-rule"', re.sub(r'(?m)^id = ".*"$', 'id = "XY100"', original)
        )
        donor = rng.choice(RULE_FILES).read_bytes()
        return mutate(renamed.encode(), rng, donor, rng.randint(1, 3), OPS).data.decode("utf-8", "replace")
    return toml_document(reshaped(table, rng, value))


@fuzz_settings(120)
@given(
    rng=st.randoms(use_true_random=False),
    value=toml_values,
    how=st.sampled_from(["bytes", "shape", "shape"]),
)
def test_rule_loader_raises_only_rule_file_error(
    tmp_path_factory: pytest.TempPathFactory, rng: random.Random, value: object, how: str
) -> None:
    folder = tmp_path_factory.mktemp("rules")
    text = rule_texts(rng, value, how)
    path = folder / FUZZED_NAME
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    try:
        rule = load_rule(path, builtin=False)
    except RuleFileError as exc:
        assert str(exc).startswith(str(path)), exc
    else:  # a loaded template only names placeholders: a finding's message stays as small as its values
        for _, name, spec, conversion in string.Formatter().parse(rule.message):
            assert name is None or (name in PLACEHOLDERS and not spec and conversion is None), rule.message
    with contextlib.suppress(RuleFileError):
        load_catalog([folder])


@pytest.mark.skipif("toml-deep-nesting" in PENDING, reason=PENDING.get("toml-deep-nesting", ""))
@pytest.mark.parametrize("opener", ["[", "{a = "])
def test_deeply_nested_files_are_errors_not_crashes(tmp_path: Path, opener: str) -> None:
    """100k nested arrays or tables: tomllib recurses once per level."""
    (tmp_path / "cancelwire.toml").write_text(deep(100_000, opener))
    with pytest.raises(ConfigError):
        find_settings(tmp_path)
    rule = tmp_path / FUZZED_NAME
    rule.write_text(deep(100_000, opener))
    with pytest.raises(RuleFileError):
        load_rule(rule, builtin=False)
