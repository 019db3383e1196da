"""The pytest plugin (entry point `pytest11`): off unless asked.

    pytest --cancelwire                    record, audit and gate every test's MCP sessions
    pytest --cancelwire-dir DIR            the same, keeping each test's recordings and reports in DIR
    def test_x(cancelwire_audit): ...      the audit of the sessions this test opened, to assert on

Each test's sessions are recorded while it runs (setup, call and teardown: a session a fixture opens is
the test's too) through the taps on the SDK's transports (`taps`). When the test's call has ended and every
session it opened is closed, they are audited (`audits`), and a test whose sessions fail the gate fails
with the text report as its failure text. A session a fixture still holds then is audited after the
fixtures are torn down, and a failing one is reported as an error at teardown. A test that failed on its
own gets the report as a section of its failure, and no second verdict.

Importing this module costs pytest nothing when the plugin is off: the audit is imported when first used.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Generator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ..support import inert

if TYPE_CHECKING:
    from .audits import Policy, RecordedAudit
    from .taps import Recorder

GROUP = "cancelwire"
RECORDER = pytest.StashKey["Recorder"]()
POLICY = pytest.StashKey["Policy"]()
DEFERRED = pytest.StashKey[bool]()
"""Set when a test's audit waits for its teardown (a fixture still held a session when the call ended)."""
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup(GROUP, "cancelwire: audit the MCP sessions each test opens")
    group.addoption(
        "--cancelwire",
        action="store_true",
        default=False,
        help="record every MCP session a test opens through the official Python SDK (in-memory and stdio "
        "transports), audit it when the test ends with the project's cancelwire settings, and fail the test "
        "on what the gate fails",
    )
    group.addoption(
        "--cancelwire-dir",
        metavar="DIR",
        default=None,
        help="with --cancelwire (implied): keep each test's recordings and reports in DIR/<test>",
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("cancelwire") or config.getoption("cancelwire_dir"):
        _policy(config)  # a bad settings file is a usage error before any test runs
        config.pluginmanager.register(Gatekeeper(config), "cancelwire-gatekeeper")


def pytest_unconfigure(config: pytest.Config) -> None:
    taps = sys.modules.get(f"{__package__}.taps")  # imported only if a test asked for the plugin
    if taps is not None:
        taps.uninstall()


def _policy(config: pytest.Config) -> Policy:
    """The project's settings as a policy, read once per run."""
    if POLICY not in config.stash:
        from ..config import find_settings
        from ..errors import CancelwireError
        from .audits import policy_of

        try:
            config.stash[POLICY] = policy_of(find_settings(config.rootpath))
        except CancelwireError as exc:
            raise pytest.UsageError(f"cancelwire: {exc.message}") from None
    return config.stash[POLICY]


def _tapped() -> None:
    from . import taps

    if not taps.install():
        raise pytest.UsageError("cancelwire: the MCP Python SDK (`mcp`) is not installed: nothing to record")


def folder_name(nodeid: str) -> str:
    """A folder name for a test: its id in safe characters, bounded, and unique by a short hash."""
    digest = hashlib.sha256(nodeid.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{_UNSAFE.sub('_', nodeid).strip('._')[:80]}-{digest}"


class Gatekeeper:
    """`--cancelwire`: every test recorded, audited when its sessions are closed, failed on the gate."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        given = config.getoption("cancelwire_dir")
        self.keep = Path(given) if given else None
        if self.keep is not None:
            try:
                self.keep.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                shown = inert.terminal(str(self.keep))
                raise pytest.UsageError(f"cancelwire: --cancelwire-dir {shown}: {exc.strerror or exc}") from None
        _tapped()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, object, object]:
        from .taps import Recorder, recording_into

        temporary = None if self.keep is not None else Path(tempfile.mkdtemp(prefix="cancelwire-"))
        folder = temporary or (self.keep or Path()) / folder_name(item.nodeid)
        recorder = item.stash[RECORDER] = Recorder(folder)
        try:
            with recording_into(recorder):
                return (yield)
        finally:
            recorder.close()
            if temporary is not None:
                shutil.rmtree(temporary, ignore_errors=True)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        recorder = item.stash[RECORDER]
        try:
            yield
        except BaseException:
            if recorder.recordings and recorder.all_closed:
                with contextlib.suppress(pytest.fail.Exception):  # the test's own failure comes first
                    item.add_report_section("call", "cancelwire", self._audit(recorder).report)
            raise
        if recorder.recordings and not recorder.all_closed:
            item.stash[DEFERRED] = True
        elif recorder.recordings:
            self._gate(recorder)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Generator[None, None, None]:
        yield
        if item.stash.get(DEFERRED, False):
            recorder = item.stash[RECORDER]
            recorder.close()
            self._gate(recorder)

    def _audit(self, recorder: Recorder) -> RecordedAudit:
        """The audit of the test's recordings; a problem of cancelwire's own (a report that cannot be
        written into --cancelwire-dir) fails the test saying so, without a traceback."""
        from ..errors import CancelwireError
        from .audits import audit_recordings

        paths = [r.path for r in recorder.recordings]
        try:
            return audit_recordings(paths, _policy(self.config), recorder.folder if self.keep else None)
        except CancelwireError as exc:
            hint = f" ({exc.hint})" if exc.hint else ""
            pytest.fail(f"cancelwire: {inert.terminal(exc.message)}{inert.terminal(hint)}", pytrace=False)

    def _gate(self, recorder: Recorder) -> None:
        audit = self._audit(recorder)
        if not audit.passed:
            pytest.fail(
                f"cancelwire: the MCP session(s) this test opened fail the gate\n\n{audit.report}", pytrace=False
            )


@pytest.fixture
def cancelwire_audit(request: pytest.FixtureRequest) -> Generator[Callable[[], RecordedAudit], None, None]:
    """`cancelwire_audit()`: the audit of the sessions this test has opened and closed so far.

    With `--cancelwire` the test's own recordings; without it, the sessions opened after this fixture
    was set up are recorded for it (in a temporary folder), and nothing gates the test but its asserts."""
    from .audits import audit_recordings
    from .taps import Recorder, recording_into

    policy = _policy(request.config)
    recorder = request.node.stash.get(RECORDER, None)
    if recorder is not None:
        yield lambda: audit_recordings([r.path for r in recorder.recordings if r.closed], policy)
        return
    _tapped()
    with tempfile.TemporaryDirectory(prefix="cancelwire-") as folder, recording_into(Recorder(Path(folder))) as own:
        try:
            yield lambda: audit_recordings([r.path for r in own.recordings if r.closed], policy)
        finally:
            own.close()
