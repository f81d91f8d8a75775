"""Quantity parsing into gangsched units (cpu millicores, bytes, counts)."""

from __future__ import annotations

import pytest

from services.contracts import resources


@pytest.mark.parametrize(("resource", "text", "units"), [
    ("cpu", "3000m", 3000), ("cpu", "1.5", 1500), ("cpu", 2, 2000), ("cpu", "100u", 1),
    ("memory", "500Mi", 500 * 2**20), ("memory", "1G", 10**9), ("memory", "8Gi", 8 * 2**30),
    ("memory", "1e3", 1000), ("ephemeral-storage", "1Ki", 1024), ("pods", "110", 110),
    ("nvidia.com/gpu", "2", 2), ("hugepages-2Mi", "4Mi", 4 * 2**20),
])
def test_quantities_convert_to_units(resource, text, units):
    assert resources.to_units(resource, text) == units


@pytest.mark.parametrize(("resource", "text"), [
    ("cpu", "lots"), ("memory", "5Xi"), ("cpu", "-1"), ("nvidia.com/gpu", "500m"), ("pods", ""),
])
def test_invalid_quantities_are_refused_with_the_resource_named(resource, text):
    with pytest.raises(resources.InvalidQuantity, match=r"quantity|whole number"):
        resources.to_units(resource, text)


def test_format_amount_is_human():
    assert resources.format_amount("cpu", 3000) == "3"
    assert resources.format_amount("cpu", 2500) == "2500m"
    assert resources.format_amount("memory", 500 * 2**20) == "500Mi"
    assert resources.format_amount("nvidia.com/gpu", 2) == "2"


def test_amounts_beyond_the_limit_are_clamped_when_converted():
    assert resources.to_units("memory", "16Ei") == resources.MAX_AMOUNT
    assert resources.add({"cpu": resources.MAX_AMOUNT}, {"cpu": 1}) == {"cpu": resources.MAX_AMOUNT}


def test_an_event_carrying_an_amount_beyond_the_limit_is_poisoned():
    from services.contracts import codec, events

    node = events.NodeObserved(at_ms=1, name="n", uid="u", resource_version="1",
                               allocatable={"cpu": 2**64 - 1})
    with pytest.raises(codec.PoisonedMessage, match="allocatable"):
        codec.decode_event(codec.encode(node))


def test_an_absurd_exponent_clamps_without_big_arithmetic():
    # 1e400000 used to take seconds of big-integer work on the watcher's event loop
    assert resources.to_units("cpu", "1e400000") == resources.MAX_AMOUNT
    assert resources.to_units("memory", "1e400000Ei") == resources.MAX_AMOUNT
    assert resources.to_units("nvidia.com/gpu", "1e400000") == resources.MAX_AMOUNT


def test_an_exponent_beyond_the_decimal_context_clamps_instead_of_overflowing():
    assert resources.to_units("cpu", "1e1000000") == resources.MAX_AMOUNT
    assert resources.to_units("pods", "9e99999999") == resources.MAX_AMOUNT


def test_a_tiny_exponent_rounds_up_or_is_fractional():
    assert resources.to_units("cpu", "1e-400000") == 1
    assert resources.to_units("memory", "1e-1000000n") == 1
    assert resources.to_units("cpu", "0e-400000") == 0
    with pytest.raises(resources.InvalidQuantity, match="whole number"):
        resources.to_units("nvidia.com/gpu", "1e-400000")


@pytest.mark.parametrize("value", [
    True, False, None, [], ["1"], {}, {"cpu": "1"}, float("inf"), float("nan"), b"1", "1.2.3",
    ".", "1e", "--1",
])
def test_values_that_are_not_quantities_raise_invalid_quantity_naming_them(value):
    with pytest.raises(resources.InvalidQuantity) as raised:
        resources.to_units("cpu", value)
    assert repr(value)[:20] in str(raised.value)


def test_a_huge_value_is_named_briefly():
    with pytest.raises(resources.InvalidQuantity) as raised:
        resources.to_units("cpu", "x" * 100_000)
    assert len(str(raised.value)) < 200


def test_parse_quantity_translates_every_failure():
    with pytest.raises(resources.InvalidQuantity):
        resources.parse_quantity(None)  # type: ignore[arg-type]
    assert resources.parse_quantity("1e1000000") > 0
