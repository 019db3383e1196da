#!/usr/bin/env python3
"""Robustness summary: every reader fed seeded mutations of its real samples, each in its own process.

    .venv/bin/python scripts/robustness.py [--inputs 100] [--seed 7] [--readers ndjson,pcap]
                                           [--timeout 30] [--memory-mb 2048] [--jobs 2] [--keep DIR]

Not a test: it prints a table (docs/robustness.md says what each column means and keeps the figures).
The mutations are tests/fuzzing.py's (bit flips, truncation, duplication, splices, half lines, control
bytes, deep nesting, huge numbers, lone surrogates, BOM, CR-only, CRLF, gzip whole/cut/trailing), one to
three in a row. Each input runs in a fresh `python` with a wall-clock timeout and an RLIMIT_AS cap: the
child reads it with the reader (forced with --input-format) and then runs `cancelwire audit` on it in
process. Per reader:

- crashes: the audit exited 3 (internal error) or anything escaped (a traceback), or the child died;
- hangs: the child did not finish within --timeout seconds;
- raw control: the text report or stderr held a raw control byte (terminal injection);
- intact lost: lines the mutation did not touch, that gave a message before, now cited by no event at all;
- damaged unsaid: lines the mutation touched, mentioning "jsonrpc", cited by no event (neither a message
  nor an anomaly): input that vanished without a word;
- max RSS: the largest peak resident memory of a child (its own getrusage; or tshark's, if larger).
`--keep DIR` copies every failing input there, named by reader, class and seed, for tests/corpus/.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the mutations are shared with the fuzz tests

from fuzzing import READER_SAMPLES, Mutated, mutate, sample_bytes  # noqa: E402

CHILD = r"""
import contextlib, io, json, sys, traceback
from pathlib import Path
reader_name, path = sys.argv[1], Path(sys.argv[2])
out = {"cited": [], "messages": [], "status": None, "crash": None, "control": False}
try:
    from cancelwire.errors import InputError
    from cancelwire.model import MessageEvent
    from cancelwire.readers import READERS, InputSource, ReadOptions
    reader = next(r for r in READERS if r.name == reader_name)
    cited, messages = set(), set()
    try:
        for e in reader.read(InputSource(path.name, path), ReadOptions()):
            line = e.origin.line
            if line is not None:
                cited.add(line)
                if isinstance(e, MessageEvent):
                    messages.add(line)
    except InputError:
        pass
    out["cited"], out["messages"] = sorted(cited), sorted(messages)
    from cancelwire.cli.main import main
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        out["status"] = main(["audit", str(path), "--input-format", reader_name])
    text = stdout.getvalue() + stderr.getvalue()
    out["control"] = any(c in text for c in [chr(n) for n in [*range(0, 9), *range(11, 32), 127]])
    if "Traceback" in stderr.getvalue() or out["status"] == 3:
        out["crash"] = "exit 3: " + stderr.getvalue()[-300:]
except BaseException as exc:
    out["crash"] = "".join(traceback.format_exception_only(type(exc), exc)).strip()[-300:]
import resource
own, children = (resource.getrusage(w).ru_maxrss for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
out["rss_kb"] = max(own, children)  # tshark's, on captures
print(json.dumps(out))
"""


@dataclass
class Tally:
    tried: int = 0
    crashes: int = 0
    hangs: int = 0
    control: int = 0
    intact_lost: int = 0
    damaged_unsaid: int = 0
    max_rss_kb: int = 0
    kinds: Counter[str] = field(default_factory=Counter)


@dataclass(frozen=True)
class Outcome:
    crash: str | None
    hang: bool
    control: bool
    cited: frozenset[int]
    messages: frozenset[int]
    rss_kb: int


def run_child(reader: str, path: Path, timeout: float, memory_mb: int) -> Outcome:
    def limit() -> None:
        cap = memory_mb << 20
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, reader, str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=limit,
        cwd=tempfile.gettempdir(),  # no settings file found by walking up from the checkout
    )
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return Outcome(None, True, False, frozenset(), frozenset(), 0)
    try:
        out = json.loads(stdout.decode().strip().splitlines()[-1])
    except (IndexError, ValueError):
        died = f"child died (status {proc.returncode}): {stderr.decode(errors='replace')[-200:]}"
        return Outcome(died, False, False, frozenset(), frozenset(), 0)
    cited, messages = frozenset(out["cited"]), frozenset(out["messages"])
    return Outcome(out["crash"], False, out["control"], cited, messages, out["rss_kb"])


def line_starts(data: bytes) -> list[int]:
    return [0, *(i + 1 for i in range(len(data)) if data[i] == 10)]


def intact_lines(original: bytes, case: Mutated) -> dict[int, int]:
    """Lines of the mutant the mutation did not touch → their number in the original.

    Bytes before `damaged` are the original's, and so are the bytes after it (shifted); a line is
    intact when it and the newline before it lie wholly on one side of the damaged range.
    """
    start, end = case.damaged
    data, shift = case.data, len(original) - len(case.data)
    if (start, end) == (0, len(data)):
        return {}
    intact: dict[int, int] = {}
    for number, at in enumerate(line_starts(data), 1):
        stop = data.find(b"\n", at)
        stop = len(data) if stop < 0 else stop
        if stop < start and stop < len(data):
            intact[number] = number
        elif at > end and at < len(data):
            intact[number] = original.count(b"\n", 0, at + shift) + 1
    return intact


def damaged_unsaid(case: Mutated, cited: frozenset[int]) -> int:
    start, end = case.damaged
    data, count = case.data, 0
    for number, at in enumerate(line_starts(data), 1):
        stop = data.find(b"\n", at)
        stop = len(data) if stop < 0 else stop
        if at <= end and stop >= start and b"jsonrpc" in data[at:stop] and number not in cited:
            count += 1
    return count


@dataclass(frozen=True)
class Job:
    reader: str
    seed: int
    sample: int
    case: Mutated


def jobs_for(reader: str, inputs: int, seed: int) -> list[Job]:
    samples = sample_bytes(reader)
    jobs = []
    for n in range(inputs):
        rng = random.Random(f"{seed}/{reader}/{n}")
        index = rng.randrange(len(samples))
        donor = samples[rng.randrange(len(samples))]
        jobs.append(Job(reader, n, index, mutate(samples[index], rng, donor, rng.randint(1, 3))))
    return jobs


def suffix(reader: str) -> str:
    return ".pcapng" if reader == "pcap" else ".log"


def run_job(job: Job, originals: dict[tuple[str, int], Outcome], args: argparse.Namespace, tally: Tally) -> None:
    with tempfile.TemporaryDirectory(prefix="cancelwire-robust-") as tmp:
        path = Path(tmp) / f"input{suffix(job.reader)}"
        path.write_bytes(job.case.data)
        outcome = run_child(job.reader, path, args.timeout, args.memory_mb)
        failed = []
        tally.tried += 1
        tally.max_rss_kb = max(tally.max_rss_kb, outcome.rss_kb)
        if outcome.crash:
            tally.crashes += 1
            tally.kinds[outcome.crash.splitlines()[-1][:120]] += 1
            failed.append("crash")
        if outcome.hang:
            tally.hangs += 1
            failed.append("hang")
        if outcome.control:
            tally.control += 1
            failed.append("control")
        if job.reader != "pcap" and not outcome.hang:
            original = originals[(job.reader, job.sample)]
            lost = [
                n
                for n, was in intact_lines(sample_bytes(job.reader)[job.sample], job.case).items()
                if was in original.messages and n not in outcome.cited
            ]
            unsaid = damaged_unsaid(job.case, outcome.cited)
            tally.intact_lost += len(lost)
            tally.damaged_unsaid += unsaid
            if lost or unsaid:
                failed.append("drop")
        if failed and args.keep:
            keep = Path(args.keep) / job.reader
            keep.mkdir(parents=True, exist_ok=True)
            name = f"{'-'.join(failed)}-{job.case.op}-seed{args.seed}-{job.seed}{suffix(job.reader)}"
            shutil.copyfile(path, keep / name)


def original_outcomes(readers: list[str], args: argparse.Namespace) -> dict[tuple[str, int], Outcome]:
    out = {}
    for reader in readers:
        for index, data in enumerate(sample_bytes(reader)):
            with tempfile.TemporaryDirectory(prefix="cancelwire-robust-") as tmp:
                path = Path(tmp) / f"input{suffix(reader)}"
                path.write_bytes(data)
                out[(reader, index)] = run_child(reader, path, args.timeout, args.memory_mb)
    return out


def table(tallies: dict[str, Tally], seconds: float, args: argparse.Namespace) -> str:
    head = ("reader", "inputs", "crashes", "hangs", "raw control", "intact lost", "damaged unsaid", "max RSS MB")
    rows = [head, tuple("---" for _ in head)]
    for reader, t in tallies.items():
        rss = f"{t.max_rss_kb / 1024:.0f}"
        rows.append((reader, *map(str, (t.tried, t.crashes, t.hangs, t.control, t.intact_lost, t.damaged_unsaid)), rss))
    lines = ["| " + " | ".join(row) + " |" for row in rows]
    lines.append("")
    lines.append(
        f"seed {args.seed}, {args.inputs} inputs per reader, timeout {args.timeout:g} s, "
        f"RLIMIT_AS {args.memory_mb} MB, {args.jobs} at a time, {seconds:.0f} s in all"
    )
    for reader, t in tallies.items():
        for kind, count in t.kinds.most_common():
            lines.append(f"  {reader}: {count} x {kind}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--inputs", type=int, default=100, help="mutated inputs per reader (default 100)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--readers", default=",".join(READER_SAMPLES), help="comma-separated reader names")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds before an input counts as a hang")
    parser.add_argument("--memory-mb", type=int, default=2048, help="RLIMIT_AS of each child")
    parser.add_argument("--jobs", type=int, default=2, help="children at a time")
    parser.add_argument("--keep", metavar="DIR", help="copy each failing input here")
    args = parser.parse_args(argv)
    readers = args.readers.split(",")
    started = time.monotonic()
    originals = original_outcomes(readers, args)
    tallies = {reader: Tally() for reader in readers}
    jobs = [job for reader in readers for job in jobs_for(reader, args.inputs, args.seed)]
    with ThreadPoolExecutor(args.jobs) as pool:
        for done in pool.map(lambda job: run_job(job, originals, args, tallies[job.reader]), jobs):
            del done
    print(table(tallies, time.monotonic() - started, args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
