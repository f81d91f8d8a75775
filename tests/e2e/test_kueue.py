"""Kueue in front of gangsched: Kueue admits by quota, gangsched places whole.

The real Kueue (v0.17.0, built by the testbed) runs with the batch/job and pod integrations
and its webhooks on loopback (`operators.Kueue`). A ClusterQueue covers cpu and pods; a
LocalQueue in the test namespace points at it. A plain pod group (Kueue's group label and
total-count annotation, no PodGroup object) and a parallelism-4 Job (a Coscheduling PodGroup
of minMember 4 and its label in the template) both have `schedulerName: gangsched`. The one
KWOK node fits all four pods, so only Kueue's quota decides whether anything starts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.fixture import ControlPlane
from tests.cluster.operators import Kueue
from tests.e2e import kube, manifests
from tests.support.gangsched_process import serving
from tests.support.waiting import consistently, eventually

pytestmark = pytest.mark.e2e

NAMESPACE = "kueue-e2e"
QUEUE = "user-queue"
ADMISSION_GATE = "kueue.x-k8s.io/admission"
KUEUE_API = "kueue.x-k8s.io/v1beta2"


def queues(pods_quota: int) -> list[dict[str, Any]]:
    """A ResourceFlavor, a ClusterQueue of 4 CPUs and `pods_quota` pods, a LocalQueue."""
    quota = [{"name": "cpu", "nominalQuota": 4}, {"name": "pods", "nominalQuota": pods_quota}]
    return [
        {"apiVersion": KUEUE_API, "kind": "ResourceFlavor", "metadata": {"name": "default"}},
        {"apiVersion": KUEUE_API, "kind": "ClusterQueue", "metadata": {"name": "cluster-queue"},
         "spec": {"namespaceSelector": {}, "resourceGroups": [{
             "coveredResources": ["cpu", "pods"],
             "flavors": [{"name": "default", "resources": quota}]}]}},
        {"apiVersion": KUEUE_API, "kind": "LocalQueue",
         "metadata": {"name": QUEUE, "namespace": NAMESPACE},
         "spec": {"clusterQueue": "cluster-queue"}},
    ]


def kueue_pod(name: str, group: str, total: int) -> dict[str, Any]:
    """A plain pod of a Kueue pod group of `total` (500m CPU), no Coscheduling label."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name,
                         "labels": {"kueue.x-k8s.io/queue-name": QUEUE,
                                    "kueue.x-k8s.io/pod-group-name": group},
                         "annotations": {"kueue.x-k8s.io/pod-group-total-count": str(total)}},
            "spec": manifests.pod_spec("500m")}


def kueue_job(name: str, parallelism: int) -> dict[str, Any]:
    """A Job queued in Kueue whose pods are members of the PodGroup `name`."""
    template = {"metadata": {"labels": {manifests.GROUP_LABEL: name}},
                "spec": manifests.pod_spec("500m", restartPolicy="Never")}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "labels": {"kueue.x-k8s.io/queue-name": QUEUE}},
            "spec": {"parallelism": parallelism, "completions": parallelism,
                     "template": template}}


@pytest.fixture
def kueue_plane(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ControlPlane]:
    """One KWOK node of 8 CPUs, Kueue with queues of `request.param` pods, and gangsched."""
    with ControlPlane(nodes=1, cpu="8", memory="8Gi", pods=110) as cp:
        cp.kubectl("create", "namespace", NAMESPACE)
        kueue = Kueue(cp, tmp_path / "kueue.log", (NAMESPACE,))
        try:
            kueue.start()
            manifests.apply(cp, None, *queues(request.param))
            eventually(lambda: _queue_active(cp), timeout=30, what="ClusterQueue Active")
            with serving(cp.kubeconfig, tmp_path / "gangsched"):
                yield cp
        finally:
            kueue.stop()
            print(kueue.log_tail(60))


def _queue_active(cp: ControlPlane) -> bool:
    status = kube.get_json(cp, "clusterqueues.kueue.x-k8s.io", "cluster-queue").get("status", {})
    return any(c.get("type") == "Active" and c.get("status") == "True"
               for c in status.get("conditions") or [])


def gated(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pods still carrying Kueue's admission scheduling gate."""
    return [pod for pod in pods if any(gate.get("name") == ADMISSION_GATE
                                       for gate in pod["spec"].get("schedulingGates") or [])]


def admitted(cp: ControlPlane) -> list[dict[str, Any]]:
    """Kueue Workloads of the namespace that hold a quota reservation."""
    items = kube.get_json(cp, "workloads.kueue.x-k8s.io", "-n", NAMESPACE)["items"]
    return [wl for wl in items if wl.get("status", {}).get("admission")]


def members(cp: ControlPlane, label: str, value: str) -> list[dict[str, Any]]:
    return [pod for pod in kube.pods(cp, NAMESPACE)
            if pod["metadata"].get("labels", {}).get(label) == value]


@pytest.mark.parametrize("kueue_plane", [4], indirect=True)
def test_a_kueue_pod_group_within_quota_is_admitted_and_bound_whole_with_no_podgroup(
        kueue_plane: ControlPlane) -> None:
    manifests.create(kueue_plane, NAMESPACE,
                     *(kueue_pod(f"w{i}", "group", 4) for i in range(4)))
    group: Callable[[], list[dict[str, Any]]] = lambda: members(  # noqa: E731
        kueue_plane, "kueue.x-k8s.io/pod-group-name", "group")
    eventually(lambda: len(admitted(kueue_plane)) == 1, timeout=30, what="Kueue admitted it")
    eventually(lambda: len(kube.bound(group())) == 4, timeout=30, what="every pod bound")
    assert gated(group()) == []
    assert {pod["spec"]["schedulerName"] for pod in group()} == {"gangsched"}


@pytest.mark.parametrize("kueue_plane", [4], indirect=True)
def test_a_kueue_job_within_quota_is_admitted_and_its_gang_bound_whole(
        kueue_plane: ControlPlane) -> None:
    manifests.apply(kueue_plane, NAMESPACE, manifests.podgroup("train", 4), kueue_job("train", 4))
    eventually(lambda: len(admitted(kueue_plane)) == 1, timeout=30, what="Kueue admitted it")
    eventually(lambda: len(kube.bound(members(kueue_plane, manifests.GROUP_LABEL, "train")))
               == 4, timeout=30, what="every Job pod bound")


@pytest.mark.parametrize("kueue_plane", [3], indirect=True)
def test_gangs_of_four_over_a_quota_of_three_pods_are_neither_admitted_nor_bound(
        kueue_plane: ControlPlane) -> None:
    manifests.create(kueue_plane, NAMESPACE,
                     *(kueue_pod(f"w{i}", "group", 4) for i in range(4)))
    manifests.apply(kueue_plane, NAMESPACE, manifests.podgroup("train", 4), kueue_job("train", 4))
    eventually(lambda: len(gated(kube.pods(kueue_plane, NAMESPACE))) == 4, timeout=30,
               what="the four pods created, gated by Kueue")
    eventually(lambda: len(kube.get_json(kueue_plane, "workloads.kueue.x-k8s.io", "-n",
                                         NAMESPACE)["items"]) == 2,
               timeout=30, what="Kueue made both Workloads")
    consistently(lambda: admitted(kueue_plane) == [] and len(gated(pods := kube.pods(
        kueue_plane, NAMESPACE))) == 4 and kube.bound(pods) == [] and len(pods) == 4,
        duration=15, what="nothing admitted, no Job pod made, nothing bound")
