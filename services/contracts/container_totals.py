"""A pod's containers' amounts added up as Kubernetes adds them, one rule for every reader.

Layer: contracts (pure). Source: component-helpers `AggregateContainerRequests` and
`AggregateContainerLimits` (`resource/helpers.go`), which `resourcehelper.PodRequests` (what
kube-scheduler charges a pod) and `SetDefaults_Pod` (what the API server defaults a pod-level
request from) both use: the app containers summed; each sidecar (an init container with
`restartPolicy: Always`) added to that sum and to every later init container; then, for each
resource, the larger of that sum and the largest init container's amount.

What a container amounts to is the caller's `read`: the watcher reads the requests of a stored
pod (with in-place resizes folded in), `gangsched simulate` the quantities it defaults from.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from services.contracts import resources

SIDECAR_RESTART_POLICY = "Always"
"""An init container's `restartPolicy` that makes it a sidecar (runs for the pod's life)."""


class Kind(enum.Enum):
    """Which list a container is in, and so how it counts."""

    APP = "app"
    """`spec.containers`: summed."""
    INIT = "init"
    """`spec.initContainers` without `restartPolicy: Always`: runs alone, before the app."""
    SIDECAR = "sidecar"
    """`spec.initContainers` with `restartPolicy: Always`: runs beside the app."""


Read = Callable[[Mapping[str, Any], str, Kind], resources.ResourceList]
"""A container's amounts in gangsched units (millicores, bytes, counts), given the container,
its field path (`spec.containers[0]`, for messages) and its kind. It may raise; `aggregate`
lets the error through."""


def is_sidecar(container: Mapping[str, Any]) -> bool:
    """An init container that runs for the pod's whole life (`restartPolicy: Always`)."""
    return container.get("restartPolicy") == SIDECAR_RESTART_POLICY


def aggregate(containers: Iterable[Mapping[str, Any]],
              init_containers: Iterable[Mapping[str, Any]], read: Read) -> resources.ResourceList:
    """The containers' aggregate amounts (module docstring), in gangsched units.

    Shapes: `containers` and `init_containers` are the pod spec's lists, in spec order, each
    container a mapping; `read` is called once per container, app containers first.
    Raises: whatever `read` raises (e.g. `resources.InvalidQuantity`), unchanged.
    """
    total: resources.ResourceList = {}
    for i, container in enumerate(containers):
        total = resources.add(total, read(container, f"spec.containers[{i}]", Kind.APP))
    sidecars: resources.ResourceList = {}
    most: resources.ResourceList = {}
    for i, container in enumerate(init_containers):
        where = f"spec.initContainers[{i}]"
        if is_sidecar(container):
            amounts = read(container, where, Kind.SIDECAR)
            total = resources.add(total, amounts)
            sidecars = amounts = resources.add(sidecars, amounts)
        else:
            amounts = resources.add(read(container, where, Kind.INIT), sidecars)
        most = resources.max_each(most, amounts)
    return resources.max_each(total, most)


def is_pod_level_resource(name: str) -> bool:
    """A resource that pod-level `spec.resources` may set: cpu, memory and hugepages-*.

    Source: component-helpers `resource.IsSupportedPodLevelResource`.
    """
    return name in (resources.CPU, resources.MEMORY) or name.startswith(resources.HUGEPAGES)
