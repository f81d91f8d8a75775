"""The apiVersion of each kind `gangsched simulate` reads, as the API server serves it.

Layer: planner simulate (pure). A manifest is simulated only in a version the API server (the
Kubernetes version the testbed builds, 1.36) would accept it in, so a typo or an old version
(`policy/v1beta1`, `scheduling.k8s.io/v9`) is refused as `kubectl apply` refuses it, not read
as if it were the served one. Source, per group: `pkg/registry/<group>/rest/storage_*.go`
(the versions holding each resource's storage) and, for Coscheduling's PodGroup, its CRD
(`deploy/crds`: v1alpha1 served). Kinds simulate ignores are not checked.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SERVED: Mapping[str, tuple[str, ...]] = {
    "List": ("v1",),  # kubectl's client-side list (`kubectl get -o yaml`)
    "Node": ("v1",),
    "Pod": ("v1",),
    "PersistentVolumeClaim": ("v1",),
    "PersistentVolume": ("v1",),
    "StorageClass": ("storage.k8s.io/v1",),
    "PodDisruptionBudget": ("policy/v1",),  # policy/v1beta1: removed in 1.25
    "PriorityClass": ("scheduling.k8s.io/v1",),  # v1beta1, v1alpha1: removed in 1.22
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
