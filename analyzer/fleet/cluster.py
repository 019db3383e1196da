"""`--dask ADDRESS`: the per-input audits as tasks on an existing Dask distributed cluster.

Dask schedules them; this module only connects, sends the rules and options once (scattered to every
worker), and submits one task per run of inputs (pool.py) with the inputs' bytes (workers need no access to this
machine's files). `pool._merge` merges the partials in input order as they come back, so the result
is the one `--jobs` and a single process give. distributed is the optional extra `cancelwire[dask]`.

A cluster that cannot run the audits is a clear error (exit 2), like a dead `--jobs` worker: a scheduler
with no worker (none joined within NO_WORKER_TIMEOUT), a task whose
workers died under it (Dask's `KilledWorker`: killed, or by the OOM killer, as many times as the
scheduler allows), and tasks the cluster cancelled when its last worker died (taking with it the rules
and options scattered to it).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from concurrent import futures
from typing import Any

from ..errors import CancelwireError
from .work import Context, Done, Submit, Task, Work, worker_died

#: Seconds to reach the scheduler before giving up with a clear error.
CONNECT_TIMEOUT = 30
#: Seconds to wait for a worker to send the rules and options to, before giving up with a clear error.
NO_WORKER_TIMEOUT = 30
_START_ONE = "start one (`dask worker ADDRESS`) or audit here with --jobs"
_MORE_MEMORY = "give the workers more memory (`dask worker --memory-limit`), or audit here with --jobs"


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
    from distributed.scheduler import KilledWorker

    if isinstance(exc, KilledWorker):
        return worker_died(f"--dask {address}: a Dask worker", _MORE_MEMORY)
    return exc


def _settled(theirs: futures.Future[Done], address: str) -> futures.Future[Done]:
    """A future for the run, settled as the cluster's is, with the cluster's own troubles as clear errors.
    A task the cluster cancelled lost the rules and options scattered to the workers: they all died."""
    mine: futures.Future[Done] = futures.Future()

    def settle(done: futures.Future[Done]) -> None:
        if done.cancelled():
            mine.set_exception(worker_died(f"--dask {address}: a Dask worker", _MORE_MEMORY))
            return
        exc = done.exception()
        if exc is None:
            mine.set_result(done.result())
        else:
            mine.set_exception(_translated(exc, address))

    theirs.add_done_callback(settle)
    return mine


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
    try:
        executor = client.get_executor()
        try:
            shared = client.scatter(context, broadcast=True, timeout=NO_WORKER_TIMEOUT)
        except TimeoutError:
            raise _no_worker(
                address, f"the scheduler has no worker (none joined within {NO_WORKER_TIMEOUT} s)"
            ) from None
        width = max(1, sum(client.nthreads().values()))

        def submit(task: Task) -> futures.Future[Any]:
            return _settled(executor.submit(run, tuple(map(prepare, task)), shared), address)

        yield submit, width
    finally:
        client.close()
