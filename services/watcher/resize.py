"""What a bound pod holds while it is resized in place: its status's resources against its spec.

Layer: watcher (pure). Source: Kubernetes 1.36, where InPlacePodVerticalScaling is GA (locked
on) and InPlacePodLevelResourcesVerticalScaling beta (on by default): kube-scheduler charges a
pod on its node with `resourcehelper.PodRequests(pod, UseStatusResources)`. For each app
container and restartable (sidecar) init container whose status has `resources`, the request
counted is, resource by resource, the largest of the spec's request, the status's
`resources.requests` (what the kubelet actuated) and `allocatedResources` (what it admitted); when
the pod's `PodResizePending` condition says `Infeasible`, the spec's request is left out (the
kubelet will never grant it). Pod-level `spec.resources` go the same way against
`status.resources` and `status.allocatedResources`. A pod shrinking from 4 CPU to 1 holds 4
until the kubelet has actuated the change; charging the spec's 1 would over-commit its node.

The status is the kubelet's to write: a malformed quantity there reads as absent (that
container's or the pod's status is not counted), an amount beyond range as `MAX_AMOUNT`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from services.contracts import resources

RESIZE_PENDING = "PodResizePending"
INFEASIBLE = "Infeasible"

Held = tuple[resources.ResourceList, resources.ResourceList]
"""What the kubelet reports of one container (or of the pod): (actuated, allocated)."""


class Resize(NamedTuple):
    """The status side of a pod's requests (`read`); `effective` folds it into a request."""

    containers: Mapping[str, Held]
    """By container name (app and init), for each status that has `resources`."""
    pod: Held | None
    """The pod-level `status.resources` and `status.allocatedResources`, when it has the first."""
    is_infeasible: bool
    """The `PodResizePending` condition's reason is `Infeasible`."""

    def effective(self, requested: resources.ResourceList,
                  held: Held) -> resources.ResourceList:
        """The request counted for one container (or the pod) that asks `requested` and
        holds `held` (`determineEffectiveRequests`): the largest of each resource."""
        actuated, allocated = held
        base = {} if self.is_infeasible else requested
        return resources.max_each(resources.max_each(base, actuated), allocated)


def read(status: Mapping[str, Any]) -> Resize | None:
    """The resize state of a pod's `status` (a JSON mapping), or None when no container status
    and no pod status reports `resources` (a pending pod; the kubelet's cannot resize)."""
    containers: dict[str, Held] = {}
    for key in ("containerStatuses", "initContainerStatuses"):
        for entry in _list(status.get(key)):
            if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
                continue  # no container of the spec has a name that is not text
            held = _held(entry, entry.get("allocatedResources"))
            if held is not None:
                containers[entry["name"]] = held
    pod = _held(status, status.get("allocatedResources"))
    if not containers and pod is None:
        return None
    return Resize(containers, pod, _is_infeasible(status))


def states_spec(status: Mapping[str, Any], spec: Mapping[str, Any]) -> bool:
    """Whether `status` says each container (and the pod) holds exactly what `spec` requests,
    as written: nothing to fold, so `read` need not be (a running pod's status on a kubelet
    that reports resources, the common case: reading it cost the watcher three times a pod
    event's time, 84 µs against 23). A quantity written otherwise (`1` against `1000m`) is
    not the same here; `read` then decides."""
    requested: dict[str, Any] = {}
    for key in ("containers", "initContainers"):
        for container in _list(spec.get(key)):
            if isinstance(container, Mapping) and isinstance(container.get("name"), str):
                resources_ = container.get("resources")
                requested[container["name"]] = (
                    resources_.get("requests") if isinstance(resources_, Mapping) else None)
    for key in ("containerStatuses", "initContainerStatuses"):
        for entry in _list(status.get(key)):
            if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
                continue  # read as no status (`read`)
            given = requested.get(entry["name"])
            actuated = entry.get("resources")
            if isinstance(actuated, Mapping) and actuated.get("requests") not in (None, given):
                return False
            if isinstance(actuated, Mapping) and entry.get("allocatedResources") not in (
                    None, given):
                return False
    pod_level = spec.get("resources")
    pod_actuated = status.get("resources")
    if isinstance(pod_actuated, Mapping):
        given = pod_level.get("requests") if isinstance(pod_level, Mapping) else None
        if pod_actuated.get("requests") not in (None, given) or status.get(
                "allocatedResources") not in (None, given):
            return False
    return True


def _held(owner: Any, allocated: Any) -> Held | None:
    """(actuated, allocated) of a status mapping `owner` that has a `resources` mapping; None
    without one, or with a quantity that is no quantity."""
    if not isinstance(owner, Mapping) or not isinstance(owner.get("resources"), Mapping):
        return None
    try:
        return (_units(owner["resources"].get("requests")), _units(allocated))
    except resources.InvalidQuantity:
        return None


def _units(quantities: Any) -> resources.ResourceList:
    """A ResourceList in gangsched units, amounts beyond range as `MAX_AMOUNT`.

    Raises:
        resources.InvalidQuantity: a quantity that is no quantity, or a name that is no text.
    """
    if not isinstance(quantities, Mapping):
        return {}
    if not all(isinstance(name, str) for name in quantities):
        raise resources.InvalidQuantity("a resource name that is no text")
    return {name: resources.saturated_units(name, text) for name, text in quantities.items()}


def _is_infeasible(status: Mapping[str, Any]) -> bool:
    for condition in _list(status.get("conditions")):
        if isinstance(condition, Mapping) and condition.get("type") == RESIZE_PENDING:
            return bool(condition.get("reason") == INFEASIBLE)
    return False


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
