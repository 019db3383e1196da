"""`scripts/bench.py report`: how long the HTML report of a large audit takes, how big it is, and
whether a browser opens it without stalling (not a test: it prints numbers).

The recordings: SESSIONS stdio sessions (a file each) of REQUESTS / SESSIONS tools/call and pings,
every tenth a cancelled tools/call (CANCELLED in all) with a mix of outcomes: a late result, a flood of
progress after the cancel, silence from a side-effecting tool, silence from a read-only tool, and in
every other session a later read that checks the silent side-effecting calls before it. Each run is a
fresh `cancelwire audit DIR --format html` process; the same audit with `--format json` is the
baseline, so the difference is the page's own cost. When Debian's chromium is installed, it loads the
page headless (`--dump-dom`, which waits for the page's script) against an empty page, in CPU seconds
of its process tree.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

REQUESTS = 10_000
CANCELLED = 1_000
SESSIONS = 20
#: Tool → readOnlyHint. `search`, the everyday call, has no annotations, so it is no verifying read.
TOOLS = {"slow_write": False, "lookup": True, "append_ledger": False, "read_ledger": True, "search": None}


def _line(ts: float, direction: str, message: dict[str, Any]) -> str:
    return json.dumps({"ts": round(ts, 4), "dir": direction, "line": json.dumps(message)}) + "\n"


def _session(index: int, calls: int, ts: float) -> list[str]:
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}
    server = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": f"srv{index}"}}
    tools = [
        {"name": name, **({} if ro is None else {"annotations": {"readOnlyHint": ro}})} for name, ro in TOOLS.items()
    ]
    out = [
        _line(ts, "c2s", {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}),
        _line(ts + 0.01, "s2c", {"jsonrpc": "2.0", "id": 0, "result": server}),
        _line(ts + 0.02, "c2s", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        _line(ts + 0.03, "s2c", {"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}}),
    ]
    for i in range(2, calls + 2):
        ts += 0.2
        out += _call(i, ts, reads=index % 2 == 0)
    return out


def _call(i: int, ts: float, *, reads: bool) -> list[str]:
    if i % 10:
        method = "ping" if i % 3 == 0 else "tools/call"
        params = {} if method == "ping" else {"name": "search", "arguments": {"q": i}}
        return [
            _line(ts, "c2s", {"jsonrpc": "2.0", "id": i, "method": method, "params": params}),
            _line(ts + 0.003 + (i % 7) * 0.01, "s2c", {"jsonrpc": "2.0", "id": i, "result": {"content": []}}),
        ]
    kind = (i // 10) % 5
    tool = ("slow_write", "slow_write", "append_ledger", "lookup", "append_ledger")[kind]
    meta = {"progressToken": i}
    call = {"name": tool, "arguments": {"payload": "x" * 200}, "_meta": meta}
    out = [_line(ts, "c2s", {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": call})]
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": i, "reason": "user"}}
    out.append(_line(ts + 0.05, "c2s", cancel))
    if kind == 0:  # a late result, well past the race window
        out.append(_line(ts + 0.35, "s2c", {"jsonrpc": "2.0", "id": i, "result": {"content": []}}))
    elif kind == 1:  # a flood of progress after the cancel
        for n in range(40):
            progress = {"progressToken": i, "progress": n, "message": "still going " + "y" * 300}
            out.append(
                _line(
                    ts + 0.06 + n * 0.001,
                    "s2c",
                    {"jsonrpc": "2.0", "method": "notifications/progress", "params": progress},
                )
            )
    elif kind == 4 and reads:  # checked by a later read (in every other session: the rest stay unverified)
        read = {"name": "read_ledger", "arguments": {}}
        out.append(_line(ts + 0.1, "c2s", {"jsonrpc": "2.0", "id": f"r{i}", "method": "tools/call", "params": read}))
        out.append(_line(ts + 0.11, "s2c", {"jsonrpc": "2.0", "id": f"r{i}", "result": {"content": []}}))
    return out


def ensure(folder: Path) -> Path:
    """SESSIONS recordings of REQUESTS / SESSIONS requests each (one stdio session per file)."""
    if folder.exists():
        return folder
    temp = folder.with_name(folder.name + ".partial")
    temp.mkdir(parents=True, exist_ok=True)
    header = json.dumps({"cancelwire_transcript": 1, "transport": "stdio", "vantage": "proxy"}) + "\n"
    for index in range(SESSIONS):
        with open(temp / f"session-{index:03}.jsonl", "w") as out:
            out.write(header)
            out.writelines(_session(index, REQUESTS // SESSIONS, 1_800_000_000.0 + index * 10_000))
    temp.rename(folder)
    return folder


def _chromium(page: Path, measure: Callable[..., Any], timeout: float) -> tuple[Any, str] | None:
    """Headless chromium's run over PAGE (wall and CPU), and the DOM it had once the page's script ran."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        return None
    with (
        tempfile.TemporaryDirectory(prefix="cancelwire-bench-chromium-") as profile,
        tempfile.TemporaryFile() as dom,
    ):
        argv = [chromium, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}", "--dump-dom"]
        done = measure("chromium", [*argv, page.as_uri()], stdout=dom.fileno(), timeout=timeout)
        dom.seek(0)
        return (done, dom.read().decode("utf-8", "replace")) if done.ok else None


def browser_load(page: Path, measure: Callable[..., Any], timeout: float) -> str:
    """The page's load in headless chromium against an empty page's (chromium's own start-up)."""
    blank = page.with_name("blank.html")
    blank.write_text("<!DOCTYPE html><title>blank</title>")
    floor, loaded = _chromium(blank, measure, timeout), _chromium(page, measure, timeout)
    if floor is None or loaded is None:
        return "not measured (no chromium, or it failed)"
    shown = re.search(r'id="findings-shown"[^>]*>([^<]*)<', loaded[1])
    script = f"its script ran ({shown.group(1)})" if shown and shown.group(1) else "its script did not run"
    run, empty = loaded[0], floor[0]
    return (
        f"CPU {run.cpu:.2f} s (an empty page {empty.cpu:.2f} s), wall {run.wall:.2f} s (empty {empty.wall:.2f} s); "
        f"{script}"
    )


def run(data: Path, measure: Callable[..., Any], py: str, timeout: float | None, repeat: int) -> None:
    path = ensure(data / f"report-{REQUESTS}-{CANCELLED}")
    print(f"report  {SESSIONS} sessions of {REQUESTS // SESSIONS} calls, {CANCELLED} cancelled ({path})")
    page = data / "report-bench.html"
    base = [py, "-m", "cancelwire", "audit", str(path), "--fail-on", "never"]
    best: dict[str, Any] = {}
    for n in range(repeat):
        for fmt, out in (("json", "/dev/null"), ("html", str(page))):
            result = measure(f"--format {fmt}", [*base, "--format", fmt, "-o", out], timeout=timeout)
            if not result.ok:
                print(f"  --format {fmt} failed: {result.stderr.strip()[-400:]}")
                return
            print(
                f"  run {n + 1}/{repeat}: --format {fmt:<5} wall {result.wall:6.2f} s, CPU {result.cpu:6.2f} s, "
                f"RSS {result.rss_mb:.0f} MB"
            )
            if fmt not in best or result.cpu < best[fmt].cpu:
                best[fmt] = result
    html = page.read_text()
    sections = html.count('<section class="call"')
    print(
        f"  fastest: json CPU {best['json'].cpu:.2f} s, html CPU {best['html'].cpu:.2f} s "
        f"(the page's own cost {best['html'].cpu - best['json'].cpu:+.2f} s); page {len(html) / 2**20:.1f} MB, "
        f"{html.count('<')} tags, {sections} call sections, "
        f"{html.count('<tr data-severity=')} finding rows"
    )
    print("  chromium --headless --dump-dom: " + browser_load(page, measure, timeout or 300))
