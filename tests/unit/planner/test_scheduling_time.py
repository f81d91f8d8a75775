"""The PodGroup scheduling duration: creation to minMember bound, once each time."""

from __future__ import annotations

from services.contracts.decisions import Placement
from services.contracts.events import GroupBound, GroupRolledBack
from services.planner.scheduling_time import SchedulingTimes
from tests.unit.planner.builders import make_node, make_pod, make_podgroup
from tests.unit.planner.harness import Cluster

CREATED_MS = 0


def test_a_gang_counts_once_when_min_member_are_bound_and_again_after_a_rollback() -> None:
    cluster = Cluster().observe(
        make_node("n0").capacity(cpu_milli=4000),
        make_podgroup("g", 2).created(CREATED_MS),
        *[make_pod(f"g-{i}").requests(cpu_milli=1000).in_group("g") for i in range(3)])
    times = SchedulingTimes(cluster.config.scheduler_name)
    cluster.advance(2.5)
    placements = [d for d in cluster.plan() if isinstance(d, Placement)]
    bound_at = cluster.now_ms
    cluster.bind(list(placements))  # applies MemberBound/GroupBound events
    bound = GroupBound(at_ms=bound_at, decision_id=placements[0].id, group="default/g")
    assert bound_at > CREATED_MS
    assert times.newly_scheduled([bound], cluster.state) == [(bound_at - CREATED_MS) / 1000]
    assert times.newly_scheduled([bound], cluster.state) == []  # once
    rolled = GroupRolledBack(at_ms=bound_at, decision_id="x", group="default/g", reason="r",
                             deleted_pods=())
    assert times.newly_scheduled([rolled, bound], cluster.state) == [
        (bound_at - CREATED_MS) / 1000]


def test_a_gang_below_min_member_or_without_a_podgroup_is_not_measured() -> None:
    cluster = Cluster().observe(make_node("n0").capacity(cpu_milli=4000),
                                make_pod("solo").requests(cpu_milli=1000))
    times = SchedulingTimes(cluster.config.scheduler_name)
    bound = GroupBound(at_ms=cluster.now_ms, decision_id="1-0", group="default/g")
    assert times.newly_scheduled([bound], cluster.state) == []
