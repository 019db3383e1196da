"""How the model's records are built (`record`), and the two scalar types they share.

Every record of `events`, `timelines` and `findings` is a `record`, but the six built or read per message in
compiled code (setup.py): `Origin`, `Message`, `MessageEvent`, `TransportEvent`, `TimelineEntry` and
`RequestTimeline` (and the readers' `SseEvent`) spell out what `record` makes, as mypyc compiles it into a
native class, whose fields compiled code reads directly: a slotted dataclass with `Final` fields (mypy rejects
assigning one, and so does the run time), a written `__init__` (the dataclass's own would run interpreted) and
a `__reduce__` that pickles it as (class, field values). `tests/test_compiled.py` checks each `__init__` sets
every field. The package imports them all from `model`.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, fields
from typing import Any, TypeVar, dataclass_transform

RequestId = int | str
Revision = str

T = TypeVar("T")


@dataclass_transform(frozen_default=True)
def record(cls: type[T]) -> type[T]:
    """A slotted dataclass that mypy treats as frozen (assigning a field is a type error).

    Not frozen at run time: a frozen dataclass sets each field through `object.__setattr__`, which
    makes building one about three times slower (Message: 300 -> 115 ns), and the pipeline builds
    several per message. `mypy --strict` (run by the test suite) keeps the records immutable;
    `unsafe_hash` keeps them hashable by value, as frozen ones are. They pickle as (class, field
    values), which reads back about 3x faster than slot by slot (cancelled calls are spooled to disk).
    """
    built = dataclass(slots=True, unsafe_hash=True)(cls)
    values = operator.attrgetter(*(f.name for f in fields(built)))  # type: ignore[arg-type]

    def reduce(self: T) -> tuple[type[T], tuple[Any, ...]]:
        return (built, values(self))

    built.__reduce__ = reduce  # type: ignore[assignment,method-assign]
    return built
