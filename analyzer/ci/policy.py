"""Gates and suppressions as the settings file and the command line give them (no audit types here,
so the settings loader can check them without importing the pipeline).

    [gates]                                  # outcome class -> error | warning | info | finding | off
    outcome-unverified = "error"
    [[suppress]]                             # an accepted issue, with the reason (shown in every format)
    rule = "CW108"                           # rule id or slug, or an outcome class
    tool = "append_ledger"                   # optional: server, tool, method, path (glob)
    reason = "appends are idempotent; tracked in #123"
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from ..errors import ConfigError
from ..model import Outcome
from ..support.files import key_text, shown
from .issue import Issue

Key = tuple[str | int, ...]


class SettingError(ConfigError):
    """A wrong value in a settings file, with the path of keys that holds it (so its line can be named)."""

    def __init__(self, message: str, hint: str | None = None, *, key: Key = ()) -> None:
        super().__init__(message, hint)
        self.key = key


class Gate(StrEnum):
    """How an outcome class fails a run."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"
    FINDING = "finding"
    """Not gated on its own: the catalogue rule that reports it decides (no double counting)."""
    OFF = "off"


#: Defaults, with the reason each is what it is (docs/ci.md, "Gates", repeats them).
DEFAULT_GATES: Mapping[Outcome, Gate] = {
    # CW101 response-after-cancel reports it at the severity its revision gives (MUST NOT -> error
    # from 2026-07-28, SHOULD NOT -> warning before): gating the outcome too would overrule that.
    Outcome.LATE_RESULT_VIOLATION: Gate.FINDING,
    # CW103 late-result-race (info): a race the client must discard, not a fault.
    Outcome.LATE_RESULT_DISCARDED: Gate.FINDING,
    # Silence after cancelling a tool that may have side effects proves nothing stopped. Tools that
    # tools/list marks readOnlyHint come out `clean`, so this is only side-effecting or unannotated
    # tools (the spec's annotation defaults treat an unannotated tool as not read-only).
    Outcome.OUTCOME_UNVERIFIED: Gate.WARNING,
    Outcome.CLEAN: Gate.OFF,
    Outcome.VERIFIED_BY_READ: Gate.OFF,
}

#: What each outcome class means (SARIF rule help, JUnit and docs/judging.md).
OUTCOME_HELP: Mapping[str, str] = {
    Outcome.LATE_RESULT_VIOLATION: "The result or error left after the cancel reached the receiver.",
    Outcome.LATE_RESULT_DISCARDED: "A result crossed the cancel in flight; the client must discard it, and the work "
    "did finish.",
    Outcome.OUTCOME_UNVERIFIED: "A tool that may have side effects (no annotations, or not read-only) was cancelled, "
    "nothing answered, and no later read checked what it did: silence does not prove the work stopped.",
    Outcome.CLEAN: "Silence after the cancel, and the call had no side effects to worry about.",
    Outcome.VERIFIED_BY_READ: "A side-effecting call was cancelled and a later read-only call or resources/read "
    "succeeded in the session, so its effect could be checked.",
}


def parse_gates(values: Mapping[str, Any], where: str, key: Key = ()) -> dict[Outcome, Gate]:
    """`{outcome: gate}` from the settings file's `[gates]` (KEY: where it sits) or `--gate OUTCOME=GATE`
    (WHERE names which)."""
    gates: dict[Outcome, Gate] = {}
    for name, value in values.items():
        try:
            outcome = Outcome(name)
        except ValueError:
            raise SettingError(
                f"{where}: {key_text(name)}: unknown outcome",
                f"one of {', '.join(o.value for o in Outcome)}",
                key=(*key, name),
            ) from None
        if not isinstance(value, str) or value not in {g.value for g in Gate}:
            choices = ", ".join(g.value for g in Gate)
            raise SettingError(
                f"{where}: {key_text(name)}: must be one of {choices}, not {shown(value)}", key=(*key, name)
            )
        gates[outcome] = Gate(value)
    return gates


def gate_option(text: str) -> tuple[str, str]:
    """`--gate OUTCOME=GATE` → (outcome, gate), checked later by `parse_gates`."""
    name, sep, value = text.partition("=")
    if not sep:
        raise ConfigError(f"--gate {text!r}: expected OUTCOME=GATE, e.g. outcome-unverified=error")
    return name.strip(), value.strip()


@dataclass(frozen=True, slots=True)
class Suppression:
    """An accepted issue, from `[[suppress]]` in the settings file; shown in every format."""

    rule: str
    """Rule id or slug, or an outcome class."""
    reason: str
    server: str | None = None
    tool: str | None = None
    method: str | None = None
    path: str | None = None
    """Glob over the input path as given (`recordings/legacy-*.jsonl`)."""

    def describe(self) -> str:
        """`outcome-unverified, tool append_ledger: why` (the report's settings list shows it)."""
        where = [
            f"{key} {value}"
            for key, value in (
                ("server", self.server),
                ("tool", self.tool),
                ("method", self.method),
                ("path", self.path),
            )
            if value is not None
        ]
        return f"{', '.join([self.rule, *where])}: {self.reason}"

    def matches(self, issue: Issue) -> bool:
        if self.rule not in (issue.code, issue.name):
            return False
        if self.server is not None and self.server != issue.identity.server:
            return False
        if self.tool is not None and self.tool != issue.tool:
            return False
        if self.method is not None and self.method != issue.method:
            return False
        return self.path is None or any(fnmatch.fnmatchcase(o.source, self.path) for o in issue.evidence)


_SUPPRESS_KEYS = ("rule", "reason", "server", "tool", "method", "path")
MAX_SUPPRESSIONS = 1000


def parse_suppressions(entries: Any, where: str, key: Key = ("suppress",)) -> tuple[Suppression, ...]:
    """`[[suppress]]` entries: `rule` and `reason` required, the rest optional filters."""
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise SettingError(f"{where}: must be a list of tables ([[suppress]]), not {shown(entries)}", key=key)
    if len(entries) > MAX_SUPPRESSIONS:
        raise SettingError(f"{where}: more than {MAX_SUPPRESSIONS} entries", key=(*key, MAX_SUPPRESSIONS))
    out = []
    for number, entry in enumerate(entries, 1):
        at = (*key, number - 1)
        unknown = sorted(set(entry) - set(_SUPPRESS_KEYS))
        if unknown:
            raise SettingError(
                f"{where} #{number}: {key_text(unknown[0])}: unknown key",
                f"the keys are: {', '.join(_SUPPRESS_KEYS)}",
                key=(*at, unknown[0]),
            )
        bad = next((k for k, v in entry.items() if not isinstance(v, str) or not v.strip()), None)
        if bad is not None:
            raise SettingError(f"{where} #{number}: {bad}: must be text, not {shown(entry[bad])}", key=(*at, bad))
        for required in ("rule", "reason"):
            if required not in entry:
                raise SettingError(
                    f"{where} #{number}: needs `{required}`", "each suppression names a rule and why", key=at
                )
        out.append(Suppression(**entry))
    return tuple(out)
