"""NodeResourcesBalancedAllocation's score, as kube-scheduler 1.36 computes it.

Requests as given, fractions capped at 1, `int64((1 - |cpu - memory| / 2) * 100)` with and
without the pod, combined as `50 + (50 + with - without) / 2`; skipped for a pod requesting
neither cpu nor memory. The end-to-end `test_resource_score.py` compares the node choices with
the real kube-scheduler.
"""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from services.contracts.decisions import Placement
from services.planner.core import balanced_allocation, capacity
from tests.unit.planner.builders import GIB, make_node, make_pod
from tests.unit.planner.harness import Cluster


def index_of(*nodes: tuple[int, int, int, int]) -> capacity.NodeIndex:
    """Nodes of (cpu, memory) allocatable with (cpu, memory) requested."""
    built = {f"n{i}": make_node(f"n{i}").capacity(cpu_milli=cpu, memory_bytes=memory).build()
             for i, (cpu, memory, _, _) in enumerate(nodes)}
    used = {f"n{i}": {"cpu": cpu, "memory": memory}
            for i, (_, _, cpu, memory) in enumerate(nodes)}
    return capacity.build(built, used)


def test_the_score_is_kube_schedulers_arithmetic() -> None:
    """4 cpu / 8Gi, 2 cpu and 1Gi requested, a pod of 1 cpu and 4Gi: without it fractions .5 and
    .125 (std .1875: 81), with it .75 and .625 (std .0625: 93): 50 + (50 + 93 - 81) // 2 = 81."""
    index = index_of((4000, 8 * GIB, 2000, GIB))
    vec = index.vector({"cpu": 1000, "memory": 4 * GIB})[0]
    columns = balanced_allocation.pair(index, vec)
    assert columns is not None
    found = balanced_allocation.scores(index, index.free, index.alloc, vec, columns)
    assert found.tolist() == [81.0]
    assert balanced_allocation.value(index.free[:, 0].tolist(), index.alloc[:, 0].tolist(),
                                     vec.tolist(), columns) == 81.0


def test_a_pod_requesting_neither_cpu_nor_memory_is_skipped() -> None:
    index = index_of((4000, 8 * GIB, 0, 0))
    assert balanced_allocation.pair(index, index.vector({"nvidia.com/gpu": 0})[0]) is None
    assert balanced_allocation.pair(index, index.vector({"memory": 1})[0]) is not None


def test_a_fraction_past_allocatable_counts_as_one() -> None:
    """Other schedulers over-committed cpu (6 of 4): the fraction is 1, as with exactly 4."""
    over, full = index_of((4000, 8 * GIB, 6000, GIB)), index_of((4000, 8 * GIB, 4000, GIB))
    vec = over.vector({"cpu": 100, "memory": GIB})[0]
    columns = balanced_allocation.pair(over, vec)
    assert columns is not None
    assert (balanced_allocation.scores(over, over.free, over.alloc, vec, columns).tolist()
            == balanced_allocation.scores(full, full.free, full.alloc, vec, columns).tolist())


def test_balance_breaks_a_tie_of_least_allocated() -> None:
    """A pod of 1 cpu and 1Gi on two 4-cpu 8Gi nodes: n0 holds 2 cpu and no memory, n1 no cpu
    and 4Gi. LeastAllocated ties at 56 ((25 + 87) / 2 and (75 + 37) / 2); balance is 71 on n0
    (75 without the pod, 68 with it) and 78 on n1 (75, then 81): n1, where n0 would win the
    tie by name without it."""
    cluster = Cluster().observe(
        make_node("n0").capacity(cpu_milli=4000, memory_bytes=8 * GIB),
        make_node("n1").capacity(cpu_milli=4000, memory_bytes=8 * GIB),
        make_pod("cpu-heavy").scheduler("default-scheduler").requests(cpu_milli=2000)
        .on_node("n0"),
        make_pod("memory-heavy").scheduler("default-scheduler").requests(memory_bytes=4 * GIB)
        .on_node("n1"),
        make_pod("p").requests(cpu_milli=1000, memory_bytes=GIB))
    placed = [m.node for d in cluster.plan() if isinstance(d, Placement) for m in d.members]
    assert placed == ["n1"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 64000), st.integers(0, 256 * GIB),
                          st.integers(-1000, 80000), st.integers(-GIB, 300 * GIB)),
                min_size=1, max_size=8),
       st.integers(0, 8000), st.integers(0, 32 * GIB))
def test_the_vector_and_scalar_forms_agree(nodes: list[tuple[int, int, int, int]], cpu: int,
                                           memory: int) -> None:
    index = index_of(*nodes)
    vec = index.vector({"cpu": cpu, "memory": memory})[0]
    columns = (index.col["cpu"], index.col["memory"])
    vector = balanced_allocation.scores(index, index.free, index.alloc, vec, columns)
    scalar = [balanced_allocation.value(index.free[:, row].tolist(),
                                        index.alloc[:, row].tolist(), vec.tolist(), columns)
              for row in range(len(index))]
    assert vector.tolist() == scalar
    if all(used_cpu >= 0 and used_memory >= 0 for _, _, used_cpu, used_memory in nodes):
        # fractions in [0, 1]: balance in [50, 100], so the score in [50, 100]
        assert np.all((vector >= 50) & (vector <= 100))


def test_the_balance_kept_between_calls_follows_every_change() -> None:
    """`without` is caught up row by row (few rows changed) or anew (many): always equal to a
    fresh computation on the same free capacity."""
    rng = random.Random(45)
    index = index_of(*[(rng.choice([0, 4000, 16000]), rng.choice([0, 8 * GIB, 64 * GIB]), 0, 0)
                       for _ in range(40)])
    columns = (index.col["cpu"], index.col["memory"])
    for _ in range(200):
        for _ in range(rng.choice([1, 2, 3, 15])):
            index.take(rng.randrange(40), index.vector(
                {"cpu": rng.choice([-500, 100, 2000]), "memory": rng.choice([-GIB, 0, GIB])})[0])
        kept = balanced_allocation.without(index, columns).copy()
        index.forget_scores()
        assert kept.tolist() == balanced_allocation.without(index, columns).tolist()
