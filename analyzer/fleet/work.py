"""The task types shared by `--jobs` (`pool`) and `--dask` (`cluster`): one input's work, a task of
consecutive inputs, what a task gives back, and what every task needs besides its input."""

from __future__ import annotations

from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass

from ..errors import CancelwireError
from ..judge.rule import Rule
from ..run.cancellations import Packed
from ..run.partial import Partial
from ..run.pipeline import AuditOptions

Progress = Callable[[int, int, int], None]
"""Called with (inputs done, inputs in all, events read so far) as inputs finish."""


@dataclass(frozen=True, slots=True)
class Work:
    """One input to audit: a path on this machine, or (for Dask) its bytes."""

    name: str
    walked: bool
    path: str | None = None
    data: bytes | None = None
    keylog: bytes | None = None
    """A TLS key log sent along with `data` (the capture's `X.keys`, or --keylog)."""
    size: int = 0
    """The input's size in bytes when listed (how tasks are cut)."""


Task = tuple[Work, ...]
"""Consecutive inputs audited one after another by one worker."""


@dataclass(frozen=True, slots=True)
class Done:
    """A task's partials in input order; from a Dask worker, with their cancelled calls taken out and
    packed together (`partial.pack_calls`: one pickle of calls and one of their JSON texts per task);
    from a worker process, in a file (`spill`: its path), read a batch at a time when merged."""

    parts: list[Partial]
    calls: Packed | None = None
    spill: str | None = None


@dataclass(frozen=True, slots=True)
class Context:
    """What every task needs besides its input: the rules (by value) and the options."""

    rules: tuple[Rule, ...]
    options: AuditOptions
    rows: bool


Submit = Callable[[Task], "futures.Future[Done]"]


def worker_died(who: str, hint: str) -> CancelwireError:
    """What a run says when a worker died under it (killed by hand or by the OOM killer): what happened and
    what to try, exit 2; no traceback, as it is no bug of cancelwire's (`--jobs` and `--dask` alike)."""
    return CancelwireError(f"{who} died while auditing (killed, or out of memory?)", hint)
