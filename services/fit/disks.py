"""VolumeRestrictions' disk conflicts: two pods on one node mounting the same inline disk.

Layer: fit (pure). Mirrors kube-scheduler v1.36 `volumerestrictions.isVolumeConflict`: a pod
does not fit a node where a pod already bound (or assumed) there mounts one of its disks so
that they conflict, and its Filter then says `reasons.DISK_CONFLICT`. Two disks conflict when
they are of the same kind and identity and

- GCE persistent disk (same `pdName`): not both read-only;
- AWS EBS (same `volumeID`): always, read-only or not;
- iSCSI (same `iqn`): not both read-only;
- RBD (same `image` and `pool`, and at least one Ceph monitor in common): not both read-only.

kube-scheduler checks only these four inline kinds; a disk reached through a
PersistentVolume is not checked here (VolumeBinding and the attach limits judge those).
"""

from __future__ import annotations

from collections.abc import Iterable

from services.contracts.events import Disk

GCE_PD = "gcePersistentDisk"
AWS_EBS = "awsElasticBlockStore"
ISCSI = "iscsi"
RBD = "rbd"
KINDS = (GCE_PD, AWS_EBS, RBD, ISCSI)
"""The `spec.volumes[]` fields VolumeRestrictions checks (`needsRestrictionsCheck`)."""


def conflict(disk: Disk, other: Disk) -> bool:
    """Whether `disk` (of the pod being placed) conflicts with `other` (of a pod on the node)."""
    if disk.kind != other.kind or disk.name != other.name:
        return False
    if disk.kind == AWS_EBS:
        return True
    if disk.kind == RBD and (disk.pool != other.pool
                             or not set(disk.monitors) & set(other.monitors)):
        return False
    return not (disk.read_only and other.read_only)


def any_conflict(disks: Iterable[Disk], others: Iterable[Disk]) -> bool:
    """Whether some disk of `disks` conflicts with some disk of `others` (a pod's disks
    against those of one pod on the node: `isVolumeConflict` for each of its volumes)."""
    theirs = tuple(others)
    return any(conflict(disk, other) for disk in disks for other in theirs)
