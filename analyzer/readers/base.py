"""What every reader shares: the `Reader` protocol and the `ReadOptions` it is given.

Readers import this module (and `source`), never the package `__init__`, which imports them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Protocol

from ..model import Event, Vantage
from .inflate import DEFAULT_LIMITS, InflateLimits
from .source import InputSource

__all__ = ["InputSource", "ReadOptions", "Reader"]


class CaptureReaderChoice(StrEnum):
    """`--capture-reader`: what reads a capture's packets."""

    AUTO = "auto"
    """The direct reader, unless the capture needs tshark (a key log to decrypt TLS with, or a link type
    the direct reader does not decode)."""
    DIRECT = "direct"
    """In-process (`capture/direct.py`), never tshark."""
    TSHARK = "tshark"
    """tshark's field pass."""


@dataclass(frozen=True, slots=True)
class ReadOptions:
    """Reader settings from the command line; every reader gets the same object."""

    vantage: Vantage | None = None
    """`--vantage`: where the recording was made, as the user states it. The only place this
    override lives: readers apply it through `session_vantage` when they announce a session, and
    the go-sdk and ndjson readers take a client or server vantage as the side that wrote the log."""
    http_ports: tuple[int, ...] = ()
    """Captures: TCP ports to decode as HTTP whatever their content looks like."""
    keylog: Path | None = None
    """Captures: an SSLKEYLOGFILE to decrypt TLS."""
    capture_reader: CaptureReaderChoice = CaptureReaderChoice.AUTO
    """Captures: `--capture-reader`."""
    inflate: InflateLimits = DEFAULT_LIMITS
    """How far a gzip input is inflated (`--max-inflated`, `--max-inflate-ratio`)."""

    def session_vantage(self, known: Vantage) -> Vantage:
        """The vantage of a session whose format says (or whose reader inferred) `known`."""
        return self.vantage or known


class Reader(Protocol):
    name: str
    """Format name shown in reports and accepted by `--input-format`."""

    def sniff(self, head: bytes) -> bool:
        """True when the first bytes look like this format."""
        ...

    def read(self, source: InputSource, options: ReadOptions) -> Iterator[Event]:
        """Every event of the input in source order. Bad lines/frames become `Anomaly`s;
        only `InputError` is raised, for an input that cannot be read at all."""
        ...
