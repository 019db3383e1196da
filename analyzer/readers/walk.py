"""The inputs a command line names: files, pipes, standard input, and folders walked in a stable order.

Nothing found here is opened: a FIFO, socket or device found in a folder is skipped with a note
(it could block or never end), and so is a link to a folder (not followed). A folder that cannot
be listed, or that holds no file, becomes an input that fails with an `InputError` saying so, so
the report and the error output name it and the other inputs are still read.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

from ..errors import InputError, SkippedInputError
from .source import InputSource, Pipe, describe

_SPECIAL = "cancelwire reads regular files, pipes and standard input"


def expand_inputs(paths: list[str]) -> Iterator[InputSource]:
    """Inputs in a stable order; a directory is walked (hidden files and folders skipped)."""
    for given in paths:
        if given == "-":
            with closing(Pipe("<stdin>", None)) as pipe:
                yield InputSource("<stdin>", None, pipe=pipe)
            continue
        path = Path(given)
        try:
            mode = path.stat().st_mode
        except OSError:
            yield InputSource(given, path)  # opening it says what is wrong
            continue
        if stat.S_ISDIR(mode):
            yield from _walk(given, path)
        elif stat.S_ISFIFO(mode):  # a named pipe or a process substitution (/dev/fd/N)
            with closing(Pipe(given, path)) as pipe:
                yield InputSource(given, path, pipe=pipe)
        elif stat.S_ISREG(mode):
            yield InputSource(given, path)
        else:
            problem = SkippedInputError(given, f"{describe(mode)}, not a regular file: not read", _SPECIAL)
            yield InputSource(given, path, problem=problem)


def _walk(given: str, top: Path) -> Iterator[InputSource]:
    """Depth first, each folder's files (sorted) before its subfolders (sorted)."""
    files = 0
    folders = [top]
    while folders:
        folder = folders.pop()
        try:
            with os.scandir(folder) as listing:
                entries = sorted((e for e in listing if not e.name.startswith(".")), key=lambda e: e.name)
        except OSError as exc:
            name = given if folder == top else str(folder)
            problem = InputError(name, f"cannot list the folder: {exc.strerror}; nothing in it was read")
            yield InputSource(name, folder, walked=folder != top, problem=problem)
            if folder == top:
                return
            continue
        subfolders: list[Path] = []
        for entry in entries:
            full = Path(entry.path)
            kind = _kind(entry)
            if kind == "folder":
                subfolders.append(full)
            elif kind == "file":
                files += 1
                yield InputSource(str(full), full, walked=True)
            else:
                yield InputSource(str(full), full, walked=True, problem=SkippedInputError(str(full), kind))
        folders.extend(reversed(subfolders))
    if not files:
        hint = "hidden files and folders (names starting with '.') are skipped"
        problem = InputError(given, "the folder holds no file to read", hint)
        yield InputSource(given, top, problem=problem)


def _kind(entry: os.DirEntry[str]) -> str:
    """ "file", "folder", or the note saying why the entry is skipped."""
    try:
        if entry.is_dir(follow_symlinks=False):
            return "folder"
        mode = entry.stat().st_mode  # follows a link
    except OSError:
        return "file"  # a broken link, or gone: opening it says what is wrong
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "a link to a folder: not followed"
    return f"{describe(mode)}, not a regular file: not read"
