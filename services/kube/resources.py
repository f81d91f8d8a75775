"""The API resources gangsched reads and writes, and their REST paths.

Layer: kube. Pure; never does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

PODGROUP_GROUP = "scheduling.x-k8s.io"
PODGROUP_VERSION = "v1alpha1"
PODGROUP_API_VERSION = f"{PODGROUP_GROUP}/{PODGROUP_VERSION}"


@dataclass(frozen=True)
class Resource:
    """A listable, watchable resource. `kind` is the gangsched event kind (`node`, ...)."""

    kind: str
    api_kind: str
    list_path: str
    is_namespaced: bool


NODES = Resource("node", "Node", "/api/v1/nodes", is_namespaced=False)
PODS = Resource("pod", "Pod", "/api/v1/pods", is_namespaced=True)
PODGROUPS = Resource(
    "podgroup", "PodGroup", f"/apis/{PODGROUP_API_VERSION}/podgroups", is_namespaced=True
)
WATCHED = (NODES, PODS, PODGROUPS)
"""Everything the watcher observes, in start order."""


def pod_path(namespace: str, name: str, subresource: str = "") -> str:
    """Path of a pod, or of one of its subresources (`binding`, `status`)."""
    path = f"/api/v1/namespaces/{_segment(namespace)}/pods/{_segment(name)}"
    return f"{path}/{subresource}" if subresource else path


def node_path(name: str) -> str:
    """Path of a node."""
    return f"/api/v1/nodes/{_segment(name)}"


def podgroup_path(namespace: str, name: str, subresource: str = "") -> str:
    """Path of a PodGroup, or of its `status` subresource."""
    path = (
        f"/apis/{PODGROUP_API_VERSION}/namespaces/{_segment(namespace)}"
        f"/podgroups/{_segment(name)}"
    )
    return f"{path}/{subresource}" if subresource else path


def events_path(namespace: str) -> str:
    """Path of the core/v1 Events of a namespace."""
    return f"/api/v1/namespaces/{_segment(namespace)}/events"


def metadata(obj: dict[str, Any]) -> dict[str, Any]:
    """`obj["metadata"]`, or `{}` when absent or malformed."""
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _segment(text: str) -> str:
    """Quote one path segment (names are DNS labels, but never trust input to be)."""
    return quote(text, safe="")
