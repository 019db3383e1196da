"""The compact memory of finished requests (`rebuild.remembered.KindMemory`, issue 20): it remembers and
forgets exactly what the plain one (`Memory`) does, whatever the ids, and costs a fraction of it a call."""

from __future__ import annotations

import random
import tracemalloc

from cancelwire.model import EntryKind, Origin, SessionStart, Side, TimelineEntry, Transport, Vantage
from cancelwire.rebuild.entrylog import EntryLog
from cancelwire.rebuild.finished import FinishedRequests, TokenState
from cancelwire.rebuild.pending import SessionState
from cancelwire.rebuild.remembered import MAX_KINDS, Kind, KindMemory, Kinds, Memory
from cancelwire.rebuild.request import PendingRequest

KINDS = [Kind("tools/call", True, False), Kind("tools/call", False, False), Kind("sampling/createMessage", True, True)]


def _ids(rng: random.Random, step: int) -> list[object]:
    """Ids as sessions use them: counted up (with a few reused), strings, far integers, huge integers."""
    counted = [n * step for n in range(40)]
    return [*counted, *rng.sample(counted, 10), "a", "b", "7", -3, 10**6, 2**63 + 5, -(2**70), True, 1.5]


def _same(
    plain: Memory[object, tuple[Kind, float | None]], compact: KindMemory, stores: list[str], ids: list[object]
) -> None:
    for store in stores:
        for key in ids:
            assert compact.get(store, key) == plain.get(store, key), (store, key)


def test_it_remembers_and_forgets_what_the_plain_memory_does() -> None:
    """Random puts (a key put again goes last) and removals over three stores, with ids of every sort,
    against `Memory`: the same answer for every (store, id) after every step, and the same steps on which
    the oldest had to be forgotten. Small limits, so that forgetting, trimming and compaction all happen."""
    for seed in range(40):
        rng = random.Random(seed)
        limit = rng.choice([1, 3, 17, 64, 200])
        plain: Memory[object, tuple[Kind, float | None]] = Memory(limit)
        compact = KindMemory(limit, Kinds())
        stores = ["s0", "s1", "s2"]
        ids = _ids(rng, rng.choice([1, 2, 5, 300]))
        for step in range(1_500):
            store, key = rng.choice(stores), rng.choice(ids)
            if rng.random() < 0.15:
                plain.pop(store, key)
                compact.pop(store, key)
            else:
                kind = rng.choice(KINDS)
                ts = None if rng.random() < 0.1 else step / 7
                assert compact.put(store, key, kind, ts, compact.kinds.number(kind)) == plain.put(
                    store, key, (kind, ts)
                ), (seed, step)
            if step % 50 == 0:
                _same(plain, compact, stores, ids)
        _same(plain, compact, stores, ids)


def test_kinds_past_the_numbered_ones_are_kept_whole() -> None:
    compact = KindMemory(MAX_KINDS + 10, Kinds())
    for n in range(MAX_KINDS + 5):
        kind = Kind(f"m{n}", True, False)
        compact.put("s", n, kind, float(n), compact.kinds.number(kind))
    assert compact.get("s", 3) == (Kind("m3", True, False), 3.0)
    assert compact.get("s", MAX_KINDS + 4) == (Kind(f"m{MAX_KINDS + 4}", True, False), float(MAX_KINDS + 4))


def test_one_id_put_again_and_again_keeps_it_small() -> None:
    compact = KindMemory(1_000, Kinds())
    for n in range(100_000):
        compact.put(f"s{n % 3}", 7, KINDS[0], float(n), compact.kinds.number(KINDS[0]))
    assert compact.get("s0", 7) == (KINDS[0], 99_999.0)
    assert len(compact._queue) <= 2 * 3 + 16
    assert all(len(store.codes) <= 2 * 3 + 16 for store in compact._stores.values())


def test_a_long_session_keeps_its_arrays_to_what_it_remembers() -> None:
    """Ids counted up past the limit: the oldest go, and with them their places in the arrays and the table."""
    compact = KindMemory(1_000, Kinds())
    for n in range(100_000):
        compact.put("s", n, KINDS[0], float(n), compact.kinds.number(KINDS[0]))
    (store,) = compact._stores.values()
    assert compact.get("s", 98_999) is None and compact.get("s", 99_000) == (KINDS[0], 99_000.0)
    assert len(store.codes) <= 2 * 1_000


def _session(key: str) -> SessionState:
    origin = Origin("f", line=1)
    start = SessionStart(0, 0.0, origin, key, Transport.STREAMABLE_HTTP, Vantage.WIRE, "pcap")
    return SessionState(start)


def _calls(sessions: int, calls: int) -> list[tuple[SessionState, PendingRequest]]:
    """SESSIONS sessions of CALLS tools/call each, ids counted up from 1 and their progress tokens from
    1,000 (as an SDK numbers them), each with its last entry."""
    made = []
    for n in range(sessions):
        session = _session(f"s{n}")
        for request_id in range(1, calls + 1):
            item = PendingRequest(
                requester=Side.CLIENT,
                request_id=request_id,
                method="tools/call",
                seq=request_id,
                tool="write",
                progress_token=request_id + 1_000,
                is_task=False,
                stream=None,
                declared_revision=None,
                log=EntryLog(8),
            )
            item.log.add(
                TimelineEntry(
                    EntryKind.RESULT, Side.SERVER, request_id, 1e9 + request_id, Origin("f", frame=request_id)
                )
            )
            made.append((session, item))
    return made


def per_call(sessions: int, calls: int) -> float:
    """Traced memory a finished call and its token cost (what `retire` keeps), over SESSIONS x CALLS."""
    made = _calls(sessions, calls)
    finished = FinishedRequests(limit=sessions * calls)
    tracemalloc.start()
    try:
        for session, item in made:
            finished.retire(session, item, judged=True, own_token=True)
        cost = tracemalloc.get_traced_memory()[0] / len(made)
    finally:
        tracemalloc.stop()
    session, item = made[-1]
    assert finished.token(session.key, item.progress_token) == ("tools/call", TokenState.FINISHED)
    assert finished.request(session.key, Side.CLIENT, item.request_id) is not None
    return cost


def test_a_finished_call_costs_few_bytes() -> None:
    """One session of 20,000 calls (a stdio transcript), and 400 sessions of 50 (the big capture: 603
    sessions, 47 calls each). Measured: 71 B and 97 B a call; 188 B and 223 B with a dict of tombstone
    objects per session, which also kept the id and the token objects alive (made before: not counted
    here), 64 B more."""
    assert per_call(1, 20_000) <= 90
    assert per_call(400, 50) <= 120
