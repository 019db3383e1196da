"""Work counters for cost tests: what a function does, counted, never timed (the CI machine is loaded)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import CodeType, FrameType
from typing import Any


class LineCount:
    """Lines executed inside the traced functions while the `counting` block ran."""

    def __init__(self) -> None:
        self.lines = 0


@contextmanager
def counting(*functions: Callable[..., Any]) -> Iterator[LineCount]:
    """Count the lines executed in `functions` (their own frames, not their callees)."""
    codes: set[CodeType] = {f.__code__ for f in functions}
    count = LineCount()

    def local(frame: FrameType, event: str, arg: object) -> object:
        if event == "line":
            count.lines += 1
        return local

    def calls(frame: FrameType, event: str, arg: object) -> object:
        return local if frame.f_code in codes else None

    previous = sys.gettrace()
    sys.settrace(calls)
    try:
        yield count
    finally:
        sys.settrace(previous)
