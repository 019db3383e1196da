"""`scripts/bench.py pcap` and `scripts/bench.py captures`: the capture readers against tshark's bare pass.

pcap: on the big loopback capture, tshark's bare pass (`tshark -r F -n -T fields -e frame.number`), the pure-Python
floor (`capture_floor.py`), the audit with `--capture-reader tshark` and the audit with the default reader (direct),
interleaved `--repeat` times in fresh processes; wall and CPU (user + system from wait4, tshark included) of
each, and the ratio of each to the bare pass in the same round.

captures: COPIES copies of one small real-SDK capture (`sample_captures/http/sdk-http-cancel-notification.pcapng`,
README there) in one folder, `cancelwire audit DIR --jobs 2` with either reader, interleaved.

Not a test: it prints numbers. The package is byte-compiled first (`bench_fleet.compile_package`).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

SMALL = Path("sample_captures/http/sdk-http-cancel-notification.pcapng")
FLOOR_SCRIPT = Path(__file__).with_name("capture_floor.py")
"""The least a pure-Python audit must do (decode, find the stream, parse each message), beside tshark's pass."""
Measure = Callable[..., Any]


def _audit(py: str, target: Path, reader: str, *extra: str) -> list[str]:
    argv = [py, "-m", "cancelwire", "audit", str(target), "--format", "json", "-o", "/dev/null"]
    return [*argv, "--fail-on", "never", "--capture-reader", reader, *extra]


def big(path: Path, py: str, tshark: str, measure: Measure, repeat: int, timeout: float | None) -> None:
    """The big capture: bare pass, tshark audit, direct audit, interleaved."""
    best: dict[str, Any] = {}
    for n in range(repeat):
        floor = measure("floor", [tshark, "-r", str(path), "-n", "-T", "fields", "-e", "frame.number"], timeout=timeout)
        runs = [floor, measure("python floor (capture_floor.py)", [py, str(FLOOR_SCRIPT), str(path)], timeout=timeout)]
        for reader in ("tshark", "direct"):
            runs.append(measure(f"audit --capture-reader {reader}", _audit(py, path, reader), timeout=timeout))
        line = ", ".join(
            f"{r.label} {r.wall:.2f} s (CPU {r.cpu:.2f} s"
            + ("" if r is floor else f": {r.wall / floor.wall:.2f}x wall, {r.cpu / floor.cpu:.2f}x CPU")
            + ")"
            for r in runs
        )
        print(f"  run {n + 1}/{repeat}: {line}", flush=True)
        for r in runs:
            if r.label not in best or r.cpu < best[r.label].cpu:
                best[r.label] = r
    floor = best["floor"]
    for label, run in best.items():
        print(
            f"  {label:<32} wall {run.wall:6.2f} s  CPU {run.cpu:6.2f} s  RSS {run.rss_mb:5.0f} MB"
            + ("" if run is floor else f"  ({run.wall / floor.wall:.2f}x wall, {run.cpu / floor.cpu:.2f}x CPU)"),
            flush=True,
        )
    print("  targets (issue 20): direct audit wall <= 0.5x, CPU <= 0.6x of the bare pass; fastest of each by CPU")


def small(root: Path, data: Path, py: str, measure: Measure, copies: int, repeat: int, timeout: float | None) -> None:
    """COPIES copies of a small real-SDK capture, `--jobs 2`, either reader."""
    folder = data / f"captures-{copies}"
    source = root / SMALL
    if not folder.is_dir() or len(list(folder.glob("*.pcapng"))) != copies:
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        for n in range(copies):
            shutil.copyfile(source, folder / f"c{n:04d}.pcapng")
    print(f"captures  {copies} copies of {SMALL} ({source.stat().st_size} bytes each) in {folder}", flush=True)
    best: dict[str, Any] = {}
    for n in range(repeat):
        runs = [
            measure(f"--jobs 2, {r}", _audit(py, folder, r, "--jobs", "2"), timeout=timeout)
            for r in ("tshark", "direct")
        ]
        print(
            f"  run {n + 1}/{repeat}: " + ", ".join(f"{r.label} wall {r.wall:.2f} s (CPU {r.cpu:.2f} s)" for r in runs),
            flush=True,
        )
        for r in runs:
            if r.label not in best or r.wall < best[r.label].wall:
                best[r.label] = r
    print(
        "  fastest: "
        + ", ".join(f"{r.label} {r.wall:.2f} s (CPU {r.cpu:.2f} s)" for r in best.values())
        + "; target (issue 20, 200 copies): direct <= 6 s",
        flush=True,
    )
