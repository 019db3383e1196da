"""cancelwire: audit recorded MCP sessions for what happens around cancellation.

    import cancelwire
    with cancelwire.audit(["session.jsonl"]) as result:
        for finding in result.findings: ...
        calls = result.to_dataframe("cancellations")

Importing the package loads nothing else: the pipeline is imported on first use of `audit`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# first: whether the compiled modules or their sources are imported from here on (its docstring)
from . import _compiled  # noqa: F401
from ._version import __version__

if TYPE_CHECKING:
    from .api import audit
    from .errors import CancelwireError, ConfigError, InputError, RuleFileError
    from .model import Outcome, Severity
    from .run.results import AuditResult

__all__ = [
    "AuditResult",
    "CancelwireError",
    "ConfigError",
    "InputError",
    "Outcome",
    "RuleFileError",
    "Severity",
    "__version__",
    "audit",
]

_HOMES = {
    "audit": "api",
    "AuditResult": "run.results",
    "CancelwireError": "errors",
    "ConfigError": "errors",
    "InputError": "errors",
    "RuleFileError": "errors",
    "Outcome": "model",
    "Severity": "model",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'cancelwire' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{_HOMES[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
