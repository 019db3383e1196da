"""Which recorded times are times at all: the one bound every reader and `--merge` apply.

A recording's clock reads epoch seconds between 1970 and 2106 (the unsigned 32-bit epoch, which no
recorder alive has passed). A time outside that range is not a clock reading but damage or hostility:
a log line stamped year 0001 or 9999, a negated or overflowed clock (`1e308`), a `NaN`. Taken as a
time, it makes gaps of thousands of years, negative durations, and arithmetic that overflows into
`inf` and `NaN` wherever two times are subtracted or fitted (the race window, the merge's clock fit).
Such a time is read as *no time* (the event keeps its place in the file), and the reader names it
(`input.implausible-time`, CW930) so nothing changes silently.
"""

from __future__ import annotations

from typing import Final

EARLIEST: Final = 0.0
"""1970-01-01T00:00:00Z. Test transcripts start at small epoch values (1.0), so the bound is the epoch."""
LATEST: Final = 4_294_967_296.0  # 2**32: a literal, which mypyc inlines where the bound is read per frame
"""2106-02-07T06:28:16Z: past any real recording, below where float seconds lose their milliseconds."""


def plausible(ts: float) -> bool:
    """True when `ts` can be a recorder's clock reading (False for NaN and the infinities too)."""
    return EARLIEST <= ts < LATEST
