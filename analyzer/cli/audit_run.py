"""What one `cancelwire audit` writes besides its reports, and the audit that feeds it.

Exchange rows go, as the audit produces them, to `--exchanges` (written as it runs: a failed write stops
the run with nothing half-written), to `--dataset`, and to a spool for the HTML report's charts; the
baseline is written from the triage. Every file goes through an `AtomicOutput`; nothing here prints
(cli/main.py does, and says what was written).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import ssl
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from ..ci import baseline
from ..ci.gates import Triage
from ..errors import CancelwireError, InputError, OutputError
from ..fleet.pool import Fleet
from ..reports import otlp_http
from ..reports.dataset import DatasetWriter
from ..reports.formats import Output
from ..run.pipeline import AuditOptions, audit
from ..run.results import AuditResult
from ..support.outputs import STEP_SUMMARY, AtomicOutput, appending
from ..support.spool import Spool

T = TypeVar("T")


class ExchangeRows:
    """Where each exchange row goes besides --exchanges: the dataset, and a spool for the HTML report's
    charts (drawn from the exchange table) and the OTLP report's spans when either is asked for."""

    def __init__(self, reports: list[Output], dataset: DatasetWriter | None, *, traces: bool = False) -> None:
        self.dataset = dataset
        # charts; one span per request (TRACES: --otlp-endpoint)
        wanted = traces or any(r.format in ("html", "otlp") for r in reports)
        self.spool: Spool[dict[str, Any]] | None = Spool() if wanted else None

    @property
    def wanted(self) -> bool:
        return self.dataset is not None or self.spool is not None

    def add(self, row: dict[str, Any]) -> None:
        if self.dataset is not None:
            self.dataset.add_exchange(row)
        if self.spool is not None:
            self.spool.append(row)

    def kept_in(self, result: AuditResult) -> AuditResult:
        return result if self.spool is None else replace(result, exchanges=self.spool)


def output_targets(
    args: argparse.Namespace, reports: list[Output], environ: Mapping[str, str]
) -> list[tuple[str, Path]]:
    """Every file the run will write, with the option that names it (checked against the inputs first):
    the job summary that `--format github` appends to is one of them."""
    targets = [(o.option, Path(o.path)) for o in reports if o.path != "-"]
    if args.exchanges:
        targets.append(("--exchanges", args.exchanges))
    if args.write_baseline:
        targets.append(("--write-baseline", args.write_baseline))
    summary = environ.get(STEP_SUMMARY)
    if summary and any(o.format == "github" for o in reports):
        targets.append((STEP_SUMMARY, Path(summary)))
    return targets


_OTLP_OPTIONS = ("header", "timeout", "protocol", "certificate", "client_certificate", "client_key")
_OTLP_TLS = ("certificate", "client_certificate", "client_key")


def otlp_options(args: argparse.Namespace) -> ssl.SSLContext | None:
    """The --otlp-* options, checked before the audit (a typo, a missing extra or a bad certificate does not
    cost a long run); the TLS settings of an https endpoint given any of the TLS options, else None."""
    given = [f"--otlp-{name.replace('_', '-')}" for name in _OTLP_OPTIONS if getattr(args, f"otlp_{name}")]
    if args.otlp_endpoint is None:
        if given:
            raise CancelwireError(f"{given[0]} needs --otlp-endpoint URL")
        return None
    otlp_http.check_protocol(args.otlp_protocol or "http/protobuf")
    tls = [f"--otlp-{name.replace('_', '-')}" for name in _OTLP_TLS if getattr(args, f"otlp_{name}")]
    if not tls:
        return None
    if not args.otlp_endpoint.https:
        raise CancelwireError(f"{tls[0]} needs an https:// --otlp-endpoint")
    if args.otlp_client_key and not args.otlp_client_certificate:
        raise CancelwireError("--otlp-client-key needs --otlp-client-certificate FILE")
    return otlp_http.tls_context(
        certificate=args.otlp_certificate,
        client_certificate=args.otlp_client_certificate,
        client_key=args.otlp_client_key,
    )


def send_traces(args: argparse.Namespace, document: dict[str, Any], tls: ssl.SSLContext | None) -> otlp_http.Sent:
    """The audit's traces (`otlp.traces`) sent to --otlp-endpoint; `otlp_http.OtlpSendError` when they are not."""
    return otlp_http.send(
        document,
        args.otlp_endpoint,
        protocol=args.otlp_protocol or "http/protobuf",
        headers=tuple(args.otlp_header),
        timeout=args.otlp_timeout or otlp_http.DEFAULT_TIMEOUT,
        tls=tls,
    )


def check_step_summary(targets: list[tuple[str, Path]]) -> None:
    """The job summary can be appended to (before the audit, so a bad one does not cost a long run)."""
    for option, path in targets:
        if option == STEP_SUMMARY:
            os.close(appending(path, STEP_SUMMARY))


def audit_with_table(
    paths: list[str],
    options: AuditOptions,
    table: AtomicOutput | None,
    fleet: Fleet,
    *,
    also: Callable[[dict[str, Any]], None] | None,
    on_input_error: Callable[[InputError], None],
) -> AuditResult:
    """The audit, with every exchange written to TABLE (and given to ALSO); a failed write stops it
    (exit 2, no half file). ON_INPUT_ERROR hears of each unreadable input as the audit goes on."""
    if table is None:
        return audit(paths, options, on_row=also, on_input_error=on_input_error, runner=fleet)
    from ..tables.exchanges import ExchangeWriter

    writer = writes(table, lambda: ExchangeWriter(table.writing))

    def add(row: dict[str, Any]) -> None:
        writes(table, lambda: writer.add(row))
        if also is not None:
            also(row)

    try:
        result = audit(paths, options, on_row=add, on_input_error=on_input_error, runner=fleet)
    except BaseException:
        with contextlib.suppress(Exception):
            writer.close()
        raise
    try:
        writes(table, writer.close)
    except OutputError:
        result.close()
        raise
    return result


def writes(out: AtomicOutput, action: Callable[[], T]) -> T:
    """ACTION, its OSError reported as OUT's (exit 2, naming the option and file)."""
    try:
        return action()
    except OSError as exc:
        raise out.error(exc) from None


def write_baseline(triage: Triage, out: AtomicOutput | None) -> int | None:
    """The unsuppressed issues into OUT (--write-baseline), if asked for; how many."""
    if out is None:
        return None
    try:
        return baseline.write(out.writing, triage)
    except OSError as exc:
        raise out.error(exc) from None
