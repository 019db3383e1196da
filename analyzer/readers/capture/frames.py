"""What a capture reader hands the capture pass: one `Frame` per TCP segment (the number of any other frame),
and afterwards the `ReadProblem`s it met. Two readers give them: tshark's field pass (`tshark_fields`) and the
in-process one (`direct`); everything above (`capture_pass`, `tcp`, the HTTP layers) reads only these."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final, Protocol

from ...model import AnomalyName


@dataclass(slots=True, init=False)
class Frame:
    """One TCP segment. Its fields are `Final` and its `__init__` written out: mypyc compiles a written
    `__init__` (the dataclass's own runs interpreted, about 5x slower on every frame) and keeps `Final`
    fields read-only after it, as mypy does."""

    number: Final[int]
    ts: Final[float | None]
    """Seconds since 1970; None when the capture's time for the frame cannot be a clock reading."""
    stream: Final[int]
    """tshark's `tcp.stream`: conversations numbered from 0 in order of their first segment."""
    src: Final[str]
    dst: Final[str]
    sport: Final[int]
    dport: Final[int]
    seq: Final[int]
    ack: Final[int]
    flags: Final[int]
    window: Final[int]
    """The scaled receive window; -1 when tshark gave none."""
    payload: Final[bytes]
    """The captured TCP payload (shorter than `length` when the snaplen cut the frame)."""
    length: Final[int]
    """The TCP payload length on the wire (`tcp.len`)."""
    decrypted: Final[tuple[bytes, ...]]
    clock: Final[str]
    """The frame's time as the capture gives it, kept only when `ts` is None (to name it)."""

    def __init__(
        self,
        number: int,
        ts: float | None,
        stream: int,
        src: str,
        dst: str,
        sport: int,
        dport: int,
        seq: int,
        ack: int,
        flags: int,
        window: int,
        payload: bytes,
        length: int,
        decrypted: tuple[bytes, ...],
        clock: str = "",
    ) -> None:
        self.number, self.ts, self.stream = number, ts, stream
        self.src, self.dst, self.sport, self.dport = src, dst, sport, dport
        self.seq, self.ack, self.flags, self.window = seq, ack, flags, window
        self.payload, self.length, self.decrypted, self.clock = payload, length, decrypted, clock


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
