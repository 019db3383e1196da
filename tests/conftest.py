"""Suite-wide settings.

Property tests run derandomised and without an example database, so a CI run on a clean clone is the
same run every time, and the timing health check is off: on a loaded machine generating examples is slow,
which says nothing about the code (a test's own @settings adds to this profile; CANCELWIRE_FUZZ_EXAMPLES
runs of tests/fuzzing.py stay random on purpose).
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings

settings.register_profile(
    "cancelwire", derandomize=True, database=None, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("cancelwire")
