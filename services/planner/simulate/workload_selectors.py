"""The selectors of the workloads `gangsched simulate` expands, checked as the API server checks
them.

Layer: planner simulate (pure). A workload the API server refuses creates no pod, so one whose
selector it refuses must not be expanded into pods that bind. Sources, Kubernetes 1.36:
- ReplicaSet, Deployment, StatefulSet (`pkg/apis/apps/validation`: `ValidateReplicaSetSpec`,
  `ValidateDeploymentSpec`, `ValidateStatefulSetSpec`; apps/v1 defaults no selector): a
  `spec.selector` is required (`Required value`), valid (apimachinery's
  `ValidateLabelSelector`), not empty (`empty selector is invalid for deployment`: a
  ReplicaSet's message says deployment too; `... for statefulset`), and it must match the
  template's labels as written (`ValidatePodTemplateSpecForReplicaSet`,
  `ValidatePodTemplateSpecForStatefulSet`: ``spec.template.metadata.labels: Invalid value:
  {"a":"c"}: `selector` does not match template `labels` ``).
- Job (`pkg/apis/batch/validation`): unless `spec.manualSelector` is true the API server
  generates the selector on create (`generateSelector`, `pkg/registry/batch/job/strategy.go`:
  the one given, with `batch.kubernetes.io/controller-uid: <uid>` in its `matchLabels` if
  absent), and `validateGeneratedSelector` refuses one that does not select the labels it
  generates (``spec.selector: Invalid value: {...}: `selector` not auto-generated``); its
  contradicting template labels are `controller_labels.job_label_conflict`'s. Then
  `ValidateJobSpec`: a selector is required (only a manual one can be absent), valid, and it
  must match the template's labels (once generated). An empty manual selector selects every
  pod: the API server takes it.
The messages are the API server's, its first error in its order; a value that is a selector or
a label map is shown as Go's `json.Marshal` shows it (`field.Error.ErrorBody`: keys sorted, no
spaces, `<`, `>` and `&` escaped), a template without labels as `null`.

Shapes: the JSON types of `selector` (`shapes.LABEL_SELECTOR`) and of the template's labels were
checked (`shapes`); a null entry is the zero value the API server decodes (`""`, an empty
requirement).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from services.contracts.events import NodeSelectorRequirement
from services.fit.pod_affinity import selector_matches
from services.planner.simulate import controller_labels, object_labels
from services.planner.simulate.controller_labels import CONTROLLER_UID_LABELS, JOB_NAME_LABELS
from services.planner.simulate.object_names import invalid

IN, NOT_IN, EXISTS, DOES_NOT_EXIST = "In", "NotIn", "Exists", "DoesNotExist"
"""`metav1.LabelSelectorOperator`s."""
EMPTY_SELECTOR_OF = {"ReplicaSet": "deployment", "Deployment": "deployment",
                     "StatefulSet": "statefulset"}
"""The word each apps kind's validation names itself by when its selector is empty."""
VALUES_REQUIRED = "must be specified when `operator` is 'In' or 'NotIn'"
VALUES_FORBIDDEN = "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
DOES_NOT_MATCH = "`selector` does not match template `labels`"
NOT_GENERATED = "`selector` not auto-generated"
_GO_HTML_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028",
                    "\u2029": "\\u2029"}


def apps_problem(kind: str, spec: Mapping[str, Any], labels: Any) -> tuple[str, str] | None:
    """The first selector error of the ReplicaSet, Deployment or StatefulSet (`kind`) `spec`
    the API server refuses, with `labels` its template's labels as written (None: absent), as
    `(field, why)` with the field relative to `spec`: `("selector", "Required value")`; None
    when it takes the selector (module docstring)."""
    selector = spec.get("selector")
    if selector is None:
        return "selector", "Required value"
    found = _selector_problem(selector)
    if found is not None:
        return found
    if not (selector.get("matchLabels") or selector.get("matchExpressions")):
        return "selector", (f"Invalid value: {selector_json(selector)}: empty selector is "
                            f"invalid for {EMPTY_SELECTOR_OF[kind]}")
    return _mismatch(selector, labels)


def job_problem(spec: Mapping[str, Any], labels: Any, name: str,
                uid: str) -> tuple[str, str] | None:
    """The first selector error of the Job `name` (uid `uid`) with `spec` the API server
    refuses (module docstring), `labels` its template's labels as written (None: absent), as
    `(field, why)` relative to `spec`; None when it takes the selector. Its contradicting
    template labels are checked before (`controller_labels.job_label_conflict`)."""
    manual = spec.get("manualSelector") is True
    if not manual:  # `generateSelector`: the template's labels and the selector
        labels = controller_labels.job_template_labels(_texts(labels), spec, name, uid)
    selector = spec.get("selector") if manual else generated_job_selector(spec, uid)
    if selector is None:
        return "selector", "Required value"
    found = _selector_problem(selector)
    if found is None and not manual:
        expected = {CONTROLLER_UID_LABELS[1]: uid, JOB_NAME_LABELS[1]: name,
                    CONTROLLER_UID_LABELS[0]: uid, JOB_NAME_LABELS[0]: name}
        if not matches(selector, expected):
            return "selector", f"Invalid value: {selector_json(selector)}: {NOT_GENERATED}"
    return found or _mismatch(selector, labels)


def generated_job_selector(spec: Mapping[str, Any], uid: str) -> dict[str, Any]:
    """The selector the API server gives a Job (uid `uid`, `spec` not `manualSelector`) on
    create (`generateSelector`): the one given (or none) with `batch.kubernetes.io/
    controller-uid: <uid>` in its `matchLabels` unless that key is there already."""
    given = spec.get("selector") or {}
    match_labels = dict(given.get("matchLabels") or {})
    match_labels.setdefault(CONTROLLER_UID_LABELS[1], uid)
    return {**given, "matchLabels": match_labels}


def matches(selector: Mapping[str, Any], labels: Any) -> bool:
    """Whether the valid, non-empty `selector` selects `labels` (a label map, None: none), as
    the `labels.Selector` of `metav1.LabelSelectorAsSelector` does: `matchLabels` entries as In
    with one value, each expression by the shared rule (`pod_affinity.selector_matches`)."""
    requirements = [NodeSelectorRequirement(key=key, operator=IN, values=(value,))
                    for key, value in _texts(selector.get("matchLabels")).items()]
    for given in selector.get("matchExpressions") or []:
        expression = given or {}
        requirements.append(NodeSelectorRequirement(
            key=expression.get("key") or "", operator=expression.get("operator") or "",
            values=tuple(value or "" for value in expression.get("values") or [])))
    return selector_matches(tuple(requirements), _texts(labels))


def selector_json(selector: Mapping[str, Any]) -> str:
    """`selector` as `json.Marshal` of a `metav1.LabelSelector` shows it: `matchLabels` (keys
    sorted), then `matchExpressions` (`key`, `operator`, then `values`), each left out when
    empty: `{"matchLabels":{"app":"web"}}`, `{}`."""
    shown: dict[str, Any] = {}
    match_labels = _texts(selector.get("matchLabels"))
    if match_labels:
        shown["matchLabels"] = dict(sorted(match_labels.items()))
    expressions = []
    for given in selector.get("matchExpressions") or []:
        expression = given or {}
        item = {"key": expression.get("key") or "", "operator": expression.get("operator") or ""}
        values = [value or "" for value in expression.get("values") or []]
        expressions.append({**item, "values": values} if values else item)
    if expressions:
        shown["matchExpressions"] = expressions
    return go_json(shown)


def labels_json(labels: Any) -> str:
    """A label map as `json.Marshal` of a Go `map[string]string` shows it: keys sorted; `null`
    for an absent one (a nil map)."""
    return "null" if labels is None else go_json(dict(sorted(_texts(labels).items())))


def go_json(value: Any) -> str:
    """`value` (JSON data) as Go's `json.Marshal` writes it: no spaces, UTF-8 as is, `<`, `>`,
    `&`, U+2028 and U+2029 escaped, a lone surrogate (which YAML can hold, never valid UTF-8)
    as the replacement characters Go writes for its bytes."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    text = "".join(_GO_HTML_ESCAPES.get(char, char) for char in text)
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def _selector_problem(selector: Mapping[str, Any]) -> tuple[str, str] | None:
    """`ValidateLabelSelector` (with invalid label values refused, as on create) of
    `selector`: its first error, `(field, why)` relative to the spec."""
    wrong = object_labels.problem(_texts(selector.get("matchLabels")))
    if wrong is not None:
        return "selector.matchLabels", wrong
    for i, given in enumerate(selector.get("matchExpressions") or []):
        found = _requirement_problem(given or {})
        if found is not None:
            return f"selector.matchExpressions[{i}].{found[0]}", found[1]
    return None


def _requirement_problem(expression: Mapping[str, Any]) -> tuple[str, str] | None:
    """`ValidateLabelSelectorRequirement` of one expression: its first error, `(field, why)`
    relative to the expression."""
    key, operator = expression.get("key") or "", expression.get("operator") or ""
    values = [value or "" for value in expression.get("values") or []]
    if operator in (IN, NOT_IN) and not values:
        return "values", f"Required value: {VALUES_REQUIRED}"
    if operator in (EXISTS, DOES_NOT_EXIST) and values:
        return "values", f"Forbidden: {VALUES_FORBIDDEN}"
    if operator not in (IN, NOT_IN, EXISTS, DOES_NOT_EXIST):
        return "operator", invalid(operator, "not a valid selector operator")
    wrong = object_labels.key_problem(key)
    if wrong is not None:
        return "key", invalid(key, wrong)
    for j, value in enumerate(values):
        wrong = object_labels.value_problem(value)
        if wrong is not None:
            return f"values[{j}]", invalid(value, wrong)
    return None


def _mismatch(selector: Mapping[str, Any], labels: Any) -> tuple[str, str] | None:
    """The template-labels error when the valid `selector` (empty: selecting all) does not
    select `labels`."""
    if not (selector.get("matchLabels") or selector.get("matchExpressions")):
        return None
    if matches(selector, labels):
        return None
    return "template.metadata.labels", f"Invalid value: {labels_json(labels)}: {DOES_NOT_MATCH}"


def _texts(labels: Any) -> dict[str, str]:
    """A label map (or None) with a null value read as the API server decodes it: `""`."""
    if not isinstance(labels, Mapping):
        return {}
    return {key: value if value is not None else "" for key, value in labels.items()}
