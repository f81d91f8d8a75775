"""ScheduleAnyway constraints in scoring, as PodTopologySpread scores them: the values are the
plugin's own (scoring_test.go, TestPodTopologySpreadScore), before its weight of 2."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pytest

from services.contracts.decisions import Placement
from services.contracts.events import NodeObserved, NodeSelectorRequirement, PodObserved
from services.planner.core import capacity, spread, spread_score
from services.planner.core.capacity import NodeIndex
from tests.unit.planner.builders import make_node, make_pod, make_podgroup
from tests.unit.planner.harness import Cluster

HOST = "kubernetes.io/hostname"
FOO = (NodeSelectorRequirement("foo", "Exists"),)


def cluster_index(nodes: list[NodeObserved], pods_per_node: Mapping[str, int]) -> NodeIndex:
    index = capacity.build({node.name: node for node in nodes}, {})
    for name, count in pods_per_node.items():
        for k in range(count):
            pod = make_pod(f"{name}-{k}").labelled(foo="").on_node(name).build()
            index.set_pod(pod.uid, name, pod, is_ours=False)
    return index


def host_nodes(*names: str, without_key: tuple[str, ...] = ()) -> list[NodeObserved]:
    return [make_node(name).labels(**({"n": name} if name in without_key else {HOST: name}))
            .build() for name in names]


def normalized(index: NodeIndex, pod: PodObserved, failed: tuple[str, ...] = ()
               ) -> list[int]:
    feasible = np.array([name not in failed for name in index.names], dtype=np.bool_)
    counted = spread.Counted(index, pod, action="ScheduleAnyway")
    scores = spread_score.scores(counted, feasible) / spread_score.WEIGHT
    return [int(scores[index.row[name]]) for name in index.names if name not in failed]


def soft(key: str, max_skew: int = 1,
         selector: tuple[NodeSelectorRequirement, ...] | None = FOO) -> PodObserved:
    return (make_pod("p").labelled(foo="")
            .spread(key, max_skew=max_skew, when="ScheduleAnyway", selector=selector).build())


@pytest.mark.parametrize(("max_skew", "counts", "expected"), [
    (1, (2, 1, 0, 3), [20, 60, 100, 0]),
    (2, (2, 1, 0, 3), [33, 66, 100, 16]),
    (3, (4, 3, 2, 1), [44, 66, 77, 100]),
    (1, (1, 1, 0, 0), [0, 0, 100, 100]),  # raw round(1 * ln 6) = 2: min 0, max 2
])
def test_host_spread_scores_fewest_matching_pods_best(max_skew: int,
                                                      counts: tuple[int, int, int, int],
                                                      expected: list[int]) -> None:
    names = ("node-a", "node-b", "node-c", "node-d")
    index = cluster_index(host_nodes(*names), dict(zip(names, counts, strict=True)))
    assert normalized(index, soft(HOST, max_skew)) == expected


def test_no_existing_pods_scores_every_node_100() -> None:
    index = cluster_index(host_nodes("node-a", "node-b"), {})
    assert normalized(index, soft(HOST)) == [100, 100]


def test_a_null_selector_scores_every_node_100() -> None:
    names = ("node-a", "node-b", "node-c", "node-d")
    index = cluster_index(host_nodes(*names), dict(zip(names, (2, 1, 0, 3), strict=True)))
    assert normalized(index, soft(HOST, selector=None)) == [100, 100, 100, 100]


def test_only_candidate_nodes_are_scored_and_normalized() -> None:
    index = cluster_index(host_nodes("node-a", "node-b", "node-x", "node-y"),
                          {"node-a": 4, "node-b": 2, "node-x": 1, "node-y": 3})
    assert normalized(index, soft(HOST), failed=("node-y",)) == [33, 83, 100]


def test_a_candidate_without_the_key_scores_0() -> None:
    index = cluster_index(host_nodes("node-a", "node-b", "node-x", "node-y",
                                     without_key=("node-b",)),
                          {"node-a": 4, "node-b": 2, "node-x": 1, "node-y": 3})
    assert normalized(index, soft(HOST), failed=("node-y",)) == [16, 0, 100]


def test_zone_spread_counts_every_node_of_the_zone_even_a_failed_one() -> None:
    nodes = [make_node(name).labels(zone=zone, **{HOST: name}).build()
             for name, zone in (("node-a", "zone1"), ("node-b", "zone1"), ("node-x", "zone2"),
                                ("node-y", "zone2"))]
    index = cluster_index(nodes, {"node-a": 4, "node-b": 2, "node-x": 1, "node-y": 3})
    assert normalized(index, soft("zone"), failed=("node-y",)) == [75, 75, 100]


def test_a_schedule_anyway_gang_spreads_over_zones_that_scoring_alone_would_pack() -> None:
    # zone a's big node wins least-allocated for every member; the spread score outweighs it
    nodes = [make_node("a1").capacity(cpu_milli=64000).labels(zone="a"),
             make_node("b1").capacity(cpu_milli=8000).labels(zone="b")]
    gang = [make_pod(f"g-{i}").requests(cpu_milli=1000).in_group("g").labelled(foo="")
            .spread("zone", when="ScheduleAnyway", selector=FOO) for i in range(4)]
    cluster = Cluster().observe(*nodes, make_podgroup("g", 4), *gang)
    placed = [m.node for d in cluster.plan() if isinstance(d, Placement) for m in d.members]
    assert sorted(placed) == ["a1", "a1", "b1", "b1"]
    plain = [make_pod(f"g-{i}").requests(cpu_milli=1000).in_group("g") for i in range(4)]
    packed = Cluster().observe(*nodes, make_podgroup("g", 4), *plain)
    assert [m.node for d in packed.plan() if isinstance(d, Placement)
            for m in d.members] == ["a1"] * 4


def test_the_normalizing_weight_is_the_natural_log_correctly_rounded() -> None:
    assert spread_score.normalizing_weight(2) == pytest.approx(1.3862943611198906, abs=0)
