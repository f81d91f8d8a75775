"""Kubernetes resource quantities, converted to gangsched's integer units.

Layer: contracts. Pure; never does I/O.

Units: `cpu` in millicores; `memory`, `ephemeral-storage` and `hugepages-*` in bytes; `pods` and
extended resources (`nvidia.com/gpu`, ...) as counts. A `ResourceList` maps resource name to that
integer. Quantities are rounded up, as the API server rounds requests it cannot represent.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Annotated

import msgspec

MAX_AMOUNT = 2**48
"""Largest amount of any resource, in gangsched units; larger quantities are clamped to it.

2**48 is 256 TiB of memory or 281 million CPUs, far beyond any node, yet the sum of this amount
over 32,768 nodes still fits a signed 64-bit integer, so aggregate checks (minResources over
every node) never overflow. Events carrying more are refused at decoding (poisoned messages).
"""

Amount = Annotated[int, msgspec.Meta(ge=0, le=MAX_AMOUNT)]
"""One resource amount in gangsched units, validated when an event is decoded."""

ResourceList = dict[str, Amount]
"""Resource name → amount in gangsched units (see module docstring)."""

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"

_BYTE_RESOURCES = (MEMORY, EPHEMERAL_STORAGE)
_BINARY_SUFFIXES = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL_SUFFIXES = {
    "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
    "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"),
    "P": Decimal("1e15"), "E": Decimal("1e18"),
}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$")


class InvalidQuantity(ValueError):
    """A quantity string that is not a valid Kubernetes quantity for its resource."""


def parse_quantity(text: str | int | float) -> Decimal:
    """Parse a Kubernetes quantity (`"1.5"`, `"500m"`, `"2Gi"`, `"1e3"`) into its exact value.

    Raises:
        InvalidQuantity: not a quantity (unknown suffix, empty, malformed number).
    Source: the grammar of k8s.io/apimachinery resource.Quantity.
    """
    if isinstance(text, (int, float)):
        return Decimal(str(text))
    match = _QUANTITY.match(text.strip())
    if match is None:
        raise InvalidQuantity(f"invalid quantity {text!r}")
    number, suffix = match.groups()
    try:
        value = Decimal(number)
    except InvalidOperation as error:
        raise InvalidQuantity(f"invalid quantity {text!r}") from error
    if suffix in _BINARY_SUFFIXES:
        return value * _BINARY_SUFFIXES[suffix]
    if suffix in _DECIMAL_SUFFIXES:
        return value * _DECIMAL_SUFFIXES[suffix]
    raise InvalidQuantity(f"invalid quantity {text!r}: unknown suffix {suffix!r}")


def to_units(resource: str, text: str | int | float) -> int:
    """Convert one quantity of `resource` into gangsched units (module docstring), rounding up
    and clamping to `MAX_AMOUNT`.

    Raises:
        InvalidQuantity: malformed, negative, or fractional for a resource counted in whole units
            (pods, extended resources), as the API server rejects such requests.
    """
    value = parse_quantity(text)
    if value < 0:
        raise InvalidQuantity(f"{resource}: negative quantity {text!r}")
    if resource == CPU:
        return clamp(math.ceil(value * 1000))
    if resource in _BYTE_RESOURCES or resource.startswith("hugepages-"):
        return clamp(math.ceil(value))
    if value != value.to_integral_value():
        raise InvalidQuantity(f"{resource}: must be a whole number, got {text!r}")
    return clamp(int(value))


def clamp(amount: int) -> int:
    """`amount` limited to `MAX_AMOUNT` (a quantity that large means "unlimited" here)."""
    return min(amount, MAX_AMOUNT)


def to_resource_list(quantities: Mapping[str, str | int | float] | None) -> ResourceList:
    """Convert a Kubernetes ResourceList (`{"cpu": "500m", ...}`) into gangsched units.

    Shapes: keys kept as given; the result has no zero entries removed (a zero request is kept).
    Raises:
        InvalidQuantity: any value invalid for its resource; the message names the resource.
    """
    if not quantities:
        return {}
    return {name: to_units(name, value) for name, value in sorted(quantities.items())}


def add(left: Mapping[str, int], right: Mapping[str, int]) -> ResourceList:
    """Sum two resource lists key by key (missing keys count as 0), clamped to `MAX_AMOUNT`."""
    total = dict(left)
    for name, amount in right.items():
        total[name] = clamp(total.get(name, 0) + amount)
    return total


def max_each(left: Mapping[str, int], right: Mapping[str, int]) -> ResourceList:
    """Key-by-key maximum of two resource lists (missing keys count as 0)."""
    result = dict(left)
    for name, amount in right.items():
        result[name] = max(result.get(name, 0), amount)
    return result


def format_amount(resource: str, amount: int) -> str:
    """Human form of an amount in gangsched units, e.g. `3000m` cpu → `"3"`, bytes → `"500Mi"`."""
    if resource == CPU:
        return f"{amount // 1000}" if amount % 1000 == 0 else f"{amount}m"
    if resource in _BYTE_RESOURCES or resource.startswith("hugepages-"):
        for suffix, factor in sorted(_BINARY_SUFFIXES.items(), key=lambda item: -item[1]):
            if amount >= factor and amount % factor == 0:
                return f"{amount // factor}{suffix}"
    return str(amount)
