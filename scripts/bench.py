#!/usr/bin/env python3
"""Speed and memory benchmark of `cancelwire audit` against the fastest possible floor.

    .venv/bin/python scripts/bench.py stdio [--size-gb 1.0] [--scaling] [--scaling-sizes 0.25,1.0]
                                            [--cancelled 0.125]   (the heavy bench: 1 call in 8 cancelled)
                                            [--format json|text]  (the audit's report, default json)
    .venv/bin/python scripts/bench.py pcap [--packets 200000]
    .venv/bin/python scripts/bench.py all
    .venv/bin/python scripts/bench.py profile [--size-gb 0.1] [--top 30]
    .venv/bin/python scripts/bench.py fleet [--recordings 1000] [--repeat 3]     (see bench_fleet.py)
    .venv/bin/python scripts/bench.py report [--repeat 3]     (the HTML report of a large audit; bench_report.py)
    .venv/bin/python scripts/bench.py ab --base OTHER/.venv/bin/python [--size-gb 0.1] [--packets 200000]
                                         (this checkout against another one, alternately; bench_ab.py)

Not a test: it prints numbers. Generated inputs are cached under bench-data/ (git-ignored), keyed by
size, so only the first run pays for them. Every measured command runs in a fresh subprocess; its peak
RSS comes from `os.wait4` (the child's own rusage) and, for `cancelwire audit`, from a tiny wrapper that
reports the audit process's own peak RSS apart from its children's (tshark, on captures).

stdio: one big cancelwire transcript (many sessions-worth of traffic one after another: initialize,
tools/list with readOnlyHint tools, tools/call with progress, pings, stderr, a few percent cancelled
with silence / late results / verifying reads). The floor is a bare loop that reads it line by line
and parses every record and its inner `line` with orjson.

pcap: real loopback HTTP traffic (Streamable-HTTP shaped: POSTs of JSON-RPC, SSE responses with
progress and results, some cancelled by closing the stream) between an asyncio server and client in
this script, captured by `tshark -i lo`. The floor is tshark's bare pass over the capture.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import io
import json
import os
import pstats
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import orjson
from loopback import loopback_capture  # scripts/ is on the path when this script runs

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench-data"
PY = sys.executable
TSHARK = shutil.which("tshark") or "/usr/bin/tshark"
GB = 1 << 30
MB = 1 << 20

STDIO_RATIO_TARGET = 3.0
STDIO_RATIO_AIM = 1.5
RSS_TARGET_MB = 300.0


# ---------------------------------------------------------------------------------------------- running


@dataclass(frozen=True, slots=True)
class Run:
    """One measured subprocess."""

    label: str
    wall: float
    rss_mb: float
    """Peak RSS of the process tree as `wait4` reports it (the child and its waited-for children)."""
    returncode: int
    self_rss_mb: float | None = None
    """Peak RSS of the audit process itself (wrapper report), without its children."""
    children_rss_mb: float | None = None
    """Peak RSS of the audit's own children (tshark), from the wrapper."""
    stderr: str = ""
    cpu: float = 0.0
    """User + system CPU seconds of the process tree (steadier than wall time on a shared machine)."""

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def measure(
    label: str,
    argv: list[str],
    *,
    stdout: int | None = subprocess.DEVNULL,
    timeout: float | None = None,
    report: Path | None = None,
    cwd: Path = ROOT,
) -> Run:
    """Run argv in a fresh process (in CWD); wall time and peak RSS (kB from wait4 → MB)."""
    err = tempfile.TemporaryFile()  # noqa: SIM115 (closed below, after the child is reaped)
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=stdout, stderr=err, stdin=subprocess.DEVNULL, cwd=cwd)
    deadline = None if timeout is None else start + timeout
    killed = False
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if deadline is not None and time.perf_counter() > deadline and not killed:
            proc.send_signal(signal.SIGKILL)
            killed = True
        time.sleep(0.01)
    wall = time.perf_counter() - start
    proc.returncode = -9 if killed else os.waitstatus_to_exitcode(status)
    err.seek(0)
    text = err.read().decode("utf-8", "replace")
    err.close()
    self_rss = children_rss = None
    if report is not None and report.exists():
        with contextlib.suppress(ValueError, OSError):
            values = json.loads(report.read_text())
            self_rss, children_rss = values["self_kb"] / 1024, values["children_kb"] / 1024
        report.unlink(missing_ok=True)
    cpu = usage.ru_utime + usage.ru_stime
    return Run(label, wall, usage.ru_maxrss / 1024, proc.returncode, self_rss, children_rss, text, cpu)


# Runs exactly what the `cancelwire` console script runs (cancelwire.cli.main.main), then writes its own and its
# children's peak RSS to the file named in CANCELWIRE_BENCH_REPORT.
AUDIT_WRAPPER = """
import json, os, resource, sys
from cancelwire.cli.main import main
try:
    rc = main(sys.argv[1:])
finally:
    with open(os.environ["CANCELWIRE_BENCH_REPORT"], "w") as fh:
        json.dump({"self_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                   "children_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}, fh)
sys.exit(rc)
"""


def measure_audit(path: Path, timeout: float | None, fmt: str = "json") -> Run:
    report = Path(tempfile.mkstemp(prefix="cancelwire-bench-", suffix=".json")[1])
    os.environ["CANCELWIRE_BENCH_REPORT"] = str(report)
    argv = [PY, "-c", AUDIT_WRAPPER, "audit", str(path), "--format", fmt, "-o", "/dev/null", "--fail-on", "never"]
    return measure("cancelwire audit", argv, timeout=timeout, report=report)


READER_LOOP = """
import sys
from pathlib import Path
from cancelwire.readers import InputSource, ReadOptions
from cancelwire.readers.text.transcript import READER
path = Path(sys.argv[1])
n = 0
for _ in READER.read(InputSource(str(path), path), ReadOptions()):
    n += 1
print(n)
"""

FLOOR_LOOP = """
import sys, orjson
loads = orjson.loads
n = 0
with open(sys.argv[1], "rb") as fh:
    for raw in fh:
        record = loads(raw)
        line = record.get("line")
        if line is not None and record.get("dir") != "stderr":
            loads(line)
            n += 1
print(n)
"""


def fmt_time(seconds: float) -> str:
    return f"{seconds:7.2f} s"


def fmt_rss(run: Run) -> str:
    return f"RSS {run.rss_mb:6.0f} MB"


def status(run: Run) -> str:
    if run.returncode == -9:
        return "  (killed at the time limit)"
    return "" if run.ok else f"  (exit {run.returncode}: {run.stderr.strip()[-300:]})"


# ---------------------------------------------------------------------------------------------- stdio data


@dataclass(frozen=True, slots=True)
class StdioMeta:
    path: Path
    bytes: int
    lines: int
    messages: int
    calls: int
    cancellations: int
    sessions: int


TOOLS = [
    {
        "name": "append_ledger",
        "description": "Append an entry to the ledger after `steps` slow steps.",
        "inputSchema": {
            "type": "object",
            "properties": {"entry": {"type": "string"}, "steps": {"type": "integer"}},
            "required": ["entry", "steps"],
        },
    },
    {
        "name": "send_email",
        "description": "Send an e-mail (side effects).",
        "inputSchema": {"type": "object", "properties": {"to": {"type": "string"}, "body": {"type": "string"}}},
    },
    {
        "name": "write_file",
        "description": "Write a file.",
        "annotations": {"destructiveHint": True},
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}, "text": {"type": "string"}}},
    },
    {
        "name": "count_words",
        "description": "Count the words of `text`, slowly; changes nothing.",
        "annotations": {"readOnlyHint": True},
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}, "steps": {"type": "integer"}}},
    },
    {
        "name": "read_ledger",
        "description": "The ledger's entries, oldest first.",
        "annotations": {"readOnlyHint": True},
        "inputSchema": {"type": "object", "properties": {}},
    },
    {
        "name": "search_docs",
        "description": "Full-text search.",
        "annotations": {"readOnlyHint": True},
        "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}},
    },
]
SIDE_EFFECTING = ["append_ledger", "send_email", "write_file"]
READ_ONLY = ["count_words", "search_docs"]
WORDS = [
    "lorem",
    "ipsum",
    "dolor",
    "sit",
    "amet",
    "consectetur",
    "adipiscing",
    "elit",
    "sed",
    "do",
    "eiusmod",
    "tempor",
    "incididunt",
    "ut",
    "labore",
    "et",
    "dolore",
    "magna",
    "aliqua",
    "order",
    "ledger",
    "invoice",
    "customer",
    "shipment",
    "refund",
]
PROTOCOL = "2025-06-18"


CANCELLED = 0.03
"""The share of `tools/call` cancelled by default; `--cancelled 0.125` is the heavy bench (1 call in 8)."""


def stdio_path(size_gb: float, cancelled: float = CANCELLED) -> Path:
    heavy = "" if cancelled == CANCELLED else f"-c{cancelled:g}"
    return DATA / f"stdio-{size_gb:g}gb{heavy}.jsonl"


def _meta_path(path: Path) -> Path:
    return path.with_suffix(".meta.json")


def ensure_stdio(size_gb: float, cancelled: float = CANCELLED) -> StdioMeta:
    path = stdio_path(size_gb, cancelled)
    meta = _meta_path(path)
    if path.exists() and meta.exists():
        values = json.loads(meta.read_text())
        if values.get("bytes") == path.stat().st_size:
            return StdioMeta(path=path, **{k: v for k, v in values.items() if k != "path"})
    DATA.mkdir(exist_ok=True)
    print(f"generating {path.relative_to(ROOT)} ({size_gb:g} GB) ...", flush=True)
    start = time.perf_counter()
    result = generate_stdio(path, int(size_gb * GB), cancelled)
    meta.write_text(
        json.dumps(
            {
                "bytes": result.bytes,
                "lines": result.lines,
                "messages": result.messages,
                "calls": result.calls,
                "cancellations": result.cancellations,
                "sessions": result.sessions,
            }
        )
    )
    print(f"  generated in {time.perf_counter() - start:.1f} s", flush=True)
    return result


class _Writer:
    """Transcript lines into big buffers; one orjson call per message (the inner line as a JSON string)."""

    def __init__(self, fh: io.BufferedWriter, start_ts: float) -> None:
        self.fh = fh
        self.parts: list[bytes] = []
        self.pending = 0
        self.written = 0
        self.lines = 0
        self.messages = 0
        self.ts = start_ts
        self.dumps = orjson.dumps

    def line(self, direction: bytes, inner: bytes, gap: float) -> None:
        self.ts += gap
        data = b'{"ts":%.6f,"dir":"%s","line":%s}\n' % (self.ts, direction, self.dumps(inner.decode()))
        self.parts.append(data)
        self.pending += len(data)
        self.lines += 1
        if direction != b"stderr":
            self.messages += 1
        if self.pending >= 8 * MB:
            self.flush()

    def raw(self, data: bytes) -> None:
        self.parts.append(data)
        self.pending += len(data)
        self.lines += 1

    def flush(self) -> None:
        self.fh.write(b"".join(self.parts))
        self.written += self.pending
        self.parts.clear()
        self.pending = 0


def generate_stdio(path: Path, target: int, cancelled_share: float = CANCELLED) -> StdioMeta:
    rng = random.Random(20260728)
    rand = rng.random
    randint = rng.randint
    choice = rng.choice
    tmp = path.with_suffix(".tmp")
    tools_json = orjson.dumps({"tools": TOOLS})
    texts = [" ".join(rng.choice(WORDS) for _ in range(n)).encode() for n in (4, 12, 30, 60, 120)]
    calls = cancels = sessions = 0
    next_id = 1
    with tmp.open("wb") as fh:
        w = _Writer(fh, 1_796_000_000.0)
        w.raw(
            orjson.dumps(
                {
                    "cancelwire_transcript": 1,
                    "transport": "stdio",
                    "vantage": "proxy",
                    "command": ["python", "bench_server.py"],
                    "ts": w.ts,
                }
            )
            + b"\n"
        )
        while w.written + w.pending < target:
            sessions += 1
            # --- handshake
            rid = next_id
            next_id += 1
            w.line(
                b"c2s",
                b'{"jsonrpc":"2.0","id":%d,"method":"initialize","params":{"protocolVersion":"%s",'
                b'"capabilities":{},"clientInfo":{"name":"bench-client","version":"1.0"}}}' % (rid, PROTOCOL.encode()),
                0.5,
            )
            w.line(
                b"s2c",
                b'{"jsonrpc":"2.0","id":%d,"result":{"protocolVersion":"%s","capabilities":'
                b'{"tools":{"listChanged":true},"resources":{}},"serverInfo":{"name":"bench-server",'
                b'"version":"1.0"}}}' % (rid, PROTOCOL.encode()),
                0.05,
            )
            w.line(b"c2s", b'{"jsonrpc":"2.0","method":"notifications/initialized"}', 0.001)
            rid = next_id
            next_id += 1
            w.line(b"c2s", b'{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":{}}' % rid, 0.001)
            w.line(b"s2c", b'{"jsonrpc":"2.0","id":%d,"result":%s}' % (rid, tools_json), 0.002)
            w.line(b"stderr", b"INFO server ready", 0.001)
            # --- work
            for _ in range(randint(300, 900)):
                r = rand()
                rid = next_id
                next_id += 1
                if r < 0.03:
                    w.line(b"c2s", b'{"jsonrpc":"2.0","id":%d,"method":"ping"}' % rid, 0.2)
                    w.line(b"s2c", b'{"jsonrpc":"2.0","id":%d,"result":{}}' % rid, 0.0004)
                    continue
                if r < 0.04:
                    w.line(b"stderr", b"DEBUG handled %d requests" % rid, 0.001)
                calls += 1
                tool = (choice(SIDE_EFFECTING) if rand() < 0.6 else choice(READ_ONLY)).encode()
                text = choice(texts)
                steps = randint(1, 5)
                w.line(
                    b"c2s",
                    b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":'
                    b'{"entry":"%s","steps":%d},"_meta":{"progressToken":%d}}}' % (rid, tool, text, steps, rid),
                    0.01 + rand() * 0.05,
                )
                cancelled = rand() < cancelled_share
                stop = randint(1, steps) if cancelled else steps
                for step in range(stop):
                    w.line(
                        b"s2c",
                        b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%d,'
                        b'"progress":%d,"total":%d,"message":"step %d of %d"}}' % (rid, step, steps, step + 1, steps),
                        0.02 + rand() * 0.02,
                    )
                if cancelled:
                    cancels += 1
                    w.line(
                        b"c2s",
                        b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d,'
                        b'"reason":"caller cancelled"}}' % rid,
                        0.01,
                    )
                    mode = rand()
                    if mode < 0.4:
                        continue  # silence: the server drops it
                    if mode < 0.7:  # a late result: crossing (soon) or a violation (long after)
                        gap = 0.002 if rand() < 0.5 else 0.3
                        w.line(
                            b"s2c",
                            b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"%s"}],'
                            b'"isError":false}}' % (rid, text),
                            gap,
                        )
                        continue
                    read = next_id  # silence, then a read that could verify the effect
                    next_id += 1
                    w.line(
                        b"c2s",
                        b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"read_ledger",'
                        b'"arguments":{}}}' % read,
                        0.5,
                    )
                    w.line(
                        b"s2c",
                        b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"%s"}],'
                        b'"structuredContent":{"result":["%s"]},"isError":false}}' % (read, text, text),
                        0.003,
                    )
                    continue
                w.line(
                    b"s2c",
                    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"%s"}],'
                    b'"structuredContent":{"result":"%s"},"isError":false}}' % (rid, text, text[:40]),
                    0.003,
                )
        w.raw(b'{"ts":%.6f,"event":"process-exited","status":0}\n' % (w.ts + 0.1))
        w.flush()
    tmp.replace(path)
    return StdioMeta(path, path.stat().st_size, w.lines, w.messages, calls, cancels, sessions)


# ---------------------------------------------------------------------------------------------- stdio bench


def run_floor(path: Path, timeout: float | None) -> Run:
    return measure("floor (orjson parse loop)", [PY, "-c", FLOOR_LOOP, str(path)], timeout=timeout)


def print_ratio(ours: Run, floor: Run, target: float, aim: float | None) -> None:
    ratio = ours.wall / floor.wall if floor.wall > 0 else float("inf")
    meets = "ok" if ratio <= target and ours.ok else "MISSED"
    aim_text = f"; aim {aim:g}x" if aim else ""
    rss = ours.self_rss_mb if ours.self_rss_mb is not None else ours.rss_mb
    mem = "ok" if rss < RSS_TARGET_MB else "MISSED"
    print(
        f"  {'ratio':<30}{ratio:7.2f}x  (target <= {target:g}x{aim_text}): {meets}   "
        f"memory target < {RSS_TARGET_MB:.0f} MB: {mem}"
    )


def bench_stdio(
    size_gb: float, timeout: float | None, repeat: int, cancelled: float, fmt: str = "json"
) -> tuple[StdioMeta, Run]:
    """Floor and audit `repeat` times, interleaved (a load spike on a shared machine hits both);
    the ratio is taken between the fastest of each, and the per-pair ratios show the spread."""
    meta = ensure_stdio(size_gb, cancelled)
    print(
        f"stdio  file {meta.bytes / GB:.2f} GB ({meta.path.relative_to(ROOT)}), {meta.messages / 1e6:.2f}M messages, "
        f"{meta.calls / 1e3:.0f}k tools/call, {meta.cancellations / 1e3:.1f}k cancellations, "
        f"{meta.sessions} sessions-worth",
        flush=True,
    )
    floors: list[Run] = []
    audits: list[Run] = []
    for index in range(repeat):
        floors.append(run_floor(meta.path, timeout))
        audits.append(measure_audit(meta.path, timeout, fmt))
        if repeat > 1:
            floor, audit = floors[-1], audits[-1]
            print(
                f"  run {index + 1}/{repeat}: floor {floor.wall:.2f} s, audit {audit.wall:.2f} s "
                f"({audit.wall / max(floor.wall, 1e-9):.2f}x; CPU {floor.cpu:.2f} s vs {audit.cpu:.2f} s, "
                f"{audit.cpu / max(floor.cpu, 1e-9):.2f}x)",
                flush=True,
            )
    floor_run = min(floors, key=lambda r: r.wall)
    ours = min(audits, key=lambda r: r.wall)
    best = f"   (fastest of {repeat})" if repeat > 1 else ""
    print(
        f"  {floor_run.label:<30}{fmt_time(floor_run.wall)}   {fmt_rss(floor_run)}{status(floor_run)}{best}", flush=True
    )
    reader = measure("transcript reader alone", [PY, "-c", READER_LOOP, str(meta.path)], timeout=timeout)
    print(
        f"  {reader.label:<30}{fmt_time(reader.wall)}   {fmt_rss(reader)}{status(reader)}"
        f"   ({reader.wall / max(floor_run.wall, 1e-9):.2f}x the floor)",
        flush=True,
    )
    print(f"  {ours.label:<30}{fmt_time(ours.wall)}   {fmt_rss(ours)}{status(ours)}{best}", flush=True)
    print_ratio(ours, floor_run, STDIO_RATIO_TARGET, STDIO_RATIO_AIM)
    floor_cpu, ours_cpu = min(r.cpu for r in floors), min(r.cpu for r in audits)
    print(
        f"  {'ratio of CPU time':<30}{ours_cpu / max(floor_cpu, 1e-9):7.2f}x  "
        f"({floor_cpu:.2f} s vs {ours_cpu:.2f} s, fastest of each; less sensitive to other load)",
        flush=True,
    )
    return meta, ours


def bench_scaling(
    sizes: list[float], timeout: float | None, done: dict[float, Run], cancelled: float, fmt: str = "json"
) -> None:
    """`done`: audits already measured in this run, by size (not run again)."""
    print(f"stdio  memory scaling over sizes {', '.join(f'{s:g} GB' for s in sizes)}, --format {fmt}", flush=True)
    rows = []
    for size in sizes:
        meta = ensure_stdio(size, cancelled)
        ours = done[size] if size in done else measure_audit(meta.path, timeout, fmt)
        rows.append((meta, ours))
        print(
            f"  {meta.bytes / GB:5.2f} GB {meta.messages / 1e6:6.2f}M msgs   cancelwire audit {fmt_time(ours.wall)}"
            f"   {fmt_rss(ours)}   ({ours.wall / max(meta.bytes / MB, 1e-9) * 1000:.1f} ms/MB){status(ours)}",
            flush=True,
        )
    if len(rows) >= 2:
        (m0, r0), (m1, r1) = rows[0], rows[-1]
        growth = r1.rss_mb / r0.rss_mb if r0.rss_mb else float("inf")
        size_growth = m1.bytes / m0.bytes
        flat = "flat (bounded)" if growth < 1.25 else "GROWS with input size"
        print(
            f"  RSS x{growth:.2f} for input x{size_growth:.1f}: {flat}; "
            f"time x{r1.wall / max(r0.wall, 1e-9):.2f} for input x{size_growth:.1f}",
            flush=True,
        )


# ---------------------------------------------------------------------------------------------- profile


def profile_stdio(size_gb: float, top: int, cancelled: float, capture: Path | None = None) -> None:
    """cProfile of the whole audit (read → reconstruct → engine → report) in this process; of CAPTURE when
    given (read with the default reader), else of the stdio file."""
    from cancelwire.reports.formats import render
    from cancelwire.run.pipeline import AuditOptions, audit

    if capture is not None:
        target = capture
        print(f"profile  cancelwire audit on {capture} ({capture.stat().st_size / MB:.0f} MB)", flush=True)
    else:
        meta = ensure_stdio(size_gb, cancelled)
        target = meta.path
        print(
            f"profile  cancelwire audit on {meta.path.relative_to(ROOT)} ({meta.bytes / MB:.0f} MB, "
            f"{meta.messages / 1e6:.2f}M messages)",
            flush=True,
        )
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    result = audit([str(target)], AuditOptions())
    render(result, "json")
    profiler.disable()
    print(f"  wall under cProfile {time.perf_counter() - start:.2f} s", flush=True)
    out = DATA / f"profile-{target.stem.removeprefix('stdio-')}.prof"
    profiler.dump_stats(out)
    for key in ("tottime", "cumulative"):
        text = io.StringIO()
        stats = pstats.Stats(profiler, stream=text)
        stats.strip_dirs().sort_stats(key).print_stats(top)
        body = text.getvalue()
        body = body[body.find("   ncalls") :] if "   ncalls" in body else body
        print(f"  --- top {top} by {key} (saved: {out.relative_to(ROOT)})")
        print(body.rstrip())


# ---------------------------------------------------------------------------------------------- pcap traffic

PCAP_PROTOCOL = "2025-11-25"
MAX_CAPTURE_SECONDS = 240.0


def _sse_chunk(payload: bytes) -> bytes:
    event = b"event: message\ndata: " + payload + b"\n\n"
    return b"%x\r\n%s\r\n" % (len(event), event)


def _length_and_session(head: bytes, session: bytes) -> tuple[int, bytes]:
    """Content-Length and Mcp-Session-Id of an HTTP head (`session` when it names none)."""
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        lowered = name.strip().lower()
        if lowered == b"content-length":
            length = int(value)
        elif lowered == b"mcp-session-id":
            session = value.strip()
    return length, session


async def _serve_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
                return
            length, session = _length_and_session(head, b"")
            body = await reader.readexactly(length) if length else b""
            message = orjson.loads(body) if body else {}
            method = message.get("method")
            rid = message.get("id")
            if rid is None:  # a notification (initialized, cancelled): accepted, no body
                writer.write(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
                await writer.drain()
                continue
            if method == "tools/call":
                params = message.get("params", {})
                steps = int(params.get("arguments", {}).get("steps", 3))
                token = params.get("_meta", {}).get("progressToken")
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                    b"Transfer-Encoding: chunked\r\nMcp-Session-Id: " + session + b"\r\n\r\n"
                )
                for step in range(steps):
                    await asyncio.sleep(0.002)
                    writer.write(
                        _sse_chunk(
                            orjson.dumps(
                                {
                                    "jsonrpc": "2.0",
                                    "method": "notifications/progress",
                                    "params": {"progressToken": token, "progress": step, "total": steps},
                                }
                            )
                        )
                    )
                    await writer.drain()
                    if reader.at_eof():
                        return
                result = {"content": [{"type": "text", "text": "done " * 8}], "isError": False}
                writer.write(_sse_chunk(orjson.dumps({"jsonrpc": "2.0", "id": rid, "result": result})) + b"0\r\n\r\n")
                await writer.drain()
                continue
            headers = b""
            if method == "initialize":
                session = b"s-%d-%d" % (os.getpid(), random.getrandbits(48))
                headers = b"Mcp-Session-Id: " + session + b"\r\n"
                result = {
                    "protocolVersion": PCAP_PROTOCOL,
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "bench-http-server", "version": "1.0"},
                }
            elif method == "tools/list":
                result = {"tools": TOOLS}
            else:
                result = {}
            out = orjson.dumps({"jsonrpc": "2.0", "id": rid, "result": result})
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n%sContent-Length: %d\r\n\r\n%s"
                % (headers, len(out), out)
            )
            await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        return
    finally:
        with contextlib.suppress(Exception):
            writer.close()


async def _server_main(port: int) -> None:
    server = await asyncio.start_server(_serve_connection, "127.0.0.1", port, backlog=512)
    print("READY", flush=True)
    async with server:
        await server.serve_forever()


class _Client:
    """One keep-alive connection of the benchmark client."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def connect(self) -> None:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        sock = self.writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            with contextlib.suppress(Exception):
                await self.writer.wait_closed()
        self.reader = self.writer = None

    async def post(self, message: dict[str, object], session: bytes) -> tuple[bytes, asyncio.StreamReader]:
        if self.writer is None:
            await self.connect()
        assert self.writer is not None and self.reader is not None
        body = orjson.dumps(message)
        extra = b"Mcp-Session-Id: " + session + b"\r\n" if session else b""
        self.writer.write(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: %s\r\n%s"
            b"Content-Length: %d\r\n\r\n%s" % (self.port, PCAP_PROTOCOL.encode(), extra, len(body), body)
        )
        await self.writer.drain()
        head = await self.reader.readuntil(b"\r\n\r\n")
        return head, self.reader

    async def simple(self, message: dict[str, object], session: bytes) -> bytes:
        """POST and read a Content-Length response; returns the session id header if any."""
        head, reader = await self.post(message, session)
        length, sid = _length_and_session(head, session)
        if length:
            await reader.readexactly(length)
        return sid


async def _read_chunk(reader: asyncio.StreamReader) -> bytes | None:
    size = int((await reader.readuntil(b"\r\n")).strip(), 16)
    if size == 0:
        await reader.readexactly(2)
        return None
    data = await reader.readexactly(size + 2)
    return data[:-2]


@dataclass(slots=True)
class _Counts:
    calls: int = 0
    cancels: int = 0
    connections: int = 0
    sessions: int = 0


async def _client_worker(
    port: int, rng: random.Random, counts: _Counts, target_calls: int, deadline: float, next_id: list[int]
) -> None:
    def new_id() -> int:
        next_id[0] += 1
        return next_id[0]

    while counts.calls < target_calls and time.monotonic() < deadline:
        conn = _Client(port)
        counts.connections += 1
        counts.sessions += 1
        session = await conn.simple(
            {
                "jsonrpc": "2.0",
                "id": new_id(),
                "method": "initialize",
                "params": {
                    "protocolVersion": PCAP_PROTOCOL,
                    "capabilities": {},
                    "clientInfo": {"name": "bench-http-client", "version": "1.0"},
                },
            },
            b"",
        )
        await conn.simple({"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
        await conn.simple({"jsonrpc": "2.0", "id": new_id(), "method": "tools/list"}, session)
        for _ in range(rng.randint(20, 80)):
            if counts.calls >= target_calls or time.monotonic() > deadline:
                break
            if rng.random() < 0.1:  # a new connection now and then (keep-alive otherwise)
                await conn.close()
                counts.connections += 1
            if rng.random() < 0.05:
                await conn.simple({"jsonrpc": "2.0", "id": new_id(), "method": "ping"}, session)
                continue
            rid = new_id()
            tool = rng.choice(SIDE_EFFECTING) if rng.random() < 0.6 else rng.choice(READ_ONLY)
            steps = rng.randint(1, 4)
            counts.calls += 1
            _, reader = await conn.post(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "method": "tools/call",
                    "params": {
                        "name": tool,
                        "arguments": {"entry": f"order-{rid}", "steps": steps},
                        "_meta": {"progressToken": rid},
                    },
                },
                session,
            )
            cancel = rng.random() < 0.05
            if cancel:
                counts.cancels += 1
                await _read_chunk(reader)  # one progress event, then give up on it
                if rng.random() < 0.5:  # also POST the cancel notification on another connection
                    side = _Client(port)
                    counts.connections += 1
                    await side.simple(
                        {
                            "jsonrpc": "2.0",
                            "method": "notifications/cancelled",
                            "params": {"requestId": rid, "reason": "user cancelled"},
                        },
                        session,
                    )
                    await side.close()
                await conn.close()  # closing the stream: the cancel on the wire
                counts.connections += 1
                continue
            while await _read_chunk(reader) is not None:
                pass
        await conn.close()


async def _client_main(port: int, target_calls: int, seconds: float, workers: int) -> _Counts:
    counts = _Counts()
    deadline = time.monotonic() + seconds
    next_id = [0]
    tasks = [_client_worker(port, random.Random(i), counts, target_calls, deadline, next_id) for i in range(workers)]
    results = await asyncio.gather(*tasks, return_exceptions=True)
    errors = [r for r in results if isinstance(r, BaseException)]
    if errors:
        print(f"  (client: {len(errors)} worker(s) ended with {errors[0]!r})", flush=True)
    return counts


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def count_frames(path: Path) -> int:
    out = subprocess.run(
        [TSHARK, "-r", str(path), "-n", "-T", "fields", "-e", "frame.number"], capture_output=True, check=False
    )
    return out.stdout.count(b"\n")


def capture_http(out: Path, target_calls: int, workers: int) -> _Counts:
    port = _free_port()
    server = subprocess.Popen(
        [PY, str(Path(__file__).resolve()), "_pcap-server", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
    )
    try:
        assert server.stdout is not None
        if server.stdout.readline().strip() != b"READY":
            raise RuntimeError("the benchmark HTTP server did not start")
        with loopback_capture(out, f"tcp port {port}", buffer_mb=256) as cap:
            counts = asyncio.run(_client_main(port, target_calls, MAX_CAPTURE_SECONDS, workers))
        dropped = [line for line in cap.stderr.splitlines() if "dropped" in line]
        if dropped:
            print(f"  (tshark: {dropped[-1].strip()})", flush=True)
        return counts
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def ensure_pcap(packets: int) -> tuple[Path, int, dict[str, int]]:
    path = DATA / f"http-{packets // 1000}k.pcapng"
    meta = path.with_suffix(".meta.json")
    if path.exists() and meta.exists():
        values = json.loads(meta.read_text())
        if values.get("bytes") == path.stat().st_size:
            return path, int(values["frames"]), values
    DATA.mkdir(exist_ok=True)
    target_calls = max(1000, packets // 7)
    for attempt in range(3):
        print(
            f"capturing real loopback HTTP traffic into {path.relative_to(ROOT)} "
            f"(about {target_calls} tools/call, tshark -i lo) ...",
            flush=True,
        )
        start = time.perf_counter()
        counts = capture_http(path, target_calls, workers=12)
        frames = count_frames(path)
        print(
            f"  {frames} packets, {counts.calls} tools/call, {counts.cancels} cancelled, "
            f"{counts.connections} connections, {counts.sessions} sessions in {time.perf_counter() - start:.1f} s",
            flush=True,
        )
        if frames >= packets or attempt == 2:
            break
        target_calls = int(target_calls * packets / max(frames, 1) * 1.1)
    values = {
        "bytes": path.stat().st_size,
        "frames": frames,
        "calls": counts.calls,
        "cancels": counts.cancels,
        "connections": counts.connections,
        "sessions": counts.sessions,
    }
    meta.write_text(json.dumps(values))
    return path, frames, values


def bench_pcap(packets: int, timeout: float | None, repeat: int = 1) -> None:
    import bench_capture

    try:
        path, frames, values = ensure_pcap(packets)
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        print(f"pcap   cannot make the capture: {exc}", flush=True)
        return
    print(
        f"pcap   file {path.stat().st_size / MB:.0f} MB ({path.relative_to(ROOT)}), {frames / 1e3:.0f}k packets, "
        f"{values['calls'] / 1e3:.1f}k tools/call, {values['cancels']} cancelled, "
        f"{values['connections']} connections; load average {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    import bench_fleet

    bench_fleet.compile_package(ROOT / "analyzer")
    bench_capture.big(path, PY, TSHARK, measure, repeat, timeout)


# ---------------------------------------------------------------------------------------------- main


def bench_fleet(count: int, timeout: float | None, repeat: int) -> None:
    import bench_fleet

    folder = bench_fleet.ensure(DATA / f"fleet-{count}", count)
    bench_fleet.compile_package(ROOT / "analyzer")
    size = sum(p.stat().st_size for p in folder.glob("*.jsonl"))
    print(f"fleet  {count} recordings of {bench_fleet.OPS} tools/call each, {size / MB:.1f} MB in all ({folder})")
    print(f"  load average before: {os.getloadavg()[0]:.2f} (wall times mean something below about 1)")
    best: dict[str, Run] = {}
    ratios: list[float] = []
    for n in range(repeat):
        runs = []
        for jobs in ("1", "2"):
            argv = [PY, "-m", "cancelwire", "audit", str(folder), "--format", "json", "-o", "/dev/null"]
            run = measure(f"--jobs {jobs}", [*argv, "--fail-on", "never", "--jobs", jobs], timeout=timeout)
            runs.append(run)
            if run.label not in best or run.wall < best[run.label].wall:
                best[run.label] = run
        one, two = runs
        ratios.append(one.wall / two.wall)
        print(
            f"  run {n + 1}/{repeat}: --jobs 1 {one.wall:6.2f} s (CPU {one.cpu:6.2f} s), --jobs 2 {two.wall:6.2f} s "
            f"(CPU {two.cpu:6.2f} s): {one.wall / two.wall:.2f}x"
        )
    one, two = best["--jobs 1"], best["--jobs 2"]
    print(
        f"  fastest: --jobs 1 {one.wall:.2f} s, --jobs 2 {two.wall:.2f} s: {one.wall / two.wall:.2f}x (target >= 1.7x);"
        f" median of the runs' ratios {sorted(ratios)[len(ratios) // 2]:.2f}x"
    )
    print(f"  load average after: {os.getloadavg()[0]:.2f}")
    bench_fleet.dask_overhead(folder, count)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "case", choices=["stdio", "pcap", "captures", "all", "profile", "fleet", "report", "ab", "_pcap-server"]
    )
    parser.add_argument("--copies", type=int, default=200, help="captures: copies of the small capture (default 200)")
    parser.add_argument("--capture", type=Path, help="profile: a capture to profile instead of the stdio file")
    parser.add_argument("--recordings", type=int, default=1000, help="fleet: small recordings (default 1000)")
    parser.add_argument("port", nargs="?", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--size-gb", type=float, default=1.0, help="stdio transcript size (default 1.0)")
    parser.add_argument(
        "--cancelled",
        type=float,
        default=CANCELLED,
        help=f"stdio, profile, ab: share of tools/call cancelled (default {CANCELLED:g}; the heavy bench: 0.125)",
    )
    parser.add_argument("--scaling", action="store_true", help="stdio: also run the memory-scaling sizes")
    parser.add_argument(
        "--format", default="json", choices=["json", "text"], help="stdio: the audit's report format (default json)"
    )
    parser.add_argument("--scaling-sizes", default="0.25,1.0", help="stdio --scaling sizes in GB (default 0.25,1.0)")
    parser.add_argument("--packets", type=int, default=200_000, help="pcap: packets to capture (default 200000)")
    parser.add_argument("--timeout", type=float, default=3600.0, help="kill a measured run after this many seconds")
    parser.add_argument("--top", type=int, default=30, help="profile: functions shown")
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="stdio: floor and audit runs, interleaved; the fastest of each is compared (default 3)",
    )
    parser.add_argument("--base", help="ab: the python of the other checkout's venv")
    parser.add_argument("--ab-inputs", default="stdio,pcap", help="ab: stdio, pcap or both (default stdio,pcap)")
    args = parser.parse_args(argv)
    if args.case == "_pcap-server":
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(_server_main(args.port))
        return 0
    if args.case == "profile":
        profile_stdio(args.size_gb if args.size_gb != 1.0 else 0.1, args.top, args.cancelled, args.capture)
        return 0
    print(f"cancelwire benchmark: {os.cpu_count()} cores, python {sys.version.split()[0]}, orjson {orjson.__version__}")
    if args.case in ("stdio", "all"):
        _, ours = bench_stdio(args.size_gb, args.timeout, max(1, args.repeat), args.cancelled, args.format)
        if args.scaling:
            sizes = sorted(float(s) for s in args.scaling_sizes.split(","))
            bench_scaling(sizes, args.timeout, {args.size_gb: ours}, args.cancelled, args.format)
    if args.case in ("pcap", "all"):
        bench_pcap(args.packets, args.timeout, max(1, args.repeat))
    if args.case == "captures":
        import bench_capture

        bench_capture.small(ROOT, DATA, PY, measure, args.copies, max(1, args.repeat), args.timeout)
    if args.case == "fleet":
        bench_fleet(args.recordings, args.timeout, max(1, args.repeat))
    if args.case == "ab":
        import bench_ab

        if not args.base:
            parser.error("ab needs --base PYTHON (the other checkout's .venv/bin/python)")
        wanted = args.ab_inputs.split(",")
        inputs = [ensure_stdio(args.size_gb, args.cancelled).path] if "stdio" in wanted else []
        inputs += [ensure_pcap(args.packets)[0]] if "pcap" in wanted else []
        base = os.path.abspath(args.base) if "/" in args.base else args.base  # a venv link: never resolve it
        bench_ab.run(inputs, PY, base, max(1, args.repeat), measure, args.timeout)
    if args.case == "report":
        import bench_report

        bench_report.run(DATA, measure, PY, args.timeout, max(1, args.repeat))
    return 0


if __name__ == "__main__":
    sys.exit(main())
