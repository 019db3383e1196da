from analyzer.spool import Spool


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
