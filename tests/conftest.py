"""Suite-wide settings.

Property tests run derandomised and without an example database, so a CI run on a clean clone is the
same run every time, and the timing health check is off: on a loaded machine generating examples is slow,
which says nothing about the code (a test's own @settings adds to this profile; CANCELWIRE_FUZZ_EXAMPLES
runs of tests/fuzzing.py stay random on purpose).

A suite started as a background job of a shell without job control (`pytest &` in a script, as a CI
runner may) inherits SIGINT ignored, and so would every cancelwire it starts: the tests of Ctrl-C would
see it ignored. The suite takes Python's own handler back, which its children do not inherit as ignored.

Tests marked `sources` look inside the running code (they count calls to a method they patch, or time a
function's own code): compiled modules (setup.py) call each other directly, past any patch, so where the
install compiled, they are left to `tests/test_compiled.py`, which runs them on the sources.
"""

from __future__ import annotations

import signal

import pytest
from cancelwire._compiled import COMPILED
from hypothesis import HealthCheck, settings

if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

settings.register_profile(
    "cancelwire", derandomize=True, database=None, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("cancelwire")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if not COMPILED:
        return
    on_sources = pytest.mark.skip(reason="looks inside the sources: tests/test_compiled.py runs it on them")
    for item in items:
        if item.get_closest_marker("sources"):
            item.add_marker(on_sources)
