"""KubeRay drives gangsched unchanged: the real ray-operator, gang scheduling on.

ray-operator runs with `--batch-scheduler=scheduler-plugins`: a RayCluster labelled
`ray.io/gang-scheduling-enabled` gets a Coscheduling PodGroup named after it (minMember =
workers + 1 head) and pods labelled into it with `schedulerName: scheduler-plugins-scheduler`,
the name gangsched serves here. Each case has its own control plane, sized to fit the four
Ray pods (head + 3 workers of 1 CPU) or only three of them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.fixture import ControlPlane
from tests.cluster.operators import RayOperator
from tests.e2e import kube, manifests
from tests.support.gangsched_process import serving
from tests.support.waiting import consistently, eventually

pytestmark = pytest.mark.e2e

SCHEDULER = "scheduler-plugins-scheduler"
NAMESPACE = "ray"


def ray_container(name: str) -> dict[str, Any]:
    """A Ray container of 1 CPU (KWOK runs it without pulling the image)."""
    one_cpu = {"cpu": "1", "memory": "1Gi"}
    return {"name": name, "image": "rayproject/ray:2.46.0",
            "resources": {"requests": one_cpu, "limits": one_cpu}}


def raycluster(name: str) -> dict[str, Any]:
    """A gang-scheduled RayCluster: a head and 3 workers (minReplicas 3)."""
    return {
        "apiVersion": "ray.io/v1", "kind": "RayCluster",
        "metadata": {"name": name, "labels": {"ray.io/gang-scheduling-enabled": "true"}},
        "spec": {
            "headGroupSpec": {"rayStartParams": {},
                              "template": {"spec": {"containers": [ray_container("ray-head")]}}},
            "workerGroupSpecs": [{
                "groupName": "workers", "replicas": 3, "minReplicas": 3, "maxReplicas": 3,
                "rayStartParams": {},
                "template": {"spec": {"containers": [ray_container("ray-worker")]}}}],
        },
    }


@pytest.fixture
def ray_plane(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ControlPlane]:
    """One KWOK node of `request.param` CPUs, KubeRay's operator and gangsched on it."""
    with ControlPlane(nodes=1, cpu=str(request.param), memory="8Gi", pods=110) as cp:
        cp.kubectl("create", "namespace", NAMESPACE)
        operator = RayOperator(cp, tmp_path / "ray-operator.log")
        try:
            operator.start()
            with serving(cp.kubeconfig, tmp_path / "gangsched", "--scheduler-name", SCHEDULER):
                yield cp
        finally:
            operator.stop()
            print(operator.log_tail(60))


def ray_pods(cp: ControlPlane) -> list[dict[str, Any]]:
    return [pod for pod in kube.pods(cp, NAMESPACE)
            if pod["metadata"].get("labels", {}).get("ray.io/cluster") == "gang"]


@pytest.mark.parametrize("ray_plane", [4], indirect=True)
def test_a_gang_scheduled_raycluster_on_nodes_that_fit_it_is_bound_whole_within_30s(
        ray_plane: ControlPlane) -> None:
    manifests.apply(ray_plane, NAMESPACE, raycluster("gang"))
    pods = eventually(lambda: len(ray_pods(ray_plane)) == 4 and ray_pods(ray_plane),
                      timeout=30, what="KubeRay made the head and 3 workers")
    assert isinstance(pods, list)  # `eventually` returns only a truthy value
    assert {pod["spec"]["schedulerName"] for pod in pods} == {SCHEDULER}
    assert {pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] for pod in pods} == {
        "gang"}
    eventually(lambda: len(kube.bound(ray_pods(ray_plane))) == 4, timeout=30,
               what="every Ray pod bound")
    group = eventually(
        lambda: (pg := kube.get_json(ray_plane, "podgroups.scheduling.x-k8s.io", "gang",
                                     "-n", NAMESPACE)).get("status", {}).get("phase")
        == "Running" and pg, timeout=20, what="KubeRay's PodGroup Running")
    assert group["spec"]["minMember"] == 4


@pytest.mark.parametrize("ray_plane", [3], indirect=True)
def test_the_same_raycluster_on_nodes_that_fit_three_of_its_pods_binds_nothing(
        ray_plane: ControlPlane) -> None:
    # the node's 3 CPUs fit 3 of the 4 one-CPU pods: a gang of 4 holds nothing
    manifests.apply(ray_plane, NAMESPACE, raycluster("gang"))
    eventually(lambda: len(ray_pods(ray_plane)) == 4, timeout=30,
               what="KubeRay made the head and 3 workers")
    consistently(lambda: kube.bound(ray_pods(ray_plane)) == [], duration=20,
                 what="no Ray pod bound")
