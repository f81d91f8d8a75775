"""The topology constraints of a native PodGroup the API server takes, for `gangsched simulate`.

Layer: planner simulate (pure). Source: Kubernetes 1.36's declarative validation of a
`scheduling.k8s.io/v1alpha2` PodGroup (`pkg/apis/scheduling/v1alpha2/zz_generated.validations.go`,
from the `+k8s:` tags of api `scheduling/v1alpha2/types.go`), which the PodGroup strategy
enforces (`WithDeclarativeEnforcement`): `spec.schedulingConstraints.topology` holds at most one
item (`+k8s:maxItems=1`, `validate.MaxItems`: `Too many: 2: must have at most 1 item`, its
items then not checked), and each item's `key` is required (`+k8s:required`,
`validate.RequiredValue`: `Required value`) and a label key (`+k8s:format=k8s-label-key`,
`validate.LabelKey`: `IsLabelKey`, as `object_labels.key_problem`: `Invalid value: "a/b/c": a
valid label key must consist of ...`). The messages are the API server's, its first error.

The API server keeps `schedulingConstraints` only while the alpha gate
TopologyAwareWorkloadScheduling is on (off, its default, `PrepareForCreate` drops the field
unvalidated); simulate reads a topology as kube-scheduler reads it with the gate on (its gang
placed in one domain of the key: `watcher.native.topology_key`,
`planner.core.topology_placement`), and so validates it as the API server does with the gate
on. Shapes: the JSON types were checked
(`shapes.NATIVE_PODGROUP`); a null item is the zero constraint the API server decodes (no key).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from services.planner.simulate.object_labels import key_problem
from services.planner.simulate.object_names import invalid

MAX_TOPOLOGY = 1
"""The most items of `schedulingConstraints.topology` (`+k8s:maxItems=1`)."""
TOPOLOGY = "schedulingConstraints.topology"

Found = tuple[str, str]


def problem(spec: Mapping[str, Any] | None) -> Found | None:
    """The first field of the native PodGroup spec `spec`'s topology constraints the API server
    refuses (module docstring), and why, the field relative to `spec`:
    `("schedulingConstraints.topology[0].key", "Required value")`; None when it takes them."""
    constraints = (spec or {}).get("schedulingConstraints") or {}
    topology = constraints.get("topology") or []
    if len(topology) > MAX_TOPOLOGY:
        item = "item" if MAX_TOPOLOGY == 1 else "items"
        return TOPOLOGY, f"Too many: {len(topology)}: must have at most {MAX_TOPOLOGY} {item}"
    for i, constraint in enumerate(topology):
        key = (constraint or {}).get("key") or ""
        if not key:
            return f"{TOPOLOGY}[{i}].key", "Required value"
        wrong = key_problem(key)
        if wrong is not None:
            return f"{TOPOLOGY}[{i}].key", invalid(key, wrong)
    return None
