"""Output files: never over an input, and written whole or not at all.

A report written over the recording it audits destroys the evidence, so an output that is the same
file as an input (by device and inode: through a symlink, a hard link or another spelling of the
path), or as any file found by walking an input folder, is refused before anything is written.
Outputs go to a temp file beside the target that replaces it only when complete, so a full disk,
a crash or a kill leaves the old file (or nothing), never half a report. An output that is not a
regular file (a FIFO, `/dev/stdout`, a shell's `>(...)`) is written directly, and is opened without
blocking first: a FIFO nobody reads is an error before the audit, never a run that waits forever.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import signal
import stat
import tempfile
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

from ..errors import OutputError

_HELD = (signal.SIGINT, signal.SIGTERM)
#: The file GitHub Actions gives a step for its job summary (`--format github` appends to it).
STEP_SUMMARY = "GITHUB_STEP_SUMMARY"


def refuse_inputs(outputs: Iterable[tuple[str, Path]], inputs: Iterable[str | Path]) -> None:
    """Raise OutputError when an existing output (option, path) is one of the inputs."""
    targets: dict[tuple[int, int], tuple[str, Path]] = {}
    named: dict[object, str] = {}
    for option, path in outputs:
        identity = _identity(path)
        key = identity or _place(path)  # two spellings of one new file are one file too
        if key in named:
            raise OutputError(f"{path}: {option} and {named[key]} name the same file")
        named[key] = option
        if identity is not None:
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


def refuse_folder_in_inputs(option: str, folder: Path, inputs: Iterable[str | Path]) -> None:
    """Raise OutputError when FOLDER (`--dataset`) is an input folder or inside one: its new files would
    be walked as recordings by the next audit of that folder."""
    where = Path(os.path.realpath(folder))
    for given in inputs:
        if str(given) == "-" or not os.path.isdir(given):
            continue
        top = Path(os.path.realpath(given))
        if where == top or top in where.parents:
            raise OutputError(
                f"{folder}: {option} is inside an input folder ({given})",
                "write it somewhere else; cancelwire never writes into what it audits",
            )


def _identity(path: Path) -> tuple[int, int] | None:
    """Device and inode of a regular file (through symlinks); None when there is none."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) else None


def appending(path: Path, what: str) -> int:
    """A descriptor appending to PATH, created when missing (`GITHUB_STEP_SUMMARY`); a folder, a FIFO
    nobody reads or a place that cannot be written is an OutputError naming WHAT."""
    mode = _mode(path)
    if mode is not None and stat.S_ISDIR(mode):
        raise OutputError(f"{path}: cannot write the {what}: it is a directory")
    return open_nonblocking(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, f"the {what}")


def open_nonblocking(path: Path, flags: int, what: str) -> int:
    """PATH opened with FLAGS without waiting (a FIFO with no reader is an error), then made blocking
    again so that writes wait for a slow reader as they would on a pipe."""
    try:
        fd = os.open(path, flags | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC, 0o666)
    except OSError as exc:
        if exc.errno == errno.ENXIO and stat.S_ISFIFO(_mode(path) or 0):  # a device says ENXIO for itself
            raise OutputError(
                f"{path}: cannot write {what}: it is a FIFO that nobody reads",
                "start its reader first; cancelwire never waits for one",
            ) from None
        raise OutputError(f"{path}: cannot write {what}: {exc.strerror or exc}") from None
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    return fd


def _place(path: Path) -> tuple[str, str]:
    """Where a file that does not exist yet would be: its folder resolved, and its name."""
    return os.path.realpath(path.parent), path.name


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
        self.option = option
        self.given = path
        existing = _mode(path)  # by the name given: /dev/fd/N of a pipe has no real path to resolve
        if existing is not None and stat.S_ISDIR(existing):
            raise OutputError(f"{path}: cannot write the {option} output: it is a directory")
        self.direct = existing is not None and not stat.S_ISREG(existing)
        self.temp: Path | None = None
        self._held: int | None = None
        if self.direct:
            self.path = path
            self._held = self._open_direct()
            return
        self.path = Path(os.path.realpath(path))  # a symlinked output keeps its link
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
        """Where to write now (a device or FIFO by the name given: a table writer reads its suffix).

        A FIFO is checked again for a reader first: opening it by name would wait for one forever."""
        if self.temp is not None:
            return self.temp
        if self.direct:
            os.close(self._open_direct())
        return self.given

    def error(self, exc: OSError) -> OutputError:
        return OutputError(f"{self.given}: cannot write the {self.option} output: {exc.strerror or exc}")

    def _open_direct(self) -> int:
        """A descriptor on the FIFO or device, opened without blocking: none when a FIFO has no reader."""
        return open_nonblocking(self.given, os.O_WRONLY, f"the {self.option} output")

    def commit(self) -> None:
        self._release()
        if self.temp is not None:
            try:
                os.replace(self.temp, self.path)
            except OSError as exc:
                self.discard()
                raise self.error(exc) from None
            self.temp = None

    def discard(self) -> None:
        self._release()
        if self.temp is not None:
            with contextlib.suppress(FileNotFoundError):
                self.temp.unlink()
            self.temp = None

    def _release(self) -> None:
        """Close the descriptor held on a FIFO since the start (it kept its reader from seeing an end)."""
        if self._held is not None:
            with contextlib.suppress(OSError):
                os.close(self._held)
            self._held = None


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
