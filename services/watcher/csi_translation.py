"""In-tree volumes as kube's CSI translation gives them to NodeVolumeLimits: driver and handle.

Layer: watcher (pure; the simulator uses it too). kube-scheduler's NodeVolumeLimits (CSILimits)
counts an in-tree volume against its CSI driver's limit when kube migrates its plugin
(`isCSIMigrationOn`: only AWS EBS, GCE PD, Azure Disk, Cinder and Portworx, on a node that has
a CSINode), as the CSI volume k8s.io/csi-translation-lib translates it to: a PersistentVolume by
`TranslateInTreePVToCSI`, a pod's inline volume by `TranslateInTreeInlineVolumeToCSI`. Only the
driver and the volume handle are kept (`AttachableVolume`); each plugin's handle:

- `awsElasticBlockStore` → `ebs.csi.aws.com`: `volumeID` as an EBS ID (`ebs_volume_ids`:
  `aws://us-east-1a/vol-1` → `vol-1`; a URL that is no EBS ID cannot be translated).
- `gcePersistentDisk` → `pd.csi.storage.gke.io`: `projects/UNSPECIFIED/zones/UNSPECIFIED/disks/
  <pdName>` inline; a PV's zone label (`failure-domain.beta.kubernetes.io/zone`, else
  `topology.kubernetes.io/zone`, zones joined by `__`) puts its one zone in place of the second
  UNSPECIFIED, or makes it regional (`projects/UNSPECIFIED/regions/<region>/disks/<pdName>`) for
  several zones of one region (`<locale>-<region>-<zone>`; other zones cannot be translated).
- `azureDisk` → `disk.csi.azure.com`: `diskURI`; only a managed disk (`kind` Managed, any case)
  can be translated, and the API server defaults `kind` to Shared.
- `cinder` → `cinder.csi.openstack.org`, `portworxVolume` → `pxd.portworx.com`: `volumeID`.

Never raises: a field of the wrong type reads as absent, a text field that is no text as ""
(`slim`'s contract). A volume naming more than one source (the API server refuses it) is read
as the first of `MIGRATED_KINDS` it names (kube picks one in a map's random order).
Source: k8s.io/csi-translation-lib v0.36 plugins/{aws_ebs,gce_pd,azure_disk,openstack_cinder,
portworx}.go; kube-scheduler's nodevolumelimits/csi.go (`getCSIDriverInfo`,
`checkAttachableInlineVolume`) and utils.go (`isCSIMigrationOn`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from services.contracts.events import AttachableVolume
from services.watcher.ebs_volume_ids import ebs_volume_id

AWS_EBS, GCE_PD, AZURE_DISK, CINDER, PORTWORX = (
    "awsElasticBlockStore", "gcePersistentDisk", "azureDisk", "cinder", "portworxVolume")
MIGRATED_KINDS = (GCE_PD, AWS_EBS, CINDER, AZURE_DISK, PORTWORX)
"""The volume sources kube migrates to CSI (`isCSIMigrationOn`), in csi-translation-lib's
listing order."""
DRIVERS: Mapping[str, str] = {
    AWS_EBS: "ebs.csi.aws.com", GCE_PD: "pd.csi.storage.gke.io",
    AZURE_DISK: "disk.csi.azure.com", CINDER: "cinder.csi.openstack.org",
    PORTWORX: "pxd.portworx.com"}
"""Each migrated source's CSI driver (`GetCSINameFromInTreeName`)."""
BETA_ZONE_LABEL = "failure-domain.beta.kubernetes.io/zone"
ZONE_LABEL = "topology.kubernetes.io/zone"
MULTI_ZONE_DELIMITER = "__"
"""What separates the zones of a regional volume's zone label (`labelMultiZoneDelimiter`)."""
UNSPECIFIED = "UNSPECIFIED"
MANAGED = "managed"
"""The Azure disk kind CSI migration supports, lower case (compared case-insensitively)."""

Obj = Mapping[str, Any]


def persistent_volume(labels: Obj, spec: Obj) -> AttachableVolume | None:
    """The CSI volume NodeVolumeLimits counts for an in-tree PersistentVolume (its
    `metadata.labels` and `spec`) on a node with a CSINode: `TranslateInTreePVToCSI`'s driver
    and handle.

    None when the volume has `spec.csi` (kube reads that instead), names no migrated source,
    cannot be translated (module docstring), or translates to an empty handle (kube counts no
    volume without one: `getCSIDriverInfo`).
    """
    if isinstance(spec.get("csi"), Mapping):
        return None
    found = _source(spec)
    if found is None:
        return None
    kind, source = found
    handle = _PV_HANDLES[kind](source, labels)
    return AttachableVolume(DRIVERS[kind], handle) if handle else None


def inline_volumes(spec: Obj) -> tuple[AttachableVolume, ...]:
    """The CSI volumes NodeVolumeLimits counts for a pod's inline in-tree volumes (its
    `spec.volumes`) on a node with a CSINode, in spec order: each
    `TranslateInTreeInlineVolumeToCSI` gives, with the driver of its source.

    A volume that also names a claim (`persistentVolumeClaim`, `ephemeral`) is counted as that
    claim, not here (`filterAttachableVolumes`); one that cannot be translated is left out.
    An empty handle is kept, as kube counts it (the API server requires the ID it comes from).
    """
    volumes = spec.get("volumes")
    if not isinstance(volumes, list):
        return ()
    found: list[AttachableVolume] = []
    for volume in volumes:
        if not isinstance(volume, Mapping) or any(
                isinstance(volume.get(claim), Mapping)
                for claim in ("persistentVolumeClaim", "ephemeral")):
            continue
        source = _source(volume)
        if source is None:
            continue
        handle = _INLINE_HANDLES[source[0]](source[1])
        if handle is not None:
            found.append(AttachableVolume(DRIVERS[source[0]], handle))
    return tuple(found)


def _gce_region(zones: list[str]) -> str | None:
    """The one region of GCE `zones` (`us-central1-a` is in `us-central1`), as
    `gceGetRegionFromZones`; None where it returns an error: no zones, a zone not of three
    `-`-separated parts, or zones of more than one region."""
    regions = set()
    for zone in zones:
        parts = zone.split("-")
        if len(parts) != 3:
            return None
        regions.add("-".join(parts[:2]))
    return regions.pop() if len(regions) == 1 else None


def _source(volume: Obj) -> tuple[str, Obj] | None:
    """The first migrated source `volume` (a PV spec or a pod volume) names, and its fields."""
    for kind in MIGRATED_KINDS:
        source = volume.get(kind)
        if isinstance(source, Mapping):
            return kind, source
    return None


def _text(source: Obj, key: str) -> str:
    value = source.get(key)
    return value if isinstance(value, str) else ""


def _ebs(source: Obj, _labels: Obj | None = None) -> str | None:
    return ebs_volume_id(_text(source, "volumeID"))


def _gce_pv(source: Obj, labels: Obj) -> str | None:
    """`TranslateInTreePVToCSI` of gce_pd.go: the volume ID by the zones of its label."""
    name = _text(source, "pdName")
    zones = (_text(labels, BETA_ZONE_LABEL) or _text(labels, ZONE_LABEL)).split(
        MULTI_ZONE_DELIMITER)
    if len(zones) == 1 and zones[0]:
        return f"projects/{UNSPECIFIED}/zones/{zones[0]}/disks/{name}"
    if len(zones) > 1:
        region = _gce_region(zones)
        return None if region is None else f"projects/{UNSPECIFIED}/regions/{region}/disks/{name}"
    return _gce_inline(source)


def _gce_inline(source: Obj) -> str:
    return f"projects/{UNSPECIFIED}/zones/{UNSPECIFIED}/disks/{_text(source, 'pdName')}"


def _azure_disk(source: Obj, _labels: Obj | None = None) -> str | None:
    """`diskURI` of a managed disk; None for another `kind` (absent: the API server's default,
    Shared), which csi-translation-lib refuses."""
    kind = _text(source, "kind") if source.get("kind") is not None else "Shared"
    return _text(source, "diskURI") if kind.isascii() and kind.lower() == MANAGED else None


def _volume_id(source: Obj, _labels: Obj | None = None) -> str:
    return _text(source, "volumeID")


_PV_HANDLES: Mapping[str, Callable[[Obj, Obj], str | None]] = {
    AWS_EBS: _ebs, GCE_PD: _gce_pv, AZURE_DISK: _azure_disk, CINDER: _volume_id,
    PORTWORX: _volume_id}
"""Each migrated source's `TranslateInTreePVToCSI` handle (None: it returns an error)."""
_INLINE_HANDLES: Mapping[str, Callable[[Obj], str | None]] = {
    AWS_EBS: _ebs, GCE_PD: _gce_inline, AZURE_DISK: _azure_disk, CINDER: _volume_id,
    PORTWORX: _volume_id}
"""Each migrated source's `TranslateInTreeInlineVolumeToCSI` handle (None: an error)."""
