"""Team settings from `cancelwire.toml` or `[tool.cancelwire]` in `pyproject.toml`.

    race-window = 0.1                          # seconds, every vantage
    hold = 600                                 # seconds a silent cancelled call waits (recording time)
    max-open = 5000                            # open requests per session before the oldest are flushed
    [verifying-reads]                          # tool → the reads that can check its effect
    transfer_funds = ["get_balance", "resources/read"]
    [disabled]                                 # rule id or slug → why it is off (shown in reports)
    capture-ended-with-stream-open = "our captures always stop mid-session"

The first file found from the working directory upwards is used (`--config FILE` names one,
`--isolated` uses none); command-line options win over it. A settings file is hostile like any input:
it is read bounded and never blocks, and every value is checked (a `race-window = nan` would silently
turn violations into races), with errors that name the file, the line (`toml_lines`) and the key.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .ci.policy import Key, SettingError, Suppression, parse_gates, parse_suppressions
from .errors import ConfigError
from .support.files import key_text, read_regular, read_toml, shown
from .support.toml_lines import line_of
from .support.values import count_of, seconds_of

#: Settings files are small; a pyproject.toml with a long tool table still fits.
SETTINGS_LIMIT = 1 << 20
#: Where the settings sit in a pyproject.toml.
TOOL_TABLE: Key = ("tool", "cancelwire")
KEYS = ("race-window", "hold", "max-open", "verifying-reads", "disabled", "gates", "suppress")


@dataclass(frozen=True, slots=True)
class Settings:
    path: Path | None = None
    """The settings file these came from; None when none was used."""
    race_window: float | None = None
    hold: float | None = None
    max_open: int | None = None
    verifying_reads: dict[str, tuple[str, ...]] = field(default_factory=dict)
    disabled: dict[str, str] = field(default_factory=dict)
    gates: dict[str, str] = field(default_factory=dict)
    """Outcome class → gate (`[gates]`, checked by `gates.parse_gates`)."""
    suppress: tuple[Suppression, ...] = ()
    """`[[suppress]]` entries, each with its reason."""

    def values(self) -> list[tuple[str, str]]:
        """Every setting the file sets, as (key, value) text for the report."""
        out = [
            (key, f"{value:g}")
            for key, value in (("race-window", self.race_window), ("hold", self.hold), ("max-open", self.max_open))
            if value is not None
        ]
        out += [(f"verifying-reads.{tool}", ", ".join(reads)) for tool, reads in self.verifying_reads.items()]
        out += [(f"disabled.{rule}", reason) for rule, reason in self.disabled.items()]
        out += [(f"gates.{outcome}", gate) for outcome, gate in self.gates.items()]
        out += [(f"suppress.{n}", s.describe()) for n, s in enumerate(self.suppress, 1)]
        return out


def find_settings(start: Path) -> Settings:
    """The first cancelwire.toml, or pyproject.toml with [tool.cancelwire], in START or its parents.

    Whatever stands at those names is read (and refused clearly when it is not a regular file), never
    silently passed over: a settings file that vanished from the search would change verdicts unseen.
    """
    for folder in (start, *start.parents):
        own = folder / "cancelwire.toml"
        if os.path.lexists(own):
            return load_settings(own)
        project = folder / "pyproject.toml"
        if os.path.lexists(project):
            tool = read_toml(project, limit=SETTINGS_LIMIT, what="settings", error=ConfigError).get("tool")
            if isinstance(tool, dict) and "cancelwire" in tool:
                return _parsed(project, tool["cancelwire"], TOOL_TABLE)
    return Settings()


def load_settings(path: Path) -> Settings:
    """`--config FILE`: a cancelwire.toml, or a pyproject.toml holding [tool.cancelwire]."""
    data = read_toml(path, limit=SETTINGS_LIMIT, what="settings", error=ConfigError)
    if path.name != "pyproject.toml":
        return _parsed(path, data, ())
    tool = data.get("tool")
    if not isinstance(tool, dict) or "cancelwire" not in tool:
        raise ConfigError(f"{path}: has no [tool.cancelwire] table")
    return _parsed(path, tool["cancelwire"], TOOL_TABLE)


def _parsed(path: Path, table: Any, base: Key) -> Settings:
    """`parse`, its error naming the line that set the wrong value (`cancelwire.toml:5: hold: ...`)."""
    try:
        return parse(path, table, "".join(f"{k}." for k in base))
    except SettingError as exc:
        try:
            text = read_regular(path, limit=SETTINGS_LIMIT, what="settings", error=ConfigError).decode()
        except (ConfigError, UnicodeDecodeError):  # it was read a moment ago; without it, no line
            raise exc from None
        line = line_of(text, (*base, *exc.key))
        if line is None:
            raise
        raise ConfigError(exc.message.replace(f"{path}: ", f"{path}:{line}: ", 1), exc.hint) from None


def parse(path: Path, table: Any, prefix: str) -> Settings:
    """Check every key and value; PREFIX is where the table sits in the file (for error messages)."""

    def fail(keys: Key, problem: str, hint: str | None = None) -> SettingError:
        shown_keys = ".".join(key_text(k) for k in keys)
        return SettingError(f"{path}: {prefix}{shown_keys}: {problem}", hint, key=keys)

    if not isinstance(table, dict):
        raise ConfigError(f"{path}: {prefix.rstrip('.') or 'the file'} must be a table, not {shown(table)}")
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise fail((unknown[0],), "unknown setting", f"the settings are: {', '.join(KEYS)}")
    numbers: dict[str, Any] = {}
    for key, check in (("race-window", seconds_of), ("hold", seconds_of), ("max-open", count_of)):
        if key in table:
            try:
                numbers[key] = check(table[key])
            except ValueError as exc:
                raise fail((key,), str(exc)) from None
    reads: dict[str, tuple[str, ...]] = {}
    for tool, value in _table(table, "verifying-reads", fail).items():
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise fail(("verifying-reads", tool), 'must be a list of tool names or "resources/read"')
        reads[tool] = tuple(value)
    disabled: dict[str, str] = {}
    for rule, reason in _table(table, "disabled", fail).items():
        if not isinstance(reason, str) or not reason.strip():
            raise fail(("disabled", rule), "needs the reason it is off, as text")
        disabled[rule] = reason
    gates = _table(table, "gates", fail)
    parse_gates(gates, f"{path}: {prefix}gates", ("gates",))
    return Settings(
        path=path,
        race_window=numbers.get("race-window"),
        hold=numbers.get("hold"),
        max_open=numbers.get("max-open"),
        verifying_reads=reads,
        disabled=disabled,
        gates=gates,
        suppress=parse_suppressions(table.get("suppress", []), f"{path}: {prefix}suppress"),
    )


def _table(table: dict[str, Any], key: str, fail: Callable[[Key, str], ConfigError]) -> dict[str, Any]:
    value = table.get(key, {})
    if not isinstance(value, dict):
        raise fail((key,), f"must be a table, not {shown(value)}")
    return value
