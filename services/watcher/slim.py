"""Slimming Kubernetes API objects (JSON dicts, camelCase) into the planner's events.

Layer: watcher (pure; the simulator uses it too). Keeps only what the planner needs: never env
values, annotations, secrets or container images. Never raises on a malformed pod or PodGroup:
the event carries `invalid_reason` so the planner keeps the object waiting with that reason.

Decisions recorded here:
- A Node with no conditions at all counts as Ready (hand-written and simulated nodes often
  have none); with conditions, Ready means condition Ready has status "True".
- Requests follow the API server's defaulting (a container limit without a request requests the
  limit) and kube-scheduler's arithmetic (max of each init container and the app containers'
  sum, restartable sidecar init containers added to both, plus overhead), always with `pods: 1`.
- Soft constraints (preferred node/pod affinity, ScheduleAnyway spread) are ignored, as a
  scheduler may; hard ones the planner does not implement are listed in `unsupported`.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from services.contracts import resources
from services.contracts.events import (
    NodeDeleted,
    NodeObserved,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    OwnerRef,
    PodDeleted,
    PodGroupDeleted,
    PodGroupObserved,
    PodObserved,
    Taint,
    Toleration,
)

GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
DEFAULT_SCHEDULER = "default-scheduler"

Obj = Mapping[str, Any]


def _dict(value: Any) -> Obj:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _meta(obj: Obj) -> Obj:
    return _dict(obj.get("metadata"))


def _text(obj: Obj, key: str, default: str = "") -> str:
    value = obj.get(key)
    return str(value) if value not in (None, "") else default


def _namespace(meta: Obj) -> str:
    return _text(meta, "namespace", "default")


def time_ms(text: Any, default_ms: int) -> int:
    """An RFC 3339 timestamp (`2024-05-01T10:00:00Z`) in epoch milliseconds, else `default_ms`."""
    if not isinstance(text, str):
        return default_ms
    try:
        return round(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return default_ms


def node_event(obj: Obj, at_ms: int) -> NodeObserved:
    """A Node as `NodeObserved`.

    Units: allocatable in gangsched units; `status.capacity` is used when `status.allocatable`
    is absent. A malformed quantity drops that resource (the node then offers none of it).
    """
    meta, spec, status = _meta(obj), _dict(obj.get("spec")), _dict(obj.get("status"))
    quantities = _dict(status.get("allocatable")) or _dict(status.get("capacity"))
    allocatable: dict[str, int] = {}
    for name, text in sorted(quantities.items()):
        try:
            allocatable[str(name)] = resources.to_units(str(name), text)
        except resources.InvalidQuantity:
            continue
    return NodeObserved(
        at_ms=at_ms, name=str(meta.get("name", "")), uid=str(meta.get("uid", "")),
        resource_version=str(meta.get("resourceVersion", "")), allocatable=allocatable,
        labels={str(k): str(v) for k, v in _dict(meta.get("labels")).items()},
        taints=tuple(Taint(key=str(t.get("key", "")), effect=str(t.get("effect", "")),
                           value=str(t.get("value", "") or ""))
                     for t in map(_dict, _list(spec.get("taints")))),
        is_unschedulable=bool(spec.get("unschedulable", False)),
        is_ready=is_ready(status))


def is_ready(status: Obj) -> bool:
    """Node condition Ready is "True" (no conditions at all: Ready, see module docstring)."""
    conditions = [_dict(c) for c in _list(status.get("conditions"))]
    if not conditions:
        return True
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def node_deleted(obj: Obj, at_ms: int) -> NodeDeleted:
    """A deleted Node."""
    meta = _meta(obj)
    return NodeDeleted(at_ms=at_ms, name=str(meta.get("name", "")), uid=str(meta.get("uid", "")),
                       resource_version=str(meta.get("resourceVersion", "")))


def pod_event(obj: Obj, at_ms: int) -> PodObserved:
    """A Pod as `PodObserved` (requests, constraints, owner; see module docstring)."""
    meta, spec, status = _meta(obj), _dict(obj.get("spec")), _dict(obj.get("status"))
    labels = _dict(meta.get("labels"))
    invalid: str | None = None
    try:
        requests = pod_requests(spec)
    except resources.InvalidQuantity as error:
        invalid, requests = str(error), {resources.PODS: 1}
    affinity, affinity_unsupported = required_affinity(spec)
    priority = spec.get("priority", 0)
    node_name = spec.get("nodeName")
    return PodObserved(
        at_ms=at_ms, uid=_text(meta, "uid"), namespace=_namespace(meta), name=_text(meta, "name"),
        resource_version=_text(meta, "resourceVersion"),
        scheduler_name=str(spec.get("schedulerName") or DEFAULT_SCHEDULER),
        phase=str(status.get("phase") or "Pending"),
        created_at_ms=time_ms(meta.get("creationTimestamp"), at_ms),
        requests=requests, node_name=str(node_name) if node_name else None,
        group_name=str(labels[GROUP_LABEL]) if labels.get(GROUP_LABEL) else None,
        priority=priority if isinstance(priority, int) else 0,
        node_selector={str(k): str(v) for k, v in _dict(spec.get("nodeSelector")).items()},
        required_affinity=affinity,
        tolerations=tuple(_toleration(_dict(t)) for t in _list(spec.get("tolerations"))),
        unsupported=tuple(sorted(set(affinity_unsupported + unsupported_fields(spec)))),
        invalid_reason=invalid,
        is_scheduling_gated=bool(_list(spec.get("schedulingGates"))),
        is_deleting=meta.get("deletionTimestamp") is not None,
        owner=controller_owner(meta))


def pod_deleted(obj: Obj, at_ms: int) -> PodDeleted:
    """A deleted Pod."""
    meta = _meta(obj)
    return PodDeleted(at_ms=at_ms, uid=str(meta.get("uid", "")),
                      namespace=str(meta.get("namespace") or "default"),
                      name=str(meta.get("name", "")),
                      resource_version=str(meta.get("resourceVersion", "")))


def container_requests(container: Obj, where: str) -> resources.ResourceList:
    """One container's requests, a limit standing in for a missing request (API defaulting).

    Raises:
        resources.InvalidQuantity: the message names the field (`<where>.resources...`).
    """
    spec = _dict(container.get("resources"))
    merged = {**_dict(spec.get("limits")), **_dict(spec.get("requests"))}
    result: resources.ResourceList = {}
    for name, text in sorted(merged.items()):
        try:
            result[str(name)] = resources.to_units(str(name), text)
        except resources.InvalidQuantity as error:
            field = f"{where}.resources.requests.{name}"
            raise resources.InvalidQuantity(f"{field}: {error}") from error
    return result


def pod_requests(spec: Obj) -> resources.ResourceList:
    """The pod's effective requests as kube-scheduler computes them, plus `pods: 1`.

    Source: as `resourcehelper.PodRequests`: app containers summed; each init container's
    request counted against the max, restartable (sidecar) init containers added to the app
    sum and to every later init container; then `spec.overhead` added.
    Raises:
        resources.InvalidQuantity: a malformed quantity, with its field named.
    """
    total: resources.ResourceList = {}
    for i, container in enumerate(_list(spec.get("containers"))):
        total = resources.add(total, container_requests(_dict(container),
                                                        f"spec.containers[{i}]"))
    sidecars: resources.ResourceList = {}
    init_max: resources.ResourceList = {}
    for i, container in enumerate(_list(spec.get("initContainers"))):
        request = container_requests(_dict(container), f"spec.initContainers[{i}]")
        if _dict(container).get("restartPolicy") == "Always":
            total = resources.add(total, request)
            sidecars = resources.add(sidecars, request)
            request = sidecars
        else:
            request = resources.add(request, sidecars)
        init_max = resources.max_each(init_max, request)
    total = resources.max_each(total, init_max)
    try:
        overhead = resources.to_resource_list(_dict(spec.get("overhead")))
    except resources.InvalidQuantity as error:
        raise resources.InvalidQuantity(f"spec.overhead: {error}") from error
    total = resources.add(total, overhead)
    total[resources.PODS] = 1
    return total


def required_affinity(spec: Obj) -> tuple[tuple[NodeSelectorTerm, ...] | None, list[str]]:
    """Required node-affinity terms (None if absent) and unsupported parts (matchFields)."""
    node_affinity = _dict(_dict(spec.get("affinity")).get("nodeAffinity"))
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if not isinstance(required, Mapping):
        return None, []
    terms, unsupported = [], []
    for term in map(_dict, _list(required.get("nodeSelectorTerms"))):
        if _list(term.get("matchFields")):
            unsupported.append("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuring"
                               "Execution.nodeSelectorTerms[].matchFields")
        terms.append(NodeSelectorTerm(tuple(
            NodeSelectorRequirement(key=str(e.get("key", "")), operator=str(e.get("operator", "")),
                                    values=tuple(str(v) for v in _list(e.get("values"))))
            for e in map(_dict, _list(term.get("matchExpressions"))))))
    return tuple(terms), unsupported


def unsupported_fields(spec: Obj) -> list[str]:
    """Hard constraints in the pod spec the planner does not implement, by field path."""
    found = []
    affinity = _dict(spec.get("affinity"))
    for kind in ("podAffinity", "podAntiAffinity"):
        if _list(_dict(affinity.get(kind)).get("requiredDuringSchedulingIgnoredDuringExecution")):
            found.append(f"spec.affinity.{kind}.requiredDuringSchedulingIgnoredDuringExecution")
    if any(_dict(c).get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule"
           for c in _list(spec.get("topologySpreadConstraints"))):
        found.append("spec.topologySpreadConstraints")
    for volume in map(_dict, _list(spec.get("volumes"))):
        for kind in ("persistentVolumeClaim", "ephemeral"):
            if kind in volume:
                found.append(f"spec.volumes[].{kind}")
    if _list(spec.get("resourceClaims")):
        found.append("spec.resourceClaims")
    for container in map(_dict, _list(spec.get("containers")) + _list(spec.get("initContainers"))):
        if any(_dict(port).get("hostPort") for port in _list(container.get("ports"))):
            found.append("spec.containers[].ports[].hostPort")
    return found


def _toleration(obj: Obj) -> Toleration:
    return Toleration(key=_text(obj, "key"), operator=_text(obj, "operator", "Equal"),
                      value=_text(obj, "value"), effect=_text(obj, "effect"))


def controller_owner(meta: Obj) -> OwnerRef | None:
    """The owner reference with `controller: true`, if any."""
    for ref in map(_dict, _list(meta.get("ownerReferences"))):
        if ref.get("controller"):
            return OwnerRef(kind=str(ref.get("kind", "")), name=str(ref.get("name", "")),
                            uid=str(ref.get("uid", "")))
    return None


def podgroup_event(obj: Obj, at_ms: int) -> PodGroupObserved:
    """A PodGroup as `PodGroupObserved`; a malformed spec sets `invalid_reason` (min 1)."""
    meta, spec = _meta(obj), _dict(obj.get("spec"))
    invalid: str | None = None
    min_member = spec.get("minMember")
    if not isinstance(min_member, int) or isinstance(min_member, bool) or min_member < 1:
        invalid, min_member = f"spec.minMember must be an integer >= 1, got {min_member!r}", 1
    try:
        min_resources = resources.to_resource_list(_dict(spec.get("minResources")))
    except resources.InvalidQuantity as error:
        invalid, min_resources = f"spec.minResources: {error}", {}
    timeout = spec.get("scheduleTimeoutSeconds")
    if timeout is not None and (not isinstance(timeout, int) or timeout < 0):
        invalid = f"spec.scheduleTimeoutSeconds must be an integer >= 0, got {timeout!r}"
        timeout = None
    return PodGroupObserved(
        at_ms=at_ms, uid=_text(meta, "uid"), namespace=_namespace(meta), name=_text(meta, "name"),
        resource_version=_text(meta, "resourceVersion"),
        created_at_ms=time_ms(meta.get("creationTimestamp"), at_ms), min_member=min_member,
        min_resources=min_resources, schedule_timeout_seconds=timeout, invalid_reason=invalid)


def podgroup_deleted(obj: Obj, at_ms: int) -> PodGroupDeleted:
    """A deleted PodGroup."""
    meta = _meta(obj)
    return PodGroupDeleted(at_ms=at_ms, uid=str(meta.get("uid", "")),
                           namespace=str(meta.get("namespace") or "default"),
                           name=str(meta.get("name", "")),
                           resource_version=str(meta.get("resourceVersion", "")))
