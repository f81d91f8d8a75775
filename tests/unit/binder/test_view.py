"""The binder's bus view: the survey judges a member from it exactly as from the API objects."""

from __future__ import annotations

from typing import Any

import pytest

from services.binder import validation
from services.binder.view import ClusterView
from services.contracts.decisions import Assignment
from services.watcher import slim
from tests.unit.binder.fakes import make_node, make_pod

MEMBER = Assignment("uid-a", "default", "a", "n1")


def gated(pod: dict[str, Any]) -> dict[str, Any]:
    pod["spec"]["schedulingGates"] = [{"name": "example.com/wait"}]
    return pod


def deleting(pod: dict[str, Any]) -> dict[str, Any]:
    pod["metadata"]["deletionTimestamp"] = "2026-11-30T00:00:00Z"
    return pod


def finished(pod: dict[str, Any]) -> dict[str, Any]:
    pod["status"]["phase"] = "Succeeded"
    return pod


def tolerating_cordon(pod: dict[str, Any]) -> dict[str, Any]:
    pod["spec"]["tolerations"] = [{"key": "node.kubernetes.io/unschedulable",
                                   "operator": "Exists", "effect": "NoSchedule"}]
    return pod


CASES = {
    "bindable": (make_pod("a"), make_node("n1")),
    "already on the planned node": (make_pod("a", node="n1", bound_by="9-0"), make_node("n1")),
    "bound elsewhere": (make_pod("a", node="n2"), make_node("n1")),
    "replaced": (make_pod("a", uid="uid-other"), make_node("n1")),
    "another scheduler's": (make_pod("a", scheduler="default-scheduler"), make_node("n1")),
    "gated": (gated(make_pod("a")), make_node("n1")),
    "being deleted": (deleting(make_pod("a")), make_node("n1")),
    "finished": (finished(make_pod("a")), make_node("n1")),
    "node cordoned": (make_pod("a"), make_node("n1", unschedulable=True)),
    "node cordoned, tolerated": (tolerating_cordon(make_pod("a")),
                                 make_node("n1", unschedulable=True)),
    "node not ready": (make_pod("a"), make_node("n1", is_ready=False)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_member_is_judged_from_the_view_as_from_the_api(case: str) -> None:
    pod, node = CASES[case]
    view = ClusterView()
    view.apply(1, slim.pod_event(pod, 0))
    view.apply(2, slim.node_event(node, 0))
    from_api = validation.check_member(MEMBER, pod, node, "gangsched", "9-0")
    if pod["spec"].get("nodeName"):  # who bound it is only on the API object: always read
        assert view.pod("default", "a") is None
    else:
        from_view = validation.check_member(MEMBER, view.pod("default", "a"), view.node("n1"),
                                            "gangsched", "9-0")
        assert from_view == from_api
    assert view.applied_seq == 2


def test_deleted_objects_are_unknown_and_a_stale_delete_removes_nothing() -> None:
    view = ClusterView()
    view.apply(1, slim.pod_event(make_pod("a", uid="uid-new"), 0))
    view.apply(2, slim.pod_deleted(make_pod("a", uid="uid-old"), 0))  # the replaced one's
    view.apply(3, slim.node_event(make_node("n1"), 0))
    assert view.pod("default", "a") is not None
    view.apply(4, slim.pod_deleted(make_pod("a", uid="uid-new"), 0))
    view.apply(5, slim.node_deleted(make_node("n1"), 0))
    assert view.pod("default", "a") is None
    assert view.node("n1") is None
    assert view.applied_seq == 5
    assert len(view) == 0


def running_on(name: str, node: str, rv: str, phase: str = "Running") -> dict[str, Any]:
    pod = make_pod(name, node=node, scheduler="default-scheduler")
    pod["metadata"]["resourceVersion"] = rv
    pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "3"}}
    pod["status"]["phase"] = phase
    return pod


def sized(name: str) -> dict[str, Any]:
    node = make_node(name)
    node["status"]["allocatable"] = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return node


def test_a_late_older_observation_does_not_bring_back_used_capacity() -> None:
    view = ClusterView()
    view.apply(1, slim.node_event(sized("n1"), 0))
    view.apply(2, slim.pod_event(running_on("web", "n1", "20"), 0))
    view.apply(3, slim.pod_event(running_on("web", "n1", "21", phase="Succeeded"), 0))
    view.apply(4, slim.pod_event(running_on("web", "n1", "20"), 0))  # another watcher's resync
    view.apply(5, slim.pod_event(make_pod("a"), 0))
    assert view.claim("n1", [("default", "a")], "9-0") is None


def test_a_late_observation_of_a_deleted_pod_is_ignored() -> None:
    view = ClusterView()
    view.apply(1, slim.node_event(sized("n1"), 0))
    view.apply(2, slim.pod_event(running_on("web", "n1", "20"), 0))
    view.apply(3, slim.pod_deleted(running_on("web", "n1", "20"), 0))
    view.apply(4, slim.pod_event(running_on("web", "n1", "20"), 0))
    view.apply(5, slim.pod_event(make_pod("a"), 0))
    assert view.pod("default", "web") is None
    assert view.claim("n1", [("default", "a")], "9-0") is None


def test_a_zero_request_never_over_commits() -> None:
    view = ClusterView()
    view.apply(1, slim.node_event(sized("n1"), 0))
    view.apply(2, slim.pod_event(running_on("big", "n1", "5"), 0))
    view.apply(3, slim.pod_event(running_on("big2", "n1", "6"), 0))  # 6 cpu used of 4
    zero = make_pod("a")
    zero["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "0"}}
    view.apply(4, slim.pod_event(zero, 0))
    reason = view.claim("n1", [("default", "a")], "9-0")
    assert reason is None


def test_the_view_tells_bound_deleted_and_replaced_pods_apart_from_pending_ones() -> None:
    view = ClusterView()
    view.apply(1, slim.pod_event(make_pod("a"), 0))
    view.apply(2, slim.pod_event(make_pod("b", node="n1"), 0))
    view.apply(3, slim.pod_event(make_pod("c"), 0))
    view.apply(4, slim.pod_deleted(make_pod("c"), 0))
    view.apply(5, slim.pod_event(make_pod("d", uid="uid-d-new"), 0))
    assert not view.is_settled("default", "a", "uid-a")  # pending: report it
    assert view.is_settled("default", "b", "uid-b")  # bound
    assert view.is_settled("default", "c", "uid-c")  # deleted
    assert view.is_settled("default", "d", "uid-d")  # replaced under its name
    assert not view.is_settled("default", "e", "uid-e")  # unknown: the API decides


def test_the_view_names_podgroups_until_they_are_deleted() -> None:
    view = ClusterView()
    group = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
             "metadata": {"namespace": "default", "name": "g", "uid": "pg-1",
                          "resourceVersion": "5", "creationTimestamp": "2026-11-30T00:00:00Z"},
             "spec": {"minMember": 2}}
    view.apply(1, slim.podgroup_event(group, 0))
    assert view.podgroup("default", "g") == ("pg-1", "scheduling.x-k8s.io/v1alpha1")
    view.apply(2, slim.podgroup_deleted(group, 0))
    assert view.podgroup("default", "g") is None
    assert len(view) == 0


def requesting(name: str, cpu: str, **fields: Any) -> dict[str, Any]:
    pod = make_pod(name, **fields)
    pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": cpu}}
    return pod


def filled_since_the_plan() -> ClusterView:
    """n1 with 4 cpu; members a1, a2, b1, b2 (1 cpu each) pending; then another scheduler's
    2-cpu pod bound there after the plan."""
    view = ClusterView()
    view.apply(1, slim.node_event(sized("n1"), 0))
    for seq, name in enumerate(("a1", "a2", "b1", "b2"), start=2):
        view.apply(seq, slim.pod_event(requesting(name, "1"), 0))
    view.apply(9, slim.pod_event(requesting("web", "2", node="n1",
                                            scheduler="default-scheduler"), 0))
    return view


def test_room_claimed_by_one_placement_counts_for_the_next() -> None:
    """Two placements planned together on n1, which another scheduler half filled since the
    plan: the first claims the last 2 cpu, so the second is refused (each passed alone, and
    together they bound 6 cpu on a 4-cpu node); its own claim is not held."""
    view = filled_since_the_plan()
    assert view.claim("n1", [("default", "a1"), ("default", "a2")], "9-0") is None
    assert view.claim("n1", [("default", "b1"), ("default", "b2")], "9-1") == (
        "it has 0 cpu free (other pods were bound there meanwhile) and the members planned "
        "there request 2 cpu")
    view.release("9-1", set())
    assert view.claim("n1", [("default", "a1"), ("default", "a2")], "9-0") is None  # again


@pytest.mark.parametrize("end", ["released", "seen bound", "deleted"])
def test_a_claim_ends_when_released_or_once_the_view_sees_the_member_bound_or_deleted(
        end: str) -> None:
    view = filled_since_the_plan()
    assert view.claim("n1", [("default", "a1"), ("default", "a2")], "9-0") is None
    if end == "released":
        view.release("9-0", {("default", "a2")})  # a2 left bound, a1 not
    elif end == "seen bound":
        view.apply(10, slim.pod_event(requesting("a1", "1", node="n1"), 0))
    else:
        view.apply(10, slim.pod_deleted(requesting("a1", "1"), 0))
    # a2's 1 cpu still held (2 web + 1 a2, + a1's 1 if seen bound): b1 fits only if a1 left
    expected = ("it has 0 cpu free (other pods were bound there meanwhile) and the members "
                "planned there request 1 cpu") if end == "seen bound" else None
    assert view.claim("n1", [("default", "b1")], "9-1") == expected
