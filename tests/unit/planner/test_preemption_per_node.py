"""Preemption weighs each node's victims alone, as DefaultPreemption dry-runs each node, and
finds budget violators with allowances shared in importance order (`filterPodsWithPDBViolation`);
both found by the preemption differential test against kube-scheduler."""

from __future__ import annotations

from services.contracts.decisions import Preemption
from services.contracts.events import DisruptionBudgetObserved, NodeSelectorRequirement
from tests.unit.planner.builders import make_node, make_pod
from tests.unit.planner.harness import Cluster


def _victims(cluster: Cluster) -> list[tuple[str, str]]:
    [preemption] = [d for d in cluster.plan() if isinstance(d, Preemption)]
    return sorted((victim.name, victim.node) for victim in preemption.victims)


def test_a_singleton_evicts_the_fewest_pods_of_one_node_not_a_reprieve_over_all() -> None:
    # a reprieve over both nodes at once gives x, y and z back (the pod fits on n1 meanwhile)
    # and then evicts six small pods of n1; n0 alone needs two victims
    cluster = Cluster().observe(make_node("n0").capacity(cpu_milli=8000),
                                make_node("n1").capacity(cpu_milli=8000))
    cluster.observe(make_pod("x").requests(cpu_milli=4000).priority(10).on_node("n0"),
                    make_pod("y").requests(cpu_milli=3000).priority(10).on_node("n0"),
                    make_pod("z").requests(cpu_milli=1000).priority(10).on_node("n0"),
                    *(make_pod(f"s{i}").requests(cpu_milli=1000).priority(10).on_node("n1")
                      for i in range(8)))
    cluster.observe(make_pod("high").requests(cpu_milli=6000).priority(100))
    assert _victims(cluster) == [("x", "n0"), ("y", "n0")]


def _budget(allowed: int) -> DisruptionBudgetObserved:
    return DisruptionBudgetObserved(
        at_ms=0, uid="pdb-db", namespace="default", name="db", resource_version="1",
        selector=(NodeSelectorRequirement("app", "In", ("db",)),), disruptions_allowed=allowed)


def test_a_victim_that_violates_a_budget_only_with_another_is_reprieved_first() -> None:
    # one disruption allowed: `big` (more important) takes it in the count, so `low-db` is
    # the violator given back first, as kube-scheduler does; then the reprieve evicts `big` and
    # three pods without budget: no violation. Judged alone neither violates, and the reprieve
    # evicts both `big` and `low-db`: one violation.
    cluster = Cluster().observe(make_node("n0").capacity(cpu_milli=8000), _budget(1))
    cluster.observe(
        make_pod("big").requests(cpu_milli=3000).priority(50).labelled(app="db").on_node("n0"),
        make_pod("low-db").requests(cpu_milli=1000).priority(10).labelled(app="db")
        .on_node("n0"),
        make_pod("above").requests(cpu_milli=500).priority(90).on_node("n0"),
        make_pod("mid-a").requests(cpu_milli=1000).priority(50).on_node("n0"),
        make_pod("mid-b").requests(cpu_milli=1000).priority(50).on_node("n0"),
        make_pod("low").requests(cpu_milli=1500).priority(10).on_node("n0"))
    cluster.observe(make_pod("high").requests(cpu_milli=6000).priority(100))
    assert _victims(cluster) == [("big", "n0"), ("low", "n0"), ("mid-a", "n0"),
                                 ("mid-b", "n0")]


def test_a_lower_priority_set_wins_where_the_budget_first_reprieve_gives_its_room_away() -> None:
    # kube-scheduler counts `a` (more important) against the one allowed disruption, so `b`
    # is its violator, given back first, and it evicts `a` (priority 50); gangsched's reprieve
    # without budget bias evicts `b` and `c` (priority 10), which violates no budget either
    cluster = Cluster().observe(make_node("n0").capacity(cpu_milli=4000), _budget(1))
    cluster.observe(
        make_pod("a").requests(cpu_milli=2000).priority(50).labelled(app="db").on_node("n0"),
        make_pod("b").requests(cpu_milli=1000).priority(10).labelled(app="db").on_node("n0"),
        make_pod("c").requests(cpu_milli=1000).priority(10).labelled(app="web").on_node("n0"))
    cluster.observe(make_pod("high").requests(cpu_milli=2000).priority(100))
    assert _victims(cluster) == [("b", "n0"), ("c", "n0")]


def test_in_a_large_cluster_whole_nodes_are_weighed_not_the_cheapest_pods_spread_thin() -> None:
    # 150 priority-0 pods are more than the 128 units weighed; taken alone, cheapest first,
    # they free 3 cpu on each of 43 nodes and the pod (4 cpu) fits on none: preemption would
    # say "not helpful". Weighed node by node, a node's 8 pods go whole into the trial.
    cluster = Cluster().observe(*(make_node(f"n{i:02d}").capacity(cpu_milli=8000)
                                  for i in range(50)))
    cluster.observe(*(make_pod(f"p{i:02d}-{j}").requests(cpu_milli=1000)
                      .priority(0 if j < 3 else 1).on_node(f"n{i:02d}")
                      for i in range(50) for j in range(8)))
    cluster.observe(make_pod("high").requests(cpu_milli=4000).priority(100))
    [preemption] = [d for d in cluster.plan() if isinstance(d, Preemption)]
    assert len({victim.node for victim in preemption.victims}) == 1
    assert sorted(victim.priority for victim in preemption.victims) == [0, 0, 0, 1]
