"""Quantity parsing into gangsched units (cpu millicores, bytes, counts)."""

from __future__ import annotations

from typing import Any

import pytest

from services.contracts import resources
from services.contracts.quantity_syntax import FORMAT_WRONG


@pytest.mark.parametrize(("resource", "text", "units"), [
    ("cpu", "3000m", 3000), ("cpu", "1.5", 1500), ("cpu", 2, 2000), ("cpu", "100u", 1),
    ("memory", "500Mi", 500 * 2**20), ("memory", "1G", 10**9), ("memory", "8Gi", 8 * 2**30),
    ("memory", "1e3", 1000), ("ephemeral-storage", "1Ki", 1024), ("pods", "110", 110),
    ("nvidia.com/gpu", "2", 2), ("hugepages-2Mi", "4Mi", 4 * 2**20),
])
def test_quantities_convert_to_units(resource: str, text: str | int, units: int) -> None:
    assert resources.to_units(resource, text) == units


@pytest.mark.parametrize(("resource", "text"), [
    ("cpu", "lots"), ("memory", "5Xi"), ("cpu", "-1"), ("nvidia.com/gpu", "500m"), ("pods", ""),
])
def test_invalid_quantities_are_refused_with_the_resource_named(resource: str,
                                                                 text: str) -> None:
    with pytest.raises(resources.InvalidQuantity, match=r"quantity|whole number"):
        resources.to_units(resource, text)


def test_format_amount_is_human() -> None:
    assert resources.format_amount("cpu", 3000) == "3"
    assert resources.format_amount("cpu", 2500) == "2500m"
    assert resources.format_amount("memory", 500 * 2**20) == "500Mi"
    assert resources.format_amount("nvidia.com/gpu", 2) == "2"


def test_an_amount_beyond_the_limit_is_refused_naming_it_as_given() -> None:
    with pytest.raises(resources.AmountBeyondRange) as raised:
        resources.to_units("cpu", "1e30")
    assert str(raised.value) == (
        "cpu 1e30 is beyond the largest amount gangsched can place (281474976710656m)")
    with pytest.raises(resources.AmountBeyondRange, match=r"memory 16Ei .*\(256Ti\)"):
        resources.to_units("memory", "16Ei")


def test_the_largest_amount_itself_is_accepted_and_one_more_is_not() -> None:
    assert resources.to_units("nvidia.com/gpu", resources.MAX_AMOUNT) == resources.MAX_AMOUNT
    assert resources.to_units("memory", "256Ti") == resources.MAX_AMOUNT
    with pytest.raises(resources.AmountBeyondRange):
        resources.to_units("nvidia.com/gpu", resources.MAX_AMOUNT + 1)


def test_a_refusal_beyond_range_is_an_invalid_quantity_so_no_caller_can_miss_it() -> None:
    assert issubclass(resources.AmountBeyondRange, resources.InvalidQuantity)


def test_saturated_units_count_an_amount_beyond_range_as_the_largest_but_refuse_garbage() -> None:
    assert resources.saturated_units("cpu", "1e15") == resources.MAX_AMOUNT
    assert resources.saturated_units("cpu", "4") == 4000
    with pytest.raises(resources.InvalidQuantity):
        resources.saturated_units("cpu", "lots")


def test_sums_are_exact_and_a_sum_beyond_range_is_refused_by_check_range() -> None:
    total = resources.add({"cpu": resources.MAX_AMOUNT}, {"cpu": 1})
    assert total == {"cpu": resources.MAX_AMOUNT + 1}
    with pytest.raises(resources.AmountBeyondRange, match="cpu 281474976710657m is beyond"):
        resources.check_range(total)
    resources.check_range({"cpu": resources.MAX_AMOUNT})
    assert resources.saturate(total) == {"cpu": resources.MAX_AMOUNT}


def test_a_refusal_beyond_range_can_name_the_field_it_was_found_in() -> None:
    error = resources.AmountBeyondRange("cpu", "1e30").at("spec.containers[0].resources.requests")
    assert str(error).startswith("spec.containers[0].resources.requests: cpu 1e30 is beyond")


def test_an_event_carrying_an_amount_beyond_the_limit_is_poisoned() -> None:
    from services.contracts import codec, events

    node = events.NodeObserved(at_ms=1, name="n", uid="u", resource_version="1",
                               allocatable={"cpu": 2**64 - 1})
    with pytest.raises(codec.PoisonedMessage, match="allocatable"):
        codec.decode_event(codec.encode(node))


def test_an_absurd_exponent_is_beyond_range_without_big_arithmetic() -> None:
    # 1e400000 used to take seconds of big-integer work on the watcher's event loop
    for resource, text in (("cpu", "1e400000"), ("memory", "1" + "0" * 400_000 + "Ei"),
                           ("nvidia.com/gpu", "1e400000")):
        with pytest.raises(resources.AmountBeyondRange):
            resources.to_units(resource, text)


def test_an_exponent_beyond_the_decimal_context_is_beyond_range_instead_of_overflowing() -> None:
    for resource, text in (("cpu", "1e1000000"), ("pods", "9e99999999")):
        with pytest.raises(resources.AmountBeyondRange):
            resources.to_units(resource, text)


def test_a_huge_amount_is_named_briefly() -> None:
    with pytest.raises(resources.AmountBeyondRange) as raised:
        resources.to_units("cpu", "9" * 100_000)
    assert len(str(raised.value)) < 200


def test_a_tiny_exponent_rounds_up_or_is_fractional() -> None:
    assert resources.to_units("cpu", "1e-400000") == 1
    assert resources.to_units("memory", "1e-1000000") == 1
    assert resources.to_units("cpu", "0e-400000") == 0
    with pytest.raises(resources.InvalidQuantity, match="whole number"):
        resources.to_units("nvidia.com/gpu", "1e-400000")


@pytest.mark.parametrize("value", [
    True, False, None, [], ["1"], {}, {"cpu": "1"}, float("inf"), float("nan"), b"1", "1.2.3",
    "1e", "--1",
])
def test_values_that_are_not_quantities_raise_invalid_quantity_naming_them(value: Any) -> None:
    with pytest.raises(resources.InvalidQuantity) as raised:
        resources.to_units("cpu", value)
    assert repr(value)[:20] in str(raised.value)


def test_a_huge_value_is_named_briefly() -> None:
    with pytest.raises(resources.InvalidQuantity) as raised:
        resources.to_units("cpu", "x" * 100_000)
    assert len(str(raised.value)) < 200


def test_parse_quantity_translates_every_failure() -> None:
    with pytest.raises(resources.InvalidQuantity):
        resources.parse_quantity(None)  # type: ignore[arg-type]
    assert resources.parse_quantity("1e1000000") > 0


@pytest.mark.parametrize(("resource", "text", "detail"), [
    ("cpu", "lots", f"invalid quantity 'lots': {FORMAT_WRONG}"),
    ("cpu", "-1", "negative quantity '-1'"),
    ("pods", "1.5", "must be a whole number, got '1.5'"),
])
def test_a_refusal_names_the_resource_and_keeps_the_rest_apart(resource: str, text: str,
                                                               detail: str) -> None:
    with pytest.raises(resources.InvalidQuantity) as refused:
        resources.to_units(resource, text)
    assert (str(refused.value), refused.value.detail) == (f"{resource}: {detail}", detail)


def test_a_refusal_beyond_range_keeps_the_part_after_the_resource_apart() -> None:
    with pytest.raises(resources.AmountBeyondRange) as refused:
        resources.to_units("storage", "1e30")
    assert str(refused.value) == f"storage {refused.value.detail}"
    assert refused.value.detail == "1e30 is beyond the largest amount gangsched can place (256Ti)"
