"""Scoring: least/most allocated, PreferNoSchedule penalty, name tie-break, gang locality."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.contracts.decisions import Decision, Placement
from services.planner.core import capacity, scoring
from services.planner.core.config import MOST_ALLOCATED, PlannerConfig
from tests.unit.planner.builders import NodeBuilder, make_node, make_pod, make_podgroup
from tests.unit.planner.harness import Cluster


def nodes_of(decisions: list[Decision]) -> list[str]:
    return [m.node for d in decisions if isinstance(d, Placement) for m in d.members]


def two_pods(config: PlannerConfig | None = None, *nodes: NodeBuilder) -> list[str]:
    cluster = Cluster(config).observe(*nodes, make_pod("a").requests(cpu_milli=1000),
                                      make_pod("b").requests(cpu_milli=1000))
    return nodes_of(cluster.plan())


def test_least_allocated_spreads() -> None:
    assert two_pods(None, make_node("n0"), make_node("n1")) == ["n0", "n1"]


def test_most_allocated_packs() -> None:
    config = PlannerConfig(scoring=MOST_ALLOCATED)
    assert two_pods(config, make_node("n0"), make_node("n1")) == ["n0", "n0"]


def test_ties_break_by_node_name() -> None:
    cluster = Cluster().observe(make_node("zeta"), make_node("alpha"), make_pod("p"))
    assert nodes_of(cluster.plan()) == ["alpha"]


def test_prefer_no_schedule_taint_is_avoided_unless_tolerated() -> None:
    tainted = make_node("n0").capacity(cpu_milli=64000).taint("spot", "yes", "PreferNoSchedule")
    busy = make_node("n1").capacity(cpu_milli=2000)
    cluster = Cluster().observe(tainted, busy, make_pod("p").requests(cpu_milli=1000),
                                make_pod("q").requests(cpu_milli=1000).tolerate("spot", "yes"))
    placed = {d.group: d.members[0].node for d in cluster.plan() if isinstance(d, Placement)}
    assert placed == {"default/pod:p": "n1", "default/pod:q": "n0"}


def test_taint_penalty_is_reverse_normalized_over_the_feasible_rows_weight_3() -> None:
    """Counts 2, 1, 0, 4 (the 4 not feasible): max 2 -> 3 * (100 * count // 2) = 300, 150, 0;
    kube-scheduler's score is 300 minus it (0, 150, 300)."""
    untolerated = np.array([2, 1, 0, 4], dtype=np.int64)
    feasible = np.array([True, True, True, False])
    assert scoring.taint_penalty(untolerated, feasible).tolist() == [300.0, 150.0, 0.0, 0.0]


def test_taint_penalty_is_zero_when_no_feasible_row_has_a_taint() -> None:
    """Max 0: DefaultNormalizeScore(reverse) gives every row 100, so nothing is taken."""
    untolerated = np.array([0, 0, 3], dtype=np.int64)
    feasible = np.array([True, True, False])
    assert scoring.taint_penalty(untolerated, feasible).tolist() == [0.0, 0.0, 0.0]


def test_taint_penalty_rounds_down_as_int64_division() -> None:
    """Counts 1, 3: 3 * (100 * 1 // 3) = 99 and 300."""
    feasible = np.array([True, True])
    assert scoring.taint_penalty(np.array([1, 3], dtype=np.int64), feasible).tolist() == [
        99.0, 300.0]


def test_gang_locality_keeps_a_gang_in_one_zone() -> None:
    zone = "topology.kubernetes.io/zone"
    nodes = [make_node(f"n{i}").capacity(cpu_milli=2000).label(zone, "ab"[i // 2])
             for i in range(4)]
    pods = [make_pod(f"g-{i}").requests(cpu_milli=1000).in_group("g") for i in range(4)]
    spread = Cluster().observe(*nodes, make_podgroup("g", 4), *pods)
    assert sorted(nodes_of(spread.plan())) == ["n0", "n1", "n2", "n3"]
    local = Cluster(PlannerConfig(prefer_topology=True)).observe(*nodes, make_podgroup("g", 4),
                                                                  *pods)
    assert sorted(nodes_of(local.plan())) == ["n0", "n0", "n1", "n1"]


def test_gang_locality_falls_back_to_all_nodes_when_no_zone_holds_the_gang() -> None:
    zone = "topology.kubernetes.io/zone"
    nodes = [make_node(f"n{i}").capacity(cpu_milli=1000).label(zone, f"z{i}") for i in range(3)]
    pods = [make_pod(f"g-{i}").requests(cpu_milli=1000).in_group("g") for i in range(3)]
    cluster = Cluster(PlannerConfig(prefer_topology=True)).observe(*nodes, make_podgroup("g", 3),
                                                                   *pods)
    assert sorted(nodes_of(cluster.plan())) == ["n0", "n1", "n2"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 16000), st.integers(0, 16000), st.integers(0, 9000)),
                min_size=1, max_size=6),
       st.integers(0, 4000), st.integers(0, 4000), st.sampled_from(["least-allocated",
                                                                  "most-allocated"]),
       st.integers(0, 20000), st.integers(0, 200))
def test_vector_and_scalar_scores_agree(nodes: list[tuple[int, int, int]], cpu: int,
                                        memory: int, strategy: str, node_extra: int,
                                        pod_extra: int) -> None:
    """Also with missing container requests counted on the nodes and the pod (`extra`)."""
    built = [make_node(f"n{i}").capacity(cpu_milli=c, memory_bytes=m).build()
             for i, (c, m, _) in enumerate(nodes)]
    used = {f"n{i}": {"cpu": u} for i, (_, _, u) in enumerate(nodes)}
    index = capacity.build({node.name: node for node in built}, used)
    for i in range(len(nodes)):
        index.charge(f"n{i}", {}, 1, {"cpu": node_extra * i, "memory": node_extra})
    config = PlannerConfig(scoring=strategy)
    vec = index.vector({"cpu": cpu, "memory": memory})[0]
    extra = index.vector({"cpu": pod_extra})[0] if pod_extra else None
    penalty = np.zeros(len(index), dtype=np.int64)
    vector = scoring.scores(index, vec, penalty, config, extra=extra)
    assert [int(x) for x in vector] == [scoring.score_row(index, row, vec, 0, config, extra)
                                        for row in range(len(index))]


def test_an_unknown_scoring_strategy_is_refused() -> None:
    with pytest.raises(ValueError, match="scoring must be one of"):
        PlannerConfig(scoring="random")
