"""Amounts beyond what gangsched can count: refused with the amount named,
never clamped into a fit. Objects go through the watcher's slimming, as in a cluster."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from services.contracts import resources
from services.contracts.decisions import Placement, Rejection
from services.watcher import slim
from tests.unit.planner.harness import Cluster

BEYOND = "is beyond the largest amount gangsched can place (281474976710656m)"


def node(name: str, cpu: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "uid": f"uid-{name}"},
            "status": {"allocatable": {"cpu": cpu, "memory": "1Ti", "pods": "110"}}}


def pod(name: str, cpu: str, group: str | None = None) -> dict[str, Any]:
    labels = {slim.GROUP_LABEL: group} if group else {}
    return {"metadata": {"name": name, "namespace": "ml", "uid": f"uid-{name}", "labels": labels},
            "spec": {"schedulerName": "gangsched",
                     "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
            "status": {"phase": "Pending"}}


def podgroup(name: str, min_member: int, **min_resources: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ml", "uid": f"uid-pg-{name}"},
            "spec": {"minMember": min_member, "minResources": min_resources}}


def observed(*objects: dict[str, Any]) -> Cluster:
    cluster = Cluster()
    for obj in objects:
        if "status" in obj and "allocatable" in obj["status"]:
            cluster.apply(slim.node_event(obj, 0))
        elif "containers" in obj.get("spec", {}):
            cluster.apply(slim.pod_event(obj, 0))
        else:
            cluster.apply(slim.podgroup_event(obj, 0))
    return cluster


def test_a_pod_requesting_1e30_cpus_is_refused_with_the_amount_even_on_a_node_of_1e15() -> None:
    decisions = observed(node("n0", "1e15"), pod("p", "1e30")).plan()
    assert [type(d) for d in decisions] == [Rejection]
    rejection = decisions[0]
    assert isinstance(rejection, Rejection) and rejection.group == "ml/pod:p"
    assert rejection.reason == (
        f"unsupported constraint: spec.containers[0].resources.requests: cpu 1e30 {BEYOND}")
    assert rejection.is_unschedulable is False  # no change in the cluster makes it fit


def test_a_gang_member_beyond_range_keeps_the_whole_gang_waiting() -> None:
    cluster = observed(node("n0", "64"), podgroup("g", 2), pod("a", "1", "g"),
                       pod("b", "1e30", "g"))
    cluster.plan()
    assert cluster.placements() == []
    assert cluster.last_reason("ml/g") == (
        "gang ml/g: pod ml/b: unsupported constraint: spec.containers[0].resources.requests: "
        f"cpu 1e30 {BEYOND}")


def test_a_podgroup_with_minresources_beyond_range_is_refused_not_admitted() -> None:
    cluster = observed(node("n0", "1e15"), podgroup("g", 1, cpu="1e30"), pod("a", "1", "g"))
    cluster.plan()
    assert cluster.placements() == []
    assert cluster.last_reason("ml/g") == (
        f"PodGroup ml/g is invalid: spec.minResources: cpu 1e30 {BEYOND}")


def test_a_node_offering_more_than_gangsched_counts_still_takes_what_it_counts() -> None:
    decisions = observed(node("n0", "1e15"), pod("p", "200000000000")).plan()
    assert [type(d) for d in decisions] == [Placement]


def test_the_largest_amount_fits_once_on_a_node_beyond_range_and_no_more() -> None:
    largest = str(Decimal(resources.MAX_AMOUNT) / 1000)  # 281474976710.656 cpus
    cluster = observed(node("n0", "1e15"), pod("a", largest), pod("b", largest))
    decisions = cluster.plan()
    assert sum(isinstance(d, Placement) for d in decisions) == 1


_QUANTITIES = st.sampled_from(["1", "1e10", "281474976710.656", "281474976710.657", "1e12",
                               "1e15", "1e30", "1e400000"])


@settings(max_examples=60, deadline=None)
@given(st.lists(_QUANTITIES, min_size=1, max_size=3), st.lists(_QUANTITIES, min_size=1,
                                                                max_size=6))
def test_no_node_is_ever_over_committed_in_the_amounts_kubernetes_was_given(
        node_cpus: list[str], pod_cpus: list[str]) -> None:
    nodes = {f"n{i}": Decimal(cpu) for i, cpu in enumerate(node_cpus)}
    requested = {f"p{i}": Decimal(cpu) for i, cpu in enumerate(pod_cpus)}
    cluster = observed(*(node(name, cpu) for name, cpu in zip(nodes, node_cpus, strict=True)),
                       *(pod(name, cpu) for name, cpu in zip(requested, pod_cpus, strict=True)))
    cluster.plan()
    used: dict[str, Decimal] = {}
    for placement in cluster.placements():
        for member in placement.members:
            used[member.node] = used.get(member.node, Decimal(0)) + requested[member.name]
    for name, amount in used.items():
        assert amount <= nodes[name], (name, amount, nodes[name])
    for name, amount in requested.items():
        placed = any(m.name == name for p in cluster.placements() for m in p.members)
        assert not placed or amount * 1000 <= resources.MAX_AMOUNT
