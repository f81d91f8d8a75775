"""NodeVolumeLimits: how many volumes of each CSI driver a node may have attached.

Layer: fit (pure). Mirrors kube-scheduler v1.36's `nodevolumelimits.CSILimits` (its only
volume-limits plugin): a node's CSINode gives, per driver, `allocatable.count`, the most volumes
of that driver it may have attached. A pod does not fit a node where the volumes its pods (any
scheduler's, bound or assumed) use, plus those VolumeAttachments hold there that no pod uses,
plus the pod's own volumes not already among them, exceed a driver's count; the Filter then
says `reasons.MAX_VOLUME_COUNT`. A node with no CSINode, or no count for a driver, has no limit
for it.

What counts, per volume of a pod (`filterAttachableVolumes`), keyed `<driver>/<handle>` so a
volume two pods share counts once:

- a claim (`persistentVolumeClaim`, or a generic ephemeral volume's claim) bound to a
  PersistentVolume: the volume's `spec.csi` driver and handle; an in-tree volume kube migrates
  (AWS EBS, GCE PD, Azure Disk, Cinder, Portworx) as translated to CSI
  (`VolumeObserved.migrated`), on a node that has a CSINode (`isCSIMigrationOn`); any other
  volume not at all;
- a claim not bound, or bound to a volume not observed: its StorageClass's provisioner, with a
  handle of its own (`getCSIDriverInfoFromSC`); an in-tree provisioner kube migrates as its CSI
  driver on a node with a CSINode, other in-tree provisioners (Azure File, vSphere) not at all;
  no class, or a class not observed, not at all;
- an inline in-tree volume kube migrates (`PodObserved.migrated_volumes`), on a node with a
  CSINode;
- a claim not observed: not counted (for the pod being placed the VolumeRestrictions PreFilter
  has refused it already).

A VolumeAttachment counts on its node when it names an attacher and a PersistentVolume observed
with `spec.csi` (`getNodeVolumeAttachmentInfo`), keyed by the attacher and that handle.

Deliberate differences: an existing pod's ephemeral claim owned by another pod, and an inline
volume kube cannot translate (left out of `migrated_volumes` by the watcher), are not counted.
kube-scheduler's Filter returns an error status for an existing pod's such volume on a node
whose CSINode sets a limit, when the pod being scheduled has a volume it counts, and for the
scheduled pod's own untranslatable inline volume on any node with a CSINode; an error on any
node aborts the pod's whole scheduling attempt (no node, no preemption), so such pods wait.
`VolumeLimitScaling` (alpha, off by default in v1.36) is not mirrored.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from services.contracts.events import AttachmentObserved, PodObserved, VolumeObserved
from services.fit.volumes import Book

MIGRATED_PROVISIONERS = {
    "kubernetes.io/aws-ebs": "ebs.csi.aws.com",
    "kubernetes.io/gce-pd": "pd.csi.storage.gke.io",
    "kubernetes.io/azure-disk": "disk.csi.azure.com",
    "kubernetes.io/cinder": "cinder.csi.openstack.org",
    "kubernetes.io/portworx-volume": "pxd.portworx.com",
}
"""In-tree provisioners whose volumes kube counts as their CSI driver's (`isCSIMigrationOn`)."""
UNMIGRATED_PROVISIONERS = frozenset({"kubernetes.io/azure-file", "kubernetes.io/vsphere-volume"})
"""In-tree provisioners csi-translation-lib knows but NodeVolumeLimits never counts."""
UNBOUND = "unbound:"
"""The start of the handle an unbound claim is counted by (kube-scheduler's is random)."""

Volumes = dict[str, str]
"""Volumes counted on a node: `<driver>/<handle>` → driver."""


def key(driver: str, handle: str) -> str:
    """A volume's unique name on a node, as `getVolumeUniqueName`."""
    return f"{driver}/{handle}"


def pod_volumes(pod: PodObserved, book: Book, has_csinode: bool) -> Volumes:
    """The volumes `pod` counts on a node (module docstring); `has_csinode`: the node has a
    CSINode (in-tree migration on)."""
    found: Volumes = {}
    for ref in pod.volume_claims:
        claim = book.claim(pod.namespace, ref.name)
        if claim is None or (ref.is_ephemeral and claim.owner_uid != pod.uid):
            continue
        volume = book.volumes.get(claim.volume_name) if claim.volume_name else None
        if volume is not None:
            attached = _of_volume(volume, has_csinode)
            if attached is not None:
                found[key(*attached)] = attached[0]
            continue
        driver = _provisioned_by(book, claim.storage_class, has_csinode)
        if driver is not None:
            found[key(driver, f"{UNBOUND}{pod.namespace}/{claim.name}")] = driver
    if has_csinode:
        for migrated in pod.migrated_volumes:
            found[key(migrated.driver, migrated.handle)] = migrated.driver
    return found


def _of_volume(volume: VolumeObserved, has_csinode: bool) -> tuple[str, str] | None:
    """The (driver, handle) a PersistentVolume counts as, if any."""
    if volume.csi is not None:
        return volume.csi.driver, volume.csi.handle
    if volume.migrated is not None and has_csinode:
        return volume.migrated.driver, volume.migrated.handle
    return None


def _provisioned_by(book: Book, class_name: str, has_csinode: bool) -> str | None:
    """The driver an unbound claim of class `class_name` counts for, if any."""
    storage_class = book.classes.get(class_name) if class_name else None
    if storage_class is None or not storage_class.provisioner:
        return None
    provisioner = storage_class.provisioner
    if provisioner in MIGRATED_PROVISIONERS:
        return MIGRATED_PROVISIONERS[provisioner] if has_csinode else None
    if provisioner in UNMIGRATED_PROVISIONERS:
        return None
    return provisioner


def attachment_volumes(attachments: Iterable[AttachmentObserved],
                       volumes: Mapping[str, VolumeObserved]) -> Volumes:
    """The volumes VolumeAttachments on one node count (module docstring)."""
    found: Volumes = {}
    for attachment in attachments:
        volume = volumes.get(attachment.volume) if attachment.volume else None
        if attachment.attacher and volume is not None and volume.csi is not None:
            found[key(attachment.attacher, volume.csi.handle)] = attachment.attacher
    return found


def exceeds(new: Volumes, attached: Volumes, attachments: Volumes,
            limits: Mapping[str, int]) -> bool:
    """Whether the pod's volumes `new` exceed a driver's limit on a node where its pods use
    `attached` and VolumeAttachments hold `attachments` (`CSILimits.Filter`)."""
    wanted: dict[str, int] = {}
    for name, driver in new.items():
        if name not in attached:
            wanted[driver] = wanted.get(driver, 0) + 1
    if not wanted:
        return False
    held: dict[str, int] = {}
    for driver in attached.values():
        held[driver] = held.get(driver, 0) + 1
    for name, driver in attachments.items():
        if name not in attached:
            held[driver] = held.get(driver, 0) + 1
    return any(driver in limits and held.get(driver, 0) + count > limits[driver]
               for driver, count in wanted.items())
