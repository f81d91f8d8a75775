"""Slimming PersistentVolumeClaims, PersistentVolumes and StorageClasses into the planner's events.

Layer: watcher (pure; the simulator uses it too). Keeps only what VolumeBinding,
VolumeRestrictions, VolumeZone and NodeVolumeLimits read. Contract as `slim`: the `*_event` and
`*_deleted` functions never raise, whatever the object; a field of the wrong type reads as absent.

Decisions recorded here:
- Storage amounts are bytes, rounded up; one beyond `resources.MAX_AMOUNT` counts as
  `MAX_AMOUNT`. A claim's malformed request sets `invalid_reason` (its pods wait with it);
  a volume's malformed capacity reads as 0 (it then matches only claims requesting nothing).
- Classes are read as `GetPersistentVolumeClaimClass` / `GetPersistentVolumeClass` do: the
  `volume.beta.kubernetes.io/storage-class` annotation first, then `spec.storageClassName`.
  A claim's and a volume's `spec.volumeAttributesClassName` are read as `ptr.Deref(..., "")`:
  absent and null are "", as an empty name (no annotation stands in for it).
- A StorageClass's `allowedTopologies` terms become node selector terms whose requirements
  are In (a TopologySelectorLabelRequirement is a key and its values).
- What NodeVolumeLimits counts of a volume: its `spec.csi` driver and handle (`csi`), and for an
  in-tree volume kube migrates, the CSI volume its translation gives (`migrated`,
  `csi_translation.persistent_volume`).
"""

from __future__ import annotations

from typing import Any

from services.contracts import resources
from services.contracts.events import (
    AttachableVolume,
    ClaimDeleted,
    ClaimObserved,
    ClaimRef,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    StorageClassDeleted,
    StorageClassObserved,
    VolumeDeleted,
    VolumeObserved,
)
from services.watcher.csi_translation import persistent_volume
from services.watcher.slim import (
    Obj,
    as_dict,
    as_list,
    as_text,
    cluster_deleted,
    controller_owner,
    label_selector,
    namespaced_deleted,
    node_selector_terms,
    str_map,
    text_of,
)

BETA_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
BIND_COMPLETED_ANNOTATION = "pv.kubernetes.io/bind-completed"
SELECTED_NODE_ANNOTATION = "volume.kubernetes.io/selected-node"
FILESYSTEM = "Filesystem"
ATTRIBUTES_CLASS = "volumeAttributesClassName"


def _meta(obj: Obj) -> Obj:
    return as_dict(obj.get("metadata"))


def _class(meta: Obj, spec: Obj) -> str:
    annotations = as_dict(meta.get("annotations"))
    if BETA_CLASS_ANNOTATION in annotations:
        return text_of(annotations, BETA_CLASS_ANNOTATION)
    return text_of(spec, "storageClassName")


def _modes(spec: Obj) -> tuple[str, ...]:
    return tuple(sorted({as_text(mode) for mode in as_list(spec.get("accessModes"))}))


def _storage(amounts: Any) -> int:
    """`amounts["storage"]` in bytes (rounded up, saturated).

    Raises:
        resources.InvalidQuantity: malformed.
    """
    text = as_dict(amounts).get(resources.STORAGE)
    return 0 if text is None else resources.saturated_units(resources.STORAGE, text)


def claim_event(obj: Obj, at_ms: int) -> ClaimObserved:
    """A PersistentVolumeClaim as `ClaimObserved` (module docstring)."""
    meta, spec, status = _meta(obj), as_dict(obj.get("spec")), as_dict(obj.get("status"))
    annotations = as_dict(meta.get("annotations"))
    invalid: str | None = None
    try:
        request = _storage(as_dict(spec.get("resources")).get("requests"))
    except resources.InvalidQuantity as error:
        request, invalid = 0, f"spec.resources.requests.storage: {error.detail}"
    selector: tuple[NodeSelectorRequirement, ...] | None = None
    if spec.get("selector") is not None:
        selector, is_valid = label_selector(spec.get("selector"))
        if not is_valid:
            invalid = "spec.selector: not a valid label selector"
    owner = controller_owner(meta)
    return ClaimObserved(
        at_ms=at_ms, uid=text_of(meta, "uid"), namespace=text_of(meta, "namespace", "default"),
        name=text_of(meta, "name"), resource_version=text_of(meta, "resourceVersion"),
        storage_class=_class(meta, spec), volume_name=text_of(spec, "volumeName"),
        is_bind_completed=BIND_COMPLETED_ANNOTATION in annotations,
        phase=text_of(status, "phase", "Pending"), access_modes=_modes(spec),
        request_bytes=request, volume_mode=text_of(spec, "volumeMode", FILESYSTEM),
        selector=selector, selected_node=text_of(annotations, SELECTED_NODE_ANNOTATION),
        owner_uid=owner.uid if owner is not None else "",
        is_deleting=meta.get("deletionTimestamp") is not None, invalid_reason=invalid,
        volume_attributes_class=text_of(spec, ATTRIBUTES_CLASS))


def claim_deleted(obj: Obj, at_ms: int) -> ClaimDeleted:
    """A deleted PersistentVolumeClaim."""
    return namespaced_deleted(ClaimDeleted, obj, at_ms)


def volume_event(obj: Obj, at_ms: int) -> VolumeObserved:
    """A PersistentVolume as `VolumeObserved` (module docstring)."""
    meta, spec, status = _meta(obj), as_dict(obj.get("spec")), as_dict(obj.get("status"))
    try:
        capacity = _storage(spec.get("capacity"))
    except resources.InvalidQuantity:
        capacity = 0
    required = as_dict(spec.get("nodeAffinity")).get("required")
    ref = spec.get("claimRef")
    claim = None
    if isinstance(ref, dict):
        claim = ClaimRef(namespace=text_of(ref, "namespace"), name=text_of(ref, "name"),
                         uid=text_of(ref, "uid"))
    return VolumeObserved(
        at_ms=at_ms, uid=text_of(meta, "uid"), name=text_of(meta, "name"),
        resource_version=text_of(meta, "resourceVersion"), storage_class=_class(meta, spec),
        access_modes=_modes(spec), capacity_bytes=capacity,
        volume_mode=text_of(spec, "volumeMode", FILESYSTEM), labels=str_map(meta.get("labels")),
        node_affinity=(node_selector_terms(required) if isinstance(required, dict) else None),
        claim=claim, phase=text_of(status, "phase", "Pending"),
        is_deleting=meta.get("deletionTimestamp") is not None, csi=_csi(spec),
        migrated=persistent_volume(as_dict(meta.get("labels")), spec),
        volume_attributes_class=text_of(spec, ATTRIBUTES_CLASS))


def _csi(spec: Obj) -> AttachableVolume | None:
    """`spec.csi` (driver, volumeHandle), None unless both are non-empty text: kube-scheduler
    counts no CSI volume without both (`filterAttachableVolumes`)."""
    csi = as_dict(spec.get("csi"))
    driver, handle = csi.get("driver"), csi.get("volumeHandle")
    if isinstance(driver, str) and driver and isinstance(handle, str) and handle:
        return AttachableVolume(driver=driver, handle=handle)
    return None


def volume_deleted(obj: Obj, at_ms: int) -> VolumeDeleted:
    """A deleted PersistentVolume."""
    return cluster_deleted(VolumeDeleted, obj, at_ms)


def storage_class_event(obj: Obj, at_ms: int) -> StorageClassObserved:
    """A StorageClass as `StorageClassObserved` (module docstring)."""
    meta = _meta(obj)
    terms = []
    for term in map(as_dict, as_list(obj.get("allowedTopologies"))):
        terms.append(NodeSelectorTerm(match_expressions=tuple(
            NodeSelectorRequirement(key=text_of(e, "key"), operator="In",
                                    values=tuple(as_text(v)
                                                 for v in as_list(e.get("values"))))
            for e in map(as_dict, as_list(term.get("matchLabelExpressions"))))))
    return StorageClassObserved(
        at_ms=at_ms, uid=text_of(meta, "uid"), name=text_of(meta, "name"),
        resource_version=text_of(meta, "resourceVersion"),
        provisioner=text_of(obj, "provisioner"),
        binding_mode=text_of(obj, "volumeBindingMode", "Immediate"),
        allowed_topologies=tuple(terms))


def storage_class_deleted(obj: Obj, at_ms: int) -> StorageClassDeleted:
    """A deleted StorageClass."""
    return cluster_deleted(StorageClassDeleted, obj, at_ms)
