"""Errors cancelwire raises for problems with a user's input or setup.

    CancelwireError
    ├── InputError        an input cannot be read at all (missing, unknown format, tshark failed)
    │   ├── UnknownFormatError  no reader claims the content
    │   │   └── SkippedInputError   not a file cancelwire reads (a FIFO, socket or device found by walking)
    │   └── ToolMissingError    an external tool (tshark) is not installed
    ├── RuleFileError     a rule file in rules/ or --rules DIR is invalid
    ├── ConfigError       cancelwire.toml / [tool.cancelwire] is invalid
    ├── BaselineError     a --baseline file is invalid
    ├── ReportFileError   a JSON report given to `cancelwire diff` is not one, or is damaged
    └── OutputError       a report or table cannot be written, or would overwrite an input

Problems inside an input (a bad line, a truncated frame) are never raised: readers yield an
`Anomaly` and go on. The CLI reports a `CancelwireError` as a usage or input error (exit 2); any
other exception is a bug in cancelwire and gets its own exit status (3) and one line saying what to
report, so a CI job never mistakes a crash for findings.
Messages follow "PATH[:LINE|#FRAME]: what is wrong; what to do".
"""

from __future__ import annotations

from typing import Any


class CancelwireError(Exception):
    """Base of every error the CLI reports without a traceback."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __reduce__(self) -> tuple[Any, ...]:
        # errors cross process boundaries pickled (--jobs, --dask); Exception's own pickling would call
        # __init__ with `args`, which a subclass with other parameters (InputError) cannot take
        return (_restored, (type(self), self.__dict__))

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n  hint: {self.hint}"


class InputError(CancelwireError):
    def __init__(self, path: str, message: str, hint: str | None = None) -> None:
        super().__init__(f"{path}: {message}", hint)
        self.path = path


class UnknownFormatError(InputError):
    """No reader claims the input's content."""

    skip_note = "not a format cancelwire reads"
    """What the report says of such a file found by walking a folder: it is skipped, not an error."""


class SkippedInputError(UnknownFormatError):
    """Not a file cancelwire reads: a FIFO, socket or device (never opened when found by walking a
    folder, since it could block or never end), or a link to a folder (not followed)."""

    def __init__(self, path: str, note: str, hint: str | None = None) -> None:
        super().__init__(path, note, hint)
        self.skip_note = note


class RuleFileError(CancelwireError):
    pass


class ConfigError(CancelwireError):
    pass


class ToolMissingError(InputError):
    pass


class BaselineError(CancelwireError):
    """A --baseline file is not a cancelwire baseline, or is damaged (the message names the line)."""


class ReportFileError(CancelwireError):
    """A JSON report given to `cancelwire diff` is not one, or is damaged (the message names the field)."""


class OutputError(CancelwireError):
    """A report or exchange table cannot be written, or would overwrite one of the inputs."""


def _restored(cls: type[CancelwireError], state: dict[str, Any]) -> CancelwireError:
    error = cls.__new__(cls)
    Exception.__init__(error, state["message"])
    error.__dict__.update(state)
    return error
