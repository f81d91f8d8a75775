"""Reasons worded, counted and ordered as kube-scheduler v1.36 gives them: each case here is a
disagreement the differential test against the real kube-scheduler found
(tests/e2e/test_differential.py), reduced to the smallest cluster that shows it.
"""

from __future__ import annotations

from services.fit import filters, reasons
from tests.unit.planner.builders import make_node, make_pod
from tests.unit.planner.harness import Cluster

PINNED = "node(s) didn't satisfy plugin(s) [NodeAffinity]"


def test_every_untolerated_taint_is_one_reason_whatever_the_taint() -> None:
    cluster = Cluster().observe(
        make_node("a").taint("dedicated", "gpu"), make_node("b").taint("spot", "", "NoExecute"),
        make_node("c").taint("dedicated", "db"), make_pod("p"))
    cluster.plan()
    assert cluster.last_reason("default/pod:p") == (
        "0/3 nodes are available: 3 node(s) had untolerated taint(s).")


def test_reasons_are_ordered_by_their_count_and_text_as_strings() -> None:
    cluster = Cluster().observe(
        *(make_node(f"small-{i}").capacity(cpu_milli=500) for i in range(10)),
        make_node("tainted").taint("dedicated", "gpu"), make_node("cordoned").unschedulable(),
        make_pod("p").requests(cpu_milli=1000))
    cluster.plan()
    assert cluster.last_reason("default/pod:p") == (
        "0/12 nodes are available: 1 node(s) had untolerated taint(s), "
        "1 node(s) were unschedulable, 10 Insufficient cpu.")


def test_nodes_outside_the_match_fields_names_are_left_out_before_any_filter() -> None:
    """NodeAffinity's PreFilter keeps only the named nodes; the others get the framework's
    status, even a cordoned or tainted one; the named node is filtered as usual."""
    cluster = Cluster().observe(
        make_node("n0").capacity(cpu_milli=500), make_node("n1").unschedulable(),
        make_node("n2").taint("dedicated", "gpu"), make_node("n3"),
        make_pod("p").requests(cpu_milli=1000).match_fields(
            [("metadata.name", "In", ("n0",))]))
    cluster.plan()
    assert cluster.last_reason("default/pod:p") == (
        f"0/4 nodes are available: 1 Insufficient cpu, 3 {PINNED}.")


def test_match_fields_naming_only_absent_nodes_leave_every_node_out() -> None:
    cluster = Cluster().observe(make_node("n0"), make_node("n1"), make_pod("p").match_fields(
        [("metadata.name", "In", ("gone",))]))
    cluster.plan()
    assert cluster.last_reason("default/pod:p") == f"0/2 nodes are available: 2 {PINNED}."


def test_conflicting_names_in_one_term_are_a_prefilter_rejection_without_counts() -> None:
    pod = make_pod("p").match_fields(
        [("metadata.name", "In", ("n0",)), ("metadata.name", "In", ("n1",))])
    cluster = Cluster().observe(make_node("n0"), make_node("n1"), pod)
    cluster.plan()
    assert cluster.last_reason("default/pod:p") == (
        "0/2 nodes are available: pod affinity terms conflict.")


def test_a_term_without_a_name_field_lets_every_node_through_the_prefilter() -> None:
    pinned = make_pod("p").match_fields([("metadata.name", "In", ("n0",))],
                                        [("metadata.name", "NotIn", ("n0",))]).build()
    assert filters.affinity_node_names(pinned) is None
    assert filters.node_affinity_prefilter(pinned, make_node("n1").build()) is None
    two_terms = make_pod("q").match_fields([("metadata.name", "In", ("n0",))],
                                           [("metadata.name", "In", ("n2",))]).build()
    assert filters.affinity_node_names(two_terms) == frozenset({"n0", "n2"})
    assert filters.node_affinity_prefilter(two_terms, make_node("n1").build()) == (
        reasons.NODE_AFFINITY_PREFILTER)


def test_conflicting_names_are_rejected_before_a_missing_claim() -> None:
    """NodeAffinity's PreFilter runs before VolumeRestrictions' and VolumeBinding's: a pod whose
    names conflict and whose claim is missing reads the conflict (seed 2, pod p-0177)."""
    pod = make_pod("p").claims("missing").match_fields(
        [("metadata.name", "In", ("n0",)), ("metadata.name", "In", ("n1",))])
    cluster = Cluster().observe(make_node("n0"), make_node("n1"), pod)
    cluster.plan()
    assert cluster.last_reason("default/pod:p") == (
        "0/2 nodes are available: pod affinity terms conflict.")


def test_names_that_leave_nodes_do_not_hide_a_missing_claim() -> None:
    pod = make_pod("p").claims("missing").match_fields([("metadata.name", "In", ("n0",))])
    cluster = Cluster().observe(make_node("n0"), make_node("n1"), pod)
    cluster.plan()
    assert cluster.last_reason("default/pod:p") == (
        '0/2 nodes are available: persistentvolumeclaim "missing" not found.')
