"""Whether the modules setup.py compiles with mypyc run compiled, or from their sources.

A build puts each compiled module beside its source (an editable install: in analyzer/ itself), and Python
imports an extension before a source of the same name, so after an edit the old build would still run. In a
source checkout, when any source is newer than the build, every module runs from source instead and one line
on stderr says so; CANCELWIRE_PURE=1 runs the sources anyway (to compare with the build, or to debug). It is
all or nothing: compiled modules call each other directly, past any module swapped for its source.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

PACKAGE = Path(__file__).resolve().parent
LIBRARY_GLOB = "_native_*__mypyc.*"
"""The shared library of every compiled module (setup.py: one per group)."""
EXTENSION = importlib.machinery.EXTENSION_SUFFIXES[0]


class _Sources:
    """Finds `cancelwire.X` at its source when there is one (packages and the rest: the usual finders). A
    meta path finder by shape: `importlib.abc` would import `importlib.resources`, 6 ms of every start."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith("cancelwire.") or not path:
            return None
        leaf = fullname.rpartition(".")[2]
        for folder in path:
            source = Path(folder) / f"{leaf}.py"
            if source.is_file():
                return importlib.util.spec_from_file_location(fullname, source)
        return None


def stale_sources(package: Path = PACKAGE) -> list[str]:
    """Sources of compiled modules changed since the build, in a source checkout (analyzer/); an installed
    package is never edited in place."""
    libraries = sorted(package.glob(LIBRARY_GLOB))
    if package.name != "analyzer" or not libraries:
        return []
    built = min(library.stat().st_mtime for library in libraries)
    stale = []
    for extension in package.rglob(f"*{EXTENSION}"):
        source = extension.with_name(extension.name.removesuffix(EXTENSION) + ".py")
        if source.is_file() and source.stat().st_mtime > built:
            stale.append(source.relative_to(package).as_posix())
    return sorted(stale)


def _choose() -> bool:
    """Whether the compiled modules run; if not, makes every later import of a module take its source."""
    if not any(PACKAGE.glob(LIBRARY_GLOB)):
        return False  # built pure: nothing to choose
    if os.environ.get("CANCELWIRE_PURE") != "1":
        stale = stale_sources()
        if not stale:
            return True
        print(
            f"cancelwire: {len(stale)} source(s) changed since the build ({stale[0]}, ...): running the sources;"
            " ./scripts/install compiles them again",
            file=sys.stderr,
        )
    sys.meta_path.insert(0, _Sources())
    return False


COMPILED = _choose()
"""True when the mypyc-compiled modules run (`cancelwire --version` says which)."""
