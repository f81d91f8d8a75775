"""NodeResourcesFit's score counts missing container requests as 100m cpu and 200 MiB memory.

kube-scheduler 1.36 scores LeastAllocated and MostAllocated with every container's missing cpu
or memory request counted (`NonMissingContainerRequests`), for the pod placed and for every pod
already on the node (`NodeInfo.NonZeroRequested`); the fit is unaffected. The watcher carries
what a pod's missing requests add (`PodObserved.nonzero_extra`, `.unrequested()` here); these
tests check the planner scores with it. The end-to-end `test_resource_score.py` compares the
same choices with the real kube-scheduler.
"""

from __future__ import annotations

import numpy as np

from services.contracts.decisions import Decision, Placement
from services.planner.core import capacity, scoring
from services.planner.core.config import MOST_ALLOCATED, PlannerConfig
from tests.unit.planner.builders import GIB, MIB, make_node, make_pod, make_podgroup
from tests.unit.planner.harness import Cluster


def members_on(decisions: list[Decision]) -> dict[str, str]:
    return {m.name: m.node for d in decisions if isinstance(d, Placement) for m in d.members}


def nodes(count: int, cpu_milli: int = 4000, memory_bytes: int = 8 * GIB) -> list[object]:
    return [make_node(f"n{i}").capacity(cpu_milli=cpu_milli, memory_bytes=memory_bytes)
            for i in range(count)]


def test_a_gang_of_pods_requesting_nothing_spreads_over_the_nodes() -> None:
    """The first member makes n0 requested 100m/200Mi: the second scores 95 there (200m of
    4000, 400Mi of 8Gi) and 97 on n1 and n2; the third goes to n2. Scored as given, all three
    would score 100 everywhere and go to n0 (ties break by name)."""
    cluster = Cluster().observe(*nodes(3), make_podgroup("g", 3),
                                *[make_pod(f"g-{i}").in_group("g").unrequested()
                                  for i in range(3)])
    assert members_on(cluster.plan()) == {"g-0": "n0", "g-1": "n1", "g-2": "n2"}


def test_pods_requesting_nothing_already_on_a_node_make_it_less_free() -> None:
    """Another scheduler's three BestEffort pods count 300m/600Mi on n0: a pod of 100m/100Mi
    scores 90 there ((4000 - 400) / 4000 and (8192 - 700) / 8192) and 97 on n1."""
    busy = [make_pod(f"web-{i}").scheduler("default-scheduler").unrequested().on_node("n0")
            for i in range(3)]
    cluster = Cluster().observe(*nodes(2), *busy,
                                make_pod("p").requests(cpu_milli=100, memory_bytes=100 * MIB))
    assert members_on(cluster.plan()) == {"p": "n1"}


def test_a_request_of_zero_counts_zero() -> None:
    """A pod with no extra (every request given, 0 included) leaves its node as free as an
    empty one: n0 (first by name) is taken over n1, where one BestEffort pod counts."""
    cluster = Cluster().observe(
        *nodes(2), make_pod("zero").scheduler("default-scheduler").on_node("n0"),
        make_pod("other").scheduler("default-scheduler").unrequested().on_node("n1"),
        make_pod("p").requests(cpu_milli=100, memory_bytes=100 * MIB))
    assert members_on(cluster.plan()) == {"p": "n0"}


def test_most_allocated_packs_onto_the_nodes_with_pods_requesting_nothing() -> None:
    """MostAllocated: n1's BestEffort pod makes it the fuller node, so both members go there;
    scored as given, n0 and n1 would tie and the first would go to n0."""
    config = PlannerConfig(scoring=MOST_ALLOCATED)
    cluster = Cluster(config).observe(
        *nodes(2), make_pod("web").scheduler("default-scheduler").unrequested().on_node("n1"),
        make_podgroup("g", 2), *[make_pod(f"g-{i}").in_group("g").requests(cpu_milli=100)
                                 for i in range(2)])
    assert members_on(cluster.plan()) == {"g-0": "n1", "g-1": "n1"}


def test_past_allocatable_least_allocated_scores_zero_and_most_allocated_full() -> None:
    """kube-scheduler's `leastRequestedScore` is 0 and `mostRequestedScore` counts requested
    as allocatable once the non-zero requests exceed allocatable (200 pods of 100m on 8 cpu)."""
    node = make_node("n0").capacity(cpu_milli=8000, memory_bytes=64 * GIB).build()
    index = capacity.build({"n0": node}, {})
    index.charge("n0", {"pods": 200}, 1, {"cpu": 20000, "memory": 200 * 200 * MIB})
    vec = index.vector({"cpu": 100, "memory": MIB})[0]
    penalty = np.zeros(1, dtype=np.int64)
    least = scoring.scores(index, vec, penalty, PlannerConfig())
    most = scoring.scores(index, vec, penalty, PlannerConfig(scoring=MOST_ALLOCATED))
    # memory: 40000Mi + 1Mi of 65536Mi: least (65536 - 40001) * 100 // 65536 = 38. Balanced
    # allocation reads the requests as given (none on the node): 100 without the pod, 99 with
    # it (cpu 1/80, memory 1/65536), so 50 + (50 + 99 - 100) // 2 = 74 is added to both.
    balanced = 74
    assert least.tolist() == [(0 + 38) // 2 + balanced]
    assert most.tolist() == [(100 + 61) // 2 + balanced]
    assert scoring.score_row(index, 0, vec, 0, PlannerConfig()) == least[0]


def test_what_the_index_counts_follows_charges_and_a_rebuild() -> None:
    """The extra counted on a node is the sum over the pods charged there, kept as pods come
    and go and equal after the index is rebuilt (a node added). The web pod's 1000m makes n1
    score 86 ((75 + 97) / 2), so both members go to n0 (97, then 97 again: cpu 100, memory
    (8192 - 400) * 100 // 8192 = 95)."""
    cluster = Cluster().observe(*nodes(2), make_podgroup("g", 2),
                                *[make_pod(f"g-{i}").in_group("g").unrequested(cpu_milli=0)
                                  for i in range(2)],
                                make_pod("web").scheduler("default-scheduler")
                                .unrequested(cpu_milli=1000, memory_bytes=0).on_node("n1"))
    cluster.run()
    derived = cluster.state.derived
    assert derived is not None and derived.index is not None
    index = derived.index
    memory, cpu = index.col["memory"], index.col["cpu"]
    counted = {name: (int(index.extra[cpu, row]), int(index.extra[memory, row]))
               for name, row in index.row.items()}
    assert counted == {"n0": (0, 400 * MIB), "n1": (1000, 0)}
    cluster.delete_pod("web")
    cluster.observe(make_node("n2").capacity(cpu_milli=4000, memory_bytes=8 * GIB))
    cluster.plan()
    rebuilt = cluster.state.derived.index if cluster.state.derived else None
    assert rebuilt is not None
    assert {name: (int(rebuilt.extra[cpu, row]), int(rebuilt.extra[memory, row]))
            for name, row in rebuilt.row.items()} == {
        "n0": (0, 400 * MIB), "n1": (0, 0), "n2": (0, 0)}
