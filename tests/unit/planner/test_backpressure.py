"""Backpressure: no gang is placed while `max_placements_in_flight` placements await outcomes."""

from __future__ import annotations

from services.contracts.decisions import Placement, Rejection
from services.planner.core.config import PlannerConfig
from tests.unit.planner.builders import make_node, make_pod, make_podgroup
from tests.unit.planner.harness import Cluster


def _cluster(limit: int) -> Cluster:
    cluster = Cluster(config=PlannerConfig(max_placements_in_flight=limit)).observe(
        make_node("n0").capacity(cpu_milli=16000))
    for g in range(4):
        cluster.observe(make_podgroup(f"g{g}", min_member=2),
                        *[make_pod(f"g{g}-{i}").in_group(f"g{g}").requests(cpu_milli=1000)
                          for i in range(2)])
    return cluster


def test_at_the_limit_the_rest_wait_untold_and_go_once_one_settles() -> None:
    cluster = _cluster(limit=2)
    first = cluster.plan()
    placed = [d for d in first if isinstance(d, Placement)]
    assert [p.group for p in placed] == ["default/g0", "default/g1"]
    assert not [d for d in first if isinstance(d, Rejection)]  # held back, nothing failed
    assert not [d for d in cluster.plan() if isinstance(d, Placement)]  # still full
    cluster.bind([placed[0]])
    assert [d.group for d in cluster.plan() if isinstance(d, Placement)] == ["default/g2"]


def test_zero_means_no_limit() -> None:
    placed = [d for d in _cluster(limit=0).plan() if isinstance(d, Placement)]
    assert [p.group for p in placed] == [f"default/g{g}" for g in range(4)]
