"""Slimming Kubernetes API objects (JSON dicts, camelCase) into the planner's events.

Layer: watcher (pure; the simulator uses it too). Keeps only what the planner needs: never env
values, annotations, secrets or container images.

Contract: the `*_event` and `*_deleted` functions never raise, whatever the object (missing or
wrong-type fields anywhere, absurd quantities): a malformed pod or PodGroup gets an event whose
`invalid_reason` names the field, so the planner keeps it waiting with that reason; other
malformed fields are read as absent (a Node's bad quantity drops that resource). A field of the
wrong type reads as absent, and every string field is the object's text or "".
Amounts are never clamped (docs/design-notes.md, "Resource amounts"): a pod requesting more
than `resources.MAX_AMOUNT` gets that request in `unsupported`, so the planner refuses it with
the amount named; a PodGroup's minResources beyond it sets `invalid_reason`; a Node's
allocatable beyond it counts as `MAX_AMOUNT` (it can still take all gangsched can count).

Decisions recorded here:
- A Node with no conditions at all counts as Ready (hand-written and simulated nodes often
  have none); with conditions, Ready means condition Ready has status "True".
- Requests follow the API server's defaulting (a container limit without a request requests the
  limit) and kube-scheduler's arithmetic (max of each init container and the app containers'
  sum, restartable sidecar init containers added to both, plus overhead), always with `pods: 1`.
- Pod-level resources (`spec.resources`, PodLevelResources): as kube-scheduler, the pod-level
  request of cpu, memory or hugepages-* (a pod-level limit standing in for a missing request)
  replaces the containers' aggregate for that resource; other resources keep the aggregate;
  overhead is added after.
- A bound pod being resized in place is charged what its status says it holds where that is
  more than its spec (`resize`), as kube-scheduler charges it.
- Preferred node-affinity terms are carried with their weights (`preferred_affinity`), each
  preference read as a required term is; one the API server would refuse (a weight outside
  1..100, a bad operator or value count) sets `invalid_reason` (`preferred_affinity`), so the
  pod waits with that reason; one it admits but kube-scheduler cannot parse (a Gt/Lt value that
  is no integer, a value that is no label value) sets `preferred_unparseable`, and the planner
  places the pod only where one node passes the filters, as kube-scheduler does. Hard
  constraints the planner does not implement are listed in `unsupported`.
- Preferred inter-pod (anti-)affinity terms are carried with their weights
  (`preferred_pod_affinity`), each term read as a required one is; a term with a selector the
  API server would refuse is left out, so the pod is still placed (the preference ignored).
- Topology spread constraints (both kinds) are carried (`topology_spread`); one the API server
  would refuse sets `invalid_reason` (`topology_spread`), so the pod waits with that reason.
- Required inter-pod (anti-)affinity: labels and terms are carried (`required_pod_affinity`),
  a `namespaceSelector` as requirements matched against the Namespaces' labels (`namespaces`).
- Volumes: the claims of `persistentVolumeClaim` and generic `ephemeral` volumes are carried
  (`volume_claims`); what they need is judged from the claims' own events (`volumes`).
  Inline GCE PD, AWS EBS, iSCSI and RBD disks are carried (`disks`) for VolumeRestrictions'
  disk conflicts; inline volumes kube migrates to CSI drivers as their translation gives them
  (`migrated_volumes`, `csi_translation.inline_volumes`) for NodeVolumeLimits.
- Node declared features: a Node's `status.declaredFeatures` are carried
  (`declared_features`), and the features a pod's scheduling requires are inferred from its
  spec as kube's `nodedeclaredfeatures` library infers them (`required_features`,
  `declared_features.required`): NodeDeclaredFeatures' filter.
- Host ports: the app containers' and sidecars' ports with a hostPort are carried
  (`host_ports`, protocol TCP and host IP 0.0.0.0 when unset), as NodePorts reads them; a plain
  init container's hostPort is ignored, as NodePorts ignores it (it is only held while the
  init container runs, before the app containers start).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, NamedTuple, TypeGuard, TypeVar

from services.contracts import container_totals, names, resources
from services.contracts.events import (
    AttachableVolume,
    Disk,
    HostPort,
    NodeDeleted,
    NodeImage,
    NodeObserved,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    OwnerRef,
    PodAffinityTerm,
    PodClaim,
    PodDeleted,
    PodGroupDeleted,
    PodGroupObserved,
    PodObserved,
    PreferredSchedulingTerm,
    Taint,
    Toleration,
    TopologySpreadConstraint,
    WeightedPodAffinityTerm,
)
from services.contracts.names import is_label_name
from services.fit.filters import NODE_NAME_FIELD, parse_int64
from services.watcher import csi_translation, declared_features, disks, resize

GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
MAX_PORT = 65535
DEFAULT_SCHEDULER = "default-scheduler"
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"

Obj = Mapping[str, Any]


def _dict(value: Any) -> Obj:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _meta(obj: Obj) -> Obj:
    return _dict(obj.get("metadata"))


_INT32 = 2**31 - 1


def _str(value: Any) -> str:
    """`value` as text, never raising (`str` refuses ints of more than 4300 digits)."""
    if isinstance(value, str):
        return value
    try:
        return str(value)
    except (ValueError, RecursionError):
        return f"<{type(value).__name__}>"


def _text(obj: Obj, key: str, default: str = "") -> str:
    value = obj.get(key)
    return _str(value) if value is not None and value != "" else default


def _small_int(value: Any) -> TypeGuard[int]:
    """`value` is an int (not a bool) that fits a signed 32-bit integer, as in the API."""
    return isinstance(value, int) and not isinstance(value, bool) and -_INT32 - 1 <= value <= _INT32


def _shown(value: Any) -> str:
    """`value` for a message: its repr cut to 64 characters, never raising."""
    try:
        shown = repr(value)
    except (ValueError, RecursionError):
        shown = f"<{type(value).__name__}>"
    return shown if len(shown) <= 64 else f"{shown[:64]}..."


def _str_map(value: Any) -> dict[str, str]:
    return {_str(k): _str(v) for k, v in _dict(value).items()}


def _namespace(meta: Obj) -> str:
    return _text(meta, "namespace", "default")


as_dict, as_list, as_text, text_of, str_map = _dict, _list, _str, _text, _str_map
meta_of, is_small_int = _meta, _small_int
"""The readers above under public names, for the other slimming modules (`volumes`,
`budgets`)."""


def time_ms(text: Any, default_ms: int) -> int:
    """An RFC 3339 timestamp (`2024-05-01T10:00:00Z`) in epoch milliseconds, else `default_ms`."""
    parsed = optional_time_ms(text)
    return default_ms if parsed is None else parsed


def optional_time_ms(text: Any) -> int | None:
    """An RFC 3339 timestamp (`2024-05-01T10:00:00Z`) in UTC epoch milliseconds; None when
    absent, not text or not a timestamp."""
    if not isinstance(text, str):
        return None
    try:
        return round(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)
    except (ValueError, OverflowError, OSError):
        return None


def node_event(obj: Obj, at_ms: int) -> NodeObserved:
    """A Node as `NodeObserved`.

    Units: allocatable in gangsched units; `status.capacity` is used when `status.allocatable`
    is absent. A malformed quantity drops that resource (the node then offers none of it); one
    beyond `resources.MAX_AMOUNT` offers `MAX_AMOUNT` (`resources.saturated_units`).
    """
    meta, spec, status = _meta(obj), _dict(obj.get("spec")), _dict(obj.get("status"))
    quantities = _dict(status.get("allocatable")) or _dict(status.get("capacity"))
    allocatable: dict[str, int] = {}
    for name, text in sorted(quantities.items(), key=lambda item: _str(item[0])):
        try:
            allocatable[_str(name)] = resources.saturated_units(_str(name), text)
        except resources.InvalidQuantity:
            continue
    return NodeObserved(
        at_ms=at_ms, name=_text(meta, "name"), uid=_text(meta, "uid"),
        resource_version=_text(meta, "resourceVersion"), allocatable=allocatable,
        labels=_str_map(meta.get("labels")),
        taints=tuple(Taint(key=_text(t, "key"), effect=_text(t, "effect"),
                           value=_text(t, "value"))
                     for t in map(_dict, _list(spec.get("taints")))),
        is_unschedulable=spec.get("unschedulable") is True,
        is_ready=is_ready(status), declared_features=node_declared_features(status),
        images=node_images(status))


IMAGE_SIZE_LIMIT = 2**53
"""The largest image size counted, either way (bytes): ImageLocality scales sizes as float64,
exact below this; no real image comes near it."""


def node_images(status: Obj) -> tuple[NodeImage, ...]:
    """`status.images` as ImageLocality reads them: each image's names that are text, and its
    `sizeBytes` (0 when absent or not a whole number; a negative one kept, as the API server
    does not validate it and kube-scheduler sums it; within +-`IMAGE_SIZE_LIMIT`); an entry
    without a name is left out."""
    found: list[NodeImage] = []
    for image in map(_dict, _list(status.get("images"))):
        image_names = tuple(name for name in _list(image.get("names")) if isinstance(name, str))
        if image_names:
            found.append(NodeImage(names=image_names, size_bytes=_image_size(image)))
    return tuple(found)


def _image_size(image: Obj) -> int:
    """An image's `sizeBytes` as `node_images` reads it (bytes)."""
    size = image.get("sizeBytes")
    if not isinstance(size, int) or isinstance(size, bool):
        return 0
    return min(max(size, -IMAGE_SIZE_LIMIT), IMAGE_SIZE_LIMIT)


def image_name(name: str) -> str:
    """An image reference as ImageLocality matches it against a node's image names: `:latest`
    appended when the last `:` is not after the last `/` (no tag; a digest `@sha256:...` has
    one after it and is kept as is). Source: `normalizedImageName`."""
    return name if name.rfind(":") > name.rfind("/") else f"{name}:latest"


def pod_images(spec: Obj) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The images ImageLocality sums for a pod: its init containers' then app containers'
    (one per container, `image_name`; a missing image counts as the empty name) and its image
    volumes' references (`spec.volumes[].image.reference`)."""
    containers = tuple(image_name(_str(_dict(container).get("image") or ""))
                       for key in ("initContainers", "containers")
                       for container in _list(spec.get(key)))
    volumes = tuple(image_name(_str(reference))
                    for volume in map(_dict, _list(spec.get("volumes")))
                    if isinstance(volume.get("image"), Mapping)
                    and isinstance(reference := volume["image"].get("reference"), str))
    return containers, volumes


def node_declared_features(status: Obj) -> tuple[str, ...]:
    """`status.declaredFeatures` as the API server stores it (sorted, unique), the entries that
    are text; none when absent or not a list. What NodeDeclaredFeatures reads of a node
    (`NodeInfo.SetNode`, which maps the names kube knows)."""
    return tuple(name for name in _list(status.get("declaredFeatures")) if isinstance(name, str))


def is_ready(status: Obj) -> bool:
    """Node condition Ready is "True" (no conditions at all: Ready, see module docstring)."""
    conditions = [_dict(c) for c in _list(status.get("conditions"))]
    if not conditions:
        return True
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def node_deleted(obj: Obj, at_ms: int) -> NodeDeleted:
    """A deleted Node."""
    return cluster_deleted(NodeDeleted, obj, at_ms)


class PodSpecReading(NamedTuple):
    """What a pod's spec says, all but `spec.nodeName` (`read_pod_spec`): the `PodObserved`
    fields of the same names. `requests` and `node_selector` are shared by every event made
    from one reading: copy before changing them."""

    requests: resources.ResourceList
    invalid_reason: str | None
    unsupported: tuple[str, ...]
    scheduler_name: str
    priority: int
    node_selector: dict[str, str]
    required_affinity: tuple[NodeSelectorTerm, ...] | None
    tolerations: tuple[Toleration, ...]
    is_scheduling_gated: bool
    host_ports: tuple[HostPort, ...]
    pod_affinity: tuple[PodAffinityTerm, ...]
    pod_anti_affinity: tuple[PodAffinityTerm, ...]
    preferred_pod_affinity: tuple[WeightedPodAffinityTerm, ...]
    preferred_pod_anti_affinity: tuple[WeightedPodAffinityTerm, ...]
    topology_spread: tuple[TopologySpreadConstraint, ...]
    preemption_policy: str
    preferred_affinity: tuple[PreferredSchedulingTerm, ...]
    preferred_unparseable: str | None
    disks: tuple[Disk, ...]
    migrated_volumes: tuple[AttachableVolume, ...]
    required_features: tuple[str, ...]
    nonzero_extra: resources.ResourceList
    nonzero_own: resources.ResourceList | None
    images: tuple[str, ...]
    image_volumes: tuple[str, ...]


SpecReader = Callable[[Obj, str], PodSpecReading]
"""Reads a pod's spec in its namespace: `read_pod_spec`, or a memory of its readings
(`services.watcher.spec_memory.SpecMemory`)."""


def read_pod_spec(spec: Obj, namespace: str) -> PodSpecReading:
    """What the pod's `spec` in `namespace` says (`PodSpecReading`), as `pod_event` reads it.

    Depends on nothing else of the pod (neither its name nor `spec.nodeName`), so one reading
    serves every pod of the same spec and namespace. Never raises (module contract).
    """
    requests, invalid, beyond = _read_requests(spec)
    on_node, own = nonzero(spec, requests)
    images, image_volumes = pod_images(spec)
    affinity, affinity_unsupported = required_affinity(spec)
    affinity_invalid = required_affinity_problem(affinity)
    preferred_nodes, preferred_invalid = preferred_affinity(spec)
    pod_terms, pod_terms_unsupported = required_pod_affinity(spec, namespace)
    preferred, preferred_unsupported = preferred_pod_affinity(spec, namespace)
    spreads, spread_invalid = topology_spread(spec)
    priority = spec.get("priority", 0)
    return PodSpecReading(
        requests=requests,
        invalid_reason=invalid or affinity_invalid or spread_invalid or preferred_invalid,
        unsupported=tuple(sorted(set(affinity_unsupported + unsupported_fields(spec)
                                     + pod_terms_unsupported + preferred_unsupported
                                     + beyond))),
        scheduler_name=_str(spec.get("schedulerName") or DEFAULT_SCHEDULER),
        priority=priority if _small_int(priority) else 0,
        node_selector=_str_map(spec.get("nodeSelector")),
        required_affinity=affinity,
        tolerations=tuple(_toleration(_dict(t)) for t in _list(spec.get("tolerations"))),
        is_scheduling_gated=bool(_list(spec.get("schedulingGates"))),
        host_ports=host_ports(spec), pod_affinity=pod_terms["podAffinity"],
        pod_anti_affinity=pod_terms["podAntiAffinity"],
        preferred_pod_affinity=preferred["podAffinity"],
        preferred_pod_anti_affinity=preferred["podAntiAffinity"], topology_spread=spreads,
        preemption_policy=preemption_policy(spec),
        preferred_affinity=preferred_nodes,
        preferred_unparseable=preferred_unparseable(preferred_nodes),
        disks=disks.read(spec), migrated_volumes=csi_translation.inline_volumes(spec),
        required_features=declared_features.required(spec),
        nonzero_extra=on_node, nonzero_own=own, images=images, image_volumes=image_volumes)


def pod_event(obj: Obj, at_ms: int, read_spec: SpecReader = read_pod_spec) -> PodObserved:
    """A Pod as `PodObserved` (requests, constraints, owner; see module docstring), its spec
    read by `read_spec` (`read_pod_spec` unless a memory of readings is given)."""
    meta, spec, status = _meta(obj), _dict(obj.get("spec")), _dict(obj.get("status"))
    labels = _dict(meta.get("labels"))
    namespace, name = _namespace(meta), _text(meta, "name")
    read = read_spec(spec, namespace)
    requests, extra, own = read.requests, read.nonzero_extra, read.nonzero_own
    resized = None if resize.states_spec(status, spec) else resize.read(status)
    if resized is not None:  # what the kubelet says it holds differs from its spec
        requests = _read_requests(spec, resized)[0]
        extra, own = nonzero(spec, requests, resized)
    node_name = spec.get("nodeName")
    return PodObserved(
        at_ms=at_ms, uid=_text(meta, "uid"), namespace=namespace, name=name,
        resource_version=_text(meta, "resourceVersion"),
        scheduler_name=read.scheduler_name,
        phase=_str(status.get("phase") or "Pending"),
        created_at_ms=time_ms(meta.get("creationTimestamp"), at_ms),
        requests=dict(requests), node_name=_str(node_name) if node_name else None,
        group_name=_str(labels[GROUP_LABEL]) if labels.get(GROUP_LABEL) else None,
        priority=read.priority,
        node_selector=dict(read.node_selector),
        required_affinity=read.required_affinity,
        tolerations=read.tolerations,
        unsupported=read.unsupported,
        invalid_reason=read.invalid_reason,
        is_scheduling_gated=read.is_scheduling_gated,
        is_deleting=meta.get("deletionTimestamp") is not None,
        owner=controller_owner(meta), host_ports=read.host_ports,
        labels=_str_map(meta.get("labels")), pod_affinity=read.pod_affinity,
        pod_anti_affinity=read.pod_anti_affinity,
        preferred_pod_affinity=read.preferred_pod_affinity,
        preferred_pod_anti_affinity=read.preferred_pod_anti_affinity,
        topology_spread=read.topology_spread,
        volume_claims=volume_claims(spec, name),
        preemption_policy=read.preemption_policy,
        start_ms=optional_time_ms(status.get("startTime")),
        preferred_affinity=read.preferred_affinity,
        preferred_unparseable=read.preferred_unparseable,
        disks=read.disks, migrated_volumes=read.migrated_volumes,
        required_features=read.required_features, nonzero_extra=dict(extra),
        nonzero_own=None if own is None else dict(own), images=read.images,
        image_volumes=read.image_volumes)


def preemption_policy(spec: Obj) -> str:
    """`spec.preemptionPolicy` as the API server keeps it (`PreemptLowerPriority` or `Never`;
    it validates the value), `PreemptLowerPriority` when absent, empty or not text.

    Source: the Priority admission plugin copies it from the PriorityClass and defaults it to
    PreemptLowerPriority; DefaultPreemption's `PodEligibleToPreemptOthers` refuses only `Never`.
    """
    value = spec.get("preemptionPolicy")
    return value if isinstance(value, str) and value else PREEMPT_LOWER_PRIORITY


def volume_claims(spec: Obj, pod_name: str) -> tuple[PodClaim, ...]:
    """The claims the pod's volumes use, in spec order (`PodObserved.volume_claims`).

    Source: as VolumeBinding reads them: `persistentVolumeClaim.claimName`, and for a generic
    ephemeral volume `ephemeral.VolumeClaimName` (`<pod>-<volume>`).
    """
    found = []
    for volume in map(_dict, _list(spec.get("volumes"))):
        if isinstance(volume.get("persistentVolumeClaim"), Mapping):
            found.append(PodClaim(_text(_dict(volume["persistentVolumeClaim"]), "claimName")))
        elif isinstance(volume.get("ephemeral"), Mapping):
            found.append(PodClaim(f"{pod_name}-{_text(volume, 'name')}", is_ephemeral=True))
    return tuple(found)


def _read_requests(spec: Obj, resized: resize.Resize | None = None,
                   ) -> tuple[resources.ResourceList, str | None, list[str]]:
    """The pod's requests (`resized` as `pod_requests`), why they cannot be read
    (`invalid_reason`), and the request beyond range if any (an `unsupported` entry).

    Shapes: unreadable: `{pods: 1}`; beyond range: the requests with every amount beyond
    range charged as `MAX_AMOUNT`, so a pod another scheduler bound still fills its node.
    """
    try:
        return pod_requests(spec, resized=resized), None, []
    except resources.AmountBeyondRange as error:
        beyond = str(error)
    except resources.InvalidQuantity as error:
        return {resources.PODS: 1}, str(error), []
    try:
        return pod_requests(spec, saturated=True, resized=resized), None, [beyond]
    except resources.InvalidQuantity as error:  # a malformed quantity after the huge one
        return {resources.PODS: 1}, str(error), []


def pod_deleted(obj: Obj, at_ms: int) -> PodDeleted:
    """A deleted Pod."""
    return namespaced_deleted(PodDeleted, obj, at_ms)


_Deleted = TypeVar("_Deleted")


def namespaced_deleted(make: Callable[..., _Deleted], obj: Obj, at_ms: int) -> _Deleted:
    """The delete event `make` (PodDeleted, ClaimDeleted, ...: keyword fields at_ms, uid,
    namespace, name, resource_version) of a deleted namespaced object `obj` (no namespace:
    `default`, as the API server defaults it)."""
    meta = _meta(obj)
    return make(at_ms=at_ms, uid=_text(meta, "uid"), namespace=_namespace(meta),
                name=_text(meta, "name"), resource_version=_text(meta, "resourceVersion"))


def cluster_deleted(make: Callable[..., _Deleted], obj: Obj, at_ms: int) -> _Deleted:
    """The delete event `make` (NodeDeleted, VolumeDeleted, CSINodeDeleted, ...: keyword fields
    at_ms, uid, name, resource_version) of a deleted cluster-scoped object `obj`."""
    meta = _meta(obj)
    return make(at_ms=at_ms, uid=_text(meta, "uid"), name=_text(meta, "name"),
                resource_version=_text(meta, "resourceVersion"))


def container_requests(container: Obj, where: str,
                       saturated: bool = False) -> resources.ResourceList:
    """One container's requests, a limit standing in for a missing request (API defaulting).

    `saturated`: an amount beyond range counts as `MAX_AMOUNT` instead of being refused.
    Raises:
        resources.AmountBeyondRange: unless `saturated`; the message names the field.
        resources.InvalidQuantity: the message names the field (`<where>.resources...`).
    """
    return _requests(_dict(container.get("resources")), f"{where}.resources",
                     saturated=saturated)


def _requests(spec: Obj, where: str, only: Any = None,
              saturated: bool = False) -> resources.ResourceList:
    """Requests of a ResourceRequirements (`spec`), limits standing in for missing requests;
    only names for which `only(name)` is true, if given; `saturated` as `container_requests`.

    Raises:
        resources.AmountBeyondRange: unless `saturated` (`<where>.requests: <name> <amount>
            is beyond ...`).
        resources.InvalidQuantity: the message names the field (`<where>.requests.<name>`).
    """
    limits, requests = _dict(spec.get("limits")), _dict(spec.get("requests"))
    merged = {name: text for name, text in {**limits, **requests}.items()
              if only is None or only(_str(name))}
    return _amounts(merged, lambda name: f"{where}.{'requests' if name in requests else 'limits'}",
                    saturated)


def _amounts(quantities: Obj, field: Callable[[Any], str],
             saturated: bool) -> resources.ResourceList:
    """`quantities` in gangsched units; `field(name)` is where each is, for messages.

    Raises:
        resources.AmountBeyondRange: unless `saturated` (`<field>: <name> <amount> is ...`).
        resources.InvalidQuantity: `<field>.<name>: ...`.
    """
    convert = resources.saturated_units if saturated else resources.to_units
    result: resources.ResourceList = {}
    for name, text in sorted(quantities.items(), key=lambda item: _str(item[0])):
        try:
            result[_str(name)] = convert(_str(name), text)
        except resources.AmountBeyondRange as error:
            raise error.at(field(name)) from error
        except resources.InvalidQuantity as error:
            raise resources.InvalidQuantity(
                f"{field(name)}.{_str(name)}: {error.detail}") from error
    return result


def pod_requests(spec: Obj, saturated: bool = False,
                 resized: resize.Resize | None = None,
                 missing: resources.ResourceList | None = None) -> resources.ResourceList:
    """The pod's effective requests as kube-scheduler computes them, plus `pods: 1`.

    Source: as `resourcehelper.PodRequests`: app containers summed; each init container's
    request counted against the max, restartable (sidecar) init containers added to the app
    sum and to every later init container; then pod-level `spec.resources` requests (limits
    standing in) replace that aggregate for cpu, memory and hugepages-*; then `spec.overhead`
    added. `saturated`: amounts beyond range, given or summed, count as `MAX_AMOUNT`.
    `resized`: what the pod's status says it holds (`resize.read`), folded into the requests
    of the app containers, the sidecars and the pod level as kube-scheduler does for a pod
    being resized in place. `missing`: amounts counted for a container that requests none of
    a resource (neither request nor limit given), as `NonMissingContainerRequests` (`nonzero`).
    Raises:
        resources.AmountBeyondRange: unless `saturated`: a quantity or the pod's total
            beyond range, with its field named (`spec` for a total).
        resources.InvalidQuantity: a malformed quantity, with its field named.
    """
    def read(container: Obj, where: str, kind: container_totals.Kind) -> resources.ResourceList:
        request = container_requests(container, where, saturated)
        if resized is not None and kind is not container_totals.Kind.INIT:
            found = resized.containers.get(_str(container.get("name")))
            request = request if found is None else resized.effective(request, found)
        if missing and any(name not in request for name in missing):
            request = {**missing, **request}
        return request

    total = container_totals.aggregate(map(_dict, _list(spec.get("containers"))),
                                       map(_dict, _list(spec.get("initContainers"))), read)
    pod_level = _requests(_dict(spec.get("resources")), "spec.resources",
                          only=container_totals.is_pod_level_resource, saturated=saturated)
    if resized is not None and resized.pod is not None and pod_level:
        effective = resized.effective(pod_level, resized.pod)
        pod_level = {name: effective.get(name, 0) for name in pod_level}
    total.update(pod_level)
    overhead = _amounts(_dict(spec.get("overhead")), lambda _: "spec.overhead", saturated)
    total = resources.add(total, overhead)
    total[resources.PODS] = 1
    if saturated:
        return resources.saturate(total)
    try:
        resources.check_range(total)
    except resources.AmountBeyondRange as error:
        raise error.at("spec (all containers and overhead together)") from error
    return total


NONZERO_MISSING: resources.ResourceList = {resources.CPU: 100, resources.MEMORY: 200 * 1024 * 1024}
"""What NodeResourcesFit's score counts for a container's missing cpu (millicores) and memory
(bytes) request: kube-scheduler's `DefaultMilliCPURequest` and `DefaultMemoryRequest`."""


def nonzero(spec: Obj, requests: resources.ResourceList, resized: resize.Resize | None = None,
            ) -> tuple[resources.ResourceList, resources.ResourceList | None]:
    """What NodeResourcesFit's LeastAllocated and MostAllocated scores add to `requests` (the
    pod's requests as `pod_requests` read them, `resized` alike): counted for the pod on its
    node (`PodObserved.nonzero_extra`), and for the pod being placed where that differs
    (`PodObserved.nonzero_own`; None: it does not).

    Source: kube-scheduler 1.36. The pod placed (the plugin's `calculatePodResourceRequest`):
    `resourcehelper.PodRequests` with `NonMissingContainerRequests` of 100m cpu and 200 MiB
    memory, so every container (app, sidecar or init) that gives neither a request nor a limit
    for cpu or memory counts that amount (a request of 0 is given: it stays 0); pod-level
    requests replace the aggregate; overhead is added to both sides alike. On its node
    (`PodInfo.CalculateResource`, `NonZeroRequested`): the same, but a pod with pod-level
    requests has a resource defaulted only where neither a container nor the pod level gives
    it (`getNonMissingContainerRequests`). Shapes: cpu and/or memory, only where positive.
    Never raises: a spec whose quantities cannot be read adds nothing (the pod is refused).
    """
    if all(_gives_cpu_and_memory(_dict(container))
           for key in ("containers", "initContainers") for container in _list(spec.get(key))):
        return {}, None
    own = _defaulted(spec, requests, resized, NONZERO_MISSING)
    given = _dict(spec.get("resources"))
    if not any(container_totals.is_pod_level_resource(_str(name))
               for part in ("requests", "limits") for name in _dict(given.get(part))):
        return own, None
    absent = {name: amount for name, amount in NONZERO_MISSING.items() if name not in requests}
    on_node = _defaulted(spec, requests, resized, absent) if absent else {}
    return on_node, None if own == on_node else own


def _defaulted(spec: Obj, requests: resources.ResourceList, resized: resize.Resize | None,
               missing: resources.ResourceList) -> resources.ResourceList:
    """What `missing` amounts for containers lacking them add to `requests` (positive only;
    nothing when a quantity cannot be read)."""
    try:
        counted = pod_requests(spec, saturated=True, resized=resized, missing=missing)
    except resources.InvalidQuantity:
        return {}
    extra = {name: counted.get(name, 0) - requests.get(name, 0) for name in NONZERO_MISSING}
    return {name: amount for name, amount in extra.items() if amount > 0}


def _gives_cpu_and_memory(container: Obj) -> bool:
    """Whether a container gives a cpu and a memory request or limit (nothing to default)."""
    given = _dict(container.get("resources"))
    requests, limits = _dict(given.get("requests")), _dict(given.get("limits"))
    return all(name in requests or name in limits for name in NONZERO_MISSING)


def required_affinity(spec: Obj) -> tuple[tuple[NodeSelectorTerm, ...] | None, list[str]]:
    """Required node-affinity terms (None if absent, `matchExpressions` and `matchFields`) and
    unsupported parts (none are left: kept for the caller's contract)."""
    node_affinity = _dict(_dict(spec.get("affinity")).get("nodeAffinity"))
    required = node_affinity.get(_REQUIRED)
    if not isinstance(required, Mapping):
        return None, []
    return node_selector_terms(required), []


def required_affinity_problem(terms: tuple[NodeSelectorTerm, ...] | None) -> str | None:
    """The first reason the API server would refuse the required node-affinity `terms` (as
    `required_affinity` reads them), or None: valid, or absent.

    Source: as the API's `ValidateNodeSelector`: at least one term, each a valid
    NodeSelectorTerm (`_node_term_problems`, as a preferred term's `preference` is checked).
    Unchecked, a bad operator read as matching no node left the pod waiting, "didn't match
    Pod's node affinity/selector", where the API server refuses it.
    """
    if terms is None:
        return None
    field = f"spec.affinity.nodeAffinity.{_REQUIRED}.nodeSelectorTerms"
    if not terms:
        return f"{field} must have at least one node selector term"
    for i, term in enumerate(terms):
        problems = _node_term_problems(term)
        if problems:
            return f"{field}[{i}].{problems[0]}"
    return None


def node_selector_terms(selector: Obj) -> tuple[NodeSelectorTerm, ...]:
    """A NodeSelector's `nodeSelectorTerms` (`matchExpressions` and `matchFields`)."""
    return tuple(map(node_selector_term, map(_dict, _list(selector.get("nodeSelectorTerms")))))


def node_selector_term(term: Obj) -> NodeSelectorTerm:
    """One NodeSelectorTerm (`matchExpressions` and `matchFields`), as written."""
    return NodeSelectorTerm(_requirements(term.get("matchExpressions")),
                            _requirements(term.get("matchFields")))


_MIN_WEIGHT, _MAX_WEIGHT = 1, 100
_SOME, _NONE, _ONE = "specified", "empty", "exactly one value"
_NODE_OPERATORS = {"In": _SOME, "NotIn": _SOME, "Exists": _NONE, "DoesNotExist": _NONE,
                   "Gt": _ONE, "Lt": _ONE}
"""A node selector's `matchExpressions` operators, each with the values it takes."""


def preferred_affinity(spec: Obj) -> tuple[tuple[PreferredSchedulingTerm, ...], str | None]:
    """The preferred node-affinity terms in spec order, and the first reason the API server
    would refuse them (None: valid).

    Source: as the API's `ValidatePreferredSchedulingTerms` (Kubernetes 1.36): weight 1..100;
    each `preference` a valid NodeSelectorTerm (`_node_term_problems`). A weight that is not a
    32-bit integer reads as 0 (and is refused). Scored as NodeAffinity's Score reads them
    (`node_affinity_score`).
    """
    node_affinity = _dict(_dict(spec.get("affinity")).get("nodeAffinity"))
    read: list[PreferredSchedulingTerm] = []
    problems: list[str] = []
    for i, item in enumerate(map(_dict, _list(node_affinity.get(_PREFERRED)))):
        field = f"spec.affinity.nodeAffinity.{_PREFERRED}[{i}]"
        weight, preference = item.get("weight"), _dict(item.get("preference"))
        term = PreferredSchedulingTerm(weight=weight if _small_int(weight) else 0,
                                       preference=node_selector_term(preference))
        if not _MIN_WEIGHT <= term.weight <= _MAX_WEIGHT:
            problems.append(f"{field}.weight must be in the range 1-100, got {_shown(weight)}")
        problems += [f"{field}.preference.{problem}"
                     for problem in _node_term_problems(term.preference)]
        read.append(term)
    return tuple(read), problems[0] if problems else None


def _node_term_problems(term: NodeSelectorTerm) -> list[str]:
    """Why a NodeSelectorTerm is invalid, each `<field> <problem>`.

    Source: as the API's `ValidateNodeSelectorTerm`: a `matchExpressions` operator of
    `_NODE_OPERATORS` with the values it takes (In/NotIn some, Exists/DoesNotExist none, Gt/Lt
    exactly one) and a label name as key; a `matchFields` operator In or NotIn with exactly one
    value, a DNS subdomain, and the key `metadata.name`. Values are not problems here: the API
    server refuses a required term's value that is no label value when the pod is created
    (`gangsched simulate` refuses it too, `simulate.node_affinity`), admits a preferred term's
    (`preferred_unparseable`), and a required term's `Gt`/`Lt` value that is no integer matches
    no node (`filters.requirement_matches`), as in kube-scheduler. A pod admitted before that
    validation (grandfathered) with such a value in an In/NotIn of a required term is the one
    difference: kube-scheduler's term then matches no node, here the requirement is read as
    written.
    """
    problems = []
    for j, requirement in enumerate(term.match_expressions):
        field, takes = f"matchExpressions[{j}]", _NODE_OPERATORS.get(requirement.operator)
        count = len(requirement.values)
        if takes is None:
            problems.append(f"{field}.operator is not a valid selector operator: "
                            f"{_shown(requirement.operator)}")
        elif not {_SOME: count > 0, _NONE: count == 0, _ONE: count == 1}[takes]:
            problems.append(f"{field}.values must be {takes} when `operator` is "
                            f"{requirement.operator}")
        if not is_label_name(requirement.key):
            problems.append(f"{field}.key is not a valid label name: {_shown(requirement.key)}")
    for j, requirement in enumerate(term.match_fields):
        field = f"matchFields[{j}]"
        if requirement.operator not in ("In", "NotIn"):
            problems.append(f"{field}.operator is not a valid field selector operator: "
                            f"{_shown(requirement.operator)}")
        elif len(requirement.values) != 1:
            problems.append(f"{field}.values must be exactly one value when `operator` is "
                            f"{requirement.operator}")
        if requirement.key != NODE_NAME_FIELD:
            problems.append(f"{field}.key is not a valid field selector key: "
                            f"{_shown(requirement.key)}")
        problems += [f"{field}.values[{k}] is not a valid node name: {_shown(value)}"
                     for k, value in enumerate(requirement.values)
                     if not names.is_dns_subdomain(value)]
    return problems


_LABEL_VALUE_MAX = 63
_LABEL_VALUE_TOO_LONG = f"must be no more than {_LABEL_VALUE_MAX} characters"
_LABEL_VALUE_FORM = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")
_NOT_AN_INTEGER = "for 'Gt', 'Lt' operators, the value must be an integer"


def preferred_unparseable(terms: tuple[PreferredSchedulingTerm, ...]) -> str | None:
    """Why kube-scheduler cannot parse the preferred terms (None: it can), as its error reads.

    Source: as `nodeaffinity.NewPreferredSchedulingTerms` (terms of weight 0 and empty
    preferences skipped), whose `labels.NewRequirement` refuses a Gt/Lt value
    `strconv.ParseInt` does not read, then every value of every operator that is not a label
    value (`validation.IsValidLabelValue`: at most 63 characters, alphanumeric at both ends,
    `-_.` inside; so "-5" and "+5", which ParseInt reads, are refused too), each error
    `<path>: Invalid value: "<value>": <why>` with the path `[i].matchExpressions[j].values[k]`
    (`[<key>]` added for a label value), several joined as `[a, b]`. The API server admits
    such values in a preferred term (it refuses them in a required one), so the pod is not
    invalid: NodeAffinity's PreScore fails it whenever two or more nodes pass the filters
    (`placement`), and with one node kube-scheduler binds it unscored.
    """
    errors = []
    for i, term in enumerate(terms):
        if term.weight == 0:
            continue
        for j, requirement in enumerate(term.preference.match_expressions):
            path = f"[{i}].matchExpressions[{j}].values"
            for k, value in enumerate(requirement.values):
                if requirement.operator in ("Gt", "Lt") and parse_int64(value) is None:
                    errors.append(f"{path}[{k}]: Invalid value: {_quoted(value)}: "
                                  f"{_NOT_AN_INTEGER}")
            for k, value in enumerate(requirement.values):
                why = "; ".join(_label_value_problems(value))
                if why:
                    errors.append(f"{path}[{k}][{requirement.key}]: Invalid value: "
                                  f"{_quoted(value)}: {why}")
    if not errors:
        return None
    return errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]"


def _label_value_problems(value: str) -> list[str]:
    """Why `value` is not a label value, as `validation.IsValidLabelValue` words it."""
    problems = []
    if len(value) > _LABEL_VALUE_MAX:
        problems.append(_LABEL_VALUE_TOO_LONG)
    if value and _NAME.fullmatch(value) is None:
        problems.append(_LABEL_VALUE_FORM)
    return problems


def _quoted(value: str) -> str:
    """`value` as Go's `%q` prints a printable string (control characters escaped JSON's way)."""
    return json.dumps(value, ensure_ascii=False)


def _requirements(value: Any) -> tuple[NodeSelectorRequirement, ...]:
    return tuple(NodeSelectorRequirement(key=_text(e, "key"), operator=_text(e, "operator"),
                                         values=tuple(_str(v) for v in _list(e.get("values"))))
                 for e in map(_dict, _list(value)))


def host_ports(spec: Obj) -> tuple[HostPort, ...]:
    """The ports with a hostPort (1..65535) of the sidecars (init containers with
    `restartPolicy: Always`), then of the app containers, in spec order.

    Source: as NodePorts (`schedutil.GetHostPorts`), which counts the containers running for
    the pod's whole life: it skips plain init containers, skips a hostPort <= 0, and reads an
    empty protocol as TCP and an empty hostIP as 0.0.0.0.
    """
    found = []
    sidecars = [c for c in map(_dict, _list(spec.get("initContainers")))
                if container_totals.is_sidecar(c)]
    for container in [*sidecars, *map(_dict, _list(spec.get("containers")))]:
        for port in map(_dict, _list(container.get("ports"))):
            number = port.get("hostPort")
            if _small_int(number) and 0 < number <= MAX_PORT:
                found.append(HostPort(port=number, protocol=_text(port, "protocol", "TCP"),
                                      host_ip=_text(port, "hostIP", "0.0.0.0")))
    return tuple(found)


_SELECTOR_OPERATORS = {"In": True, "NotIn": True, "Exists": False, "DoesNotExist": False}
"""A label selector's operators, each with whether it takes values (as the API validates)."""


_POD_TERMS = ("podAffinity", "podAntiAffinity")
_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def required_pod_affinity(spec: Obj, namespace: str) -> tuple[
        dict[str, tuple[PodAffinityTerm, ...]], list[str]]:
    """Required pod affinity and anti-affinity terms (keys `podAffinity`, `podAntiAffinity`),
    and the parts the planner does not implement, by field path (each term read as
    `pod_affinity_term` reads it).
    """
    affinity = _dict(spec.get("affinity"))
    terms: dict[str, tuple[PodAffinityTerm, ...]] = {}
    found: list[str] = []
    for kind in _POD_TERMS:
        field = f"spec.affinity.{kind}.{_REQUIRED}[]"
        terms[kind] = tuple(pod_affinity_term(term, namespace, field, found) for term in map(
            _dict, _list(_dict(affinity.get(kind)).get(_REQUIRED))))
    return terms, found


def preferred_pod_affinity(spec: Obj, namespace: str) -> tuple[
        dict[str, tuple[WeightedPodAffinityTerm, ...]], list[str]]:
    """Preferred (weighted) pod affinity and anti-affinity terms (keys `podAffinity`,
    `podAntiAffinity`), in spec order, and the parts the planner does not implement, by field
    path (always none: a term with a part gangsched does not implement, a selector the API
    server would refuse, is left out, so the preference is ignored and the pod still placed).
    Each `podAffinityTerm` is read as a required term is (`pod_affinity_term`); a weight that
    is not a 32-bit integer reads as 0 (the API server validates 1..100).
    Source: as `framework.NewPodInfo`'s `getWeightedAffinityTerms`.
    """
    affinity = _dict(spec.get("affinity"))
    terms: dict[str, tuple[WeightedPodAffinityTerm, ...]] = {}
    for kind in _POD_TERMS:
        field = f"spec.affinity.{kind}.{_PREFERRED}[].podAffinityTerm"
        read = []
        for item in map(_dict, _list(_dict(affinity.get(kind)).get(_PREFERRED))):
            weight, dropped = item.get("weight"), list[str]()
            term = pod_affinity_term(_dict(item.get("podAffinityTerm")), namespace, field,
                                     dropped)
            if not dropped:  # a preference gangsched cannot judge is ignored, not refused
                read.append(WeightedPodAffinityTerm(weight=weight if _small_int(weight) else 0,
                                                    term=term))
        terms[kind] = tuple(read)
    return terms, []


def pod_affinity_term(term: Obj, namespace: str, field: str,
                      found: list[str]) -> PodAffinityTerm:
    """One pod (anti-)affinity term of a pod in `namespace`; what the planner does not
    implement of it is appended to `found` under `field` (the term's path).

    Source: as kube-scheduler's `framework.newAffinityTerm`: namespaces default to the pod's own
    when the term names none and has no `namespaceSelector`; `namespaceSelector: {}` is every
    namespace, a non-empty one is carried as requirements and matched against Namespace labels
    (`PodAffinityTerm.namespace_selector`). `matchLabelKeys` and `mismatchLabelKeys` are read
    only through `labelSelector`, into which the API server merged them (as kube-scheduler
    reads them). Unsupported: a selector operator or value list the API would refuse.
    """
    selector, is_valid = label_selector(term.get("labelSelector"))
    raw_namespace_selector = term.get("namespaceSelector")
    if not is_valid:
        found.append(f"{field}.labelSelector")
    namespace_selector, is_valid = label_selector(raw_namespace_selector)
    if not is_valid:
        found.append(f"{field}.namespaceSelector")
    names = tuple(sorted({_str(n) for n in _list(term.get("namespaces"))}))
    if not names and raw_namespace_selector is None:
        names = (namespace,)
    is_every = namespace_selector == ()  # `{}`: labels.Everything()
    return PodAffinityTerm(topology_key=_text(term, "topologyKey"), label_selector=selector,
                           namespaces=names, all_namespaces=is_every,
                           namespace_selector=None if is_every else namespace_selector)


def label_selector(value: Any) -> tuple[tuple[NodeSelectorRequirement, ...] | None, bool]:
    """A label selector as requirements (None if absent: matches nothing), and whether it is
    valid (as `metav1.LabelSelectorAsSelector`: `matchLabels` read as In with one value)."""
    if not isinstance(value, Mapping):
        return None, value is None
    requirements = [NodeSelectorRequirement(key=key, operator="In", values=(label,))
                    for key, label in sorted(_str_map(value.get("matchLabels")).items())]
    is_valid = True
    for requirement in _requirements(value.get("matchExpressions")):
        takes_values = _SELECTOR_OPERATORS.get(requirement.operator)
        if takes_values is None or takes_values is not bool(requirement.values):
            is_valid = False
        requirements.append(requirement)
    return tuple(requirements), is_valid


_SPREAD_ACTIONS = ("DoNotSchedule", "ScheduleAnyway")
_INCLUSION_POLICIES = ("Honor", "Ignore")
_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")


def topology_spread(spec: Obj) -> tuple[tuple[TopologySpreadConstraint, ...], str | None]:
    """The pod's `topologySpreadConstraints` in spec order, and the first reason the API
    server would refuse them (None: valid).

    Source: as the API's `validateTopologySpreadConstraints` (Kubernetes 1.36, with
    MatchLabelKeysInPodTopologySpreadSelectorMerge): maxSkew > 0; a topologyKey; the action
    DoNotSchedule or ScheduleAnyway (no default); no two with the same key and action;
    minDomains > 0 and only with DoNotSchedule; policies Honor or Ignore; matchLabelKeys valid
    label names, only with a labelSelector, none also in it; a valid labelSelector. Absent
    optional fields default as kube-scheduler reads them (`TopologySpreadConstraint`).
    """
    read: list[TopologySpreadConstraint] = []
    problems: list[str] = []
    for i, item in enumerate(map(_dict, _list(spec.get("topologySpreadConstraints")))):
        field = f"spec.topologySpreadConstraints[{i}]"
        selector, is_valid = label_selector(item.get("labelSelector"))
        constraint = TopologySpreadConstraint(
            max_skew=_int_or(item.get("maxSkew"), 0), topology_key=_text(item, "topologyKey"),
            when_unsatisfiable=_text(item, "whenUnsatisfiable"), label_selector=selector,
            min_domains=_int_or(item.get("minDomains", 1), 0),
            node_affinity_policy=_text(item, "nodeAffinityPolicy", "Honor"),
            node_taints_policy=_text(item, "nodeTaintsPolicy", "Ignore"),
            match_label_keys=tuple(_str(key) for key in _list(item.get("matchLabelKeys"))))
        problems += [f"{field}.{problem}" for problem in _spread_problems(
            item, constraint, read, is_valid)]
        read.append(constraint)
    return tuple(read), problems[0] if problems else None


def _int_or(value: Any, default: int) -> int:
    return value if _small_int(value) else default


def _spread_problems(item: Obj, constraint: TopologySpreadConstraint,
                     earlier: list[TopologySpreadConstraint], is_valid: bool) -> list[str]:
    """Why one constraint is invalid, each `<field> <problem>` (see `topology_spread`)."""
    problems = []
    if constraint.max_skew <= 0:
        problems.append(f"maxSkew must be an integer > 0, got {_shown(item.get('maxSkew'))}")
    if not constraint.topology_key:
        problems.append("topologyKey can not be empty")
    action = constraint.when_unsatisfiable
    if action not in _SPREAD_ACTIONS:
        problems.append(f"whenUnsatisfiable must be DoNotSchedule or ScheduleAnyway, got "
                        f"{_shown(item.get('whenUnsatisfiable'))}")
    if any((other.topology_key, other.when_unsatisfiable) == (constraint.topology_key, action)
           for other in earlier):
        problems.append(f"{{topologyKey, whenUnsatisfiable}} duplicates an earlier constraint: "
                        f"{{{constraint.topology_key}, {action}}}")
    if "minDomains" in item and constraint.min_domains <= 0:
        problems.append(f"minDomains must be an integer > 0, got {_shown(item['minDomains'])}")
    if "minDomains" in item and action != "DoNotSchedule":
        problems.append(f"minDomains can only be used with whenUnsatisfiable=DoNotSchedule, "
                        f"not {action}")
    for name, policy in (("nodeAffinityPolicy", constraint.node_affinity_policy),
                         ("nodeTaintsPolicy", constraint.node_taints_policy)):
        if policy not in _INCLUSION_POLICIES:
            problems.append(f"{name} must be Honor or Ignore, got {_shown(item.get(name))}")
    problems += _match_label_keys_problems(item, constraint)
    if not is_valid:
        problems.append("labelSelector is not a valid label selector")
    return problems


def _match_label_keys_problems(item: Obj, constraint: TopologySpreadConstraint) -> list[str]:
    """`matchLabelKeys`: label names, only with a labelSelector, none also in the selector
    (once in `matchExpressions` is the API server's own merge of it)."""
    keys = constraint.match_label_keys
    if not keys:
        return []
    if constraint.label_selector is None:
        return ["matchLabelKeys must not be specified when labelSelector is not set"]
    problems = [f"matchLabelKeys: {_shown(key)} is not a valid label name"
                for key in keys if not is_label_name(key)]
    selector = _dict(item.get("labelSelector"))
    expressions = [_text(_dict(e), "key") for e in _list(selector.get("matchExpressions"))]
    problems += [f"matchLabelKeys: {_shown(key)} exists in both matchLabelKeys and labelSelector"
                 for key in keys if key in _str_map(selector.get("matchLabels"))
                 or expressions.count(key) > 1]
    return problems


def unsupported_fields(spec: Obj) -> list[str]:
    """Hard constraints in the pod spec the planner does not implement, by field path."""
    found: list[str] = []
    if _list(spec.get("resourceClaims")):
        found.append("spec.resourceClaims")
    return found


def _toleration(obj: Obj) -> Toleration:
    return Toleration(key=_text(obj, "key"), operator=_text(obj, "operator", "Equal"),
                      value=_text(obj, "value"), effect=_text(obj, "effect"))


def controller_owner(meta: Obj) -> OwnerRef | None:
    """The owner reference with `controller: true`, if any."""
    for ref in map(_dict, _list(meta.get("ownerReferences"))):
        if ref.get("controller"):
            return OwnerRef(kind=_text(ref, "kind"), name=_text(ref, "name"),
                            uid=_text(ref, "uid"))
    return None


def podgroup_event(obj: Obj, at_ms: int) -> PodGroupObserved:
    """A PodGroup as `PodGroupObserved`; a malformed spec sets `invalid_reason` (min 1).

    Source: the CRD requires no field, and the optional ones default as Coscheduling reads
    them (its Go types decode an absent field as the zero value): `minMember` absent or 0 is
    1 (Coscheduling's Permit lets each member through on its own, so no gang waits: the same
    as minMember 1), `scheduleTimeoutSeconds` absent or 0 is the default timeout (None),
    `minResources` absent is none (null is absent: the API server prunes a null field of a
    CRD that does not declare it nullable). A negative or non-integer minMember is still
    invalid.
    """
    meta, spec = _meta(obj), _dict(obj.get("spec"))
    invalid: str | None = None
    given = spec.get("minMember")
    if given is None:  # a null field is an absent one, as the API server prunes it
        given = 0
    min_member = given if _small_int(given) and given >= 1 else 1
    if not (_small_int(given) and given >= 0):
        invalid = f"spec.minMember must be an integer >= 0, got {_shown(given)}"
    try:
        min_resources = resources.to_resource_list(_dict(spec.get("minResources")))
    except resources.InvalidQuantity as error:
        invalid, min_resources = f"spec.minResources: {error}", {}
    given = spec.get("scheduleTimeoutSeconds")
    timeout = given if _small_int(given) and given >= 0 else None
    if given is not None and timeout is None:
        invalid = f"spec.scheduleTimeoutSeconds must be an integer >= 0, got {_shown(given)}"
    return PodGroupObserved(
        at_ms=at_ms, uid=_text(meta, "uid"), namespace=_namespace(meta), name=_text(meta, "name"),
        resource_version=_text(meta, "resourceVersion"),
        created_at_ms=time_ms(meta.get("creationTimestamp"), at_ms), min_member=min_member,
        min_resources=min_resources, schedule_timeout_seconds=timeout, invalid_reason=invalid)


def podgroup_deleted(obj: Obj, at_ms: int) -> PodGroupDeleted:
    """A deleted PodGroup."""
    return namespaced_deleted(PodGroupDeleted, obj, at_ms)
