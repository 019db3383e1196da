"""The rule catalogue: find, load and validate `rules/*.toml` (and `--rules DIR`) into `Rule`s (`rule`).

A bad rule file is an error (`RuleFileError`, exit 2), never skipped: rules must not vanish unnoticed.
The schema and the condition vocabulary are documented in `rules/README.md`. Rule files from `--rules
DIR` are a user's files and as hostile as any input: they are read bounded, regular files only and
without blocking (files.read_toml), and a message template may hold only the plain placeholders below:
a format spec such as `{method:999999999}` would cost gigabytes each time a finding is written.
"""

from __future__ import annotations

import difflib
import re
import string
from collections.abc import Iterable, Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any, TypeVar

from ..errors import RuleFileError
from ..model import (
    REVISIONS,
    AnomalyName,
    CancelMechanism,
    EntryKind,
    Level,
    Outcome,
    Revision,
    Severity,
    Transport,
    Vantage,
)
from ..support.files import data_dir, key_text, read_toml, shown
from ..support.values import seconds_of
from .rule import (
    Condition,
    Firing,
    Party,
    Rule,
    RuleDocs,
    RuleStatus,
    Selector,
    Shape,
    StreamRelation,
    Timing,
    Where,
)

PLACEHOLDERS = frozenset({"method", "request_id", "tool", "gap", "sender", "receiver", "revision"})
#: The largest rule file read; the biggest built-in is under 3 KiB.
RULE_FILE_LIMIT = 256 * 1024
ID_PATTERN = re.compile(r"^[A-Z]{2,8}[0-9]{3,4}$")
SLUG_PATTERN = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
BUILTIN_RANGES = {
    "1": "cancellation",
    "2": "transport",
    "3": "json-rpc hygiene",
    "4": "session",
    "5": "two recordings (--merge)",
    "9": "input",
}
DEFAULT_SEVERITY = {Level.MUST: Severity.ERROR, Level.SHOULD: Severity.WARNING, Level.MAY: Severity.INFO}
DOC_KEYS = ("what", "why", "example", "fix")
WHERE_KEYS = ("method", "tool_effect", "vantage", "transport", "outcome", "stream")
TOOL_EFFECTS = ("read-only", "side-effecting", "unknown", "none")
E = TypeVar("E", bound=StrEnum)
_ANOMALY_NAMES = [name.value for name in AnomalyName]


def load_catalog(extra_dirs: Iterable[Path] = ()) -> tuple[Rule, ...]:
    rules: list[Rule] = []
    for path in sorted(data_dir("rules").glob("*.toml")):
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
        if not isinstance(value, str) or value not in options:
            raise self.fail(where, f"unknown value {shown(value)}; expected one of {', '.join(options)}")
        return value

    def member(self, value: Any, kind: type[E], where: str) -> E:
        return kind(self.choice(value, [m.value for m in kind], where))

    def choices(self, value: Any, allowed: Iterable[str], where: str) -> frozenset[str]:
        values = value if isinstance(value, list) else [value]
        return frozenset(self.choice(v, allowed, where) for v in values)

    def unknown_keys(self, table: Mapping[str, Any], allowed: Iterable[str], where: str) -> None:
        extra = set(table) - set(allowed)
        if extra:
            names = ", ".join(key_text(k) for k in sorted(extra)[:5]) + (" ..." if len(extra) > 5 else "")
            raise self.fail(where or "top level", f"unknown key(s) {names}")


def load_rule(path: Path, *, builtin: bool) -> Rule:
    return rule_from(path, read_toml(path, limit=RULE_FILE_LIMIT, what="rule", error=RuleFileError), builtin=builtin)


def _identity(ctx: _Ctx, data: Mapping[str, Any], builtin: bool) -> tuple[str, str]:
    """The rule's id and slug, checked against the id ranges and the file name."""
    rule_id = ctx.str_of(data, "id", "")
    if not ID_PATTERN.fullmatch(rule_id):
        raise ctx.fail("id", f"{shown(rule_id)} is not an id like CW101")
    if builtin and (not rule_id.startswith("CW") or rule_id[2] not in BUILTIN_RANGES):
        raise ctx.fail("id", f"built-in ids are CW1xx-CW5xx or CW9xx, got {rule_id!r}")
    if not builtin and rule_id.startswith("CW"):
        raise ctx.fail("id", "the CW prefix is reserved for built-in rules; choose your own prefix")
    slug = ctx.str_of(data, "slug", "")
    if not SLUG_PATTERN.fullmatch(slug) or len(slug) > 64:
        raise ctx.fail("slug", f"{shown(slug)} is not kebab-case of at most 64 characters")
    expected_name = f"{rule_id}-{slug}.toml"
    if ctx.path.name != expected_name:
        raise ctx.fail("file name", f"must be {expected_name}")
    return rule_id, slug


def rule_from(path: Path, data: Mapping[str, Any], *, builtin: bool) -> Rule:
    """A rule from the parsed TOML of PATH, every key checked (RuleFileError names file and key)."""
    ctx = _Ctx(path)
    ctx.unknown_keys(
        data,
        ("id", "slug", "rev", "status", "since", "summary", "message", "spec", "severity", "when", "docs", "firing"),
        "",
    )
    rule_id, slug = _identity(ctx, data, builtin)
    rev = data.get("rev")
    if not isinstance(rev, int) or isinstance(rev, bool) or not 1 <= rev < 2**31:
        raise ctx.fail("rev", "must be a positive integer")
    status = ctx.member(data.get("status"), RuleStatus, "status")
    message = _message(ctx, ctx.str_of(data, "message", ""))
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
        firing=ctx.member(data.get("firing", "once-per-request"), Firing, "firing"),
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


def _message(ctx: _Ctx, text: str) -> str:
    """A finding's template: literal text and plain `{name}` placeholders from PLACEHOLDERS only (no
    format spec, conversion, attribute or index: `str.format` would run them on every finding)."""
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as exc:
        raise ctx.fail("message", f"not a valid template ({exc}); write a literal brace as {{{{ or }}}}") from None
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        if name not in PLACEHOLDERS:
            raise ctx.fail(
                "message", f"unknown placeholder {{{name[:60]}}}; allowed: {', '.join(sorted(PLACEHOLDERS))}"
            )
        if spec or conversion:
            raise ctx.fail("message", f"placeholder {{{name}}} takes no format spec or conversion; write {{{name}}}")
    return text


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
    if within is not None:
        try:
            if keys != {"after", "never"}:
                raise ValueError("goes with after + never only")
            within = seconds_of(within)
        except ValueError as exc:
            raise ctx.fail("[when].within", f"{exc} (a number of seconds that goes with after + never)") from None
    if keys == {"on"}:
        on = when["on"]
        if isinstance(on, dict) and "anomaly" in on:
            ctx.unknown_keys(on, ("anomaly",), "[when].on")
            names = on["anomaly"] if isinstance(on["anomaly"], list) else [on["anomaly"]]
            if not names or not all(isinstance(n, str) and n for n in names):
                raise ctx.fail("[when].on.anomaly", "needs an anomaly name or a list of names")
            return Condition(Shape.ANOMALY, anomalies=frozenset(_anomaly(ctx, n) for n in names))
        return Condition(Shape.EVENT, on=_selector(ctx, on, "[when].on"))
    if keys == {"after", "then"}:
        timing = ctx.member(when["timing"], Timing, "[when].timing") if "timing" in when else None
        return Condition(
            Shape.PAIR,
            after=_selector(ctx, when["after"], "[when].after"),
            then=_selector(ctx, when["then"], "[when].then"),
            timing=timing,
        )
    if keys == {"after", "never"}:
        return Condition(
            Shape.ABSENCE,
            after=_selector(ctx, when["after"], "[when].after"),
            never=_selector(ctx, when["never"], "[when].never"),
            within=float(within) if within is not None else None,
        )
    raise ctx.fail("[when]", "needs exactly one of: on; after + then (+ timing); after + never")


def _anomaly(ctx: _Ctx, name: str) -> AnomalyName:
    """The anomaly NAME names: a rule that names one the code never emits would never fire."""
    if name in _ANOMALY_NAMES:
        return AnomalyName(name)
    close = difflib.get_close_matches(name[:100], _ANOMALY_NAMES, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise ctx.fail(
        "[when].on.anomaly",
        f"unknown anomaly name {shown(name)}; {hint}a rule can name only the anomalies cancelwire emits, "
        "which its built-in rules (rules/*.toml) name",
    )


def _selector(ctx: _Ctx, raw: Any, where: str) -> Selector:
    if not isinstance(raw, dict):
        raise ctx.fail(where, 'must be a table like { event = "cancel", from = "requester" }')
    ctx.unknown_keys(raw, ("event", "from", "mechanism", "where"), where)
    if "event" not in raw:
        raise ctx.fail(where, "needs an event kind")
    events = frozenset(EntryKind(e) for e in ctx.choices(raw["event"], [k.value for k in EntryKind], f"{where}.event"))
    side = ctx.member(raw["from"], Party, f"{where}.from") if "from" in raw else None
    mechanism = (
        frozenset(
            CancelMechanism(m) for m in ctx.choices(raw["mechanism"], list(CancelMechanism), f"{where}.mechanism")
        )
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
    stream = ctx.member(raw["stream"], StreamRelation, f"{where}.stream") if "stream" in raw else None
    return Where(
        method=pick("method", None),
        tool_effect=pick("tool_effect", TOOL_EFFECTS),
        vantage=frozenset(Vantage(v) for v in vantage) if vantage else None,
        transport=frozenset(Transport(t) for t in transport) if transport else None,
        outcome=frozenset(Outcome(o) for o in outcome) if outcome else None,
        stream=stream,
    )
