"""The apiVersion of each kind `gangsched simulate` reads, as the API server serves it.

Layer: planner simulate (pure). A manifest is simulated only in a version the API server (the
Kubernetes version the testbed builds, 1.36) would accept it in, so a typo or an old version
(`policy/v1beta1`, `scheduling.k8s.io/v9`) is refused as `kubectl apply` refuses it, not read
as if it were the served one. Source, per group: `pkg/registry/<group>/rest/storage_*.go`
(the versions holding each resource's storage) and, for Coscheduling's PodGroup, its CRD
(`deploy/crds`: v1alpha1 served). Kinds simulate ignores are not checked, but for the kind
itself: in an API group simulate reads, a kind the API server does not serve there (`PodGrup`)
is refused as `kubectl apply` refuses it (`GROUP_KINDS`, `unknown_kind`).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

SERVED: Mapping[str, tuple[str, ...]] = {
    "List": ("v1",),  # kubectl's client-side list (`kubectl get -o yaml`)
    "Namespace": ("v1",),
    "Node": ("v1",),
    "Pod": ("v1",),
    "PersistentVolumeClaim": ("v1",),
    "PersistentVolume": ("v1",),
    "StorageClass": ("storage.k8s.io/v1",),
    "CSINode": ("storage.k8s.io/v1",),  # v1beta1: removed in 1.22
    "VolumeAttachment": ("storage.k8s.io/v1",),  # v1beta1: removed in 1.22
    "PodDisruptionBudget": ("policy/v1",),  # policy/v1beta1: removed in 1.25
    "PriorityClass": ("scheduling.k8s.io/v1",),  # v1beta1, v1alpha1: removed in 1.22
    "RuntimeClass": ("node.k8s.io/v1",),  # v1beta1: removed in 1.25; v1alpha1: not served
    "PodGroup": ("scheduling.x-k8s.io/v1alpha1",  # Coscheduling's CRD
                 "scheduling.k8s.io/v1alpha2"),  # native (GenericWorkload feature gate)
    "ReplicaSet": ("apps/v1",),
    "Deployment": ("apps/v1",),
    "StatefulSet": ("apps/v1",),
    "Job": ("batch/v1",),
}
"""Each kind simulate reads → the apiVersions serving it (the first is the usual one)."""


def problem(body: Mapping[str, Any]) -> str | None:
    """Why the object's `apiVersion` cannot be its `kind`'s, in the words of `kubectl apply`
    (`not set`, `no matches for kind "X" in version "Y"`, each with the served versions); None
    when served or the kind is not one simulate reads."""
    kind = body.get("kind")
    served = SERVED.get(kind) if isinstance(kind, str) else None
    if served is None:
        return None
    given = body.get("apiVersion")
    if given in served:
        return None
    expected = f"{kind} is {' or '.join(served)}"
    if given is None or given == "":
        return f"not set ({expected})"
    return f'no matches for kind "{kind}" in version "{given}" ({expected})'


GROUP_KINDS: Mapping[str, frozenset[str]] = {
    "": frozenset({  # core v1 (pkg/registry/core/rest/storage_core.go), and kubectl's List
        "Binding", "ComponentStatus", "ConfigMap", "Endpoints", "Event", "LimitRange", "List",
        "Namespace", "Node", "PersistentVolume", "PersistentVolumeClaim", "Pod", "PodTemplate",
        "ReplicationController", "ResourceQuota", "Secret", "Service", "ServiceAccount"}),
    "apps": frozenset({"ControllerRevision", "DaemonSet", "Deployment", "ReplicaSet",
                       "StatefulSet"}),
    "batch": frozenset({"CronJob", "Job"}),
    "policy": frozenset({"PodDisruptionBudget", "Eviction"}),
    "node.k8s.io": frozenset({"RuntimeClass"}),
    "storage.k8s.io": frozenset({"CSIDriver", "CSINode", "CSIStorageCapacity", "StorageClass",
                                 "VolumeAttachment", "VolumeAttributesClass"}),
    "scheduling.k8s.io": frozenset({"PriorityClass", "PodGroup", "Workload"}),
    "scheduling.x-k8s.io": frozenset({"PodGroup", "ElasticQuota"}),  # scheduler-plugins' CRDs
}
"""The kinds the API server serves in each API group simulate reads (any version; the version of
a kind simulate reads is checked by `problem`). A `<Kind>List` of the group is known too."""


def unknown_kind(body: Mapping[str, Any]) -> str | None:
    """Why the object's `kind` does not exist in its `apiVersion`'s group, in the words of
    `kubectl apply` (`no matches for kind "PodGrup" in version "scheduling.x-k8s.io/v1alpha1"`,
    with the nearest kind of the group when one is close); None when the kind is served there,
    or the group is not one simulate reads (its documents are ignored, and listed)."""
    kind, given = body.get("kind"), body.get("apiVersion")
    if not isinstance(kind, str) or not isinstance(given, str):
        return None
    group = given.rpartition("/")[0]
    kinds = GROUP_KINDS.get(group)
    if kinds is None or kind in kinds or kind.removesuffix("List") in kinds:
        return None
    close = difflib.get_close_matches(kind, sorted(kinds), n=1, cutoff=0.8)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f'no matches for kind "{kind}" in version "{given}"{hint}'
