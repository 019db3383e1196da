import json
import pickle

from cancelwire.model import CancelledCall, CancelMechanism, Certainty, Origin, Outcome, forms
from cancelwire.run.cancellations import Cancellations, pack
from cancelwire.support.spool import SortedSpool, Spool


def test_spool_keeps_order_across_memory_and_disk_and_iterates_twice() -> None:
    spool: Spool[tuple[int, str]] = Spool(in_memory=3)
    for i in range(10):
        spool.append((i, str(i)))
    assert len(spool) == 10
    assert spool._items == [(9, "9")]  # only the newest stay in memory
    assert list(spool) == [(i, str(i)) for i in range(10)]
    assert list(spool) == [(i, str(i)) for i in range(10)]
    spool.close()


def test_empty_spool() -> None:
    assert list(Spool()) == [] and len(Spool()) == 0


def test_sorted_spool_goes_key_by_key_each_in_the_order_added() -> None:
    spool: SortedSpool[tuple[int, str], int] = SortedSpool(in_memory_per_key=2)
    for i in range(9):
        spool.append((-(i % 3), "b" if i % 2 else "a"), i)
    assert len(spool) == 9
    assert list(spool) == [2, 8, 5, 4, 1, 7, 0, 6, 3]  # keys (-2,a) (-2,b) (-1,a) (-1,b) (0,a) (0,b)
    assert list(spool) == [2, 8, 5, 4, 1, 7, 0, 6, 3]  # read again (two keys spilled to disk)
    spool.close()


def test_items_pickled_elsewhere_join_the_spool_in_order_without_being_unpickled_here() -> None:
    spool: Spool[int] = Spool(in_memory=3)
    spool.append(0)
    spool.append(1)
    spool.extend_pickled(pickle.dumps([2, 3, 4]), 3)  # after the two held in memory, which go first
    assert spool._items == [] and len(spool) == 5
    spool.extend_pickled(pickle.dumps([5]), 1)
    for i in range(6, 10):
        spool.append(i)
    assert len(spool) == 10
    assert list(spool) == list(range(10))
    assert list(spool) == list(range(10))
    spool.close()


def _calls(outcomes: list[Outcome], first_id: int = 1) -> list[CancelledCall]:
    return [
        CancelledCall(
            session_key="s",
            request_id=first_id + n,
            method="tools/call",
            tool="t",
            mechanism=CancelMechanism.NOTIFICATION,
            outcome=outcome,
            certainty=Certainty.EXACT,
            explanation="why",
            evidence=(Origin("rec.jsonl", line=first_id + n),),
        )
        for n, outcome in enumerate(outcomes)
    ]


def test_cancelled_calls_packed_elsewhere_join_in_order_with_their_json_texts() -> None:
    late, silent = Outcome.LATE_RESULT_VIOLATION, Outcome.OUTCOME_UNVERIFIED
    here, there, after = _calls([late]), _calls([silent, late, silent], 2), _calls([late], 5)
    packed = pack(there)
    assert packed is not None and len(packed) == 3
    assert packed.outcomes == {"outcome-unverified": 2, "late-result-violation": 1}  # in the order first seen
    assert pack([]) is None
    calls = Cancellations(in_memory=2)
    calls.append(here[0])
    calls.extend_packed(packed)
    calls.append(after[0])
    everything = [*here, *there, *after]
    assert len(calls) == 5
    assert list(calls) == everything
    texts = [forms.listed_json(forms.cancellation(c)) for c in everything]
    assert list(calls.texts()) == texts
    assert list(calls.texts()) == texts  # read again
    assert [json.loads(t)["request_id"] for t in texts] == [1, 2, 3, 4, 5]
    calls.close()
