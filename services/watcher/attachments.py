"""Slimming CSINodes and VolumeAttachments into the events NodeVolumeLimits reads: how many
volumes of each CSI driver a node may have attached, and which volumes are attached where.

Layer: watcher (pure; the simulator uses it too). kube-scheduler's NodeVolumeLimits (CSILimits)
reads a node's CSINode for its limits (`getVolumeLimits`: each driver with
`allocatable.count`) and counts, besides the volumes of the pods on the node, the
PersistentVolumes its VolumeAttachments attach there (`getNodeVolumeAttachmentInfo`: by
`spec.nodeName`, `spec.attacher` and `spec.source.persistentVolumeName`). Nothing else of either
object is read (a VolumeAttachment's status neither: kube counts one whether attached yet or
not). Never raises, whatever the object (module contract of `slim`: a field of the wrong type
reads as absent).
"""

from __future__ import annotations

from collections.abc import Mapping

from services.contracts.events import (
    AttachmentDeleted,
    AttachmentObserved,
    CSINodeDeleted,
    CSINodeObserved,
)
from services.watcher.slim import (
    Obj,
    as_dict,
    as_list,
    cluster_deleted,
    is_small_int,
    meta_of,
    text_of,
)


def csinode_event(obj: Obj, at_ms: int) -> CSINodeObserved:
    """A CSINode as `CSINodeObserved`: each driver of `spec.drivers` whose `allocatable.count`
    is an integer (the API's int32), by name, with that count; a later driver of the same name
    wins, as in kube's map (the API server refuses both). Drivers without a count have no
    limit and are left out."""
    meta = meta_of(obj)
    limits: dict[str, int] = {}
    for driver in as_list(as_dict(obj.get("spec")).get("drivers")):
        if not isinstance(driver, Mapping):
            continue
        count = as_dict(driver.get("allocatable")).get("count")
        if is_small_int(count):
            limits[text_of(driver, "name")] = count
    return CSINodeObserved(at_ms=at_ms, uid=text_of(meta, "uid"), name=text_of(meta, "name"),
                           resource_version=text_of(meta, "resourceVersion"), limits=limits)


def csinode_deleted(obj: Obj, at_ms: int) -> CSINodeDeleted:
    """A deleted CSINode."""
    return cluster_deleted(CSINodeDeleted, obj, at_ms)


def attachment_event(obj: Obj, at_ms: int) -> AttachmentObserved:
    """A VolumeAttachment as `AttachmentObserved`: its node, attacher (the CSI driver) and
    PersistentVolume ("" for an inline volume's, which kube does not count)."""
    meta, spec = meta_of(obj), as_dict(obj.get("spec"))
    return AttachmentObserved(
        at_ms=at_ms, uid=text_of(meta, "uid"), name=text_of(meta, "name"),
        resource_version=text_of(meta, "resourceVersion"), node=text_of(spec, "nodeName"),
        attacher=text_of(spec, "attacher"),
        volume=text_of(as_dict(spec.get("source")), "persistentVolumeName"))


def attachment_deleted(obj: Obj, at_ms: int) -> AttachmentDeleted:
    """A deleted VolumeAttachment."""
    return cluster_deleted(AttachmentDeleted, obj, at_ms)
