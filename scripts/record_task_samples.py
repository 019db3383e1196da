#!/usr/bin/env python3
"""Record the task samples of sample_captures/tasks/ with a real SDK that implements tasks (see its README.md).

    .venv/bin/python scripts/record_task_samples.py [--only NAME ...] [--venv DIR] [--npm-dir DIR] [--keep-logs DIR]

Also the --merge sample sample_captures/merge/task-result-timeout-without-cancel.{client,transcript,server}.jsonl
(``record_merge``: the Python SDK client and server each writing its own log, the server's clock shifted).

Tasks (protocol 2025-11-25, experimental) are implemented by the MCP Python SDK 1.x line (the project's
own ``mcp`` 2.x dropped them; they are to come back as an extension, which 2.3.0 does not ship) and by
the TypeScript SDK 1.x. So the peers run in pinned environments of their own, never the project's venv:

  * ``sdk-py-*``: scripts/peers/task_sdk_server.py and task_sdk_client.py in a venv (``--venv``, default
    build/mcp1-venv, created with ``pip install mcp==MCP uvicorn==UVICORN`` when missing);
  * ``sdk-ts-*``: scripts/peers/task_ts_server.mjs and task_ts_client.mjs, copied into an npm folder
    (``--npm-dir``, default build/ts-task-sdk, with ``@modelcontextprotocol/sdk@TS_SDK`` and
    ``zod@ZOD`` installed exactly) so that Node resolves the SDK from there.

The recording itself is our real tooling:

  * stdio: the SDK client launches the SDK server under ``python -m cancelwire record -o NAME.jsonl --``,
    exactly as a host would be configured;
  * Streamable HTTP: the SDK server on a loopback port (Python: under uvicorn, with its own log through
    http_asgi_tee; TypeScript: the SDK's Node transport on node:http), tshark on ``lo`` with a capture
    filter for that port (scripts/loopback.py).

Cancels are triggered by what the server sent (the n-th status notification) or by a client
timeout with ample margin, so re-running gives the same message sequence; ids, task ids, ports and
times change. Every run is bounded in time; loopback only.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
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
TS_SDK = "1.32.2"
"""The newest @modelcontextprotocol/sdk 1.x."""
ZOD = "4.6.7"
"""The zod a plain install of that SDK takes (its peer dependency)."""
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


def ts_sdk(folder: Path) -> Path:
    """The pinned npm folder, installed when the SDK there is missing or another version; the peers
    are copied in each time, so Node resolves the SDK next to them."""
    installed = folder / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json"
    if not installed.exists() or json.loads(installed.read_text())["version"] != TS_SDK:
        log(f"installing @modelcontextprotocol/sdk@{TS_SDK} zod@{ZOD} in {folder}")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "package.json").write_text('{"name": "cancelwire-task-samples", "private": true}\n')
        npm = [shutil.which("npm") or "npm", "install", "--no-audit", "--no-fund", "--save-exact"]
        subprocess.run([*npm, f"@modelcontextprotocol/sdk@{TS_SDK}", f"zod@{ZOD}"], cwd=folder, check=True)
    for script in ("task_ts_server.mjs", "task_ts_client.mjs"):
        shutil.copy(ROOT / "scripts" / "peers" / script, folder / script)
    return folder


def peer(python: Path, script: str) -> list[str]:
    """A peer command line relative to the repository, so the transcript names no local directory."""
    return [os.path.relpath(python, ROOT), *QUIET, str(Path("scripts") / "peers" / script)]


def node(folder: Path, script: str) -> list[str]:
    return ["node", os.path.relpath(folder / script, ROOT)]


def record_stdio(name: str, client: list[str], server: list[str], logdir: Path, out: Path | None = None) -> None:
    """`client` launches `server` under `cancelwire record` (the server command after `--`), which writes
    `out` (default NAME.jsonl here)."""
    out = out or OUT / f"{name}.jsonl"
    out.unlink(missing_ok=True)
    recorder = [sys.executable, "-m", "cancelwire", "record", "-o", os.path.relpath(out, ROOT), "--"]
    run_client(name, [*client, "--", *recorder, *server], logdir, timeout=SCENARIO_SECONDS)
    # The recorder writes its last record once the server has exited; wait for it (bounded).
    deadline = time.monotonic() + 10
    while b'"process-exited"' not in (out.read_bytes().rstrip().rsplit(b"\n", 1)[-1] if out.exists() else b""):
        if time.monotonic() > deadline:
            raise ScenarioError(f"{out.name}: the recording did not end with process-exited")
        time.sleep(0.05)
    log(f"{out.name}: {jsonl_lines(out)} records")


def record_http(name: str, server: list[str], client: list[str], logdir: Path, preferred_port: int) -> None:
    """`server` (given `--port P`, or `P` for the TS peer, by the caller's list) on a loopback port under
    tshark, then `client URL`. The Python server also writes its own log, NAME.server.jsonl."""
    port = pick_port(preferred_port)
    pcap, slog = OUT / f"{name}.pcapng", OUT / f"{name}.server.jsonl"
    argv = [arg.format(port=port, log=slog) for arg in server]
    proc = Proc(f"{name}-server", argv, logdir)
    try:
        proc.wait_ready()
        with capture(pcap, f"tcp port {port}", logdir):
            run_client(f"{name}-client", [*client, f"http://127.0.0.1:{port}/mcp"], logdir, timeout=SCENARIO_SECONDS)
            time.sleep(0.5)
    finally:
        proc.stop()
    check_capture(pcap)
    log(f"{pcap.name} (port {port})" + (f"; {slog.name}: {jsonl_lines(slog)} messages" if slog.exists() else ""))


SCENARIOS: dict[str, tuple[str, str, int]] = {
    # name: (SDK and transport, client flow, preferred port for HTTP)
    "sdk-py-task-cancel-working": ("py-stdio", "cancel-working", 0),
    "sdk-py-task-cancel-completed": ("py-stdio", "cancel-completed", 0),
    "sdk-py-task-progress-completed": ("py-stdio", "progress-completed", 0),
    "sdk-py-task-caller-timeout": ("py-stdio", "caller-timeout", 0),
    "sdk-py-http-task-cancel-working": ("py-http", "cancel-working", 18301),
    "sdk-py-http-task-caller-timeout": ("py-http", "caller-timeout", 18302),
    "sdk-ts-task-cancel-working": ("ts-stdio", "cancel-working", 0),
    "sdk-ts-task-cancel-completed": ("ts-stdio", "cancel-completed", 0),
    "sdk-ts-task-caller-abort": ("ts-stdio", "caller-abort", 0),
    "sdk-ts-task-result-timeout": ("ts-stdio", "result-timeout", 0),
    "sdk-ts-http-task-caller-abort": ("ts-http", "caller-abort", 18303),
}
MERGE_OUT = ROOT / "sample_captures" / "merge"
MERGE_SCENARIOS = {"task-result-timeout-without-cancel": "caller-timeout"}
"""--merge samples (name: client flow), recorded into MERGE_OUT."""
SERVER_OFFSET = 3600.25
SERVER_DRIFT_PPM = 80.0
"""The server log's clock, as in scripts/record_merge_samples.py (the tests recover it)."""


def record_merge(name: str, python: Path, flow: str, logdir: Path) -> None:
    """One stdio session recorded at three points at once, for --merge (sample_captures/merge/): the
    client's own log (NAME.client.jsonl, with the error its SDK made for a call it gave up on), the
    transcript of `cancelwire record` (NAME.transcript.jsonl) and the server's own log
    (NAME.server.jsonl, its clock shifted and drifting as record_merge_samples.py's)."""
    logs = {part: os.path.relpath(MERGE_OUT / f"{name}.{part}.jsonl", ROOT) for part in ("client", "server")}
    client = [*peer(python, "task_sdk_client.py"), "--log", logs["client"], flow, "stdio"]
    server = [*peer(python, "task_sdk_server.py"), "stdio", "--log", logs["server"]]
    server += ["--clock-offset", str(SERVER_OFFSET), "--drift-ppm", str(SERVER_DRIFT_PPM)]
    record_stdio(name, client, server, logdir, MERGE_OUT / f"{name}.transcript.jsonl")
    for part, path in logs.items():
        log(f"{name}.{part}.jsonl: {jsonl_lines(ROOT / path)} messages")


def record(name: str, args: argparse.Namespace, logdir: Path) -> None:
    if name in MERGE_SCENARIOS:
        record_merge(name, sdk_venv(args.venv.resolve()), MERGE_SCENARIOS[name], logdir)
        return
    kind, flow, port = SCENARIOS[name]
    if kind.startswith("ts-"):
        folder = ts_sdk(args.npm_dir.resolve())
        client, server = [*node(folder, "task_ts_client.mjs"), flow], node(folder, "task_ts_server.mjs")
        if kind == "ts-stdio":
            record_stdio(name, client, server, logdir)
        else:
            record_http(name, [*server, "http", "{port}"], [*client, "--url"], logdir, port)
        return
    python = sdk_venv(args.venv.resolve())
    client, server = [*peer(python, "task_sdk_client.py"), flow], peer(python, "task_sdk_server.py")
    if kind == "py-stdio":
        record_stdio(name, [*client, "stdio"], [*server, "stdio"], logdir)
    else:
        record_http(name, [*server, "http", "--port", "{port}", "--log", "{log}"], [*client, "http"], logdir, port)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="*", choices=sorted([*SCENARIOS, *MERGE_SCENARIOS]), help="record only these")
    ap.add_argument("--venv", type=Path, default=ROOT / "build" / "mcp1-venv")
    ap.add_argument("--npm-dir", type=Path, default=ROOT / "build" / "ts-task-sdk")
    ap.add_argument("--keep-logs", type=Path, help="keep the peers' stderr (what the server did, when) here")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    failed: list[str] = []
    with tempfile.TemporaryDirectory(prefix="record-tasks-") as tmp:
        logdir = args.keep_logs or Path(tmp)
        logdir.mkdir(parents=True, exist_ok=True)
        for name in args.only or [*SCENARIOS, *MERGE_SCENARIOS]:
            log(name)
            try:
                record(name, args, logdir)
            except ScenarioError as exc:  # report and go on with the next scenario
                log(f"{name}: FAILED: {exc}")
                failed.append(name)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
