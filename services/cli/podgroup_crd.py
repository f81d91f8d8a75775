"""What the API server refuses in a Coscheduling PodGroup's `spec`, by its CRD.

Layer: cli (pure). `gangsched simulate` refuses a PodGroup manifest the API server would
refuse, as it refuses other objects (`planner.simulate.manifests`). The rules are those of
`deploy/crds/scheduling.x-k8s.io_podgroups.yaml` (its openAPIV3Schema; a unit test holds them
equal): `spec` an object; `minMember` an int32 of at least 1; `scheduleTimeoutSeconds` an int32
of at least 0; `minResources` an object of at most 128 quantities, each an integer or quantity
text of at most 64 characters, not negative. No field is required. The watcher reads what the
API server accepted more leniently (an object made under an older CRD, `minMember: 0`, is read
as 1: `watcher.slim.podgroup_event`).

A field the CRD does not declare (a typo, `spec.minMembr`) is refused as kubectl's default
strict field validation makes the API server refuse it: `unknown field "spec.minMembr"`. An
integer given as an integral JSON number (`minMember: 2.0`) is an integer to the API server's
OpenAPI validation, and is served back as `2`; `2.5` is not.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

FIELDS = ("apiVersion", "kind", "metadata", "spec", "status")
"""The fields of a PodGroup the CRD declares."""
SPEC_FIELDS = ("minMember", "minResources", "scheduleTimeoutSeconds")
"""The fields of its `spec`."""
STATUS_FIELDS = ("phase", "occupiedBy", "running", "succeeded", "failed", "scheduleStartTime",
                 "conditions")
"""The fields of its `status`."""
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
MINIMUMS = {"minMember": 1, "scheduleTimeoutSeconds": 0}
"""The int32 fields of `spec` and their `minimum`."""
MAX_MIN_RESOURCES = 128
"""The `maxProperties` of `spec.minResources`."""
QUANTITY_PATTERN = (r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
                    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$")
"""The `pattern` of a `spec.minResources` quantity given as text: the quantity syntax."""
MAX_QUANTITY_LENGTH = 64
"""The `maxLength` of a `spec.minResources` quantity given as text."""
_QUANTITY = re.compile(QUANTITY_PATTERN)


class Refused(ValueError):
    """A PodGroup the API server would refuse: `field` (empty for an unknown field, which
    `reason` names) and `reason`, as in `("spec.minMember", "must be at least 1, got 0")`."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}" if field else reason)
        self.field, self.reason = field, reason


def admitted(podgroup: Mapping[str, Any]) -> dict[str, Any]:
    """`podgroup` as the API server stores and serves it: its `spec` integers given as
    integral numbers (`2.0`) made ints (`2`).

    Raises:
        Refused: an unknown field (at the top, in `spec` or in `status`), or the first field
            of `spec` the CRD refuses (`problem`).
    """
    spec = podgroup.get("spec")
    for where, given, known in (("", podgroup, FIELDS), ("spec.", spec, SPEC_FIELDS),
                                ("status.", podgroup.get("status"), STATUS_FIELDS)):
        unknown = sorted(str(name) for name in given or {} if name not in known) if isinstance(
            given, Mapping) else []
        if unknown:
            raise Refused("", f'unknown field "{where}{unknown[0]}"')
    if isinstance(spec, Mapping):
        spec = {name: _integral(value) if name in MINIMUMS else value
                for name, value in spec.items()}
        if isinstance(spec.get("minResources"), Mapping):
            spec["minResources"] = {name: _integral(value)
                                    for name, value in spec["minResources"].items()}
    refused = problem(spec)
    if refused is not None:
        raise Refused(*refused)
    return {**podgroup, "spec": spec} if "spec" in podgroup else dict(podgroup)


def _integral(value: Any) -> Any:
    """`value`, an integral float (`2.0`) as the int it is (JSON has one number type: the API
    server's validation takes 2.0 for an integer, and its Go JSON encoder writes it `2`)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def problem(spec: Any) -> tuple[str, str] | None:
    """The first field of a PodGroup's `spec` the API server would refuse, and why
    (`("spec.minMember", "must be at least 1, got 0")`), or None when it would accept it;
    integers must be ints here (`admitted` makes an integral float one)."""
    if spec is None:
        return None
    if not isinstance(spec, Mapping):
        return "spec", "must be an object"
    for field, minimum in MINIMUMS.items():
        value = spec.get(field)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not (
                INT32_MIN <= value <= INT32_MAX):
            return f"spec.{field}", f"must be a 32-bit integer, got {value!r}"
        if value < minimum:
            return f"spec.{field}", f"must be at least {minimum}, got {value}"
    return _min_resources_problem(spec.get("minResources"))


def _min_resources_problem(quantities: Any) -> tuple[str, str] | None:
    """`problem` of `spec.minResources`."""
    if quantities is None:
        return None
    if not isinstance(quantities, Mapping):
        return "spec.minResources", "must be an object"
    if len(quantities) > MAX_MIN_RESOURCES:
        return ("spec.minResources",
                f"must have at most {MAX_MIN_RESOURCES} resources, has {len(quantities)}")
    for name, value in quantities.items():
        field = f"spec.minResources.{name}"
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | str):
            return field, f"must be an integer or a quantity, got {value!r}"
        if isinstance(value, str) and len(value) > MAX_QUANTITY_LENGTH:
            return field, f"must be at most {MAX_QUANTITY_LENGTH} characters, has {len(value)}"
        if isinstance(value, str) and not _QUANTITY.fullmatch(value):
            return field, f"not a quantity: {value!r}"
        if str(value).startswith("-"):
            return field, f"a minResources quantity must not be negative, got {value}"
    return None
