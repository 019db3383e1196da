"""Every cancelled call of an audit, with its report form, kept mostly on disk.

The reports need each call as plain data (`forms.cancellation`: about 25 µs a call, most of it its
timeline); the gates, the datasets and library users need the `CancelledCall` itself. Both are kept, in
two spools, and each reader reads only its own. The form is made where the call is added: a worker
process packs its calls with their forms (`pack`), and the merging process appends both pickled batches
as they are, so with `--jobs N` the conversion runs in the workers, in parallel, and writing the report
costs reading forms back, not converting 7,000 calls one after another.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from .forms import cancellation
from .model import CancelledCall
from .spool import Spool


@dataclass(frozen=True, slots=True)
class Packed:
    """Cancelled calls and their report forms, each pickled as one list in the process that judged them."""

    calls: bytes
    forms: bytes
    outcomes: dict[str, int]
    """How many calls have each outcome, in the order first seen (adding up to how many there are)."""

    def __len__(self) -> int:
        return sum(self.outcomes.values())


def pack(calls: list[CancelledCall]) -> Packed | None:
    """CALLS with their forms, pickled for a `Cancellations` in another process (None: no calls)."""
    if not calls:
        return None
    outcomes: dict[str, int] = {}
    for call in calls:
        outcomes[call.outcome.value] = outcomes.get(call.outcome.value, 0) + 1
    return Packed(
        calls=pickle.dumps(calls, protocol=pickle.HIGHEST_PROTOCOL),
        forms=pickle.dumps([cancellation(c) for c in calls], protocol=pickle.HIGHEST_PROTOCOL),
        outcomes=outcomes,
    )


class Cancellations:
    """Cancelled calls in the order added (iterating gives the calls), and their report forms (`forms`)."""

    def __init__(self, in_memory: int = 2000) -> None:
        self._calls: Spool[CancelledCall] = Spool(in_memory)
        self._forms: Spool[dict[str, Any]] = Spool(in_memory)

    def append(self, call: CancelledCall) -> None:
        self._calls.append(call)
        self._forms.append(cancellation(call))

    def extend_packed(self, packed: Packed) -> None:
        """Calls packed elsewhere, after those added so far, never unpickled here until read."""
        self._calls.extend_pickled(packed.calls, len(packed))
        self._forms.extend_pickled(packed.forms, len(packed))

    def __len__(self) -> int:
        return len(self._calls)

    def __iter__(self) -> Iterator[CancelledCall]:
        return iter(self._calls)

    def forms(self) -> Iterable[dict[str, Any]]:
        """Each call's report form, in order (re-iterable). Every pass reads new dicts from disk, so a
        report may add to them (the HTML page numbers and anchors its calls) without another seeing it."""
        self._forms.flush()
        return self._forms

    def close(self) -> None:
        self._calls.close()
        self._forms.close()
