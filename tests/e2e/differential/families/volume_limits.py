"""CSI attach limits (NodeVolumeLimits): CSINodes with per-driver counts on some nodes, CSI and
in-tree AWS EBS PersistentVolumes bound to claims, and pods mounting them, so nodes fill up to
their limits as kube-scheduler binds pods.

Objects: a CSINode for two nodes in three, with an `allocatable.count` of 1-3 for the driver
`diff.csi.example.com` and of 1-2 for `ebs.csi.aws.com` (kube counts in-tree EBS volumes as
the latter's on a node with a CSINode), some with a driver and no count (no limit); in every
namespace, claims `csi-<n>` bound to CSI volumes (`spec.csi`, ReadWriteMany so several pods may
share one) and `ebs-<n>` bound to in-tree EBS volumes. The class `diff-csi-bound` is
Immediate, and every volume is pre-bound, so no claim waits for a provisioner. The disks
family's inline EBS volumes count toward the same `ebs.csi.aws.com` limits.
"""

from __future__ import annotations

import random

from tests.e2e.differential.families import Base, ClusterPlan, Manifest

DRIVER = "diff.csi.example.com"
EBS_DRIVER = "ebs.csi.aws.com"
CLASS = "diff-csi-bound"
CSI_CLAIMS = 5
EBS_CLAIMS = 3


class VolumeLimits(Base):
    name = "volume-limits"

    def objects(self, rng: random.Random, plan: ClusterPlan) -> list[Manifest]:
        made: list[Manifest] = [{
            "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": CLASS}, "provisioner": DRIVER,
            "volumeBindingMode": "Immediate"}]
        for name in plan.names():
            if rng.random() < 2 / 3:
                made.append(_csinode(rng, name))
        for namespace in plan.namespaces:
            for number in range(CSI_CLAIMS):
                made += _bound(namespace, f"csi-{number}",
                               {"csi": {"driver": DRIVER,
                                        "volumeHandle": f"{namespace}-csi-{number}"}})
            for number in range(EBS_CLAIMS):
                made += _bound(namespace, f"ebs-{number}", {"awsElasticBlockStore": {
                    "volumeID": f"aws://zone-a/vol-{namespace}-{number}", "fsType": "ext4"}})
        return made

    def shape_pod(self, rng: random.Random, pod: Manifest, plan: ClusterPlan) -> None:
        if rng.random() >= 0.2:
            return
        names = sorted({rng.choice([f"csi-{rng.randrange(CSI_CLAIMS)}",
                                    f"csi-{rng.randrange(CSI_CLAIMS)}",
                                    f"ebs-{rng.randrange(EBS_CLAIMS)}"])
                        for _ in range(rng.choice([1, 1, 2]))})
        volumes = pod["spec"].setdefault("volumes", [])
        for name in names:
            volumes.append({"name": f"limited-{name}",
                            "persistentVolumeClaim": {"claimName": name}})


def _csinode(rng: random.Random, node: str) -> Manifest:
    drivers: list[Manifest] = []
    for driver, counts in ((DRIVER, (1, 2, 3)), (EBS_DRIVER, (1, 2))):
        entry: Manifest = {"name": driver, "nodeID": node}
        if rng.random() < 0.85:
            entry["allocatable"] = {"count": rng.choice(counts)}
        drivers.append(entry)
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
            "metadata": {"name": node}, "spec": {"drivers": drivers}}


def _bound(namespace: str, claim: str, source: Manifest) -> list[Manifest]:
    """A claim and its volume, pre-bound to each other (the PV controller completes it)."""
    volume = f"diff-limited-{namespace}-{claim}"
    modes = ["ReadWriteMany"] if "csi" in source else ["ReadWriteOnce"]
    return [
        {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": volume},
         "spec": {"capacity": {"storage": "1Gi"}, "accessModes": modes,
                  "storageClassName": CLASS, "persistentVolumeReclaimPolicy": "Retain",
                  "claimRef": {"namespace": namespace, "name": claim}, **source}},
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
         "metadata": {"name": claim, "namespace": namespace},
         "spec": {"accessModes": modes, "storageClassName": CLASS, "volumeName": volume,
                  "resources": {"requests": {"storage": "1Gi"}}}},
    ]
