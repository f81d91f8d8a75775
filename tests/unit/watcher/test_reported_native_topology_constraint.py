"""A native PodGroup's topology constraint is read and honoured: one rack, never split.

Public report: kubernetes/kubernetes PR #137271 "KEP-5732: Add SchedulingConstraints to
PodGroup API and use them in TopologyPlacement plugin" (kubernetes/enhancements #5732,
Topology-aware workload scheduling). Kubernetes 1.36's `scheduling.k8s.io/v1alpha2` PodGroup
(the API gangsched reads with `--group-apis scheduling.k8s.io`) has
`spec.schedulingConstraints.topology[].key`: "All pods within the PodGroup must be colocated
within the same domain instance" (api `scheduling/v1alpha2/types.go`, `TopologyConstraint`);
kube-scheduler's TopologyPlacement plugin (`plugins/topologyaware`) only generates placements
inside one value of that node label, reading `topology[0].key` of a non-empty list.

History: the slimming once dropped the field (the gang was placed across racks on a guess),
then read it as `unsupported` (core revision 45: never placed). Since core revision 46 the
watcher reads the key into `PodGroupObserved.topology_key` and the planner places the gang in
one rack (`planner.core.topology_placement`); a value the API server would refuse makes the
PodGroup invalid, its gang waiting with the field named.
"""

from __future__ import annotations

from typing import Any

import pytest

from services.contracts.decisions import Placement
from services.watcher import native
from tests.unit.planner.builders import make_node, make_pod
from tests.unit.planner.harness import Cluster

RACK = "example.com/rack"


def podgroup(constraints: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": 2}}}
    if constraints is not None:
        spec["schedulingConstraints"] = constraints
    return {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
            "metadata": {"name": "train", "namespace": "default", "uid": "pg-1",
                         "resourceVersion": "1"},
            "spec": spec}


def racks_of(c: Cluster) -> set[str]:
    """The racks of the nodes the gang's members were placed on."""
    nodes = {m.node for d in c.decisions if isinstance(d, Placement) for m in d.members}
    return {c.state.nodes[name].labels[RACK] for name in nodes}


def cluster(constraints: Any, rack_a: int, b_cpu_milli: int = 1000) -> Cluster:
    """Rack a of `rack_a` one-member nodes, rack b of one node of `b_cpu_milli`, and a gang
    of two 1-cpu members."""
    nodes = [*(make_node(f"a{i}").labels(**{RACK: "a"}).capacity(cpu_milli=1000)
               for i in range(rack_a)),
             make_node("b0").labels(**{RACK: "b"}).capacity(cpu_milli=b_cpu_milli)]
    c = Cluster().observe(*nodes, native.podgroup_event(podgroup(constraints), 0),
                          *(make_pod(f"w{i}").in_group("train").requests(cpu_milli=1000)
                            for i in range(2)))
    c.advance(2)
    c.plan()
    return c


def test_the_key_is_read_whatever_the_policy() -> None:
    # TopologyPlacement runs for every group of the PodGroup cycle, basic or gang
    basic = podgroup({"topology": [{"key": RACK}]})
    basic["spec"]["schedulingPolicy"] = {"basic": {}}
    for obj in (podgroup({"topology": [{"key": RACK}]}), basic):
        event = native.podgroup_event(obj, 0)
        assert (event.topology_key, event.invalid_reason, event.unsupported,
                event.scheduling_constraints) == (RACK, None, (), True)


def test_a_gang_whose_racks_each_hold_one_member_is_not_split_over_two() -> None:
    c = cluster({"topology": [{"key": RACK}]}, rack_a=1)
    assert c.placements() == [] and racks_of(c) == set()
    reason = ("gang default/train: 0/2 placements are available, first placement status: "
              "example.com/rack=a: 1 of 2 members fit; 0/1 nodes are available: 1 Insufficient "
              "cpu.")
    assert c.last_reason("default/train") == reason
    assert [p.name for p in c.rejections("default/train")[-1].pods] == ["w0", "w1"]
    status = c.statuses("default/train")[-1]
    assert (status.condition_reason, status.condition_message) == ("Unschedulable", reason)


def test_a_gang_goes_to_the_rack_that_holds_it_though_another_scores_best() -> None:
    # rack b's node scores best for a first member (LeastAllocated) but holds only one; rack a
    # holds both: kube-scheduler places both there, and so does gangsched
    c = cluster({"topology": [{"key": RACK}]}, rack_a=2, b_cpu_milli=1500)
    assert {m.name: m.node for d in c.placements() for m in d.members} == {"w0": "a0",
                                                                          "w1": "a1"}


def test_without_the_constraint_the_gang_may_span_racks() -> None:
    # the control: without a constraint the same gang is placed, over both racks
    c = cluster(None, rack_a=1)
    assert racks_of(c) == {"a", "b"}


@pytest.mark.parametrize("constraints", [{}, {"topology": []}, {"topology": None}, None])
def test_an_empty_or_absent_topology_list_is_no_constraint(constraints: Any) -> None:
    # kube-scheduler's TopologyPlacement reads `len(Topology) > 0` of a non-nil
    # schedulingConstraints: anything less generates the one unconstrained placement
    event = native.podgroup_event(podgroup(constraints), 0)
    assert (event.topology_key, event.invalid_reason, event.unsupported) == (None, None, ())
    # set at all (non-nil), it still makes kube-scheduler's DefaultPreemption refuse the group
    assert event.scheduling_constraints is (constraints is not None)


@pytest.mark.parametrize(("constraints", "reason"), [
    ({"topology": {"key": RACK}},
     "spec.schedulingConstraints.topology must be a list, got {'key': 'example.com/rack'}"),
    ({"topology": [RACK]}, "spec.schedulingConstraints.topology[0] must be an object with a "
     "key, got 'example.com/rack'"),
    ({"topology": [{}]}, "spec.schedulingConstraints.topology[0].key must be a label key, got "
     "None"),
    ({"topology": [{"key": ""}]},
     "spec.schedulingConstraints.topology[0].key must be a label key, got ''"),
    ({"topology": [{"key": 5}]},
     "spec.schedulingConstraints.topology[0].key must be a label key, got 5"),
    ({"topology": [{"key": "a/b/c"}]},
     "spec.schedulingConstraints.topology[0].key must be a label key, got 'a/b/c'"),
    ({"topology": [{"key": RACK}, {"key": "zone/"}]},
     "spec.schedulingConstraints.topology[1].key must be a label key, got 'zone/'"),
    ("rack", "spec.schedulingConstraints must be an object, got 'rack'"),
])
def test_a_malformed_topology_makes_the_podgroup_invalid(constraints: Any, reason: str) -> None:
    event = native.podgroup_event(podgroup(constraints), 0)
    assert (event.topology_key, event.invalid_reason, event.unsupported) == (None, reason, ())


def test_a_gang_of_a_malformed_podgroup_waits_with_the_field_named() -> None:
    c = cluster({"topology": [{"key": 5}]}, rack_a=2)
    assert c.placements() == []
    assert c.last_reason("default/train") == (
        "PodGroup default/train is invalid: spec.schedulingConstraints.topology[0].key must be "
        "a label key, got 5")


def test_an_invalid_min_count_is_told_before_the_topology() -> None:
    obj = podgroup({"topology": [{}]})
    obj["spec"]["schedulingPolicy"] = {"gang": {"minCount": 0}}
    assert native.podgroup_event(obj, 0).invalid_reason == (
        "spec.schedulingPolicy.gang.minCount must be an integer >= 1, got 0")


def test_only_the_first_key_is_read() -> None:
    # the API server takes at most one item (`+k8s:maxItems=1`); kube-scheduler reads [0]
    event = native.podgroup_event(podgroup({"topology": [{"key": RACK}, {"key": "zone"}]}), 0)
    assert event.topology_key == RACK
