"""Slimming the native PodGroup API (`scheduling.k8s.io/v1alpha2`) and its pods' group field.

Layer: watcher (pure, like `slim`, whose contract it keeps: never raises, a malformed PodGroup
gets an `invalid_reason`). Kubernetes 1.36 serves it behind the GenericWorkload feature gate:
a PodGroup's `spec.schedulingPolicy` is either `basic` (no gang: each member on its own) or
`gang` with `minCount`; a pod joins with `spec.schedulingGroup.podGroupName`.

Decisions recorded here: the native group names share one key space (`<ns>/<name>`) with
Coscheduling's PodGroups, so with both APIs read a name must be used by one API only; the
label `scheduling.x-k8s.io/pod-group` wins over `spec.schedulingGroup` on a pod that has both.
The native PodGroup has no minResources or timeout: the default timeout applies. Its
`spec.schedulingConstraints.topology` (KEP-5732: every pod of the group in one domain of the
node label `key`, kube-scheduler's TopologyPlacement) is read into `topology_key`, and the
planner places the gang inside one value of that label (`planner.core.topology_placement`);
a list that is no list of objects each with a label key as `key` makes the PodGroup invalid.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from services.contracts import names
from services.contracts.events import NATIVE_GROUP_API, PodGroupObserved, PodObserved
from services.watcher import slim

API_VERSION = NATIVE_GROUP_API
CONSTRAINTS = "spec.schedulingConstraints"
TOPOLOGY = f"{CONSTRAINTS}.topology"


def scheduling_group(spec: Mapping[str, Any]) -> str | None:
    """`spec.schedulingGroup.podGroupName` of a pod, or None when absent or not text."""
    group = spec.get("schedulingGroup")
    name = group.get("podGroupName") if isinstance(group, Mapping) else None
    return name if isinstance(name, str) and name else None


def pod_event(obj: Mapping[str, Any], at_ms: int,
              read_spec: slim.SpecReader = slim.read_pod_spec) -> PodObserved:
    """`slim.pod_event` (its spec read by `read_spec`), the group read from
    `spec.schedulingGroup` when the pod has no Coscheduling label."""
    event = slim.pod_event(obj, at_ms, read_spec)
    spec = obj.get("spec")
    group = scheduling_group(spec) if isinstance(spec, Mapping) else None
    if event.group_name is not None or group is None:
        return event
    return msgspec.structs.replace(event, group_name=group)


def podgroup_event(obj: Mapping[str, Any], at_ms: int) -> PodGroupObserved:
    """A native PodGroup as `PodGroupObserved`: `gang.minCount` is min_member, `basic` is 1,
    `topology_key` `spec.schedulingConstraints.topology[0].key` (`topology_key`).

    Source: scheduling.k8s.io/v1alpha2 PodGroupSchedulingPolicy (exactly one of basic, gang;
    the API server validates minCount >= 1, so anything else here is marked invalid).
    """
    meta, spec = slim._meta(obj), slim._dict(obj.get("spec"))
    policy = slim._dict(spec.get("schedulingPolicy"))
    min_member, invalid = 1, None
    if "gang" in policy:
        given = slim._dict(policy.get("gang")).get("minCount")
        if slim._small_int(given) and given >= 1:
            min_member = given
        else:
            invalid = ("spec.schedulingPolicy.gang.minCount must be an integer >= 1, "
                       f"got {slim._shown(given)}")
    key, wrong = topology_key(spec)
    return PodGroupObserved(
        at_ms=at_ms, uid=slim._text(meta, "uid"), namespace=slim._namespace(meta),
        name=slim._text(meta, "name"), resource_version=slim._text(meta, "resourceVersion"),
        created_at_ms=slim.time_ms(meta.get("creationTimestamp"), at_ms),
        min_member=min_member, invalid_reason=invalid or wrong, api_version=API_VERSION,
        topology_key=key,
        scheduling_constraints=key is not None or spec.get("schedulingConstraints") is not None)


def topology_key(spec: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """The node label a native PodGroup's members must share one value of, and why the field
    is malformed: `(key, None)`, `(None, None)` when there is no constraint (the field absent,
    null or an empty list, `schedulingConstraints` absent or null), `(None, reason)` when it is
    not a list of objects each with a label key as `key` (one line naming the field).

    Source: api scheduling/v1alpha2 `PodGroupSchedulingConstraints.Topology` (at most one
    `TopologyConstraint{key}`, `+k8s:format=k8s-label-key`: "All pods within the PodGroup must
    be colocated within the same domain instance" of node label `key`); kube-scheduler's
    TopologyPlacement plugin (`plugins/topologyaware` `getTopologyKey`, feature gate
    TopologyAwareWorkloadScheduling) reads `topology[0].key` of a non-empty list of a non-nil
    `schedulingConstraints`, for every group, basic or gang.
    """
    constraints = spec.get("schedulingConstraints")
    if constraints is None:
        return None, None
    if not isinstance(constraints, Mapping):
        return None, f"{CONSTRAINTS} must be an object, got {slim._shown(constraints)}"
    topology = constraints.get("topology")
    if topology is None or topology == []:
        return None, None
    if not isinstance(topology, list):
        return None, f"{TOPOLOGY} must be a list, got {slim._shown(topology)}"
    keys: list[str] = []
    for i, item in enumerate(topology):
        if not isinstance(item, Mapping):
            return None, f"{TOPOLOGY}[{i}] must be an object with a key, got {slim._shown(item)}"
        given = item.get("key")
        if not isinstance(given, str) or not names.is_label_name(given):
            return None, f"{TOPOLOGY}[{i}].key must be a label key, got {slim._shown(given)}"
        keys.append(given)
    return keys[0], None
