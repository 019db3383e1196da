"""--jobs: inputs audited in worker processes give the report one process gives, byte for byte, in
every format; the progress bar; a worker that dies is a clear error."""

from __future__ import annotations

import gzip
import io
import json
import os
import pickle
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import cancelwire
import pytest
from cancelwire.cli import main as cli
from cancelwire.cli import progress_bar as progress
from cancelwire.fleet import pool as fleet
from cancelwire.judge.catalog import load_catalog
from cancelwire.model import forms
from cancelwire.reports.formats import FORMATS
from cancelwire.run import pipeline
from cancelwire.run.partial import Partial
from cancelwire.run.results import HowMade
from transcripts import Line, write_transcript

ROOT = Path(__file__).resolve().parent.parent
STDIO = ROOT / "sample_captures" / "stdio"
HTTP = ROOT / "sample_captures" / "http"


def _call(i: int, tool: str = "slow") -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": tool}}


def _cancel(i: int) -> dict[str, object]:
    return {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": i}}


def _result(i: int) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": i, "result": {"content": []}}


def _recording(n: int) -> list[Line]:
    """Recording N: a late result after a cancel, a silent cancel, a stray reply, a clean call."""
    return [
        (1.0, "c2s", _call(1)),
        (1.1, "c2s", _cancel(1)),
        (5.0 + n, "s2c", _result(1)),
        (6.0, "c2s", _call(2, "write")),
        (6.1, "c2s", _cancel(2)),
        (7.0, "s2c", _result(99 + n)),
        (8.0, "c2s", _call(3)),
        (8.5, "s2c", _result(3)),
    ]


@pytest.fixture(scope="module")
def fleet_inputs(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Many inputs of every kind: samples (transcripts, host logs, captures), generated transcripts,
    a gzip, a folder walked with a file of no known format, and a path that does not exist."""
    base = tmp_path_factory.mktemp("fleet")
    folder = base / "many"
    folder.mkdir()
    for n in range(12):
        write_transcript(folder / f"rec-{n:02d}.jsonl", _recording(n))
    (folder / "notes.txt").write_text("not a recording\n")
    packed = base / "packed.jsonl.gz"
    packed.write_bytes(gzip.compress(write_transcript(base / "plain.jsonl", _recording(40)).read_bytes()))
    captures = sorted(str(p) for p in HTTP.glob("*.pcapng"))[:3]
    return [
        *sorted(str(p) for p in STDIO.glob("*.jsonl")),
        str(folder),
        str(packed),
        str(base / "missing.jsonl"),
        *captures,
        str(HTTP / "sdk-http-cancel-close-stream.server.jsonl"),
    ]


@pytest.fixture(autouse=True)
def fixed_generation_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every report says when it was made; fixed here so whole reports can be compared byte for byte."""
    made = pipeline.how_made

    def fixed(options: pipeline.AuditOptions) -> HowMade:
        real = made(options)
        return HowMade(**{**{f: getattr(real, f) for f in real.__slots__}, "generated": 1_800_000_000.0})

    monkeypatch.setattr(pipeline, "how_made", fixed)


def _outputs(paths: list[str], out: Path, *options: str) -> tuple[int, dict[str, bytes], str]:
    out.mkdir()
    reports = [f"--report={fmt}={out / fmt}" for fmt in FORMATS]
    status = cli.main(
        ["audit", *paths, *reports, "--exchanges", str(out / "x.csv"), "--isolated", "--fail-on", "warning", *options]
    )
    return status, {p.name: p.read_bytes() for p in sorted(out.iterdir())}, ""


def test_jobs_give_the_serial_report_byte_for_byte_in_every_format(
    fleet_inputs: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    serial_status, serial, _ = _outputs(fleet_inputs, tmp_path / "serial", "--jobs", "1")
    serial_err = capsys.readouterr().err
    parallel_status, parallel, _ = _outputs(fleet_inputs, tmp_path / "parallel", "--jobs", "2")
    parallel_err = capsys.readouterr().err
    assert sorted(serial) == sorted([*FORMATS, "x.csv"])
    assert serial_status == parallel_status == 1
    assert parallel_err == serial_err
    assert serial_err.count("missing.jsonl: no such file or directory") == 1
    for name, data in serial.items():
        assert parallel[name] == data, name
    # the compared reports hold what the inputs hold (not two empty reports)
    text = serial["json"].decode()
    assert text.count('"outcome": "late-result-violation"') >= 12
    assert "notes.txt" in text and "packed.jsonl.gz" in text and "missing.jsonl" in text


def test_the_library_entry_point_takes_jobs(fleet_inputs: list[str]) -> None:
    inputs = [p for p in fleet_inputs if "missing" not in p]
    with cancelwire.audit(inputs, jobs=1) as serial, cancelwire.audit(inputs, jobs=2) as parallel:
        for table in ("findings", "cancellations", "exchanges"):
            assert parallel.to_dataframe(table).equals(serial.to_dataframe(table)), table
        assert parallel.inputs == serial.inputs
        assert parallel.sessions == serial.sessions
        assert parallel.skips == serial.skips
        assert parallel.unruled_anomalies == serial.unruled_anomalies
        assert list(parallel.outcomes.items()) == list(serial.outcomes.items())


def test_jobs_is_checked(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main(["audit", str(STDIO), "--jobs", "0"])
    assert exit_.value.code == 2
    assert "argument --jobs: must be at least 1, not 0" in capsys.readouterr().err
    with pytest.raises(cancelwire.ConfigError, match="jobs: must be a whole number"):
        cancelwire.audit([str(STDIO)], jobs=1.5)  # type: ignore[arg-type]


def test_default_jobs_use_every_core_only_for_many_inputs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fleet, "cores", lambda: 2)
    assert [fleet.default_jobs(n) for n in (1, 2, 7, 8, 1000)] == [1, 1, 1, 2, 2]


def test_tasks_are_runs_of_consecutive_inputs_cut_by_size_and_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fleet, "TASK_BYTES", (100, 100))  # one size: see the next test for the guided sizes
    monkeypatch.setattr(fleet, "TASK_INPUTS", 3)
    done = Partial()  # an input already done (a missing path): merged in its place, never sent
    sizes = [10, 10, 10, 10, 90, 20, 500, 5, 5, 5, 5, 5]
    works = [fleet.Work(f"in-{n}", False, path=f"in-{n}", size=size) for n, size in enumerate(sizes)]
    items: list[fleet.Work | Partial] = [*works[:6], done, *works[6:]]
    names = [[w.name for w in t] if isinstance(t, tuple) else "done" for t in fleet._tasks(items, 1)]
    assert names == [
        ["in-0", "in-1", "in-2"],  # three inputs at most
        ["in-3", "in-4"],  # 10 + 90 bytes; the next would pass 100
        ["in-5"],
        "done",
        ["in-6"],  # larger than a task: alone
        ["in-7", "in-8", "in-9"],
        ["in-10", "in-11"],
    ]
    # few inputs for the workers: spread out, at least WINDOW_PER_WORKER tasks each
    assert fleet._tasks(items, 2) == [(w,) for w in works[:6]] + [done] + [(w,) for w in works[6:]]


def test_tasks_are_large_first_and_smaller_towards_the_end(monkeypatch: pytest.MonkeyPatch) -> None:
    """Guided self-scheduling: each task takes 1/(workers * GUIDED) of the bytes left, within TASK_BYTES."""
    monkeypatch.setattr(fleet, "GUIDED", 4)
    monkeypatch.setattr(fleet, "TASK_INPUTS", 100)  # the count is then WINDOW_PER_WORKER's: 40 // 4
    works = [fleet.Work(f"in-{n}", False, path=f"in-{n}", size=10) for n in range(40)]
    monkeypatch.setattr(fleet, "TASK_BYTES", (20, 1000))
    assert [len(t) for t in fleet._tasks(works, 1)] == [10, 7, 5, 4, 3, 2, 2, 2, 2, 2, 1]  # 400 // 4 = 100 bytes...
    monkeypatch.setattr(fleet, "TASK_BYTES", (20, 60))  # ... at most 60 bytes
    assert [len(t) for t in fleet._tasks(works, 1)] == [6, 6, 6, 5, 4, 3, 2, 2, 2, 2, 2]
    tasks = fleet._tasks(works, 2)  # two workers: half the share
    assert [len(t) for t in tasks] == [5, 4, 3, 3, 3, *[2] * 11]
    assert [w for t in tasks for w in t] == works


def test_a_task_packs_its_inputs_cancelled_calls_once_in_input_order(tmp_path: Path) -> None:
    paths = [write_transcript(tmp_path / f"rec-{n}.jsonl", _recording(n)) for n in range(3)]
    works = tuple(fleet.Work(p.name, False, path=str(p), size=p.stat().st_size) for p in paths)
    options = pipeline.AuditOptions()
    rules, _ = pipeline.select_rules(load_catalog(options.rule_dirs), options)
    context = fleet.Context(tuple(rules), options, rows=False)
    done = fleet.run_task(works, context)
    assert [len(part.cancellations) for part in done.parts] == [0, 0, 0]  # taken out, packed together
    assert done.calls is not None and len(done.calls) == 6
    serial = [call for work in works for call in fleet.run_work(work, context).cancellations]
    assert [(c.session_key, c.request_id) for c in serial] == [(p.name, i) for p in paths for i in (1, 2)]
    assert pickle.loads(done.calls.calls) == serial
    assert pickle.loads(done.calls.texts) == [forms.listed_json(forms.cancellation(c)) for c in serial]


def test_a_json_audit_loads_no_template_engine_nor_xml_library(tmp_path: Path) -> None:
    """Each format's module is imported when that format is written: start-up is the serial part of
    every --jobs run."""
    script = (
        "import sys\n"
        "from cancelwire.cli import main as cli\n"
        f"cli.main(['audit', {str(STDIO)!r}, '--format', 'json', '-o', {str(tmp_path / 'r.json')!r}, '--isolated'])\n"
        "print(sorted(m for m in ('jinja2', 'xml.etree.ElementTree', 'cancelwire.reports.junit',"
        " 'cancelwire.reports.sarif', 'cancelwire.reports.github', 'cancelwire.reports.rendering',"
        " 'cancelwire.reports.html_view') if m in sys.modules))\n"
    )
    loaded = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert loaded == "[]\n"
    report = json.loads((tmp_path / "r.json").read_text())
    assert len(report["cancellations"]) == report["summary"]["cancellations"] > 0  # the report was written


def test_standard_input_among_many_inputs_is_audited_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stdin = write_transcript(tmp_path / "in.jsonl", _recording(7)).read_bytes()
    paths = [str(p) for p in sorted(STDIO.glob("*.jsonl"))[:4]]
    reports = {}
    for jobs in ("1", "2"):
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(stdin)))
        out = tmp_path / f"r{jobs}.json"
        cli.main(["audit", paths[0], "-", *paths[1:], "--format", "json", "-o", str(out), "--jobs", jobs, "--isolated"])
        reports[jobs] = out.read_text()
    assert reports["1"] == reports["2"]
    assert reports["1"].count('"path": "<stdin>"') == 1


def test_a_worker_that_dies_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def dies(*args: Any, **kwargs: Any) -> None:
        os._exit(9)  # as the kernel's OOM killer would leave it

    monkeypatch.setattr(fleet, "audit_source", dies)  # forked workers inherit the patch
    paths = [str(p) for p in sorted(STDIO.glob("*.jsonl"))[:3]]
    out = tmp_path / "r.json"
    assert cli.main(["audit", *paths, "--jobs", "2", "-o", str(out), "--isolated"]) == 2
    assert capsys.readouterr().err == (
        "cancelwire: error: a worker process died while auditing (killed, or out of memory?)\n"
        "  hint: run again with fewer --jobs, or --jobs 1\n"
    )
    assert list(tmp_path.iterdir()) == []


def _children(pid: int) -> list[int]:
    tasks = Path(f"/proc/{pid}/task")
    return [int(c) for task in tasks.iterdir() for c in (task / "children").read_text().split()]


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads a process's children from /proc")
@pytest.mark.parametrize(
    ("signum", "status", "line"),
    [
        (signal.SIGTERM, 143, "cancelwire: terminated (SIGTERM); nothing was left half-written"),
        (signal.SIGINT, 130, "cancelwire: interrupted"),
    ],
)
def test_a_signal_stops_the_workers_and_leaves_no_report(
    tmp_path: Path, signum: signal.Signals, status: int, line: str
) -> None:
    calls = [m for i in range(1, 30_000) for m in ((float(i), "c2s", _call(i)), (i + 0.5, "s2c", _result(i)))]
    inputs = [str(write_transcript(tmp_path / f"big-{n}.jsonl", calls)) for n in range(4)]
    out = tmp_path / "out"
    out.mkdir()
    script = Path(sys.executable).parent / "cancelwire"
    command = [script, "audit", *inputs, "--jobs", "2", "-o", str(out / "r.json"), "--isolated"]
    proc = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120  # a condition to wait for, not a timing assertion
    while len(workers := _children(proc.pid)) < 2 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.01)
    assert len(workers) == 2  # the workers are busy with the first inputs
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=120)
    assert (proc.returncode, err) == (status, line + "\n")  # no traceback
    assert list(out.iterdir()) == []  # neither the report nor its temp file
    for pid in workers:  # stopped and reaped
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


# -- the progress bar -----------------------------------------------------------------------------


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_line() -> None:
    assert progress.line(37, 1000, 123_400, 10.0) == (
        "  37/1000 inputs [#.......................]   4%  12.3k msg/s  ETA 4m20s"
    )
    assert progress.line(3, 3, 2_500_000, 2.0) == "3/3 inputs [########################] 100%  1.2M msg/s  ETA 0m00s"
    assert progress.line(0, 5, 0, 1.5).endswith("  0 msg/s  ETA --")
    assert progress.line(1, 4000, 10, 3.0).endswith("ETA 3h19m")


def test_progress_bar_waits_redraws_at_most_so_often_and_erases_itself() -> None:
    now = [0.0]
    screen = FakeTerminal()
    with progress.progress_bar(screen, clock=lambda: now[0]) as bar:
        bar(1, 4, 100)  # before SHOW_AFTER: a short run shows nothing
        now[0] = 2.0
        bar(2, 4, 200)
        now[0] = 2.1
        bar(3, 4, 300)  # too soon after the last redraw
        now[0] = 2.2
        bar(4, 4, 400)  # the last one always shows
    assert screen.getvalue().split("\r\x1b[K") == [
        "",
        "2/4 inputs [############............]  50%  100 msg/s  ETA 0m02s",
        "4/4 inputs [########################] 100%  182 msg/s  ETA 0m00s",
        "",
    ]


@pytest.mark.parametrize("quiet", [False, True])
def test_the_command_shows_progress_on_a_terminal_only(
    quiet: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(progress, "SHOW_AFTER", 0.0)
    monkeypatch.setattr(progress, "REDRAW", 0.0)
    paths = [str(p) for p in sorted(STDIO.glob("*.jsonl"))[:3]]
    terminal = FakeTerminal()
    monkeypatch.setattr("sys.stderr", terminal)
    cli.main(["audit", *paths, "-o", str(tmp_path / "r.txt"), "--isolated", *(["--quiet"] if quiet else [])])
    drawn = [part for part in terminal.getvalue().split("\r\x1b[K") if part]
    if quiet:
        assert drawn == []
    else:
        assert [re.sub(r"  \S+ msg/s  ETA \S+$", "", d) for d in drawn] == [
            "1/3 inputs [########................]  33%",
            "2/3 inputs [################........]  67%",
            "3/3 inputs [########################] 100%",
        ]
        assert terminal.getvalue().endswith("\r\x1b[K")
    pipe = io.StringIO()  # not a terminal: silent
    monkeypatch.setattr("sys.stderr", pipe)
    cli.main(["audit", *paths, "-o", str(tmp_path / "r2.txt"), "--isolated"])
    assert pipe.getvalue() == ""


def test_no_temp_files_are_left_behind(
    fleet_inputs: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spool = tmp_path / "tmp"
    spool.mkdir()
    monkeypatch.setenv("TMPDIR", str(spool))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    inputs = [p for p in fleet_inputs if "missing" not in p and p.endswith(".jsonl")]
    assert cli.main(["audit", *inputs, "--jobs", "2", "-o", str(tmp_path / "r.txt"), "--isolated"]) == 1
    assert list(spool.iterdir()) == []
    shutil.rmtree(spool)
