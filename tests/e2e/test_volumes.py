"""Volumes on the real control plane (issue 13 item 1): a gang sharing a bound RWX claim.

Four KWOK nodes. A PersistentVolume reachable only from kwok-node-1 and kwok-node-2 (node
affinity) is pre-bound to a claim; the real kube-controller-manager's PV controller binds
them. A gang of 3 whose members mount the claim ends bound on those two nodes only.
Not proven here: WaitForFirstConsumer binding (the binder binds no volumes yet).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.cluster.fixture import ControlPlane
from tests.e2e import kube, manifests
from tests.support.gangsched_process import GangschedRun, serving
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e

HOST = "kubernetes.io/hostname"
REACHABLE = ["kwok-node-1", "kwok-node-2"]


@pytest.fixture(scope="module")
def volume_plane() -> Iterator[ControlPlane]:
    """Four KWOK nodes of 4 CPU."""
    with ControlPlane(nodes=4, cpu="4", memory="8Gi", pods=110) as cp:
        yield cp


@pytest.fixture(scope="module")
def volume_gangsched(volume_plane: ControlPlane,
                     tmp_path_factory: pytest.TempPathFactory) -> Iterator[GangschedRun]:
    with serving(volume_plane.kubeconfig, tmp_path_factory.mktemp("gangsched")) as run:
        yield run


@pytest.fixture
def volume_namespace(volume_plane: ControlPlane) -> Iterator[str]:
    with kube.fresh_namespace(volume_plane, "volumes") as name:
        yield name


def shared_volume(namespace: str) -> list[dict[str, Any]]:
    """A RWX PV on two nodes, pre-bound to claim `data` (class `manual`), and the claim."""
    volume = {"apiVersion": "v1", "kind": "PersistentVolume",
              "metadata": {"name": f"{namespace}-data"},
              "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteMany"],
                       "storageClassName": "manual", "hostPath": {"path": "/tmp/data"},
                       "claimRef": {"namespace": namespace, "name": "data"},
                       "nodeAffinity": {"required": {"nodeSelectorTerms": [{
                           "matchExpressions": [{"key": HOST, "operator": "In",
                                                 "values": REACHABLE}]}]}}}}
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
             "metadata": {"name": "data", "namespace": namespace},
             "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": "manual",
                      "volumeName": f"{namespace}-data",
                      "resources": {"requests": {"storage": "1Gi"}}}}
    return [volume, claim]


def mounting(name: str, group: str) -> dict[str, Any]:
    """A 1-CPU member of `group` mounting claim `data`."""
    return manifests.pod(name, group, cpu="1", volumes=[
        {"name": "data", "persistentVolumeClaim": {"claimName": "data"}}])


def test_a_gang_sharing_a_bound_rwx_claim_is_bound_where_its_volume_reaches(
        volume_plane: ControlPlane, volume_gangsched: GangschedRun,
        volume_namespace: str) -> None:
    manifests.apply(volume_plane, None, *shared_volume(volume_namespace))
    manifests.apply(volume_plane, volume_namespace, manifests.podgroup("train", 3),
                    *(mounting(f"train-{i}", "train") for i in range(3)))

    def members() -> list[dict[str, Any]]:
        return [pod for pod in kube.bound(kube.pods(volume_plane, volume_namespace))
                if pod["metadata"]["name"].startswith("train-")]

    eventually(lambda: len(members()) == 3, timeout=90, what="3 members bound")
    assert {pod["spec"]["nodeName"] for pod in members()} <= set(REACHABLE)
