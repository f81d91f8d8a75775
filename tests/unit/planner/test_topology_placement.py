"""A native PodGroup's topology constraint, placed as kube-scheduler's TopologyPlacement does.

Source: Kubernetes 1.36.3 `plugins/topologyaware/topology_placement.go` (one candidate per value
of node label `topology[0].key`; only the value of members already scheduled; unlabelled nodes
never candidates), `schedule_one_podgroup.go` `podGroupSchedulingPlacementAlgorithm` and
`findBestPlacement` (each candidate tried, the best by PodGroupPodsCount plus NodeResourcesFit's
MostAllocated `ScorePlacement`, weight 1 each; none fitting: `0/<n> placements are available,
first placement status: ...`). gangsched tells the lowest label value's status and breaks equal
scores by the lowest value (kube-scheduler: map order and at random).
"""

from __future__ import annotations

import pytest

from services.contracts.decisions import Placement, Preemption, Rejection
from services.planner.core import reasons
from services.planner.core.config import PlannerConfig
from services.planner.core.topology_placement import pods_count_scores
from tests.unit.planner.builders import GIB, NodeBuilder, make_node, make_pod, make_podgroup
from tests.unit.planner.harness import Cluster, recorded, replay

RACK = "example.com/rack"


def rack(name: str, value: str, cpu_milli: int = 1000) -> NodeBuilder:
    return make_node(name).labels(**{RACK: value}).capacity(cpu_milli=cpu_milli)


def gang(size: int, min_member: int | None = None, cpu_milli: int = 1000) -> list[object]:
    """PodGroup `train` requiring one rack, and `size` members `w<i>` of `cpu_milli` each."""
    return [make_podgroup("train", size if min_member is None else min_member).topology(RACK),
            *(make_pod(f"w{i}").in_group("train").requests(cpu_milli=cpu_milli)
              for i in range(size))]


def planned(*items: object, config: PlannerConfig | None = None) -> Cluster:
    c = Cluster(config).observe(*items)
    c.advance(2)
    c.plan()
    return c


def placed(c: Cluster) -> dict[str, str]:
    """Member name → node, over every Placement made."""
    return {m.name: m.node for d in c.placements() for m in d.members}


def test_a_gang_that_fits_in_one_rack_only_goes_there() -> None:
    # rack a holds one member, rack b two, the unlabelled node all of them: only rack b is a
    # candidate that fits (the node without the label never is)
    c = planned(rack("a0", "a"), rack("b0", "b"), rack("b1", "b"),
                make_node("x").capacity(cpu_milli=8000), *gang(2))
    assert placed(c) == {"w0": "b0", "w1": "b1"}


def test_of_two_racks_that_fit_the_more_allocated_one_wins() -> None:
    # both racks hold the gang (2 members of 1 cpu, 1 GiB); rack b's node already runs another
    # scheduler's pod of 2 cpu, 2 GiB. Scores (MostAllocated over the rack, whatever --scoring):
    #   rack a: cpu 2000*100//4000 = 50, memory 2*100//8 = 25 -> (50+25)//2 = 37; pods 2 -> 100
    #   rack b: cpu (2000+2000)*100//4000 = 100, memory (2+2)*100//8 = 50 -> 75; pods 2 -> 100
    # 137 against 175: rack b, though LeastAllocated alone would prefer rack a's empty node
    nodes = [make_node(name).labels(**{RACK: value}).capacity(cpu_milli=4000,
                                                              memory_bytes=8 * GIB)
             for name, value in (("a0", "a"), ("b0", "b"))]
    busy = make_pod("busy").requests(cpu_milli=2000, memory_bytes=2 * GIB) \
        .scheduler("default-scheduler").on_node("b0")
    members = [make_pod(f"w{i}").in_group("train").requests(cpu_milli=1000, memory_bytes=GIB)
               for i in range(2)]
    c = planned(*nodes, busy, make_podgroup("train", 2).topology(RACK), *members)
    assert placed(c) == {"w0": "b0", "w1": "b0"}


def test_equal_scores_go_to_the_lowest_label_value() -> None:
    # two identical empty racks: 200 each; kube-scheduler picks at random, gangsched rack r1,
    # whose node sorts after rack r2's
    c = planned(rack("n1", "r2", 2000), rack("n2", "r1", 2000), *gang(2))
    assert placed(c) == {"w0": "n2", "w1": "n2"}


def test_a_gang_no_single_rack_holds_waits_though_the_cluster_would() -> None:
    c = planned(rack("a0", "a"), rack("b0", "b"), *gang(2))
    assert c.placements() == []
    reason = ("gang default/train: 0/2 placements are available, first placement status: "
              "example.com/rack=a: 1 of 2 members fit; 0/1 nodes are available: 1 Insufficient "
              "cpu.")
    rejection = c.rejections("default/train")[-1]
    assert (rejection.reason, rejection.is_unschedulable) == (reason, True)
    assert [p.name for p in rejection.pods] == ["w0", "w1"]
    assert c.statuses("default/train")[-1].condition_message == reason
    c.advance(400)  # past the unschedulable flush: tried again, still in no rack
    c.plan()
    assert c.placements() == [] and c.bound() == []


def test_unlabelled_nodes_are_never_candidates() -> None:
    # the unlabelled node would hold the whole gang; the one rack holds one member
    c = planned(rack("a0", "a"), make_node("x").capacity(cpu_milli=8000), *gang(2))
    assert c.placements() == []
    assert c.last_reason("default/train") == (
        "gang default/train: 0/1 placements are available, first placement status: "
        "example.com/rack=a: 1 of 2 members fit; 0/1 nodes are available: 1 Insufficient cpu.")


def test_no_node_with_the_label_is_no_feasible_placement() -> None:
    c = planned(make_node("x").capacity(cpu_milli=8000), *gang(2))
    assert c.placements() == []
    assert c.last_reason("default/train") == (
        "gang default/train: no feasible placements found (no node has the label "
        "example.com/rack)")


def test_pod_group_pods_count_prefers_the_rack_that_holds_more_members() -> None:
    # minCount 2 of 4 members: rack a holds 2, rack b 3. NodeResourcesFit: cpu 100 in both
    # (full), memory 0 (none requested of 32 GiB a node) -> (100+0)//2 = 50 each;
    # PodGroupPodsCount 2*100//3 = 66 against 3*100//3 = 100: rack b (116 against 150)
    c = planned(rack("a0", "a"), rack("a1", "a"), rack("b0", "b"), rack("b1", "b"),
                rack("b2", "b"), *gang(4, min_member=2))
    assert placed(c) == {"w0": "b0", "w1": "b1", "w2": "b2"}
    assert c.last_reason("default/train") == (
        "gang default/train: minMember 2 reached; 1 more member(s) do not fit; 0/3 nodes are "
        "available: 3 Insufficient cpu.")  # the rack's 3 nodes, not the cluster's 5


def test_members_already_bound_pin_the_rack() -> None:
    # w0 is bound in rack b; rack a holds the other two as well and would win a tie
    c = planned(rack("a0", "a", 2000), rack("b0", "b", 2000), rack("b1", "b"),
                make_podgroup("train", 2).topology(RACK),
                make_pod("w0").in_group("train").requests(cpu_milli=1000).on_node("b0"),
                *(make_pod(f"w{i}").in_group("train").requests(cpu_milli=1000)
                  for i in (1, 2)))
    assert placed(c) == {"w1": "b0", "w2": "b1"}


def test_a_pinned_rack_that_is_full_leaves_the_rest_waiting() -> None:
    # rack a could take w1; the gang, partly bound, holds capacity in rack b only
    c = planned(rack("a0", "a", 4000), rack("b0", "b"),
                make_podgroup("train", 2).topology(RACK),
                make_pod("w0").in_group("train").requests(cpu_milli=1000).on_node("b0"),
                make_pod("w1").in_group("train").requests(cpu_milli=1000))
    assert c.placements() == []
    assert c.last_reason("default/train") == (
        "gang default/train: 0/1 placements are available, first placement status: "
        "example.com/rack=b: 1 of 2 members fit; 0/1 nodes are available: 1 Insufficient cpu."
        "; 1 member(s) already bound: reserving capacity on 1 node(s) so this gang completes "
        "before any other is placed")
    assert c.state.starving_nodes == ["b0"]


NEVER_HOLDS = reasons.NEVER_FITS
"""What a partly bound gang whose domain cannot be told is told of its hold: it holds none."""


def test_members_bound_in_two_racks_make_the_gang_unschedulable() -> None:
    c = planned(rack("a0", "a", 4000), rack("b0", "b", 4000),
                make_podgroup("train", 3).topology(RACK),
                make_pod("w0").in_group("train").requests(cpu_milli=1000).on_node("a0"),
                make_pod("w1").in_group("train").requests(cpu_milli=1000).on_node("b0"),
                make_pod("w2").in_group("train").requests(cpu_milli=1000))
    assert c.placements() == []
    rejection = c.rejections("default/train")[-1]
    assert (rejection.reason, rejection.is_unschedulable) == (
        "gang default/train: cannot determine domain for already scheduled pods: more than 1 "
        "domain found for pod group: a, b" + NEVER_HOLDS, True)


def test_a_member_bound_to_a_node_without_the_label_makes_the_gang_unschedulable() -> None:
    c = planned(rack("a0", "a", 4000), make_node("x").capacity(cpu_milli=4000),
                make_podgroup("train", 2).topology(RACK),
                make_pod("w0").in_group("train").requests(cpu_milli=1000).on_node("x"),
                make_pod("w1").in_group("train").requests(cpu_milli=1000))
    assert c.placements() == []
    assert c.last_reason("default/train") == (
        "gang default/train: cannot determine domain for already scheduled pods: no topology "
        "domain found for pod default/w0" + NEVER_HOLDS)


def test_the_required_rack_overrides_prefer_topology() -> None:
    # --prefer-topology on zones would keep the gang in zone z1 (a0 and b0, two racks); the
    # PodGroup's rule keeps it in rack b (b0 and b1, two zones)
    config = PlannerConfig(prefer_topology=True, topology_key="zone")
    c = planned(rack("a0", "a").labels(zone="z1"), rack("b0", "b").labels(zone="z1"),
                rack("b1", "b").labels(zone="z2"), *gang(2), config=config)
    assert placed(c) == {"w0": "b0", "w1": "b1"}


def test_a_gang_with_the_constraint_never_preempts() -> None:
    # without the constraint it would evict `low` from a0 (test_preemption); kube-scheduler's
    # workload-aware preemption refuses such groups, and gangsched's dry runs ignore domains
    c = planned(rack("a0", "a"), make_pod("low").requests(cpu_milli=1000).on_node("a0"),
                make_podgroup("train", 1).topology(RACK),
                make_pod("w0").in_group("train").requests(cpu_milli=1000).priority(100))
    assert not any(isinstance(d, Preemption) for d in c.decisions)
    assert c.last_reason("default/train") == (
        "gang default/train: 0/1 placements are available, first placement status: "
        "example.com/rack=a: 0 of 1 members fit; 0/1 nodes are available: 1 Insufficient cpu."
        + reasons.PREEMPTION_CONSTRAINED)


@pytest.mark.parametrize("constraints", [False, True])
def test_empty_scheduling_constraints_refuse_preemption_too(constraints: bool) -> None:
    # `schedulingConstraints: {}` (or `topology: []`): no domain to keep, but kube-scheduler's
    # DefaultPreemption refuses any PodGroup whose constraints are set (non-nil); without them
    # the gang evicts `low`
    podgroup = make_podgroup("train", 1).api_version("scheduling.k8s.io/v1alpha2")
    if constraints:
        podgroup = podgroup.scheduling_constraints()
    c = planned(make_node("a0").capacity(cpu_milli=1000),
                make_pod("low").requests(cpu_milli=1000).on_node("a0"), podgroup,
                make_pod("w0").in_group("train").requests(cpu_milli=1000).priority(100))
    preempted = any(isinstance(d, Preemption) for d in c.decisions)
    assert preempted is not constraints
    if constraints:
        assert c.last_reason("default/train") == (
            "gang default/train: 0 of 1 members fit; 0/1 nodes are available: 1 Insufficient "
            "cpu." + reasons.PREEMPTION_CONSTRAINED)


def _nominated_high() -> Cluster:
    """`high` (priority 100) nominated after preempting `low` from the only node."""
    c = Cluster().observe(make_node("n0").capacity(cpu_milli=4000),
                          make_pod("low").requests(cpu_milli=4000).on_node("n0"),
                          make_podgroup("high", 1),
                          make_pod("high-0").requests(cpu_milli=4000).priority(100)
                          .in_group("high"))
    assert any(isinstance(d, Preemption) for d in c.plan())
    assert "default/high" in c.state.nominations
    return c


def test_a_nomination_ends_when_its_podgroup_is_replaced_by_one_with_the_constraint() -> None:
    # its victims were chosen over every domain, and such a gang never preempts: the room they
    # left goes to others at once, not after the nomination's deadline
    c = _nominated_high()
    c.observe(make_podgroup("high", 1).uid("pg-2").version("9").topology(RACK))
    c.delete_pod("low")
    c.observe(make_pod("other").requests(cpu_milli=4000))
    c.advance(1)
    c.plan()
    assert placed(c) == {"other": "n0"}
    assert not c.state.nominations
    assert c.last_reason("default/high") == (
        "gang default/high: no feasible placements found (no node has the label "
        "example.com/rack)")


def test_a_nomination_ends_when_its_podgroup_gets_empty_constraints() -> None:
    # `schedulingConstraints: {}` refuses preemption as a topology does, so the nomination
    # made before lapses at once (it was kept until its deadline), its victim still leaving
    c = _nominated_high()
    c.observe(make_podgroup("high", 1).uid("pg-2").version("9").scheduling_constraints())
    c.advance(1)
    c.plan()
    assert not c.state.nominations
    assert c.last_reason("default/high") == (
        "gang default/high: 0 of 1 members fit; 0/1 nodes are available: 1 Insufficient cpu."
        + reasons.PREEMPTION_CONSTRAINED)


def test_a_starving_gang_holds_capacity_in_one_rack() -> None:
    # gangsched's own pods fill a0, a1 and b0; b1 is free. Emptied, either rack holds the gang;
    # unrestricted, the hold would take b1 (most free) and a0 (first of the rest), two racks.
    # Rack b has the most free capacity now: the hold is b0 and b1
    c = Cluster().observe(rack("a0", "a"), rack("a1", "a"), rack("b0", "b"), rack("b1", "b"),
                          *(make_pod(f"busy-{n}").requests(cpu_milli=1000).on_node(n)
                            for n in ("a0", "a1", "b0")),
                          *gang(2))
    c.advance(2)
    c.plan()
    c.advance(c.config.starvation_seconds)
    c.observe(make_pod("late").requests(cpu_milli=1000).created(c.now_ms))
    decisions = c.plan()
    assert (c.state.starving_group, c.state.starving_nodes) == ("default/train", ["b0", "b1"])
    assert not any(isinstance(d, Placement) for d in decisions)  # `late` may not take b1
    assert c.last_reason("default/train").endswith(
        "; waited 300s, reserving capacity on 2 node(s) for this gang")


def test_pods_count_scores_are_normalized_to_the_largest() -> None:
    assert pods_count_scores([2, 3]) == [66, 100]
    assert pods_count_scores([1, 1, 4]) == [25, 25, 100]


def test_the_rule_replays_to_the_same_decisions() -> None:
    c = planned(rack("a0", "a", 2000), rack("b0", "b", 2000), rack("b1", "b"),
                *gang(4, min_member=2))
    c.bind(list(c.decisions))
    c.advance(30)
    c.plan()
    assert any(isinstance(d, Rejection) for d in c.decisions)
    assert replay(c.log, c.config) == recorded(c)
