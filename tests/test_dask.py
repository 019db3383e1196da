"""--dask ADDRESS on a real distributed.LocalCluster (loopback only): the same reports as one process."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cancelwire.cli import main as cli
from cancelwire.fleet import cluster
from cancelwire.reports.formats import FORMATS
from test_fleet import fixed_generation_time, fleet_inputs  # noqa: F401  (fixtures)

distributed = pytest.importorskip("distributed")
dask = pytest.importorskip("dask")


@pytest.fixture(scope="module")
def scheduler() -> Iterator[str]:
    with distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=False,
        protocol="tcp://",
        host="127.0.0.1",
        dashboard_address=None,
    ) as local:
        yield local.scheduler_address


def _outputs(paths: list[str], out: Path, *options: str) -> tuple[int, dict[str, bytes]]:
    out.mkdir()
    reports = [f"--report={fmt}={out / fmt}" for fmt in FORMATS]
    args = ["audit", *paths, *reports, "--exchanges", str(out / "x.csv"), "--isolated", "--fail-on", "warning"]
    status = cli.main([*args, *options])
    return status, {p.name: p.read_bytes() for p in sorted(out.iterdir())}


def test_dask_gives_the_local_report_byte_for_byte(
    scheduler: str,
    fleet_inputs: list[str],  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    local_status, local = _outputs(fleet_inputs, tmp_path / "local", "--jobs", "1")
    local_err = capsys.readouterr().err
    dask_status, remote = _outputs(fleet_inputs, tmp_path / "dask", "--dask", scheduler)
    assert capsys.readouterr().err == local_err
    assert dask_status == local_status == 1
    assert sorted(remote) == sorted(local)
    for name, data in local.items():
        assert remote[name] == data, name


def test_without_distributed_the_error_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)
    sample = Path(__file__).parent.parent / "sample_captures" / "stdio" / "sdk-clean-session.jsonl"
    assert cli.main(["audit", str(sample), "--dask", "tcp://127.0.0.1:1", "--isolated"]) == 2
    assert capsys.readouterr().err == (
        "cancelwire: error: --dask needs Dask distributed, which is not installed\n"
        "  hint: pip install 'cancelwire[dask]'\n"
    )


def test_an_unreachable_scheduler_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT", 2)
    sample = Path(__file__).parent.parent / "sample_captures" / "stdio" / "sdk-clean-session.jsonl"
    assert cli.main(["audit", str(sample), "--dask", f"tcp://127.0.0.1:{port}", "--isolated"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"cancelwire: error: --dask tcp://127.0.0.1:{port}: cannot reach the Dask scheduler: ")
    assert err.endswith(
        "  hint: start one (`dask scheduler`, with `dask worker ADDRESS` on each machine) or check the address\n"
    )


# -- a cluster that cannot run the audits (issue 19): exit 2 with what happened, like a dead --jobs worker --

SAMPLE = Path(__file__).parent.parent / "sample_captures" / "stdio" / "sdk-clean-session.jsonl"


def _killing_plugin() -> Any:
    """A worker plugin that kills its worker's process (SIGKILL, as the OOM killer does) as soon as a task
    starts there. Made in a function so that cloudpickle sends the class by value to the worker processes."""

    class KillOnTask(distributed.WorkerPlugin):  # type: ignore[misc]
        def transition(self, key: str, start: str, finish: str, **kwargs: object) -> None:
            if finish == "executing":
                os.kill(os.getpid(), signal.SIGKILL)

    return KillOnTask()


@contextlib.contextmanager
def _killing_cluster(*, nanny: bool) -> Iterator[str]:
    """A scheduler on loopback and one worker process (`dask worker`, with or without its nanny) whose
    process is killed by the first audit it starts."""
    with (
        distributed.LocalCluster(
            n_workers=0, processes=False, protocol="tcp://", host="127.0.0.1", dashboard_address=None
        ) as local,
        distributed.Client(local) as client,
    ):
        client.register_plugin(_killing_plugin())
        command = [sys.executable, "-m", "distributed.cli.dask_worker", local.scheduler_address, "--nthreads", "1"]
        command += ["--host", "127.0.0.1", "--no-dashboard", "--nanny" if nanny else "--no-nanny"]
        worker = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            client.wait_for_workers(1, timeout=120)
            yield local.scheduler_address
        finally:
            worker.terminate()
            worker.wait(timeout=60)


def test_a_scheduler_with_no_worker_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cluster, "NO_WORKER_TIMEOUT", 1)
    with distributed.LocalCluster(
        n_workers=0, processes=False, protocol="tcp://", host="127.0.0.1", dashboard_address=None
    ) as local:
        status = cli.main(["audit", str(SAMPLE), "--dask", local.scheduler_address, "--isolated"])
    assert status == 2
    assert capsys.readouterr().err.endswith(
        f"cancelwire: error: --dask {local.scheduler_address}: the scheduler has no worker (none joined within 1 s)\n"
        "  hint: start one (`dask worker ADDRESS`) or audit here with --jobs\n"
    )


def test_a_worker_killed_mid_run_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    """The worker's nanny starts it again; the scheduler lets a task kill no worker (allowed-failures 0)."""
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}), _killing_cluster(nanny=True) as address:
        status = cli.main(["audit", str(SAMPLE), "--dask", address, "--isolated"])
    assert status == 2
    assert capsys.readouterr().err.endswith(
        f"cancelwire: error: --dask {address}: a Dask worker died while auditing (killed, or out of memory?)\n"
        "  hint: give the workers more memory (`dask worker --memory-limit`), or audit here with --jobs\n"
    )


def test_a_cluster_left_with_no_worker_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    """No nanny: the killed worker is not started again, and the cluster cancels the audit, whose rules and
    options died with it (the audit used to wait for it forever, or exit 3)."""
    with _killing_cluster(nanny=False) as address:
        status = cli.main(["audit", str(SAMPLE), "--dask", address, "--isolated"])
    assert status == 2
    assert capsys.readouterr().err.endswith(
        f"cancelwire: error: --dask {address}: a Dask worker died while auditing (killed, or out of memory?)\n"
        "  hint: give the workers more memory (`dask worker --memory-limit`), or audit here with --jobs\n"
    )
