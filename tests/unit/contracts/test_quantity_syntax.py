"""Quantities read exactly as apimachinery v0.36.3's `ParseQuantity` reads them.

The expected values and errors are those `ParseQuantity` returned for each text (a Go program
printing `MilliValue()`, `Value()` or the error), not derived from the code under test.
"""

from __future__ import annotations

import pytest

from services.contracts import quantity_syntax, resources
from services.contracts.quantity_syntax import FORMAT_WRONG, NUMERIC, SUFFIX


@pytest.mark.parametrize(("text", "millis"), [
    # no digit at all, on Go's int64 fast path: zero
    (".", 0), ("e3", 0), ("+", 0), ("-", 0), ("Ki", 0), ("m", 0), ("E", 0), ("e-9", 0),
    ("0Pi", 0), ("0e-10", 0),
    # signs, leading zeros, a bare point
    ("+1", 1000), (".5", 500), ("5.", 5000), ("00.5", 500), ("5.e-3", 5), ("1E-3", 1),
    # exponents: signed, zero-padded, wrapped to an int32 as Go's int32(parsed) wraps them
    ("1e+3", 1_000_000), ("1e0009", 10**12), ("1e+0000000000000000000003", 1_000_000),
    ("1e4294967296", 1000), ("1e4294967295", 100), ("1e9223372036854775807", 100),
])
def test_what_go_accepts_is_read_as_go_reads_it(text: str, millis: int) -> None:
    assert resources.to_units("cpu", text) == millis


def test_a_point_without_a_fraction_takes_a_suffix() -> None:
    assert resources.to_units("memory", "1.G") == 10**9  # Go: "TODO: we currently allow 1.G"


@pytest.mark.parametrize(("text", "reason"), [
    # an exponent and a suffix: never both
    ("1e3Ki", FORMAT_WRONG), ("1e2M", FORMAT_WRONG), ("1e-3m", FORMAT_WRONG),
    ("5e-1k", FORMAT_WRONG), ("1e-3k", FORMAT_WRONG),
    ("", FORMAT_WRONG), ("0x10", FORMAT_WRONG), ("1..", FORMAT_WRONG), ("1_000", FORMAT_WRONG),
    ("5Xi", FORMAT_WRONG), ("lots", FORMAT_WRONG),
    ("e", SUFFIX), ("1e", SUFFIX), ("1ee3", SUFFIX), ("1Ke3", SUFFIX), ("ki", SUFFIX),
    ("1e+", SUFFIX), ("++1", SUFFIX), ("1e9223372036854775808", SUFFIX),
    # no digit where Go leaves its int64 fast path for inf.Dec
    ("Pi", NUMERIC), ("Ei", NUMERIC), (".Ei", NUMERIC), ("e-10", NUMERIC), (".e-10", NUMERIC),
])
def test_what_go_refuses_is_refused_with_its_error(text: str, reason: str) -> None:
    with pytest.raises(quantity_syntax.QuantitySyntaxError) as refused:
        quantity_syntax.split(text)
    assert str(refused.value) == reason
    with pytest.raises(resources.InvalidQuantity) as invalid:
        resources.to_units("memory", text)
    assert invalid.value.detail == f"invalid quantity {text!r}: {reason}"


def test_space_is_trimmed_as_go_trims_it_when_it_decodes_a_quantity() -> None:
    assert resources.to_units("cpu", " \t1\u00a0\u3000\n") == 1000
    # U+001C is whitespace to Python's str.strip, not to Go's strings.TrimSpace
    with pytest.raises(resources.InvalidQuantity, match="must match the regular expression"):
        resources.to_units("cpu", "\x1c1")
    with pytest.raises(resources.InvalidQuantity, match="must match the regular expression"):
        resources.to_units("cpu", " ")


def test_long_digit_strings_are_read_in_linear_time() -> None:
    assert resources.to_units("cpu", "0" * 100_000 + "1") == 1000
    assert resources.to_units("cpu", "1e" + "0" * 10_000 + "3") == 1_000_000
    assert resources.to_units("cpu", "1" + "0" * 5_000 + "e-5000") == 1000
    with pytest.raises(resources.InvalidQuantity, match="must match the regular expression"):
        resources.to_units("cpu", "9" * 100_000 + "e3Ki")
    with pytest.raises(resources.InvalidQuantity, match="quantity's suffix"):
        resources.to_units("cpu", "1e" + "9" * 100_000)


def test_split_keeps_an_exponent_in_the_number_and_a_suffix_apart() -> None:
    number, base, power = quantity_syntax.split("1.5e3")
    assert number == 1500 and (base, power) == (10, 0)
    assert quantity_syntax.split("2Gi")[1:] == (2, 30)
    assert quantity_syntax.split("500m")[1:] == (10, -3)
