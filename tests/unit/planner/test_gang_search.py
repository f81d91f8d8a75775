"""Whole-gang search: gangs that fit only one way are placed, within a budget.

Placing members one by one in name order fails these; the search places them largest first and
backtracks, and says so when its budget runs out.
"""

from __future__ import annotations

from services.contracts.decisions import Decision, Placement
from services.planner.core.config import PlannerConfig
from tests.unit.planner.builders import (
    GIB,
    NodeBuilder,
    PodBuilder,
    PodGroupBuilder,
    make_node,
    make_pod,
    make_podgroup,
)
from tests.unit.planner.harness import Cluster

GPU = "nvidia.com/gpu"


def gpu_nodes(count: int, gpus: int = 8) -> list[NodeBuilder]:
    """Nodes of `gpus` GPUs and one cpu per GPU, so spreading (least-allocated) sees them fill."""
    return [make_node(f"n{i}").capacity(cpu_milli=gpus * 1000).resource(GPU, gpus)
            for i in range(count)]


def gpu_gang(name: str, sizes: list[int],
             min_member: int | None = None) -> list[PodGroupBuilder | PodBuilder]:
    return [make_podgroup(name, min_member or len(sizes)),
            *[make_pod(f"{name}-{i}").requests(cpu_milli=size * 1000).resource(GPU, size)
              .in_group(name) for i, size in enumerate(sizes)]]


def placed_nodes(cluster: Cluster, decisions: list[Decision]) -> dict[str, str]:
    placements = [d for d in decisions if isinstance(d, Placement)]
    return {m.name: m.node for p in placements for m in p.members}


def gpus_per_node(cluster: Cluster, nodes: dict[str, str]) -> dict[str, int]:
    used: dict[str, int] = {}
    for pod, node in nodes.items():
        used[node] = used.get(node, 0) + cluster.pod(pod).requests[GPU]
    return used


def test_a_gang_of_50_and_30_cpu_is_placed_on_nodes_of_53_and_31_free() -> None:
    cluster = Cluster().observe(
        make_node("n0").capacity(cpu_milli=53000, memory_bytes=64 * GIB),
        make_node("n1").capacity(cpu_milli=31000, memory_bytes=64 * GIB),
        make_podgroup("g", 2),
        make_pod("g-a").requests(cpu_milli=30000).in_group("g"),
        make_pod("g-b").requests(cpu_milli=50000).in_group("g"))
    nodes = placed_nodes(cluster, cluster.plan())
    assert nodes == {"g-a": "n1", "g-b": "n0"}


def test_gpu_members_of_2_3_5_6_are_placed_as_2_6_and_3_5_on_two_8_gpu_nodes() -> None:
    cluster = Cluster().observe(*gpu_nodes(2), *gpu_gang("g", [2, 3, 5, 6]))
    nodes = placed_nodes(cluster, cluster.plan())
    assert len(nodes) == 4
    assert sorted(gpus_per_node(cluster, nodes).values()) == [8, 8]


def test_a_gang_that_needs_backtracking_is_placed() -> None:
    # largest first and spread puts 5 and 4 apart, then 3+3+3 cannot follow: only {5,4}+{3,3,3}
    cluster = Cluster().observe(*gpu_nodes(2, gpus=9), *gpu_gang("g", [3, 3, 3, 4, 5]))
    nodes = placed_nodes(cluster, cluster.plan())
    assert len(nodes) == 5
    assert sorted(gpus_per_node(cluster, nodes).values()) == [9, 9]


def test_an_exhausted_search_budget_is_named_in_the_reason() -> None:
    config = PlannerConfig(search_budget_steps=3)
    cluster = Cluster(config).observe(*gpu_nodes(2, gpus=9), *gpu_gang("g", [3, 3, 3, 4, 5]))
    assert placed_nodes(cluster, cluster.plan()) == {}
    reason = cluster.last_reason("default/g")
    assert reason.startswith("gang default/g: 4 of 5 members fit; 0/2 nodes are available: ")
    assert reason.endswith("; search budget of 3 steps exhausted")


def test_a_gang_proven_not_to_fit_does_not_blame_the_budget() -> None:
    # 16 GPUs requested of 16 free, but 5+5, 5+6 or 6+5 never leave room for the third
    cluster = Cluster().observe(*gpu_nodes(2), *gpu_gang("g", [5, 6, 5]))
    assert placed_nodes(cluster, cluster.plan()) == {}
    assert cluster.last_reason("default/g") == (
        "gang default/g: 2 of 3 members fit; 0/2 nodes are available: 2 Insufficient cpu, "
        "2 Insufficient nvidia.com/gpu.")


def test_the_search_places_a_quorum_when_not_every_member_fits() -> None:
    # minMember 4 of 5: 6+2 and 5+3 fit, the 7 cannot; one by one in name order places only 3
    cluster = Cluster().observe(*gpu_nodes(2), *gpu_gang("g", [2, 3, 5, 6, 7], min_member=4))
    nodes = placed_nodes(cluster, cluster.plan())
    assert len(nodes) == 4 and "g-4" not in nodes
    assert all(used <= 8 for used in gpus_per_node(cluster, nodes).values())
    assert "1 more member(s) do not fit" in cluster.last_reason("default/g")


def test_a_search_off_config_places_member_by_member() -> None:
    cluster = Cluster(PlannerConfig(search_budget_steps=0)).observe(
        *gpu_nodes(2), *gpu_gang("g", [2, 3, 5, 6]))
    assert placed_nodes(cluster, cluster.plan()) == {}


def test_the_search_decides_the_same_every_time() -> None:
    def run() -> dict[str, str]:
        cluster = Cluster().observe(*gpu_nodes(3, gpus=9),
                                    *gpu_gang("g", [3, 3, 3, 4, 5, 2, 7]))
        return placed_nodes(cluster, cluster.plan())
    first = run()
    assert len(first) == 7
    assert all(run() == first for _ in range(3))


def test_a_starving_gang_that_fits_only_by_search_reserves_capacity() -> None:
    config = PlannerConfig(starvation_seconds=10)
    cluster = Cluster(config).observe(
        *gpu_nodes(2), make_pod("filler").requests(cpu_milli=1000).resource(GPU, 1)
        .on_node("n0"))
    cluster.observe(*gpu_gang("g", [2, 3, 5, 6]))
    cluster.plan()
    cluster.advance(11)
    cluster.plan()
    reason = cluster.last_reason("default/g")
    assert "reserving capacity on 2 node(s)" in reason
    assert "would not fit even" not in reason
    cluster.delete_pod("filler")
    cluster.advance(1)
    assert len(placed_nodes(cluster, cluster.plan())) == 4
