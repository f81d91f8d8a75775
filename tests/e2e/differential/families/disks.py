"""Inline disks (VolumeRestrictions' disk conflicts): GCE PD, AWS EBS, iSCSI and RBD volumes
from a small set of disks, read-only or not, so that later pods find the nodes where earlier
ones mount the same disk. RBD disks differ by monitors too (one in common is the same Ceph
cluster); the pool is left to the API server's default on some."""

from __future__ import annotations

import random

from tests.e2e.differential.families import Base, ClusterPlan, Manifest

PD_NAMES = ("pd-a",)
EBS_IDS = ("vol-0a",)
IQNS = ("iqn.2001-04.com.example:disk-a", "iqn.2001-04.com.example:disk-b")
MONITORS = ("10.0.0.1:6789", "10.0.0.2:6789", "10.0.0.3:6789")
IMAGES = ("img-a", "img-b")


class Disks(Base):
    name = "disks"

    def shape_pod(self, rng: random.Random, pod: Manifest, plan: ClusterPlan) -> None:
        if rng.random() >= 0.25:
            return
        volumes = pod["spec"].setdefault("volumes", [])
        for index in range(rng.choice([1, 1, 2])):
            volume: Manifest = {"name": f"disk-{index}", **_source(rng)}
            volumes.append(volume)


def _source(rng: random.Random) -> Manifest:
    """One inline disk volume's source, `readOnly` set on some."""
    kind = rng.choice(["gcePersistentDisk", "awsElasticBlockStore", "iscsi", "rbd"])
    source: Manifest
    if kind == "gcePersistentDisk":
        source = {"pdName": rng.choice(PD_NAMES), "fsType": "ext4"}
    elif kind == "awsElasticBlockStore":
        source = {"volumeID": rng.choice(EBS_IDS), "fsType": "ext4"}
    elif kind == "iscsi":
        source = {"targetPortal": "10.0.0.9:3260", "iqn": rng.choice(IQNS), "lun": 0,
                  "fsType": "ext4"}
    else:
        source = {"monitors": rng.sample(MONITORS, rng.choice([1, 2])),
                  "image": rng.choice(IMAGES), "fsType": "ext4"}
        if rng.random() < 0.3:
            source["pool"] = "kube"
    if rng.random() < 0.4:
        source["readOnly"] = True
    return {kind: source}
