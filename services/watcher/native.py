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
node label `key`, kube-scheduler's TopologyPlacement) is not implemented: a PodGroup with a
non-empty list is read with that field in `unsupported`, so its gang waits, never placed on a
guess.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from services.contracts.events import PodGroupObserved, PodObserved
from services.watcher import slim

API_VERSION = "scheduling.k8s.io/v1alpha2"
TOPOLOGY = "spec.schedulingConstraints.topology"


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
    """A native PodGroup as `PodGroupObserved`: `gang.minCount` is min_member, `basic` is 1.

    Source: scheduling.k8s.io/v1alpha2 PodGroupSchedulingPolicy (exactly one of basic, gang;
    the API server validates minCount >= 1, so anything else here is marked invalid).
    `unsupported` names `spec.schedulingConstraints.topology` when that list is not empty
    (`unsupported_fields`).
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
    return PodGroupObserved(
        at_ms=at_ms, uid=slim._text(meta, "uid"), namespace=slim._namespace(meta),
        name=slim._text(meta, "name"), resource_version=slim._text(meta, "resourceVersion"),
        created_at_ms=slim.time_ms(meta.get("creationTimestamp"), at_ms),
        min_member=min_member, invalid_reason=invalid, api_version=API_VERSION,
        unsupported=unsupported_fields(spec))


def unsupported_fields(spec: Mapping[str, Any]) -> tuple[str, ...]:
    """The constraints of a native PodGroup's spec the planner does not implement, by field
    path: `spec.schedulingConstraints.topology` unless absent, null or empty.

    Source: api scheduling/v1alpha2 `PodGroupSchedulingConstraints.Topology` (at most one
    `TopologyConstraint{key}`: "All pods within the PodGroup must be colocated within the same
    domain instance" of node label `key`); kube-scheduler's TopologyPlacement plugin
    (`plugins/topologyaware`, feature gate TopologyAwareWorkloadScheduling) reads only
    `topology[0].key` of a non-empty list, and places the group, basic or gang, only inside
    one value of that label (nodes without it excluded; the domain of members already bound).
    Anything else that is not empty counts too: on the safe side.
    """
    topology = slim._dict(spec.get("schedulingConstraints")).get("topology")
    return (TOPOLOGY,) if topology else ()
