"""The values of required node-affinity terms the API server refuses, for `gangsched simulate`.

Layer: planner simulate (pure). Source: Kubernetes 1.36's `ValidateNodeSelectorRequirement`
(`pkg/apis/core/validation/validation.go`), which checks every value of a `matchExpressions`
requirement of a required node selector with `IsValidLabelValue` (at most 63 bytes,
alphanumeric at both ends, `-_.` inside, or empty), whatever its operator: `NotIn ["not a
label value!"]`, `Gt ["-1"]` and `Lt ["+5"]` are refused; `Gt ["abc"]` is a label value and
taken (kube-scheduler then cannot parse it as an integer and the term matches no node, as the
planner reads it). The API server passes it `allowInvalidLabelValueInRequiredNodeAffinity`
false when it creates an object (only an update of one already holding such a value may keep
it): a Pod's `spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution`
(`validateNodeAffinity`), a workload's pod template's, and a PersistentVolume's
`spec.nodeAffinity.required` (`ValidatePersistentVolumeSpec`). A preferred term's values are
not checked (`ValidatePreferredSchedulingTerms` allows them; the planner judges them,
`watcher.slim.preferred_unparseable`), nor are `matchFields`' (node names). The operators,
value counts and keys of the terms are checked where the planner reads them
(`watcher.slim.required_affinity_problem`). The message is the API server's first for the
value (`object_labels.value_problem`).

Shapes: the node selector's terms and requirements have the types `shapes` checked (mappings
and lists of text values, or null); a null term or requirement is the empty one the API
server decodes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from services.planner.simulate import object_labels
from services.planner.simulate.object_names import invalid

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
POD_REQUIRED = f"affinity.nodeAffinity.{REQUIRED}"
"""A pod spec's required node selector, relative to the spec."""
VOLUME_REQUIRED = "nodeAffinity.required"
"""A PersistentVolume's required node selector, relative to its spec."""

Found = tuple[str, str]


def pod_problem(spec: Mapping[str, Any]) -> Found | None:
    """The first value of the pod spec `spec`'s required node-affinity terms the API server
    refuses, and why, as `(field, why)` with the field relative to the spec:
    `("affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]
    .matchExpressions[0].values[0]", 'Invalid value: "-1": a valid label must be ...')`; None
    when it takes them all (or there are none)."""
    node_affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    return _selector_problem(node_affinity.get(REQUIRED), POD_REQUIRED)


def volume_problem(spec: Mapping[str, Any]) -> Found | None:
    """As `pod_problem`, of the PersistentVolume spec `spec`'s `nodeAffinity.required`
    (`("nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]", ...)`)."""
    return _selector_problem((spec.get("nodeAffinity") or {}).get("required"), VOLUME_REQUIRED)


def _selector_problem(selector: Mapping[str, Any] | None, where: str) -> Found | None:
    """`ValidateNodeSelector`'s first refused value of `selector` (at `where`), or None."""
    for i, term in enumerate((selector or {}).get("nodeSelectorTerms") or ()):
        for j, requirement in enumerate((term or {}).get("matchExpressions") or ()):
            for k, value in enumerate((requirement or {}).get("values") or ()):
                why = object_labels.value_problem(value)
                if why is not None:
                    return (f"{where}.nodeSelectorTerms[{i}].matchExpressions[{j}].values[{k}]",
                            invalid(value, why))
    return None
