"""Every output channel under attack, through the command line as a user runs it: FIFOs nobody reads,
pipes given by name (`/dev/stdout`, a shell's `>(...)`), a closed standard output, two options naming one
new file, `diagram -o` over its input, a hostile `GITHUB_STEP_SUMMARY`, and a baseline written by a run
that read nothing. Each test asserts the exit status, the stderr line and what is left on disk.

A FIFO test passes a generous timeout to subprocess only as a guard against a hang (before the fix the
run waited forever); nothing here asserts on time.
"""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = Path(sys.executable).parent / "cancelwire"
SAMPLE = ROOT / "sample_captures" / "stdio" / "handwritten-client-cancels-unknown-id.jsonl"
HANG_GUARD = 300
NO_READER = "  hint: start its reader first; cancelwire never waits for one"


def run(*args: str, env: dict[str, str] | None = None, **kwargs: object) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"} | (env or {})
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [SCRIPT, *args], cwd=ROOT, capture_output=True, text=True, timeout=HANG_GUARD, env=environ, **kwargs
    )


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "out.csv"  # a table needs the suffix; the reports do not care
    os.mkfifo(path)
    return path


@pytest.mark.parametrize(
    ("option", "label"),
    [
        ("-o", "-o"),
        ("--report=json=", "--report json"),
        ("--write-baseline", "--write-baseline"),
        ("--exchanges", "--exchanges"),
    ],
)
def test_a_fifo_nobody_reads_is_refused_before_the_audit(fifo: Path, option: str, label: str) -> None:
    args = [f"{option}{fifo}"] if option.endswith("=") else [option, str(fifo)]
    proc = run("audit", str(SAMPLE), *args)
    assert proc.returncode == 2, proc
    assert proc.stderr.splitlines() == [
        f"cancelwire: error: {fifo}: cannot write the {label} output: it is a FIFO that nobody reads",
        NO_READER,
    ]
    assert proc.stdout == ""  # refused before the audit: no report went anywhere


def test_a_fifo_with_a_reader_gets_the_whole_report_in_one_stream(fifo: Path) -> None:
    # the reader is there first, as `cat FIFO &` would be (read-write: Linux opens a FIFO so at once, and
    # the read end never sees an end of file before cancelwire has opened its own)
    fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
    chunks: list[bytes] = []
    with subprocess.Popen([SCRIPT, "audit", str(SAMPLE), "--format", "json", "-o", str(fifo)], cwd=ROOT) as proc:
        while True:
            done = proc.poll() is not None  # read after the check: nothing is written once it has exited
            while select.select([fd], [], [], 0.05)[0]:
                chunks.append(os.read(fd, 1 << 16))
            if done:
                break
    os.close(fd)
    assert proc.returncode == 1
    expected = run("audit", str(SAMPLE), "--format", "json").stdout
    assert _without_time(b"".join(chunks).decode()) == _without_time(expected)


def _without_time(report: str) -> str:
    return "\n".join(line for line in report.splitlines() if '"generated"' not in line)


def test_pipes_given_by_name_are_written() -> None:
    """`-o /dev/stdout` in a CI step whose output is a pipe, and bash's `-o >(cmd)` (/dev/fd/N of a pipe):
    the path resolves to no real file, which made the temp file beside it impossible."""
    proc = run("audit", str(SAMPLE), "--format", "json", "-o", "/dev/stdout")
    assert proc.returncode == 1, proc
    assert proc.stdout.startswith("{") and proc.stdout.rstrip().endswith("}")
    if shutil.which("bash") is None:  # pragma: no cover - Debian has it
        pytest.skip("needs bash for a process substitution")
    # the substitution's cat holds our stdout pipe, so `run` returns once cat has passed everything on
    line = f"{SCRIPT} audit {SAMPLE} --format json -o >(cat); echo status $? >&2"
    proc = subprocess.run(["bash", "-c", line], capture_output=True, text=True, timeout=HANG_GUARD, cwd=ROOT)
    assert proc.stderr == "status 1\n", proc
    assert proc.stdout.startswith("{") and proc.stdout.rstrip().endswith("}")


@pytest.mark.parametrize("command", [["audit", str(SAMPLE)], ["rules"], ["explain", "CW101"]])
def test_a_closed_standard_output_is_a_usage_error_not_a_bug(command: list[str]) -> None:
    proc = _closed_stdout(command)
    assert proc.returncode == 2, proc
    assert proc.stderr.splitlines() == [
        "cancelwire: error: standard output is closed: cannot write the report",
        "  hint: write it to a file with -o FILE",
    ]


def _closed_stdout(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sh", "-c", '"$@" >&-', "sh", str(SCRIPT), *command],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
        timeout=HANG_GUARD,
    )


@pytest.mark.parametrize("command", [["rules"], ["explain", "CW101"]])
def test_a_full_standard_output_is_a_usage_error_not_a_bug(command: list[str]) -> None:
    with open("/dev/full", "w") as full:
        proc = subprocess.run([SCRIPT, *command], stdout=full, stderr=subprocess.PIPE, text=True, timeout=HANG_GUARD)
    assert proc.returncode == 2, proc
    assert proc.stderr == "cancelwire: error: standard output: cannot write the report: No space left on device\n"


@pytest.mark.parametrize(
    ("first", "second", "message"),
    [
        (["--report", "json={}"], ["--exchanges", "{}"], "--exchanges and --report json name the same file"),
        (["-o", "{}"], ["--write-baseline", "{}"], "--write-baseline and -o name the same file"),
        (
            ["--report", "md={}"],
            ["--write-baseline", "sub/../{}"],
            "--write-baseline and --report md name the same file",
        ),
    ],
)
def test_two_options_naming_one_new_file_are_refused(
    tmp_path: Path, first: list[str], second: list[str], message: str
) -> None:
    """Before, the last writer silently won: the report or the baseline was lost."""
    (tmp_path / "sub").mkdir()
    target = "both.csv"
    args = [a.format(target) for a in (*first, *second)]
    proc = subprocess.run(
        [SCRIPT, "audit", str(SAMPLE), *args], cwd=tmp_path, capture_output=True, text=True, timeout=HANG_GUARD
    )
    assert proc.returncode == 2, proc
    shown = args[-1]
    assert proc.stderr == f"cancelwire: error: {shown}: {message}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sub"]


def test_diagram_never_overwrites_the_recording_it_draws(tmp_path: Path) -> None:
    copy = tmp_path / "session.jsonl"
    copy.write_bytes(SAMPLE.read_bytes())
    proc = run("diagram", str(copy), "--request", "2", "-o", str(copy))
    assert proc.returncode == 2, proc
    assert proc.stderr.splitlines()[0] == f"cancelwire: error: {copy}: --output would overwrite an input ({copy})"
    assert copy.read_bytes() == SAMPLE.read_bytes()


# -- GITHUB_STEP_SUMMARY ------------------------------------------------------------------------


def test_step_summary_over_an_input_is_refused(tmp_path: Path) -> None:
    copy = tmp_path / "session.jsonl"
    copy.write_bytes(SAMPLE.read_bytes())
    proc = run("audit", str(copy), "--format", "github", env={"GITHUB_STEP_SUMMARY": str(copy)})
    assert proc.returncode == 2, proc
    assert proc.stderr.splitlines()[0] == (
        f"cancelwire: error: {copy}: GITHUB_STEP_SUMMARY would overwrite an input ({copy})"
    )
    assert copy.read_bytes() == SAMPLE.read_bytes() and proc.stdout == ""


@pytest.mark.parametrize(
    ("where", "problem"),
    [("dir", "it is a directory"), ("missing/summary.md", "No such file or directory")],
)
def test_a_step_summary_that_cannot_be_written_is_named_before_the_audit(
    tmp_path: Path, where: str, problem: str
) -> None:
    """Before: the error blamed "standard output" after the annotations were printed."""
    (tmp_path / "dir").mkdir()
    target = tmp_path / where
    proc = run("audit", str(SAMPLE), "--format", "github", env={"GITHUB_STEP_SUMMARY": str(target)})
    assert proc.returncode == 2, proc
    assert proc.stderr == f"cancelwire: error: {target}: cannot write the GITHUB_STEP_SUMMARY: {problem}\n"
    assert proc.stdout == ""


def test_a_step_summary_fifo_nobody_reads_is_refused_not_waited_on(fifo: Path) -> None:
    proc = run("audit", str(SAMPLE), "--format", "github", env={"GITHUB_STEP_SUMMARY": str(fifo)})
    assert proc.returncode == 2, proc
    assert proc.stderr.splitlines() == [
        f"cancelwire: error: {fifo}: cannot write the GITHUB_STEP_SUMMARY: it is a FIFO that nobody reads",
        NO_READER,
    ]


def test_a_full_step_summary_names_it_not_standard_output() -> None:
    proc = run("audit", str(SAMPLE), "--format", "github", env={"GITHUB_STEP_SUMMARY": "/dev/full"})
    assert proc.returncode == 2, proc
    assert (
        proc.stderr == "cancelwire: error: /dev/full: cannot write the GITHUB_STEP_SUMMARY: No space left on device\n"
    )
    assert proc.stdout.startswith("::error ")  # the annotations themselves went out


# -- baselines ----------------------------------------------------------------------------------


def test_a_run_that_read_nothing_keeps_the_old_baseline(tmp_path: Path) -> None:
    """Before, it replaced the accepted issues with an empty baseline (and said it wrote 0)."""
    old = tmp_path / "baseline.jsonl"
    made = run("audit", str(SAMPLE), "--write-baseline", str(old))
    assert made.returncode == 1, made
    before = old.read_bytes()
    missing = tmp_path / "gone.jsonl"
    proc = run("audit", str(missing), "--write-baseline", str(old))
    assert proc.returncode == 2, proc
    assert proc.stderr.splitlines() == [
        f"cancelwire: error: {missing}: no such file or directory",
        "cancelwire: error: nothing could be read: none of the 1 input(s) was readable",
        f"cancelwire: {old}: not written, since nothing could be read",
    ]
    assert old.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["baseline.jsonl"]


@pytest.mark.parametrize("version", ["true", "1.0"])
def test_a_baseline_version_must_be_the_integer(tmp_path: Path, version: str) -> None:
    """`true == 1` and `1.0 == 1` in Python: both were taken for format 1."""
    path = tmp_path / "baseline.jsonl"
    path.write_text(f'{{"cancelwire_baseline": {version}}}\n')
    proc = run("audit", str(SAMPLE), "--baseline", str(path))
    assert proc.returncode == 2, proc
    found = "True" if version == "true" else "1.0"
    assert proc.stderr.splitlines() == [
        f"cancelwire: error: {path}:1: not a cancelwire baseline of format 1 (found {found})",
        "  hint: upgrade cancelwire",
    ]


@pytest.mark.parametrize("inside", [".", "audits", "audits/nightly"])
def test_a_dataset_inside_an_input_folder_is_refused(tmp_path: Path, inside: str) -> None:
    """Before, the Parquet files went into the folder being audited, and its next audit walked them."""
    folder = tmp_path / "recordings"
    folder.mkdir()
    (folder / "session.jsonl").write_bytes(SAMPLE.read_bytes())
    dataset = folder / inside
    proc = run("audit", str(folder), "--dataset", str(dataset))
    assert proc.returncode == 2, proc
    assert proc.stderr.splitlines() == [
        f"cancelwire: error: {dataset}: --dataset is inside an input folder ({folder})",
        "  hint: write it somewhere else; cancelwire never writes into what it audits",
    ]
    assert sorted(p.name for p in folder.iterdir()) == ["session.jsonl"]


@pytest.mark.parametrize("command", [["audit", str(SAMPLE)], ["diff", str(SAMPLE), str(SAMPLE)]])
def test_an_empty_output_name_is_a_usage_error_not_standard_output(command: list[str]) -> None:
    """`-o "$REPORT"` with the variable unset printed the report and wrote no file."""
    proc = run(*command, "-o", "")
    assert proc.returncode == 2, proc
    assert proc.stderr.splitlines()[-1] == (
        f"cancelwire {command[0]}: error: argument -o/--output: needs a file name (or - for standard output), "
        "not an empty one"
    )
    assert proc.stdout == ""


def test_a_device_that_is_not_there_is_named_as_such_not_as_a_fifo() -> None:
    """/dev/tty without a controlling terminal answers ENXIO, as a FIFO with no reader does."""
    proc = run("audit", str(SAMPLE), "-o", "/dev/tty", start_new_session=True, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2, proc
    assert proc.stderr == "cancelwire: error: /dev/tty: cannot write the -o output: No such device or address\n"


def test_an_output_name_ending_in_a_slash_is_a_usage_error(tmp_path: Path) -> None:
    """`-o reports/` wrote a file named `reports` (Path drops the slash)."""
    proc = run("audit", str(SAMPLE), "-o", f"{tmp_path}/reports/")
    assert proc.returncode == 2, proc
    assert proc.stderr.splitlines()[-1] == (
        f"cancelwire audit: error: argument -o/--output: needs a file name, not a folder: '{tmp_path}/reports/'"
    )
    assert list(tmp_path.iterdir()) == []
