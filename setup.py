"""Build of cancelwire: the Python package, with its hot modules compiled by mypyc where it can.

mypyc compiles the type-annotated sources as they are, no second language: the modules every recorded
message passes through (capture and transcript readers, HTTP, the per-message model records, reconstruction,
judging) run 1.8x (a transcript) to 3.6x (a capture) faster (docs/benchmark.md). Everything else is in
pyproject.toml; this file only adds the extensions.

The package behaves the same compiled or not (tests/test_compiled.py compares both on every sample), so the
build falls back to pure Python, saying why, when it cannot compile: CANCELWIRE_PURE=1 is set, or there is no
C compiler or no Python headers. A failing compilation is an error, never a silent fallback.
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
import tempfile
from pathlib import Path

from setuptools import setup

ROOT = Path(__file__).resolve().parent
GROUPS = {
    "capture": (
        "readers/capture/capture_pass.py",
        "readers/capture/tcp.py",
        "readers/capture/conn.py",
        "readers/capture/over_http1.py",
        "readers/capture/bodies.py",
        "readers/capture/sessions.py",
        "readers/capture/direct.py",
        "readers/capture/packets.py",
        "readers/capture/pcap_file.py",
        "readers/capture/frames.py",
        "readers/http/http1*.py",
        "readers/http/sse.py",
    ),
    "transcript": (
        "readers/text/transcript.py",
        "readers/lines.py",
        "readers/event_factory.py",
        "model/jsonrpc.py",
        "model/events.py",
        "model/timelines.py",
    ),
    "rebuild": ("rebuild/*.py",),
    "judge": (
        "judge/engine.py",
        "judge/matching.py",
        "judge/outcomes.py",
        "judge/task_outcomes.py",
        "merge/same_session.py",
    ),
}
"""The modules compiled (patterns under analyzer/; `__init__` never), where every recorded message passes, in
groups that compile side by side, each to one shared library `cancelwire/_native_<group>__mypyc*.so`."""


def why_pure() -> str | None:
    """Why the build cannot compile (None when it can)."""
    if os.environ.get("CANCELWIRE_PURE") == "1":
        return "CANCELWIRE_PURE=1 is set"
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        return f"no C compiler ({compiler}) is installed"
    headers = Path(sysconfig.get_paths()["include"]) / "Python.h"
    if not headers.is_file():
        return f"Python's headers are not installed ({headers})"
    return None


def compiled_paths(patterns: tuple[str, ...]) -> list[str]:
    """The modules PATTERNS name, as paths through `build/mypyc-src/cancelwire`, a link to analyzer/: mypy names
    a module by the folders above its file, and the package is imported as `cancelwire`."""
    link = ROOT / "build" / "mypyc-src" / "cancelwire"
    if not link.is_symlink():
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(Path("..", "..", "analyzer"), target_is_directory=True)  # relative: the checkout may move
    found = sorted({path for pattern in patterns for path in (ROOT / "analyzer").glob(pattern)})
    return [
        (link / path.relative_to(ROOT / "analyzer")).relative_to(ROOT).as_posix()
        for path in found
        if path.name != "__init__.py"
    ]


def extensions() -> list[object]:
    reason = why_pure()
    if reason is not None:
        print(f"cancelwire: building pure Python ({reason}): the same reports, 1.8-3.6x slower", file=sys.stderr)
        return []
    from mypyc.build import mypycify

    groups = [(compiled_paths(patterns), f"cancelwire._native_{name}") for name, patterns in GROUPS.items()]
    # Not the project's [tool.mypy] (what it checks, and how strictly, is for the suite); third-party packages
    # absent from the build environment (all but pyproject's build requirements) are Any to mypyc.
    options = ["--ignore-missing-imports", "--config-file="]
    # A fresh cache each build: separate groups make mypyc incremental, and rebuilding one group against another's
    # cached IR takes a plain class there (model.events.Anomaly) for a native one, and the C does not compile.
    with tempfile.TemporaryDirectory(prefix="cancelwire-mypyc-") as cache:
        paths = [path for paths, _ in groups for path in paths]
        built = list(mypycify([*options, f"--cache-dir={cache}", *paths], separate=groups, opt_level="3"))
    return built


setup(ext_modules=extensions(), options={"build_ext": {"parallel": os.cpu_count() or 1}})
