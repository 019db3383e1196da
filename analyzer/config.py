"""Team settings from `cancelwire.toml` or `[tool.cancelwire]` in `pyproject.toml`.

    race-window = 0.1                          # seconds, every vantage
    [verifying-reads]                          # tool → the reads that can check its effect
    transfer_funds = ["get_balance", "resources/read"]
    [disabled]                                 # rule id or slug → why it is off (shown in reports)
    capture-ended-with-stream-open = "our captures always stop mid-session"

Command-line options win over the file.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ConfigError


@dataclass(frozen=True, slots=True)
class Settings:
    path: Path | None = None
    race_window: float | None = None
    verifying_reads: dict[str, tuple[str, ...]] = field(default_factory=dict)
    disabled: dict[str, str] = field(default_factory=dict)


def find_settings(start: Path) -> Settings:
    """The first cancelwire.toml or pyproject.toml with [tool.cancelwire] in START or its parents."""
    for folder in (start, *start.parents):
        own = folder / "cancelwire.toml"
        if own.is_file():
            return parse(own, _load(own))
        project = folder / "pyproject.toml"
        if project.is_file():
            table = _load(project).get("tool", {}).get("cancelwire")
            if isinstance(table, dict):
                return parse(project, table)
    return Settings()


def _load(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read settings: {exc}") from exc


def parse(path: Path, table: dict[str, Any]) -> Settings:
    unknown = set(table) - {"race-window", "verifying-reads", "disabled"}
    if unknown:
        raise ConfigError(
            f"{path}: unknown setting(s) {', '.join(sorted(unknown))}",
            "allowed: race-window, verifying-reads, disabled",
        )
    window = table.get("race-window")
    if window is not None and (not isinstance(window, int | float) or isinstance(window, bool) or window < 0):
        raise ConfigError(f"{path}: race-window must be a number of seconds >= 0")
    reads: dict[str, tuple[str, ...]] = {}
    for tool, value in (table.get("verifying-reads") or {}).items():
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f'{path}: verifying-reads.{tool} must be a list of tool names or "resources/read"')
        reads[tool] = tuple(value)
    disabled: dict[str, str] = {}
    for rule, reason in (table.get("disabled") or {}).items():
        if not isinstance(reason, str) or not reason.strip():
            raise ConfigError(f"{path}: disabled.{rule} needs the reason as a string")
        disabled[rule] = reason
    return Settings(path, float(window) if window is not None else None, reads, disabled)
