"""Audit many inputs at once: in worker processes (`--jobs N`) or as tasks on a Dask cluster (`--dask`).

Each input is audited by `pipeline.audit_source` and merged in input order, so the report is the one a
single process makes (partial.py says why). A worker process writes its task's results to a file a batch
at a time (`spill.py`), which the merge reads back a batch at a time: neither process holds a large
input's findings and calls in memory. With one worker the inputs are audited here, straight into the
whole (`_here`). A Dask task's inputs come back by value, as `Partial`s (a Dask worker may be on
another machine, with no file this one can read). A task is a run of
consecutive inputs, large first and smaller towards the end (`_tasks`; a large input is a task alone):
1,000 small recordings are 30 round trips to the workers, not 1,000. At most WINDOW_PER_WORKER tasks
per worker are in flight ahead of the merge, so a slow first input bounds the partials held, not the
number of inputs.

Standard input is read and audited in this process (a worker cannot read it). With Dask the client
sends each input's bytes (and its TLS key log) with its task: workers need no access to the files.
"""

from __future__ import annotations

import contextlib
import functools
import multiprocessing
import os
import signal
import stat
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from concurrent import futures
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace
from pathlib import Path

from ..errors import CancelwireError
from ..judge.rule import Rule
from ..readers import InputSource
from ..run.partial import AuditSoFar, Partial, Sink, pack_calls
from ..run.pipeline import AuditOptions, audit_source, sources
from . import spill
from .work import Context, Done, Progress, Submit, Task, Work, worker_died

#: Inputs from which `--jobs` defaults to one worker per core (fewer are audited in this process).
PARALLEL_FROM = 8
WINDOW_PER_WORKER = 4
#: Guided self-scheduling: a task's inputs add up to the bytes not yet in a task / (workers * GUIDED),
#: within TASK_BYTES (smallest, largest), and are at most TASK_INPUTS. The first tasks are large, as a
#: round trip to a worker costs more than it seems (the pool's threads in this process, the worker's
#: loop: 1,000 small recordings in 200 tasks took 0.45 s more CPU than in 32); the last are small, so
#: the last task keeps the other workers waiting a few tens of milliseconds (auditing: about 10 MB/s).
#: A worker holds a task's partials until it ends, hence the largest size.
GUIDED = 4
TASK_BYTES = (256 * 1024, 4 * 1024 * 1024)
TASK_INPUTS = 64


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def default_jobs(inputs: int) -> int:
    """One worker per core when there are many inputs, else one (this process)."""
    return min(cores(), inputs) if inputs >= PARALLEL_FROM else 1


#: Workers per core at most, whatever --jobs asks: more never speeds an audit up, and `--jobs 20000` over
#: 20,000 recordings started 20,000 processes (each holding its own interpreter and catalogue).
MAX_JOBS_PER_CORE = 4


def workers(requested: int | None, inputs: int) -> int:
    """The worker processes for INPUTS inputs when --jobs asked for REQUESTED (None: the default)."""
    if requested is None:
        return default_jobs(inputs)
    return min(requested, inputs, MAX_JOBS_PER_CORE * cores())


@dataclass(slots=True)
class Fleet:
    """How to run the per-input audits: `jobs` local workers (None: `default_jobs`), or on Dask."""

    jobs: int | None = None
    dask: str | None = None
    """A Dask scheduler address (`tcp://host:8786`): the inputs are audited there (jobs is then unused)."""
    progress: Progress | None = None

    def run(self, paths: list[str], rules: Sequence[Rule], options: AuditOptions, into: AuditSoFar) -> None:
        context = Context(tuple(rules), options, into.on_row is not None)
        if self.dask is None and _one_pipe(paths):  # one input: read here as it comes, never held whole
            _here(sources(paths), 1, context, into, self.progress)
            return
        items = list(_items(sources(paths), context))
        if self.dask is not None:
            from .cluster import dask_submitter

            prepare = functools.partial(with_bytes, options=options)
            with dask_submitter(self.dask, context, run_task, prepare) as (submit, width):
                _merge(submit, _tasks(items, width), context, into, self.progress, width=width)
            return
        jobs = workers(self.jobs, len(items))
        if jobs <= 1:
            _here(items, len(items), context, into, self.progress)
            return
        pool = futures.ProcessPoolExecutor(
            jobs, mp_context=_start_method(), initializer=_worker_init, initargs=(context,)
        )
        folder = tempfile.TemporaryDirectory(prefix="cancelwire-jobs-")  # the workers' spill files

        def to_pool(task: Task) -> futures.Future[Done]:
            with _signals_held():  # the first submit forks the workers
                return pool.submit(run_spilled, task, folder.name)

        try:
            _merge(to_pool, _tasks(items, jobs), context, into, self.progress, width=jobs)
        finally:
            _stop(pool)
            folder.cleanup()


def _items(found: Iterator[InputSource | Partial], context: Context) -> Iterator[Work | Partial]:
    """Inputs as work; standard input and FIFOs are audited here and now (their copy lives only while
    they are current)."""
    for item in found:
        if isinstance(item, Partial):
            yield item
        elif item.path is None or item.pipe is not None or item.problem is not None:
            # a pipe is read once, here; a known problem needs no worker to be reported
            yield run_work(Work(item.name, item.walked), context, source=item)
        else:
            yield Work(item.name, item.walked, path=str(item.path), size=_size(item.path))


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:  # gone since it was listed: the audit reports it
        return 0


def _tasks(items: list[Work | Partial], width: int) -> list[Task | Partial]:
    """ITEMS with runs of consecutive inputs joined into tasks for WIDTH workers, each of a share of the
    bytes left (`GUIDED`), at least WINDOW_PER_WORKER tasks each when there are inputs enough."""
    inputs = sum(isinstance(item, Work) for item in items)
    most = max(1, min(TASK_INPUTS, inputs // (width * WINDOW_PER_WORKER)))
    left = sum(item.size for item in items if isinstance(item, Work))
    budget = _share(left, width)
    out: list[Task | Partial] = []
    task: list[Work] = []
    size = 0
    for item in items:
        if task and (isinstance(item, Partial) or len(task) >= most or size + item.size > budget):
            out.append(tuple(task))
            task, size = [], 0
            budget = _share(left, width)
        if isinstance(item, Partial):
            out.append(item)
        else:
            task.append(item)
            size += item.size
            left -= item.size
    if task:
        out.append(tuple(task))
    return out


def _share(left: int, width: int) -> int:
    """The bytes of the next task when LEFT bytes of inputs are not yet in one."""
    smallest, largest = TASK_BYTES
    return min(largest, max(smallest, left // (width * GUIDED)))


def run_task(task: Task, context: Context) -> Done:
    """One task on a Dask worker: its inputs audited one after another, and their cancelled calls
    packed here, for the merge to spool as they are."""
    parts = [run_work(work, context) for work in task]
    return Done(parts, pack_calls(parts))


def run_spilled(task: Task, folder: str) -> Done:
    """One task in a worker process: its inputs audited one after another into a file in FOLDER,
    whose path goes back (`spill.py`)."""
    into = spill.Spill(folder)
    try:
        for work in task:
            _audit_work(work, _CONTEXT, into)
    finally:
        path = into.close()
    return Done([], spill=path)


def run_work(work: Work, context: Context, source: InputSource | None = None) -> Partial:
    """Audit one input into a partial (on a Dask worker, or here)."""
    part = Partial(rows=[] if context.rows else None)
    _audit_work(work, context, part, source)
    return part


def _audit_work(work: Work, context: Context, into: Sink, source: InputSource | None = None) -> None:
    if source is None and work.data is not None:
        with _local_copy(work, context.options) as (local, options):
            audit_source(local, context.rules, options, into, rows=context.rows)
        return
    if source is None:
        assert work.path is not None  # work is a path here unless it carries its bytes
        source = InputSource(work.name, Path(work.path), walked=work.walked)
    audit_source(source, context.rules, context.options, into, rows=context.rows)


class _local_copy:
    """The bytes a Dask task brought, as files on the worker (the input keeps its name in evidence)."""

    def __init__(self, work: Work, options: AuditOptions) -> None:
        self.work = work
        self.options = options
        self.folder = tempfile.TemporaryDirectory(prefix="cancelwire-task-")

    def __enter__(self) -> tuple[InputSource, AuditOptions]:
        folder = Path(self.folder.name)
        data = folder / "input"
        data.write_bytes(self.work.data or b"")
        options = self.options
        if self.work.keylog is not None:
            keys = folder / "keylog"
            keys.write_bytes(self.work.keylog)
            options = replace(options, read=replace(options.read, keylog=keys))
        return InputSource(self.work.name, data, walked=self.work.walked), options

    def __exit__(self, *exc: object) -> None:
        self.folder.cleanup()


def with_bytes(work: Work, options: AuditOptions) -> Work:
    """WORK with its input's bytes and key log, for a worker that cannot see this machine's files."""
    if work.path is None or work.data is not None:
        return work
    path = Path(work.path)
    keylog = options.read.keylog or path.with_suffix(".keys")
    try:
        data = path.read_bytes()
        keys = keylog.read_bytes() if keylog.is_file() else None
    except OSError as exc:
        raise CancelwireError(f"{work.name}: cannot read the input to send it: {exc.strerror}") from None
    return replace(work, data=data, keylog=keys)


_CONTEXT: Context
"""A worker process's context, set once by `_worker_init` (fork: inherited, never pickled)."""


def _worker_init(context: Context) -> None:
    global _CONTEXT
    _CONTEXT = context
    # Ctrl-C goes to the whole process group: the parent stops the workers, they must not print a
    # traceback each; and the parent's SIGTERM handler (unwind and clean up) is not theirs
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if _HOLDS_SIGNALS:  # forked while the parent held them (`_signals_held`)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPPING)


_STOPPING = {signal.SIGINT, signal.SIGTERM}
_HOLDS_SIGNALS = hasattr(signal, "pthread_sigmask")


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Ctrl-C and SIGTERM wait until the workers are forked. Their handlers raise in the main thread,
    and an exception raised in a fork hook (logging's lock release, say) is printed by Python and
    dropped: the audit went on and exited 0 with a traceback on stderr. Held, they arrive just after."""
    if not _HOLDS_SIGNALS:
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPPING)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def _start_method() -> multiprocessing.context.BaseContext:
    # fork shares the loaded catalogue and modules (a spawned worker pays ~0.5 s importing them)
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    return multiprocessing.get_context(method)


def _one_pipe(paths: list[str]) -> bool:
    """Standard input or one FIFO alone: the only input there is, so no worker would audit it."""
    if len(paths) != 1:
        return False
    try:
        return paths[0] == "-" or stat.S_ISFIFO(os.stat(paths[0]).st_mode)
    except OSError:  # the audit says what is wrong with it
        return False


def _here(
    items: Iterable[InputSource | Work | Partial],
    total: int,
    context: Context,
    into: AuditSoFar,
    progress: Progress | None,
) -> None:
    """Every input audited in this process, one after another, straight into INTO: nothing is held by
    value (a `Partial` would keep a large input's findings and cancelled calls in memory), so memory
    follows the open requests, not the input's size. A pipe (an `InputSource`) is read as it is listed."""
    events = 0
    for done, item in enumerate(items, 1):
        before = len(into.inputs)
        if isinstance(item, Partial):
            into.add(item)
        else:
            if isinstance(item, Work):
                assert item.path is not None  # only Dask's work carries its bytes
                item = InputSource(item.name, Path(item.path), walked=item.walked)
            audit_source(item, context.rules, context.options, into, rows=context.rows)
        events += sum(summary.events for summary in into.inputs[before:])
        if progress is not None:
            progress(done, total, events)


def _merge(
    submit: Submit,
    tasks: list[Task | Partial],
    context: Context,
    into: AuditSoFar,
    progress: Progress | None,
    *,
    width: int,
) -> None:
    """Run TASKS through SUBMIT, WIDTH * WINDOW_PER_WORKER ahead, merging in input order."""
    running: dict[int, futures.Future[Done]] = {}
    ready: dict[int, Done] = {}
    inputs = sum(len(t) if isinstance(t, tuple) else 1 for t in tasks)
    submitted = merged = done = events = 0
    while merged < len(tasks):
        while submitted < len(tasks) and len(running) + len(ready) < width * WINDOW_PER_WORKER:
            task = tasks[submitted]
            if isinstance(task, Partial):
                ready[submitted] = Done([task])
            else:
                running[submitted] = submit(task)
            submitted += 1
        if merged not in ready:
            finished, _ = futures.wait(running.values(), return_when=futures.FIRST_COMPLETED)
            for index in [i for i, f in running.items() if f in finished]:
                ready[index] = _result(running.pop(index))
        while merged in ready:
            completed = ready.pop(merged)
            parts = completed.parts if completed.spill is None else spill.merge(completed.spill, into)
            for part in parts:
                into.add(part)
                done += 1
                events += part.events
                if progress is not None:
                    progress(done, inputs, events)
            if completed.calls is not None:
                into.add_packed(completed.calls)
            merged += 1


def _result(future: futures.Future[Done]) -> Done:
    try:
        return future.result()
    except BrokenProcessPool:
        raise worker_died("a worker process", "run again with fewer --jobs, or --jobs 1") from None


def _stop(pool: futures.ProcessPoolExecutor) -> None:
    """Stop the workers now, busy or not (an interrupted run must not wait for a long input)."""
    pool.shutdown(wait=False, cancel_futures=True)
    processes = getattr(pool, "_processes", None) or {}  # no public way to stop busy workers before 3.14
    for process in list(processes.values()):
        process.terminate()
    for process in list(processes.values()):
        process.join()
