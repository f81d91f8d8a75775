"""A pod's inline disk volumes, as VolumeRestrictions reads them (`PodObserved.disks`).

Layer: watcher (pure; the simulator uses it too). Never raises: a volume field of the wrong
type reads as absent, a text field that is no text as "". Defaults as the API server applies
them (`SetDefaults_RBDVolumeSource`: pool `rbd`), so a manifest read by the simulator and the
object the API server stores give the same disk. A volume naming more than one disk kind (the
API server refuses it) gives each, as `isVolumeConflict` checks each.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from services.contracts.events import Disk
from services.fit import disks as rules

RBD_DEFAULT_POOL = "rbd"
"""`rbd.pool` when the spec leaves it out (the API server's default)."""

_IDENTITY = {rules.GCE_PD: "pdName", rules.AWS_EBS: "volumeID", rules.ISCSI: "iqn",
             rules.RBD: "image"}
"""The field that names the disk within its kind."""


def read(spec: Mapping[str, Any]) -> tuple[Disk, ...]:
    """The disks of `spec.volumes`, in spec order (each volume's kinds in `rules.KINDS`
    order)."""
    volumes = spec.get("volumes")
    if not isinstance(volumes, list):
        return ()
    found: list[Disk] = []
    for volume in volumes:
        if not isinstance(volume, Mapping):
            continue
        for kind in rules.KINDS:
            source = volume.get(kind)
            if isinstance(source, Mapping):
                found.append(_disk(kind, source))
    return tuple(found)


def _disk(kind: str, source: Mapping[str, Any]) -> Disk:
    name = _text(source.get(_IDENTITY[kind]))
    read_only = source.get("readOnly") is True
    if kind != rules.RBD:
        return Disk(kind=kind, name=name, read_only=read_only)
    pool = source.get("pool")
    monitors = source.get("monitors")
    return Disk(kind=kind, name=name, read_only=read_only,
                pool=_text(pool) if pool else RBD_DEFAULT_POOL,
                monitors=tuple(_text(monitor) for monitor in monitors)
                if isinstance(monitors, list) else ())


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""
