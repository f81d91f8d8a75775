"""The volume sources the API server takes in a pod's `spec.volumes` and a PersistentVolume's
`spec`, for `gangsched simulate`.

Layer: planner simulate (pure). Source: Kubernetes 1.36's `validateVolumeSource` (a pod's
volume) and `ValidatePersistentVolumeSpec` (pkg/apis/core/validation), in their order: a
volume names at most one source (a second is `Forbidden: may not specify more than 1 volume
type`; a pod volume that names none is an `emptyDir` by the API server's defaulting, and a
PersistentVolume that names none is left alone here, as simulate reads it without one), and
the values of the fields gangsched reads of the sources it reads are checked as the source's
validator checks them:

- `gcePersistentDisk.pdName`, `awsElasticBlockStore.volumeID`, `cinder.volumeID`,
  `portworxVolume.volumeID`: required.
- `iscsi` (a pod's): `targetPortal` and `iqn` required, the IQN of the format its prefix
  (`iqn`, `eui`, `naa`) says, `lun` from 0 to 255.
- `rbd` (a pod's): `monitors` and `image` required.
- `image` (a Pod's, `validateImageVolumeSource`): `reference` required, read by ImageLocality
  (`watcher.slim.pod_images`). Of a Pod only (`opts.ResourceIsPod`, which only the pod
  strategy sets): a workload's template is taken without one, and each pod its controller
  makes of it is refused (`pod_problem`'s `is_pod`).
- `azureDisk`: `diskURI` required; `kind` Shared (the default), Dedicated or Managed; a
  managed disk's URI starts with `/subscriptions/`, another's with `https://`.
- `csi` (a PersistentVolume's, `validateCSIPersistentVolumeSource`): `driver` a CSI driver
  name (`ValidateCSIDriverName`: required, at most 63 bytes, a DNS-1123 subdomain once
  lowercased: `csi_driver_name_problem`, which CSINodes and VolumeAttachments share),
  `volumeHandle` required.

The messages are the API server's, the field named by its path in the manifest (the API server
names a PersistentVolume's `gcePersistentDisk` `persistentDisk`). Not checked: the fields
gangsched does not read (a disk's `partition`, an iSCSI `initiatorName`, an Azure
`diskName`, a CSI volume's secret references, a pod's inline `csi` volume, an image volume's
`pullPolicy`). Shapes: the types of the fields read were checked (`shapes`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from services.contracts import names
from services.planner.simulate.object_labels import utf8_length
from services.planner.simulate.object_names import SUBDOMAIN_RULE, invalid, quoted

Source = Mapping[str, Any]
Problem = tuple[str, str]

POD_SOURCES = (
    "emptyDir", "hostPath", "gitRepo", "gcePersistentDisk", "awsElasticBlockStore", "secret",
    "nfs", "iscsi", "glusterfs", "flocker", "persistentVolumeClaim", "rbd", "cinder", "cephfs",
    "quobyte", "downwardAPI", "fc", "flexVolume", "configMap", "azureFile", "vsphereVolume",
    "photonPersistentDisk", "portworxVolume", "azureDisk", "storageos", "projected", "scaleIO",
    "csi", "ephemeral", "image")
"""The sources a pod's volume may name, in the order `validateVolumeSource` counts them."""
PV_SOURCES = (
    "hostPath", "gcePersistentDisk", "awsElasticBlockStore", "glusterfs", "flocker", "nfs",
    "rbd", "quobyte", "cephfs", "iscsi", "cinder", "fc", "flexVolume", "azureFile",
    "vsphereVolume", "photonPersistentDisk", "portworxVolume", "azureDisk", "scaleIO", "local",
    "storageos", "csi")
"""The sources a PersistentVolume may name, in the order `ValidatePersistentVolumeSpec` counts
them (a `flexVolume` is counted but never refused itself)."""
UNREFUSED_PV_SOURCES = frozenset({"flexVolume"})
MORE_THAN_ONE = "Forbidden: may not specify more than 1 volume type"
REQUIRED = "Required value"
MAX_LUN = 255
MAX_CSI_DRIVER_NAME = 63
AZURE_KINDS = ("Dedicated", "Managed", "Shared")
"""`kind`s of `azureDisk` the API server takes, as it lists them."""
AZURE_DEFAULT_KIND = "Shared"
AZURE_MANAGED_KIND = "Managed"
AZURE_MANAGED_URI = "/subscriptions/"
AZURE_BLOB_URI = "https://"
AZURE_MANAGED_FORMAT = ("/subscriptions/{sub-id}/resourcegroups/{group-name}/providers/"
                        "microsoft.compute/disks/{disk-id}")
AZURE_BLOB_FORMAT = "https://{account-name}.blob.core.windows.net/{container-name}/{disk-name}.vhd"
IQN_PREFIXES = ("iqn", "eui", "naa")
_IQN_FORMATS = {
    "iqn": re.compile(r"iqn\.[0-9]{4}-[0-9]{2}\.([0-9A-Za-z.-]+)(:[^,;*&$|\t\n\f\r ]+)\Z"),
    "eui": re.compile(r"\Aeui.[0-9A-Za-z]{16}\Z"),
    "naa": re.compile(r"\Anaa.[0-9A-Za-z]{32}\Z")}
"""`iscsiInitiator{Iqn,Eui,Naa}Regex`, searched as Go's `MatchString` searches (the IQN one is
not anchored at its start), with Go's ASCII `\\d`, `[[:alnum:]]` and `\\s`."""


def pod_problem(spec: Mapping[str, Any], is_pod: bool = True) -> Problem | None:
    """The first field of pod spec `spec`'s `volumes` the API server refuses (module
    docstring), and why: `("volumes[0].iscsi.lun", "Invalid value: 300: must be between 0 and
    255, inclusive")`, the path relative to `spec`; None when it takes them all. `is_pod`:
    `spec` is a Pod's (a workload's pod too); else a workload template's, which the API server
    validates without `ResourceIsPod` (an image volume's `reference` not required)."""
    checks = _POD_CHECKS if is_pod else _TEMPLATE_CHECKS
    for i, volume in enumerate(spec.get("volumes") or ()):
        found = _sources_problem(volume or {}, POD_SOURCES, frozenset(), checks)
        if found is not None:
            return f"volumes[{i}].{found[0]}", found[1]
    return None


def persistent_volume_problem(spec: Mapping[str, Any]) -> Problem | None:
    """The first field of PersistentVolume spec `spec`'s sources the API server refuses
    (module docstring), and why, the path relative to `spec`; None when it takes them."""
    return _sources_problem(spec, PV_SOURCES, UNREFUSED_PV_SOURCES, _PV_CHECKS)


def _sources_problem(volume: Mapping[str, Any], order: tuple[str, ...],
                     unrefused: frozenset[str],
                     checks: Mapping[str, Callable[[Source], Problem | None]]) -> Problem | None:
    """The first of `volume`'s sources (of `order`; `null` names none) refused as one more
    than one (unless in `unrefused`) or by its check in `checks`, and why."""
    named = 0
    for kind in order:
        source = volume.get(kind)
        if source is None:
            continue
        if named and kind not in unrefused:
            return kind, MORE_THAN_ONE
        named += 1
        check = checks.get(kind)
        found = None if check is None else check(source)
        if found is not None:
            return f"{kind}.{found[0]}", found[1]
    return None


def _required(*fields: str) -> Callable[[Source], Problem | None]:
    """A check that each of `fields` (text or a list) of a source is given (not empty)."""
    def check(source: Source) -> Problem | None:
        return next(((field, REQUIRED) for field in fields if not source.get(field)), None)
    return check


def _iscsi(source: Source) -> Problem | None:
    """`validateISCSIVolumeSource` of the fields gangsched reads or the API server requires."""
    found = _required("targetPortal", "iqn")(source)
    if found is not None:
        return found
    iqn: str = source["iqn"]
    prefix = next((prefix for prefix in IQN_PREFIXES if iqn.startswith(prefix)), None)
    if prefix is None:
        return "iqn", invalid(iqn, "must be valid format starting with iqn, eui, or naa")
    if not _IQN_FORMATS[prefix].search(iqn):
        return "iqn", invalid(iqn, "must be valid format")
    lun = source.get("lun") or 0
    if not 0 <= lun <= MAX_LUN:
        return "lun", f"Invalid value: {lun}: must be between 0 and {MAX_LUN}, inclusive"
    return None


def _azure_disk(source: Source) -> Problem | None:
    """`validateAzureDisk` of the fields gangsched reads (`diskURI`, `kind`), with `kind`
    defaulted as the API server defaults it."""
    found = _required("diskURI")(source)
    if found is not None:
        return found
    uri: str = source["diskURI"]
    kind = source.get("kind")
    kind = AZURE_DEFAULT_KIND if kind is None else kind
    if kind not in AZURE_KINDS:
        return "kind", _unsupported(kind, AZURE_KINDS)
    if kind == AZURE_MANAGED_KIND and not uri.startswith(AZURE_MANAGED_URI):
        return "diskURI", _unsupported(uri, (AZURE_MANAGED_FORMAT,))
    if kind != AZURE_MANAGED_KIND and not uri.startswith(AZURE_BLOB_URI):
        return "diskURI", _unsupported(uri, (AZURE_BLOB_FORMAT,))
    return None


def csi_driver_name_problem(name: str, field: str) -> Problem | None:
    """Why `name`, at `field`, is no CSI driver name (`ValidateCSIDriverName`: required, at
    most 63 bytes, a DNS-1123 subdomain once lowercased), or None. What a PersistentVolume's
    `csi.driver`, a CSINode's drivers and a VolumeAttachment's `attacher` must be."""
    if not name:
        return field, REQUIRED
    if utf8_length(name) > MAX_CSI_DRIVER_NAME:
        return field, f"Too long: may not be more than {MAX_CSI_DRIVER_NAME} bytes"
    if names.is_dns_subdomain(name.lower()):
        return None
    return field, invalid(name, SUBDOMAIN_RULE)


def _csi_persistent_volume(source: Source) -> Problem | None:
    """`validateCSIPersistentVolumeSource` of the fields gangsched reads: `driver`, then
    `volumeHandle`."""
    return (csi_driver_name_problem(source.get("driver") or "", "driver")
            or _required("volumeHandle")(source))


def _unsupported(value: str, supported: tuple[str, ...]) -> str:
    """The API server's `Unsupported value: "<value>": supported values: "<a>", "<b>"`."""
    return (f"Unsupported value: {quoted(value)}: supported values: "
            f"{', '.join(json.dumps(each) for each in supported)}")


_MIGRATED_CHECKS: Mapping[str, Callable[[Source], Problem | None]] = {
    "gcePersistentDisk": _required("pdName"), "awsElasticBlockStore": _required("volumeID"),
    "cinder": _required("volumeID"), "portworxVolume": _required("volumeID"),
    "azureDisk": _azure_disk}
"""Each source kube migrates to a CSI driver, whose fields gangsched reads of a pod's volume
and a PersistentVolume → its check."""
_PV_CHECKS: Mapping[str, Callable[[Source], Problem | None]] = {
    **_MIGRATED_CHECKS, "csi": _csi_persistent_volume}
"""Each source whose fields gangsched reads of a PersistentVolume (the migrated sources, and
`csi`, which attach limits count) → its check."""
_TEMPLATE_CHECKS: Mapping[str, Callable[[Source], Problem | None]] = {
    **_MIGRATED_CHECKS, "iscsi": _iscsi, "rbd": _required("monitors", "image")}
"""Each source whose fields gangsched reads of a workload template's volume (its inline disks,
and the sources kube migrates) → its check."""
_POD_CHECKS: Mapping[str, Callable[[Source], Problem | None]] = {
    **_TEMPLATE_CHECKS, "image": _required("reference")}
"""As `_TEMPLATE_CHECKS`, of a Pod's volume: its image volumes' `reference` too
(`validateImageVolumeSource`: required when `opts.ResourceIsPod`)."""
