"""Pre-bind validation: each reason a member is refused, and the idempotent already-bound case."""

from __future__ import annotations

from typing import Any

from services.binder import validation
from services.binder.validation import Verdict
from services.contracts.decisions import Assignment
from tests.unit.binder.fakes import make_node, make_pod

MEMBER = Assignment(pod_uid="uid-p1", namespace="default", name="p1", node="n1")
PLACEMENT = "7-0"


def check(pod: dict[str, Any] | None, node: dict[str, Any] | None = None) -> validation.Check:
    return validation.check_member(MEMBER, pod, node or make_node("n1"), "gangsched", PLACEMENT)


def test_an_unbound_pod_of_ours_on_a_ready_node_is_bindable() -> None:
    assert check(make_pod("p1")).verdict is Verdict.BINDABLE


def test_a_pod_this_placement_bound_is_bound_even_if_the_node_is_gone() -> None:
    pod = make_pod("p1", node="n1", bound_by=PLACEMENT)
    result = validation.check_member(MEMBER, pod, None, "gangsched", PLACEMENT)
    assert result.verdict is Verdict.BOUND


def test_a_pod_on_the_planned_node_bound_by_anyone_else_is_refused() -> None:
    for pod in (make_pod("p1", node="n1"), make_pod("p1", node="n1", bound_by="6-0"),
                make_pod("p1", node="n1", bound_by=PLACEMENT, scheduler="default-scheduler")):
        result = check(pod)
        assert result.verdict is Verdict.REFUSED
        assert result.reason == "pod default/p1 is already bound to node n1, not by this placement"


def test_a_deleted_pod_is_refused() -> None:
    assert check(None) == validation.Check(Verdict.REFUSED, "pod default/p1 was deleted")


def test_a_pod_replaced_under_the_same_name_is_refused() -> None:
    result = check(make_pod("p1", uid="other"))
    assert result.verdict is Verdict.REFUSED
    assert "was replaced" in result.reason


def test_a_pod_bound_to_another_node_is_refused() -> None:
    result = check(make_pod("p1", node="n2"))
    assert result.reason == "pod default/p1 is already bound to node n2, not by this placement"


def test_a_pod_being_deleted_is_refused() -> None:
    pod = make_pod("p1")
    pod["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    assert check(pod).reason == "pod default/p1 is being deleted"


def test_a_pod_that_changed_scheduler_is_refused() -> None:
    result = check(make_pod("p1", scheduler="default-scheduler"))
    assert result.reason == "pod default/p1 is no longer ours (schedulerName default-scheduler)"


def test_a_scheduling_gated_pod_is_refused() -> None:
    pod = make_pod("p1")
    pod["spec"]["schedulingGates"] = [{"name": "wait"}]
    assert check(pod).reason == "pod default/p1 is scheduling-gated"


def test_a_finished_pod_is_refused() -> None:
    pod = make_pod("p1")
    pod["status"]["phase"] = "Succeeded"
    assert check(pod).reason == "pod default/p1 has finished (phase Succeeded)"


def test_a_missing_cordoned_or_not_ready_node_is_refused() -> None:
    pod = make_pod("p1")
    gone = validation.check_member(MEMBER, pod, None, "gangsched", PLACEMENT)
    assert "the node was deleted" in gone.reason
    assert "cordoned" in check(pod, make_node("n1", unschedulable=True)).reason
    assert "not Ready" in check(pod, make_node("n1", is_ready=False)).reason


def test_a_conflict_is_explained_from_the_pod_as_read_afterwards() -> None:
    assert validation.conflict_reason(MEMBER, None) == "pod default/p1 was deleted"
    bound_elsewhere = make_pod("p1", node="n9")
    assert "already bound to node n9" in validation.conflict_reason(MEMBER, bound_elsewhere)
    assert validation.conflict_reason(MEMBER, make_pod("p1")) == ""


def test_only_a_controller_owner_counts_as_controller() -> None:
    assert validation.has_controller(make_pod("p1"))
    assert not validation.has_controller(make_pod("p1", owned=False))
    pod = make_pod("p1", owned=False)
    pod["metadata"]["ownerReferences"] = [{"kind": "ConfigMap", "name": "x", "uid": "u"}]
    assert not validation.has_controller(pod)


def test_a_cordoned_node_takes_a_pod_tolerating_the_unschedulable_taint() -> None:
    cordoned = make_node("n1", unschedulable=True)
    for toleration in (
        {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/unschedulable", "operator": "Exists"},
        {"operator": "Exists"},
        {"key": "node.kubernetes.io/unschedulable", "operator": "Equal", "value": ""},
        {"key": "node.kubernetes.io/unschedulable"},  # no operator: Equal
    ):
        pod = make_pod("p1")
        pod["spec"]["tolerations"] = [toleration]
        assert check(pod, cordoned).verdict is Verdict.BINDABLE, toleration


def test_a_cordoned_node_refuses_a_pod_without_a_matching_toleration() -> None:
    cordoned = make_node("n1", unschedulable=True)
    for toleration in (
        {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoExecute"},
        {"key": "other", "operator": "Exists"},
        {"key": "node.kubernetes.io/unschedulable", "operator": "Equal", "value": "x"},
        # an operator ToleratesTaint does not know tolerates nothing (it read as Equal)
        {"key": "node.kubernetes.io/unschedulable", "operator": "Bogus"},
        {"key": "node.kubernetes.io/unschedulable", "operator": "Gt", "value": ""},
    ):
        pod = make_pod("p1")
        pod["spec"]["tolerations"] = [toleration]
        assert "cordoned" in check(pod, cordoned).reason, toleration


def test_node_readiness_matches_the_watcher_rule() -> None:
    from services.watcher import slim

    no_conditions: dict[str, Any] = {"metadata": {"name": "n1"}, "status": {}}
    assert validation.is_node_ready(no_conditions)
    assert validation.is_node_ready({"metadata": {"name": "n1"}})
    assert check(make_pod("p1"), no_conditions).verdict is Verdict.BINDABLE
    for status in ("False", "Unknown"):
        node = {"status": {"conditions": [{"type": "Ready", "status": status}]}}
        assert not validation.is_node_ready(node)
    assert validation.is_node_ready({"status": {"conditions": [{"type": "Ready",
                                                                "status": "True"}]}})
    for status_json in ({}, {"conditions": [{"type": "Ready", "status": "Unknown"}]}):
        assert slim.is_ready(status_json) == validation.is_node_ready({"status": status_json})
