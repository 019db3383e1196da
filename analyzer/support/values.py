"""Values a user writes in the settings file, a rule file or on the command line, checked the same way
everywhere: a duration in seconds, a count."""

from __future__ import annotations

import math

from .files import shown

#: The largest count a setting takes (more open requests than this is no limit at all).
MAX_COUNT = 2**31 - 1


def seconds_of(value: object) -> float:
    """A duration: a finite number of seconds, at least 0 (the settings file and the command line)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"must be a number of seconds, not {shown(value)}")
    try:
        seconds = float(value)  # an integer of hundreds of digits has no float
    except OverflowError:
        seconds = math.inf
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"must be a finite number of seconds >= 0, not {shown(value)}")
    return seconds


def count_of(value: object) -> int:
    """A count that must be at least 1 (`max-open`: 0 would flush every request unjudged)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"must be a whole number, not {shown(value)}")
    if value < 1:
        raise ValueError(f"must be at least 1, not {shown(value)}")
    if value > MAX_COUNT:
        raise ValueError(f"must be at most {MAX_COUNT}, not {shown(value)}")
    return value
