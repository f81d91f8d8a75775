"""The container resource names and request/limit pairs the API server takes, for `gangsched
simulate`.

Layer: planner simulate (pure). Source: Kubernetes 1.36's `validateResourceRequirements` with
`validateContainerResourceName` (`pkg/apis/core/validation`) and the helpers it calls
(`pkg/apis/core/helper`), in its order: app containers, then init containers; per container
its limits, then its requests. A name is a qualified name (as a label key); without a `/` it is
one of the standard resources and, for a container, cpu, memory, ephemeral-storage or
hugepages-*; with one, outside `kubernetes.io/` it is an extended resource name. A request
is at most its limit, and equal to it for a resource that cannot be overcommitted (extended
resources and hugepages), which must have a limit. The messages are the API server's; a
quantity is shown as written (the API server shows its canonical form: `2.0` as `2`).
Malformed quantities are not judged here: the planner refuses such a pod with the field named.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from services.contracts import resources
from services.planner.simulate.object_labels import key_problem
from services.planner.simulate.object_names import invalid

STANDARD = frozenset({
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory",
    "requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage",
    "pods", "resourcequotas", "services", "replicationcontrollers", "secrets", "configmaps",
    "persistentvolumeclaims", "storage", "requests.storage", "services.nodeports",
    "services.loadbalancers"})
"""`helper.standardResources`."""
CONTAINER = frozenset({"cpu", "memory", "ephemeral-storage"})
"""`helper.standardContainerResources` (hugepages-* besides)."""
REQUESTS, NATIVE = "requests.", "kubernetes.io/"
HUGEPAGES = resources.HUGEPAGES


def problem(spec: Mapping[str, Any]) -> tuple[str, str] | None:
    """The first field of pod spec `spec`'s containers' `resources` the API server refuses,
    and why (`("spec.containers[0].resources.limits[gpu]", 'Invalid value: "gpu": must be a
    standard resource type or fully qualified')`), field paths relative to `spec`; None when
    it takes them all. Shapes: `spec`'s containers are mappings (checked before)."""
    for field in ("containers", "initContainers"):
        for i, container in enumerate(spec.get(field) or ()):
            found = _requirements_problem(container.get("resources"),
                                          f"{field}[{i}].resources")
            if found is not None:
                return found
    return None


def _requirements_problem(requirements: Any, where: str) -> tuple[str, str] | None:
    if not isinstance(requirements, Mapping):
        return None
    limits, requests = (_map(requirements.get(part)) for part in ("limits", "requests"))
    for name in limits:
        wrong = _name_problem(name)
        if wrong is not None:
            return f"{where}.limits[{name}]", invalid(name, wrong)
    for name, quantity in requests.items():
        wrong = _name_problem(name)
        if wrong is not None:
            return f"{where}.requests[{name}]", invalid(name, wrong)
        if name in limits:
            wrong = _pair_problem(name, quantity, limits[name])
            if wrong is not None:
                return f"{where}.requests", invalid(str(quantity), wrong)
        elif not _may_overcommit(name):
            return (f"{where}.limits",
                    "Required value: Limit must be set for non overcommitable resources")
    return None


def _name_problem(name: str) -> str | None:
    """Why `name` is no container resource name (`validateContainerResourceName`: the first
    message), or None."""
    wrong = key_problem(name)
    if wrong is not None:
        return wrong
    if "/" not in name:
        if name not in STANDARD and not name.startswith((HUGEPAGES, REQUESTS + HUGEPAGES)):
            return "must be a standard resource type or fully qualified"
        if name not in CONTAINER and not name.startswith(HUGEPAGES):
            return "must be a standard resource for containers"
        return None
    if NATIVE not in name and not _is_extended(name):
        return "doesn't follow extended resource name standard"
    return None


def _is_extended(name: str) -> bool:
    """`helper.IsExtendedResourceName` of a name with a `/` outside `kubernetes.io/`."""
    return not name.startswith(REQUESTS) and key_problem(REQUESTS + name) is None


def _may_overcommit(name: str) -> bool:
    """`helper.IsOvercommitAllowed`: native (no `/`, or in `kubernetes.io/`), not hugepages."""
    return ("/" not in name or NATIVE in name) and not name.startswith(HUGEPAGES)


def _pair_problem(name: str, request: Any, limit: Any) -> str | None:
    """Why a request of `name` cannot go with its limit, or None (also when either is no
    quantity: refused elsewhere, with its field named)."""
    try:
        asked, most = resources.to_units(name, request), resources.to_units(name, limit)
    except (resources.InvalidQuantity, resources.AmountBeyondRange):
        return None
    if asked != most and not _may_overcommit(name):
        return f"must be equal to {name} limit of {limit}"
    if asked > most:
        return f"must be less than or equal to {name} limit of {limit}"
    return None


def _map(value: Any) -> dict[str, Any]:
    return {str(key): quantity for key, quantity in value.items()} \
        if isinstance(value, Mapping) else {}
