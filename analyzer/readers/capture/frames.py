"""What a capture reader hands the capture pass: one `Frame` per TCP segment (the number of any other frame),
and afterwards the `ReadProblem`s it met. Two readers give them: tshark's field pass (`tshark_fields`) and the
in-process one (`direct`); everything above (`capture_pass`, `tcp`, the HTTP layers) reads only these."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from ...model import AnomalyName


@dataclass(slots=True)
class Frame:
    """One TCP segment, never changed once made. Not frozen: a frozen dataclass sets each field through
    `object.__setattr__`, 1.6 us a frame against 0.2 us, on every frame; nor `Final` fields, which mypyc
    (setup.py) makes unwritable even to the dataclass's own `__init__`."""

    number: int
    ts: float | None
    """Seconds since 1970; None when the capture's time for the frame cannot be a clock reading."""
    stream: int
    """tshark's `tcp.stream`: conversations numbered from 0 in order of their first segment."""
    src: str
    dst: str
    sport: int
    dport: int
    seq: int
    ack: int
    flags: int
    window: int
    """The scaled receive window; -1 when tshark gave none."""
    payload: bytes
    """The captured TCP payload (shorter than `length` when the snaplen cut the frame)."""
    length: int
    """The TCP payload length on the wire (`tcp.len`)."""
    decrypted: tuple[bytes, ...]
    clock: str = ""
    """The frame's time as the capture gives it, kept only when `ts` is None (to name it)."""


@dataclass(frozen=True, slots=True)
class ReadProblem:
    """Something the reader could not read, for the capture pass to name (at `frame`, or at the last one)."""

    name: AnomalyName
    detail: str
    frame: int | None


class FrameSource(Protocol):
    def frames(self) -> Iterator[Frame | int]:
        """Every frame of the capture in file order: a `Frame` for a TCP segment, else its number."""
        ...

    def problems(self) -> list[ReadProblem]:
        """After `frames`: what could not be read. Raises `InputError` when nothing could be."""
        ...
