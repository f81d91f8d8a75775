"""A partly bound gang at rest completes before any other gang of its priority takes capacity.

A rollback cannot unbind bare pods (no controller recreates them), so a gang rolled back after
some members were bound keeps them bound below minMember. That gang queues first among the
groups of its priority, whatever their age, and reserves what it still needs every round,
backoff or not; it is placed again only once its backoff is over (a bind that always fails is
not retried every round). A group of higher priority queues ahead of it, as in kube-scheduler's
queue: it takes free room the stranded gang holds, and preempts nothing to get around it.
"""

from __future__ import annotations

import msgspec

from services.contracts.decisions import Placement, Preemption, Rejection
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


def test_a_stranded_gang_holds_its_room_in_backoff_then_goes_before_its_priority() -> None:
    cluster, _ = rolled_back_with_two_bare_members_bound()
    cluster.observe(make_podgroup("h", 2),
                    *[make_pod(f"h-{i}").requests(cpu_milli=1000).in_group("h")
                      for i in range(2)])
    decisions = cluster.plan()  # g is backed off after its rollback: it holds, h waits
    assert not any(isinstance(d, Placement) for d in decisions)
    assert any(isinstance(d, Rejection) and d.group == "default/h" for d in decisions)
    cluster.advance(5)
    placed = [d for d in cluster.plan() if isinstance(d, Placement)]
    assert [(p.group, [m.name for m in p.members]) for p in placed] == [
        ("default/g", ["g-2", "g-3"])]
    cluster.bind(placed)
    assert cluster.bound() == ["g-0", "g-1", "g-2", "g-3"]


def test_a_higher_priority_gang_takes_the_free_room_a_stranded_gang_holds() -> None:
    cluster, _ = rolled_back_with_two_bare_members_bound()
    cluster.observe(make_podgroup("h", 2),
                    *[make_pod(f"h-{i}").requests(cpu_milli=1000).in_group("h").priority(100)
                      for i in range(2)])
    decisions = cluster.plan()  # g (priority 0) is backed off and holds; h queues ahead of it
    placed = [d for d in decisions if isinstance(d, Placement)]
    assert [(p.group, [m.name for m in p.members]) for p in placed] == [
        ("default/h", ["h-0", "h-1"])]
    assert not any(isinstance(d, Preemption) for d in decisions)


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
    # one-pod gang h of the same priority, younger, wants the one
    cluster, _ = rolled_back_with_two_bare_members_bound(others_cpu_milli=1000)
    cluster.observe(make_podgroup("h", 1),
                    make_pod("h-0").requests(cpu_milli=1000).in_group("h"))
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


def test_a_higher_priority_pod_binds_to_held_free_room_instead_of_preempting() -> None:
    # the helper's case: g (priority 0) holds the one free cpu it cannot use alone; h-0
    # (priority 100) fits there, and a running pod of lower priority could be evicted too
    cluster, _ = rolled_back_with_two_bare_members_bound(others_cpu_milli=1000)
    cluster.observe(make_node("n1").capacity(cpu_milli=1000),
                    make_pod("low").requests(cpu_milli=1000).on_node("n1"),
                    make_podgroup("h", 1),
                    make_pod("h-0").requests(cpu_milli=1000).in_group("h").priority(100))
    decisions = cluster.plan()
    assert not any(isinstance(d, Preemption) for d in decisions)
    placed = [d for d in decisions if isinstance(d, Placement)]
    assert [(p.group, [(m.name, m.node) for m in p.members]) for p in placed] == [
        ("default/h", [("h-0", "n0")])]


def test_the_stranded_rule_replays_to_the_same_decisions() -> None:
    cluster, _ = rolled_back_with_two_bare_members_bound(others_cpu_milli=1000)
    cluster.observe(make_pod("h-0").requests(cpu_milli=1000))
    cluster.plan()
    cluster.advance(5)
    cluster.plan()
    first = replay(cluster.log, cluster.config)
    assert first == replay(cluster.log, cluster.config) and first
