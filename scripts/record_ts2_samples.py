#!/usr/bin/env python3
"""Record the TypeScript MCP SDK 2.x samples of sample_captures/ts2sdk/ (see its README.md).

    .venv/bin/python scripts/record_ts2_samples.py [--only NAME ...] [--npm-dir DIR] [--go-peer GOPEER]
        [--keep-logs DIR]

Needs root (or capture rights on ``lo``), tshark and Node.js 20+. The peers are scripts/peers/ts2/server.mjs
and client.mjs (the SDK's split packages @modelcontextprotocol/server and /client, and
@modelcontextprotocol/node for node:http) and, for the cross-implementation pairs, the official Python SDK:
scripts/peers/ts2/pysdk_client.py and scripts/peers/sdk_server.py (the project's ``mcp`` 2.x, this venv),
and the official Go SDK's client: ``gopeer`` (scripts/peers/go, built by scripts/build_go_peers.py), given
by ``--go-peer`` for the ``gosdk-client-*`` scenarios.
The npm folder (``--npm-dir``, default build/ts2-sdk) gets scripts/peers/ts2/package.json and
package-lock.json and ``npm ci`` when its installed SDK is not the pinned one; the .mjs peers are copied
next to its node_modules each time, so Node resolves the pinned SDK.

The recording itself is our real tooling, as in scripts/record_task_samples.py:

  * stdio: the client launches the server under ``python -m cancelwire record -o NAME.jsonl --``, exactly
    as a host would be configured;
  * Streamable HTTP: the server on a loopback port, tshark on ``lo`` with a capture filter for that port
    (scripts/loopback.py), then the client.

Cancels are triggered by what the server sent (the n-th progress notification), so re-running gives the
same message sequence; ids, ports and times change. The ``crossing`` flow blocks the client's event loop
while the result arrives; each recording is checked to show its order (the result before the cancel for
``crossing``, no result before it otherwise) and recorded again (up to 5 times) when it does not.
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
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from capture_samples import ROOT, Proc, ScenarioError, capture, check_capture, pick_port, tshark_fields
from record_task_samples import record_stdio

OUT = ROOT / "sample_captures" / "ts2sdk"
PEERS = ROOT / "scripts" / "peers" / "ts2"
SDK = "2.4.0"
"""@modelcontextprotocol/client and /server: the newest 2.x (package-lock.json pins the rest)."""
ATTEMPTS = 5


def log(text: str) -> None:
    print(f"[record_ts2_samples] {text}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Scenario:
    transport: str
    """stdio, http (the SDK's createMcpHandler) or http-sessions (its sessionful 2025-era transport)"""
    revision: str
    flow: str
    """a flow of client.mjs (early, slow, ignoring, crossing; gopeer's flow flags do the same);
    pysdk_client.py has `slow` only"""
    client: str = "ts2"
    """ts2, py or go"""
    server: str = "ts2"
    """ts2, py or go"""


def scenarios() -> dict[str, Scenario]:
    table: dict[str, Scenario] = {}
    flows = {"early": "cancel-early", "slow": "cancel-slow-tool", "ignoring": "cancel-ignoring-tool"}
    flows["crossing"] = "result-crosses-cancel"
    for transport in ("stdio", "http"):
        for revision in ("2025-11-25", "2026-07-28"):
            for flow, label in flows.items():
                table[f"ts2sdk-{transport}-{revision}-{label}"] = Scenario(transport, revision, flow)
    for flow in ("slow", "ignoring"):
        table[f"ts2sdk-http-sessions-2025-11-25-{flows[flow]}"] = Scenario("http-sessions", "2025-11-25", flow)
    for revision in ("2025-11-25", "2026-07-28"):
        table[f"ts2sdk-client-pysdk-server-stdio-{revision}-cancel"] = Scenario("stdio", revision, "slow", server="py")
        table[f"pysdk-client-ts2sdk-server-stdio-{revision}-cancel"] = Scenario("stdio", revision, "slow", client="py")
        table[f"pysdk-client-ts2sdk-server-http-{revision}-cancel"] = Scenario("http", revision, "slow", client="py")
    # The Go SDK v1.7.0 client always opens with server/discover and takes 2026-07-28 from a server that
    # offers it, as this one does: it cannot be asked for 2025-11-25 (its version option is unexported).
    for transport in ("stdio", "http"):
        for flow, label in flows.items():
            name = f"gosdk-client-ts2sdk-server-{transport}-2026-07-28-{label}"
            table[name] = Scenario(transport, "2026-07-28", flow, client="go")
    # The TS 2.x client against the Go SDK v1.7.0 server: 2026-07-28 on stdio only (the Go server's
    # server/discover over HTTP lists revisions up to 2025-11-25, and the pinned TS client gives up).
    for transport, revisions in (("stdio", ("2025-11-25", "2026-07-28")), ("http", ("2025-11-25",))):
        for revision in revisions:
            for flow, label in flows.items():
                name = f"ts2sdk-client-gosdk-server-{transport}-{revision}-{label}"
                table[name] = Scenario(transport, revision, flow, server="go")
    return table


SCENARIOS = scenarios()


@dataclass(frozen=True)
class Peers:
    npm: Path
    """the npm folder with the TS peers next to its node_modules"""
    go: Path | None
    """the gopeer binary, when given"""


#: gopeer's flags for each flow of client.mjs (same tool, steps, trigger and linger)
GO_FLOWS = {
    "early": ["-cancel-at", "1"],
    "slow": [],
    "ignoring": ["-tool", "stamp_ledger", "-wait", "3s"],
    "crossing": ["-crossing", "-steps", "1"],
}


def npm_folder(folder: Path) -> Path:
    installed = folder / "node_modules" / "@modelcontextprotocol" / "server" / "package.json"
    if not installed.exists() or json.loads(installed.read_text())["version"] != SDK:
        log(f"npm ci in {folder} (@modelcontextprotocol/client and /server {SDK})")
        folder.mkdir(parents=True, exist_ok=True)
        for name in ("package.json", "package-lock.json"):
            shutil.copy(PEERS / name, folder / name)
        npm = shutil.which("npm") or "npm"
        subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=folder, check=True)
    for script in ("server.mjs", "client.mjs"):
        shutil.copy(PEERS / script, folder / script)
    return folder


def client_argv(s: Scenario, peers: Peers) -> list[str]:
    if s.client == "go":
        ping = "true" if s.revision == "2025-11-25" else "false"  # the TS server has no ping in 2026-07-28
        mode = "client-stdio" if s.transport == "stdio" else "client-http"
        return [go_peer(peers), mode, *GO_FLOWS[s.flow], f"-ping={ping}"]
    if s.client == "py":
        mode = "legacy" if s.revision == "2025-11-25" else s.revision
        return [os.path.relpath(sys.executable, ROOT), str(Path("scripts/peers/ts2/pysdk_client.py")), mode]
    return ["node", os.path.relpath(peers.npm / "client.mjs", ROOT), s.flow, s.revision]


def server_argv(s: Scenario, peers: Peers, port: int | None = None) -> list[str]:
    """The server's command; with `port`, listening there on HTTP."""
    if s.server == "go":
        go = go_peer(peers)
        return [go, "server-stdio"] if port is None else [go, "server-http", "-addr", f"127.0.0.1:{port}"]
    if s.server == "py":
        return [os.path.relpath(sys.executable, ROOT), str(Path("scripts/peers/sdk_server.py"))]
    argv = ["node", os.path.relpath(peers.npm / "server.mjs", ROOT), s.transport]
    return argv if port is None else [*argv, str(port)]


def go_peer(peers: Peers) -> str:
    if peers.go is None:
        raise ScenarioError("the gosdk scenarios need --go-peer")
    return str(peers.go)


def stdio_order(path: Path) -> tuple[bool, bool]:
    """(a cancel was sent, the cancelled call's reply came before it) in a transcript."""
    records = [json.loads(line) for line in path.read_text().splitlines()[1:] if line.strip()]
    messages = [(r["dir"], json.loads(r["line"])) for r in records if r.get("dir") in ("c2s", "s2c")]
    cancels = [i for i, (d, m) in enumerate(messages) if d == "c2s" and m.get("method") == "notifications/cancelled"]
    if not cancels:
        return False, False
    target = messages[cancels[0]][1]["params"]["requestId"]
    replies = [i for i, (d, m) in enumerate(messages) if d == "s2c" and m.get("id") == target and "method" not in m]
    return True, bool(replies) and replies[0] < cancels[0]


def http_order(pcap: Path, port: int) -> tuple[bool, bool]:
    """(the client cancelled, the call's reply came before the cancel) in a capture: the call is the first
    POST of tools/call for append_ledger or stamp_ledger; the cancel the first frame after it that holds
    notifications/cancelled or is a FIN or RST from the client; the reply the first frame from the server
    after the call that holds "appended" or "stamped" (what only these tools' results say), or from the Go
    server "structuredContent" (what only its ledger results hold, not its `context canceled` one)."""
    calls = 'http.request.method == "POST" && (frame contains "append_ledger" || frame contains "stamp_ledger")'
    call = tshark_fields(pcap, calls, ["frame.number"])
    if not call:
        return False, False
    after = f"frame.number > {call[0]}"
    to_server = f"(tcp.dstport == {port} && (tcp.flags.fin == 1 || tcp.flags.reset == 1))"
    cancel = tshark_fields(
        pcap, f'{after} && (frame contains "notifications/cancelled" || {to_server})', ["frame.number"]
    )
    if not cancel:
        return False, False
    says = '(frame contains "appended" || frame contains "stamped" || frame contains "structuredContent")'
    result = tshark_fields(pcap, f"{after} && tcp.srcport == {port} && {says}", ["frame.number"])
    return True, bool(result) and int(result[0]) < int(cancel[0])


def check(name: str, s: Scenario, order: tuple[bool, bool]) -> None:
    cancelled, reply_first = order
    if not cancelled:
        raise ScenarioError(f"{name}: no cancel found")
    if reply_first != (s.flow == "crossing"):
        raise ScenarioError(f"{name}: the call's reply came {'before' if reply_first else 'after'} the cancel")


def record_http(name: str, s: Scenario, peers: Peers, logdir: Path, port: int) -> tuple[bool, bool]:
    pcap = OUT / f"{name}.pcapng"
    server = Proc(f"{name}-server", server_argv(s, peers, port), logdir)
    try:
        server.wait_ready()
        with capture(pcap, f"tcp port {port}", logdir):
            run = [*client_argv(s, peers), "--url", f"http://127.0.0.1:{port}/mcp"]
            out = subprocess.run(run, capture_output=True, text=True, timeout=40, cwd=ROOT)
            (logdir / f"{name}-client.stderr").write_text(out.stderr)
            if out.returncode != 0:
                raise ScenarioError(f"{name}: client exited {out.returncode}: {out.stderr[-2000:]}")
            time.sleep(0.5)
    finally:
        server.stop()
    check_capture(pcap)
    return http_order(pcap, port)


def record(name: str, peers: Peers, logdir: Path, port: int) -> None:
    s = SCENARIOS[name]
    for attempt in range(1, ATTEMPTS + 1):
        if s.transport == "stdio":
            out = OUT / f"{name}.jsonl"
            record_stdio(name, client_argv(s, peers), server_argv(s, peers), logdir, out)
            order = stdio_order(out)
        else:
            order = record_http(name, s, peers, logdir, port)
        try:
            check(name, s, order)
            return
        except ScenarioError as exc:
            if attempt == ATTEMPTS:
                raise
            log(f"{exc}; recording again ({attempt}/{ATTEMPTS})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="*", choices=sorted(SCENARIOS), help="record only these")
    ap.add_argument("--npm-dir", type=Path, default=ROOT / "build" / "ts2-sdk")
    ap.add_argument("--go-peer", type=Path, help="gopeer (scripts/build_go_peers.py), for gosdk-client-*")
    ap.add_argument("--keep-logs", type=Path, help="keep the peers' stderr (what each side did, when) here")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    peers = Peers(npm_folder(args.npm_dir.resolve()), args.go_peer.resolve() if args.go_peer else None)
    failed: list[str] = []
    with tempfile.TemporaryDirectory(prefix="record-ts2-") as tmp:
        logdir = args.keep_logs or Path(tmp)
        logdir.mkdir(parents=True, exist_ok=True)
        for index, name in enumerate(args.only or SCENARIOS):
            log(name)
            try:
                record(name, peers, logdir, pick_port(18420 + index))
            except ScenarioError as exc:  # report and go on with the next scenario
                log(f"{name}: FAILED: {exc}")
                failed.append(name)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
