#!/usr/bin/env python3
"""Record sample_captures/har/chromium-chrome-har-cancel.har: Debian's Chromium driven over the DevTools protocol,
its Network events turned into a HAR by chrome-har (the converter puppeteer-har, browsertime and sitespeed.io use).

    .venv/bin/python scripts/record_chromium_har.py [--chrome-har DIR] [--out FILE]

1. The official MCP Python SDK server (scripts/peers/http_sdk_server.py, Streamable HTTP) on a loopback port.
2. Headless Chromium (scripts/chromium.py, chromedriver, performance log on: the DevTools protocol's Network and
   Page events) opens the server's origin (a 404 page: the page's fetches are then same-origin) and runs a web
   client written with `fetch` (`CLIENT` below, plain JavaScript, no SDK): initialize (2025-11-25),
   notifications/initialized, tools/list, then tools/call slow_write(steps=10) with a progress token, read as its
   SSE stream comes; after 1 s it POSTs notifications/cancelled for the call and aborts the fetch
   (AbortController: Chromium's net::ERR_ABORTED); then tools/call echo; then DELETE of the session.
3. As puppeteer-har does, each finished response's body is fetched with Network.getResponseBody and set on its
   Network.responseReceived event (`response.body`); chrome-har's `harFromMessages(messages,
   {includeTextFromResponseBody: true})` (npm, pinned `CHROME_HAR`, installed under build/ when missing) writes
   the HAR. Loopback only.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from capture_samples import PEERS, PY, ROOT, Proc, pick_port
from chromium import browser

CHROME_HAR = "1.3.1"
OUT = ROOT / "sample_captures" / "har" / "chromium-chrome-har-cancel.har"
CLIENT = """
const done = arguments[arguments.length - 1];
const url = "/mcp";
const base = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"};
let session = null;
const headers = () => session ? {...base, "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"} : base;
const post = (message, signal) =>
  fetch(url, {method: "POST", headers: headers(), body: JSON.stringify(message), signal});
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
(async () => {
  const log = [];
  const init = await post({jsonrpc: "2.0", id: 1, method: "initialize", params: {protocolVersion: "2025-11-25",
    capabilities: {}, clientInfo: {name: "chromium-fetch-client", version: "1.0"}}});
  session = init.headers.get("mcp-session-id");
  log.push("initialize " + init.status + " " + (await init.text()).length);
  await (await post({jsonrpc: "2.0", method: "notifications/initialized"})).text();
  log.push("tools/list " + (await (await post({jsonrpc: "2.0", id: 2, method: "tools/list"})).text()).length);
  const abort = new AbortController();
  const call = await post({jsonrpc: "2.0", id: 3, method: "tools/call", params: {name: "slow_write",
    arguments: {steps: 10}, _meta: {progressToken: 3}}}, abort.signal);
  const reader = call.body.getReader();
  const reading = (async () => {
    try { for (;;) { const {done} = await reader.read(); if (done) return "ended"; } }
    catch (e) { return "aborted: " + e.name; }
  })();
  await sleep(1000);
  const cancel = await post({jsonrpc: "2.0", method: "notifications/cancelled", params: {requestId: 3,
    reason: "the user pressed stop"}});
  log.push("cancel " + cancel.status);
  abort.abort();
  log.push("call " + await reading);
  await sleep(300);
  log.push("echo " + (await (await post({jsonrpc: "2.0", id: 4, method: "tools/call", params: {name: "echo",
    arguments: {text: "after the cancel"}}})).text()).length);
  log.push("delete " + (await fetch(url, {method: "DELETE", headers: headers()})).status);
  done(log);
})().catch((e) => done(["error " + e]));
"""
CONVERT = """
import {readFileSync, writeFileSync} from "node:fs";
import {harFromMessages} from "chrome-har";
const messages = JSON.parse(readFileSync(process.argv[2], "utf8"));
writeFileSync(process.argv[3], JSON.stringify(harFromMessages(messages, {includeTextFromResponseBody: true}), null, 2));
"""


def log(text: str) -> None:
    print(f"[record_chromium_har] {text}", file=sys.stderr, flush=True)


def chrome_har(folder: Path) -> Path:
    if not (folder / "node_modules" / "chrome-har").is_dir():
        folder.mkdir(parents=True, exist_ok=True)
        log(f"installing chrome-har@{CHROME_HAR} in {folder}")
        subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", f"chrome-har@{CHROME_HAR}"], cwd=folder, check=True
        )
    return folder


def devtools_messages(driver: Any) -> list[dict[str, Any]]:
    """The Network and Page events, each finished response's body set on its responseReceived (puppeteer-har)."""
    messages = [json.loads(entry["message"])["message"] for entry in driver.get_log("performance")]
    finished = {m["params"]["requestId"] for m in messages if m["method"] == "Network.loadingFinished"}
    for message in messages:
        if message["method"] == "Network.responseReceived" and message["params"]["requestId"] in finished:
            try:
                body = driver.execute_cdp_cmd("Network.getResponseBody", {"requestId": message["params"]["requestId"]})
            except Exception as exc:  # a body Chromium no longer holds is left out, as puppeteer-har does
                log(f"no body for {message['params']['response']['url']}: {exc}")
                continue
            message["params"]["response"]["body"] = body["body"]
    return [m for m in messages if m["method"].startswith(("Network.", "Page."))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chrome-har", type=Path, default=ROOT / "build" / "chrome-har")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    converter = chrome_har(args.chrome_har)
    with tempfile.TemporaryDirectory(prefix="record-chromium-har-") as tmp:
        logdir = Path(tmp)
        port = pick_port(18211)
        argv = [PY, str(PEERS / "http_sdk_server.py"), "--port", str(port), "--max-seconds", "60"]
        server = Proc("chromium-har-server", [*argv, "--log", str(logdir / "server.jsonl")], logdir)
        try:
            server.wait_ready()
            with browser(logdir, network_log=True) as page:
                page.driver.get(f"http://127.0.0.1:{port}/")
                page.driver.set_script_timeout(30)
                log(f"client: {page.driver.execute_async_script(CLIENT)}")
                time.sleep(0.5)
                messages = devtools_messages(page.driver)
        finally:
            server.stop()
        log((logdir / "chromium-har-server.stderr").read_text(errors="replace")[-600:])
        events = logdir / "devtools.json"
        events.write_text(json.dumps(messages))
        script = converter / "convert.mjs"
        script.write_text(CONVERT)
        subprocess.run(["node", str(script), str(events), str(args.out.resolve())], cwd=converter, check=True)
    entries = json.loads(args.out.read_text())["log"]["entries"]
    log(f"{args.out.name}: {len(entries)} entries (server port {port})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
