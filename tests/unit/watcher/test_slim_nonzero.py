"""What NodeResourcesFit's score adds for missing container requests (`slim.nonzero`).

kube-scheduler 1.36 counts every container's missing cpu and memory request as 100m and
200 MiB when it scores LeastAllocated and MostAllocated (`NonMissingContainerRequests`,
`PodInfo.CalculateResource`): summed over app containers and sidecars, the largest init
container taken as for requests; a request or limit given (0 included) is not missing; a
resource requested at pod level is not defaulted; overhead counts alike on both sides.
"""

from __future__ import annotations

from typing import Any

import pytest

from services.watcher import slim

MI = 2**20
DEFAULT_MEMORY = 200 * MI


def pod(*containers: dict[str, Any], init: tuple[dict[str, Any], ...] = (),
        **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ml", "uid": "u1", "resourceVersion": "1"},
            "spec": {"containers": list(containers), "initContainers": list(init), **spec}}


def container(name: str = "c", sidecar: bool = False, **given: dict[str, str]) -> dict[str, Any]:
    found: dict[str, Any] = {"name": name, "image": "busybox"}
    if given:
        found["resources"] = given
    if sidecar:
        found["restartPolicy"] = "Always"
    return found


@pytest.mark.parametrize(("obj", "extra"), [
    # two app containers requesting nothing: 2 x (100m, 200Mi)
    (pod(container("a"), container("b")), {"cpu": 200, "memory": 2 * DEFAULT_MEMORY}),
    # requests of 0 are given: nothing is missing
    (pod(container(requests={"cpu": "0", "memory": "0"})), {}),
    # memory given, cpu missing
    (pod(container(requests={"memory": "1Gi"})), {"cpu": 100}),
    # limits stand in for requests (the API server defaults requests from them)
    (pod(container(limits={"cpu": "1", "memory": "1Gi"})), {}),
    # an init container requesting nothing under an app container of 1 cpu: max(1000, 100)
    (pod(container(requests={"cpu": "1", "memory": "1Gi"}), init=(container("i"),)), {}),
    # an init container requesting nothing over an app container of 50m: max(50, 100) = 100
    (pod(container(requests={"cpu": "50m", "memory": "1Gi"}), init=(container("i"),)),
     {"cpu": 50}),
    # a sidecar requesting nothing adds to the app containers: 1000 + 100
    (pod(container(requests={"cpu": "1", "memory": "1Gi"}),
         init=(container("s", sidecar=True),)), {"cpu": 100, "memory": DEFAULT_MEMORY}),
    # cpu at pod level replaces the containers' cpu; memory is missing at both levels
    (pod(container(), resources={"requests": {"cpu": "1"}}), {"memory": DEFAULT_MEMORY}),
    # both at pod level: nothing is defaulted
    (pod(container(), resources={"requests": {"cpu": "1", "memory": "1Gi"}}), {}),
    # overhead counts on both sides alike
    (pod(container(), overhead={"cpu": "250m", "memory": "64Mi"}),
     {"cpu": 100, "memory": DEFAULT_MEMORY}),
])
def test_missing_requests_are_counted_as_kube_scheduler_scores_them(
        obj: dict[str, Any], extra: dict[str, int]) -> None:
    assert slim.pod_event(obj, 1).nonzero_extra == extra


def test_a_pod_whose_quantities_cannot_be_read_adds_nothing() -> None:
    event = slim.pod_event(pod(container(requests={"cpu": "lots"}), container("b")), 1)
    assert event.invalid_reason is not None and event.nonzero_extra == {}


def test_a_pod_resized_in_place_counts_what_its_containers_hold() -> None:
    """A container the kubelet says holds memory (allocatedResources) is not missing it."""
    obj = pod(container("w", requests={"cpu": "1"}), nodeName="n1")
    obj["status"] = {"phase": "Running", "containerStatuses": [
        {"name": "w", "resources": {"requests": {"cpu": "1", "memory": "64Mi"}},
         "allocatedResources": {"cpu": "1", "memory": "64Mi"}}]}
    event = slim.pod_event(obj, 1)
    assert event.requests["memory"] == 64 * MI and event.nonzero_extra == {}
    obj["status"]["containerStatuses"] = [{"name": "w", "resources": {"requests": {"cpu": "1"}},
                                           "allocatedResources": {"cpu": "1"}}]
    assert slim.pod_event(obj, 1).nonzero_extra == {"memory": DEFAULT_MEMORY}


def test_with_pod_level_requests_a_pod_on_its_node_counts_only_what_no_level_gives() -> None:
    """kube-scheduler's `getNonMissingContainerRequests`: on its node, a pod with pod-level
    requests has a resource defaulted only where neither a container nor the pod level gives
    it; as the pod placed, each container's missing request counts (then the pod level
    replaces what it sets)."""
    obj = pod(container("a", requests={"memory": "50Mi"}), container("b"),
              resources={"requests": {"cpu": "1"}})
    event = slim.pod_event(obj, 1)
    assert event.requests["memory"] == 50 * MI
    assert (event.nonzero_extra, event.nonzero_own) == ({}, {"memory": DEFAULT_MEMORY})
    # memory missing everywhere: both count it alike
    same = slim.pod_event(pod(container("a"), container("b"),
                              resources={"requests": {"cpu": "1"}}), 1)
    assert (same.nonzero_extra, same.nonzero_own) == ({"memory": 2 * DEFAULT_MEMORY}, None)
