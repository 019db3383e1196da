"""Output files: never over an input, and written whole or not at all.

A report written over the recording it audits destroys the evidence, so an output that is the same
file as an input (by device and inode: through a symlink, a hard link or another spelling of the
path), or as any file found by walking an input folder, is refused before anything is written.
Outputs go to a temp file beside the target that replaces it only when complete, so a full disk,
a crash or a kill leaves the old file (or nothing), never half a report.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import tempfile
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

from .errors import OutputError

_HELD = (signal.SIGINT, signal.SIGTERM)


def refuse_inputs(outputs: Iterable[tuple[str, Path]], inputs: Iterable[str | Path]) -> None:
    """Raise OutputError when an existing output (option, path) is one of the inputs."""
    targets: dict[tuple[int, int], tuple[str, Path]] = {}
    for option, path in outputs:
        identity = _identity(path)
        if identity is None:
            continue
        if identity in targets:
            raise OutputError(f"{path}: {option} and {targets[identity][0]} name the same file")
        targets[identity] = (option, path)
    if not targets:
        return
    for given in inputs:
        if str(given) == "-":
            continue
        for found in _files(Path(given)):
            hit = targets.get(_identity(found) or (-1, -1))
            if hit is not None:
                shown = str(given) if found == Path(given) else f"{found}, found in {given}"
                raise OutputError(
                    f"{hit[1]}: {hit[0]} would overwrite an input ({shown})",
                    "write the output somewhere else; cancelwire never overwrites what it audits",
                )


def _identity(path: Path) -> tuple[int, int] | None:
    """Device and inode of a regular file (through symlinks); None when there is none."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) else None


def _files(path: Path) -> Iterator[Path]:
    """PATH, or every file under it (hidden ones too: an output there would still land on evidence)."""
    if not path.is_dir():
        yield path
        return
    for root, _dirs, names in os.walk(path):
        for name in names:
            yield Path(root) / name


class AtomicOutput:
    """A file that appears complete or not at all: a temp file in the target's own folder (so the
    rename cannot cross file systems), renamed over the target by `commit`, removed otherwise.
    Something that is not a regular file (`/dev/stderr`, a FIFO) is written directly.

    The temp file is created at once, so an unwritable place fails before the audit runs.
    """

    def __init__(self, path: Path, option: str) -> None:
        self.path = Path(os.path.realpath(path))  # a symlinked output keeps its link
        self.option = option
        self.given = path
        existing = _mode(self.path)
        if existing is not None and stat.S_ISDIR(existing):
            raise OutputError(f"{path}: cannot write the {option} output: it is a directory")
        self.direct = existing is not None and not stat.S_ISREG(existing)
        self.temp: Path | None = None
        if self.direct:
            return
        try:
            with _signals_held():  # a Ctrl-C or SIGTERM between creating and naming it would leak it
                fd, name = tempfile.mkstemp(
                    prefix=f".{self.path.name}.", suffix=f".cancelwire-tmp{self.path.suffix}", dir=self.path.parent
                )
                self.temp = Path(name)
            os.close(fd)
            os.chmod(self.temp, stat.S_IMODE(existing) if existing is not None else _default_mode())
        except OSError as exc:
            self.discard()
            raise self.error(exc) from None
        except BaseException:  # the held signal arrives as the block ends: the caller never sees this object
            self.discard()
            raise

    @property
    def writing(self) -> Path:
        """Where to write now (a device or FIFO by the name given: a table writer reads its suffix)."""
        return self.temp if self.temp is not None else self.given

    def error(self, exc: OSError) -> OutputError:
        return OutputError(f"{self.given}: cannot write the {self.option} output: {exc.strerror or exc}")

    def commit(self) -> None:
        if self.temp is not None:
            try:
                os.replace(self.temp, self.path)
            except OSError as exc:
                self.discard()
                raise self.error(exc) from None
            self.temp = None

    def discard(self) -> None:
        if self.temp is not None:
            with contextlib.suppress(FileNotFoundError):
                self.temp.unlink()
            self.temp = None


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM wait until the block ends, then go to the handlers there were (not lost).

    Python runs signal handlers in the main thread whichever thread the kernel picked, so swapping the
    handlers holds them in every case (a signal mask would only cover this thread).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = {sig: signal.signal(sig, lambda signum, _frame: caught.append(signum)) for sig in _HELD}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)
        for signum in caught:
            signal.raise_signal(signum)


def _mode(path: Path) -> int | None:
    try:
        return os.stat(path).st_mode
    except OSError:
        return None


def _default_mode() -> int:
    """What open() would give a new file: 0o666 less the umask (read without changing it for good)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask
