"""The tolerations and taints the API server takes, for the pods and nodes `gangsched simulate`
reads.

Layer: planner simulate (pure). Source: Kubernetes 1.36's `pkg/apis/core/validation`:
`ValidateTolerations` (a pod's `spec.tolerations`, a workload template's
`spec.template.spec.tolerations`), `validateNodeTaints` (a Node's `spec.taints`) and
`validateTaintEffect`; keys are label keys (`ValidateLabelName`, `object_labels.key_problem`),
values label values (`IsValidLabelValue`, every message joined by `;`). The messages are the API
server's, its first error in its order (a toleration's key, its empty key with an operator
other than Exists, tolerationSeconds off NoExecute, its operator and value, its effect; a
taint's key, value, effect, then a second taint of the same key and effect), the field named
as the API server names it. Two of its quirks are mirrored: the error about a toleration's
value names its `operator`, and a Node's taints are named under `metadata`
(`ValidateNode` passes `validateNodeTaints` the path `metadata`): `metadata.taints[0].effect`.

The operators `Lt` and `Gt` are refused, as the API server refuses them while the alpha feature
gate `TaintTolerationComparisonOperators` is off (its default in 1.36), naming them among the
supported values as it does. Not checked: the tolerations and taints written in the alpha
annotations `scheduler.alpha.kubernetes.io/tolerations` and `.../taints`, which simulate does
not read, and the form of a taint's `timeAdded` (shown as given in a duplicate's message when
it is no RFC 3339 time).

Shapes: the JSON types of the fields read (`key`, `operator`, `value`, `effect`) were checked
(`shapes`: text or null); `tolerationSeconds`, a 64-bit integer, is checked here.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterator, Mapping
from typing import Any

from services.contracts.integers import INT64_MAX, INT64_MIN
from services.contracts.resources import shown
from services.planner.simulate import object_labels
from services.planner.simulate.object_names import invalid, quoted

NO_SCHEDULE, PREFER_NO_SCHEDULE, NO_EXECUTE = "NoSchedule", "PreferNoSchedule", "NoExecute"
EFFECTS = (NO_SCHEDULE, PREFER_NO_SCHEDULE, NO_EXECUTE)
"""`validateTaintEffect`'s supported effects, in its order."""
EQUAL, EXISTS, LESS_THAN, GREATER_THAN = "Equal", "Exists", "Lt", "Gt"
OPERATORS = (EQUAL, EXISTS)
"""The toleration operators the API server takes with its default feature gates."""
COMPARISONS = (LESS_THAN, GREATER_THAN)
"""The operators of the alpha gate `TaintTolerationComparisonOperators` (off by default)."""
TAINTS_PARENT = "metadata"
"""Where the API server names a Node's taints (`ValidateNode`): `metadata.taints[i]...`."""

EMPTY_KEY = ("operator must be Exists when `key` is empty, which means \"match all values and "
             "all keys\"")
SECONDS_OFF_NO_EXECUTE = "effect must be 'NoExecute' when `tolerationSeconds` is set"
VALUE_WITH_EXISTS = "value must be empty when `operator` is 'Exists'"
DUPLICATE_TAINT = "taints must be unique by key and effect pair"


def pod_problem(spec: Mapping[str, Any]) -> tuple[str, str] | None:
    """The first toleration of the pod spec `spec` the API server would refuse
    (`ValidateTolerations` with the default validation options), as `(field, why)` with the
    field relative to the spec: `("tolerations[0].operator", 'Unsupported value: "Foo":
    supported values: "Equal", "Exists"')`; None when all are valid. A null toleration is the
    empty one the API server decodes (refused: an empty key needs operator Exists)."""
    tolerations = spec.get("tolerations") or []
    wrong_type = next(((i, seconds) for i, toleration in enumerate(tolerations)
                       if not _is_int64(seconds := (toleration or {}).get("tolerationSeconds"))),
                      None)
    if wrong_type is not None:  # a decoding error: before any validation
        return (f"tolerations[{wrong_type[0]}].tolerationSeconds",
                f"must be a 64-bit integer, got {shown(wrong_type[1])}")
    for i, toleration in enumerate(tolerations):
        found = _toleration_problem(toleration or {})
        if found is not None:
            return f"tolerations[{i}].{found[0]}", found[1]
    return None


def _toleration_problem(toleration: Mapping[str, Any]) -> tuple[str, str] | None:
    """`ValidateTolerations` of one toleration: its first error, `(field, why)`."""
    return next(_toleration_errors(toleration), None)


def _toleration_errors(toleration: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """The errors of one toleration in `ValidateTolerations`' order (lazily: the first is
    reported)."""
    key, operator = toleration.get("key") or "", toleration.get("operator") or ""
    value, effect = toleration.get("value") or "", toleration.get("effect") or ""
    if key:
        why = object_labels.key_problem(key)
        if why is not None:
            yield "key", invalid(key, why)
    if not key and operator != EXISTS:
        yield "operator", invalid(operator, EMPTY_KEY)
    if toleration.get("tolerationSeconds") is not None and effect != NO_EXECUTE:
        yield "effect", invalid(effect, SECONDS_OFF_NO_EXECUTE)
    if operator in (EQUAL, ""):
        problems = object_labels.value_problems(value)
        if problems:
            yield "operator", invalid(value, ";".join(problems))
    elif operator == EXISTS:
        if value:
            yield "operator", invalid(value, VALUE_WITH_EXISTS)
    elif operator in COMPARISONS:
        yield "operator", unsupported(operator, (*OPERATORS, *COMPARISONS))
    else:
        yield "operator", unsupported(operator, OPERATORS)
    if effect and effect not in EFFECTS:
        yield "effect", unsupported(effect, EFFECTS)


def node_problem(spec: Mapping[str, Any] | None) -> tuple[str, str] | None:
    """The first taint of the Node spec `spec` the API server would refuse
    (`validateNodeTaints`), as `(field, why)` with the field relative to `TAINTS_PARENT`, where
    the API server names it: `("taints[0].effect", 'Unsupported value: "Bogus": supported
    values: "NoSchedule", "PreferNoSchedule", "NoExecute"')`; None when all are valid. A null
    taint is the empty one the API server decodes (refused: it needs a key and an effect)."""
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate((spec or {}).get("taints") or []):
        given = taint or {}
        key, value = given.get("key") or "", given.get("value") or ""
        effect = given.get("effect") or ""
        why = object_labels.key_problem(key)
        if why is not None:
            return f"taints[{i}].key", invalid(key, why)
        problems = object_labels.value_problems(value)
        if problems:
            return f"taints[{i}].value", invalid(value, ";".join(problems))
        if not effect:
            return f"taints[{i}].effect", "Required value"
        if effect not in EFFECTS:
            return f"taints[{i}].effect", unsupported(effect, EFFECTS)
        if (key, effect) in seen:
            return (f"taints[{i}]", f"Duplicate value: {_taint_json(given)}: {DUPLICATE_TAINT}")
        seen.add((key, effect))
    return None


def unsupported(value: str, supported: tuple[str, ...]) -> str:
    """The API server's `field.NotSupported` body: `Unsupported value: "<value>": supported
    values: "<a>", "<b>"` (the value as `object_names.quoted` shows it)."""
    listed = ", ".join(json.dumps(each) for each in supported)
    return f"Unsupported value: {quoted(value)}: supported values: {listed}"


def _taint_json(taint: Mapping[str, Any]) -> str:
    """A taint as `field.Duplicate` shows it: Go's `json.Marshal` of the internal `core.Taint`,
    which has no JSON tags (`{"Key":"k","Value":"","Effect":"NoSchedule","TimeAdded":null}`;
    its key, value and effect were found valid, so plain ASCII)."""
    fields = {"Key": taint.get("key") or "", "Value": taint.get("value") or "",
              "Effect": taint.get("effect") or ""}
    body = json.dumps(fields, separators=(",", ":"))
    return f"{body[:-1]},\"TimeAdded\":{_time_json(taint.get('timeAdded'))}}}"


def _time_json(value: Any) -> str:
    """`metav1.Time`'s JSON of a `timeAdded` as written: null when absent or the zero time,
    else RFC 3339 in UTC to the second (`Time.MarshalJSON`); as given when it is no time."""
    if value is None:
        return "null"
    if not isinstance(value, str):
        return shown(value)
    try:
        parsed = datetime.datetime.fromisoformat(value)
        moment = parsed.astimezone(datetime.UTC) if parsed.tzinfo is not None else None
    except (ValueError, OverflowError):
        moment = None
    if moment is None:
        return json.dumps(value)
    if moment == datetime.datetime(1, 1, 1, tzinfo=datetime.UTC):
        return "null"
    return json.dumps(moment.strftime("%Y-%m-%dT%H:%M:%SZ"))


def _is_int64(value: Any) -> bool:
    """`value` decodes into a Go int64 (null: the field is absent)."""
    return value is None or (isinstance(value, int) and not isinstance(value, bool)
                             and INT64_MIN <= value <= INT64_MAX)
