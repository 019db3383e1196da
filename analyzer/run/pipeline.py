"""The pipeline: inputs → readers → reconstruction → engine + outcomes → `AuditResult`."""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

from ..errors import CancelwireError, InputError, UnknownFormatError
from ..judge import outcomes
from ..judge.catalog import load_catalog
from ..judge.engine import Engine
from ..judge.rule import Rule, RuleStatus
from ..merge.align import MergeSummary
from ..merge.recordings import MAX_EVENTS, Recording, merge_recordings
from ..merge.same_session import Requests, same_sessions
from ..model import Anomaly, CancelledCall, Event, RequestTimeline, Session
from ..readers import InputSource, ReadOptions, choose_reader, expand_inputs
from ..rebuild.ordering import DEFAULT_RACE_WINDOWS
from ..rebuild.reconstruct import ReconstructOptions, Reconstructor
from .partial import AuditSoFar, Partial, Row, Sink
from .redact import redacting
from .results import AuditResult, HowMade, InputSummary, Setting


@dataclass(frozen=True, slots=True)
class AuditOptions:
    input_format: str | None = None
    read: ReadOptions = field(default_factory=ReadOptions)
    reconstruct: ReconstructOptions = field(default_factory=ReconstructOptions)
    rule_dirs: tuple[Path, ...] = ()
    select: frozenset[str] = frozenset()
    """Rule ids or slugs to run (empty: all stable rules)."""
    ignore: dict[str, str] = field(default_factory=dict)
    """Rule id or slug → the reason it is disabled (reported)."""
    preview: bool = False
    settings_file: Path | None = None
    """The settings file the options came from in part (shown in the report)."""
    settings: tuple[Setting, ...] = ()
    """Every value the caller changed from the default, and where it came from (shown in the report)."""
    merge: bool = False
    """`--merge`: the two inputs are recordings of the same session(s), judged as one (merge/recordings.py)."""
    redact: bool = False
    """Payload values replaced by type and length before anything is kept (redact.py)."""
    compare_inputs: bool = True
    """Keep what the same-session hint compares between inputs (`merge.same_session.Requests`); `audit` turns
    it off when it is given one input (a file or a pipe), which nothing can be compared with."""


def how_made(options: AuditOptions) -> HowMade:
    rec = options.reconstruct
    return HowMade(
        generated=time.time(),
        settings_file=str(options.settings_file) if options.settings_file else None,
        settings=options.settings,
        race_windows={
            vantage.value: default if rec.race_window is None else rec.race_window
            for vantage, default in DEFAULT_RACE_WINDOWS.items()
        },
        hold_seconds=rec.hold_seconds,
        max_open=rec.max_open,
        protocol=rec.protocol,
        vantage=options.read.vantage.value if options.read.vantage else None,
        rule_dirs=tuple(str(d) for d in options.rule_dirs),
        preview=options.preview,
    )


def select_rules(catalog: tuple[Rule, ...], options: AuditOptions) -> tuple[list[Rule], dict[str, str]]:
    chosen: list[Rule] = []
    disabled: dict[str, str] = {}
    known = {r.id for r in catalog} | {r.slug for r in catalog}
    for name in (*options.select, *options.ignore):
        if name not in known:
            # a name from the settings file is reported with the file and key it came from
            where = next((f"{s.source}: {s.name}: " for s in options.settings if s.name == f"disabled.{name}"), "")
            raise CancelwireError(f"{where}unknown rule {name!r}", "see `cancelwire rules` for ids and slugs")
    for rule in catalog:
        names = {rule.id, rule.slug}
        if rule.status is RuleStatus.REMOVED:
            continue
        if options.select and not names & options.select:
            disabled[rule.slug] = "not selected"
        elif names & set(options.ignore):
            disabled[rule.slug] = next(options.ignore[n] for n in names if n in options.ignore)
        elif rule.status is RuleStatus.PREVIEW and not options.preview and not options.select:
            disabled[rule.slug] = "preview rule (run with --preview)"
        else:
            chosen.append(rule)
    return chosen, disabled


class Runner(Protocol):
    """Runs the per-input audits elsewhere and adds each input's part to INTO in input order."""

    def run(self, paths: list[str], rules: Sequence[Rule], options: AuditOptions, into: AuditSoFar) -> None: ...


def audit(
    paths: list[str],
    options: AuditOptions = AuditOptions(),
    *,
    on_exchange: Callable[[RequestTimeline, CancelledCall | None], None] | None = None,
    on_row: Callable[[Row], None] | None = None,
    on_input_error: Callable[[InputError], None] | None = None,
    runner: Runner | None = None,
) -> AuditResult:
    """Audit every input. An unreadable input is reported and the others still analysed.

    Each input is audited on its own and the parts merged in input order (partial.py), in this process
    or, with RUNNER, elsewhere (`fleet.pool.Fleet`: worker processes or a Dask cluster): the result is the same.
    ON_ROW gets each exchange as a `exchanges.row`; ON_EXCHANGE the timeline itself (in this process only).
    """
    catalog = load_catalog(options.rule_dirs)
    rules, disabled = select_rules(catalog, options)
    if len(paths) == 1 and (paths[0] == "-" or not Path(paths[0]).is_dir()):
        options = replace(options, compare_inputs=False)
    merged = AuditSoFar(on_row, on_input_error)
    summaries: list[MergeSummary] = []
    try:
        if options.merge:
            summaries = audit_merged(list(sources(paths)), rules, options, merged, on_exchange, rows=on_row is not None)
        elif runner is not None and on_exchange is None:
            runner.run(paths, rules, options, merged)
        else:
            for item in sources(paths):
                if isinstance(item, Partial):
                    merged.add(item)
                else:
                    audit_source(item, rules, options, merged, on_exchange=on_exchange, rows=on_row is not None)
        if not options.merge:
            _hint_same_sessions(rules, merged)
    except BaseException:
        merged.close()
        raise
    return AuditResult(
        inputs=tuple(merged.inputs),
        sessions=tuple(merged.sessions),
        findings=merged.findings,
        cancellations=merged.cancellations,
        outcomes=merged.outcomes,
        skips=tuple(merged.skips.values()),
        disabled=disabled,
        unruled_anomalies=merged.unruled,
        rules=tuple(rules),
        made=how_made(options),
        merges=tuple(summaries),
    )


def audit_source(
    source: InputSource,
    rules: Sequence[Rule],
    options: AuditOptions,
    into: Sink,
    *,
    on_exchange: Callable[[RequestTimeline, CancelledCall | None], None] | None = None,
    rows: bool = False,
) -> None:
    """Audit one input into INTO, with an engine of its own (so inputs can be audited anywhere)."""
    try:
        reader = choose_reader(source, options.input_format)
    except InputError as exc:
        if source.walked and isinstance(exc, UnknownFormatError):
            into.input(InputSummary(source.name, None, (), 0, skipped=exc.skip_note), None)
        else:
            into.input(InputSummary(source.name, None, (), 0, exc.message), exc)
        return
    counter = _Counter(reader.read(source, _read_options(source, options.read)))
    keys = judge(counter, source.name, reader.name, rules, options, into, on_exchange=on_exchange, rows=rows)
    error = counter.error
    into.input(
        InputSummary(source.name, reader.name, tuple(keys), counter.count, error.message if error else None), error
    )


def judge(
    events: Iterable[Event],
    source: str,
    reader: str,
    rules: Sequence[Rule],
    options: AuditOptions,
    into: Sink,
    *,
    on_exchange: Callable[[RequestTimeline, CancelledCall | None], None] | None = None,
    rows: bool = False,
) -> list[str]:
    """Reconstruct and judge one stream of events with an engine of its own; the session keys seen."""
    row = _row_maker() if rows else None
    engine = Engine(rules)
    # once, upstream of every output; the rules still judge the recording as it was
    into, shown = redacting(into) if options.redact else (into, _as_is)
    keys: list[str] = []
    seen = Requests(keep=options.compare_inputs)
    handlers: dict[tuple[str | None, object], Anomaly] = {}
    """What a server's trace says of a cancelled call's handler (--merge), until the call is classified."""
    for item in Reconstructor(source, reader, options.reconstruct).run(events):
        if isinstance(item, Anomaly):
            if item.name in outcomes.HANDLER_WORDS:
                handlers[(item.session_key, item.request_id)] = item
            for finding in engine.on_anomaly(shown(item)):
                into.finding(finding)
        elif isinstance(item, Session):
            engine.on_session(item)
            into.session(replace(item, requests_seen=seen.pop(item.key)))
            keys.append(item.key)
        else:
            seen.add(item)
            cancelled = outcomes.classify(item)
            if cancelled is not None and handlers:
                fact = handlers.pop((item.session_key, item.request_id), None)
                cancelled = outcomes.with_handler(cancelled, fact)
            judged = list(engine.judge(item, cancelled))
            if cancelled is not None:
                cancelled = outcomes.marked(cancelled, judged)
                into.cancelled(cancelled)
            for finding, _ in judged:
                into.finding(finding)
            if on_exchange:
                on_exchange(item, cancelled)
            if row is not None:
                into.row(row(item, cancelled))
    for finding in engine.finish():
        into.finding(finding)
    into.engine_done(engine.skips, engine.unruled_anomalies)
    return keys


def audit_merged(
    items: list[InputSource | Partial],
    rules: Sequence[Rule],
    options: AuditOptions,
    into: AuditSoFar,
    on_exchange: Callable[[RequestTimeline, CancelledCall | None], None] | None,
    *,
    rows: bool,
) -> list[MergeSummary]:
    """`--merge`: two recordings read whole, their common sessions merged (merge/recordings.py) and judged once."""
    if len(items) != 2:
        raise CancelwireError(f"--merge takes two recordings of one session; got {len(items)} inputs")
    _refuse_one_file_twice(items)
    recordings, summaries = [], []
    for item in items:
        if isinstance(item, Partial):
            into.add(item)
            continue
        recording, summary, error = _read_whole(item, options)
        into.input(summary, error)
        if recording is not None:
            recordings.append(recording)
    if len(recordings) == 2:
        result = merge_recordings(*recordings)
        groups, summaries = result.groups, result.summaries
    else:
        groups = [(r.name, r.reader, r.events) for r in recordings]
    for name, reader, events in groups:
        judge(events, name, reader, rules, options, into, on_exchange=on_exchange, rows=rows)
    return summaries


def _refuse_one_file_twice(items: list[InputSource | Partial]) -> None:
    """A recording merged with itself agrees with itself on everything and proves nothing."""
    first, second = items
    if not (isinstance(first, InputSource) and isinstance(second, InputSource)):
        return
    if first.path is not None and second.path is not None and _same_file(first.path, second.path):
        raise CancelwireError(
            f"--merge was given one recording twice ({first.name} and {second.name})",
            "give the two recordings of one session made at two points (a client's log and the server's)",
        )


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _hint_same_sessions(rules: Sequence[Rule], into: AuditSoFar) -> None:
    """Sessions of different inputs that look like one session recorded twice (a hint for --merge).

    Not passed through redaction, and it need not be: it reads the sessions the redacting sink passed on,
    and its text names only input paths, session keys and a count, which --redact keeps (redact.py)."""
    if len(into.inputs) < 2:
        return
    engine = Engine(rules)
    for anomaly in same_sessions(into.sessions):
        for finding in engine.on_anomaly(anomaly):
            into.finding(finding)
    for finding in engine.finish():
        into.finding(finding)
    into.engine_done(engine.skips, engine.unruled_anomalies)


def _read_whole(source: InputSource, options: AuditOptions) -> tuple[Recording | None, InputSummary, InputError | None]:
    """One recording's events, held whole (at most `MAX_EVENTS`), for the merge."""
    try:
        reader = choose_reader(source, options.input_format)
    except InputError as exc:
        return None, InputSummary(source.name, None, (), 0, exc.message), exc
    counter = _Counter(reader.read(source, _read_options(source, options.read)))
    events = list(itertools.islice(counter, MAX_EVENTS + 1))
    error = counter.error
    if len(events) > MAX_EVENTS:
        error = InputError(
            source.name, f"more than {MAX_EVENTS} events: too large to merge", "audit it without --merge"
        )
        events = []
    keys = tuple(dict.fromkeys(e.session_key for e in events if e.session_key is not None))
    summary = InputSummary(source.name, reader.name, keys, len(events), error.message if error else None)
    return Recording(source.name, reader.name, events), summary, error


def _as_is(anomaly: Anomaly) -> Anomaly:
    return anomaly


def _row_maker() -> Callable[[RequestTimeline, CancelledCall | None], Row]:
    from ..tables.exchanges import row  # pandas is loaded only when exchange rows are wanted

    return row


def sources(paths: list[str]) -> Iterator[InputSource | Partial]:
    """Every input in order; a path that does not exist comes as its (done) partial."""
    for path in paths:
        if path != "-" and not Path(path).exists():
            error = InputError(path, "no such file or directory")
            yield Partial(inputs=[InputSummary(path, None, (), 0, error.message)], errors=[error])
            continue
        yield from expand_inputs([path])


def _read_options(source: InputSource, read: ReadOptions) -> ReadOptions:
    """A capture's key log beside it (`X.pcapng` + `X.keys`) is used unless --keylog names one."""
    if read.keylog is None and source.path is not None:
        sibling = source.path.with_suffix(".keys")
        if sibling.is_file():
            return replace(read, keylog=sibling)
    return read


class _Counter:
    """Counts events as they stream past; a reader giving up part-way ends the stream, so what came
    before is still reconstructed and judged, and the error is reported with the input."""

    def __init__(self, events: Iterator[Event]) -> None:
        self.events = events
        self.count = 0
        self.error: InputError | None = None

    def __iter__(self) -> Iterator[Event]:
        try:
            for event in self.events:
                self.count += 1
                yield event
        except InputError as exc:
            self.error = exc
