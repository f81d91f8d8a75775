"""When an oversubscribed benchmark run is complete: no pod that is still unbound can bind."""

from __future__ import annotations

from bench.cluster.run import nothing_fits
from bench.cluster.workload import Gang, Pod, Workload


def workload(sizes: list[int], singletons: int = 0, slots: int = 10) -> Workload:
    """One node of `slots` slots; gangs of `sizes` (and `singletons` lone pods) in order."""
    gangs = tuple(Gang(f"g{i}", size, 256) for i, size in enumerate(sizes))
    pods = tuple(Pod(f"{gang.name}-{m}", gang.name, 256) for gang in gangs
                 for m in range(gang.size))
    pods += tuple(Pod(f"s{i}", None, 256) for i in range(singletons))
    return Workload("c", 1, slots, gangs, pods, is_oversubscribed=True)


def test_full_when_every_gang_short_of_members_needs_more_than_the_free_slots() -> None:
    load = workload([4, 5, 6])  # 15 pods, 10 slots
    assert nothing_fits(load, 9, [4, 5, 0])  # 1 slot free, g2 needs 6
    assert nothing_fits(load, 10, [4, 0, 6])  # none free


def test_not_full_while_a_gang_fits_the_free_slots() -> None:
    load = workload([4, 5, 6])
    assert not nothing_fits(load, 5, [0, 5, 0])  # 5 free: g0 (4) fits
    assert not nothing_fits(load, 4, [4, 0, 0])  # 6 free: g1 and g2 fit


def test_a_partly_bound_gang_needs_only_its_missing_members() -> None:
    load = workload([4, 5, 6])
    assert not nothing_fits(load, 8, [4, 4, 0])  # 2 free, g1 lacks 1
    assert not nothing_fits(load, 9, [4, 4, 1])  # 1 free, g1 lacks 1
    assert nothing_fits(load, 9, [4, 3, 2])  # 1 free, g1 lacks 2, g2 lacks 4


def test_an_unbound_singleton_fits_any_free_slot() -> None:
    load = workload([4, 5], singletons=3)  # 12 pods, 10 slots
    assert not nothing_fits(load, 9, [4, 5])  # a singleton can take the last slot
    assert nothing_fits(load, 10, [4, 5])
    assert nothing_fits(workload([6, 6], singletons=0), 6, [6, 0])
