"""A partly bound gang at rest completes before any other gang takes capacity.

A rollback cannot unbind bare pods (no controller recreates them), so a gang rolled back after
some members were bound keeps them bound below minMember. That gang queues first, whatever the
priority or age of the others, and reserves what it still needs every round, backoff or not;
it is placed again only once its backoff is over (a bind that always fails is not retried every
round).
"""

from __future__ import annotations

import msgspec

from services.contracts.decisions import Placement, Rejection
from services.contracts.events import GroupRolledBack
from services.planner.core import quorum
from services.planner.core.quorum import Counts
from tests.unit.planner.builders import make_node, make_pod, make_podgroup, pod_uid
from tests.unit.planner.harness import Cluster, replay


def rolled_back_with_two_bare_members_bound(
        others_cpu_milli: int = 0) -> tuple[Cluster, Placement]:
    """Gang g (4 of 1 cpu) placed on n0 (4 cpu); the binder bound g-0 and g-1, then rolled
    back and kept both (bare pods); meanwhile another scheduler bound `others_cpu_milli` there.
    """
    cluster = Cluster().observe(
        make_node("n0").capacity(cpu_milli=4000), make_podgroup("g", 4),
        *[make_pod(f"g-{i}").requests(cpu_milli=1000).in_group("g") for i in range(4)])
    placement = next(d for d in cluster.plan() if isinstance(d, Placement))
    cluster.advance(1)
    for name in ("g-0", "g-1"):
        pod = cluster.pod(name)
        cluster.apply(msgspec.structs.replace(pod, node_name="n0", phase="Running",
                                              at_ms=cluster.now_ms))
    cluster.apply(GroupRolledBack(at_ms=cluster.now_ms, decision_id=placement.id,
                                  group=placement.group, reason="deadline passed",
                                  deleted_pods=()))
    if others_cpu_milli:
        cluster.observe(make_pod("dns").requests(cpu_milli=others_cpu_milli)
                        .scheduler("default-scheduler").on_node("n0"))
    return cluster, placement


def test_a_gang_with_members_bound_below_min_member_is_stranded() -> None:
    assert quorum.is_stranded(Counts(bound=2, reserved=0, pending=2, gated=0), 4)
    assert not quorum.is_stranded(Counts(bound=0, reserved=0, pending=4, gated=0), 4)
    assert not quorum.is_stranded(Counts(bound=2, reserved=2, pending=0, gated=0), 4)
    assert not quorum.is_stranded(Counts(bound=4, reserved=0, pending=1, gated=0), 4)


def test_a_stranded_gang_holds_its_room_in_backoff_then_goes_before_higher_priority() -> None:
    cluster, _ = rolled_back_with_two_bare_members_bound()
    cluster.observe(make_podgroup("h", 2),
                    *[make_pod(f"h-{i}").requests(cpu_milli=1000).in_group("h").priority(100)
                      for i in range(2)])
    decisions = cluster.plan()  # g is backed off after its rollback: it holds, h waits
    assert not any(isinstance(d, Placement) for d in decisions)
    assert any(isinstance(d, Rejection) and d.group == "default/h" for d in decisions)
    cluster.advance(5)
    placed = [d for d in cluster.plan() if isinstance(d, Placement)]
    assert [(p.group, [m.name for m in p.members]) for p in placed] == [
        ("default/g", ["g-2", "g-3"])]
    cluster.bind(list(placed))
    assert cluster.bound() == ["g-0", "g-1", "g-2", "g-3"]


def test_a_stranded_gang_whose_binds_keep_failing_is_retried_at_its_backoff_only() -> None:
    cluster, _ = rolled_back_with_two_bare_members_bound()
    placements = 0
    for _ in range(40):  # 20 s of rounds every half second
        for decision in cluster.plan():
            if isinstance(decision, Placement):
                placements += 1
                cluster.apply(GroupRolledBack(
                    at_ms=cluster.now_ms, decision_id=decision.id, group=decision.group,
                    reason="bind refused: forbidden", deleted_pods=()))
        cluster.advance(0.5)
    assert 1 <= placements <= 6, placements  # exponential backoff, not one per round


def test_a_stranded_gang_that_does_not_fit_reserves_what_it_needs_from_later_gangs() -> None:
    # g-0 and g-1 hold 2 cpu, another scheduler's pod 1: one is free, g needs two more; a
    # one-pod gang h of higher priority wants the one
    cluster, _ = rolled_back_with_two_bare_members_bound(others_cpu_milli=1000)
    cluster.observe(make_podgroup("h", 1),
                    make_pod("h-0").requests(cpu_milli=1000).in_group("h").priority(100))
    for _ in range(3):
        decisions = cluster.plan()
        assert not any(isinstance(d, Placement) for d in decisions)
        cluster.advance(5)
    assert "already bound: reserving capacity on 1 node(s)" in cluster.last_reason("default/g")
    assert cluster.node_of("h-0") is None
    # the node grows: g completes first
    cluster.observe(make_node("n0").capacity(cpu_milli=5000).labels(grown="yes"))
    placed = [d for d in cluster.plan() if isinstance(d, Placement)]
    assert placed[0].group == "default/g"
    assert pod_uid("g-2") in {m.pod_uid for m in placed[0].members}


def test_the_stranded_rule_replays_to_the_same_decisions() -> None:
    cluster, _ = rolled_back_with_two_bare_members_bound(others_cpu_milli=1000)
    cluster.observe(make_pod("h-0").requests(cpu_milli=1000))
    cluster.plan()
    cluster.advance(5)
    cluster.plan()
    first = replay(cluster.log, cluster.config)
    assert first == replay(cluster.log, cluster.config) and first
