"""Members replaced after the gang ran, on the real control plane.

An Indexed Job of 2 (kube-controller-manager's Job controller) is a gang of minMember 2 on two
nodes of this test, one member per node: a KWOK node, where the Job's pod runs and succeeds at
once, and a node no kubelet serves (not KWOK's), where the other index stays bound until the
test moves it, as a kubelet would: Running, then deleted or Failed. The Job makes a pod for
that index again; gangsched binds it alone (a Placement of that one pod, onto the KWOK node:
the other is cordoned), without waiting for two new pods, and the PodGroup is never Failed
once the replacement exists.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from services.binder.validation import PLACEMENT_ANNOTATION
from tests.cluster.fixture import ControlPlane
from tests.e2e import kube, manifests, split
from tests.e2e.faults import rest
from tests.e2e.test_rollback import uid
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e

TIMEOUT = 45


def indexed_job(name: str, group: str, completions: int, cpu: str,
                selector: dict[str, str]) -> dict[str, Any]:
    """An Indexed Job whose pods are members of `group`, on nodes with `selector`."""
    spec = manifests.pod_spec(cpu, nodeSelector=selector, restartPolicy="Never")
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"completionMode": "Indexed", "completions": completions,
                     "parallelism": completions, "backoffLimit": 6,
                     "template": {"metadata": {"labels": {manifests.GROUP_LABEL: group}},
                                  "spec": spec}}}


def unserved_node(name: str, labels: dict[str, str]) -> dict[str, Any]:
    """A Node no kubelet (nor KWOK) serves: pods bound to it keep the phase they are given."""
    node = manifests.kwok_node(name, cpu="1", labels=labels)
    del node["metadata"]["annotations"]
    return node


@pytest.fixture
def two_nodes(control_plane: ControlPlane, namespace: str) -> Iterator[tuple[str, str]]:
    """(KWOK node, unserved node), 1 CPU each, labelled for this test only; deleted after."""
    labels = {"gangsched-test": namespace}
    names = (f"kwok-{namespace}", f"held-{namespace}")
    manifests.apply(control_plane, None, manifests.kwok_node(names[0], cpu="1", labels=labels),
                    unserved_node(names[1], labels))
    try:
        yield names
    finally:
        control_plane.kubectl("delete", "node", *names, "--ignore-not-found")


def statuses(services: split.Services, namespace: str) -> list[dict[str, Any]]:
    """Every StatusUpdate the planner published for PodGroup g, in order."""
    return split.messages(services.nats.url, "DECISIONS",
                          split.decision_subject("StatusUpdate", namespace, "g"))


def podgroup_shows(cp: ControlPlane, namespace: str, phase: str,
                   counts: tuple[int, int, int]) -> None:
    def check() -> bool:
        status = kube.get_json(cp, "podgroup", "g", "-n", namespace).get("status") or {}
        seen = (status.get("phase"),
                (status.get("running"), status.get("succeeded"), status.get("failed")))
        assert seen == (phase, counts), seen
        return True

    eventually(check, timeout=TIMEOUT, interval=0.25, what=f"PodGroup g {phase} {counts}")


@pytest.mark.parametrize("fate", ["deleted", "failed"])
def test_a_replaced_index_of_a_job_gang_that_ran_is_bound_alone_and_the_group_not_failed(
        control_plane: ControlPlane, namespace: str, services: split.Services,
        two_nodes: tuple[str, str], fate: str) -> None:
    kwok_node, held_node = two_nodes
    _, planner = services.start("watcher", "planner", extra=rest.PLANNER_FLAGS)
    services.binder()
    manifests.apply(control_plane, namespace, manifests.podgroup("g", 2, timeout_seconds=10),
                    indexed_job("train", "g", 2, "600m", {"gangsched-test": namespace}))

    def first_run() -> tuple[dict[str, Any], dict[str, Any]]:
        pods = {pod["spec"].get("nodeName"): pod for pod in kube.pods(control_plane, namespace)}
        assert set(pods) == {kwok_node, held_node}, sorted(map(str, pods))
        assert (pods[kwok_node].get("status") or {}).get("phase") == "Succeeded"
        return pods[kwok_node], pods[held_node]

    done, held = eventually(first_run, timeout=TIMEOUT, what="both indexes bound, one done")
    first = rest.placements(services, namespace)
    assert [len(p["members"]) for p in first] == [2], first
    name = held["metadata"]["name"]
    manifests.set_phase(control_plane, namespace, name, "Running")  # as its kubelet would
    podgroup_shows(control_plane, namespace, "Running", (1, 1, 0))

    control_plane.kubectl("cordon", held_node)
    if fate == "deleted":
        control_plane.kubectl("delete", "pod", name, "-n", namespace, "--grace-period=0",
                              "--force", "--wait=false")
    else:
        manifests.set_phase(control_plane, namespace, name, "Failed")
    index = held["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]

    def replaced() -> dict[str, Any]:
        pods = [pod for pod in kube.pods(control_plane, namespace)
                if uid(pod) not in (uid(done), uid(held))]
        assert len(pods) == 1, [pod["metadata"]["name"] for pod in pods]
        replacement = pods[0]
        assert replacement["spec"].get("nodeName") == kwok_node, replacement["spec"]
        return replacement

    replacement = eventually(replaced, timeout=TIMEOUT, what="the replacement bound")
    assert replacement["metadata"]["annotations"][
        "batch.kubernetes.io/job-completion-index"] == index
    placed = rest.placements(services, namespace)
    assert len(placed) == 2, placed
    assert [(m["name"], m["node"]) for m in placed[1]["members"]] == [
        (replacement["metadata"]["name"], kwok_node)]
    assert replacement["metadata"]["annotations"][PLACEMENT_ANNOTATION] == placed[1]["id"]

    podgroup_shows(control_plane, namespace, "Finished", (0, 2, int(fate == "failed")))
    since_placed = [s["phase"] for s in statuses(services, namespace)
                    if s["plan_seq"] >= placed[1]["plan_seq"]]
    assert since_placed and "Failed" not in since_placed, since_placed
    if fate == "deleted":  # no member ever failed: never Failed at all
        assert "Failed" not in [s["phase"] for s in statuses(services, namespace)]
    condition = kube.get_json(control_plane, "job", "train", "-n", namespace)["status"]
    assert condition.get("succeeded") == 2, condition
    control_plane.kubectl("delete", "node", held_node)  # its pods out of the at-rest counts
    rest.settled(control_plane, namespace, services, planner)
