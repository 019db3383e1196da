"""`--dask ADDRESS`: the per-input audits as tasks on an existing Dask distributed cluster.

Dask schedules them; this module only connects, sends the rules and options once (scattered to every
worker), and submits one task per run of inputs (pool.py) with the inputs' bytes (workers need no access to this
machine's files). `pool._merge` merges the partials in input order as they come back, so the result
is the one `--jobs` and a single process give. distributed is the optional extra `cancelwire[dask]`.

A cluster that cannot run the audits is a clear error (exit 2), like a dead `--jobs` worker: a scheduler
with no worker (none joined within NO_WORKER_TIMEOUT), a task whose workers died under it (Dask's
`KilledWorker`: killed, or by the OOM killer, as many times as the scheduler allows), and a cluster left
with no worker while audits wait (they would wait forever).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from concurrent import futures
from typing import Any

from ..errors import CancelwireError
from .work import Context, Done, Submit, Task, Work, worker_died

#: Seconds to reach the scheduler before giving up with a clear error.
CONNECT_TIMEOUT = 30
#: Seconds the cluster may have no worker (none yet, or all died) while audits wait for one.
NO_WORKER_TIMEOUT = 30
#: How often the cluster's workers are counted while audits wait (seconds).
_LOOK_EVERY = 0.5
_START_ONE = "start one (`dask worker ADDRESS`) or audit here with --jobs"


def _client(address: str) -> Any:
    try:
        from distributed import Client
    except ImportError:
        raise CancelwireError(
            "--dask needs Dask distributed, which is not installed", "pip install 'cancelwire[dask]'"
        ) from None
    try:
        return Client(address, timeout=CONNECT_TIMEOUT, set_as_default=False)  # type: ignore[no-untyped-call]
    except (OSError, TimeoutError, ValueError) as exc:
        raise CancelwireError(
            f"--dask {address}: cannot reach the Dask scheduler: {exc}",
            "start one (`dask scheduler`, with `dask worker ADDRESS` on each machine) or check the address",
        ) from None


def _no_worker(address: str, what: str) -> CancelwireError:
    return CancelwireError(f"--dask {address}: {what}", _START_ONE)


def _translated(exc: BaseException, address: str) -> BaseException:
    """A task's failure as the run reports it: the cluster's own troubles are clear errors, the rest as is."""
    from distributed.scheduler import KilledWorker, NoValidWorkerError

    if isinstance(exc, KilledWorker):
        hint = "give the workers more memory (`dask worker --memory-limit`), or audit here with --jobs"
        return worker_died(f"--dask {address}: a Dask worker", hint)
    if isinstance(exc, NoValidWorkerError):
        return _no_worker(address, "the scheduler has no worker to run the audits on")
    return exc


class _Waiting:
    """The run's futures for the cluster's: settled when theirs are (failures translated), or failed when
    the cluster has had no worker for NO_WORKER_TIMEOUT while some wait."""

    def __init__(self, client: Any, address: str) -> None:
        self.client = client
        self.address = address
        self.lock = threading.Lock()
        self.futures: set[futures.Future[Done]] = set()
        self.stop = threading.Event()

    def submit(self, theirs: futures.Future[Done]) -> futures.Future[Done]:
        mine: futures.Future[Done] = futures.Future()
        with self.lock:
            self.futures.add(mine)
        theirs.add_done_callback(lambda done: self._settle(mine, done))
        return mine

    def _settle(self, mine: futures.Future[Done], theirs: futures.Future[Done]) -> None:
        exc = theirs.exception()
        with self.lock:
            if mine not in self.futures:
                return  # already failed for want of a worker
            self.futures.discard(mine)
            if exc is None:
                mine.set_result(theirs.result())
            else:
                mine.set_exception(_translated(exc, self.address))

    def watch(self) -> None:
        """Runs in a thread until `stop`: fails every waiting future once no worker was seen for long."""
        seen = 0.0
        while not self.stop.wait(_LOOK_EVERY):
            with self.lock:
                waiting = bool(self.futures)
            if not waiting or self._workers():
                seen = 0.0
                continue
            seen += _LOOK_EVERY
            if seen >= NO_WORKER_TIMEOUT:
                what = (
                    f"the cluster has had no worker for {NO_WORKER_TIMEOUT} s while audits waited (its workers died?)"
                )
                self._fail(_no_worker(self.address, what))
                seen = 0.0

    def _workers(self) -> int:
        try:
            return len(self.client.nthreads())
        except (OSError, TimeoutError):  # the scheduler gone (CommClosedError): the futures fail on their own
            return 1

    def _fail(self, error: CancelwireError) -> None:
        with self.lock:
            failing, self.futures = self.futures, set()
        for future in failing:
            future.set_exception(error)


@contextlib.contextmanager
def dask_submitter(
    address: str,
    context: Context,
    run: Callable[[Task, Context], Done],
    prepare: Callable[[Work], Work],
) -> Iterator[tuple[Submit, int]]:
    """A submit function for `pool._merge` that runs RUN on a task's inputs, each PREPARE(work) (its
    bytes added), on the cluster, and how many tasks the cluster runs at once."""
    client = _client(address)
    waiting = _Waiting(client, address)
    watcher = threading.Thread(target=waiting.watch, name="cancelwire-dask-workers", daemon=True)
    try:
        executor = client.get_executor()
        try:
            shared = client.scatter(context, broadcast=True, timeout=NO_WORKER_TIMEOUT)
        except TimeoutError:
            raise _no_worker(
                address, f"the scheduler has no worker (none joined within {NO_WORKER_TIMEOUT} s)"
            ) from None
        width = max(1, sum(client.nthreads().values()))
        watcher.start()

        def submit(task: Task) -> futures.Future[Any]:
            return waiting.submit(executor.submit(run, tuple(map(prepare, task)), shared))

        yield submit, width
    finally:
        waiting.stop.set()
        if watcher.is_alive():
            watcher.join()
        client.close()
