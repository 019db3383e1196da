"""The `cancelwire` command: the only module that prints or sets the exit status.

Exit status (results.ExitStatus): 0 nothing at or above --fail-on; 1 something is; 2 usage error, bad
rule or settings file, an output that cannot be written, or nothing readable; 3 an internal error (a
bug in cancelwire: one line saying what to report, the traceback only with --debug); 130 Ctrl-C; 143
SIGTERM, after the same cleanup as any other exit (temp files and half-written outputs removed).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import shlex
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

from .._version import __version__
from ..ci import baseline
from ..ci.gates import Triage
from ..ci.policy import gate_option, parse_gates
from ..errors import CancelwireError, OutputError
from ..fleet.pool import Fleet
from ..judge import catalog, catalog_text
from ..model import Severity
from ..reports import otlp
from ..reports.dataset import DatasetWriter
from ..reports.formats import Output, OutputSpecError, plan, write
from ..run.results import AuditResult, ExitStatus
from ..support import inert
from ..support.outputs import STEP_SUMMARY, AtomicOutput, refuse_folder_in_inputs, refuse_inputs
from . import audit_run
from .arguments import audit_options, build_parser, settings_of
from .progress_bar import progress_bar

#: Stale baseline entries listed on stderr (the SARIF report lists every one).
STALE_SHOWN = 20


class _Terminated(BaseException):
    """SIGTERM, raised where the program is, so `finally` blocks and context managers clean up."""


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        with _sigterm_unwinds(args.command != "record"):  # record forwards signals to its server
            return _run(args)
    except CancelwireError as exc:
        _error(exc)
        return ExitStatus.USAGE
    except KeyboardInterrupt:
        _say("cancelwire: interrupted")
        return ExitStatus.INTERRUPTED
    except _Terminated:
        _say("cancelwire: terminated (SIGTERM); nothing was left half-written")
        return ExitStatus.TERMINATED
    except Exception as exc:  # a bug: say so in one line, and never exit as if it were findings
        if args.debug:
            traceback.print_exc()
        command = shlex.join(["cancelwire", *(sys.argv[1:] if argv is None else argv)])
        _say(
            f"cancelwire: internal error (a bug in cancelwire {__version__}): {_described(exc)}; "
            f"please report it with this line and the command: {inert.terminal(command)}"
            + ("" if args.debug else " (--debug shows the traceback)")
        )
        return ExitStatus.INTERNAL


def _described(exc: Exception, limit: int = 500) -> str:
    """The exception's type and message, inert and bounded (its text may hold recorded data)."""
    try:
        text = str(exc)
    except Exception:  # a broken __str__ must not hide the report of the bug
        text = "(message not printable)"
    text = text if len(text) <= limit else text[:limit] + "…"
    return f"{type(exc).__name__}: {inert.terminal(text)}"


def _run(args: argparse.Namespace) -> int:
    if args.command == "audit":
        with _batch_collector():
            return _audit(args)
    if args.command == "rules":
        return _rules(args)
    if args.command == "explain":
        return _explain(args)
    if args.command == "diff":
        return _diff(args)
    if args.command == "frame":
        from ..readers.capture.frame import frame_details

        text = _inert_lines(f"{frame_details(args.capture, args.number)}")
        _to_stdout(lambda: sys.stdout.write(text))
        return ExitStatus.PASSED
    if args.command == "diagram":
        return _diagram(args)
    return _record(args)


@contextlib.contextmanager
def _sigterm_unwinds(enabled: bool) -> Iterator[None]:
    if not enabled or threading.current_thread() is not threading.main_thread():
        yield
        return

    def unwind(signum: int, frame: FrameType | None) -> None:
        raise _Terminated

    previous = signal.signal(signal.SIGTERM, unwind)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _diagram(args: argparse.Namespace) -> int:
    from . import drawing

    wanted = drawing.Wanted(args.request, args.session, args.id_type)
    found = drawing.find(args.paths, wanted, redacted=args.redact, merge=args.merge)
    page = args.output is not None and args.output.suffix in (".html", ".htm")
    text = drawing.html_page(found) if page else drawing.svg_document(found)
    if args.output is None:
        _to_stdout(lambda: sys.stdout.write(text))
        return ExitStatus.PASSED
    refuse_inputs([("--output", args.output)], args.paths)
    out = AtomicOutput(args.output, "--output")
    audit_run.writes(out, lambda: out.writing.write_text(text, encoding="utf-8"))
    out.commit()
    return ExitStatus.PASSED


def _say(line: str) -> None:
    with contextlib.suppress(OSError):
        print(line, file=sys.stderr, flush=True)


def _error(exc: CancelwireError | str) -> None:
    """One error on stderr; its text names files and recorded values, so it is made inert."""
    if isinstance(exc, CancelwireError):
        hint = f"\n  hint: {inert.terminal(exc.hint)}" if exc.hint else ""
        _say(f"cancelwire: error: {inert.terminal(exc.message)}{hint}")
    else:
        _say(f"cancelwire: error: {inert.terminal(exc)}")


def _inert_lines(text: str) -> str:
    """Text of several lines (a packet, a rule's docs) with each line inert, tabs as spaces."""
    return "".join(inert.terminal(line.expandtabs(4)) + "\n" for line in text.split("\n"))


def _audit(args: argparse.Namespace) -> int:
    settings = settings_of(args)
    options = audit_options(args, settings)
    try:
        reports = plan(args.format, args.output, args.report)
    except OutputSpecError as exc:
        raise CancelwireError(str(exc)) from None
    targets = audit_run.output_targets(args, reports, os.environ)
    refuse_inputs(targets, [*args.paths, *([args.keylog] if args.keylog else [])])
    if args.dataset:
        refuse_folder_in_inputs("--dataset", args.dataset, args.paths)
    audit_run.check_step_summary(targets)
    tls = audit_run.otlp_options(args)
    # checked before the audit, so a typo does not cost a long run
    gates = parse_gates({**settings.gates, **dict(map(gate_option, args.gate))}, "--gate")
    known = baseline.read(args.baseline) if args.baseline else None
    files: dict[str, AtomicOutput] = {}
    table = dataset = None
    try:
        for option, path in targets:
            if option not in ("--exchanges", STEP_SUMMARY):  # the table streams; the job summary is appended to
                files[option] = AtomicOutput(path, option)
        table = AtomicOutput(args.exchanges, "--exchanges") if args.exchanges else None
        dataset = DatasetWriter(args.dataset) if args.dataset else None
        rows = audit_run.ExchangeRows(reports, dataset, traces=args.otlp_endpoint is not None)
        with _progress(args) as progress:
            wanted = rows.add if rows.wanted else None  # rows cost a pass per exchange (and pandas)
            fleet = Fleet(args.jobs, args.dask, progress)
            result = audit_run.audit_with_table(args.paths, options, table, fleet, also=wanted, on_input_error=_error)
        result = rows.kept_in(result)
        try:
            triage = Triage(
                result,
                fail_on=None if args.fail_on == "never" else Severity(args.fail_on),
                gates=gates,
                suppressions=settings.suppress,
                baseline=known,
            )
            written = _write_outputs(triage, reports, files, dataset, args)
            status = triage.exit_status()
            document = otlp.traces(triage) if args.otlp_endpoint else None
        finally:
            result.close()
        if _drop_baseline_of_nothing(result, files):
            written = None
        for out in (table, *files.values(), dataset):
            if out is not None:
                out.commit()
    finally:
        for out in (*files.values(), table, dataset):
            if out is not None:
                out.discard()
    _said_after(args, result, written, triage)
    if document is not None:  # after every file is in place: a collector that fails keeps none of them from it
        sent = audit_run.send_traces(args, document, tls)
        rejected = f"; it rejected {sent.rejected}: {sent.said}" if sent.rejected else ""
        where = inert.terminal(args.otlp_endpoint.traces_url)
        _say(f"cancelwire: {where}: sent {sent.spans} span(s) in {sent.requests} request(s){rejected}")
    return status


def _said_after(args: argparse.Namespace, result: AuditResult, written: int | None, triage: Triage) -> None:
    """What the run says on stderr once its outputs are in place: nothing read, the baseline, stale entries."""
    where = inert.terminal(str(args.write_baseline))
    if not result.readable:
        _error(_nothing_read(result, args.paths))
        if args.write_baseline:
            _say(f"cancelwire: {where}: not written, since nothing could be read")
    if written is not None:
        _say(f"cancelwire: {where}: wrote {written} issue(s) to the baseline")
    if args.baseline:
        _stale(args.baseline, triage.tally().stale)


def _drop_baseline_of_nothing(result: AuditResult, files: dict[str, AtomicOutput]) -> bool:
    """A run that read nothing found nothing: it must not replace the accepted issues with none."""
    if result.readable or "--write-baseline" not in files:
        return False
    files.pop("--write-baseline").discard()
    return True


def _write_outputs(
    triage: Triage,
    reports: list[Output],
    files: dict[str, AtomicOutput],
    dataset: DatasetWriter | None,
    args: argparse.Namespace,
) -> int | None:
    """Every report, the baseline and the dataset's findings; the number of issues the baseline got."""
    for report in reports:
        _write_report(triage, report.format, files.get(report.option), args)
    written = audit_run.write_baseline(triage, files.get("--write-baseline"))
    if dataset is not None:
        dataset.finish(triage.result)
    return written


@contextlib.contextmanager
def _progress(args: argparse.Namespace) -> Iterator[Callable[[int, int, int], None] | None]:
    """A progress bar on stderr for a terminal (never with --quiet, never into a pipe or a file)."""
    if args.quiet or not _isatty(sys.stderr):
        yield None
        return
    with progress_bar(sys.stderr) as bar:
        yield bar


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _stale(path: Path, stale: list[dict[str, Any]]) -> None:
    """Baseline entries that no longer occur, so the file can be shrunk (on stderr, whatever the format)."""
    if not stale:
        return
    _say(f"cancelwire: {inert.terminal(str(path))}: {len(stale)} baseline entr(ies) no longer occur:")
    for entry in stale[:STALE_SHOWN]:
        where = inert.terminal(str(entry.get("where") or "-"))
        _say(f"  {inert.terminal(str(entry['fingerprint']))}  {inert.terminal(str(entry['rule']))}  {where}")
    if len(stale) > STALE_SHOWN:
        _say(f"  ... and {len(stale) - STALE_SHOWN} more (the SARIF report lists every one)")


def colored(mode: str, stream: Any) -> bool:
    """`--color`: always, never, or (auto) on a terminal unless NO_COLOR is set (no-color.org) or TERM is dumb."""
    if mode != "auto":
        return mode == "always"
    return _isatty(stream) and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def _write_report(triage: Triage, fmt: str, out: AtomicOutput | None, args: argparse.Namespace) -> None:
    if out is not None:
        try:
            with open(out.writing, "w", encoding="utf-8") as handle:
                write(fmt, triage, handle, os.environ, color=args.color == "always", verbose=args.verbose)
        except OSError as exc:  # also from the close: a full disk shows on the last flush
            raise out.error(exc) from None
        return
    _to_stdout(
        lambda: write(fmt, triage, sys.stdout, os.environ, color=colored(args.color, sys.stdout), verbose=args.verbose)
    )


def _to_stdout(action: Callable[[], object]) -> None:
    if sys.stdout is None:  # started with standard output closed (`>&-`)
        raise OutputError("standard output is closed: cannot write the report", "write it to a file with -o FILE")
    try:
        action()
        sys.stdout.flush()
    except BrokenPipeError:
        # the reader went away (`| head`): not an error; keep Python from complaining at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except OSError as exc:
        raise OutputError(f"standard output: cannot write the report: {exc.strerror or exc}") from None


def _diff(args: argparse.Namespace) -> int:
    """`cancelwire diff OLD NEW`: exit 1 when something new appeared (diff.py says what that is)."""
    from ..reports import diff

    changes = diff.compare(args.old, args.new)
    if args.output is None or args.output == "-":
        _to_stdout(lambda: diff.write(changes, args.format, sys.stdout, color=colored(args.color, sys.stdout)))
    else:
        refuse_inputs([("-o", Path(args.output))], [args.old, args.new])
        out = AtomicOutput(Path(args.output), "-o")
        try:
            with open(out.writing, "w", encoding="utf-8") as handle:
                diff.write(changes, args.format, handle, color=args.color == "always")
            out.commit()
        except OSError as exc:
            raise out.error(exc) from None
        finally:
            out.discard()
    return ExitStatus.FINDINGS if changes["new_problems"] else ExitStatus.PASSED


def _nothing_read(result: AuditResult, paths: list[str]) -> CancelwireError:
    """Why the audit read nothing at all, for stderr (the report may go to a file nobody opens)."""
    if not result.inputs:
        return CancelwireError(f"nothing to read: no files in {', '.join(paths)}")
    skipped = sum(1 for i in result.inputs if i.skipped)
    if skipped == len(result.inputs):
        return CancelwireError(
            f"nothing could be read: the {skipped} file(s) found in {', '.join(paths)} are not in a format "
            "cancelwire reads",
            "--input-format NAME reads them as one",
        )
    return CancelwireError(f"nothing could be read: none of the {len(result.inputs)} input(s) was readable")


@contextlib.contextmanager
def _batch_collector() -> Iterator[None]:
    """Fewer cyclic-garbage collections while auditing, as batch jobs do.

    An audit allocates millions of short-lived containers (parsed JSON) beside long-lived state (open
    requests, finished-request tombstones) that the default thresholds rescan hundreds of times; it
    makes no reference cycles of its own. Measured on the 0.25 GB benchmark transcript: time in the
    collector 0.69 s -> 0.14 s. What existed before (imports, the catalogue) is frozen out of it.
    """
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(50_000, 20, 20)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


def _rules(args: argparse.Namespace) -> int:
    lines = catalog_text.rules_table(catalog.load_catalog(args.rules))  # checked ids and slugs: plain ASCII
    _to_stdout(lambda: sys.stdout.write("".join(f"{line}\n" for line in lines)))
    return ExitStatus.PASSED


def _explain(args: argparse.Namespace) -> int:
    found = next((r for r in catalog.load_catalog(args.rules) if args.rule in (r.id, r.slug)), None)
    if found is None:
        raise CancelwireError(f"no rule {args.rule!r}", "see `cancelwire rules`")
    text = _inert_lines(catalog_text.explain_text(found).rstrip("\n"))
    _to_stdout(lambda: sys.stdout.write(text))
    return ExitStatus.PASSED


def _record(args: argparse.Namespace) -> int:
    command = list(args.server)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise CancelwireError("record needs the server command after --, e.g. cancelwire record -- python server.py")
    from ..recorder import record

    return record(command, args.output)
