"""RuntimeClasses and the RuntimeClass admission plugin, for `gangsched simulate`.

Layer: planner simulate (pure; `admit` changes the pod spec it is given). On a cluster a pod
naming a RuntimeClass (`spec.runtimeClassName`) is charged the class's pod overhead and kept to
its nodes because the API server's RuntimeClass admission plugin (enabled by default) writes
them into the pod before any scheduler sees it; a manifest given to simulate has been through no
admission, so it is done here. Sources, Kubernetes 1.36:
- `ValidateRuntimeClass` (`pkg/apis/node/validation/validation.go`), after the metadata
  (`object_names`; its labels, `object_labels`), in its order: `handler` required and a
  DNS-1123 label (`NameIsDNSLabel`); `overhead.podFixed` validated as a container's resource
  limits (`ValidateContainerResourceRequirements`: the names as `container_resources` checks a
  container's; each quantity not negative, an extended resource's a whole number, a hugepages
  one a multiple of its page size, hugepages only beside cpu or memory); `scheduling.nodeSelector`
  as labels (`ValidateLabels`, named as a whole: `scheduling.nodeSelector`);
  `scheduling.tolerations` as a pod's (`tolerations.pod_problem`: `ValidateTolerations`), then
  unique by key, operator, value and effect (`field.Duplicate`, the toleration shown as Go's
  `json.Marshal` shows the internal `core.Toleration`, which has no JSON tags). Quirk mirrored:
  the overhead is named as the limits it is validated as, `overhead.limits[cpu]` (a pod's
  `spec.overhead.limits[cpu]`); only a quantity that does not decode is named where it is
  written (`overhead.podFixed.cpu`).
- The admission plugin (`plugin/pkg/admission/runtimeclass/admission.go`), after
  DefaultTolerationSeconds (`pkg/kubeapiserver/options/plugins.go` orders Priority,
  DefaultTolerationSeconds, ..., RuntimeClass; `pod_defaults.admit` runs `admit` there). `admit`
  is its `Admit`: `prepareObjects` (the class named, refused when there is none), `setOverhead`
  (a pod overhead given must equal the class's, which then replaces it: absent when the class
  has `overhead` without `podFixed`), `setScheduling` (the class's node selector merged into the
  pod's, a key of both with two values refused; the tolerations merged as
  `pkg/util/tolerations.MergeTolerations` merges them: the pod's, then the class's, each dropped
  that another tolerates a superset of, by `isSuperset`). `validate` is what follows on
  creation: the pod's validation of `spec.overhead` (`ValidatePodSpec`: as limits, as above),
  then the plugin's `Validate` (`validateOverhead`: an overhead only from a class that has one).
  Quantities are compared as `apiequality.Semantic` compares them (`Quantity.Cmp`: `1` equals
  `1000m`), each the value `ParseQuantity` makes of it (rounded up, away from zero, to a
  nano-unit; a binary-SI one capped at 2**63-1). The messages are the API server's (of a
  refusal by the plugin, the reason its `Forbidden` carries: `pod rejected: RuntimeClass "kata"
  not found`; an empty or unsafe name is refused by the plugin's live lookup, in client-go's
  words: `resource name may not be empty`).
Not mirrored: the hugepages rules on an amount beyond 64 bits (there Go's `Value()` wraps; the
amount is no overhead any node could hold), and which of several wrong entries of a map is named
first (Go visits a map in random order; here in the order written, every name before any
quantity).

Shapes: the JSON types of the fields read were checked (`shapes`: a RuntimeClass's `handler`
text, `overhead.podFixed` a map, `scheduling.nodeSelector` a map of text, `scheduling.tolerations`
a list of tolerations; a pod spec's `runtimeClassName` text, `overhead` a map); quantities are
checked here, as the API server decodes them (`resources.parse_quantity`). Functions return the
first refusal as `(field, why)`, the field relative to the object or pod spec given, or None.
"""

from __future__ import annotations

import decimal
import itertools
import json
import math
from collections.abc import Iterator, Mapping
from decimal import Decimal
from typing import Any, NamedTuple, TypeAlias

import msgspec

from services.contracts import quantity_syntax, resources
from services.contracts.integers import INT64_MAX
from services.planner.simulate import (
    container_resources,
    object_labels,
    object_names,
    tolerations,
)
from services.planner.simulate.object_names import invalid

KIND = "RuntimeClass"
NOT_FOUND = "pod rejected: RuntimeClass {name} not found"
OVERHEAD_MISMATCH = "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"
OVERHEAD_WITHOUT_CLASS = ("pod rejected: Pod Overhead set without corresponding RuntimeClass "
                          "defined Overhead")
NODE_SELECTOR_CONFLICT = ("conflict: runtimeClass.scheduling.nodeSelector[{key}] = {ours}; "
                          "pod.spec.nodeSelector[{key}] = {theirs}")
EMPTY_NAME = "resource name may not be empty"
"""client-go's refusal of the empty name, in the plugin's live lookup of a class."""
NEGATIVE = "must be greater than or equal to 0"
NOT_INTEGER = "must be an integer"
HUGEPAGES_ALONE = "Forbidden: HugePages require cpu or memory"
HUGEPAGES = resources.HUGEPAGES
CPU_OR_MEMORY = (resources.CPU, resources.MEMORY)
NATIVE = "kubernetes.io/"
UNIT_MILLIS = 1000
NANO_EXPONENT = -9
"""`ParseQuantity` keeps nano-units: a value finer than that is rounded up to one."""
CONTAINER_LIMITS = "containers[0].resources"
"""Where `container_resources` names the limits `_limits_problems` gives it, in a spec of one
container: an overhead's field is named in its place."""


class Overhead(msgspec.Struct, frozen=True):
    """A RuntimeClass's `overhead`: its `podFixed` quantities as written (None: not given)."""

    pod_fixed: dict[str, Any] | None


class Scheduling(msgspec.Struct, frozen=True):
    """A RuntimeClass's `scheduling`: its node selector (None: not given) and tolerations (a
    null one as the empty one the API server decodes)."""

    node_selector: dict[str, str] | None
    tolerations: list[dict[str, Any]]


class RuntimeClass(msgspec.Struct, frozen=True):
    """What the admission plugin reads of a RuntimeClass (`overhead` and `scheduling` None
    when not given, as the plugin tells a nil pointer from an empty object)."""

    name: str
    handler: str
    overhead: Overhead | None
    scheduling: Scheduling | None


RuntimeClasses: TypeAlias = Mapping[str, RuntimeClass]
"""RuntimeClasses by name."""


def problem(body: Mapping[str, Any]) -> tuple[str, str] | None:
    """The first field of the RuntimeClass `body` the API server refuses, and why, in its
    words (module docstring): `("handler", 'Invalid value: "Kata": a lowercase RFC 1123 label
    must consist of ...')`; None when it takes the object. A quantity that does not decode
    first, then `ValidateRuntimeClass`'s order. Shapes: `body`'s metadata was checked
    (`object_names`), and the types of its fields (`shapes`)."""
    return next(_class_problems(body), None)


def _class_problems(body: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """The refusals of the RuntimeClass `body`, in the API server's order (lazily)."""
    overhead, scheduling = body.get("overhead"), body.get("scheduling")
    fixed = _quantities((overhead or {}).get("podFixed"))
    yield from _undecodable(fixed, "overhead.podFixed")
    labels = body["metadata"].get("labels")
    wrong = object_labels.problem(labels) if labels else None
    if wrong is not None:
        yield "metadata.labels", wrong
    handler = body.get("handler") or ""
    wrong = object_names.label_problem(handler) if handler else "Required value"
    if wrong is not None:
        yield "handler", wrong
    if overhead is not None:
        yield from _limits_problems(fixed, "overhead")
    if scheduling is not None:
        selector = scheduling.get("nodeSelector")
        wrong = object_labels.problem(selector) if selector else None
        if wrong is not None:
            yield "scheduling.nodeSelector", wrong
        found = tolerations.pod_problem(scheduling)
        if found is not None:
            yield f"scheduling.{found[0]}", found[1]
        yield from _duplicate_tolerations(scheduling.get("tolerations") or [],
                                          "scheduling.tolerations")


def read(body: Mapping[str, Any]) -> RuntimeClass:
    """The RuntimeClass `body` (which `problem` takes), copied."""
    overhead, scheduling = body.get("overhead"), body.get("scheduling")
    return RuntimeClass(
        body["metadata"]["name"], body.get("handler") or "",
        None if overhead is None else Overhead(_copied(overhead.get("podFixed"))),
        None if scheduling is None else Scheduling(
            _copied(scheduling.get("nodeSelector")),
            [dict(toleration or {}) for toleration in scheduling.get("tolerations") or []]))


def admit(spec: dict[str, Any], classes: RuntimeClasses) -> tuple[str, str] | None:
    """The plugin's `Admit` of the pod spec `spec`, given the `classes` of the manifests: the
    named class's overhead set in `spec.overhead`, its node selector merged into
    `spec.nodeSelector` and its tolerations into `spec.tolerations` (module docstring); nothing
    without `runtimeClassName`. Its overhead's quantities are decoded first, as the API server
    decodes a pod before admission.

    The refusal, when there is one (`spec` may then be partly changed):
    `("runtimeClassName", 'pod rejected: RuntimeClass "kata" not found')`, an overhead given
    that is not the class's (`overhead`), a node selector key the class gives another value
    (`nodeSelector`), or an overhead quantity that does not decode (`overhead.cpu`).
    """
    found = next(_undecodable(_quantities(spec.get("overhead")), "overhead"), None)
    if found is not None:
        return found
    name = spec.get("runtimeClassName")
    if name is None:
        return None
    if name not in classes:
        return "runtimeClassName", _lookup_problem(name)
    chosen = classes[name]
    if chosen.overhead is not None:
        given = spec.get("overhead")
        if given and not _same_quantities(chosen.overhead.pod_fixed, given):
            return "overhead", OVERHEAD_MISMATCH
        if chosen.overhead.pod_fixed is None:
            spec.pop("overhead", None)
        else:
            spec["overhead"] = dict(chosen.overhead.pod_fixed)
    if chosen.scheduling is not None:
        return _set_scheduling(spec, chosen.scheduling)
    return None


def validate(spec: Mapping[str, Any], classes: RuntimeClasses) -> tuple[str, str] | None:
    """What follows `admit` on creation (module docstring): the pod's validation of its
    `overhead`, then the plugin's `Validate`: an overhead not the class's, or set when the class
    (if any) has none, is refused (`("overhead", "pod rejected: Pod Overhead set without
    corresponding RuntimeClass defined Overhead")`). Shapes: `spec` was admitted (`admit`)."""
    found = overhead_problem(spec)
    if found is not None:
        return found
    overhead, name = spec.get("overhead"), spec.get("runtimeClassName")
    chosen = classes.get(name) if isinstance(name, str) else None
    if chosen is not None and chosen.overhead is not None:
        if not _same_quantities(chosen.overhead.pod_fixed, overhead):
            return "overhead", OVERHEAD_MISMATCH
    elif overhead is not None:
        return "overhead", OVERHEAD_WITHOUT_CLASS
    return None


def overhead_problem(spec: Mapping[str, Any]) -> tuple[str, str] | None:
    """The first refusal of the `overhead` of the pod spec (or template spec) `spec` by the
    pod's validation (`ValidatePodSpec`'s `validateOverhead`: decoded, then as container
    limits): `("overhead.limits[gpu]", 'Invalid value: "gpu": must be a standard resource type
    or fully qualified')`; None when there is none or it is taken."""
    overhead = spec.get("overhead")
    if overhead is None:
        return None
    quantities = _quantities(overhead)
    return next(itertools.chain(_undecodable(quantities, "overhead"),
                                _limits_problems(quantities, "overhead")), None)


def _lookup_problem(name: str) -> str:
    """Why the plugin refuses a pod naming `name`, a class that does not exist: the live lookup
    `prepareObjects` falls back to fails before asking (client-go's `Request.Name`: an empty
    name, or one that is no path segment), else finds nothing."""
    if not name:
        return EMPTY_NAME
    unsafe = object_names.path_segment_problems(name)
    if unsafe:
        return f"invalid resource name {_go_quoted(name)}: [{' '.join(unsafe)}]"
    return NOT_FOUND.format(name=_go_quoted(name))


def _go_quoted(text: str) -> str:
    """`text` as Go's `%q` shows printable text (JSON's quoting of it, not cut short)."""
    return json.dumps(text, ensure_ascii=False)


def _set_scheduling(spec: dict[str, Any], scheduling: Scheduling) -> tuple[str, str] | None:
    """`setScheduling`: the class's node selector merged into the pod's (the pod's own when it
    has one, each key of the class added; a key of both with two values refused), then the
    tolerations merged (`merge_tolerations`)."""
    ours = scheduling.node_selector or {}
    selector = spec.get("nodeSelector")
    if selector is None:
        if scheduling.node_selector is not None:
            spec["nodeSelector"] = dict(scheduling.node_selector)
    else:
        for key, value in ours.items():
            if key in selector and selector[key] != value:
                return "nodeSelector", NODE_SELECTOR_CONFLICT.format(key=key, ours=value,
                                                                     theirs=selector[key])
            selector[key] = value
    spec["tolerations"] = merge_tolerations(spec.get("tolerations") or [],
                                            scheduling.tolerations)
    return None


class _Toleration(NamedTuple):
    """A toleration's fields as Go holds them (absent or null: "", a nil `TolerationSeconds`
    None), which `apiequality.Semantic.DeepEqual` compares."""

    key: str
    operator: str
    value: str
    effect: str
    seconds: int | None

    @classmethod
    def of(cls, given: Mapping[str, Any] | None) -> _Toleration:
        fields = given or {}
        return cls(fields.get("key") or "", fields.get("operator") or "",
                   fields.get("value") or "", fields.get("effect") or "",
                   fields.get("tolerationSeconds"))


def merge_tolerations(first: list[Any], second: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`MergeTolerations(first, second)`: the tolerations of both in that order, but each one
    another kept before it tolerates a superset of, or one after it that differs from it does
    (when two are equal the first is kept). Each kept toleration is copied (a null one as
    the empty one)."""
    every = [dict(given or {}) for given in [*first, *second]]
    fields = [_Toleration.of(given) for given in every]
    merged: list[int] = []
    for i, toleration in enumerate(fields):
        if any(_is_superset(fields[kept], toleration) for kept in merged):
            continue
        if any(later != toleration and _is_superset(later, toleration)
               for later in fields[i + 1:]):
            continue
        merged.append(i)
    return [every[i] for i in merged]


def _is_superset(ss: _Toleration, t: _Toleration) -> bool:
    """`isSuperset(ss, t)`: whether `ss` tolerates every taint `t` does, in Go's rules (an `Equal`
    `ss` only covers a `t` whose operator is written `Equal`, not one left empty)."""
    if t == ss:
        return True
    if t.key != ss.key and (ss.key or ss.operator != tolerations.EXISTS):
        return False
    if t.effect != ss.effect and ss.effect:
        return False
    if ss.effect == tolerations.NO_EXECUTE and ss.seconds is not None and (
            t.seconds is None or t.seconds > ss.seconds):
        return False
    if ss.operator in (tolerations.EQUAL, ""):
        return t.operator == tolerations.EQUAL and t.value == ss.value
    return ss.operator == tolerations.EXISTS


def _duplicate_tolerations(given: list[Any], where: str) -> Iterator[tuple[str, str]]:
    """`validateTolerations`' uniqueness check: each toleration with the key, operator, value
    and effect (as written) of one before it, shown as Go marshals `core.Toleration`."""
    seen: set[tuple[str, str, str, str]] = set()
    for i, toleration in enumerate(given):
        fields = _Toleration.of(toleration)
        key = (fields.key, fields.operator, fields.value, fields.effect)
        if key in seen:
            shown = json.dumps({"Key": fields.key, "Operator": fields.operator,
                                "Value": fields.value, "Effect": fields.effect,
                                "TolerationSeconds": fields.seconds}, separators=(",", ":"))
            yield f"{where}[{i}]", f"Duplicate value: {shown}"
        seen.add(key)


def _undecodable(quantities: Mapping[str, Any], where: str) -> Iterator[tuple[str, str]]:
    """Each quantity of `quantities` (at `where`) the API server cannot decode, named
    `<where>.<name>` as the planner names one (`invalid quantity 'abc': ...`)."""
    for name, quantity in quantities.items():
        try:
            resources.parse_quantity(quantity)
        except resources.InvalidQuantity as error:
            yield f"{where}.{name}", error.detail


def _limits_problems(limits: Mapping[str, Any], where: str) -> Iterator[tuple[str, str]]:
    """`ValidateContainerResourceRequirements` of `limits` (decoded) as the limits of
    `where`: the names as a container's (`container_resources`), then each quantity's value,
    then hugepages without cpu or memory."""
    found = container_resources.problem({"containers": [{"resources": {"limits": limits}}]})
    if found is not None:
        yield where + found[0].removeprefix(CONTAINER_LIMITS), found[1]
    for name, quantity in limits.items():
        field, value, shown = f"{where}.limits[{name}]", _amount(quantity), str(quantity)
        if value < 0:
            yield field, invalid(shown, NEGATIVE)
        elif _is_extended(name) and not _counts_whole(value):
            yield field, invalid(shown, NOT_INTEGER)
        if name.startswith(HUGEPAGES) and not _page_multiple(name, value):
            yield field, invalid(shown, f"{shown} is not positive integer multiple of {name}")
    if any(name.startswith(HUGEPAGES) for name in limits) and not any(
            name in CPU_OR_MEMORY for name in limits):
        yield where, HUGEPAGES_ALONE


def _is_extended(name: str) -> bool:
    """`IsExtendedResourceName` of a valid container resource name: one with a `/` outside
    `kubernetes.io/` (`IsIntegerResourceName`: its amount must be whole)."""
    return "/" in name and NATIVE not in name


def _page_multiple(name: str, value: Decimal) -> bool:
    """`IsHugePageResourceValueDivisible`: the page size (the name after `hugepages-`, a
    quantity) whole and positive, and the amount (`Value()`: rounded up) a multiple of it."""
    try:
        page = _amount(name.removeprefix(HUGEPAGES))
    except resources.InvalidQuantity:
        return False
    if page <= 0 or not _counts_whole(page):
        return False
    if max(page, value) > INT64_MAX:
        return True  # not mirrored (module docstring)
    return math.ceil(value) % math.ceil(page) == 0


def _counts_whole(value: Decimal) -> bool:
    """Whether `value`'s `MilliValue()` (thousandths, rounded up) is a multiple of a thousand, as
    Go checks an amount whole (so `0.9999` counts as whole, as in Go)."""
    exponent = value.as_tuple().exponent
    if not isinstance(exponent, int) or exponent >= 0:
        return True
    with decimal.localcontext(_precise(value)):
        return math.ceil(value * UNIT_MILLIS) % UNIT_MILLIS == 0


def _same_quantities(left: Mapping[str, Any] | None, right: Mapping[str, Any] | None) -> bool:
    """`apiequality.Semantic.DeepEqual` of two resource lists (null and empty alike): the same
    names, each with an equal amount (`_amount`). Both decode."""
    ours, theirs = _quantities(left), _quantities(right)
    return ours.keys() == theirs.keys() and all(
        _amount(ours[name]) == _amount(theirs[name]) for name in ours)


def _amount(quantity: Any) -> Decimal:
    """The value `ParseQuantity` makes of `quantity` (module docstring), exactly.

    Raises:
        resources.InvalidQuantity: it does not decode.
    """
    value = resources.parse_quantity(quantity)
    exponent = value.as_tuple().exponent
    if not value.is_zero() and isinstance(exponent, int) and exponent < NANO_EXPONENT:
        with decimal.localcontext(_precise(value)):
            value = value.quantize(Decimal(1).scaleb(NANO_EXPONENT), rounding=decimal.ROUND_UP)
    if abs(value) > INT64_MAX and _is_binary(quantity):
        value = Decimal(INT64_MAX).copy_sign(value)
    return value


def _precise(value: Decimal) -> decimal.Context:
    """A context exact for `value` to nano-units and scaled by a thousand or so."""
    return decimal.Context(prec=max(value.adjusted(), 0) + 2 * -NANO_EXPONENT + 4,
                           rounding=decimal.ROUND_UP)


def _is_binary(quantity: Any) -> bool:
    """Whether `quantity` (which decodes) has a binary-SI suffix (`Ki` ... `Ei`)."""
    if not isinstance(quantity, str):
        return False
    return quantity_syntax.split(quantity_syntax.trim_space(quantity))[1] == 2


def _quantities(value: Any) -> dict[str, Any]:
    """A resource list (a mapping, or null: empty) by resource name."""
    return {str(name): quantity for name, quantity in (value or {}).items()}


def _copied(value: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return None if value is None else {str(key): item for key, item in value.items()}
