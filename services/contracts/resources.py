"""Kubernetes resource quantities, converted to gangsched's integer units.

Layer: contracts. Pure; never does I/O.

Units: `cpu` in millicores; `memory`, `ephemeral-storage` and `hugepages-*` in bytes; `pods` and
extended resources (`nvidia.com/gpu`, ...) as counts. A `ResourceList` maps resource name to that
integer. Quantities are rounded up, as the API server rounds requests it cannot represent.
"""

from __future__ import annotations

import decimal
import functools
import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Annotated

import msgspec

from services.contracts import quantity_syntax

MAX_AMOUNT = 2**48
"""Largest amount of any resource, in gangsched units.

2**48 is 256 TiB of memory or 281 billion CPUs, far beyond any node, yet the sum of this amount
over 32,768 nodes still fits a signed 64-bit integer, so aggregate checks (minResources over
every node) never overflow. A request or minResources beyond it is refused
(`AmountBeyondRange`), never clamped: clamped, a pod asking for 1e30 CPUs fitted a node of 1e15.
Only a node's allocatable saturates at it (`saturated_units`): a node offering more than
gangsched can count can still take everything gangsched can count. Events carrying more are
refused at decoding (poisoned messages).
"""

Amount = Annotated[int, msgspec.Meta(ge=0, le=MAX_AMOUNT)]
"""One resource amount in gangsched units, validated when an event is decoded."""

ResourceList = dict[str, Amount]
"""Resource name → amount in gangsched units (see module docstring)."""

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"
HUGEPAGES = "hugepages-"
"""The prefix of a huge-page resource (`hugepages-2Mi`), counted in bytes."""
STORAGE = "storage"
"""A PersistentVolume's capacity and a claim's request (bytes)."""

_BYTE_RESOURCES = (MEMORY, EPHEMERAL_STORAGE, STORAGE)
_BINARY_SUFFIXES = {suffix: 2**power
                    for suffix, power in quantity_syntax.BINARY_SUFFIXES.items()}


class InvalidQuantity(ValueError):
    """A quantity that is not a valid Kubernetes quantity for its resource (any failure to read
    one, whatever its type, is reported as this, with the value named).

    Shapes: from `to_units` the message is `<resource>: <detail>`; `detail` is the part after
    the resource, for a caller whose message already names it (the field path
    `...requests.cpu`), so the name is not said twice. Otherwise `detail` is the message.
    """

    def __init__(self, message: str, *, detail: str | None = None) -> None:
        super().__init__(message)
        self.detail = message if detail is None else detail

    @classmethod
    def of(cls, resource: str, detail: str) -> InvalidQuantity:
        """`<resource>: <detail>`, with `detail` kept apart."""
        return cls(f"{resource}: {detail}", detail=detail)


class AmountBeyondRange(InvalidQuantity):
    """A valid quantity above `MAX_AMOUNT` once in gangsched units: Kubernetes accepts it, but
    gangsched cannot place it, so it is refused rather than clamped.

    Shapes: the message is `[<where>: ]<resource> <amount as given> is beyond the largest amount
    gangsched can place (<MAX_AMOUNT formatted>)`, e.g. `cpu 1e30 is beyond ... (281474976710656m)`;
    `detail` is the same from `<amount as given>` on.
    """

    def __init__(self, resource: str, shown: str, where: str = "") -> None:
        largest = format_amount(resource, MAX_AMOUNT)
        detail = f"{shown} is beyond the largest amount gangsched can place ({largest})"
        text = f"{resource} {detail}"
        super().__init__(f"{where}: {text}" if where else text, detail=detail)
        self.resource, self.shown = resource, shown

    def at(self, where: str) -> AmountBeyondRange:
        """The same refusal, its message starting with the field `where` it was found in."""
        return AmountBeyondRange(self.resource, self.shown, where)


_HUGE_EXPONENT = 40
"""A number whose adjusted exponent is above this is ≥ 1e41: far above `MAX_AMOUNT` in any unit
whatever its suffix (≥ 1e-9) and scale, so it is beyond range without arithmetic (`1e400000`
would take seconds of big-integer work, `1e1000000` overflows the decimal context)."""
_TINY_EXPONENT = -40
"""A non-zero number whose adjusted exponent is below this is < 1e-39: below one unit whatever
its suffix (≤ 2**60) and scale, so it rounds up to 1 (or is fractional) without arithmetic."""
_SHOWN_CHARS = 64


def shown(value: object) -> str:
    """`value` for an error message: its repr, cut to 64 characters (`...` marks the cut: a
    quantity, or any field of a manifest, may be megabytes long), never raising (a value too
    large or too deep to repr is shown by its type)."""
    try:
        text = repr(value)
    except (ValueError, RecursionError):
        text = f"<{type(value).__name__}>"
    return text if len(text) <= _SHOWN_CHARS else f"{text[:_SHOWN_CHARS]}..."


def _shown_amount(text: object) -> str:
    """An amount as the user wrote it (`1e30`, not `'1e30'`), cut short like `shown`."""
    if isinstance(text, str):
        text = text.strip()
        return text if len(text) <= _SHOWN_CHARS else f"{text[:_SHOWN_CHARS]}..."
    return shown(text)


def _number_and_factor(text: object) -> tuple[Decimal, Decimal | int]:
    """The number and the suffix multiplier of a quantity, without multiplying them.

    A string is read as the API server decodes a quantity (`quantity_syntax`: trimmed, then
    exactly what apimachinery's `ParseQuantity` accepts); an int or a float (a JSON number) as
    its decimal text.
    Raises:
        InvalidQuantity: not a quantity (wrong type, unknown suffix, empty, malformed number):
            `invalid quantity '<text>': <why>`, a string's why in Go's words
            (`quantity_syntax.FORMAT_WRONG`, `NUMERIC`, `SUFFIX`).
    """
    if isinstance(text, bool):
        raise InvalidQuantity(f"invalid quantity {shown(text)}: a boolean is not a quantity")
    if isinstance(text, int):
        return Decimal(text), 1
    if isinstance(text, float):
        if not math.isfinite(text):
            raise InvalidQuantity(f"invalid quantity {shown(text)}: not finite")
        return Decimal(repr(text)), 1
    if not isinstance(text, str):
        raise InvalidQuantity(
            f"invalid quantity {shown(text)}: a {type(text).__name__}, not a string")
    try:
        number, base, power = quantity_syntax.split(quantity_syntax.trim_space(text))
    except quantity_syntax.QuantitySyntaxError as error:
        raise InvalidQuantity(f"invalid quantity {shown(text)}: {error}") from error
    return number, 2**power if base == 2 else Decimal(f"1E{power}")


def _exact_context(*values: Decimal) -> decimal.Context:
    """A context in which products of `values` with small factors are exact and never trap."""
    digits = sum(len(value.as_tuple().digits) for value in values)
    return decimal.Context(prec=digits + 64, rounding=decimal.ROUND_CEILING,
                           Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN, traps=[])


def parse_quantity(text: str | int | float) -> Decimal:
    """Parse a Kubernetes quantity (`"1.5"`, `"500m"`, `"2Gi"`, `"1e3"`) into its exact value.

    Beware: `"1e400000"` is a valid quantity whose exact value is huge; prefer `to_units`,
    which never computes with such values.
    Raises:
        InvalidQuantity: not a quantity (wrong type, unknown suffix, empty, malformed number).
    Source: k8s.io/apimachinery `Quantity.UnmarshalJSON` and `ParseQuantity`, whose syntax is
    `quantity_syntax`'s (the value is exact: Go rounds it up to a nanounit, `to_units` to a
    gangsched unit).
    """
    value, factor = _number_and_factor(text)
    try:
        with decimal.localcontext(_exact_context(value)):
            return value * factor
    except ArithmeticError as error:
        raise InvalidQuantity(f"invalid quantity {shown(text)}") from error


def to_units(resource: str, text: str | int | float) -> int:
    """Convert one quantity of `resource` into gangsched units (module docstring), rounding up.

    Cost: bounded whatever the exponent; absurd magnitudes are decided from the exponent alone.
    Quantity strings repeat across a cluster's pods ("500m", "1Gi"), so the conversions of
    the most recent `CACHED_QUANTITIES` strings are remembered (a pure function: the cache
    changes no result; a refusal is never cached).
    Raises:
        AmountBeyondRange: a valid quantity above `MAX_AMOUNT` in gangsched units.
        InvalidQuantity: malformed or of a type that is no quantity (bool, None, list...),
            negative, or fractional for a resource counted in whole units (pods, extended
            resources), as the API server rejects such requests.
    """
    if type(text) is str:
        return _cached_units(resource, text)
    return _units(resource, text)


CACHED_QUANTITIES = 4096
"""How many `(resource, quantity string)` conversions `to_units` remembers."""


@functools.lru_cache(maxsize=CACHED_QUANTITIES)
def _cached_units(resource: str, text: str) -> int:
    """`_units` of a quantity string, remembered."""
    return _units(resource, text)


def _units(resource: str, text: str | int | float) -> int:
    """`to_units` without the cache."""
    try:
        value, factor = _number_and_factor(text)
    except InvalidQuantity as error:
        raise InvalidQuantity.of(resource, error.detail) from error
    if value.is_signed() and not value.is_zero():
        raise InvalidQuantity.of(resource, f"negative quantity {shown(text)}")
    is_whole = not (resource == CPU or resource in _BYTE_RESOURCES
                    or resource.startswith(HUGEPAGES))
    if value.is_zero():
        return 0
    if value.adjusted() > _HUGE_EXPONENT:
        raise AmountBeyondRange(resource, _shown_amount(text))
    if value.adjusted() < _TINY_EXPONENT:
        if is_whole:
            raise InvalidQuantity.of(resource, f"must be a whole number, got {shown(text)}")
        return 1
    try:
        with decimal.localcontext(_exact_context(value)):
            scaled = value * factor * (1000 if resource == CPU else 1)
            is_fractional = scaled != scaled.to_integral_value()
            amount = math.ceil(scaled)
    except (ArithmeticError, ValueError, OverflowError) as error:
        raise InvalidQuantity.of(resource, f"invalid quantity {shown(text)}") from error
    if is_whole and is_fractional:
        raise InvalidQuantity.of(resource, f"must be a whole number, got {shown(text)}")
    if amount > MAX_AMOUNT:
        raise AmountBeyondRange(resource, _shown_amount(text))
    return amount


def saturated_units(resource: str, text: str | int | float) -> int:
    """`to_units`, but a quantity beyond range counts as `MAX_AMOUNT`.

    Only for what a node offers (its allocatable) and for what a pod that is never placed is
    charged: both err on the safe side (a node offers less than it has, a pod takes at least
    what gangsched can count), so neither can over-commit a node.
    Raises:
        InvalidQuantity: as `to_units`, never `AmountBeyondRange`.
    """
    try:
        return to_units(resource, text)
    except AmountBeyondRange:
        return MAX_AMOUNT


def check_range(amounts: Mapping[str, int]) -> None:
    """Refuse a resource list (e.g. a sum of requests) holding an amount above `MAX_AMOUNT`.

    Raises:
        AmountBeyondRange: naming the first such resource by name, its amount formatted.
    """
    for name, amount in sorted(amounts.items()):
        if amount > MAX_AMOUNT:
            raise AmountBeyondRange(name, format_amount(name, amount))


def saturate(amounts: Mapping[str, int]) -> ResourceList:
    """`amounts` with every amount above `MAX_AMOUNT` lowered to it (see `saturated_units`)."""
    return {name: min(amount, MAX_AMOUNT) for name, amount in amounts.items()}


def to_resource_list(quantities: Mapping[str, str | int | float] | None) -> ResourceList:
    """Convert a Kubernetes ResourceList (`{"cpu": "500m", ...}`) into gangsched units.

    Shapes: keys kept as given; the result has no zero entries removed (a zero request is kept).
    Raises:
        AmountBeyondRange: a value above `MAX_AMOUNT` (the first by name).
        InvalidQuantity: any value invalid for its resource; the message names the resource.
    """
    if not quantities:
        return {}
    return {str(name): to_units(str(name), value)
            for name, value in sorted(quantities.items(), key=lambda item: str(item[0]))}


def add(left: Mapping[str, int], right: Mapping[str, int]) -> ResourceList:
    """Sum two resource lists key by key (missing keys count as 0), exactly: a sum that leaves
    the range is the caller's to refuse (`check_range`), never silently capped."""
    total = dict(left)
    for name, amount in right.items():
        total[name] = total.get(name, 0) + amount
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
    if resource in _BYTE_RESOURCES or resource.startswith(HUGEPAGES):
        for suffix, factor in sorted(_BINARY_SUFFIXES.items(), key=lambda item: -item[1]):
            if amount >= factor and amount % factor == 0:
                return f"{amount // factor}{suffix}"
    return str(amount)


def accumulate(totals: dict[str, dict[str, int]], key: str, amounts: Mapping[str, int],
               sign: int) -> None:
    """Add `sign` x `amounts` to `totals[key]` in place (e.g. a node's used resources), dropping
    amounts that reach zero and the key once it holds none. Units: gangsched units."""
    used = totals.setdefault(key, {})
    for name, amount in amounts.items():
        total = used.get(name, 0) + sign * amount
        if total:
            used[name] = total
        else:
            used.pop(name, None)
    if not used:
        del totals[key]
