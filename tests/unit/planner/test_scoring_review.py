"""Found by a review of core revision 45 (non-zero requests in NodeResourcesFit's score,
balanced allocation), each once a failing test: where the planner departed from kube-scheduler
1.36 or from its own stated rules. Each test names the code and the Go it is compared with."""

from __future__ import annotations

import msgspec
import numpy as np

from services.planner.core import (
    capacity,
    derived,
    nominations,
    placement,
    scoring,
    starvation,
    volumes,
)
from services.planner.core.config import PlannerConfig
from tests.unit.planner.builders import GIB, MIB, make_node, make_pod
from tests.unit.planner.harness import Cluster


def test_the_whole_gang_search_counts_the_extra_of_members_it_placed_before() -> None:
    """placement._search / search.solve: the search takes each member's requests from
    `index.free` (its `fit`) and now counts its non-zero extra in `index.extra` too (it did
    not: the members it placed later ranked nodes as if the earlier ones requested nothing).

    The gang: `s` (400m) and `big` (900m) may only go to pool a (a1 1000m, a2 500m); one by
    one puts `s` on a1 and then `big` fits nowhere, so the search runs (big -> a1, s -> a2).
    `e1` and `e2` request nothing and may only go to pool b (two equal nodes). kube-scheduler
    (and gangsched's own one-by-one placement, checked below) puts `e2` on b2: `e1`'s 100m /
    200 MiB counts on b1 (`NonZeroRequested`). The search's ranking put both on b1."""
    nodes = {
        "a1": make_node("a1").capacity(cpu_milli=1000, memory_bytes=8 * GIB).labels(pool="a"),
        "a2": make_node("a2").capacity(cpu_milli=500, memory_bytes=8 * GIB).labels(pool="a"),
        "b1": make_node("b1").capacity(cpu_milli=4000, memory_bytes=8 * GIB).labels(pool="b"),
        "b2": make_node("b2").capacity(cpu_milli=4000, memory_bytes=8 * GIB).labels(pool="b"),
    }
    built = {name: node.build() for name, node in nodes.items()}
    members = [
        make_pod("s").requests(cpu_milli=400).selector(pool="a").build(),
        make_pod("big").requests(cpu_milli=900).selector(pool="a").build(),
        make_pod("e1").selector(pool="b").unrequested().build(),
        make_pod("e2").selector(pool="b").unrequested().build(),
    ]
    alone = capacity.build(built, {})
    trial = placement.place(alone, members[2:], PlannerConfig())
    assert {pod.name: alone.names[row] for pod, row in trial.assigned} == {
        "e1": "b1", "e2": "b2"}  # one by one: as kube-scheduler

    index = capacity.build(built, {})
    trial = placement.place(index, members, PlannerConfig())
    placed = {pod.name: index.names[row] for pod, row in trial.assigned}
    assert placed["big"] == "a1" and placed["s"] == "a2"  # the search ran
    assert {placed["e1"], placed["e2"]} == {"b1", "b2"}


def test_settled_gives_back_the_extra_of_the_pods_leaving_too() -> None:
    """nominations.settled: "the index as it will be once the pods leaving ... are gone" gives
    back each leaving pod's requests (`index.give(row, vec)`) and its non-zero extra (it gave
    back only the requests, so a preemptor's dry runs, `attempt._preempt`'s `fits`, which
    picks the nominated nodes by score, saw a BestEffort pod that is leaving as 100m / 200 MiB
    requested). Once it is gone kube-scheduler's `NonZeroRequested` no longer counts it."""
    cluster = Cluster()
    cluster.observe(make_node("n0").capacity(cpu_milli=4000, memory_bytes=8 * GIB))
    cluster.observe(make_pod("leaving").scheduler("default-scheduler").unrequested()
                    .on_node("n0"))
    cluster.apply(msgspec.structs.replace(cluster.pod("leaving"), is_deleting=True))
    index = derived.ensure(cluster.state, "gangsched").index
    assert index is not None
    row = index.row["n0"]
    assert index.extra[:, row].tolist() == [100, 200 * MIB, 0]  # cpu, memory, pods
    with nominations.settled(cluster.state, index, {}, priority=100):
        assert index.free[:, row].tolist() == index.alloc[:, row].tolist()  # requests back
        assert index.extra[:, row].tolist() == [0, 0, 0]  # ... and its extra
    assert index.extra[:, row].tolist() == [100, 200 * MIB, 0]


def _go_least(requested: int, capacity_: int) -> int:
    """least_allocated.go `leastRequestedScore`."""
    if capacity_ == 0 or requested > capacity_:
        return 0
    return ((capacity_ - requested) * 100) // capacity_


def _go_most(requested: int, capacity_: int) -> int:
    """most_allocated.go `mostRequestedScore`."""
    if capacity_ == 0:
        return 0
    return (min(requested, capacity_) * 100) // capacity_


def test_least_allocated_divides_as_go_does() -> None:
    """scoring.score_values / scores compute Go's `((capacity - requested) * 100) / capacity`
    in integers; they computed `floor((free - need) * (100.0 / alloc))`, and 100.0 / 4900
    rounds down, so 1225 free of 4900 scored 24.999999999999996 -> 24 where Go scores 25.
    With memory at 99 the node's score was (24 + 99) // 2 = 61 against kube-scheduler's
    (25 + 99) // 2 = 62.
    (Not new in revision 45: the same product was used before; about 7% of allocatable values
    between 1 and 200,000 have some amount where the two differ, e.g. 390m, 610m, 3030m, 4900m,
    and 6% of random memory sizes between 1 GB and 1 TB.)"""
    alloc = [4900, 8 * GIB]
    need = [3675, 50 * MIB]
    expected = (_go_least(need[0], alloc[0]) + _go_least(need[1], alloc[1])) // 2
    assert expected == 62
    got = scoring.score_values(list(alloc), alloc, need, 0.0, [0, 1], False)
    assert got == expected


def test_most_allocated_of_a_full_node_scores_full_as_go_does() -> None:
    """The same for MostAllocated: a node whose cpu is exactly requested (4900m of 4900m)
    scores 100 for cpu in Go (`mostRequestedScore`); it scored 99 here (4900 * (100.0 / 4900)
    = 99.99999999999999)."""
    alloc = [4900, 8 * GIB]
    spare = [4900, 8 * GIB]
    need = [4900, 4 * GIB]
    expected = (_go_most(need[0], alloc[0]) + _go_most(need[1], alloc[1])) // 2
    assert expected == 75
    got = scoring.score_values(spare, alloc, need, 0.0, [0, 1], True)
    assert got == expected


def test_the_scores_of_a_whole_index_divide_as_go_does() -> None:
    """`scoring.scores` (the vector form every placement uses) on many node sizes: each
    node's LeastAllocated score (balanced allocation left out: the pod requests neither cpu
    nor memory as given, so it is skipped) against Go's integer arithmetic."""
    sizes = list(range(3000, 5001, 10))
    built = {f"n{size:05d}": make_node(f"n{size:05d}").capacity(cpu_milli=size,
                                                                  memory_bytes=8 * GIB).build()
             for size in sizes}
    index = capacity.build(built, {})
    wrong = []
    for requested in (0, 49, 98, 303, 606, 1225):
        vec = index.vector({"pods": 1})[0]
        extra = index.vector({"cpu": requested})[0] if requested else None
        got = scoring.scores(index, vec, np.zeros(len(index), dtype=np.int64), PlannerConfig(),
                             extra=extra)
        for row in range(len(index)):
            cpu = int(index.alloc[index.col["cpu"], row])
            expected = (_go_least(requested, cpu) + 100) // 2
            if got[row] != expected:
                wrong.append((cpu, requested, float(got[row]), expected))
    assert wrong == []


def test_the_hold_ranks_with_the_members_own_extra_as_placement_does() -> None:
    """starvation._best_row (a ranking, not a placement) scores with `is_ranking` and now the
    starving member's own missing memory request (200 MiB), as one-by-one placement and the
    search's ranking count it (`extra_vector(pod, is_placed=True)`); it was left out. a
    (4 GiB) and b (64 GiB) tie without it (87); with it a scores (75 + 95) // 2 = 85 and b 87,
    so placement takes b and so does the hold (it took a)."""
    built = {"a": make_node("a").capacity(cpu_milli=4000, memory_bytes=4 * GIB).build(),
             "b": make_node("b").capacity(cpu_milli=4000, memory_bytes=64 * GIB).build()}
    pod = make_pod("p").requests(cpu_milli=1000).unrequested(cpu_milli=0).build()
    index = capacity.build(built, {})
    trial = placement.place(index, [pod], PlannerConfig())
    [(_, placed_row)] = trial.assigned
    trial.rollback()
    sticky = np.zeros(len(index), dtype=np.int64)
    held_row = starvation._best_row(index, pod, index.alloc.copy(), index.free.copy(), sticky,
                                    PlannerConfig(), {}, volumes.Choices())
    assert index.names[placed_row] == "b"
    assert held_row is not None and index.names[held_row] == "b"
