"""The library entry point: `cancelwire.audit(paths, **options)`.

The options are the command line's, as keyword arguments, checked the same way (a non-finite window or
a negative hold is a `ConfigError`, not a silent "never"):

    import cancelwire
    result = cancelwire.audit(["session.jsonl"], protocol="2025-11-25", hold=60)
    frame = result.to_dataframe("cancellations")
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from .errors import ConfigError
from .fleet.pool import Fleet
from .model import REVISIONS, Vantage
from .readers.base import CaptureReaderChoice, ReadOptions
from .rebuild.reconstruct import ReconstructOptions
from .run.pipeline import AuditOptions
from .run.pipeline import audit as run_audit
from .run.results import AuditResult, Setting
from .support.spool import Spool
from .support.values import count_of, seconds_of

PathLike = str | os.PathLike[str]
T = TypeVar("T", int, float)


def audit(
    paths: PathLike | Iterable[PathLike],
    *,
    input_format: str | None = None,
    vantage: str | None = None,
    protocol: str | None = None,
    race_window: float | None = None,
    hold: float | None = None,
    max_open: int | None = None,
    select: Iterable[str] = (),
    ignore: Mapping[str, str] | Iterable[str] = (),
    preview: bool = False,
    rules: Iterable[PathLike] = (),
    keylog: PathLike | None = None,
    http_ports: Iterable[int] = (),
    capture_reader: str = "auto",
    verifying_reads: Mapping[str, Iterable[str]] | None = None,
    exchanges: bool = True,
    jobs: int | None = 1,
    dask: str | None = None,
    redact: bool = False,
) -> AuditResult:
    """Audit recordings (files, folders, `.gz`) and return the result.

    Options mean what the `cancelwire audit` flags of the same name mean. `ignore` maps rule ids or
    slugs to the reason they are off (a plain list gets "ignored by the caller"). `exchanges=False`
    skips keeping the exchange table (`result.to_dataframe("exchanges")` then raises). `jobs`
    audits inputs in that many worker processes (None: one per core when there are many inputs), and `dask`
    on the Dask scheduler at that address (`cancelwire[dask]`); the result is the same. `redact` replaces
    payload values by type and length (the `--redact` of the command line). An unreadable
    input is reported in `result.inputs` and the others are still audited. Call `result.close()` (or
    use the result as a context manager) to remove its spooled parts from disk.
    """
    defaults = ReconstructOptions()
    options = AuditOptions(
        input_format=input_format,
        read=ReadOptions(
            vantage=_vantage(vantage),
            http_ports=tuple(http_ports),
            keylog=Path(keylog) if keylog is not None else None,
            capture_reader=CaptureReaderChoice(capture_reader),
        ),
        reconstruct=ReconstructOptions(
            protocol=_protocol(protocol),
            race_window=None if race_window is None else _checked("race_window", race_window, seconds_of),
            max_open=defaults.max_open if max_open is None else _checked("max_open", max_open, count_of),
            hold_seconds=defaults.hold_seconds if hold is None else _checked("hold", hold, seconds_of),
            verifying_reads={tool: tuple(reads) for tool, reads in (verifying_reads or {}).items()},
        ),
        rule_dirs=tuple(Path(r) for r in rules),
        select=frozenset(select),
        ignore=dict(ignore) if isinstance(ignore, Mapping) else dict.fromkeys(ignore, "ignored by the caller"),
        preview=preview,
        settings=(Setting("redact", "on", "caller"),) if redact else (),
        redact=redact,
    )
    rows: Spool[dict[str, Any]] | None = Spool() if exchanges else None
    names = [os.fspath(paths)] if isinstance(paths, str | os.PathLike) else [os.fspath(p) for p in paths]
    result = run_audit(
        names,
        options,
        on_row=rows.append if rows is not None else None,
        runner=Fleet(None if jobs is None else _checked("jobs", jobs, count_of), dask),
    )
    return replace(result, exchanges=rows)


def _checked(name: str, value: T, check: Callable[[object], T]) -> T:
    """The settings file's check of a number, raised as a `ConfigError` naming the keyword."""
    try:
        return check(value)
    except ValueError as exc:
        raise ConfigError(f"{name}: {exc}") from None


def _vantage(value: str | None) -> Vantage | None:
    if value is None:
        return None
    try:
        return Vantage(value)
    except ValueError:
        raise ConfigError(f"vantage: unknown {value!r}; one of {', '.join(v.value for v in Vantage)}") from None


def _protocol(value: str | None) -> str | None:
    if value is not None and value not in REVISIONS:
        raise ConfigError(f"protocol: unknown revision {value!r}; one of {', '.join(REVISIONS)}")
    return value
