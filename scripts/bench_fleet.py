"""`scripts/bench.py fleet`: many small recordings, `--jobs 2` against `--jobs 1` in one run, and the
Dask LocalCluster path's overhead per input (not a test: it prints numbers).

Each recording is one stdio session of OPS tools/call (every 20th cancelled: half silent, half a late
result), about 50 kB. Both local runs are fresh `cancelwire audit DIR --format json -o /dev/null`
processes, interleaved `--repeat` times, with the package byte-compiled first (`compile_package`); CPU
time comes from wait4 and includes the workers. The Dask run starts a LocalCluster of two
single-threaded worker processes on loopback (not timed), then times
`cancelwire.audit(DIR, dask=ADDRESS)` against `cancelwire.audit(DIR, jobs=1)` in this process.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

OPS = 150


def _line(ts: float, direction: str, message: dict[str, Any]) -> str:
    return json.dumps({"ts": round(ts, 4), "dir": direction, "line": json.dumps(message)}) + "\n"


def write_recording(path: Path, n: int) -> None:
    ts = 1_800_000_000.0 + n
    out = [json.dumps({"cancelwire_transcript": 1, "transport": "stdio", "vantage": "proxy"}) + "\n"]
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}
    out.append(_line(ts, "c2s", {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}))
    server = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": f"s{n}"}}
    out.append(_line(ts + 0.01, "s2c", {"jsonrpc": "2.0", "id": 0, "result": server}))
    for i in range(1, OPS + 1):
        ts += 0.05
        call = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "work", "arguments": {"i": i}}}
        out.append(_line(ts, "c2s", call))
        result = {"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": "done"}]}}
        if i % 20 == 0:
            out.append(
                _line(
                    ts + 0.01,
                    "c2s",
                    {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": i}},
                )
            )
            if i % 40 == 0:
                out.append(_line(ts + 2.0, "s2c", result))
        else:
            out.append(_line(ts + 0.02, "s2c", result))
    path.write_text("".join(out))


def ensure(folder: Path, count: int) -> Path:
    marker = folder / ".complete"
    if marker.exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(count):
        write_recording(folder / f"rec-{n:04d}.jsonl", n)
    marker.write_text(str(count))
    return folder


def compile_package(package: Path) -> None:
    """Byte-compile the package once before the measured runs, as `pip install` does for an installed
    copy (a checkout writes its own `__pycache__` on its first run). Where PYTHONDONTWRITEBYTECODE is
    set, as in the shells of this project's development machines, nothing is ever written, and each
    fresh process would compile every module from source again: 0.15-0.2 s of CPU in both measured
    commands, a cost no user's install pays."""
    import compileall

    compileall.compile_dir(str(package), quiet=1)


def dask_overhead(folder: Path, count: int) -> None:
    import cancelwire
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None) as cluster:
        start = time.perf_counter()
        cancelwire.audit([str(folder)], jobs=1, exchanges=False).close()
        local = time.perf_counter() - start
        start = time.perf_counter()
        cancelwire.audit([str(folder)], dask=cluster.scheduler_address, exchanges=False).close()
        remote = time.perf_counter() - start
    print(
        f"  dask LocalCluster (2 worker processes x 1 thread)  {remote:7.2f} s   vs in-process --jobs 1 {local:7.2f} s"
    )
    per = (remote - local) / count * 1000
    print(f"  overhead per input {per:+.1f} ms (wall; each task ships its input's bytes and its partial back)")
