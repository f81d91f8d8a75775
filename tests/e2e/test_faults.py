"""Faults while gangs bind: never a partly bound gang at rest.

Every test ends by checking the cluster at rest (`assert_at_rest`): each PodGroup has either
none or at least minMember of its members bound, no node holds more than it can, and the
binder's Placement consumer has nothing waiting or unacknowledged.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import time

import nats
import pytest

from services.contracts import subjects
from services.watcher import slim
from tests.cluster.fixture import ControlPlane, KubectlError
from tests.e2e import kube, manifests, split
from tests.e2e.test_rollback import condition_message, gang_runs, outcome, placement
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e

TIMEOUT_SECONDS = 30
TAKE_OVER_SLACK_SECONDS = 15.0
"""The binder's ack wait (6 s) plus a new binder's start and a few binds."""


def test_a_binder_killed_mid_gang_is_taken_over_and_the_gang_completes_within_its_timeout(
        control_plane: ControlPlane, namespace: str, services: split.Services) -> None:
    services.start("watcher", "planner")
    first = services.binder()
    manifests.apply(control_plane, namespace,
                    manifests.podgroup("g", 4, timeout_seconds=TIMEOUT_SECONDS),
                    manifests.replicaset("train", "g", 3))
    eventually(lambda: "3 of 4 members exist" in (condition_message(
        control_plane, namespace) or ""), timeout=20, what="the binder reported the waiting gang")
    first.signal(signal.SIGSTOP)  # so the gang's Placement is the next decision it takes
    eventually(lambda: split.waiting_pulls(services.nats.url) == 0, timeout=10, interval=0.2,
               what="the held binder's pull request expired")
    manifests.apply(control_plane, namespace, manifests.pod("solo", "g"))
    decided = placement(services, namespace)
    by_name = {member["name"]: member for member in decided["members"]}

    # the binder takes the placement while the API server does not answer, then is killed
    apiserver = control_plane.pids["kube-apiserver"]
    os.kill(apiserver, signal.SIGSTOP)
    try:
        first.signal(signal.SIGCONT)
        eventually(lambda: re.search(rf"placement {decided['id']} of \S+ \(attempt 1",
                                     first.log_text()), timeout=15, interval=0.1,
                   what="the first binder took the placement")
        first.signal(signal.SIGKILL)
        assert first.process is not None
        first.process.wait(10)
        services.processes.remove(first)  # killed on purpose: its exit code is not a failure
        killed_at = time.monotonic()
    finally:
        os.kill(apiserver, signal.SIGCONT)
    # two of its binds had been stored (stamped with the placement) before it died; the binds
    # it had sent to the paused API server may land too once it resumes, with the same stamp
    early = sorted(name for name in by_name if name.startswith("train-"))[0]
    for name in (early, "solo"):
        try:
            manifests.create(control_plane, namespace, manifests.binding(
                namespace, name, by_name[name]["pod_uid"], by_name[name]["node"],
                decided["id"]))
        except KubectlError as error:
            assert "is already assigned" in str(error), error  # the killed binder's bind won
    services.binder()

    bound = outcome(services, namespace, decided["id"], "GroupBound")
    assert bound["decision_id"] == decided["id"]
    gang_runs(control_plane, namespace, 4)
    took = time.monotonic() - killed_at
    assert took < TIMEOUT_SECONDS + TAKE_OVER_SLACK_SECONDS, f"took over after {took:.1f}s"
    assert_at_rest(control_plane, namespace, services)


def test_a_podgroup_without_min_member_schedules_each_member_as_coscheduling_does(
        control_plane: ControlPlane, namespace: str, services: split.Services) -> None:
    services.start("watcher", "planner")
    services.binder()
    bare_podgroup = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                     "metadata": {"name": "g"}, "spec": {}}
    manifests.apply(control_plane, namespace, bare_podgroup,
                    manifests.replicaset("web", "g", 2))
    gang_runs(control_plane, namespace, 2)
    assert_at_rest(control_plane, namespace, services)



# --- at rest ------------------------------------------------------------------------------------

def assert_at_rest(cp: ControlPlane, namespace: str, services: split.Services) -> None:
    """No partly bound gang, no over-committed node, and the Placement queue drained."""
    pods = kube.pods(cp, namespace)
    for group in kube.get_json(cp, "podgroups", "-n", namespace)["items"]:
        name = group["metadata"]["name"]
        min_member = slim.podgroup_event(group, 0).min_member
        members = [p for p in kube.bound(pods)
                   if (p["metadata"].get("labels") or {}).get("scheduling.x-k8s.io/pod-group")
                   == name]
        assert not members or len(members) >= min_member, (name, len(members), min_member)
    every = kube.get_json(cp, "pods", "--all-namespaces")["items"]
    for node in kube.get_json(cp, "nodes")["items"]:
        allocatable = slim.node_event(node, 0).allocatable
        used: dict[str, int] = {}
        for pod in kube.bound(every):
            if pod["spec"]["nodeName"] == node["metadata"]["name"] and (
                    pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                for resource, amount in slim.pod_event(pod, 0).requests.items():
                    used[resource] = used.get(resource, 0) + amount
        over = {r: (a, allocatable.get(r, 0)) for r, a in used.items()
                if a > allocatable.get(r, 0)}
        assert not over, (node["metadata"]["name"], over)
    eventually(lambda: placement_queue(services.nats.url) == (0, 0), timeout=20, interval=0.3,
               what="the Placement consumer drained (nothing pending, nothing unacknowledged)")


def placement_queue(nats_url: str) -> tuple[int, int]:
    """(pending, unacknowledged) of the binder's Placement consumer."""
    async def read() -> tuple[int, int]:
        nc = await nats.connect(nats_url)
        try:
            info = await nc.jetstream().consumer_info(
                subjects.stream_name(split.PREFIX, "DECISIONS"), "binder")
        finally:
            await nc.close()
        return int(info.num_pending or 0), int(info.num_ack_pending or 0)

    return asyncio.run(read())
