"""The rule catalogue: find, load and validate `rules/*.toml` (and `--rules DIR`) into `Rule`s.

A bad rule file is an error (`RuleFileError`, exit 2), never skipped: rules must not vanish unnoticed.
The schema and the condition vocabulary are documented in `rules/README.md`.
"""

from __future__ import annotations

import re
import string
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import RuleFileError
from .model import REVISIONS, EntryKind, Level, Outcome, Revision, Severity, Transport, Vantage

PLACEHOLDERS = frozenset({"method", "request_id", "tool", "gap", "sender", "receiver", "revision"})
STATUSES = ("preview", "stable", "deprecated", "removed")
FIRINGS = ("once-per-request", "once-per-session", "once-per-input")
TIMINGS = ("late", "crossing")
ID_PATTERN = re.compile(r"^[A-Z]{2,8}[0-9]{3,4}$")
SLUG_PATTERN = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
BUILTIN_RANGES = {"1": "cancellation", "2": "transport", "3": "json-rpc hygiene", "4": "session", "9": "input"}
DEFAULT_SEVERITY = {Level.MUST: Severity.ERROR, Level.SHOULD: Severity.WARNING, Level.MAY: Severity.INFO}
LEVEL_ORDER = {Level.MAY: 0, Level.SHOULD: 1, Level.MUST: 2}
DOC_KEYS = ("what", "why", "example", "fix")
WHERE_KEYS = ("method", "tool_effect", "vantage", "transport", "outcome", "stream")
TOOL_EFFECTS = ("read-only", "side-effecting", "unknown", "none")


@dataclass(frozen=True, slots=True)
class Where:
    method: frozenset[str] | None = None
    tool_effect: frozenset[str] | None = None
    vantage: frozenset[Vantage] | None = None
    transport: frozenset[Transport] | None = None
    outcome: frozenset[Outcome] | None = None
    stream: str | None = None
    """`same` or `other`: the entry's stream relative to the request's own stream."""


@dataclass(frozen=True, slots=True)
class Selector:
    events: frozenset[EntryKind]
    side: str | None = None
    """`requester` or `receiver` (of the request), or None for either."""
    mechanism: str | None = None
    """`notification` or `disconnect`: the timeline's cancel mechanism."""
    where: Where = Where()


@dataclass(frozen=True, slots=True)
class Condition:
    shape: str
    """`anomaly`, `event`, `pair` or `absence`."""
    anomalies: frozenset[str] = frozenset()
    on: Selector | None = None
    after: Selector | None = None
    then: Selector | None = None
    never: Selector | None = None
    timing: str | None = None
    within: float | None = None
    """Absence shape: the `never` event must come within this many seconds of the anchor."""


@dataclass(frozen=True, slots=True)
class RuleDocs:
    what: str
    why: str
    example: str
    fix: str
    references: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    slug: str
    rev: int
    status: str
    since: str
    summary: str
    message: str
    section: str
    requirement: str
    levels: Mapping[Revision, Level | Mapping[Transport, Level]]
    severity_for: Mapping[Level, Severity]
    severity_reason: str | None
    condition: Condition
    firing: str
    docs: RuleDocs
    path: Path
    builtin: bool

    def level_for(self, revision: Revision | None, transport: Transport | None) -> Level | None:
        """The requirement level in force; None when the rule does not apply to that revision.

        With no known revision, the weakest level any revision gives (never silently off).
        """
        if revision is None or revision not in REVISIONS:
            candidates = [lvl for value in self.levels.values() for lvl in levels_of(value, transport)]
            return min(candidates, key=LEVEL_ORDER.__getitem__) if candidates else None
        value = self.levels.get(revision)
        if value is None:
            return None
        found = levels_of(value, transport)
        return found[0] if len(found) == 1 else (min(found, key=LEVEL_ORDER.__getitem__) if found else None)

    def severity(self, level: Level) -> Severity:
        return self.severity_for[level]

    @property
    def revisions(self) -> tuple[Revision, ...]:
        return tuple(r for r in REVISIONS if r in self.levels)


def levels_of(value: Level | Mapping[Transport, Level], transport: Transport | None) -> list[Level]:
    if isinstance(value, Level):
        return [value]
    if transport is not None:
        return [value[transport]] if transport in value else []
    return list(value.values())


def builtin_rules_dir() -> Path:
    """`rules/` from a checkout, or the copy packed into the wheel."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "_data" / "rules", here.parent / "rules"):
        if candidate.is_dir():
            return candidate
    raise RuleFileError(f"{here}: the built-in rules/ folder is missing (broken installation); reinstall cancelwire")


def load_catalog(extra_dirs: Iterable[Path] = ()) -> tuple[Rule, ...]:
    rules: list[Rule] = []
    for path in sorted(builtin_rules_dir().glob("*.toml")):
        rules.append(load_rule(path, builtin=True))
    for directory in extra_dirs:
        if not directory.is_dir():
            raise RuleFileError(f"{directory}: --rules needs a directory of *.toml rule files")
        for path in sorted(directory.glob("*.toml")):
            rules.append(load_rule(path, builtin=False))
    seen_ids: dict[str, Path] = {}
    seen_slugs: dict[str, Path] = {}
    for rule in rules:
        for key, seen in ((rule.id, seen_ids), (rule.slug, seen_slugs)):
            if key in seen:
                raise RuleFileError(f"{rule.path}: {key!r} is already used by {seen[key]}")
            seen[key] = rule.path
    return tuple(rules)


class _Ctx:
    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, where: str, problem: str) -> RuleFileError:
        return RuleFileError(f"{self.path}: {where}: {problem}")

    def str_of(self, table: Mapping[str, Any], key: str, where: str, *, optional: bool = False) -> str:
        value = table.get(key)
        if value is None and optional:
            return ""
        if not isinstance(value, str) or not value.strip():
            raise self.fail(f"{where}{key}", "required text is missing")
        return value

    def choice(self, value: Any, allowed: Iterable[str], where: str) -> str:
        options = list(allowed)
        if value not in options:
            raise self.fail(where, f"unknown value {value!r}; expected one of {', '.join(options)}")
        return str(value)

    def choices(self, value: Any, allowed: Iterable[str], where: str) -> frozenset[str]:
        values = value if isinstance(value, list) else [value]
        return frozenset(self.choice(v, allowed, where) for v in values)

    def unknown_keys(self, table: Mapping[str, Any], allowed: Iterable[str], where: str) -> None:
        extra = set(table) - set(allowed)
        if extra:
            raise self.fail(where or "top level", f"unknown key(s) {', '.join(sorted(extra))}")


def load_rule(path: Path, *, builtin: bool) -> Rule:
    ctx = _Ctx(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise RuleFileError(f"{path}: not valid TOML: {exc}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise RuleFileError(f"{path}: cannot read: {exc}") from exc
    ctx.unknown_keys(
        data,
        ("id", "slug", "rev", "status", "since", "summary", "message", "spec", "severity", "when", "docs", "firing"),
        "",
    )
    rule_id = ctx.str_of(data, "id", "")
    if not ID_PATTERN.match(rule_id):
        raise ctx.fail("id", f"{rule_id!r} is not an id like CW101")
    if builtin and (not rule_id.startswith("CW") or rule_id[2] not in BUILTIN_RANGES):
        raise ctx.fail("id", f"built-in ids are CW1xx-CW4xx or CW9xx, got {rule_id!r}")
    if not builtin and rule_id.startswith("CW"):
        raise ctx.fail("id", "the CW prefix is reserved for built-in rules; choose your own prefix")
    slug = ctx.str_of(data, "slug", "")
    if not SLUG_PATTERN.match(slug):
        raise ctx.fail("slug", f"{slug!r} is not kebab-case")
    expected_name = f"{rule_id}-{slug}.toml"
    if path.name != expected_name:
        raise ctx.fail("file name", f"must be {expected_name}")
    rev = data.get("rev")
    if not isinstance(rev, int) or isinstance(rev, bool) or rev < 1:
        raise ctx.fail("rev", "must be a positive integer")
    status = ctx.choice(data.get("status"), STATUSES, "status")
    message = ctx.str_of(data, "message", "")
    for _, name, _, _ in string.Formatter().parse(message):
        if name is not None and name not in PLACEHOLDERS:
            raise ctx.fail("message", f"unknown placeholder {{{name}}}; allowed: {', '.join(sorted(PLACEHOLDERS))}")
    spec = data.get("spec")
    if not isinstance(spec, dict):
        raise ctx.fail("[spec]", "table is missing")
    ctx.unknown_keys(spec, ("section", "requirement", "levels"), "[spec]")
    levels = _levels(ctx, spec.get("levels"))
    severity_for, reason = _severity(ctx, data.get("severity", {}))
    docs = data.get("docs")
    if not isinstance(docs, dict):
        raise ctx.fail("[docs]", "table is missing")
    ctx.unknown_keys(docs, (*DOC_KEYS, "references"), "[docs]")
    refs = docs.get("references", [])
    if not isinstance(refs, list) or not all(isinstance(r, str) for r in refs):
        raise ctx.fail("[docs].references", "must be a list of URLs")
    when = data.get("when")
    if not isinstance(when, dict):
        raise ctx.fail("[when]", "table is missing")
    return Rule(
        id=rule_id,
        slug=slug,
        rev=rev,
        status=status,
        since=ctx.str_of(data, "since", ""),
        summary=ctx.str_of(data, "summary", ""),
        message=message,
        section=ctx.str_of(spec, "section", "[spec]."),
        requirement=ctx.str_of(spec, "requirement", "[spec]."),
        levels=levels,
        severity_for=severity_for,
        severity_reason=reason,
        condition=_condition(ctx, when),
        firing=ctx.choice(data.get("firing", "once-per-request"), FIRINGS, "firing"),
        docs=RuleDocs(
            what=ctx.str_of(docs, "what", "[docs]."),
            why=ctx.str_of(docs, "why", "[docs]."),
            example=ctx.str_of(docs, "example", "[docs]."),
            fix=ctx.str_of(docs, "fix", "[docs]."),
            references=tuple(refs),
        ),
        path=path,
        builtin=builtin,
    )


def _levels(ctx: _Ctx, raw: Any) -> dict[Revision, Level | Mapping[Transport, Level]]:
    if not isinstance(raw, dict) or not raw:
        raise ctx.fail("[spec].levels", "needs a table revision → MUST/SHOULD/MAY")
    levels: dict[Revision, Level | Mapping[Transport, Level]] = {}
    for revision, value in raw.items():
        ctx.choice(revision, REVISIONS, "[spec].levels")
        where = f"[spec].levels.{revision}"
        if isinstance(value, dict):
            levels[revision] = {
                Transport(ctx.choice(t, [x.value for x in Transport], where)): Level(
                    ctx.choice(lvl, [x.value for x in Level], f"{where}.{t}")
                )
                for t, lvl in value.items()
            }
        else:
            levels[revision] = Level(ctx.choice(value, [x.value for x in Level], where))
    return levels


def _severity(ctx: _Ctx, raw: Any) -> tuple[dict[Level, Severity], str | None]:
    if not isinstance(raw, dict):
        raise ctx.fail("[severity]", "must be a table")
    ctx.unknown_keys(raw, (*(lvl.value for lvl in Level), "reason"), "[severity]")
    mapping = dict(DEFAULT_SEVERITY)
    for key, value in raw.items():
        if key != "reason":
            mapping[Level(key)] = Severity(ctx.choice(value, [s.value for s in Severity], f"[severity].{key}"))
    reason = raw.get("reason")
    if any(mapping[lvl] != DEFAULT_SEVERITY[lvl] for lvl in Level) and not reason:
        raise ctx.fail("[severity]", "a severity override needs a reason key saying why")
    return mapping, reason if isinstance(reason, str) else None


def _condition(ctx: _Ctx, when: Mapping[str, Any]) -> Condition:
    ctx.unknown_keys(when, ("on", "after", "then", "never", "timing", "within"), "[when]")
    keys = set(when) - {"timing", "within"}
    within = when.get("within")
    if within is not None and (keys != {"after", "never"} or not isinstance(within, int | float) or within < 0):
        raise ctx.fail("[when].within", "goes with after + never, as a number of seconds >= 0")
    if keys == {"on"}:
        on = when["on"]
        if isinstance(on, dict) and "anomaly" in on:
            ctx.unknown_keys(on, ("anomaly",), "[when].on")
            names = on["anomaly"] if isinstance(on["anomaly"], list) else [on["anomaly"]]
            if not names or not all(isinstance(n, str) and n for n in names):
                raise ctx.fail("[when].on.anomaly", "needs an anomaly name or a list of names")
            return Condition("anomaly", anomalies=frozenset(names))
        return Condition("event", on=_selector(ctx, on, "[when].on"))
    if keys == {"after", "then"}:
        timing = when.get("timing")
        if timing is not None:
            ctx.choice(timing, TIMINGS, "[when].timing")
        return Condition(
            "pair",
            after=_selector(ctx, when["after"], "[when].after"),
            then=_selector(ctx, when["then"], "[when].then"),
            timing=timing,
        )
    if keys == {"after", "never"}:
        return Condition(
            "absence",
            after=_selector(ctx, when["after"], "[when].after"),
            never=_selector(ctx, when["never"], "[when].never"),
            within=float(within) if within is not None else None,
        )
    raise ctx.fail("[when]", "needs exactly one of: on; after + then (+ timing); after + never")


def _selector(ctx: _Ctx, raw: Any, where: str) -> Selector:
    if not isinstance(raw, dict):
        raise ctx.fail(where, 'must be a table like { event = "cancel", from = "requester" }')
    ctx.unknown_keys(raw, ("event", "from", "mechanism", "where"), where)
    if "event" not in raw:
        raise ctx.fail(where, "needs an event kind")
    events = frozenset(EntryKind(e) for e in ctx.choices(raw["event"], [k.value for k in EntryKind], f"{where}.event"))
    side = ctx.choice(raw["from"], ("requester", "receiver"), f"{where}.from") if "from" in raw else None
    mechanism = (
        ctx.choice(raw["mechanism"], ("notification", "disconnect"), f"{where}.mechanism")
        if "mechanism" in raw
        else None
    )
    return Selector(events, side, mechanism, _where(ctx, raw.get("where", {}), f"{where}.where"))


def _where(ctx: _Ctx, raw: Any, where: str) -> Where:
    if not isinstance(raw, dict):
        raise ctx.fail(where, "must be a table")
    ctx.unknown_keys(raw, WHERE_KEYS, where)

    def pick(key: str, allowed: Iterable[str] | None) -> frozenset[str] | None:
        if key not in raw:
            return None
        if allowed is None:
            values = raw[key] if isinstance(raw[key], list) else [raw[key]]
            if not all(isinstance(v, str) for v in values):
                raise ctx.fail(f"{where}.{key}", "must be a string or a list of strings")
            return frozenset(values)
        return ctx.choices(raw[key], allowed, f"{where}.{key}")

    vantage = pick("vantage", [v.value for v in Vantage])
    transport = pick("transport", [t.value for t in Transport])
    outcome = pick("outcome", [o.value for o in Outcome])
    stream = ctx.choice(raw["stream"], ("same", "other"), f"{where}.stream") if "stream" in raw else None
    return Where(
        method=pick("method", None),
        tool_effect=pick("tool_effect", TOOL_EFFECTS),
        vantage=frozenset(Vantage(v) for v in vantage) if vantage else None,
        transport=frozenset(Transport(t) for t in transport) if transport else None,
        outcome=frozenset(Outcome(o) for o in outcome) if outcome else None,
        stream=stream,
    )
