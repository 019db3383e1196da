"""--dask ADDRESS on a real distributed.LocalCluster (loopback only): the same reports as one process."""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cancelwire.cli import main as cli
from cancelwire.fleet import cluster
from cancelwire.reports.formats import FORMATS
from test_fleet import fixed_generation_time, fleet_inputs  # noqa: F401  (fixtures)

distributed = pytest.importorskip("distributed")


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
