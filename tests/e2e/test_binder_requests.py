"""The binder's API requests on the real control plane, as the API server counts them.

Each case runs one binder job (a rejection reported, PodGroup status written, a gang bound and
reported) through the real `KubeApi` and compares the API server's `apiserver_request_total`
before and after, by verb and resource: exactly the requests kube-scheduler would send for the
same outcome, no read before a write. The binder's bus view is a real `ClusterView` fed with the
watcher's own events of the objects (`tests.support.bus_view`). Nothing else schedules these
pods (no gangsched, no kube-scheduler), no namespace is being deleted meanwhile and the node
controller has posted its RegisteredNode events, so the counts are the binder's alone; KWOK's
status patches of the pods it runs are left out of the bind case. The last case pins what the
API server does with each patch type's preconditions, which the binder's writes rely on.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Iterator
from typing import Any

import pytest

from bench.cluster.run import request_totals
from services.binder import placing
from services.binder.reporter import Reporter
from services.contracts.decisions import Assignment, Placement, PodRef, Rejection, StatusUpdate
from services.kube import errors, podgroups, pods
from services.kube.api import KubeApi
from services.kube.client import MERGE_PATCH, KubeClient
from services.kube.resources import podgroup_path
from services.watcher import slim
from tests.cluster.fixture import ControlPlane
from tests.e2e import kube, manifests
from tests.support.bus_view import AppliedView
from tests.support.waiting import eventually
from tests.unit.binder.fakes import FakeStatusLog

pytestmark = pytest.mark.e2e

NODE = "kwok-node-0"
PLAN_SEQ = 1
COUNTED = ("GET", "LIST", "PATCH", "POST", "PUT", "DELETE")
RESOURCES = ("pods", "pods/status", "pods/binding", "podgroups", "podgroups/status", "nodes",
             "events")
"""What the binder reads and writes; other resources' counts move with the control plane's
own work (leases, discovery) and are not compared."""


@pytest.fixture
def group_namespace(control_plane: ControlPlane) -> Iterator[str]:
    """A namespace with PodGroup `g` (minMember 2) and pending pods `a` and `b` in it, made
    once no namespace is being deleted (the namespace controller's LISTs and DELETEs of pods,
    PodGroups and events would be counted with the binder's); deleted after, waiting."""
    eventually(lambda: no_namespace_terminating(control_plane), timeout=120, interval=0.5,
               what="no namespace being deleted")
    eventually(lambda: nodes_registered(control_plane), timeout=120, interval=0.5,
               what="the node controller's RegisteredNode event of every node")
    namespace = f"requests-{uuid.uuid4().hex[:8]}"
    control_plane.kubectl("create", "namespace", namespace)
    try:
        manifests.apply(control_plane, namespace, manifests.podgroup("g", 2),
                        manifests.pod("a", "g"), manifests.pod("b", "g"))
        yield namespace
    finally:
        control_plane.kubectl("delete", "pods", "--all", "-n", namespace, "--grace-period=0",
                              "--force", "--wait=false")
        control_plane.kubectl("delete", "namespace", namespace, "--wait=true", timeout=120)


def no_namespace_terminating(cp: ControlPlane) -> bool:
    phases = {item["metadata"]["name"]: item["status"].get("phase")
              for item in kube.get_json(cp, "namespaces")["items"]}
    terminating = sorted(name for name, phase in phases.items() if phase != "Active")
    assert terminating == [], terminating
    return True


def nodes_registered(cp: ControlPlane) -> bool:
    """Whether kube-controller-manager's node controller has posted its one event per node
    (`RegisteredNode`, seconds after it starts, later on a busy machine): posted during a case,
    it would be counted with the binder's events."""
    nodes = {item["metadata"]["name"] for item in kube.get_json(cp, "nodes")["items"]}
    registered = {item["involvedObject"]["name"]
                  for item in kube.get_json(cp, "events", "-A")["items"]
                  if item.get("reason") == "RegisteredNode"
                  and item["involvedObject"].get("kind") == "Node"}
    assert nodes <= registered, sorted(nodes - registered)
    return True


def objects(cp: ControlPlane, namespace: str, kind: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = kube.get_json(cp, kind, "-n", namespace)["items"]
    return items


def watched(cp: ControlPlane, namespace: str) -> AppliedView:
    """The bus view as the binder would hold it: the watcher's events of every pod, the
    PodGroups of `namespace` and the nodes."""
    feed = AppliedView()
    for pod in objects(cp, namespace, "pods"):
        feed.apply(slim.pod_event(pod, 0))
    for group in objects(cp, namespace, "podgroups"):
        feed.apply(slim.podgroup_event(group, 0))
    for node in kube.get_json(cp, "nodes")["items"]:
        feed.apply(slim.node_event(node, 0))
    return feed


def uid_of(cp: ControlPlane, namespace: str, kind: str, name: str) -> str:
    return str(kube.get_json(cp, kind, name, "-n", namespace)["metadata"]["uid"])


def counts(cp: ControlPlane) -> dict[str, int]:
    totals = request_totals(cp.kubectl("get", "--raw", "/metrics"))
    return {key: value for key, value in totals.items()
            if key.split(" ")[0] in COUNTED and key.split(" ")[-1] in RESOURCES}


async def requests_of(cp: ControlPlane, work: Awaitable[Any]) -> dict[str, int]:
    """The binder-relevant API requests `work` made (non-zero differences only)."""
    before = counts(cp)
    await work
    after = counts(cp)
    return {key: value - before.get(key, 0) for key, value in sorted(after.items())
            if value != before.get(key, 0)}


def reporter(client: KubeClient, feed: AppliedView) -> Reporter:
    """A reporter on the real API, wired as the binder wires it (one `KubeApi` serves both
    reports and placing), with the bus view `feed` and a status log holding no newer status."""
    kube_api = KubeApi(client)
    return Reporter(kube_api, event_interval_seconds=30.0, concurrency=4,
                    status_log=FakeStatusLog(), placing_kube=kube_api, view=feed)


def rejection(cp: ControlPlane, namespace: str, reason: str) -> Rejection:
    pods_ = tuple(PodRef(uid_of(cp, namespace, "pod", name), namespace, name)
                  for name in ("a", "b"))
    return Rejection(id=f"{PLAN_SEQ}-0", plan_seq=PLAN_SEQ, at_ms=0, group=f"{namespace}/g",
                     reason=reason, pods=pods_)


def status_update(namespace: str, plan_seq: int, phase: str, running: int) -> StatusUpdate:
    return StatusUpdate(id=f"{plan_seq}-1", plan_seq=plan_seq, at_ms=0, group=f"{namespace}/g",
                        phase=phase, running=running, succeeded=0, failed=0,
                        condition_reason="Scheduled" if running else "",
                        condition_message="all members bound" if running else "")


async def test_a_rejection_report_sends_one_patch_and_one_event_per_pod_and_reads_nothing(
    control_plane: ControlPlane, api: KubeClient, group_namespace: str
) -> None:
    cp, namespace = control_plane, group_namespace
    feed = watched(cp, namespace)
    sent = await requests_of(cp, reporter(api, feed).rejected(
        rejection(cp, namespace, "gang g: 0 of 2 members fit")))
    assert sent == {"PATCH pods/status": 2, "POST events": 3}  # a, b and the PodGroup
    condition = kube.get_json(cp, "pod", "a", "-n", namespace)["status"]["conditions"][0]
    assert (condition["type"], condition["status"], condition["reason"], condition["message"]) \
        == ("PodScheduled", "False", "Unschedulable", "gang g: 0 of 2 members fit")
    # With a bus view that knows none of them yet only the PodGroup event needs a read (its
    # uid): one GET, no pods.
    sent = await requests_of(cp, reporter(api, AppliedView()).rejected(
        rejection(cp, namespace, "gang g: 1 of 2 members fit")))
    assert sent == {"GET podgroups": 1, "PATCH pods/status": 2, "POST events": 3}


async def test_podgroup_status_is_one_patch_per_change_with_no_read_before_it(
    control_plane: ControlPlane, api: KubeClient, group_namespace: str
) -> None:
    cp, namespace = control_plane, group_namespace
    report = reporter(api, watched(cp, namespace))
    first = await requests_of(cp, report.status(status_update(namespace, 1, "Scheduling", 0)))
    second = await requests_of(cp, report.status(status_update(namespace, 2, "Running", 2)))
    same = await requests_of(cp, report.status(status_update(namespace, 3, "Running", 2)))
    # a status the copy says is current is confirmed by one read, never written again
    assert (first, second, same) == ({"PATCH podgroups/status": 1},
                                     {"PATCH podgroups/status": 1}, {"GET podgroups": 1})
    status = kube.get_json(cp, "podgroup", "g", "-n", namespace)["status"]
    assert (status["phase"], status["running"], status["conditions"][0]["reason"]) == (
        "Running", 2, "Scheduled")


async def test_binding_a_gang_lists_its_nodes_once_after_binding(
    control_plane: ControlPlane, api: KubeClient, group_namespace: str
) -> None:
    cp, namespace = control_plane, group_namespace
    feed = watched(cp, namespace)
    members = tuple(Assignment(uid_of(cp, namespace, "pod", name), namespace, name, NODE)
                    for name in ("a", "b"))
    now_ms = int(time.time() * 1000)
    placement = Placement(id=f"{PLAN_SEQ}-{uuid.uuid4().hex[:6]}", plan_seq=PLAN_SEQ,
                          at_ms=now_ms, group=f"{namespace}/g", attempt=1,
                          deadline_ms=now_ms + 30_000, members=members)
    policy = placing.Policy(scheduler_name="gangsched", concurrency=4, rollback_bare_pods=True)
    kube_api = KubeApi(api)

    async def carry_out() -> placing.Settled:
        return await placing.carry_out(placement, kube_api, policy,
                                       lambda: int(time.time() * 1000),
                                       is_redelivery=False, known=feed.view)

    before = counts(cp)
    settled = await carry_out()
    after = counts(cp)
    sent = {key: value - before.get(key, 0) for key, value in after.items()
            if value != before.get(key, 0) and key != "PATCH pods/status"}  # KWOK runs them
    assert settled.rolled_back is None and len(settled.bound) == 2
    # kept on purpose: one check that the gang's nodes are still there after binding, one LIST
    # by hostname label for all of them (`placing._vanished_nodes`)
    assert sent == {"POST pods/binding": 2, "LIST nodes": 1}
    reported = await requests_of(cp, reporter(api, feed).placed(placement, settled))
    assert reported == {"POST events": 2}  # Scheduled, one per member


async def test_each_patch_precondition_the_binder_relies_on_is_enforced_by_the_api_server(
    control_plane: ControlPlane, api: KubeClient, group_namespace: str
) -> None:
    cp, namespace = control_plane, group_namespace
    condition = {"conditions": [{"type": "PodScheduled", "status": "False",
                                 "reason": "Unschedulable", "message": "m"}]}
    with pytest.raises(errors.KubeInvalid, match=r"metadata\.uid"):
        await pods.patch_pod_status(api, namespace, "a", "another-uid", condition)
    stored = await pods.patch_pod_status(api, namespace, "a", uid_of(cp, namespace, "pod", "a"),
                                         condition)
    assert stored["status"]["conditions"][0]["message"] == "m"
    group = await podgroups.get_podgroup(api, namespace, "g")
    assert group is not None
    with pytest.raises(errors.KubeInvalid):  # JSON patch test of the uid
        await podgroups.first_status(
            api, {**group, "metadata": {**group["metadata"], "uid": "another-uid"}},
            {"phase": "Pending"})
    written = await podgroups.first_status(api, group, {"phase": "Pending"})
    with pytest.raises(errors.KubeInvalid):  # it has a status now: not new any more
        await podgroups.first_status(api, written, {"phase": "Scheduling"})
    with pytest.raises(errors.KubeConflict):  # resourceVersion of before the last write
        await podgroups.patch_status_at(api, group, {"phase": "Scheduling"})
    # A uid in a merge patch of a custom resource's status is no precondition: ignored.
    path = podgroup_path(namespace, "g", "status", str(group["apiVersion"]))
    await api.request("PATCH", path, body={"metadata": {"uid": "another-uid"},
                                           "status": {"phase": "Scheduling"}},
                      content_type=MERGE_PATCH)
    assert kube.get_json(cp, "podgroup", "g", "-n", namespace)["status"]["phase"] == "Scheduling"
