"""Volumes on the real control plane, with kube-controller-manager's PV
controller completing every binding.

Four KWOK nodes. A gang sharing a bound RWX claim whose volume reaches two nodes is bound on
those two only. A WaitForFirstConsumer claim with a static local volume on one node is bound
to that volume (the binder sets its claimRef) and its pod to that node; a gang of two with a
claim each and two local volumes gets one volume per member. A claim of a class
whose provisioner does not exist (the testbed runs none) gets the selected-node annotation on
the node chosen, never binds, and the pod is rolled back unbound; actual provisioning is not
proven here. CSINodes limiting a CSI driver to one volume per node keep a gang of five
members with a volume each Pending (`exceed max volume count`) until one node's limit is
raised, through the watcher's CSINode events.
"""

from __future__ import annotations

import json
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


def local_class(name: str, provisioner: str = "kubernetes.io/no-provisioner") -> dict[str, Any]:
    """A WaitForFirstConsumer StorageClass."""
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": name}, "provisioner": provisioner,
            "volumeBindingMode": "WaitForFirstConsumer"}


def claim_of(namespace: str, name: str, storage_class: str) -> dict[str, Any]:
    """An unbound RWO claim of 1Gi."""
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": storage_class,
                     "resources": {"requests": {"storage": "1Gi"}}}}


def get_json(cp: ControlPlane, *args: str) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(cp.kubectl("get", *args, "-o", "json"))
    return out


def test_a_wait_for_first_consumer_claim_binds_to_its_local_volume_and_the_pod_follows(
        volume_plane: ControlPlane, volume_gangsched: GangschedRun,
        volume_namespace: str) -> None:
    klass = f"{volume_namespace}-local"
    volume = {"apiVersion": "v1", "kind": "PersistentVolume",
              "metadata": {"name": f"{volume_namespace}-local-3"},
              "spec": {"capacity": {"storage": "2Gi"}, "accessModes": ["ReadWriteOnce"],
                       "storageClassName": klass, "local": {"path": "/mnt/disk"},
                       "nodeAffinity": {"required": {"nodeSelectorTerms": [{
                           "matchExpressions": [{"key": HOST, "operator": "In",
                                                 "values": ["kwok-node-3"]}]}]}}}}
    manifests.apply(volume_plane, None, local_class(klass), volume)
    manifests.apply(volume_plane, volume_namespace, claim_of(volume_namespace, "scratch", klass),
                    manifests.pod("writer", None, cpu="1", volumes=[
                        {"name": "scratch", "persistentVolumeClaim": {"claimName": "scratch"}}]))

    def claim() -> dict[str, Any]:
        return get_json(volume_plane, "pvc", "scratch", "-n", volume_namespace)

    eventually(lambda: claim()["status"].get("phase") == "Bound", timeout=90,
               what="claim bound")
    assert claim()["spec"]["volumeName"] == f"{volume_namespace}-local-3"
    eventually(lambda: len(kube.bound(kube.pods(volume_plane, volume_namespace))) == 1,
               timeout=60, what="pod bound")
    (pod,) = kube.bound(kube.pods(volume_plane, volume_namespace))
    assert pod["spec"]["nodeName"] == "kwok-node-3"


def test_a_claim_to_provision_gets_the_selected_node_and_unbound_its_pod_is_rolled_back(
        volume_plane: ControlPlane, volume_gangsched: GangschedRun,
        volume_namespace: str) -> None:
    klass = f"{volume_namespace}-dynamic"
    manifests.apply(volume_plane, None, local_class(klass, provisioner="example.com/none"))
    manifests.apply(volume_plane, volume_namespace, manifests.podgroup("gen", 1,
                                                                       timeout_seconds=5),
                    claim_of(volume_namespace, "out", klass),
                    manifests.pod("gen-0", "gen", cpu="1", volumes=[
                        {"name": "out", "persistentVolumeClaim": {"claimName": "out"}}]))

    def selected() -> str | None:
        annotations = get_json(volume_plane, "pvc", "out", "-n", volume_namespace)[
            "metadata"].get("annotations") or {}
        return annotations.get("volume.kubernetes.io/selected-node")

    eventually(lambda: selected() is not None, timeout=60, what="selected-node annotation")
    assert selected() in {f"kwok-node-{i}" for i in range(4)}

    def rolled_back() -> bool:
        events = get_json(volume_plane, "events", "-n", volume_namespace)["items"]
        return any("was not bound before the deadline" in (event.get("message") or "")
                   for event in events)

    eventually(rolled_back, timeout=90, what="rollback for the unbound claim")
    assert kube.bound(kube.pods(volume_plane, volume_namespace)) == []


def test_two_members_with_their_own_claims_get_two_local_volumes_one_each(
        volume_plane: ControlPlane, volume_gangsched: GangschedRun,
        volume_namespace: str) -> None:
    klass = f"{volume_namespace}-pair"
    hosts = {f"{volume_namespace}-pv-{i}": f"kwok-node-{i}" for i in (0, 2)}
    local = [{"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
              "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                       "storageClassName": klass, "local": {"path": "/mnt/disk"},
                       "nodeAffinity": {"required": {"nodeSelectorTerms": [{
                           "matchExpressions": [{"key": HOST, "operator": "In",
                                                 "values": [host]}]}]}}}}
             for name, host in hosts.items()]
    manifests.apply(volume_plane, None, local_class(klass), *local)
    manifests.apply(volume_plane, volume_namespace, manifests.podgroup("pair", 2),
                    *(claim_of(volume_namespace, f"d{i}", klass) for i in range(2)),
                    *(manifests.pod(f"pair-{i}", "pair", cpu="1", volumes=[
                        {"name": "d", "persistentVolumeClaim": {"claimName": f"d{i}"}}])
                      for i in range(2)))

    def members() -> list[dict[str, Any]]:
        return kube.bound(kube.pods(volume_plane, volume_namespace))

    eventually(lambda: len(members()) == 2, timeout=90, what="2 members bound")
    volumes = {get_json(volume_plane, "pvc", f"d{i}", "-n", volume_namespace)["spec"][
        "volumeName"] for i in range(2)}
    assert volumes == set(hosts)
    on = {pod["metadata"]["name"]: pod["spec"]["nodeName"] for pod in members()}
    for i in range(2):
        claim = get_json(volume_plane, "pvc", f"d{i}", "-n", volume_namespace)
        assert on[f"pair-{i}"] == hosts[claim["spec"]["volumeName"]]


LIMITED_DRIVER = "e2e.csi.example.com"


def csinode(node: str, count: int) -> dict[str, Any]:
    """The node's CSINode: driver LIMITED_DRIVER may attach `count` volumes."""
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": node},
            "spec": {"drivers": [{"name": LIMITED_DRIVER, "nodeID": node,
                                  "allocatable": {"count": count}}]}}


def csi_claim(namespace: str, name: str) -> list[dict[str, Any]]:
    """A claim pre-bound to a CSI volume of LIMITED_DRIVER (class `manual`), and the volume."""
    volume = f"{namespace}-{name}"
    return [{"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": volume},
             "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                      "storageClassName": "manual", "persistentVolumeReclaimPolicy": "Retain",
                      "csi": {"driver": LIMITED_DRIVER, "volumeHandle": volume},
                      "claimRef": {"namespace": namespace, "name": name}}},
            {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
             "metadata": {"name": name, "namespace": namespace},
             "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "manual",
                      "volumeName": volume, "resources": {"requests": {"storage": "1Gi"}}}}]


def test_a_gang_over_the_nodes_attach_limits_waits_until_a_limit_is_raised(
        volume_plane: ControlPlane, volume_gangsched: GangschedRun,
        volume_namespace: str) -> None:
    nodes = [f"kwok-node-{i}" for i in range(4)]
    try:
        manifests.apply(volume_plane, None, *(csinode(node, 1) for node in nodes))
        manifests.apply(volume_plane, None, *(obj for i in range(5)
                                              for obj in csi_claim(volume_namespace, f"v{i}")))
        manifests.apply(volume_plane, volume_namespace, manifests.podgroup("att", 5),
                        *(manifests.pod(f"att-{i}", "att", cpu="1", volumes=[
                            {"name": "v", "persistentVolumeClaim": {"claimName": f"v{i}"}}])
                          for i in range(5)))

        def told() -> bool:
            events = get_json(volume_plane, "events", "-n", volume_namespace)["items"]
            return any("exceed max volume count" in (event.get("message") or "")
                       for event in events)

        eventually(told, timeout=90, what="FailedScheduling naming the attach limit")
        assert kube.bound(kube.pods(volume_plane, volume_namespace)) == []
        manifests.apply(volume_plane, None, csinode("kwok-node-2", 2))
        eventually(lambda: len(kube.bound(kube.pods(volume_plane, volume_namespace))) == 5,
                   timeout=90, what="the gang bound once kwok-node-2 may attach two")
        on = [pod["spec"]["nodeName"]
              for pod in kube.bound(kube.pods(volume_plane, volume_namespace))]
        assert sorted(on) == sorted([*nodes, "kwok-node-2"])
    finally:
        for node in nodes:
            volume_plane.kubectl("delete", "csinode", node, "--ignore-not-found")
