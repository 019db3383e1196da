"""`--dask ADDRESS`: the per-input audits as tasks on an existing Dask distributed cluster.

Dask schedules them; this module only connects, sends the rules and options once (scattered to every
worker), and submits one task per run of inputs (pool.py) with the inputs' bytes (workers need no access to this
machine's files). `pool._merge` merges the partials in input order as they come back, so the result
is the one `--jobs` and a single process give. distributed is the optional extra `cancelwire[dask]`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from concurrent import futures
from typing import Any

from ..errors import CancelwireError
from .work import Context, Done, Submit, Task, Work

#: Seconds to reach the scheduler before giving up with a clear error.
CONNECT_TIMEOUT = 30


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
        shared = client.scatter(context, broadcast=True)
        width = max(1, sum(client.nthreads().values()))

        def submit(task: Task) -> futures.Future[Any]:
            return executor.submit(run, tuple(map(prepare, task)), shared)  # type: ignore[no-any-return]

        yield submit, width
    finally:
        client.close()
