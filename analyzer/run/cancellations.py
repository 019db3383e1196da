"""Every cancelled call of an audit, with its entry of the JSON report, kept mostly on disk.

The JSON report lists every call as the JSON text of its form (`forms.cancellation`: about 25 µs a
call, most of it its timeline, then 3 µs to write); the gates, the datasets, library users and the
reports people read (which list a few hundred calls at most) need the `CancelledCall` itself. Both are
kept, in two spools, and each reader reads only its own. The JSON text is made where the call is added:
a worker process packs its calls with their texts (`pack`), and the merging process appends both
pickled batches as they are, so with `--jobs N` the conversion runs in the workers, in parallel, and
writing the JSON report costs reading strings back, not converting 7,000 calls one after another.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ..model import CancelledCall
from ..model.forms import cancellation, listed_json
from ..support.spool import Spool


def json_text(call: CancelledCall) -> str:
    """CALL as the JSON report lists it."""
    return listed_json(cancellation(call))


@dataclass(frozen=True, slots=True)
class Packed:
    """Cancelled calls and their JSON texts, each pickled as one list in the process that judged them."""

    calls: bytes
    texts: bytes
    outcomes: dict[str, int]
    """How many calls have each outcome, in the order first seen (adding up to how many there are)."""

    def __len__(self) -> int:
        return sum(self.outcomes.values())


def pack(calls: list[CancelledCall]) -> Packed | None:
    """CALLS with their JSON texts, pickled for a `Cancellations` in another process (None: no calls)."""
    if not calls:
        return None
    outcomes: dict[str, int] = {}
    for call in calls:
        outcomes[call.outcome.value] = outcomes.get(call.outcome.value, 0) + 1
    return Packed(
        calls=pickle.dumps(calls, protocol=pickle.HIGHEST_PROTOCOL),
        texts=pickle.dumps([json_text(c) for c in calls], protocol=pickle.HIGHEST_PROTOCOL),
        outcomes=outcomes,
    )


class Cancellations:
    """Cancelled calls in the order added (iterating gives the calls), and their JSON texts (`texts`).

    A call appended here waits in memory with the others (`in_memory` at most), then they are packed
    together as a worker packs its task's (`pack`): converting and pickling a batch in one go costs
    half what it costs call by call between the audit's other work (the heavy bench, 8.3k calls)."""

    def __init__(self, in_memory: int = 64) -> None:
        self.in_memory = in_memory
        self._waiting: list[CancelledCall] = []
        self._calls: Spool[CancelledCall] = Spool(in_memory)
        self._texts: Spool[str] = Spool(in_memory)

    def append(self, call: CancelledCall) -> None:
        self._waiting.append(call)
        if len(self._waiting) >= self.in_memory:
            self._pack_waiting()

    def extend_packed(self, packed: Packed) -> None:
        """Calls packed elsewhere, after those added so far, never unpickled here until read."""
        self._pack_waiting()
        self._spool(packed)

    def _pack_waiting(self) -> None:
        packed = pack(self._waiting)
        self._waiting = []
        if packed is not None:
            self._spool(packed)

    def _spool(self, packed: Packed) -> None:
        self._calls.extend_pickled(packed.calls, len(packed))
        self._texts.extend_pickled(packed.texts, len(packed))

    def __len__(self) -> int:
        return len(self._calls) + len(self._waiting)

    def __iter__(self) -> Iterator[CancelledCall]:
        self._pack_waiting()
        return iter(self._calls)

    def texts(self) -> Iterable[str]:
        """Each call as the JSON report lists it (`json_text`), in order (re-iterable)."""
        self._pack_waiting()
        return self._texts

    def close(self) -> None:
        self._waiting = []
        self._calls.close()
        self._texts.close()
