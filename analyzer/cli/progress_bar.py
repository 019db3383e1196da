"""The progress bar of a long audit, on a terminal: inputs done, messages per second, time left.

cli/main.py decides whether there is one (stderr is a terminal and no --quiet) and hands it the stream.
Nothing shows for a run shorter than SHOW_AFTER seconds, the line is redrawn at most every REDRAW
seconds, and it is erased at the end, so the report and errors are never mixed with it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import TextIO

SHOW_AFTER = 1.0
REDRAW = 0.25
WIDTH = 24
ERASE = "\r\x1b[K"


class ProgressBar:
    def __init__(self, stream: TextIO, clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream
        self.clock = clock
        self.start = clock()
        self.drawn_at: float | None = None

    def __call__(self, done: int, total: int, events: int) -> None:
        now = self.clock()
        elapsed = now - self.start
        if elapsed < SHOW_AFTER or (self.drawn_at is not None and now - self.drawn_at < REDRAW and done < total):
            return
        self.drawn_at = now
        self._write(ERASE + line(done, total, events, elapsed))

    def close(self) -> None:
        if self.drawn_at is not None:
            self._write(ERASE)

    def _write(self, text: str) -> None:
        with contextlib.suppress(OSError, ValueError):  # a closed terminal must not stop the audit
            self.stream.write(text)
            self.stream.flush()


def line(done: int, total: int, events: int, elapsed: float) -> str:
    """`  37/1000 inputs [#.........]   3%  12.3k msg/s  ETA 1m02s`"""
    share = done / total if total else 1.0
    filled = round(share * WIDTH)
    rate = events / elapsed if elapsed > 0 else 0.0
    eta = elapsed * (total - done) / done if done else None
    return (
        f"{done:>{len(str(total))}}/{total} inputs [{'#' * filled}{'.' * (WIDTH - filled)}] {share:>4.0%}"
        f"  {_count(rate)} msg/s  ETA {_duration(eta)}"
    )


def _count(value: float) -> str:
    for limit, suffix in ((1e6, "M"), (1e3, "k")):
        if value >= limit:
            return f"{value / limit:.1f}{suffix}"
    return f"{value:.0f}"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "--"
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


@contextlib.contextmanager
def progress_bar(stream: TextIO, clock: Callable[[], float] = time.monotonic) -> Iterator[ProgressBar]:
    bar = ProgressBar(stream, clock)
    try:
        yield bar
    finally:
        bar.close()
