"""A native PodGroup's topology constraint is a hard rule: never placed across domains on a guess.

Public report: kubernetes/kubernetes PR #137271 "KEP-5732: Add SchedulingConstraints to
PodGroup API and use them in TopologyPlacement plugin" (kubernetes/enhancements #5732,
Topology-aware workload scheduling). Kubernetes 1.36's `scheduling.k8s.io/v1alpha2` PodGroup
(the API gangsched reads with `--group-apis scheduling.k8s.io`) has
`spec.schedulingConstraints.topology[].key`: "All pods within the PodGroup must be colocated
within the same domain instance" (api `scheduling/v1alpha2/types.go`, `TopologyConstraint`);
kube-scheduler's TopologyPlacement plugin (`plugins/topologyaware`) only generates placements
inside one value of that node label.

The class of defect: a hard scheduling constraint of the group the slimming drops
(`watcher.native.podgroup_event` read only `schedulingPolicy`), so the gang was placed across
racks on a guess. gangsched's contract for what it does not implement is to keep the pods
Pending and say so ("never placed on a guess", README "What placement honours";
`test_groups.py::test_unsupported_constraint_is_never_ignored`): the PodGroup is now read with
`spec.schedulingConstraints.topology` in `unsupported`, and its gang is never placed, whether
a rack could hold it or not, with `unsupported constraint: <field>` as its reason.
"""

from __future__ import annotations

from typing import Any

import pytest

from services.contracts.decisions import Placement, Preemption
from services.watcher import native
from tests.unit.planner.builders import make_node, make_pod, make_podgroup
from tests.unit.planner.harness import Cluster

RACK = "example.com/rack"


def podgroup(constraints: dict[str, Any] | None) -> dict[str, Any]:
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


def cluster(constraints: dict[str, Any] | None, rack_a: int,
            b_cpu_milli: int = 1000) -> Cluster:
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


REASON = "PodGroup default/train: unsupported constraint: spec.schedulingConstraints.topology"


def assert_refused(c: Cluster) -> None:
    """Not placed at all, its members told why, the PodGroup's condition saying the same."""
    assert c.placements() == [] and racks_of(c) == set()
    assert c.last_reason("default/train") == REASON
    assert [p.name for p in c.rejections("default/train")[-1].pods] == ["w0", "w1"]
    status = c.statuses("default/train")[-1]
    assert (status.condition_reason, status.condition_message) == ("Unschedulable", REASON)


def test_a_gang_whose_racks_each_hold_one_member_is_not_split_over_two() -> None:
    c = cluster({"topology": [{"key": RACK}]}, rack_a=1)
    assert_refused(c)  # kube-scheduler: no placement fits in one rack; gangsched: none at all


def test_a_gang_with_a_topology_constraint_never_spans_racks_where_one_holds_it() -> None:
    # rack b's node scores best for the first member but holds only one; rack a holds both
    # (kube-scheduler places both there; gangsched, which refuses the constraint, places none)
    c = cluster({"topology": [{"key": RACK}]}, rack_a=2, b_cpu_milli=1500)
    assert_refused(c)
    c.advance(60)
    c.plan()
    assert c.placements() == []  # later rounds do not place it on a guess either


def test_without_the_constraint_the_gang_may_span_racks() -> None:
    # the control: without a constraint the same gang is placed, over both racks
    c = cluster(None, rack_a=1)
    assert racks_of(c) == {"a", "b"}


@pytest.mark.parametrize("constraints", [{}, {"topology": []}, {"topology": None}, None])
def test_an_empty_or_absent_topology_list_is_no_constraint(
        constraints: dict[str, Any] | None) -> None:
    # kube-scheduler's TopologyPlacement reads `len(Topology) > 0` of a non-nil
    # schedulingConstraints: anything less generates the one unconstrained placement
    assert native.podgroup_event(podgroup(constraints), 0).unsupported == ()
    assert native.podgroup_event({**podgroup(None), "spec": {
        "schedulingPolicy": {"basic": {}}, "schedulingConstraints": None}}, 0).unsupported == ()


def test_the_podgroup_is_read_with_the_field_named_whatever_its_policy() -> None:
    # TopologyPlacement runs for every group of the PodGroup cycle, basic or gang
    basic = podgroup({"topology": [{"key": RACK}]})
    basic["spec"]["schedulingPolicy"] = {"basic": {}}
    for obj in (podgroup({"topology": [{"key": RACK}]}), basic):
        event = native.podgroup_event(obj, 0)
        assert event.unsupported == ("spec.schedulingConstraints.topology",)
        assert event.invalid_reason is None  # the API server admits it: not invalid


def test_a_nomination_ends_when_its_podgroup_is_replaced_by_one_with_the_constraint() -> None:
    # as for a PodGroup deleted or invalid: the gang can no longer be placed, so the room its
    # victims left goes to others at once, not after the nomination's deadline
    c = Cluster().observe(make_node("n0").capacity(cpu_milli=4000),
                          make_pod("low").requests(cpu_milli=4000).on_node("n0"),
                          make_podgroup("high", 1),
                          make_pod("high-0").requests(cpu_milli=4000).priority(100)
                          .in_group("high"))
    assert any(isinstance(d, Preemption) for d in c.plan())
    assert "default/high" in c.state.nominations
    replaced = podgroup({"topology": [{"key": RACK}]})  # made anew: another uid
    replaced["metadata"] |= {"name": "high", "uid": "pg-2", "resourceVersion": "9"}
    c.apply(native.podgroup_event(replaced, c.now_ms))
    c.delete_pod("low")
    c.observe(make_pod("other").requests(cpu_milli=4000))
    c.advance(1)
    placed = [d for d in c.plan() if isinstance(d, Placement)]
    assert [m.name for d in placed for m in d.members] == ["other"]
    assert not c.state.nominations
    assert c.last_reason("default/high") == (
        "PodGroup default/high: unsupported constraint: spec.schedulingConstraints.topology")
