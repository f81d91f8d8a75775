"""The `matchLabelKeys` and `mismatchLabelKeys` of a pod's inter-pod (anti-)affinity terms, as the
API server merges and validates them, for `gangsched simulate`.

Layer: planner simulate (pure; `merge` changes the pod spec it is given). Sources, Kubernetes
1.36:
- Merging, `mutatePodAffinity` with `applyMatchLabelKeysAndMismatchLabelKeys`
  (`pkg/registry/core/pod/strategy.go`, run by `PrepareForCreate` on every Pod created; the
  gate MatchLabelKeysInPodAffinity is GA and locked on). In each required and preferred term of
  `podAffinity` and `podAntiAffinity` that has a `labelSelector` (a null one matches no pod and
  is left so), each key of `matchLabelKeys` the pod has a label of is appended to the
  selector's `matchExpressions` as `{key, operator: In, values: [<the pod's value>]}`, then
  each key of `mismatchLabelKeys` likewise with `NotIn`; a key the pod has no label of adds
  nothing. The keys stay in the term. kube-scheduler then reads only the merged selector, as
  the watcher does (`watcher.slim.pod_affinity_term`, which ignores both keys fields), so a
  pod the API server stored, merged once, is read the same. One departure: a requirement the
  selector holds already is not appended again, so a pod as the API server stored it (a
  cluster's dump: merged, its keys kept) is read as stored, where the API server, creating it
  anew, would append a second `In` and refuse it as holding the key twice; the same holds for
  a manifest that writes out the very requirement its `matchLabelKeys` adds.
  A workload's pod template is not merged; each pod its controller makes of it is.
- Validation, `ValidateMatchLabelKeysAndMismatchLabelKeys` (`pkg/apis/core/validation/
  validation.go`), of a Pod after the merge (of a template as written): keys given without a
  `labelSelector` are forbidden; each key is a label key (`ValidateLabelName`); a
  `matchExpressions` key of `matchLabelKeys` that the selector held already (in `matchLabels`
  or an earlier expression: the one merged in repeats it) is refused, named as the API server
  names it, at `<term>[<index in matchLabelKeys>]`; a key in both lists is refused. The
  messages are the API server's, its first error in its order.

Shapes: the pod spec's `affinity` and its terms have the types `shapes` checked (mappings and
lists, or null); `shapes` declares neither keys field, so their types are checked here
(`problem`) and `merge` skips what is no list of strings.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from typing import Any

from services.planner.simulate import object_labels, shapes
from services.planner.simulate.object_names import invalid

KINDS = ("podAffinity", "podAntiAffinity")
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
MATCH, MISMATCH = "matchLabelKeys", "mismatchLabelKeys"
KEY_LISTS: shapes.Shape = {MATCH: [shapes.STRING], MISMATCH: [shapes.STRING]}
NO_SELECTOR = "Forbidden: must not be specified when labelSelector is not set"
IN_SELECTOR = "exists in both matchLabelKeys and labelSelector"
IN_BOTH = "exists in both matchLabelKeys and mismatchLabelKeys"

Found = tuple[str, str]


def merge(spec: dict[str, Any], labels: Mapping[str, Any] | None) -> None:
    """`mutatePodAffinity` of the pod spec `spec` with the pod's `labels` (null: none): merge
    each term's keys into its `labelSelector` (module docstring)."""
    for _, term in terms(spec):
        _merge_term(term, labels or {})


def problem(spec: Mapping[str, Any], labels: Mapping[str, Any] | None) -> Found | None:
    """The first keys field of the pod spec `spec`'s pod (anti-)affinity terms the API server
    refuses, and why, as `(field, why)` with the field relative to the spec:
    `("affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].matchLabelKeys",
    "Forbidden: must not be specified when labelSelector is not set")`; None when it takes
    them all. `labels`: a Pod's labels, validated with its terms merged (`merge`, on a copy);
    None: a workload's template, validated as written."""
    for where, term in terms(spec):
        found = shapes.field_problem(term, KEY_LISTS, where)
        if found is None:
            merged = copy.deepcopy(dict(term))
            if labels is not None:
                _merge_term(merged, labels)
            found = _keys_problem(merged, where)
        if found is not None:
            return found
    return None


def terms(spec: Mapping[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each pod (anti-)affinity term of the pod spec `spec` that is a mapping, with its field
    path relative to `spec`, in validation's order: `podAffinity` then `podAntiAffinity`, each
    its required terms then its preferred ones' `podAffinityTerm`."""
    affinity = spec.get("affinity") or {}
    for kind in KINDS:
        given = affinity.get(kind) or {}
        for i, term in enumerate(given.get(REQUIRED) or ()):
            if isinstance(term, dict):
                yield f"affinity.{kind}.{REQUIRED}[{i}]", term
        for i, weighted in enumerate(given.get(PREFERRED) or ()):
            term = (weighted or {}).get("podAffinityTerm")
            if isinstance(term, dict):
                yield f"affinity.{kind}.{PREFERRED}[{i}].podAffinityTerm", term


def _merge_term(term: dict[str, Any], labels: Mapping[str, Any]) -> None:
    """`applyMatchLabelKeysAndMismatchLabelKeys` of one term: nothing without keys or without a
    `labelSelector` mapping; else `In` then `NotIn` requirements appended (module docstring),
    but none the selector holds already (a pod the API server stored, merged)."""
    selector = term.get("labelSelector")
    if not isinstance(selector, dict):
        return
    given = list(selector.get("matchExpressions") or ())
    held = [_requirement(requirement) for requirement in given]
    added = [{"key": key, "operator": operator, "values": [labels[key]]}
             for field, operator in ((MATCH, "In"), (MISMATCH, "NotIn"))
             for key in _keys(term, field) if key in labels]
    added = [requirement for requirement in added if _requirement(requirement) not in held]
    if added:
        selector["matchExpressions"] = [*given, *added]


def _requirement(requirement: Mapping[str, Any] | None) -> tuple[Any, Any, list[Any]]:
    """A selector requirement (null: the empty one) as `(key, operator, values)`, to compare."""
    given = requirement or {}
    return given.get("key"), given.get("operator"), list(given.get("values") or ())


def _keys(term: Mapping[str, Any], field: str) -> list[str]:
    """The text keys of `term`'s `field` (`matchLabelKeys`, `mismatchLabelKeys`); none when it
    is no list (refused by `problem`)."""
    given = term.get(field)
    return [key for key in given if isinstance(key, str)] if isinstance(given, list) else []


def _keys_problem(term: Mapping[str, Any], where: str) -> Found | None:
    """`ValidateMatchLabelKeysAndMismatchLabelKeys` of one term (merged, for a Pod) at
    `where`: its first error."""
    selector = term.get("labelSelector")
    match, mismatch = _keys(term, MATCH), _keys(term, MISMATCH)
    for field, keys in ((MATCH, match), (MISMATCH, mismatch)):
        if keys and not isinstance(selector, Mapping):
            return f"{where}.{field}", NO_SELECTOR
        for i, key in enumerate(keys):
            why = object_labels.key_problem(key)
            if why is not None:
                return f"{where}.{field}[{i}]", invalid(key, why)
    if isinstance(selector, Mapping):
        found = _repeated_key(selector, match, where)
        if found is not None:
            return found
    for i, key in enumerate(match):
        if key in mismatch:
            return f"{where}.{MATCH}[{i}]", invalid(key, IN_BOTH)
    return None


def _repeated_key(selector: Mapping[str, Any], match: list[str], where: str) -> Found | None:
    """A `matchExpressions` key of `match` that `selector` held before it (its `matchLabels`,
    an earlier expression), named at `<where>[<its last index in match>]` as the API server
    names it (`fldPath.Index(i)`)."""
    index = {key: i for i, key in enumerate(match)}
    seen = set(selector.get("matchLabels") or {})
    for requirement in selector.get("matchExpressions") or ():
        key = (requirement or {}).get("key") or ""
        if key in index and key in seen:
            return f"{where}[{index[key]}]", invalid(key, IN_SELECTOR)
        seen.add(key)
    return None
