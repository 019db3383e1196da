"""`scripts/bench.py ab --base PYTHON`: this checkout's `cancelwire audit` against another one's, in one run.

A change to a hot path is judged A/B: the same input, the two versions alternately (`--repeat` rounds,
which side goes first alternating too), each a fresh process that runs the installed console script's
entry point, so a checkout of any layout works (`--base /path/to/other/.venv/bin/python`). CPU time
(user + system, from wait4, tshark included on captures) is steadier than wall time on a shared
machine; the fastest of each side is compared, and the median of the rounds' ratios shows the spread.
Within 5 % is the bar for a change that should not cost speed.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: Loads `cancelwire` the way the console script does, whatever module holds `main` in that checkout.
AUDIT = """
import sys
from importlib.metadata import entry_points
(script,) = entry_points(group="console_scripts", name="cancelwire")
sys.exit(script.load()(sys.argv[1:]))
"""


def _compile(python: str, cwd: str) -> None:
    where = "import cancelwire, os; print(os.path.dirname(cancelwire.__file__))"
    folder = subprocess.run([python, "-c", where], capture_output=True, text=True, check=True, cwd=cwd).stdout.strip()
    subprocess.run([python, "-m", "compileall", "-q", folder], check=True, stdout=subprocess.DEVNULL, cwd=cwd)


def run(
    inputs: list[Path], ours: str, base: str, repeat: int, measure: Callable[..., Any], timeout: float | None
) -> None:
    """Print, per input, each round's CPU time of both sides, then the fastest of each and their ratio."""
    print(f"ab     this checkout ({ours}) against --base ({base}), {repeat} rounds each, alternating")
    print(f"  load average before: {os.getloadavg()[0]:.2f}")
    # run outside any checkout: its *.egg-info would answer the entry-point lookup of both sides
    with tempfile.TemporaryDirectory(prefix="cancelwire-ab-") as home:
        for python in (base, ours):  # both byte-compiled: with PYTHONDONTWRITEBYTECODE each run would compile
            _compile(python, home)
        for path in inputs:
            _compare(
                path,
                {"base": base, "ours": ours},
                repeat,
                lambda side, argv: measure(side, argv, timeout=timeout, cwd=Path(home)),
            )
    print(f"  load average after: {os.getloadavg()[0]:.2f}")


def _compare(path: Path, sides: dict[str, str], repeat: int, measure: Callable[[str, list[str]], Any]) -> None:
    cpu: dict[str, list[float]] = {side: [] for side in sides}
    order = list(sides.items())
    for n in range(repeat):
        for side, python in order if n % 2 == 0 else reversed(order):
            argv = [python, "-c", AUDIT, "audit", str(path), "--format", "json", "-o", os.devnull, "--isolated"]
            result = measure(side, [*argv, "--fail-on", "never"])
            if result.returncode != 0:
                raise SystemExit(f"{side} failed on {path} ({result.returncode}): {result.stderr[-2000:]}")
            cpu[side].append(result.cpu)
        print(f"  {path.name} round {n + 1}: base CPU {cpu['base'][-1]:6.2f} s, ours {cpu['ours'][-1]:6.2f} s")
    fastest = {side: min(times) for side, times in cpu.items()}
    median = statistics.median(o / b for o, b in zip(cpu["ours"], cpu["base"], strict=True))
    change = (fastest["ours"] / fastest["base"] - 1) * 100
    print(
        f"  {path.name}: fastest base {fastest['base']:.2f} s, ours {fastest['ours']:.2f} s: {change:+.1f} %;"
        f" median of the rounds' ratios {median:.3f}"
    )
