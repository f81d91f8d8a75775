"""The API resources gangsched reads and writes, and their REST paths.

Layer: kube. Pure; never does I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

_UNQUOTED = re.compile(r"[A-Za-z0-9_.~-]*")
"""What `urllib.parse.quote` leaves as it is whatever `safe` says (RFC 3986 unreserved)."""

PODGROUP_GROUP = "scheduling.x-k8s.io"
PODGROUP_VERSION = "v1alpha1"
PODGROUP_API_VERSION = f"{PODGROUP_GROUP}/{PODGROUP_VERSION}"
NATIVE_PODGROUP_GROUP = "scheduling.k8s.io"
NATIVE_PODGROUP_VERSION = "v1alpha2"
NATIVE_PODGROUP_API_VERSION = f"{NATIVE_PODGROUP_GROUP}/{NATIVE_PODGROUP_VERSION}"
"""The native PodGroup (GenericWorkload feature gate, Kubernetes 1.36: `spec.schedulingPolicy
.gang.minCount`, pods join with `spec.schedulingGroup.podGroupName`)."""
GROUP_APIS = (PODGROUP_GROUP, NATIVE_PODGROUP_GROUP)
"""The PodGroup API groups gangsched can read (`--group-apis`), in lookup order."""


@dataclass(frozen=True)
class Resource:
    """A listable, watchable resource. `kind` is the gangsched event kind (`node`, ...)."""

    kind: str
    api_kind: str
    list_path: str
    is_namespaced: bool

    @property
    def plural(self) -> str:
        """The API's plural name of the resource, the last segment of its collection's path
        (`nodes`, `storageclasses`, `persistentvolumeclaims`), for messages about many."""
        return self.list_path.rpartition("/")[2]


NAMESPACES = Resource("namespace", "Namespace", "/api/v1/namespaces", is_namespaced=False)
"""What InterPodAffinity's `namespaceSelector` reads (the labels of each Namespace)."""
NODES = Resource("node", "Node", "/api/v1/nodes", is_namespaced=False)
PODS = Resource("pod", "Pod", "/api/v1/pods", is_namespaced=True)
PODGROUPS = Resource(
    "podgroup", "PodGroup", f"/apis/{PODGROUP_API_VERSION}/podgroups", is_namespaced=True
)
NATIVE_PODGROUPS = Resource(
    "podgroup", "PodGroup", f"/apis/{NATIVE_PODGROUP_API_VERSION}/podgroups", is_namespaced=True
)
PVCS = Resource("pvc", "PersistentVolumeClaim", "/api/v1/persistentvolumeclaims",
                is_namespaced=True)
PVS = Resource("pv", "PersistentVolume", "/api/v1/persistentvolumes", is_namespaced=False)
STORAGECLASSES = Resource("storageclass", "StorageClass", "/apis/storage.k8s.io/v1/storageclasses",
                          is_namespaced=False)
VOLUME_RESOURCES = (PVCS, PVS, STORAGECLASSES)
"""What VolumeBinding, VolumeRestrictions and VolumeZone read."""
CSINODES = Resource("csinode", "CSINode", "/apis/storage.k8s.io/v1/csinodes", is_namespaced=False)
ATTACHMENTS = Resource("attachment", "VolumeAttachment",
                       "/apis/storage.k8s.io/v1/volumeattachments", is_namespaced=False)
VOLUME_LIMIT_RESOURCES = (CSINODES, ATTACHMENTS)
"""What NodeVolumeLimits reads besides claims, volumes and classes: each node's attach limits
per CSI driver, and the volumes attached to it."""
PDBS = Resource("pdb", "PodDisruptionBudget", "/apis/policy/v1/poddisruptionbudgets",
                is_namespaced=True)
"""What DefaultPreemption reads (its PDB lister: every namespace)."""
WATCHED = (NAMESPACES, NODES, PODS, PODGROUPS, *VOLUME_RESOURCES, *VOLUME_LIMIT_RESOURCES, PDBS)
"""Everything the watcher observes by default, in start order."""
PODGROUP_RESOURCES = {PODGROUP_GROUP: PODGROUPS, NATIVE_PODGROUP_GROUP: NATIVE_PODGROUPS}


def watched(group_apis: tuple[str, ...] = (PODGROUP_GROUP,)) -> tuple[Resource, ...]:
    """Namespaces, nodes, pods, the PodGroups of each API group in `group_apis`, then claims,
    volumes, storage classes, CSINodes, VolumeAttachments and PodDisruptionBudgets, in start
    order.

    Shapes: both PodGroup resources have the event kind `podgroup`; `list_path` tells them
    apart. Raises: KeyError for an API group not in GROUP_APIS.
    """
    return (NAMESPACES, NODES, PODS, *(PODGROUP_RESOURCES[api] for api in group_apis),
            *VOLUME_RESOURCES, *VOLUME_LIMIT_RESOURCES, PDBS)


def pod_path(namespace: str, name: str, subresource: str = "") -> str:
    """Path of a pod, or of one of its subresources (`binding`, `status`)."""
    path = f"/api/v1/namespaces/{_segment(namespace)}/pods/{_segment(name)}"
    return f"{path}/{subresource}" if subresource else path


def claim_path(namespace: str, name: str) -> str:
    """Path of a PersistentVolumeClaim."""
    return f"/api/v1/namespaces/{_segment(namespace)}/persistentvolumeclaims/{_segment(name)}"


def volume_path(name: str) -> str:
    """Path of a PersistentVolume."""
    return f"/api/v1/persistentvolumes/{_segment(name)}"


def node_path(name: str) -> str:
    """Path of a node."""
    return f"/api/v1/nodes/{_segment(name)}"


def podgroup_path(
    namespace: str, name: str, subresource: str = "", api_version: str = PODGROUP_API_VERSION
) -> str:
    """Path of a PodGroup of `api_version`, or of its `status` subresource."""
    path = (
        f"/apis/{api_version}/namespaces/{_segment(namespace)}"
        f"/podgroups/{_segment(name)}"
    )
    return f"{path}/{subresource}" if subresource else path


def events_path(namespace: str) -> str:
    """Path of the events.k8s.io/v1 Events of a namespace."""
    return f"/apis/events.k8s.io/v1/namespaces/{_segment(namespace)}/events"


def event_path(namespace: str, name: str) -> str:
    """Path of one events.k8s.io/v1 Event."""
    return f"{events_path(namespace)}/{_segment(name)}"


def leases_path(namespace: str) -> str:
    """Path of the coordination.k8s.io/v1 Leases of a namespace."""
    return f"/apis/coordination.k8s.io/v1/namespaces/{_segment(namespace)}/leases"


def lease_path(namespace: str, name: str) -> str:
    """Path of one coordination.k8s.io/v1 Lease."""
    return f"{leases_path(namespace)}/{_segment(name)}"


def metadata(obj: dict[str, Any]) -> dict[str, Any]:
    """`obj["metadata"]`, or `{}` when absent or malformed."""
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def list_items(page: dict[str, Any]) -> list[dict[str, Any]]:
    """The objects of a list response (malformed entries skipped)."""
    items = page.get("items")
    if not isinstance(items, list):
        return []
    return [item for item in items if isinstance(item, dict)]


def _segment(text: str) -> str:
    """Quote one path segment (names are DNS labels, but never trust input to be).

    A segment of characters `quote` never changes is returned as it is, without the cost of
    quoting (about a twentieth of the binder's CPU under load, for every bind and event)."""
    if _UNQUOTED.fullmatch(text):
        return text
    return quote(text, safe="")
