#!/usr/bin/env python3
"""Record the task samples of sample_captures/tasks/ with a real SDK that implements tasks (see its README.md).

    .venv/bin/python scripts/record_task_samples.py [--only NAME ...] [--venv DIR] [--keep-logs DIR]

Tasks (protocol 2025-11-25, experimental) are implemented by the MCP Python SDK 1.x line only: the
project's own ``mcp`` 2.x dropped them (they are to come back as an extension, which 2.3.0 does not
ship). So the peers (scripts/peers/task_sdk_server.py and task_sdk_client.py) run in a pinned venv of
their own (``--venv``, default build/mcp1-venv, created with ``pip install mcp==MCP uvicorn==UVICORN``
when missing), never in the project's venv. The recording itself is our real tooling:

  * stdio: the SDK client launches the SDK server under ``python -m cancelwire record -o NAME.jsonl --``,
    exactly as a host would be configured;
  * Streamable HTTP: the SDK server under uvicorn on a loopback port, tshark on ``lo`` with a capture
    filter for that port (scripts/loopback.py), and the server's own log through http_asgi_tee.

Cancels are triggered by what the server sent (the n-th status notification) or by a client
timeout with ample margin, so re-running gives the same message sequence; ids, task ids, ports and
times change. Every run is bounded in time; loopback only.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from capture_samples import (
    ROOT,
    Proc,
    ScenarioError,
    capture,
    check_capture,
    jsonl_lines,
    pick_port,
    run_client,
)

OUT = ROOT / "sample_captures" / "tasks"
MCP = "1.30.0"
"""The newest mcp 1.x (2.x has no tasks)."""
UVICORN = "0.55.0"
"""The uvicorn of the project's other HTTP samples."""
SCENARIO_SECONDS = 40.0
QUIET = ["-W", "ignore::DeprecationWarning"]  # mcp 1.30 warns on every experimental task call


def log(text: str) -> None:
    print(f"[record_task_samples] {text}", file=sys.stderr, flush=True)


def sdk_venv(path: Path) -> Path:
    """The pinned recording venv's python, created when missing."""
    python = path / "bin" / "python"
    if not python.exists():
        log(f"creating {path} with mcp=={MCP} uvicorn=={UVICORN}")
        subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", f"mcp=={MCP}", f"uvicorn=={UVICORN}"], check=True)
    found = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('mcp'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if found != MCP:
        raise ScenarioError(f"{path} has mcp {found}, not {MCP}: remove it or pass another --venv")
    return python


def peer(python: Path, script: str) -> list[str]:
    """A peer command line relative to the repository, so the transcript names no local directory."""
    return [os.path.relpath(python, ROOT), *QUIET, str(Path("scripts") / "peers" / script)]


def record_stdio(name: str, flow: str, python: Path, logdir: Path) -> None:
    out = OUT / f"{name}.jsonl"
    out.unlink(missing_ok=True)
    recorder = [sys.executable, "-m", "cancelwire", "record", "-o", os.path.relpath(out, ROOT), "--"]
    client = [*peer(python, "task_sdk_client.py"), flow, "stdio", "--", *recorder, *peer(python, "task_sdk_server.py")]
    run_client(name, [*client, "stdio"], logdir, timeout=SCENARIO_SECONDS)
    # The recorder writes its last record once the server has exited; wait for it (bounded).
    deadline = time.monotonic() + 10
    while b'"process-exited"' not in (out.read_bytes().rstrip().rsplit(b"\n", 1)[-1] if out.exists() else b""):
        if time.monotonic() > deadline:
            raise ScenarioError(f"{out.name}: the recording did not end with process-exited")
        time.sleep(0.05)
    log(f"{out.name}: {jsonl_lines(out)} records")


def record_http(name: str, flow: str, python: Path, logdir: Path, preferred_port: int) -> None:
    port = pick_port(preferred_port)
    pcap, slog = OUT / f"{name}.pcapng", OUT / f"{name}.server.jsonl"
    argv = [*peer(python, "task_sdk_server.py"), "http", "--port", str(port), "--log", str(slog)]
    server = Proc(f"{name}-server", argv, logdir)
    try:
        server.wait_ready()
        with capture(pcap, f"tcp port {port}", logdir):
            client = [*peer(python, "task_sdk_client.py"), flow, "http", f"http://127.0.0.1:{port}/mcp"]
            run_client(f"{name}-client", client, logdir, timeout=SCENARIO_SECONDS)
            time.sleep(0.5)
    finally:
        server.stop()
    check_capture(pcap)
    log(f"{pcap.name} (port {port}); {slog.name}: {jsonl_lines(slog)} messages")


SCENARIOS: dict[str, tuple[str, str, int]] = {
    # name: (transport, client flow, preferred port for HTTP)
    "sdk-py-task-cancel-working": ("stdio", "cancel-working", 0),
    "sdk-py-task-cancel-completed": ("stdio", "cancel-completed", 0),
    "sdk-py-task-progress-completed": ("stdio", "progress-completed", 0),
    "sdk-py-task-caller-timeout": ("stdio", "caller-timeout", 0),
    "sdk-py-http-task-cancel-working": ("http", "cancel-working", 18301),
    "sdk-py-http-task-caller-timeout": ("http", "caller-timeout", 18302),
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="*", choices=sorted(SCENARIOS), help="record only these samples")
    ap.add_argument("--venv", type=Path, default=ROOT / "build" / "mcp1-venv")
    ap.add_argument("--keep-logs", type=Path, help="keep the peers' stderr (what the server did, when) here")
    args = ap.parse_args()
    python = sdk_venv(args.venv.resolve())
    OUT.mkdir(parents=True, exist_ok=True)
    failed: list[str] = []
    with tempfile.TemporaryDirectory(prefix="record-tasks-") as tmp:
        logdir = args.keep_logs or Path(tmp)
        logdir.mkdir(parents=True, exist_ok=True)
        for name in args.only or SCENARIOS:
            transport, flow, port = SCENARIOS[name]
            log(name)
            try:
                if transport == "stdio":
                    record_stdio(name, flow, python, logdir)
                else:
                    record_http(name, flow, python, logdir, port)
            except ScenarioError as exc:  # report and go on with the next scenario
                log(f"{name}: FAILED: {exc}")
                failed.append(name)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
