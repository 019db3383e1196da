"""Files cancelwire reads besides recordings: its own data folders, and the TOML a user hands it.

Settings and rule files are as hostile as any input: a name can stand for a FIFO (opening it to read
blocks until a writer comes), an endless device (/dev/zero), a huge file or TOML nested thousands
deep. `read_toml` reads regular files only, opened without blocking, bounded in size, and turns every
problem into the caller's error class naming the file.
"""

from __future__ import annotations

import os
import stat
import tomllib
from pathlib import Path
from typing import Any

from ..errors import CancelwireError

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def data_dir(name: str) -> Path:
    """`rules/` or `templates/`: from a checkout, or the copy packed into the wheel (`_data/`)."""
    here = Path(__file__).resolve().parent.parent  # the package: support/ is one of its folders
    for candidate in (here / "_data" / name, here.parent / name):
        if candidate.is_dir():
            return candidate
    raise CancelwireError(f"{here}: the {name}/ folder is missing (a broken installation)", "reinstall cancelwire")


def kind_of(mode: int) -> str:
    return next((text for test, text in _KINDS if test(mode)), "not a regular file")


def read_toml(path: Path, *, limit: int, what: str, error: type[CancelwireError]) -> dict[str, Any]:
    """The TOML document at PATH: a regular file of at most LIMIT bytes, or ERROR naming the file."""
    data = read_regular(path, limit=limit, what=what, error=error)
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise error(f"{path}: the {what} file is not UTF-8 (byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: not valid TOML: {exc}") from None
    except ValueError as exc:  # tomllib lets int() refuse a number of more than 4300 digits
        raise error(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:
        raise error(f"{path}: the {what} file is nested too deeply to read") from None


def read_regular(path: Path, *, limit: int, what: str, error: type[CancelwireError]) -> bytes:
    """The bytes of PATH: a regular file (never a FIFO or device) of at most LIMIT bytes, or ERROR."""
    try:
        before = os.stat(path)  # a FIFO or device is refused before it is opened
        if not stat.S_ISREG(before.st_mode):
            raise error(f"{path}: the {what} file is {kind_of(before.st_mode)}; it must be a regular file")
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):  # swapped since the stat
                raise error(f"{path}: the {what} file is not a regular file")
            data = handle.read(limit + 1)
    except OSError as exc:
        raise error(f"{path}: cannot read the {what} file: {exc.strerror}") from None
    if len(data) > limit:
        raise error(f"{path}: the {what} file is larger than {limit // 1024} KiB; that is not a {what} file")
    return data


def shown(value: object, width: int = 60) -> str:
    """A value from a user's file, shown in an error message: bounded, and never a deep repr."""
    if isinstance(value, str):
        return repr(value if len(value) <= width else value[:width] + "…")
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"a number of {value.bit_length()} bits"
    if isinstance(value, bool | int | float):
        return repr(value)
    if isinstance(value, dict):
        return "a table"
    return "a list" if isinstance(value, list) else type(value).__name__


def key_text(key: object, width: int = 60) -> str:
    """A key from a user's TOML in a key path: bare when TOML would write it bare, else quoted."""
    text = str(key)
    if len(text) > width:
        return repr(text[:width] + "…")
    return text if text and all(c.isascii() and (c.isalnum() or c in "-_") for c in text) else repr(text)
