"""`--redact`: an audit whose outputs can be shared without what the recorded sessions said.

Every payload value is replaced by its type and length (`"<str 42>"`, `"<int 3>"`, `"<float 5>"`,
`"<bool>"`): tool arguments and results, error messages and data, progress messages, cancel reasons, and
every other piece of recorded free text (a line that was not JSON, the details of a reader's problem, a
transport fact's text, the server command a session was labelled with). What is kept is what a reader
needs to follow the protocol: JSON-RPC ids, methods, the tool (or prompt) name a call names, progress
tokens and values, the cancel's `requestId`, protocol versions, client and server names and versions,
the tool annotations `tools/list` gave, `isError`, error codes, object keys and the shape of every value,
timings, file names with lines and frames, session keys, rules and verdicts.

It is done once, upstream of every writer: `pipeline.audit_source` hands each input's anomalies to the
engine redacted (their details are the only recorded text a finding's message can hold) and passes
sessions, cancelled calls and exchange rows through `Redacting` into the sink. Rules judged the recording
as it was, so the verdicts are the same with and without `--redact`; every output (text, JSON, Markdown,
HTML, SARIF, JUnit, GitHub, the exchange table, the dataset, the library's result) only ever sees the
redacted values.

Message excerpts are bounded (400 characters, then `… (N chars)`), so they are often cut inside a value.
They are therefore redacted by a small JSON scanner, not a parser: it walks the text token by token,
knows the key path of each value, keeps the values above and replaces the rest, and stops safely at the
cut (an unterminated string becomes `"<str 17…>"`) or at anything that is not JSON (the rest becomes one
`<str N>`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import orjson

from ..errors import InputError
from ..judge.engine import Skip
from ..model import Anomaly, CancelledCall, Finding, RequestTimeline, Session, TimelineEntry
from .partial import Row, Sink
from .results import InputSummary

_MCP = "io.modelcontextprotocol/"
#: Key paths (from the message's top; `*` is any array item) whose scalar values are kept.
KEPT: frozenset[tuple[str, ...]] = frozenset(
    {
        ("jsonrpc",),
        ("id",),
        ("method",),
        ("params", "name"),
        ("params", "_meta", "progressToken"),
        ("params", "progressToken"),
        ("params", "progress"),
        ("params", "total"),
        ("params", "requestId"),
        ("params", "protocolVersion"),
        ("params", "clientInfo", "name"),
        ("params", "clientInfo", "version"),
        ("result", "protocolVersion"),
        ("result", "serverInfo", "name"),
        ("result", "serverInfo", "version"),
        ("result", "tools", "*", "name"),
        *(("result", "tools", "*", "annotations", hint) for hint in ("readOnlyHint", "destructiveHint")),
        *(("result", "tools", "*", "annotations", hint) for hint in ("idempotentHint", "openWorldHint")),
        ("result", "content", "*", "type"),
        ("result", "isError"),
        ("result", "resultType"),
        ("result", "supportedVersions", "*"),
        ("error", "code"),
        # 2026-07-28 carries the version and the peers' names in `_meta`
        ("params", "_meta", f"{_MCP}protocolVersion"),
        ("params", "_meta", f"{_MCP}clientInfo", "name"),
        ("params", "_meta", f"{_MCP}clientInfo", "version"),
        ("result", "_meta", f"{_MCP}serverInfo", "name"),
        ("result", "_meta", f"{_MCP}serverInfo", "version"),
    }
)
#: Key paths under which every scalar is kept: the capability flags the peers announced.
KEPT_UNDER = (("params", "capabilities"), ("result", "capabilities"), ("params", "_meta", f"{_MCP}clientCapabilities"))
#: Keys of `clientInfo`/`serverInfo` kept in a session's summary (baselines name servers by them).
KEPT_INFO = ("name", "version")

_TOKEN = re.compile(
    r"""(?P<space>\s+)
    |(?P<string>"(?:[^"\\]|\\.)*("|\\?$))
    |(?P<number>-?\d+(?P<fraction>(?:\.\d*)?(?:[eE][+-]?\d+)?))
    |(?P<literal>true|false|null)
    |(?P<punct>[{}\[\]:,])""",
    re.VERBOSE | re.DOTALL,
)
_CUT = re.compile(r"… \(\d+ chars\)$")


def kept(path: tuple[str, ...]) -> bool:
    return path in KEPT or any(path[: len(under)] == under for under in KEPT_UNDER)


def text(value: str) -> str:
    """Recorded free text: its type and length only."""
    return f"<str {len(value)}>"


def scrub(value: Any) -> Any:
    """A decoded JSON value with its shape and keys, and every scalar replaced by type and length."""
    if isinstance(value, Mapping):
        return {key: scrub(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [scrub(item) for item in value]
    if value is None:
        return None
    if isinstance(value, bool):
        return "<bool>"
    if isinstance(value, str):
        return text(value)
    return f"<{'int' if isinstance(value, int) else 'float'} {len(str(value))}>"


def excerpt(raw: str) -> str:
    """A message excerpt (JSON text, maybe cut short) with the values outside `KEPT` replaced."""
    if not raw:
        return raw
    cut = _CUT.search(raw)
    body, tail = (raw[: cut.start()], raw[cut.start() :]) if cut else (raw, "")
    if not body.lstrip().startswith(("{", "[")):
        return text(body) + tail
    return _Scanner(body).run() + tail


class _Scanner:
    """One pass over JSON text, tracking the key path of every value (see the module docstring)."""

    def __init__(self, body: str) -> None:
        self.body = body
        self.out: list[str] = []
        # one frame per open container: [is_object, current key or None, expecting a key]
        self.stack: list[list[Any]] = []

    def run(self) -> str:
        at = 0
        while at < len(self.body):
            match = _TOKEN.match(self.body, at)
            if match is None:  # not JSON from here on: none of it is shown
                self.out.append(text(self.body[at:]))
                break
            at = match.end()
            self._token(match)
        return "".join(self.out)

    def _path(self) -> tuple[str, ...]:
        path = tuple(frame[1] if frame[0] else "*" for frame in self.stack)
        return path[1:] if path[:1] == ("*",) else path  # a batch: each item is a message

    def _token(self, match: re.Match[str]) -> None:
        token, kind = match.group(), match.lastgroup
        frame = self.stack[-1] if self.stack else None
        if kind == "punct":
            self._punct(token, frame)
        elif kind == "string" and frame is not None and frame[0] and frame[2]:
            frame[1] = _key(token)
            self.out.append(token)
        elif kind in ("string", "number", "literal"):
            self.out.append(token if token == "null" or kept(self._path()) else _scalar(match))
        else:
            self.out.append(token)

    def _punct(self, token: str, frame: list[Any] | None) -> None:
        if token in "{[":
            self.stack.append([token == "{", None, token == "{"])
        elif token in "}]":
            if self.stack:
                self.stack.pop()
        elif token == ":" and frame is not None:
            frame[2] = False
        elif token == "," and frame is not None and frame[0]:
            frame[2] = True
        self.out.append(token)


def _key(token: str) -> str:
    try:
        key = orjson.loads(token)
    except orjson.JSONDecodeError:  # cut inside the key
        return ""
    return key if isinstance(key, str) else ""


def _scalar(match: re.Match[str]) -> str:
    token = match.group()
    if match.lastgroup == "literal":
        return '"<bool>"'
    if match.lastgroup == "number":
        return f'"<{"float" if match.group("fraction") else "int"} {len(token)}>"'
    try:
        return f'"{text(orjson.loads(token))}"'
    except orjson.JSONDecodeError:  # cut short by the excerpt's bound: at least this long
        return f'"<str {len(token) - 1}…>"'


def anomaly(a: Anomaly) -> Anomaly:
    return replace(a, detail=text(a.detail)) if a.detail else a


def _entry(e: TimelineEntry) -> TimelineEntry:
    return replace(e, excerpt=excerpt(e.excerpt)) if e.excerpt else e


def timeline(tl: RequestTimeline) -> RequestTimeline:
    cancel = tl.cancel
    if cancel is not None:
        cancel = replace(cancel, entry=_entry(cancel.entry), reason=text(cancel.reason) if cancel.reason else None)
    return replace(
        tl,
        entries=tuple(map(_entry, tl.entries)),
        cancel=cancel,
        verified_by=_entry(tl.verified_by) if tl.verified_by else None,
    )


def cancelled(call: CancelledCall) -> CancelledCall:
    """The explanation is ours (outcomes.py: the method and tool name, both kept); the timeline is not."""
    return replace(call, timeline=timeline(call.timeline)) if call.timeline else call


def was_redacted(report: Mapping[str, Any]) -> bool:
    """A JSON report made with `--redact` (its run lists the setting): redacting it again would
    measure the placeholders."""
    run = report.get("run")
    settings = run.get("settings") if isinstance(run, Mapping) else None
    listed = settings if isinstance(settings, list) else []
    return any(isinstance(s, Mapping) and s.get("setting") == "redact" and s.get("value") == "on" for s in listed)


def report_call(call: Mapping[str, Any]) -> dict[str, Any]:
    """A cancelled call of a JSON report (`forms.cancellation`) with its excerpts redacted; the rest is
    ids, names, places, verdicts and our own explanation."""
    timeline = call.get("timeline")
    entries = [
        {**e, "excerpt": excerpt(e["excerpt"])} if isinstance(e, Mapping) and isinstance(e.get("excerpt"), str) else e
        for e in (timeline if isinstance(timeline, list) else ())
    ]
    return {**call, "timeline": entries}


def report_session(entry: Mapping[str, Any]) -> dict[str, Any]:
    """A session of a JSON report (`document.session`) as `session` redacts a live one."""
    out = dict(entry)
    if isinstance(out.get("label"), str):
        out["label"] = text(out["label"])
    for key in ("client_info", "server_info"):
        value = out.get(key)
        out[key] = _info(value) if isinstance(value, Mapping) else value
    return out


def _info(info: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    if info is None:
        return None
    return {key: value if key in KEPT_INFO and isinstance(value, str) else scrub(value) for key, value in info.items()}


def session(s: Session) -> Session:
    return replace(
        s,
        label=text(s.label) if s.label else s.label,
        client_info=_info(s.client_info),
        server_info=_info(s.server_info),
    )


class Redacting:
    """A sink that passes an input's audit on redacted (findings are made of redacted anomalies)."""

    def __init__(self, into: Sink) -> None:
        self.into = into

    def finding(self, finding: Finding) -> None:
        self.into.finding(finding)

    def cancelled(self, call: CancelledCall) -> None:
        self.into.cancelled(cancelled(call))

    def session(self, s: Session) -> None:
        self.into.session(session(s))

    def row(self, row: Row) -> None:
        self.into.row(row)  # ids, names, kinds, codes, times and counts (tables.COLUMNS): nothing to redact

    def engine_done(self, skips: Mapping[tuple[str, str], Skip], unruled: Mapping[str, int]) -> None:
        self.into.engine_done(skips, unruled)

    def input(self, summary: InputSummary, error: InputError | None) -> None:
        self.into.input(summary, error)


def redacting(into: Sink) -> tuple[Sink, Callable[[Anomaly], Anomaly]]:
    """INTO behind a redacting sink, and what the engine gets for an anomaly."""
    return Redacting(into), anomaly
