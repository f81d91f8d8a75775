"""Filters, one pod on one node, named after the kube-scheduler plugins they mirror."""

from __future__ import annotations

import pytest

from services.contracts.events import NodeObserved, Taint, Toleration
from services.fit import filters
from tests.unit.planner.builders import make_node, make_pod
from tests.unit.planner.harness import Cluster

ZONE = "zone"


def node(**labels: str) -> NodeObserved:
    return make_node("n").labels(**labels).build()


@pytest.mark.parametrize(("toleration", "taint", "expected"), [
    (Toleration(operator="Exists"), Taint("any", "NoSchedule", "x"), True),
    (Toleration(key="k", operator="Exists"), Taint("k", "NoExecute", "v"), True),
    (Toleration(key="k", value="v"), Taint("k", "NoSchedule", "v"), True),
    (Toleration(key="k", value="w"), Taint("k", "NoSchedule", "v"), False),
    (Toleration(key="k", value="v", effect="NoExecute"), Taint("k", "NoSchedule", "v"), False),
    (Toleration(key="other", operator="Exists"), Taint("k", "NoSchedule"), False),
    (Toleration(key="k", operator="", value="v"), Taint("k", "NoSchedule", "v"), True),
    # an operator ToleratesTaint does not know tolerates nothing, whatever the value
    (Toleration(key="k", operator="Bogus", value="v"), Taint("k", "NoSchedule", "v"), False),
    (Toleration(key="k", operator="Gt", value="v"), Taint("k", "NoSchedule", "v"), False),
])
def test_tolerates_as_kubernetes(toleration: Toleration, taint: Taint, expected: bool) -> None:
    assert filters.tolerates((toleration,), taint) is expected


def test_taint_toleration_rejects_hard_taints_only() -> None:
    hard = make_node("n").taint("dedicated", "gpu", "NoSchedule").build()
    soft = make_node("n").taint("spot", "", "PreferNoSchedule").build()
    evict = make_node("n").taint("maint", "", "NoExecute").build()
    pod = make_pod("p").build()
    assert filters.taint_toleration(pod, hard) == "node(s) had untolerated taint(s)"
    assert filters.taint_toleration(pod, soft) is None
    assert filters.taint_toleration(pod, evict) == "node(s) had untolerated taint(s)"
    tolerant = make_pod("t").tolerate("dedicated", "gpu").build()
    assert filters.taint_toleration(tolerant, hard) is None


@pytest.mark.parametrize(("expression", "labels", "expected"), [
    ((ZONE, "In", ("a", "b")), {ZONE: "b"}, True),
    ((ZONE, "In", ("a",)), {}, False),
    ((ZONE, "NotIn", ("a",)), {ZONE: "b"}, True),
    ((ZONE, "NotIn", ("a",)), {}, True),
    ((ZONE, "NotIn", ("a",)), {ZONE: "a"}, False),
    ((ZONE, "Exists", ()), {ZONE: ""}, True),
    ((ZONE, "DoesNotExist", ()), {ZONE: "a"}, False),
    (("gen", "Gt", ("3",)), {"gen": "4"}, True),
    (("gen", "Gt", ("3",)), {"gen": "3"}, False),
    (("gen", "Lt", ("3",)), {"gen": "2"}, True),
    (("gen", "Lt", ("3",)), {"gen": "x"}, False),
    (("gen", "Gt", ("3",)), {}, False),
])
def test_node_affinity_operators(expression: tuple[str, str, tuple[str, ...]],
                                 labels: dict[str, str], expected: bool) -> None:
    pod = make_pod("p").affinity([expression]).build()
    result = filters.node_affinity(pod, node(**labels))
    assert (result is None) is expected


def test_node_affinity_terms_are_ored_and_expressions_anded() -> None:
    pod = make_pod("p").affinity([(ZONE, "In", ("a",)), ("gpu", "Exists", ())],
                                 [(ZONE, "In", ("b",))]).build()
    assert filters.node_affinity(pod, node(zone="a", gpu="1")) is None
    assert filters.node_affinity(pod, node(zone="a")) is not None
    assert filters.node_affinity(pod, node(zone="b")) is None


def test_an_empty_affinity_term_matches_nothing() -> None:
    pod = make_pod("p").affinity([]).build()
    assert filters.node_affinity(pod, node(zone="a")) is not None


def test_node_selector_needs_every_label() -> None:
    pod = make_pod("p").selector(zone="a", disk="ssd").build()
    assert filters.node_affinity(pod, node(zone="a", disk="ssd", extra="x")) is None
    assert filters.node_affinity(pod, node(zone="a")) == (
        "node(s) didn't match Pod's node affinity/selector")


def test_cordoned_node_takes_only_pods_tolerating_unschedulable() -> None:
    cordoned = make_node("n").unschedulable().build()
    assert filters.node_unschedulable(make_pod("p").build(), cordoned) == (
        "node(s) were unschedulable")
    tolerant = make_pod("p").tolerate("node.kubernetes.io/unschedulable", operator="Exists")
    assert filters.node_unschedulable(tolerant.build(), cordoned) is None


def test_not_ready_node_is_filtered() -> None:
    assert filters.node_ready(make_node("n").not_ready().build()) == "node(s) were not ready"


def test_planner_counts_extended_resources_and_pod_slots() -> None:
    cluster = Cluster().observe(
        make_node("cpu-only").capacity(pods=110),
        make_node("gpu").resource("nvidia.com/gpu", 2).capacity(pods=1),
        make_pod("trainer").resource("nvidia.com/gpu", 1),
        make_pod("other").on_node("gpu"))
    cluster.plan()
    assert cluster.last_reason("default/pod:trainer") == (
        "0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 Too many pods.")


def test_a_resource_no_node_has_is_insufficient_everywhere() -> None:
    cluster = Cluster().observe(make_node("n0"), make_node("n1"),
                                make_pod("p").resource("example.com/fpga", 1))
    cluster.plan()
    assert cluster.last_reason("default/pod:p") == (
        "0/2 nodes are available: 2 Insufficient example.com/fpga.")


def test_ephemeral_storage_is_checked() -> None:
    cluster = Cluster().observe(make_node("n0").resource("ephemeral-storage", 100),
                                make_pod("p").resource("ephemeral-storage", 200))
    cluster.plan()
    assert "1 Insufficient ephemeral-storage" in cluster.last_reason("default/pod:p")


def test_static_filters_are_counted_once_per_node_in_kube_scheduler_order() -> None:
    cluster = Cluster().observe(
        make_node("a").not_ready(), make_node("b").unschedulable(),
        make_node("c").taint("dedicated", "gpu"), make_node("d").labels(zone="x"),
        make_pod("p").selector(zone="y"))
    cluster.plan()
    assert cluster.last_reason("default/pod:p") == (
        "0/4 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
        "1 node(s) had untolerated taint(s), 1 node(s) were not ready, "
        "1 node(s) were unschedulable.")
