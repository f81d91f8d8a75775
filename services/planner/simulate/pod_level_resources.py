"""The pod-level requests and limits the API server defaults in a Pod, for `gangsched simulate`.

Layer: planner simulate (pure; `default` changes the pod spec it is given). Source: Kubernetes
1.36's `SetDefaults_Pod` (`pkg/apis/core/v1/defaults.go`), which, with the PodLevelResources
feature gate (beta, on by default), runs `defaultHugePagePodLimits` then `defaultPodRequests`
on a pod whose `spec.resources` is given, after a container's limit was copied to its missing
request:
- `defaultHugePagePodLimits`: with pod-level limits or requests given, a `hugepages-*` the pod
  level neither requests nor limits gets as its limit the containers' aggregate limit.
- `defaultPodRequests`: with pod-level limits given, a pod-level request of cpu or memory (the
  pod-level resources `IsOvercommitAllowed` takes) that is missing becomes the containers'
  aggregate request when any container (app, init or sidecar) requests that resource, even 0;
  then any pod-level resource still without a request gets its pod-level limit.
So a pod limiting cpu to 6 whose one container requests 1 cpu requests 1 cpu, as the watcher
reads a pod the API server stored; without this, the pod-level limit stood in for the request
(`watcher.slim.pod_requests`) and the pod was charged 6.

The aggregates are component-helpers' `AggregateContainerRequests` and
`AggregateContainerLimits` (`services.contracts.container_totals`, the rule the watcher charges
a stored pod by). Amounts are counted in gangsched units (`services.contracts.resources`:
millicores, bytes), each quantity rounded up as the planner rounds it, and written back in its
form (`format_amount`): the pod is charged what the planner would charge its containers. A
malformed or out-of-range container quantity leaves the pod as written: the planner refuses it
naming that field.

Shapes: `spec` is a pod spec whose field types `shapes` checked (`resources` and each
container's `resources` mappings of `requests` and `limits` maps, or null); its containers are
mappings (`manifests._check_containers`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from services.contracts import container_totals, resources

DEFAULTED_FROM_CONTAINERS = (resources.CPU, resources.MEMORY)
"""The pod-level resources whose missing request `defaultPodRequests` takes from the
containers (`IsSupportedPodLevelResource` and `IsOvercommitAllowed`: not hugepages)."""


def default(spec: dict[str, Any]) -> None:
    """`defaultHugePagePodLimits` then `defaultPodRequests` on the pod spec `spec` (module
    docstring): nothing without a `spec.resources` mapping."""
    pod_level = spec.get("resources")
    if not isinstance(pod_level, dict):
        return
    limits = _aggregate(spec, _limits, _is_hugepages)
    if limits is not None:
        _default_hugepage_limits(pod_level, limits)
    requests = _aggregate(spec, _requests, lambda name: name in DEFAULTED_FROM_CONTAINERS)
    if requests is not None:
        _default_requests(pod_level, requests)


def _is_hugepages(name: str) -> bool:
    return name.startswith(resources.HUGEPAGES)


def _default_hugepage_limits(pod_level: dict[str, Any], aggregate: Mapping[str, int]) -> None:
    """`defaultHugePagePodLimits`: with pod-level `limits` or `requests` given, each
    hugepages-* of the containers' aggregate limits (`aggregate`, bytes) that the pod level
    neither requests nor limits is limited to that aggregate."""
    limits, requests = _map(pod_level.get("limits")), _map(pod_level.get("requests"))
    if not limits and not requests:
        return
    for name, amount in aggregate.items():
        if name not in requests and name not in limits:
            limits[name] = resources.format_amount(name, amount)
    if limits:
        pod_level["limits"] = limits


def _default_requests(pod_level: dict[str, Any], aggregate: Mapping[str, int]) -> None:
    """`defaultPodRequests`: with pod-level `limits` given, a missing request of cpu or
    memory is the containers' aggregate request of it (`aggregate`, gangsched units, holding
    the resources some container requests), then a missing request of any pod-level resource
    is its pod-level limit (the quantity as written)."""
    limits, requests = _map(pod_level.get("limits")), _map(pod_level.get("requests"))
    if not limits:
        return
    for name, amount in aggregate.items():
        requests.setdefault(name, resources.format_amount(name, amount))
    for name, quantity in limits.items():
        if name not in requests and container_totals.is_pod_level_resource(str(name)):
            requests[name] = quantity
    if requests:
        pod_level["requests"] = requests


def _requests(container: Mapping[str, Any]) -> dict[Any, Any]:
    """A container's requests as `SetDefaults_Pod` leaves them: a limit copied to a missing
    request."""
    given = container.get("resources") or {}
    return {**_map(given.get("limits")), **_map(given.get("requests"))}


def _limits(container: Mapping[str, Any]) -> dict[Any, Any]:
    """A container's limits as written."""
    return _map((container.get("resources") or {}).get("limits"))


def _aggregate(spec: Mapping[str, Any], read: Callable[[Mapping[str, Any]], dict[Any, Any]],
               wanted: Callable[[str], bool]) -> resources.ResourceList | None:
    """`AggregateContainerRequests` (`read`: `_requests`) or `AggregateContainerLimits`
    (`_limits`) of the pod spec `spec`, of the resources `wanted` takes, in gangsched units;
    a resource some container gives, even as 0, is in it. None when a quantity is malformed
    or beyond range (module docstring)."""
    def units(container: Mapping[str, Any], _where: str,
              _kind: container_totals.Kind) -> resources.ResourceList:
        return {str(name): resources.to_units(str(name), text)
                for name, text in read(container).items() if wanted(str(name))}

    try:
        return container_totals.aggregate(spec.get("containers") or (),
                                          spec.get("initContainers") or (), units)
    except (resources.InvalidQuantity, resources.AmountBeyondRange):
        return None


def _map(value: Any) -> dict[Any, Any]:
    """A copy of `value`, a map of quantities, or an empty one for null."""
    return dict(value) if isinstance(value, Mapping) else {}
